//! Text from a file, made safe to print: nothing from a file reaches a terminal as a control
//! character (so it cannot move the cursor, recolour, or overwrite a FAILED line with a fake OK),
//! and a long value is cut to a stated length.

/// Characters that are escaped even though they print: they reorder or hide text on screen
/// (bidirectional overrides and isolates, zero-width characters, the byte-order mark).
fn is_deceptive(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `s` with every control character (C0, DEL, C1, newlines included) and every deceptive
/// formatting character written as `\u{XXXX}`, and backslashes doubled so the escape is
/// unambiguous.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if c.is_control() || is_deceptive(c) {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` cut to at most `max` characters, saying how long it was when cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!(
            "{}… ({} bytes in all)",
            s.get(..at).unwrap_or_default(),
            s.len()
        ),
    }
}

/// A JSON text with every character that [`escape`] would escape written as a JSON `\uXXXX`
/// escape. JSON's own structure is ASCII, so such characters occur only inside strings, where the
/// escape means the same character to every JSON reader.
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if (c.is_control() && !matches!(c, '\n' | '\t' | '\r')) || is_deceptive(c) {
            // serde_json already escapes C0 inside strings; this catches DEL, C1 and the rest.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_never_pass_through() {
        let forged = "x\r\u{1b}[2K\u{1b}[32mOK\u{9b}1A\u{202e}\n";
        let shown = escape(forged);
        assert!(
            !shown.chars().any(|c| c.is_control() || is_deceptive(c)),
            "{shown}"
        );
        assert!(shown.contains("\\u{001b}"));
        assert_eq!(escape("a\\u{1b}"), "a\\\\u{1b}");
    }

    #[test]
    fn long_values_are_cut_and_measured() {
        let long = "a".repeat(1000);
        let s = shorten(&long, 10);
        assert!(s.starts_with("aaaaaaaaaa…"));
        assert!(s.contains("1000 bytes"));
        assert_eq!(shorten("short", 10), "short");
    }

    #[test]
    fn json_output_escapes_what_serde_leaves() {
        let v = serde_json::json!({"a": "\u{7f}\u{9b}\u{202e}"});
        let text = json_safe(&v.to_string());
        assert!(text.is_ascii(), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, v);
    }
}
