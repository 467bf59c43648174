//! Unit tests of `entry` (kept apart so the trusted core reads without them).
use super::*;
use crate::writer::{compute_hash, seal, signing_message};
use ed25519_dalek::{Signature, SigningKey, Verifier};
use serde_json::json;

#[test]
fn compact_entries_read_as_serde_json_values_do() {
    let text = r#"{"format": "interlock-receipt/1", "effect_id": "ab", "entries": [
        {"v": 1, "ts_ms": 1789007000000, "z": null, "a": [1, -2, 3.5, 1e300, 18446744073709551615,
         "\u00e9\n\"x\"", true, false, [], {}], "nested": {"k": {"deep": [{"x": 0.1}]}},
         "neg": -9223372036854775808, "f": 1717171717.123456},
        [], 7, "s", null
    ]}"#;
    let ours: ReceiptBundle = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    let theirs: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        Some(&Value::Array(ours.entries.clone())),
        theirs.get("entries")
    );
    // Member order is kept (it is what a reader sees), and so are the exact numbers.
    let first = ours.entries.first().and_then(Value::as_object);
    let keys: Vec<&str> = first
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys, ["v", "ts_ms", "z", "a", "nested", "neg", "f"]);
    assert_eq!(
        serde_json::to_string(&ours.entries).ok(),
        theirs.get("entries").map(Value::to_string)
    );
    let bad: Result<ReceiptBundle, _> =
        serde_json::from_str(r#"{"format": "x", "effect_id": "ab", "entries": 5}"#);
    let err = bad.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("expected a sequence"), "{err}");
}

#[test]
fn an_object_of_more_members_than_are_kept_loses_none_of_its_parents() {
    // A nested object past the kept capacity closes while its parents' members wait on the
    // stack: every member must stay in its own object (a review forged a pinned file through
    // members dropped and moved up here).
    let padding: Vec<String> = (0..1100).map(|i| format!("\"_pad{i}\":0")).collect();
    let entry = format!(
        r#"{{"x":1,"p":{{"big":{{{}}},"c":2}},"voided":true,{},"premises":{{"a":1}},"amount":1000}}"#,
        padding.join(","),
        padding.join(",")
    );
    let text = format!(
        r#"{{"format":"interlock-receipt/1","effect_id":"ab","entries":[{entry},{entry}]}}"#
    );
    let ours: ReceiptBundle = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let theirs: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        Some(&Value::Array(ours.entries.clone())),
        theirs.get("entries")
    );
}

#[test]
fn seal_sets_signer_hash_and_a_verifiable_signature() {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let mut e = json!({"v": 1, "ts_ms": 1, "kind": "PROPOSED", "effect_id": "ab", "prev": null})
        .as_object()
        .cloned()
        .unwrap();
    seal(&mut e, &key).unwrap();
    let hash = e["hash"].as_str().unwrap().to_owned();
    assert_eq!(hash, compute_hash(&e).unwrap());
    let sig_bytes: [u8; 64] = hex::decode(e["sig"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    key.verifying_key()
        .verify(&signing_message(&hash), &Signature::from_bytes(&sig_bytes))
        .unwrap();
    // Changing any covered field changes the hash.
    e.insert("ts_ms".into(), json!(2));
    assert_ne!(compute_hash(&e).unwrap(), hash);
}

#[test]
fn hex_helpers_agree_with_the_hex_crate() {
    let bytes: Vec<u8> = (0..=255u8).collect();
    let spelled = hex::encode(&bytes);
    assert_eq!(lower_hex(&bytes), spelled);
    assert!(is_lower_hex_of(&spelled, &bytes));
    assert!(!is_lower_hex_of(&spelled.to_uppercase(), &bytes));
    assert!(!is_lower_hex_of(&spelled[2..], &bytes));
    let four = &spelled[..8];
    assert_eq!(decode_lower_hex::<4>(four), Some([0, 1, 2, 3]));
    assert_eq!(decode_lower_hex::<4>("0001020F"), None);
    assert_eq!(decode_lower_hex::<4>("000102"), None);
    assert_eq!(decode_lower_hex::<4>("0001020g"), None);
    assert_eq!(decode_lower_hex::<4>("000102030"), None);
    let all: [u8; 256] = decode_lower_hex(&spelled).unwrap();
    assert_eq!(all.to_vec(), bytes);
    // Every pair of ASCII characters, and a few others: exactly the lowercase spellings decode,
    // to what the hex crate decodes them to.
    let ascii = (0u8..128).map(char::from);
    let chars: Vec<char> = ascii.chain(['\u{e9}', '\u{ff10}', '\u{1F600}']).collect();
    for a in &chars {
        for b in &chars {
            let text = format!("{a}{b}");
            let lower = |c: &char| c.is_ascii_digit() || ('a'..='f').contains(c);
            let expected = (lower(a) && lower(b))
                .then(|| hex::decode(&text).ok())
                .flatten()
                .map(|v| [v[0]]);
            assert_eq!(decode_lower_hex::<1>(&text), expected, "{text:?}");
        }
    }
}

#[test]
fn kinds_round_trip() {
    for k in Kind::ALL {
        assert_eq!(Kind::parse(k.as_str()), Some(k));
    }
    assert_eq!(Kind::parse("COMMITED"), None);
}
