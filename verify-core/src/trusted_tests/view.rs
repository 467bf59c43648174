//! Unit tests of `view` (kept apart so the trusted core reads without them).
use super::*;
use crate::canonical;
use proptest::prelude::*;
use serde_json::json;

/// A text with every kind of value: escapes, non-ASCII, numbers of every kind, nesting.
const MIXED: &str = r#"{"v": 1, "ts_ms": 1789007000000, "z": null, "a": [1, -2, 3.5, 1e300,
    18446744073709551615, "\u00e9\n\"x\"", true, false, [], {}], "nested": {"k": {"deep":
    [{"x": 0.1}]}}, "neg": -9223372036854775808, "f": 1717171717.123456, "e\u0301": "\ud83d\ude00",
    "s": "plain", "": ""}"#;

#[test]
fn a_view_read_from_text_is_the_value_read_from_it() {
    let view: View<'_> = serde_json::from_str(MIXED).unwrap_or_else(|e| panic!("{e}"));
    let value: Value = serde_json::from_str(MIXED).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view.to_value(), value);
    // The same members in the same order, and the same text when printed.
    assert_eq!(view.to_string(), value.to_string());
    assert_eq!(View::of(&value), view);
    // Strings without an escape are borrowed from the text; a key or string with one is not.
    let Some(View::String(Cow::Borrowed("plain"))) = view.get("s") else {
        panic!("a plain string is borrowed: {:?}", view.get("s"));
    };
    assert!(matches!(
        view.get("e\u{301}"),
        Some(View::String(Cow::Owned(_)))
    ));
}

#[test]
fn views_compare_as_values_do() {
    let pairs = [
        (
            json!({"a": 1, "b": [1, 2]}),
            json!({"b": [1, 2], "a": 1}),
            true,
        ),
        (json!({"a": 1}), json!({"a": 1, "b": null}), false),
        (json!([1, 2]), json!([2, 1]), false),
        (json!(1), json!(1.0), false),
        (json!(-0), json!(0), true),
        (json!("1"), json!(1), false),
        (json!(null), json!({}), false),
        (json!({"a": {"b": 1}}), json!({"a": {"b": 2}}), false),
    ];
    for (a, b, equal) in pairs {
        assert_eq!(a == b, equal, "{a} {b}");
        assert_eq!(View::of(&a) == View::of(&b), equal, "{a} {b}");
    }
    // Objects of more members than are compared one by one: in key order, whatever their order.
    let wide = |n: usize, reversed: bool, last: i64| {
        let mut members: Vec<(String, Value)> =
            (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
        if let Some(m) = members.last_mut() {
            m.1 = json!(last);
        }
        if reversed {
            members.reverse();
        }
        Value::Object(members.into_iter().collect())
    };
    for n in [16, 17, 40] {
        for (a, b) in [
            (wide(n, false, 0), wide(n, true, 0)),
            (wide(n, false, 0), wide(n, true, 1)),
            (wide(n, false, 0), wide(n + 1, false, 0)),
        ] {
            assert_eq!(View::of(&a) == View::of(&b), a == b, "{a} {b}");
        }
    }
}

#[test]
fn a_key_twice_is_refused_however_large_the_object() {
    for n in [2usize, 3, 16, 17, 40] {
        let mut members: Vec<String> = (0..n).map(|i| format!("\"k{i}\": {i}")).collect();
        let fine = format!("{{{}}}", members.join(","));
        assert!(serde_json::from_str::<View<'_>>(&fine).is_ok(), "{fine}");
        members.push("\"k0\": 0".into());
        let twice = format!("{{{}}}", members.join(","));
        let err = serde_json::from_str::<View<'_>>(&twice)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("same key twice")), "{twice}");
    }
    // Spelled differently, the same key.
    let spelled = r#"{"ab": 1, "a\u0062": 2}"#;
    assert!(serde_json::from_str::<View<'_>>(spelled).is_err());
}

#[test]
fn a_bundle_view_reads_what_a_bundle_reads_and_refuses_what_it_refuses() {
    let texts = [
        r#"{"format": "f", "effect_id": "e", "entries": []}"#,
        r#"{"format": "f", "effect_id": "e", "entries": [{"a": 1}, [], 5, "s", null]}"#,
        r#"{"format": "f", "effect_id": "e", "entries": [], "head": null}"#,
        r#"{"format": "f", "effect_id": "e", "entries": [], "extra": 1}"#,
        r#"{"format": "f", "effect_id": "e"}"#,
        r#"{"format": 1, "effect_id": "e", "entries": []}"#,
        r#"{"format": "f", "effect_id": "e", "entries": {}}"#,
        r#"{"format": "f", "effect_id": "e", "entries": 5}"#,
        r#"{"format": "f\u0021", "effect_id": "e", "entries": [{"k": "\n"}]}"#,
        r#"{"format": "f", "effect_id": "e", "entries": [], "head": {"effect_id": "e",
            "count": 0, "last": "", "ts_ms": 1, "signer": "s", "sig": "t"}}"#,
        r#"{"format": "f", "effect_id": "e", "entries": [], "head": {"effect_id": "e"}}"#,
        r#"[]"#,
    ];
    for text in texts {
        let bundle = serde_json::from_str::<ReceiptBundle>(text);
        let view = serde_json::from_str::<BundleView<'_>>(text);
        assert_eq!(bundle.is_ok(), view.is_ok(), "{text}");
        if let (Ok(bundle), Ok(view)) = (bundle, view) {
            assert_eq!(view.to_bundle(), bundle, "{text}");
            assert_eq!(BundleView::of(&bundle).to_bundle(), bundle, "{text}");
        }
    }
}

/// Any JSON value without floats (the canonical writer refuses them either way).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        "\\PC{0,8}".prop_map(Value::String),
        "[\"\\\\\\x00-\\x1f a-z\u{e000}\u{10000}]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-c\u{e000}\u{10000}]{0,3}", inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    /// One canonical writer walks both kinds of value: a view of a value writes the value's
    /// bytes (or the same refusal), and so does the view read back from the value's text.
    #[test]
    fn a_view_writes_the_canonical_bytes_of_its_value(value in json_value()) {
        let expected = canonical::to_vec(&value);
        prop_assert_eq!(canonical::to_vec(&View::of(&value)), expected.clone());
        let text = value.to_string();
        let read: View<'_> = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&read.to_value(), &value);
        prop_assert_eq!(canonical::to_vec(&read), expected);
        if let (Some(map), Some(object)) = (value.as_object(), read.as_object()) {
            let skip = ["hash", "sig", "a"];
            let (mut by_map, mut by_view) = (String::new(), String::new());
            let a = canonical::write_object_without(&mut by_map, map, &skip);
            let b = canonical::write_members_without(&mut by_view, object.iter(), object.len(), &skip);
            prop_assert_eq!(a, b);
            prop_assert_eq!(by_map, by_view);
        }
    }
}

#[test]
fn an_entry_hashes_the_same_as_a_map_and_as_a_view() {
    let entry = json!({"v": 1, "kind": "PROPOSED", "hash": "h", "sig": "s", "b": {"y": [1, "\u{7}"], "x": null},
        "a": "\u{10000}", "\u{e000}": 2});
    let Some(map) = entry.as_object() else {
        panic!("an object")
    };
    let view = View::of(&entry);
    let Some(object) = view.as_object() else {
        panic!("an object")
    };
    assert_eq!(
        crate::entry::compute_view_digest(object),
        crate::entry::compute_digest(map)
    );
    // Objects of more members than the writer sorts on its stack.
    let wide: Value = Value::Object(
        (0..60)
            .map(|i| (format!("k{}", 59 - i), json!(i)))
            .collect(),
    );
    let Some(wide_map) = wide.as_object() else {
        panic!("an object")
    };
    let wide_view = View::of(&wide);
    let Some(wide_object) = wide_view.as_object() else {
        panic!("an object")
    };
    assert_eq!(
        crate::entry::compute_view_digest(wide_object),
        crate::entry::compute_digest(wide_map)
    );
}

/// A signed receipt of four entries whose DISPATCHED carries the proposal's effect with its
/// members in another order (the same payload), and a string with characters that need escapes.
fn signed_receipt() -> ReceiptBundle {
    use sha2::{Digest, Sha256};
    let key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let effect =
        json!({"customer": "cus_1", "amount": 1000, "description": "caf\u{e9} \"x\" \\ \u{1}"});
    let effect_reordered =
        json!({"description": "caf\u{e9} \"x\" \\ \u{1}", "amount": 1000, "customer": "cus_1"});
    let eid = crate::entry::lower_hex(&Sha256::digest(
        canonical::to_vec(&effect).unwrap_or_default(),
    ));
    let grant = json!({"id": "approval-1", "approver": "lead", "max_cents": 1000, "revoked": null});
    let fields = [
        json!({"kind": "PROPOSED", "agent": "a", "lease": "approval-1", "premises": {}, "effect": effect}),
        json!({"kind": "AUTHORIZED", "lease": "approval-1"}),
        json!({"kind": "DISPATCHED", "lease": "approval-1", "effect": effect_reordered,
               "checks": {"lease_live": true, "grant": grant, "violations": []}}),
        json!({"kind": "COMMITTED", "via": "send", "evidence": {"credit": "c1", "amount": 1000}}),
    ];
    let mut entries = Vec::new();
    let mut prev = Value::Null;
    for (i, f) in fields.into_iter().enumerate() {
        let mut e = f.as_object().cloned().unwrap_or_default();
        e.insert("v".into(), json!(1));
        e.insert("ts_ms".into(), json!(1_789_000_000_000u64 + i as u64));
        e.insert("effect_id".into(), json!(eid));
        e.insert("prev".into(), prev.clone());
        crate::writer::seal(&mut e, &key).unwrap_or_else(|e| panic!("{e}"));
        prev = e.get("hash").cloned().unwrap_or_default();
        entries.push(Value::Object(e));
    }
    ReceiptBundle::new(eid, entries)
}

/// Every string of `value` spelled with `\u` escapes for its ASCII letters (the same value).
fn escaped(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let plain = Value::String(s.clone()).to_string();
            let inner = &plain[1..plain.len() - 1];
            let mut out = String::from("\"");
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    // An escape already: kept as it is (`\uXXXX` with its four digits).
                    out.push(c);
                    let next = chars.next();
                    out.extend(next);
                    if next == Some('u') {
                        out.extend(chars.by_ref().take(4));
                    }
                } else if c.is_ascii_alphabetic() {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push(c);
                }
            }
            out.push('"');
            out
        }
        Value::Array(items) => format!(
            "[ {} ]",
            items.iter().map(escaped).collect::<Vec<_>>().join(" ,\n")
        ),
        Value::Object(map) => format!(
            "{{\t{} }}",
            map.iter()
                .rev()
                .map(|(k, v)| format!("{} :{}", escaped(&json!(k)), escaped(v)))
                .collect::<Vec<_>>()
                .join(",\r\n")
        ),
        other => other.to_string(),
    }
}

#[test]
fn a_receipt_read_from_text_in_any_spelling_verifies_as_its_values_do() {
    use crate::receipt::{verify_bundle, verify_group_views, KeyCheck, SignerRule, Vetted};
    let bundle = signed_receipt();
    let value = serde_json::to_value(&bundle).unwrap_or_default();
    let reference = verify_bundle(&bundle, &KeyCheck::SelfAttested);
    assert!(reference.valid, "{:?}", reference.problems);
    // Compact, pretty, every letter escaped with members in reverse order and odd whitespace,
    // numbers in another spelling where the value is the same integer.
    let spellings = [
        value.to_string(),
        serde_json::to_string_pretty(&value).unwrap_or_default(),
        escaped(&value),
        value.to_string().replace("\"v\":1,", "\"v\":1 ,"),
    ];
    for text in &spellings {
        let view: BundleView<'_> = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let read: ReceiptBundle = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let rule = SignerRule::FromRecord;
        let from_view = verify_group_views(&[&view], &rule, &Vetted::default());
        let from_values = verify_bundle(&read, &KeyCheck::SelfAttested);
        assert_eq!(from_view.first(), Some(&from_values), "{text}");
        assert_eq!(from_values, reference, "{text}");
    }
    // A number spelled as a float is another value: the entry no longer hashes (as before).
    let float = value.to_string().replacen("\"v\":1,", "\"v\":1.0,", 1);
    let view: BundleView<'_> = serde_json::from_str(&float).unwrap_or_else(|e| panic!("{e}"));
    let read: ReceiptBundle = serde_json::from_str(&float).unwrap_or_else(|e| panic!("{e}"));
    let from_view = verify_group_views(&[&view], &SignerRule::FromRecord, &Vetted::default());
    let from_values = verify_bundle(&read, &KeyCheck::SelfAttested);
    assert_eq!(from_view.first(), Some(&from_values));
    assert!(!from_values.valid);
    // A key twice in an entry: the view refuses to read it at all.
    let twice = value
        .to_string()
        .replacen("\"v\":1,", "\"v\":1,\"v\":1,", 1);
    assert!(serde_json::from_str::<BundleView<'_>>(&twice).is_err());
}

#[test]
fn a_payload_with_its_members_in_another_order_is_the_same_payload() {
    // The DISPATCHED of `signed_receipt` lists the effect's members in another order: an
    // order-sensitive comparison would call it a changed payload.
    let bundle = signed_receipt();
    let report = crate::receipt::verify_bundle(&bundle, &crate::receipt::KeyCheck::SelfAttested);
    assert!(report.valid, "{:?}", report.problems);
    let view = BundleView::of(&bundle);
    let (proposed, dispatched) = (view.entries[0].get("effect"), view.entries[2].get("effect"));
    assert_eq!(proposed, dispatched);
    let order = |v: Option<&View<'_>>| {
        v.and_then(View::as_object)
            .map(|o| o.iter().map(|(k, _)| k.to_owned()).collect::<Vec<_>>())
    };
    assert_ne!(order(proposed), order(dispatched));
}
