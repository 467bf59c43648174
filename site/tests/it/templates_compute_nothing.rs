//! Templates print figures; they compute none. Every figure a page shows is a field of its view,
//! computed once in Rust: no `+`, `-`, `*`, `/` or `%` inside a template's `{{ }}` or `{% %}`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// The inside of every `{{ ... }}` and `{% ... %}` of `text`, with its line, string literals
/// and whitespace-control dashes removed.
fn expressions(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    let mut line = 1;
    while let Some(start) = rest
        .find('{')
        .filter(|&i| rest[i + 1..].starts_with(['{', '%']))
    {
        let close = if rest[start + 1..].starts_with('{') {
            "}}"
        } else {
            "%}"
        };
        line += rest[..start].matches('\n').count();
        let body = &rest[start + 2..];
        let Some(end) = body.find(close) else { break };
        let inner = body[..end].trim_start_matches('-').trim_end_matches('-');
        let mut plain = String::new();
        let mut quoted = false;
        for c in inner.chars() {
            match (c, quoted) {
                ('"', _) => quoted = !quoted,
                (_, false) => plain.push(c),
                _ => {}
            }
        }
        found.push((line, plain));
        line += body[..end + 2].matches('\n').count();
        rest = &body[end + 2..];
    }
    found
}

#[test]
fn no_template_does_arithmetic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
    let mut arithmetic = Vec::new();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "html") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, expr) in expressions(&text) {
            checked += 1;
            if expr.contains(['+', '-', '*', '/', '%']) {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                arithmetic.push(format!("{name}:{line}: {}", expr.trim()));
            }
        }
    }
    assert!(checked > 100, "only {checked} expressions found");
    assert!(arithmetic.is_empty(), "{arithmetic:#?}");
}

#[test]
fn the_scan_finds_arithmetic_and_ignores_strings() {
    let found = expressions("a {{ x - y }} b {% if s == \"a-b\" %}\n{{- n -}}");
    let plain: Vec<&str> = found.iter().map(|(_, e)| e.trim()).collect();
    assert_eq!(plain, ["x - y", "if s ==", "n"]);
    assert_eq!(found[2].0, 2);
}
