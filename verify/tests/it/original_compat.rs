//! The original Python implementation's published receipts re-verify bit for bit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use verify::load::{load_document, Document};
use verify::original::verify_original_results;
use verify::pycompat;

const FIXTURE: &[u8] = include_bytes!("../fixtures/billing_credit.original.json");

fn fixture() -> Value {
    match load_document(FIXTURE).unwrap() {
        Document::OriginalResults(v) => v,
        other => panic!("detected as {other:?}"),
    }
}

#[test]
fn all_six_receipts_verify_with_the_stated_happened_and_refused() {
    let file = fixture();
    let report = verify_original_results(&file);
    assert!(report.ok, "{:#?}", report.findings);
    assert_eq!(report.cells, 18);
    assert_eq!(report.receipts.len(), 6);
    let cells = file["cells"].as_array().unwrap();
    for r in &report.receipts {
        let stated = &cells[r.cell]["restart"]["verify"];
        assert!(r.report.valid, "{:?}", r.report.problems);
        assert_eq!(r.report.format, "python-original");
        assert_eq!(r.report.signed, None);
        assert_eq!(r.report.key, "none");
        // The original had no seal: its verifier read a receipt as its entries say, and what
        // this verifier proves of an unsealed receipt is never "did not happen".
        assert_eq!(
            serde_json::to_value(r.report.entries_say).unwrap(),
            stated["happened"]
        );
        if stated["happened"] == Value::Bool(false) {
            assert_eq!(r.report.happened, verify::receipt::Happened::Unknown);
        } else {
            assert_eq!(r.report.happened, r.report.entries_say);
        }
        let refused = r
            .report
            .refused
            .as_ref()
            .map(|x| Value::String(x.reason.clone()));
        assert_eq!(refused.unwrap_or(Value::Null), stated["refused"]);
        assert_eq!(
            Some(&r.report.evidence.clone().unwrap_or(Value::Null)),
            stated.get("evidence")
        );
        assert_eq!(
            Some(
                &r.report
                    .rechecked_at_recovery
                    .clone()
                    .unwrap_or(Value::Null)
            ),
            stated.get("rechecked_at_recovery")
        );
    }
    let refused: Vec<_> = report
        .receipts
        .iter()
        .filter(|r| r.report.refused.is_some())
        .collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].report.effect_id, "5af981a181de");
}

#[test]
fn the_two_worked_hashes_of_the_reference_notes() {
    let file = fixture();
    let mut found = 0;
    for cell in file["cells"].as_array().unwrap() {
        for e in cell["receipt"]["entries"].as_array().into_iter().flatten() {
            let stored = e["hash"].as_str().unwrap();
            if stored.starts_with("68bb2429") || stored.starts_with("9e7dc711") {
                assert_eq!(
                    pycompat::entry_hash(e.as_object().unwrap()).unwrap(),
                    stored
                );
                found += 1;
            }
        }
    }
    assert_eq!(found, 2);
}

#[test]
fn every_byte_of_a_receipt_amount_matters() {
    let text = std::str::from_utf8(FIXTURE).unwrap();
    let at = text.find("\"receipt\"").unwrap();
    let amount = at + text[at..].find("\"amount\": 1000").unwrap() + "\"amount\": ".len();
    let mut edited = FIXTURE.to_vec();
    edited[amount] = b'2';
    let Document::OriginalResults(v) = load_document(&edited).unwrap() else {
        panic!("not detected")
    };
    let report = verify_original_results(&v);
    assert!(!report.ok);
    let first = &report.findings[0];
    assert_eq!(first.code, "hash_mismatch");
    assert_eq!(first.entry, Some(0));
    assert!(
        first.message.contains("effect 6fdbedc91d21"),
        "{}",
        first.message
    );
}
