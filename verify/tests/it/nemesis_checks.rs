//! Nemesis files built in code (`common::nemesis_file`): the genuine file verifies, and every
//! edit below fails with its code, driven through `verify_nemesis` and the `verify` binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{committed_trial, nemesis_file, resign};
use serde_json::Value;
use std::process::Command;
use verify::nemesis::check::{code, verify_nemesis};
use verify::nemesis::NemesisFile;
use verify::receipt::KeyCheck;

fn pinned(key: &ed25519_dalek::SigningKey) -> KeyCheck {
    KeyCheck::Pinned(key.verifying_key())
}

/// The findings' (code, path) of `file` under `key`. The file is checked twice, typed and as
/// the command reads it (its trials read from their text a group at a time): the two reports
/// must be the same.
fn codes(file: &NemesisFile, key: &KeyCheck) -> Vec<(String, String)> {
    let typed = verify_nemesis(file, key);
    let bytes = serde_json::to_vec(file).unwrap();
    let Ok(verify::load::Loaded::Nemesis(text)) = verify::load::load_for_check(&bytes) else {
        panic!("the file is not read as a nemesis file with its trials as text");
    };
    let streamed = verify::nemesis::check::verify_nemesis_text(&text, key).unwrap();
    assert_eq!(
        streamed, typed,
        "the text path reports what the typed path does"
    );
    typed
        .findings
        .into_iter()
        .map(|f| (f.code, f.path))
        .collect()
}

/// Run `verify ARGS FILE` on `file`: (exit code, stdout + stderr).
fn verify_bin(args: &[&str], file: &NemesisFile) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nemesis.json");
    std::fs::write(&path, serde_json::to_vec(file).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn the_built_nemesis_file_verifies_pinned_and_self_attested() {
    let (file, key) = nemesis_file();
    assert_eq!(file.trials.len(), 18);
    for k in [pinned(&key), KeyCheck::SelfAttested] {
        let r = verify_nemesis(&file, &k);
        assert!(r.ok, "{:#?}", r.findings);
        assert_eq!(r.receipts, Some(6));
        assert!(codes(&file, &k).is_empty());
    }
    // The signature is the canonical hash of the whole file without it, as one value.
    let mut whole = serde_json::to_value(&file).unwrap();
    whole.as_object_mut().unwrap().remove("signature");
    let digest = <sha2::Sha256 as sha2::Digest>::digest(verify::canonical::to_vec(&whole).unwrap());
    assert_eq!(file.signature.hash, hex::encode(digest));
    let hex = verify::entry::lower_hex(key.verifying_key().as_bytes());
    let (code, out) = verify_bin(&["--key", &hex], &file);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn a_re_signed_nemesis_forgery_prints_another_fingerprint_than_the_genuine_file() {
    let (genuine, key) = nemesis_file();
    let genuine_fp = verify::fingerprint(&key.verifying_key());
    // A forger writes the same run and signs every receipt and the file with a key of their own.
    let spec = synthetic::Spec {
        seed: 9,
        ..Default::default()
    };
    let (forged, forger) = common::nemesis_file_from(&spec);
    let forger_fp = verify::fingerprint(&forger.verifying_key());
    assert!(verify_nemesis(&forged, &KeyCheck::SelfAttested).ok);

    let (code, genuine_out) = verify_bin(&[], &genuine);
    assert_eq!(code, Some(0), "{genuine_out}");
    assert!(
        genuine_out.contains(&format!("signer {genuine_fp} (self-attested")),
        "{genuine_out}"
    );
    assert!(
        genuine_out.contains("generated 2026-11-30T12:00:00Z, commit 0123456789abcdef"),
        "{genuine_out}"
    );
    let (code, forged_out) = verify_bin(&[], &forged);
    assert_eq!(code, Some(0), "{forged_out}");
    assert!(
        forged_out.contains(&format!("signer {forger_fp} (self-attested")),
        "{forged_out}"
    );
    assert!(!forged_out.contains(&genuine_fp), "{forged_out}");
    // The fingerprint is all that tells the two verdicts apart.
    let verdict = |out: &str, fp: &str| {
        let line = out.lines().next().unwrap();
        line.split_once(": ").unwrap().1.replace(fp, "FP")
    };
    assert_eq!(
        verdict(&genuine_out, &genuine_fp),
        verdict(&forged_out, &forger_fp)
    );

    let (_, json_out) = verify_bin(&["--json"], &forged);
    let v: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(v["files"][0]["fingerprint"], serde_json::json!(forger_fp));
    assert_eq!(
        v["files"][0]["report"]["fingerprint"],
        serde_json::json!(forger_fp)
    );

    // Pinned to the genuine key, the forgery fails.
    let hex = verify::entry::lower_hex(key.verifying_key().as_bytes());
    let (code, out) = verify_bin(&["--key", &hex], &forged);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("nemesis_signature"), "{out}");
}

/// Edit the genuine file, restate what an honest runner would derive, and re-sign it with the
/// run's own key: only the check under test can catch the edit. Returns the findings' (code,
/// path) under the pinned key.
fn forged(edit: impl FnOnce(&mut NemesisFile)) -> Vec<(String, String)> {
    let (mut file, key) = nemesis_file();
    edit(&mut file);
    for t in &mut file.trials {
        common::rejudge(t);
    }
    resign(&mut file, &key);
    codes(&file, &pinned(&key))
}

fn has(found: &[(String, String)], code: &str, path: &str) -> bool {
    found.iter().any(|(c, p)| c == code && p == path)
}

fn interlock_trials(file: &NemesisFile) -> Vec<usize> {
    (0..file.trials.len())
        .filter(|&i| file.trials[i].column == "interlock")
        .collect()
}

#[test]
fn a_trial_cannot_carry_another_trials_receipt() {
    let mut at = (0, 0);
    let found = forged(|file| {
        let i = committed_trial(file);
        let j = interlock_trials(file)
            .into_iter()
            .rfind(|&j| j != i && file.trials[j].journal_kinds == file.trials[i].journal_kinds)
            .unwrap();
        at = (i, j);
        // Trial i shows trial j's receipt and the Stripe state it produced: every anchor holds.
        let (receipt, truth) = (
            file.trials[j].receipt.clone(),
            file.trials[j].ground_truth.clone(),
        );
        file.trials[i].receipt = receipt;
        file.trials[i].ground_truth = truth;
    });
    let (i, _) = at;
    assert!(
        has(
            &found,
            "receipt_not_bound",
            &format!("trials[{i}].receipt.effect_id")
        ),
        "{found:?}"
    );
}

#[test]
fn a_trials_outcome_and_journal_kinds_are_its_receipts() {
    let mut at = 0;
    let found = forged(|file| {
        at = committed_trial(file);
        // The receipt committed by a retry: "COMMITTED" names a first send.
        file.trials[at].outcome = "COMMITTED".into();
    });
    assert!(
        has(&found, "outcome_mismatch", &format!("trials[{at}].outcome")),
        "{found:?}"
    );

    let found = forged(|file| {
        at = committed_trial(file);
        file.trials[at].journal_kinds.pop();
    });
    assert!(
        has(
            &found,
            "receipt_claim_mismatch",
            &format!("trials[{at}].journal_kinds")
        ),
        "{found:?}"
    );
}

#[test]
fn an_interlock_trial_that_ended_in_a_status_carries_its_receipt_and_no_other_trial_does() {
    let mut at = 0;
    let found = forged(|file| {
        at = committed_trial(file);
        file.trials[at].receipt = None;
        file.trials[at].journal_kinds.clear();
    });
    assert!(
        has(&found, "receipt_missing", &format!("trials[{at}].receipt")),
        "{found:?}"
    );

    let found = forged(|file| {
        let receipt = file.trials[committed_trial(file)].receipt.clone();
        at = file
            .trials
            .iter()
            .position(|t| t.column == "no_check")
            .unwrap();
        file.trials[at].receipt = receipt;
    });
    assert!(
        has(&found, "receipt_missing", &format!("trials[{at}].receipt")),
        "{found:?}"
    );
}

#[test]
fn a_harness_error_trial_carries_its_reason_and_no_other_trial_carries_one() {
    let mut at = 0;
    let found = forged(|file| {
        at = file
            .trials
            .iter()
            .position(|t| t.column == "no_check")
            .unwrap();
        file.trials[at].outcome = verify::scenarios::billing_credit::HARNESS_ERROR.into();
        file.trials[at].harness_error = Some(" ".into());
    });
    assert!(
        has(
            &found,
            "crash_not_proven",
            &format!("trials[{at}].harness_error")
        ),
        "{found:?}"
    );

    let found = forged(|file| {
        at = file
            .trials
            .iter()
            .position(|t| t.column == "no_check")
            .unwrap();
        file.trials[at].harness_error = Some("the worker hung".into());
    });
    assert!(
        has(
            &found,
            "file_inconsistent",
            &format!("trials[{at}].harness_error")
        ),
        "{found:?}"
    );

    // With its reason, a harness error is counted apart and verifies.
    let found = forged(|file| {
        at = file
            .trials
            .iter()
            .position(|t| t.column == "no_check")
            .unwrap();
        file.trials[at].outcome = verify::scenarios::billing_credit::HARNESS_ERROR.into();
        file.trials[at].harness_error = Some("the emulator did not answer".into());
    });
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn under_a_pin_a_cut_down_unsealed_receipt_in_a_trial_fails() {
    let mut at = 0;
    let found = forged(|file| {
        at = committed_trial(file);
        let t = &mut file.trials[at];
        let receipt = t.receipt.as_mut().unwrap();
        receipt.entries.truncate(2);
        receipt.head = None;
        t.journal_kinds.truncate(2);
    });
    assert!(
        has(
            &found,
            "receipt_unsealed",
            &format!("trials[{at}].receipt.head")
        ),
        "{found:?}"
    );
}

#[test]
fn a_plan_larger_than_its_trials_could_fill_is_refused_before_its_summary_is_built() {
    let (genuine, key) = nemesis_file();
    // Names for 250 x 250 pairs and no trial: a summary of 62 500 entries if it were built.
    let names = |p: &str| (0..250).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
    let mut empty = genuine.clone();
    empty.plan.nemeses = names("n");
    empty.plan.columns = names("c");
    empty.plan.trials = 0;
    empty.trials.clear();
    empty.summary.clear();
    verify::nemesis::sign::sign(&mut empty, &key).unwrap();
    let found = codes(&empty, &pinned(&key));
    assert_eq!(found, [(code::FORMAT.to_owned(), "plan".to_owned())]);

    // One trial per pair planned, 18 trials held: the count is named, and so is the first trial
    // out of place, but no summary is derived.
    let mut wide = genuine.clone();
    wide.plan.nemeses = names("n");
    wide.plan.trials = 1;
    verify::nemesis::sign::sign(&mut wide, &key).unwrap();
    let found = codes(&wide, &pinned(&key));
    assert!(has(&found, code::TRIALS_INCOMPLETE, "trials"), "{found:?}");
    assert!(
        has(&found, code::TRIALS_INCOMPLETE, "trials[0].id"),
        "{found:?}"
    );
    assert!(!found.iter().any(|(c, _)| c == code::SUMMARY), "{found:?}");

    // A trial dropped: named where it is missing.
    let mut dropped = genuine.clone();
    dropped.trials.remove(3);
    resign(&mut dropped, &key);
    let found = codes(&dropped, &pinned(&key));
    assert!(has(&found, code::TRIALS_INCOMPLETE, "trials"), "{found:?}");
    assert!(
        has(&found, code::TRIALS_INCOMPLETE, "trials[3].id"),
        "{found:?}"
    );
}

#[test]
fn under_a_pin_nothing_is_derived_from_a_file_whose_signature_fails() {
    let (mut file, key) = nemesis_file();
    let i = committed_trial(&file);
    file.trials[i].violation = true;
    let found = codes(&file, &pinned(&key));
    assert!(!found.is_empty());
    assert!(found.iter().all(|(c, _)| c == code::SIGNATURE), "{found:?}");
    let r = verify_nemesis(&file, &pinned(&key));
    assert_eq!(
        (r.trials, r.receipts, r.violations),
        (None, None, None),
        "no count is derived from it"
    );
    // Self-attested, the same edit is found where it is, too.
    let found = codes(&file, &KeyCheck::SelfAttested);
    assert!(
        has(&found, code::JUDGEMENT, &format!("trials[{i}]")),
        "{found:?}"
    );
}

#[test]
fn a_file_of_many_groups_reads_from_text_as_it_does_typed() {
    // 540 trials: groups of 64 cross the three columns' runs of 180.
    let spec = synthetic::Spec {
        repeats: 30,
        ..Default::default()
    };
    let (file, key) = common::nemesis_file_from(&spec);
    assert_eq!(file.trials.len(), 540);
    assert!(codes(&file, &pinned(&key)).is_empty());

    // The second column's summary restated wrong: named at its own entry.
    let mut restated = file.clone();
    restated.summary[1].violations += 1;
    verify::nemesis::sign::sign(&mut restated, &key).unwrap();
    let found = codes(&restated, &pinned(&key));
    assert_eq!(found, [(code::SUMMARY.to_owned(), "summary[1]".to_owned())]);

    // A trial of the third column's run, dropped: the count, and where the walk stops.
    let mut dropped = file.clone();
    dropped.trials.remove(400);
    resign(&mut dropped, &key);
    let found = codes(&dropped, &pinned(&key));
    assert!(has(&found, code::TRIALS_INCOMPLETE, "trials"), "{found:?}");
    assert!(
        has(&found, code::TRIALS_INCOMPLETE, "trials[400].id"),
        "{found:?}"
    );

    // The last trial dropped: the walk runs out, and names it missing.
    let mut short = file.clone();
    short.trials.pop();
    resign(&mut short, &key);
    let found = codes(&short, &pinned(&key));
    assert!(
        has(&found, code::TRIALS_INCOMPLETE, "trials[539]"),
        "{found:?}"
    );
}

#[test]
fn a_trial_that_does_not_read_is_named_by_the_strict_reader_and_exits_2() {
    let (file, _) = nemesis_file();
    let mut d = serde_json::to_value(&file).unwrap();
    d["trials"][5]["surprise"] = serde_json::json!(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.json");
    std::fs::write(&path, serde_json::to_vec(&d).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("trials[5]"), "{text}");
    assert!(text.contains("surprise"), "{text}");
}

/// A trial whose recorded outage is not the one its seed draws was not run from its seed (a
/// replay would run another trial): the checker draws every trial again. Before the draws moved
/// into verify this file, re-signed, verified.
#[test]
fn a_trial_whose_outage_is_not_its_draw_fails() {
    let found = forged(|file| {
        let t = &mut file.trials[0];
        let other = verify::nemesis::draw::OUTAGES
            .iter()
            .find(|o| **o != t.outage)
            .unwrap();
        t.outage = (*other).to_owned();
    });
    assert!(
        has(&found, "nemesis_draw_mismatch", "trials[0].outage"),
        "{found:?}"
    );
    assert!(forged(|_| {}).is_empty());
}

/// A trial whose seed draws a decide kill records it (delivered, or not when the worker had
/// finished first): a campaign whose nemesis never struck must not verify as if it had.
#[test]
fn a_trial_that_leaves_out_its_drawn_kill_fails() {
    let found = forged(|file| {
        assert!(!file.trials[0].kills.is_empty(), "the fixture draws a kill");
        file.trials[0].kills.clear();
    });
    assert!(
        has(&found, "nemesis_draw_mismatch", "trials[0].kills"),
        "{found:?}"
    );
    let found = forged(|file| {
        let again = file.trials[0].kills[0].clone();
        file.trials[0].kills.push(again);
    });
    assert!(
        has(&found, "nemesis_draw_mismatch", "trials[0].kills"),
        "{found:?}"
    );
}

/// From the forger's review: a judged no_check trial relabelled NOT_DECIDED (killed before any
/// decision) left every count, though its record has a decision, a decision_saved step, a POST
/// and a credit at the service. Its own record contradicts the label.
#[test]
fn a_trial_labelled_not_decided_must_have_decided_nothing() {
    let mut at = 0;
    let found = forged(|file| {
        at = file
            .trials
            .iter()
            .position(|t| {
                t.column == "no_check" && t.judged() && t.ground_truth.case_credit_count > 0
            })
            .unwrap();
        file.trials[at].outcome = "NOT_DECIDED".into();
    });
    assert!(
        has(
            &found,
            "nemesis_judgement_mismatch",
            &format!("trials[{at}].outcome")
        ),
        "{found:?}"
    );
    // The genuine NOT_DECIDED trials (if the fixture has any) pass.
    let (file, key) = nemesis_file();
    assert!(!codes(&file, &pinned(&key))
        .iter()
        .any(|(_, p)| p.ends_with(".outcome")));
}
