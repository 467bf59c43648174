//! Property-based fuzzing of the loader and checkers: no input makes them panic, and a loaded
//! file that was edited never verifies unless the edit left its JSON value unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::Value;
use std::sync::OnceLock;
use verify::check::verify_results;
use verify::load::{load_document, Document};
use verify::original::verify_original_results;
use verify::receipt::{verify_bundle, KeyCheck};

fn synthetic() -> &'static (Vec<u8>, Value) {
    static FILE: OnceLock<(Vec<u8>, Value)> = OnceLock::new();
    FILE.get_or_init(|| {
        let f = synthetic::generate(&Default::default());
        let v = serde_json::to_value(&f).unwrap();
        (serde_json::to_vec(&v).unwrap(), v)
    })
}

const ORIGINAL: &[u8] = include_bytes!("../fixtures/billing_credit.original.json");

/// Load and check whatever the bytes are; returns whether every check held.
fn check(bytes: &[u8]) -> Option<(bool, Value)> {
    let doc = load_document(bytes).ok()?;
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let ok = match doc {
        Document::Results(f) => verify_results(&f, &KeyCheck::SelfAttested).ok,
        Document::Receipt(b) => verify_bundle(&b, &KeyCheck::SelfAttested).valid,
        Document::OriginalResults(v) => verify_original_results(&v).ok,
        Document::Nemesis(f) => {
            verify::nemesis::check::verify_nemesis(&f, &KeyCheck::SelfAttested).ok
        }
        Document::SharedCap(f) => verify::shared_cap::check::check(&f, &KeyCheck::SelfAttested).ok,
        Document::SharedCapNemesis(f) => {
            verify::shared_cap::nemesis::check::check(&f, &KeyCheck::SelfAttested).ok
        }
    };
    Some((ok, value))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z\\u{e9}\\u{1f600}]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                "format|cells|entries|effect_id|scenario|[a-z]{1,4}",
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = check(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics(v in json_value()) {
        let _ = check(&serde_json::to_vec(&v).unwrap());
    }

    #[test]
    fn edited_results_files_never_panic(
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<bool>(),
    ) {
        let (good, _) = synthetic();
        let i = at.index(good.len());
        let mut bytes = good.clone();
        if cut {
            bytes.truncate(i);
        } else {
            bytes[i] = byte;
        }
        let _ = check(&bytes);
    }

    #[test]
    fn an_edited_receipt_entry_never_verifies_unless_unchanged(
        cell in any::<prop::sample::Index>(),
        entry in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let (_, value) = synthetic();
        let with_receipt: Vec<usize> = value["cells"].as_array().unwrap().iter().enumerate()
            .filter(|(_, c)| c["receipt"].is_object()).map(|(i, _)| i).collect();
        let c = with_receipt[cell.index(with_receipt.len())];
        let entries = value["cells"][c]["receipt"]["entries"].as_array().unwrap();
        let e = entry.index(entries.len());
        let mut text = serde_json::to_vec(&entries[e]).unwrap();
        let i = at.index(text.len());
        text[i] = byte;
        if let Ok(edited_entry) = serde_json::from_slice::<Value>(&text) {
            let mut edited = value.clone();
            edited["cells"][c]["receipt"]["entries"][e] = edited_entry.clone();
            let (ok, _) = check(&serde_json::to_vec(&edited).unwrap()).unwrap_or((false, Value::Null));
            prop_assert!(!ok || edited_entry == entries[e], "an edit of cells[{}] entry {} byte {} verified", c, e, i);
        }
    }

    #[test]
    fn edited_original_receipts_never_verify_unless_unchanged(
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let start = ORIGINAL.windows(9).position(|w| w == b"\"receipt\"").unwrap();
        let i = start + at.index(ORIGINAL.len() - start);
        let mut bytes = ORIGINAL.to_vec();
        bytes[i] = byte;
        if let Some((ok, edited)) = check(&bytes) {
            let before: Value = serde_json::from_slice(ORIGINAL).unwrap();
            let entries = |v: &Value| -> Vec<Value> {
                v["cells"].as_array().into_iter().flatten().map(|c| c["receipt"]["entries"].clone()).collect()
            };
            prop_assert!(!ok || entries(&edited) == entries(&before), "an edit of a receipt at byte {} verified", i);
        }
    }

    #[test]
    fn edited_original_judgements_never_verify_unless_unchanged(
        cell in any::<prop::sample::Index>(),
        field in 0usize..6,
        value in any::<i64>(),
    ) {
        let before: Value = serde_json::from_slice(ORIGINAL).unwrap();
        let n = before["cells"].as_array().unwrap().len();
        let c = cell.index(n);
        let mut edited = before.clone();
        let target = match field {
            0 => &mut edited["cells"][c]["invariant_held"],
            1 => &mut edited["cells"][c]["answer_matches_stripe"],
            2 => &mut edited["cells"][c]["can_prove_what_happened"],
            3 => &mut edited["cells"][c]["ground_truth"]["case_credit_count"],
            4 => &mut edited["cells"][c]["ground_truth"]["case_credit_cents"],
            _ => &mut edited["cells"][c]["want"]["case_credit_cents"],
        };
        *target = if target.is_boolean() {
            Value::Bool(value % 2 == 0)
        } else {
            Value::from(value.rem_euclid(3000))
        };
        let ok = check(&serde_json::to_vec(&edited).unwrap()).is_some_and(|(ok, _)| ok);
        prop_assert!(!ok || edited == before, "an edit of cells[{}] field {} verified", c, field);
    }

    #[test]
    fn original_files_missing_a_key_never_verify(
        cell in any::<prop::sample::Index>(),
        key in any::<prop::sample::Index>(),
    ) {
        let mut d: Value = serde_json::from_slice(ORIGINAL).unwrap();
        let n = d["cells"].as_array().unwrap().len();
        let c = cell.index(n);
        let obj = d["cells"][c].as_object_mut().unwrap();
        let keys: Vec<String> = obj.keys().cloned().collect();
        let k = &keys[key.index(keys.len())];
        obj.remove(k);
        let ok = check(&serde_json::to_vec(&d).unwrap()).is_some_and(|(ok, _)| ok);
        prop_assert!(!ok || k == "reverified_offline_matches_restart", "cells[{}] without {} verified", c, k);
    }
}
