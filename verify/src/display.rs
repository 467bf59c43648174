//! Text from a file, made safe to print: nothing from a file reaches a terminal as a control
//! character (so it cannot move the cursor, recolour, or overwrite a FAILED line with a fake OK),
//! and a long value is cut to a stated length.

/// Characters that are escaped even though they are not control characters: they reorder, hide
/// or break text on screen. Every format character (Unicode general category Cf: bidirectional
/// marks, overrides and isolates, zero-width characters, the soft hyphen, the byte-order mark,
/// interlinear annotation, tags), the line and paragraph separators, and the characters that
/// print as nothing (fillers, variation selectors, the combining grapheme joiner).
fn is_deceptive(c: char) -> bool {
    matches!(c,
        // Cf.
        '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}'
        | '\u{890}'..='\u{891}' | '\u{8e2}' | '\u{180e}' | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}'
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{110bd}' | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0001}' | '\u{e0020}'..='\u{e007f}'
        // Line and paragraph separators (Zl, Zp).
        | '\u{2028}' | '\u{2029}'
        // Invisible but not Cf: combining grapheme joiner, Hangul and Khmer fillers, Mongolian
        // and other variation selectors.
        | '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{ffa0}' | '\u{e0100}'..='\u{e01ef}'
    )
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

/// `s` cut to at most `max` characters, saying how long it was when cut (from the trusted core,
/// which cuts the values its messages quote the same way).
pub use verify_core::text::shorten;

/// `s` cut so that it prints, once [`escape`]d, in at most `max` characters, saying how long it
/// was when cut. For text from a file (or a file's name) that a printed line holds before what
/// must not be cut from it: a character escapes to as many as ten, so [`shorten`] to 80
/// characters could still take 800 on the line (a name of 140 DEL characters pushed a verdict
/// line's signer, time and verdict past its 1,000 characters).
pub fn shorten_shown(s: &str, max: usize) -> String {
    let mut width = 0;
    for (at, c) in s.char_indices() {
        width += escape(c.encode_utf8(&mut [0u8; 4])).chars().count();
        if width > max {
            return format!(
                "{}… ({} bytes in all)",
                s.get(..at).unwrap_or_default(),
                s.len()
            );
        }
    }
    s.to_owned()
}

/// A JSON text with every character that [`escape`] would escape written as a JSON `\uXXXX`
/// escape. JSON's own structure is ASCII, so such characters occur only inside strings, where the
/// escape means the same character to every JSON reader.
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if (c.is_control() && !matches!(c, '\n' | '\t' | '\r')) || is_deceptive(c) {
            // serde_json already escapes C0 inside strings; this catches DEL, C1 and the rest.
            // A character beyond U+FFFF is written as its UTF-16 surrogate pair, as JSON spells it.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Shrink a JSON report until its compact text fits in `budget` bytes: first every list of
/// `problems` or `findings` is cut to a few items (with a note of how many were left out), then to
/// one, then the per-cell and per-receipt details are dropped, keeping the verdicts. Returns
/// whether anything was cut. A report that fits is left as it is.
pub fn fit_json(report: &mut serde_json::Value, budget: usize) -> bool {
    let size = |v: &serde_json::Value| serde_json::to_string(v).map_or(usize::MAX, |t| t.len());
    if size(report) <= budget {
        return false;
    }
    for keep in [8, 1] {
        cut_lists(report, keep);
        if size(report) <= budget {
            return true;
        }
    }
    drop_details(report);
    true
}

const LISTS: [&str; 2] = ["problems", "findings"];
const DETAILS: [&str; 3] = ["cell_reports", "receipts", "journal_kinds"];

fn cut_lists(v: &mut serde_json::Value, keep: usize) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                if let (true, serde_json::Value::Array(a)) =
                    (LISTS.contains(&k.as_str()), &mut *item)
                {
                    if a.len() > keep {
                        let left = a.len() - keep;
                        a.truncate(keep);
                        a.push(serde_json::json!({"code": "truncated", "message": format!("{left} more left out to keep the report small; the text output and a smaller file show them")}));
                    }
                }
                cut_lists(item, keep);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| cut_lists(x, keep)),
        _ => {}
    }
}

fn drop_details(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in DETAILS {
                if m.remove(k).is_some() {
                    m.insert(format!("{k}_left_out"), serde_json::Value::Bool(true));
                }
            }
            m.values_mut().for_each(drop_details);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_details),
        _ => {}
    }
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

    /// Every format character (Cf) and other invisible or line-breaking character is escaped on
    /// the terminal and in JSON; U+061C (the Arabic letter mark) was not.
    #[test]
    fn format_and_invisible_characters_are_escaped() {
        let hidden = [
            '\u{ad}',
            '\u{600}',
            '\u{61c}',
            '\u{6dd}',
            '\u{70f}',
            '\u{180e}',
            '\u{200b}',
            '\u{200e}',
            '\u{202a}',
            '\u{202e}',
            '\u{2060}',
            '\u{2064}',
            '\u{2066}',
            '\u{2069}',
            '\u{206f}',
            '\u{feff}',
            '\u{fff9}',
            '\u{110bd}',
            '\u{1d173}',
            '\u{e0001}',
            '\u{e007f}',
            '\u{2028}',
            '\u{2029}',
            '\u{34f}',
            '\u{115f}',
            '\u{3164}',
            '\u{fe0f}',
            '\u{e0100}',
        ];
        for c in hidden {
            let text = format!("a{c}b");
            assert!(!escape(&text).contains(c), "{:04x}", u32::from(c));
            let json = json_safe(&serde_json::json!({ "v": text }).to_string());
            assert!(!json.contains(c), "{:04x}", u32::from(c));
            let back: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
            assert_eq!(back["v"], text);
        }
        // Letters, marks and symbols that print are kept.
        for text in ["caf\u{e9}", "\u{5d0}\u{5d1}", "\u{1f600}", "\u{301}x"] {
            assert_eq!(escape(text), text);
        }
    }

    #[test]
    fn reports_are_cut_to_the_budget_keeping_the_verdict() {
        let problems: Vec<serde_json::Value> = (0..500)
            .map(|i| serde_json::json!({"code": "x", "message": format!("problem {i}")}))
            .collect();
        let mut v = serde_json::json!({"files": [{"status": "failed", "report": {"ok": false, "problems": problems}}]});
        assert!(!fit_json(&mut v.clone(), 1 << 20));
        assert!(fit_json(&mut v, 2_000));
        let text = v.to_string();
        assert!(text.len() <= 2_000, "{}", text.len());
        assert!(text.contains("\"status\":\"failed\""));
        assert!(text.contains("more left out"));
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
