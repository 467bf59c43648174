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
