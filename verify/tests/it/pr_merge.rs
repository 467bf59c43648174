//! `verify` on a pr_merge file: the scenario is found in the registry by the name its file
//! states and checked by the contract's pipeline, end to end through the command line.

use ed25519_dalek::SigningKey;
use serde_json::Value;
use std::process::Command;
use synthetic::pr_merge::signed_file as file;
use verify::contract::{self, ScenarioFile};
use verify::scenarios::pr_merge::PrMerge;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[21; 32])
}

fn run(file: &ScenarioFile<PrMerge>, args: &[&str]) -> (Option<i32>, String) {
    let text = serde_json::to_vec(file).unwrap_or_else(|e| panic!("{e}"));
    run_text(&text, args)
}

#[test]
fn a_genuine_pr_merge_file_verifies_through_the_registry_under_its_pinned_key() {
    let key_hex = hex::encode(key().verifying_key().as_bytes());
    let (code, out) = run(&file(&key()), &["--key", &key_hex]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("pr_merge run, 32 cells (32 judged), 8 receipts"),
        "{out}"
    );
    assert!(out.contains("(pinned)"), "{out}");
}

#[test]
fn a_pr_merge_file_signed_by_another_key_fails_under_the_pin() {
    let other = hex::encode(SigningKey::from_bytes(&[22; 32]).verifying_key().as_bytes());
    let (code, out) = run(&file(&key()), &["--key", &other]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("signature_not_pinned_key"), "{out}");
    assert!(out.contains("not read further"), "{out}");
}

#[test]
fn a_judgement_the_rules_do_not_derive_fails_even_when_re_signed() {
    let mut f = file(&key());
    if let Some(j) = f.cells[0].judgement.as_mut() {
        j.invariant_held = !j.invariant_held;
    }
    contract::sign(&mut f, &key()).unwrap_or_else(|e| panic!("{e}"));
    let (code, out) = run(&f, &["--json"]);
    assert_eq!(code, Some(1), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(out.contains("cells_judgement_mismatch"), "{report}");
}

#[test]
fn a_scenario_the_registry_does_not_list_cannot_be_checked() {
    let mut f = file(&key());
    f.scenario = "nope".into();
    let (code, out) = run(&f, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("\"nope\" is not one this verifier knows"),
        "{out}"
    );
    assert!(out.contains("known: pr_merge"), "{out}");
}

/// `verify` on a text written as it is (not a serialized file).
fn run_text(text: &[u8], args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("pr_merge.json");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn a_duplicate_member_in_a_map_or_the_environment_is_refused_under_the_pin() {
    // The forged entry comes first: a map keeps the last, so the signed hash would not see it.
    let text = serde_json::to_string(&file(&key())).unwrap_or_else(|e| panic!("{e}"));
    let key_hex = hex::encode(key().verifying_key().as_bytes());
    for (genuine, forged) in [
        (
            "\"summary\":{\"hand_check\":",
            "\"summary\":{\"interlock\":{\"judged\":8,\"held\":0,\"over\":8,\"under\":0,\"unreviewed\":8,\"wrong_answers\":8},\"hand_check\":",
        ),
        (
            "\"environment\":{",
            "\"environment\":{\"backend\":\"real GitHub\",",
        ),
    ] {
        assert!(text.contains(genuine), "{genuine}");
        let forged_text = text.replacen(genuine, forged, 1);
        let (code, out) = run_text(forged_text.as_bytes(), &["--key", &key_hex]);
        assert_eq!(code, Some(2), "{out}");
        assert!(out.contains("duplicate key"), "{out}");
    }
}

#[test]
fn a_plan_of_billions_of_cells_is_refused_before_it_is_built() {
    let mut f = file(&key());
    f.params.repeats = u32::MAX;
    contract::sign(&mut f, &SigningKey::from_bytes(&[23; 32])).unwrap_or_else(|e| panic!("{e}"));
    let (code, out) = run(&f, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("plan more than 32 cells"), "{out}");
}

#[test]
fn a_long_effect_id_or_a_dense_environment_is_refused_before_anything_is_built() {
    let text = serde_json::to_string(&file(&key())).unwrap_or_else(|e| panic!("{e}"));
    let long_id = format!("\"effect_id\":\"{}\"", "a".repeat(900_000));
    let forged = text.replacen("\"effect_id\":\"", &format!("{long_id},\"x\":\""), 1);
    let (code, out) = run_text(forged.as_bytes(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("longer than the limit"), "{out}");
    assert!(out.len() < 4_000, "{} bytes of output", out.len());

    let dense = format!("[{}]", vec!["[]"; 300_000].join(","));
    let forged = text.replacen(
        "\"environment\":{",
        &format!("\"environment\":{{\"x\":{dense},"),
        1,
    );
    let (code, out) = run_text(forged.as_bytes(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("values"), "{out}");
}
