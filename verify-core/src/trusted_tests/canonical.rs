//! Unit tests of `canonical` (kept apart so the trusted core reads without them).
use super::*;
use serde_json::json;

#[test]
fn sorts_keys_and_drops_whitespace() {
    let v = json!({"b": 1, "a": [true, null, "x"], "c": {"z": 0, "y": -5}});
    assert_eq!(
        to_string(&v).unwrap(),
        r#"{"a":[true,null,"x"],"b":1,"c":{"y":-5,"z":0}}"#
    );
}

#[test]
fn keys_sort_by_utf16_code_units_not_code_points() {
    // U+1F600 is encoded as the surrogate pair D83D DE00, which sorts before U+FB01 (one unit).
    let v = json!({"\u{fb01}": 1, "\u{1f600}": 2, "a": 3});
    assert_eq!(
        to_string(&v).unwrap(),
        "{\"a\":3,\"\u{1f600}\":2,\"\u{fb01}\":1}"
    );
}

#[test]
fn escapes_only_what_rfc8785_escapes() {
    let v = json!("q\"b\\s/\u{08}\t\n\u{0C}\r\u{01}\u{1f}\u{7f}é");
    assert_eq!(
        to_string(&v).unwrap(),
        "\"q\\\"b\\\\s/\\b\\t\\n\\f\\r\\u0001\\u001f\u{7f}é\""
    );
}

#[test]
fn rejects_floats_and_unsafe_integers() {
    assert!(matches!(
        to_string(&json!({"a": 1.5})),
        Err(CanonicalError::Float(_))
    ));
    assert!(matches!(
        to_string(&json!(MAX_SAFE_INTEGER + 1)),
        Err(CanonicalError::IntegerRange(_))
    ));
    assert!(matches!(
        to_string(&json!(u64::MAX)),
        Err(CanonicalError::IntegerRange(_))
    ));
    assert_eq!(
        to_string(&json!(-MAX_SAFE_INTEGER)).unwrap(),
        "-9007199254740991"
    );
}

proptest::proptest! {
    #[test]
    fn utf16_order_fast_path_agrees(a in "[a-z\u{e000}-\u{e002}\u{ffff}\u{10000}\u{1f600}\u{7f}\u{80}]{0,4}",
                                    b in "[a-z\u{e000}-\u{e002}\u{ffff}\u{10000}\u{1f600}\u{7f}\u{80}]{0,4}") {
        proptest::prop_assert_eq!(cmp_utf16(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
    }
}

#[test]
fn skipping_members_equals_removing_them() {
    let v = json!({"hash": "h", "sig": "s", "b": {"hash": 1}, "a": "x\u{1f600}\"y"});
    let mut removed = v.as_object().unwrap().clone();
    removed.remove("hash");
    removed.remove("sig");
    assert_eq!(
        {
            let mut out = String::new();
            write_object_without(&mut out, v.as_object().unwrap(), &["hash", "sig"]).unwrap();
            out
        },
        to_string(&Value::Object(removed)).unwrap()
    );
}

#[test]
fn canonical_form_is_a_fixed_point_under_reparse() {
    let v = json!({"k": ["\u{2028}", {"b": 2, "a": 1}], "n": 0});
    let once = to_string(&v).unwrap();
    let reparsed: Value = serde_json::from_str(&once).unwrap();
    assert_eq!(to_string(&reparsed).unwrap(), once);
}
