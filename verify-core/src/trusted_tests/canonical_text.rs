//! Unit tests of `canonical_text`: whatever it writes is what `canonical::to_vec` writes for the
//! value the text holds, on texts spelled in many ways (kept apart so the core reads without them).
use super::*;
use crate::canonical;
use proptest::prelude::*;
use serde_json::{json, Value};

const LIMITS: Limits = Limits {
    max_string_bytes: 64,
    max_depth: 8,
};

fn fast(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    write(text, LIMITS, &mut Scratch::default(), &mut out).map(|()| out)
}

/// What the fast path must agree with: the canonical writer over the parsed value (`None` when
/// the text does not parse or has no canonical form).
fn slow(text: &str) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_str(text).ok()?;
    canonical::to_vec(&value).ok()
}

/// When the fast path writes, it writes what the canonical writer does.
fn agrees(text: &str) -> bool {
    match fast(text) {
        Some(bytes) => slow(text).as_deref() == Some(&bytes[..]),
        None => true,
    }
}

#[test]
fn copies_canonical_text_as_it_stands() {
    let text = r#"{"a":[true,false,null,"x\u{e9}"],"b":-9007199254740991,"c":{}}"#;
    let text = text.replace("\\u{e9}", "\u{e9}");
    assert_eq!(fast(&text), Some(text.clone().into_bytes()));
    assert_eq!(fast(&text), slow(&text));
}

#[test]
fn drops_whitespace_and_sorts_keys() {
    let text = " { \"b\" : [ 1 , 2 ] ,\n\t\"a\":{\"d\":0,\"c\":\"\u{1f600}\"}, \"\u{fb01}\":0, \"\u{1f600}\":1 } \r\n";
    assert_eq!(
        fast(text).map(String::from_utf8),
        Some(Ok(
            "{\"a\":{\"c\":\"\u{1f600}\",\"d\":0},\"b\":[1,2],\"\u{1f600}\":1,\"\u{fb01}\":0}"
                .to_owned()
        ))
    );
    assert!(agrees(text));
}

#[test]
fn leaves_to_the_slow_path_what_it_does_not_decide() {
    for text in [
        r#""a\"b""#,        // any escape
        r#"{"a\u0062":1}"#, // an escaped key
        r#""a\/b""#,        // an escape that canonical form drops
        "1.0",              // fraction
        "1e3",              // exponent
        "-0",               // negative zero
        "01",               // leading zero
        "9007199254740992", // beyond 2^53 - 1
        "-9007199254740992",
        "12345678901234567890",
        r#"{"a":1,"a":1}"#,       // a key twice, in order
        r#"{"b":1,"a":2,"b":1}"#, // a key twice, out of order
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "\"a\u{1}b\"", // a raw control character
        "\"abc",
        "tru",
        "nul",
        "[",
        "",
        "1 2",
        "{\"a\" 1}",
        "{1:2}",
    ] {
        assert_eq!(fast(text), None, "{text}");
    }
    let long = format!("\"{}\"", "x".repeat(LIMITS.max_string_bytes + 1));
    assert_eq!(fast(&long), None);
    let long_key = format!("{{\"{}\":1}}", "x".repeat(LIMITS.max_string_bytes + 1));
    assert_eq!(fast(&long_key), None);
    let just = format!("\"{}\"", "x".repeat(LIMITS.max_string_bytes));
    assert!(fast(&just).is_some());
}

#[test]
fn nesting_past_the_limit_is_left_to_the_slow_path() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(fast(&deep(LIMITS.max_depth)).is_some());
    assert_eq!(fast(&deep(LIMITS.max_depth + 1)), None);
    let objects = |n: usize| format!("{}0{}", "{\"a\":".repeat(n), "}".repeat(n));
    assert!(fast(&objects(LIMITS.max_depth)).is_some());
    assert_eq!(fast(&objects(LIMITS.max_depth + 1)), None);
}

#[test]
fn scratch_carries_nothing_from_one_text_to_the_next() {
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    assert!(write(
        r#"{"b":{"d":1,"c":2},"a":{"b":1,"a":1,"b":2}}"#,
        LIMITS,
        &mut scratch,
        &mut out
    )
    .is_none());
    out.clear();
    let text = r#"{"z":{"y":1,"x":2},"a":0}"#;
    assert!(write(text, LIMITS, &mut scratch, &mut out).is_some());
    assert_eq!(Some(out), slow(text));
}

/// A JSON value drawn for the tests: keys and strings from characters that need escaping, that
/// sort differently in UTF-16 and UTF-8, and plain ones.
fn arb_value() -> impl Strategy<Value = Value> {
    let chars =
        "[a-c\"\\\\/\u{0}-\u{1f}\u{7f}\u{e9}\u{2028}\u{e000}\u{ffff}\u{10000}\u{1f600} ]{0,5}";
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-canonical::MAX_SAFE_INTEGER..=canonical::MAX_SAFE_INTEGER).prop_map(|n| json!(n)),
        (-20i64..20).prop_map(|n| json!(n)),
        chars.prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((chars, inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// How a value is spelled: whitespace, escapes of characters that need none, member order,
/// number forms and repeated keys, each drawn from `seed`.
struct Spelling {
    seed: u64,
}

impl Spelling {
    fn draw(&mut self, n: u64) -> u64 {
        // xorshift64
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed % n
    }

    fn space(&mut self, out: &mut String) {
        for _ in 0..self.draw(4).saturating_sub(2) {
            out.push([' ', '\n', '\t', '\r'][self.draw(4) as usize]);
        }
    }

    fn string(&mut self, out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            let must = c == '"' || c == '\\' || (c as u32) < 0x20;
            match self.draw(if must { 2 } else { 12 }) {
                0 if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04X}", c as u32)),
                0 => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                1 if c == '/' => out.push_str("\\/"),
                _ if must => {
                    let json = serde_json::to_string(&c.to_string()).unwrap_or_default();
                    out.push_str(json.trim_matches('"'));
                }
                _ => out.push(c),
            }
        }
        out.push('"');
    }

    fn value(&mut self, out: &mut String, v: &Value) {
        self.space(out);
        match v {
            Value::Number(n) => match (self.draw(10), n.as_i64()) {
                (0, Some(i)) => out.push_str(&format!("{i}.0")),
                (1, Some(i)) => out.push_str(&format!("{i}e0")),
                (2, Some(0)) => out.push_str("-0"),
                _ => out.push_str(&n.to_string()),
            },
            Value::String(s) => self.string(out, s),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.value(out, item);
                }
                self.space(out);
                out.push(']');
            }
            Value::Object(map) => {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                if self.draw(2) == 0 {
                    members.reverse();
                }
                if self.draw(8) == 0 {
                    if let Some(&first) = members.first() {
                        members.push(first);
                    }
                }
                out.push('{');
                for (i, (k, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.space(out);
                    self.string(out, k);
                    self.space(out);
                    out.push(':');
                    self.value(out, item);
                }
                self.space(out);
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
        self.space(out);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// On every spelling of every value, the fast path either declines or writes exactly the
    /// canonical writer's bytes.
    #[test]
    fn writes_what_the_canonical_writer_writes(v in arb_value(), seed in 1u64..) {
        let mut text = String::new();
        Spelling { seed }.value(&mut text, &v);
        if let Some(bytes) = &fast(&text) {
            prop_assert_eq!(Some(bytes.clone()), slow(&text), "{}", text);
        }
        // serde_json's own spellings (compact and pretty, members in their order) are taken
        // by the fast path whenever nothing in them needs an escape and the limits hold.
        for spelled in [serde_json::to_string(&v), serde_json::to_string_pretty(&v)] {
            let spelled = spelled.unwrap_or_default();
            let decided = fast(&spelled);
            prop_assert!(decided.is_none() || decided == slow(&spelled), "{}", spelled);
            if !spelled.contains('\\') && v_within(&v, 1) {
                prop_assert_eq!(decided, slow(&spelled), "{}", spelled);
            }
        }
    }

    /// A byte changed anywhere in a text the fast path takes changes its canonical form or
    /// leaves the decision to the slow path, and still agrees with it.
    #[test]
    fn a_changed_byte_never_passes_for_the_original(v in arb_value(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let text = serde_json::to_string(&v).unwrap_or_default();
        let mut bytes = text.clone().into_bytes();
        if bytes.is_empty() { return Ok(()); }
        let i = at.index(bytes.len());
        if bytes[i] == byte { return Ok(()); }
        bytes[i] = byte;
        let Ok(changed) = String::from_utf8(bytes) else { return Ok(()); };
        prop_assert!(agrees(&changed), "{}", changed);
    }
}

/// Whether `v` stays within [`LIMITS`] (its containers start at `depth`).
fn v_within(v: &Value, depth: usize) -> bool {
    let short = |s: &str| s.len() <= LIMITS.max_string_bytes;
    match v {
        Value::String(s) => short(s),
        Value::Array(items) => {
            depth <= LIMITS.max_depth && items.iter().all(|i| v_within(i, depth + 1))
        }
        Value::Object(m) => {
            depth <= LIMITS.max_depth && m.iter().all(|(k, i)| short(k) && v_within(i, depth + 1))
        }
        _ => true,
    }
}
