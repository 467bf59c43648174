//! Issue 13's verify checks, each driven through the `verify` binary on a file built in code: a
//! receipt cut short, a receipt without its seal, an anchor that is not the receipt's DISPATCHED
//! hash, and a whole file re-signed with another key (caught only under `--signers`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use serde_json::{json, Map, Value};
use std::process::Command;
use verify::entry::{seal, ReceiptBundle};
use verify::results::ResultsFile;

fn genuine() -> (ResultsFile, SigningKey) {
    let spec = synthetic::Spec::default();
    (synthetic::generate(&spec), synthetic::signing_key(&spec))
}

/// The first interlock cell whose receipt committed (its credit carries the anchor).
fn committed_cell(f: &ResultsFile) -> usize {
    f.cells
        .iter()
        .position(|c| {
            c.column == "interlock"
                && c.receipt.as_ref().is_some_and(|r| {
                    r.entries.last().and_then(|e| e.get("kind")) == Some(&json!("COMMITTED"))
                })
        })
        .unwrap()
}

/// Run `verify ARGS FILE` on `bytes`: (exit code, stdout + stderr).
fn verify(args: &[&str], bytes: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("file.json");
    std::fs::write(&path, bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .arg(&path)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

fn bytes(f: &ResultsFile) -> Vec<u8> {
    serde_json::to_vec_pretty(f).unwrap()
}

/// Re-sign the manifest with the run's own key: only the checks under test can catch the edit.
fn resign_manifest(f: &mut ResultsFile, key: &SigningKey) {
    verify::manifest::sign(f, key).unwrap();
}

#[test]
fn the_genuine_file_and_its_receipts_verify_sealed() {
    let (f, _) = genuine();
    let (code, out) = verify(&[], &bytes(&f));
    assert_eq!(code, Some(0), "{out}");
    let receipt = f.cells[committed_cell(&f)].receipt.clone().unwrap();
    let (code, out) = verify(&[], &serde_json::to_vec(&receipt).unwrap());
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("unsealed"), "{out}");
}

#[test]
fn a_truncated_receipt_fails_naming_its_head() {
    let (f, _) = genuine();
    let mut receipt = f.cells[committed_cell(&f)].receipt.clone().unwrap();
    receipt.entries.pop();
    let (code, out) = verify(&[], &serde_json::to_vec(&receipt).unwrap());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("[head_mismatch]") || out.contains("head_mismatch"),
        "{out}"
    );
    assert!(
        out.contains("count = 4, the bundle holds 3 entries"),
        "{out}"
    );
}

#[test]
fn a_truncated_receipt_in_a_results_file_fails_even_with_the_manifest_re_signed() {
    let (mut f, key) = genuine();
    let i = committed_cell(&f);
    let cell = &mut f.cells[i];
    let receipt = cell.receipt.as_mut().unwrap();
    receipt.entries.pop();
    // The forger also restates what the cell says about its receipt.
    cell.journal_kinds.pop();
    resign_manifest(&mut f, &key);
    let (code, out) = verify(&[], &bytes(&f));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("cells[{i}].receipt")), "{out}");
    assert!(out.contains("head_mismatch"), "{out}");
}

#[test]
fn an_unsealed_receipt_fails_in_a_results_file_and_is_reported_alone() {
    let (mut f, key) = genuine();
    let i = committed_cell(&f);
    f.cells[i].receipt.as_mut().unwrap().head = None;
    let lone = f.cells[i].receipt.clone().unwrap();
    resign_manifest(&mut f, &key);
    let (code, out) = verify(&[], &bytes(&f));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("cells[{i}].receipt.head")), "{out}");
    assert!(out.contains("receipt_unsealed"), "{out}");
    // Alone, the same receipt verifies as what it holds, and says it cannot prove completeness.
    let (code, out) = verify(&[], &serde_json::to_vec(&lone).unwrap());
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("unsealed"), "{out}");
    let (_, json_out) = verify(&["--json"], &serde_json::to_vec(&lone).unwrap());
    let report: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(report["files"][0]["sealed"], json!(false));
}

#[test]
fn a_head_sealed_by_another_key_fails() {
    let (f, _) = genuine();
    let mut receipt = f.cells[committed_cell(&f)].receipt.clone().unwrap();
    let ts = receipt.head.as_ref().unwrap().ts_ms;
    verify::binding::seal_bundle(&mut receipt, &SigningKey::from_bytes(&[9; 32]), ts).unwrap();
    let (code, out) = verify(&[], &serde_json::to_vec(&receipt).unwrap());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("head_signer"), "{out}");
}

#[test]
fn an_anchor_that_does_not_match_fails_naming_the_credit() {
    for anchor in [Some("ab".repeat(32)), None] {
        let (mut f, key) = genuine();
        let i = committed_cell(&f);
        f.cells[i].ground_truth.case_credits[0].dispatch = anchor.clone();
        resign_manifest(&mut f, &key);
        let (code, out) = verify(&[], &bytes(&f));
        assert_eq!(code, Some(1), "anchor {anchor:?}: {out}");
        assert!(
            out.contains(&format!("cells[{i}].ground_truth.case_credits[0].dispatch")),
            "{out}"
        );
        assert!(out.contains("anchor_mismatch"), "{out}");
    }
}

/// Re-sign everything a key signs (entries, heads, manifest) with `key`, and publish it.
fn resign_everything(f: &mut ResultsFile, key: &SigningKey) {
    for cell in &mut f.cells {
        let Some(receipt) = cell.receipt.as_mut() else {
            continue;
        };
        let mut prev = Value::Null;
        for e in &mut receipt.entries {
            let m: &mut Map<String, Value> = e.as_object_mut().unwrap();
            m.insert("prev".into(), prev.clone());
            seal(m, key).unwrap();
            prev = m["hash"].clone();
        }
        let ts = receipt.head.as_ref().unwrap().ts_ms;
        verify::binding::seal_bundle(receipt, key, ts).unwrap();
        let anchor = dispatched_hash(receipt);
        for c in &mut cell.ground_truth.case_credits {
            c.dispatch.clone_from(&anchor);
        }
    }
    f.environment.signer = hex::encode(key.verifying_key().as_bytes());
    verify::manifest::sign(f, key).unwrap();
}

fn dispatched_hash(r: &ReceiptBundle) -> Option<String> {
    r.entries
        .iter()
        .find(|e| e["kind"] == "DISPATCHED")
        .and_then(|e| e["hash"].as_str().map(str::to_owned))
}

#[test]
fn a_file_re_signed_with_another_key_passes_alone_and_fails_under_the_signers_file() {
    let (mut f, key) = genuine();
    let forger = SigningKey::from_bytes(&[42; 32]);
    resign_everything(&mut f, &forger);
    let forged = bytes(&f);
    // Consistent, so self-attested it passes: that is why a pin is needed.
    let (code, out) = verify(&[], &forged);
    assert_eq!(code, Some(0), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let genuine_line = format!(
        "{} the run's publisher\n",
        hex::encode(key.verifying_key().as_bytes())
    );
    let other = SigningKey::from_bytes(&[3; 32]);
    let other_line = format!(
        "{} a retired key\n",
        hex::encode(other.verifying_key().as_bytes())
    );
    for lines in [genuine_line.clone(), genuine_line + &other_line] {
        let signers = dir.path().join("SIGNERS");
        std::fs::write(&signers, &lines).unwrap();
        let signers = signers.to_str().unwrap();
        let (code, out) = verify(&["--signers", signers], &forged);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("environment.signer"), "{out}");
        let forger_hex = hex::encode(forger.verifying_key().as_bytes());
        let fp = verify::fingerprint(&forger.verifying_key());
        assert!(out.contains(&forger_hex) || out.contains(&fp), "{out}");
        // The genuine file passes under the same file.
        let (g, _) = genuine();
        let (code, out) = verify(&["--signers", signers], &bytes(&g));
        assert_eq!(code, Some(0), "{out}");
    }
}

#[test]
fn under_a_pin_a_receipt_cut_down_and_stripped_of_its_seal_fails_and_never_reads_as_not_happened() {
    let (f, key) = genuine();
    let hex = verify::entry::lower_hex(key.verifying_key().as_bytes());
    let receipt = f.cells[committed_cell(&f)].receipt.clone().unwrap();
    // Kept only up to AUTHORIZED (read alone: "nothing was sent"), or with only the COMMITTED
    // dropped (an open dispatch); the seal deleted in both.
    for keep in [2, 3] {
        let mut cut = receipt.clone();
        cut.entries.truncate(keep);
        cut.head = None;
        let bytes = serde_json::to_vec(&cut).unwrap();
        let (code, out) = verify(&["--key", &hex], &bytes);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("[receipt_unsealed]"), "{out}");
        assert!(out.contains("cannot prove it is complete"), "{out}");
        assert!(out.contains("happened=unknown"), "{out}");
        assert!(!out.contains("happened=false"), "{out}");
        let (code, json_out) = verify(&["--json", "--key", &hex], &bytes);
        assert_eq!(code, Some(1), "{json_out}");
        let report: Value = serde_json::from_str(&json_out).unwrap();
        let file = &report["files"][0];
        assert_eq!(file["findings"][0]["code"], json!("receipt_unsealed"));
        assert_eq!(file["report"]["happened"], json!("unknown"));
        // Self-attested it verifies as what it holds, which proves nothing happened or not.
        let (code, out) = verify(&[], &bytes);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("happened=unknown"), "{out}");
        assert!(out.contains("unsealed"), "{out}");
    }
    // The whole receipt, sealed, passes under the same pin.
    let (code, out) = verify(&["--key", &hex], &serde_json::to_vec(&receipt).unwrap());
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn under_a_pin_a_cut_down_unsealed_receipt_in_a_results_file_fails() {
    let (mut f, key) = genuine();
    let hex = verify::entry::lower_hex(key.verifying_key().as_bytes());
    let i = committed_cell(&f);
    let cell = &mut f.cells[i];
    let receipt = cell.receipt.as_mut().unwrap();
    receipt.entries.truncate(2);
    receipt.head = None;
    // The forger restates everything the cell says about its receipt, and re-signs.
    cell.journal_kinds.truncate(2);
    resign_manifest(&mut f, &key);
    let (code, out) = verify(&["--key", &hex], &bytes(&f));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("cells[{i}].receipt.head")), "{out}");
    assert!(out.contains("receipt_unsealed"), "{out}");
}

#[test]
fn under_a_pin_nothing_is_derived_from_a_results_file_whose_manifest_fails() {
    use verify::check::verify_results;
    use verify::receipt::KeyCheck;
    let (mut f, key) = genuine();
    let i = committed_cell(&f);
    // Edited after signing: the cell's hash is not the one the run signed, and its claim is
    // wrong too. The manifest's own record is intact but for the summary it also restates.
    f.cells[i].invariant_held = !f.cells[i].invariant_held;
    f.summary.values_mut().for_each(|s| s.held += 1);
    let pinned = verify_results(&f, &KeyCheck::Pinned(key.verifying_key()));
    assert!(!pinned.ok);
    assert!(pinned.cell_reports.is_empty(), "no cell was read");
    assert_eq!(pinned.receipts, 0);
    assert!(!pinned.findings.is_empty());
    assert!(
        pinned
            .findings
            .iter()
            .all(|x| x.code == verify::finding::code::MANIFEST_MISMATCH),
        "{:?}",
        pinned.findings
    );
    // Self-attested, every disagreement is still named where it is.
    let open = verify_results(&f, &KeyCheck::SelfAttested);
    assert!(open
        .cell_reports
        .iter()
        .any(|c| c.findings.iter().any(|x| x.code == "invariant_mismatch")));
    // And a results file pinned to another key stops at its signer.
    let other = SigningKey::from_bytes(&[3; 32]);
    let (g, _) = genuine();
    let r = verify_results(&g, &KeyCheck::Pinned(other.verifying_key()));
    assert!(r.cell_reports.is_empty() && !r.ok);
}
