//! The committed runs: no matrix cell is decided by the want rule's same-second tie-break, and the
//! committed nemesis run verifies, while a trial dropped or a judgement restated does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use verify::nemesis::check::{code, verify_nemesis};
use verify::receipt::KeyCheck;
use verify::scenarios::billing_credit::decided_by_tie;

fn read(path: &str) -> Vec<u8> {
    std::fs::read(repo_path(path)).unwrap()
}

fn repo_path(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

#[test]
fn no_committed_matrix_cell_is_decided_by_the_tie_break() {
    let file = verify::load::load_results(&read("results/billing_credit.json")).unwrap();
    assert_eq!(file.cells.len(), 18);
    for c in &file.cells {
        assert!(
            !decided_by_tie(&c.ground_truth, &c.case.incident),
            "{}/{}/{} is decided by the same-second tie-break",
            c.crash,
            c.outage,
            c.column
        );
    }
    // The row that separates the columns is decided by an observed order: billing's note is at
    // least one test-clock second before no_check's credit.
    let c = file
        .cells
        .iter()
        .find(|c| {
            c.crash == "before_send" && c.outage == "billing_credit" && c.column == "no_check"
        })
        .unwrap();
    let note = c.ground_truth.credit_notes[0].created;
    let credit = c.ground_truth.case_credits[0].created;
    assert!(note < credit, "note {note}, credit {credit}");
    assert!(!c.invariant_held);
}

#[test]
fn the_committed_nemesis_run_verifies_and_tampering_is_found() {
    // Stored compressed, as the runner writes campaigns.
    let bytes =
        verify::input::read_file(&repo_path("results/nemesis/billing_credit.json.gz")).unwrap();
    let file = verify::load::load_nemesis(&bytes).unwrap();
    let report = verify_nemesis(&file, &KeyCheck::SelfAttested);
    assert!(report.ok, "{:?}", report.findings.first());
    assert!(report.trials >= Some(20 * 3));

    let mut dropped = file.clone();
    dropped.trials.remove(3);
    let r = verify_nemesis(&dropped, &KeyCheck::SelfAttested);
    assert!(r.findings.iter().any(|f| f.code == code::TRIALS_INCOMPLETE));

    let mut restated = file.clone();
    let i = restated.trials.iter().position(|t| t.violation).unwrap();
    restated.trials[i].violation = false;
    let r = verify_nemesis(&restated, &KeyCheck::SelfAttested);
    assert!(r.findings.iter().any(|f| f.code == code::JUDGEMENT));
    assert!(r.findings.iter().any(|f| f.code == code::SIGNATURE));

    // Re-signed by a forger, the judgement still does not follow from the data.
    let forger = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    restated.environment.signer = verify::entry::lower_hex(forger.verifying_key().as_bytes());
    verify::nemesis::sign::sign(&mut restated, &forger).unwrap();
    let r = verify_nemesis(&restated, &KeyCheck::SelfAttested);
    assert!(!r.findings.iter().any(|f| f.code == code::SIGNATURE));
    assert!(r.findings.iter().any(|f| f.code == code::JUDGEMENT));

    // The within-assumptions label is re-derived from the timeline, not taken as written: a
    // re-signed file that moves a violation "beyond assumptions" fails, and so does one that
    // edits the timeline to fit without its fingerprint.
    let i = file
        .trials
        .iter()
        .position(|t| t.assumption.is_none())
        .unwrap();
    let mut excused = file.clone();
    excused.trials[i].assumption = Some("the moon was full".into());
    verify::nemesis::sign::sign(&mut excused, &forger).unwrap();
    excused.environment.signer = verify::entry::lower_hex(forger.verifying_key().as_bytes());
    verify::nemesis::sign::sign(&mut excused, &forger).unwrap();
    let r = verify_nemesis(&excused, &KeyCheck::SelfAttested);
    assert!(
        r.findings
            .iter()
            .any(|f| f.code == code::JUDGEMENT && f.path.ends_with(".assumption")),
        "{:?}",
        r.findings
    );
    let mut edited = file.clone();
    let t = &mut edited.trials[i];
    t.timeline.retain(|e| e.kind != "read");
    let r = verify_nemesis(&edited, &KeyCheck::SelfAttested);
    assert!(
        r.findings
            .iter()
            .any(|f| f.code == code::JUDGEMENT && f.path.ends_with(".interleaving")),
        "{:?}",
        r.findings
    );
}
