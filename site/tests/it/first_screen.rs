//! The first screen of every report names the claim and the verdict: on the front page and on
//! each scenario's report, the text before the first table or figure says what Interlock is,
//! what was found (with a finding per report on the front page), and how to check it, and the
//! findings start within the first few hundred words.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// The words a reader meets before the first table or figure of `html`'s main content, tags
/// removed.
fn first_screen(html: &str) -> String {
    let main = &html[html.find("<main>").unwrap()..];
    let end = ["<table", "<figure", "<svg"]
        .iter()
        .filter_map(|t| main.find(t))
        .min()
        .unwrap_or(main.len());
    let mut text = String::new();
    let mut in_tag = false;
    for c in main[..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How many words come before `needle` in `text`.
fn words_before(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {text}"));
    text[..at].split_whitespace().count()
}

/// A site built from the committed top-level results (every scenario's matrix, no campaigns).
fn committed_site() -> tempfile::TempDir {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&results).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "json") {
            std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let out = tempfile::tempdir().unwrap();
    site::build(dir.path(), &out.path().join("site")).unwrap();
    out
}

fn assert_opens_with_the_claim_and_the_verdict(page: &str, html: &str) {
    let screen = first_screen(html);
    assert!(
        words_before(&screen, "Interlock is a commit gate") < 40,
        "{page}: the claim is not at the top: {screen}"
    );
    let found = words_before(&screen, "What was found.");
    assert!(
        found < 400,
        "{page}: the findings start after {found} words"
    );
    let after = &screen[screen.find("What was found.").unwrap()..];
    assert!(
        after.split_whitespace().count() > 12,
        "{page}: no finding follows: {after}"
    );
    assert!(screen.contains("How to check it."), "{page}: {screen}");
    assert!(
        screen.contains("interlock-verify data/"),
        "{page}: {screen}"
    );
    assert!(
        screen.contains("What the numbers mean"),
        "{page}: the terms come after the first table: {screen}"
    );
}

#[test]
fn the_front_page_and_every_report_open_with_the_claim_and_the_verdict() {
    let out = committed_site();
    let root = out.path().join("site");
    let index = std::fs::read_to_string(root.join("index.html")).unwrap();
    assert_opens_with_the_claim_and_the_verdict("index.html", &index);
    let screen = first_screen(&index);
    let mut reports = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let report = dir.join("index.html");
        if !report.is_file() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let html = std::fs::read_to_string(&report).unwrap();
        assert_opens_with_the_claim_and_the_verdict(&format!("{name}/index.html"), &html);
        // The front page gives each report's verdict before its first table.
        let found = &screen[screen.find("What was found.").unwrap()..];
        assert!(
            found.contains(&format!("{name} : ")),
            "the front page's findings do not name {name}: {found}"
        );
        reports += 1;
    }
    assert!(reports >= 5, "only {reports} reports");
}

#[test]
fn a_report_in_the_emulator_never_says_it_ran_on_stripe_and_names_its_decider() {
    let out = committed_site();
    let html = std::fs::read_to_string(out.path().join("site/billing_credit/index.html")).unwrap();
    let screen = first_screen(&html);
    assert!(screen.contains("emulator"), "{screen}");
    assert!(screen.contains("(not Stripe itself)"), "{screen}");
    assert!(screen.contains("policy decider (no model)"), "{screen}");
}

#[test]
fn the_first_screen_stops_at_the_first_table() {
    let html = "<main><h1>T</h1><p>Interlock is a commit gate.</p><table><tr><td>9</td></tr></table><p>after</p></main>";
    assert_eq!(first_screen(html), "T Interlock is a commit gate.");
    assert_eq!(words_before("a b c d", "c"), 2);
}
