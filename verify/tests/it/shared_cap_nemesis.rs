//! shared_cap nemesis files (`interlock-shared-cap-nemesis/1`) under the forger's threat models.
//! Each forgery is re-signed with the forger's own key, so it is the plan, draw, kill and
//! judgement rules that must catch it (a self-attested check), and it must fail under the
//! genuine key pinned (the forger lacks it).
//!
//! The fixture `fixtures/shared_cap_nemesis.json` is a genuine campaign.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use verify::load::{load_document, Document};
use verify::receipt::KeyCheck;
use verify::shared_cap::nemesis::check::{check, sign};
use verify::shared_cap::nemesis::record::CapNemesisFile;

fn genuine() -> Value {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/shared_cap_nemesis.json"
    ))
    .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn load(v: &Value) -> Result<CapNemesisFile, String> {
    match load_document(&serde_json::to_vec(v).unwrap()) {
        Ok(Document::SharedCapNemesis(f)) => Ok(*f),
        Ok(_) => Err("another kind of file".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn genuine_key() -> ed25519_dalek::VerifyingKey {
    let f = load(&genuine()).unwrap();
    let bytes: [u8; 32] = hex::decode(&f.environment.public_key)
        .unwrap()
        .try_into()
        .unwrap();
    ed25519_dalek::VerifyingKey::from_bytes(&bytes).unwrap()
}

/// The forger's version: re-signed with the forger's key, which the file then names.
fn forged(v: &Value) -> CapNemesisFile {
    let key = SigningKey::from_bytes(&[9; 32]);
    let mut f = load(v).unwrap();
    f.environment.public_key = hex::encode(key.verifying_key().as_bytes());
    sign(&mut f, &key).unwrap();
    f
}

/// The findings of the forged file self-attested, beyond those of the genuine file re-signed
/// (its receipts stay signed by the genuine gate key, which a forger cannot re-sign); asserts it
/// also fails under the genuine key.
fn findings(v: &Value) -> Vec<String> {
    let f = forged(v);
    assert!(!check(&f, &KeyCheck::Pinned(genuine_key())).ok);
    let baseline = check(&forged(&genuine()), &KeyCheck::SelfAttested).findings;
    check(&f, &KeyCheck::SelfAttested)
        .findings
        .into_iter()
        .filter(|x| !baseline.contains(x))
        .collect()
}

fn has(findings: &[String], text: &str) -> bool {
    findings.iter().any(|f| f.contains(text))
}

#[test]
fn the_genuine_campaign_verifies_self_attested_and_under_its_key() {
    let f = load(&genuine()).unwrap();
    assert_eq!(
        check(&f, &KeyCheck::SelfAttested).findings,
        Vec::<String>::new()
    );
    assert!(check(&f, &KeyCheck::Pinned(genuine_key())).ok);
    assert_eq!(f.trials.len(), 12);
    // Re-signed under another key, the file keeps receipts of the genuine gate key: every
    // interlock ticket's receipt then does not verify and its proof fails, and nothing else does.
    let resigned = check(&forged(&genuine()), &KeyCheck::SelfAttested).findings;
    let interlock_tickets = f
        .trials
        .iter()
        .filter(|t| t.cell.column == "interlock")
        .count()
        * 2;
    assert_eq!(resigned.len(), 2 * interlock_tickets, "{resigned:?}");
    let proof = |x: &&String| x.contains("proof is recorded as true");
    let receipt = |x: &&String| x.contains("the receipt does not verify under the run's key");
    assert_eq!(resigned.iter().filter(proof).count(), interlock_tickets);
    assert_eq!(resigned.iter().filter(receipt).count(), interlock_tickets);
}

#[test]
fn a_dropped_or_duplicated_trial_is_a_finding() {
    let mut v = genuine();
    v["trials"].as_array_mut().unwrap().pop();
    let f = findings(&v);
    assert!(has(&f, "11 recorded, the plan"), "{f:?}");
    let mut v = genuine();
    let first = v["trials"][0].clone();
    v["trials"][1] = first;
    let f = findings(&v);
    assert!(has(&f, "the plan's trial here is"), "{f:?}");
}

#[test]
fn a_draw_the_seed_does_not_give_is_a_finding() {
    let mut v = genuine();
    let t = &mut v["trials"][0];
    let other = if t["draw"]["overlap"] == "sequential" {
        "concurrent"
    } else {
        "sequential"
    };
    t["draw"]["overlap"] = json!(other);
    t["cell"]["overlap"] = json!(other);
    let f = findings(&v);
    assert!(has(&f, "is not what the seed draws"), "{f:?}");
}

#[test]
fn another_seed_or_a_plan_of_billions_is_a_finding_without_building_it() {
    let mut v = genuine();
    v["plan"]["seed"] = json!(8);
    let f = findings(&v);
    assert!(has(&f, "the plan's trial here is"), "{f:?}");
    let mut v = genuine();
    v["plan"]["trials"] = json!(u32::MAX);
    let f = findings(&v);
    assert!(has(&f, "12 recorded, the plan"), "{f:?}");
}

#[test]
fn a_kill_where_none_was_drawn_is_a_finding() {
    let mut v = genuine();
    let i = v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["draw"]["kill_b"].is_null() && t["cell"]["column"] == "hand_check")
        .unwrap();
    v["trials"][i]["cell"]["tickets"][1]["killed_at"] = json!("lookup");
    let f = findings(&v);
    assert!(has(&f, "tickets[1] records a kill"), "{f:?}");
    let mut v = genuine();
    let i = v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["draw"]["kill_restart"].is_null() && t["cell"]["column"] == "interlock")
        .unwrap();
    v["trials"][i]["restart_killed_at"] = json!("committed");
    let f = findings(&v);
    assert!(has(&f, "a restart killed at"), "{f:?}");
}

#[test]
fn a_changed_outcome_or_summary_is_a_finding() {
    let mut v = genuine();
    let i = v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["cell"]["invariant_held"] == false)
        .unwrap();
    v["trials"][i]["cell"]["invariant_held"] = json!(true);
    let f = findings(&v);
    assert!(has(&f, "invariant_held is recorded as true"), "{f:?}");
    let mut v = genuine();
    v["summary"][0]["held"] = json!(v["summary"][0]["judged"].clone());
    let f = findings(&v);
    assert!(has(&f, "summary: differs"), "{f:?}");
}

#[test]
fn a_label_outside_the_vocabulary_is_refused_at_load() {
    for (path, value) in [
        (vec!["nemesis"], json!("kill_everything")),
        (vec!["draw", "kill_a"], json!("\u{1b}[2J")),
        (vec!["cell", "crash_point"], json!("sideways")),
        (vec!["restart_killed_at"], json!("decision_saved")),
    ] {
        let mut v = genuine();
        let mut at = &mut v["trials"][0];
        for p in &path {
            at = &mut at[*p];
        }
        *at = value;
        let err = load(&v).unwrap_err();
        assert!(err.contains("trials[0]."), "{path:?}: {err}");
    }
}

#[test]
fn an_unsigned_or_tampered_file_fails_under_the_genuine_key() {
    let mut v = genuine();
    v["trials"][0]["cell"]["wall_ms"] = json!(1);
    let f = load(&v).unwrap();
    let r = check(&f, &KeyCheck::Pinned(genuine_key()));
    assert!(
        has(&r.findings, "signature: does not verify"),
        "{:?}",
        r.findings
    );
    let mut v = genuine();
    v.as_object_mut().unwrap().remove("signature");
    let r = check(&load(&v).unwrap(), &KeyCheck::SelfAttested);
    assert!(has(&r.findings, "signature: missing"), "{:?}", r.findings);
}

#[test]
fn two_hosts_with_a_file_journal_is_a_finding() {
    let mut v = genuine();
    v["environment"]["hosts"] = json!(2);
    let f = findings(&v);
    assert!(
        has(&f, "environment.hosts: two hosts with a \"file\" journal"),
        "{f:?}"
    );
}

#[test]
fn a_plan_naming_unknown_or_repeated_nemeses_or_columns_is_refused_at_load() {
    for (field, names) in [
        ("nemeses", json!(["kill_both", "kill_both"])),
        ("nemeses", json!(vec!["x"; 1500])),
        ("columns", json!(["interlock", "two_phase"])),
    ] {
        let mut v = genuine();
        v["plan"][field] = names;
        v["trials"] = json!([]);
        v["summary"] = json!([]);
        let err = load(&v).unwrap_err();
        assert!(err.contains(&format!("plan.{field}")), "{err}");
    }
}

#[test]
fn under_a_pinned_key_a_file_whose_signature_fails_is_not_read_further() {
    let mut v = genuine();
    for t in v["trials"].as_array_mut().unwrap() {
        t["cell"]["invariant_held"] = json!(true);
    }
    let r = check(&load(&v).unwrap(), &KeyCheck::Pinned(genuine_key()));
    assert!(!r.ok && !r.signed);
    assert_eq!((r.judged, r.summary.len()), (0, 0), "{:?}", r.summary);
    assert!(
        r.findings.iter().all(|f| f.starts_with("signature")),
        "{:?}",
        r.findings
    );
}

/// The index of the first trial of `column` whose ticket `j` has status `status`.
fn trial_with(v: &Value, column: &str, j: usize, status: &str) -> usize {
    v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["cell"]["column"] == column && t["cell"]["tickets"][j]["status"] == status)
        .unwrap()
}

#[test]
fn a_trials_tickets_are_bound_to_their_receipts_and_exits() {
    // An interlock ticket's status is the one its receipt gives.
    let mut v = genuine();
    let i = trial_with(&v, "interlock", 1, "REFUSED:over_budget");
    v["trials"][i]["cell"]["tickets"][1]["status"] = json!("REFUSED:over_cap");
    let f = findings(&v);
    assert!(
        has(
            &f,
            "tickets[1]: status REFUSED:over_cap is not what the receipt"
        ),
        "{f:?}"
    );
    // It may not omit its receipt.
    let mut v = genuine();
    let t = &mut v["trials"][i]["cell"]["tickets"][1];
    for field in ["receipt", "effect_id"] {
        t[field] = Value::Null;
    }
    t["journal_kinds"] = json!([]);
    t["proof"] = json!(false);
    let f = findings(&v);
    assert!(has(&f, "carries no receipt"), "{f:?}");
    // Another column's ticket carries none.
    let mut v = genuine();
    let receipt = v["trials"][i]["cell"]["tickets"][1]["receipt"].clone();
    let k = v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["cell"]["column"] != "interlock")
        .unwrap();
    v["trials"][k]["cell"]["tickets"][0]["receipt"] = receipt;
    let f = findings(&v);
    assert!(has(&f, "ticket carries a receipt"), "{f:?}");
    // A worker recorded as killed was SIGKILLed there.
    let mut v = genuine();
    let k = v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| !t["cell"]["tickets"][0]["killed_at"].is_null())
        .unwrap();
    v["trials"][k]["cell"]["tickets"][0]["first_exit"] = json!("finished by itself");
    let f = findings(&v);
    assert!(has(&f, "does not fit its first exit"), "{f:?}");
}

#[test]
fn a_plan_with_hand_pg_lock_in_a_run_without_its_database_is_a_finding() {
    let mut v = genuine();
    assert_eq!(v["environment"]["journal"], "file");
    v["plan"]["columns"]
        .as_array_mut()
        .unwrap()
        .push(json!("hand_pg_lock"));
    let f = findings(&v);
    assert!(
        has(
            &f,
            "plan.columns: hand_pg_lock takes its lock in the run's PostgreSQL"
        ),
        "{f:?}"
    );
}

#[test]
fn a_hold_recorded_where_none_was_drawn_or_missing_where_one_was_is_a_finding() {
    let mut v = genuine();
    v["trials"][0]["held"] = json!({"taken": true, "landed": true});
    let f = findings(&v);
    assert!(
        has(&f, "records a held refund; its draw holds none"),
        "{f:?}"
    );

    let mut v = genuine();
    v["trials"][0]["draw"]["hold_a_ms"] = json!(2_000);
    let f = findings(&v);
    assert!(has(&f, "no record of the hold"), "{f:?}");
}

#[test]
fn a_kill_while_held_without_a_taken_post_or_a_landed_hold_without_as_refund_is_a_finding() {
    let mut v = genuine();
    let i = v["trials"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["cell"]["harness_error"].is_null())
        .unwrap();
    let a_ticket = v["trials"][i]["cell"]["tickets"][0]["ticket_id"].clone();
    v["trials"][i]["draw"]["hold_a_ms"] = json!(2_000);
    v["trials"][i]["draw"]["kill_a"] = json!("request_held");
    v["trials"][i]["cell"]["crash_point"] = json!("request_held");
    v["trials"][i]["cell"]["tickets"][0]["killed_at"] = json!("request_held");
    v["trials"][i]["held"] = json!({"taken": false, "landed": true});
    // Stripe holds no refund of a's ticket.
    let refunds = v["trials"][i]["cell"]["truth"]["refunds"]
        .as_array_mut()
        .unwrap();
    refunds.retain(|r| r["ticket"] != a_ticket);
    let f = findings(&v);
    assert!(has(&f, "the service never took it"), "{f:?}");
    assert!(
        has(
            &f,
            "recorded as landed; Stripe holds no refund of worker a's ticket"
        ),
        "{f:?}"
    );
}

#[test]
fn a_kill_at_the_held_step_in_a_trial_that_holds_nothing_is_refused_at_load() {
    let mut v = genuine();
    v["trials"][0]["cell"]["tickets"][0]["killed_at"] = json!("request_held");
    let e = load(&v).unwrap_err();
    assert!(e.contains("killed_at"), "{e}");
}
