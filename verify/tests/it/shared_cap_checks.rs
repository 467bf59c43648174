//! shared_cap files (`interlock-shared-cap/1`) under the forger's threat models: labels outside
//! the plan are refused before any report repeats them, sums cannot overflow, only worker a may
//! be killed and only at its row's point, a report stays within its size budget after escaping,
//! and a large value cannot sit in a signed file unchecked.
//!
//! The fixture `fixtures/shared_cap.json` is a genuine run (a copy of the site's fixture).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use std::process::Command;
use verify::load::{load_document, Document};
use verify::receipt::KeyCheck;

fn genuine() -> Value {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/shared_cap.json"
    ))
    .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn load(v: &Value) -> Result<verify::shared_cap::record::CapResults, String> {
    match load_document(&serde_json::to_vec(v).unwrap()) {
        Ok(Document::SharedCap(f)) => Ok(*f),
        Ok(_) => Err("another kind of file".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn findings(v: &Value) -> Vec<String> {
    verify::shared_cap::check::check(&load(v).unwrap(), &KeyCheck::SelfAttested).findings
}

#[test]
fn the_genuine_file_verifies() {
    assert_eq!(findings(&genuine()), Vec::<String>::new());
}

#[test]
fn a_label_outside_the_plan_is_refused_at_load() {
    for (field, value) in [
        ("crash_point", "\u{85}".repeat(100)),
        ("overlap", "sideways".into()),
        ("column", "hand".into()),
    ] {
        let mut v = genuine();
        v["cells"][0][field] = json!(value);
        let err = load(&v).unwrap_err();
        assert!(err.contains(&format!("cells[0].{field}")), "{err}");
    }
    // A step the column never passes.
    let mut v = genuine();
    let i = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["column"] == "no_check")
        .unwrap();
    v["cells"][i]["crash_point"] = json!("lookup");
    assert!(load(&v).unwrap_err().contains("crash_point"));
}

#[test]
fn huge_refund_amounts_do_not_overflow() {
    let mut v = genuine();
    let many: Vec<Value> = (0..1100)
        .map(|i| json!({"id": format!("re_{i}"), "amount": 9_007_199_254_740_991_i64, "status": "succeeded", "ticket": null, "effect_id": null, "created": 1}))
        .collect();
    v["cells"][0]["truth"]["refunds"] = json!(many);
    let f = findings(&v);
    assert!(f.iter().any(|x| x.contains("does not add up")), "{f:?}");
}

#[test]
fn a_kill_of_worker_b_or_at_another_point_is_a_finding() {
    let mut v = genuine();
    v["cells"][0]["tickets"][1]["killed_at"] = json!(v["cells"][0]["crash_point"].clone());
    let f = findings(&v);
    assert!(
        f.iter().any(|x| x.contains("only worker a is killed")),
        "{f:?}"
    );
}

#[test]
fn the_json_report_stays_within_its_budget_after_escaping() {
    // Long strings of a character escaped to six bytes, in a field the report quotes: the order
    // id, named in every budget finding of an interlock cell.
    let mut v = genuine();
    let t = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["column"] == "interlock")
        .unwrap()
        .clone();
    let mut cells = Vec::new();
    // Quoted whole, two findings per cell would be 10 x 40 KB of text, 10 x 120 KB escaped.
    for i in 0..5 {
        let mut c = t.clone();
        c["repeat"] = json!(i);
        c["order"]["order_id"] = json!("\u{85}".repeat(20_000));
        cells.push(c);
    }
    v["cells"] = json!(cells);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("amp.json");
    let text = serde_json::to_vec(&v).unwrap();
    std::fs::write(&path, &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .arg("--json")
        .arg(&path)
        .output()
        .unwrap();
    let budget = verify::cli::JSON_BUDGET_MIN.max(text.len());
    assert_eq!(out.status.code(), Some(1), "the file is read, and fails");
    assert!(
        out.stdout.len() <= budget,
        "{} > {budget}",
        out.stdout.len()
    );
    // Findings quote the order id cut (80 characters), so the report needs no cutting at all.
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["truncated"], Value::Null);
    assert!(out.stdout.len() < 20_000, "{}", out.stdout.len());
}

#[test]
fn a_file_of_bare_small_values_is_refused_before_it_is_built() {
    // 495,000 zeros in one approval: two bytes a value, a tree many times the file's size.
    let mut v = genuine();
    v["cells"] = json!([v["cells"][0].clone()]);
    v["cells"][0]["tickets"][0]["approval"]["revoked"] = json!(vec![0; 495_000]);
    let err = load(&v).unwrap_err();
    assert!(err.contains("more than one per 8 bytes"), "{err}");
}

#[test]
fn a_revocation_is_who_and_when_and_nothing_else() {
    let mut v = genuine();
    let deep = (0..100).fold(json!(0), |inner, _| json!({ "aaa": inner }));
    v["cells"][0]["tickets"][0]["approval"]["revoked"] = json!([deep]);
    assert!(load(&v).unwrap_err().contains("revoked"));
    let mut v = genuine();
    v["cells"][0]["tickets"][0]["approval"]["revoked"] = json!({"by": "support-lead"});
    assert!(load(&v).is_ok());
}

#[test]
fn under_a_pinned_key_a_matrix_whose_signature_fails_is_not_read_further() {
    let v = genuine();
    let key = ed25519_dalek::VerifyingKey::from_bytes(
        &hex::decode(v["environment"]["public_key"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap(),
    )
    .unwrap();
    let mut v = v;
    for c in v["cells"].as_array_mut().unwrap() {
        c["invariant_held"] = json!(true);
    }
    let r = verify::shared_cap::check::check(&load(&v).unwrap(), &KeyCheck::Pinned(key));
    assert!(!r.ok && !r.signed);
    assert_eq!((r.judged, r.summary.len()), (0, 0));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forged.json");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .arg("--key")
        .arg(v["environment"]["public_key"].as_str().unwrap())
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not read further") && !stdout.contains("held in"),
        "{stdout}"
    );
}

/// The index of the first cell of `column` whose ticket `j` has status `status`.
fn cell_with(v: &Value, column: &str, j: usize, status: &str) -> usize {
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["column"] == column && c["tickets"][j]["status"] == status)
        .unwrap()
}

fn has(f: &[String], text: &str) -> bool {
    f.iter().any(|x| x.contains(text))
}

#[test]
fn an_interlock_tickets_status_is_the_one_its_receipt_gives() {
    // Both statuses say the refund went out: only the receipt tells them apart.
    let mut v = genuine();
    let i = cell_with(&v, "interlock", 0, "COMMITTED_BY_RETRY");
    v["cells"][i]["tickets"][0]["status"] = json!("COMMITTED");
    let f = findings(&v);
    assert!(
        has(
            &f,
            "tickets[0]: status COMMITTED is not what the receipt's final entry"
        ),
        "{f:?}"
    );
}

#[test]
fn an_interlock_tickets_journal_kinds_and_effect_are_its_receipts() {
    let mut v = genuine();
    let i = cell_with(&v, "interlock", 1, "REFUSED:over_budget");
    v["cells"][i]["tickets"][1]["journal_kinds"] = json!(["PROPOSED", "REFUSED"]);
    let f = findings(&v);
    assert!(
        has(&f, "tickets[1]: journal_kinds are not the receipt's"),
        "{f:?}"
    );
    // Another ticket's refusal, carried with its effect id: a receipt of another effect.
    let mut v = genuine();
    let other = v["cells"][i]["tickets"][1].clone();
    let k = (0..v["cells"].as_array().unwrap().len())
        .find(|&k| {
            k != i
                && v["cells"][k]["column"] == "interlock"
                && v["cells"][k]["tickets"][1]["status"] == "REFUSED:over_budget"
        })
        .unwrap();
    for field in ["receipt", "effect_id"] {
        v["cells"][k]["tickets"][1][field] = other[field].clone();
    }
    let f = findings(&v);
    assert!(has(&f, "tickets[1]: the receipt is of effect"), "{f:?}");
}

#[test]
fn an_interlock_ticket_of_a_judged_cell_may_not_omit_its_receipt() {
    let mut v = genuine();
    let i = cell_with(&v, "interlock", 1, "REFUSED:over_budget");
    let t = &mut v["cells"][i]["tickets"][1];
    t["receipt"] = Value::Null;
    t["effect_id"] = Value::Null;
    t["journal_kinds"] = json!([]);
    t["proof"] = json!(false);
    let f = findings(&v);
    assert!(
        has(
            &f,
            "tickets[1]: an interlock ticket of a judged cell carries no receipt"
        ),
        "{f:?}"
    );
}

#[test]
fn a_receipt_outside_the_interlock_column_is_refused() {
    let mut v = genuine();
    let i = cell_with(&v, "interlock", 1, "REFUSED:over_budget");
    let receipt = v["cells"][i]["tickets"][1]["receipt"].clone();
    let k = cell_with(&v, "no_check", 1, "REFUNDED");
    v["cells"][k]["tickets"][1]["receipt"] = receipt;
    let f = findings(&v);
    assert!(has(&f, "a no_check ticket carries a receipt"), "{f:?}");
}

#[test]
fn a_harness_error_says_why() {
    let mut v = genuine();
    v["cells"][0]["harness_error"] = json!("  ");
    let f = findings(&v);
    assert!(has(&f, "a harness error without the reason"), "{f:?}");
}

#[test]
fn killed_at_is_bound_to_the_first_exit() {
    // Recorded as killed at its row's crash point, but the worker finished by itself.
    let mut v = genuine();
    v["cells"][0]["tickets"][1]["killed_at"] = v["cells"][0]["crash_point"].clone();
    let f = findings(&v);
    assert!(has(&f, "does not fit its first exit"), "{f:?}");
    // Killed, but the exit recorded is another step's.
    let mut v = genuine();
    let i = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| !c["tickets"][0]["killed_at"].is_null())
        .unwrap();
    v["cells"][i]["tickets"][0]["first_exit"] = json!("SIGKILLed by the runner at elsewhere");
    let f = findings(&v);
    assert!(has(&f, "does not fit its first exit"), "{f:?}");
}

#[test]
fn a_hand_pg_lock_cell_in_a_run_without_its_database_is_a_finding() {
    let mut v = genuine();
    assert_eq!(v["environment"]["journal"], "file");
    let i = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["column"] == "hand_check")
        .unwrap();
    // Same steps, same proof rule: only the database rule can catch it.
    v["cells"][i]["column"] = serde_json::json!("hand_pg_lock");
    let f = findings(&v);
    assert!(
        f.iter()
            .any(|x| x.contains("hand_pg_lock takes its lock in the run's PostgreSQL database")),
        "{f:?}"
    );
    // On a database journal the same cell is not refused for it.
    v["environment"]["journal"] = serde_json::json!("postgresql");
    assert!(!findings(&v).iter().any(|x| x.contains("takes its lock")));
}
