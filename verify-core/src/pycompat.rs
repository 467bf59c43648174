//! The original Python implementation's hashing, reproduced so its published receipts re-verify.
//!
//! The original hashed each journal entry (without its `hash` key) as the UTF-8 of
//! `json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`:
//! - object keys sorted by code point, at every level, no whitespace;
//! - strings: `"` `\` and `\n \r \t \b \f` as two-character escapes; every other character outside
//!   `' '..='~'` (control characters, U+007F and all non-ASCII) as `\uXXXX` with lowercase hex,
//!   characters above U+FFFF as a UTF-16 surrogate pair;
//! - integers as integers; floats in Python `repr` form: the shortest digits that round-trip, in
//!   fixed notation (always with a fractional part, e.g. `1000.0`) when the decimal exponent is in
//!   `-4..16`, else `d.ddde+XX` / `d.ddde-XX` (at least two exponent digits).
//!
//! Effect ids were the first 12 hex characters of the SHA-256 of `json.dumps(request_id)`.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Length of the original's (truncated) effect ids, in hex characters.
pub const ORIGINAL_EFFECT_ID_LEN: usize = 12;

/// Why a value has no Python canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PyDumpError {
    /// A float that is not finite (Python would write `NaN`/`Infinity`, which is not JSON).
    #[error("the number {0} has no JSON form")]
    NonFinite(String),
}

/// The text of Python's `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`.
pub fn dumps(value: &Value) -> Result<String, PyDumpError> {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value)?;
    Ok(out)
}

/// The original's entry hash: hex SHA-256 of [`dumps`] of the entry without its `hash` key.
pub fn entry_hash(entry: &Map<String, Value>) -> Result<String, PyDumpError> {
    let mut covered = entry.clone();
    covered.remove("hash");
    let text = dumps(&Value::Object(covered))?;
    Ok(hex::encode(Sha256::digest(text.as_bytes())))
}

/// The original's effect id for a string `request_id`: the first 12 hex characters of the SHA-256
/// of `json.dumps(request_id)` (a quoted, ASCII-escaped string).
pub fn effect_id_for_request(request_id: &str) -> String {
    let mut text = String::new();
    write_string(&mut text, request_id);
    let mut id = hex::encode(Sha256::digest(text.as_bytes()));
    id.truncate(ORIGINAL_EFFECT_ID_LEN);
    id
}

/// Python's `repr` of a finite float.
pub fn float_repr(f: f64) -> Result<String, PyDumpError> {
    if !f.is_finite() {
        return Err(PyDumpError::NonFinite(f.to_string()));
    }
    if f == 0.0 {
        return Ok(if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned());
    }
    // Rust's `{:e}` writes the shortest round-trip digits: "-1.7893391497259269e9".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci
        .split_once('e')
        .ok_or_else(|| PyDumpError::NonFinite(sci.clone()))?;
    let exp: i32 = exp
        .parse()
        .map_err(|_| PyDumpError::NonFinite(sci.clone()))?;
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = (exp as usize) + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
    Ok(out)
}

fn write_value(out: &mut String, value: &Value) -> Result<(), PyDumpError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else if let Some(f) = n.as_f64() {
                out.push_str(&float_repr(f)?);
            } else {
                return Err(PyDumpError::NonFinite(n.to_string()));
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Rust's `str` order is byte order of UTF-8, which is code point order, as in Python.
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_python() {
        let cases: [(f64, &str); 16] = [
            (1789339107.401141, "1789339107.401141"),
            (1789339149.7259269, "1789339149.7259269"),
            (1000.0, "1000.0"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e100, "1e+100"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f).unwrap(), want, "{f:?}");
        }
        assert!(float_repr(f64::NAN).is_err());
    }

    #[test]
    fn strings_escape_like_ensure_ascii() {
        let v = json!("a\"b\\c/\n\r\t\u{08}\u{0C}\u{01}\u{7f}é\u{1f600}~ ");
        assert_eq!(
            dumps(&v).unwrap(),
            r#""a\"b\\c/\n\r\t\b\f\u0001\u007f\u00e9\ud83d\ude00~ ""#
        );
    }

    #[test]
    fn keys_sort_by_code_point_and_ints_stay_ints() {
        let v = json!({"b": 1, "a": {"\u{e9}": 1.0, "z": -3}, "\u{1f600}": null, "\u{fb01}": true});
        assert_eq!(
            dumps(&v).unwrap(),
            r#"{"a":{"z":-3,"\u00e9":1.0},"b":1,"\ufb01":true,"\ud83d\ude00":null}"#
        );
    }

    #[test]
    fn worked_effect_ids_of_the_published_run() {
        assert_eq!(
            effect_id_for_request("goodwill-credit:case-fc36291434"),
            "6fdbedc91d21"
        );
        assert_eq!(
            effect_id_for_request("goodwill-credit:case-0230701ef3"),
            "5af981a181de"
        );
    }

    #[test]
    fn worked_canonical_text_of_a_published_entry() {
        let entry = json!({
            "ts": 1789339107.401141, "kind": "PROPOSED", "effect_id": "6fdbedc91d21",
            "agent": "billing-credit-agent", "lease": "approval-case-fc36291434",
            "premises": {"subscription_status": "active", "incident_compensation": 0},
            "effect": {"customer": "cus_VFrlSqPG8t2Dnq", "amount": 1000,
                "description": "Goodwill credit for 3-day service outage during incident INC-d86886 (case-fc36291434)"},
            "prev": null
        });
        assert_eq!(
            dumps(&entry).unwrap(),
            r#"{"agent":"billing-credit-agent","effect":{"amount":1000,"customer":"cus_VFrlSqPG8t2Dnq","description":"Goodwill credit for 3-day service outage during incident INC-d86886 (case-fc36291434)"},"effect_id":"6fdbedc91d21","kind":"PROPOSED","lease":"approval-case-fc36291434","premises":{"incident_compensation":0,"subscription_status":"active"},"prev":null,"ts":1789339107.401141}"#
        );
    }
}
