//! Nemesis trials through real processes: a small run writes a file that verifies and holds every
//! planned trial, and `--replay` runs a violating trial again to the same outcome.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn a_violating_trial_replays_to_the_same_outcome() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--nemesis",
            "revoke_in_outage,kill_random",
        ])
        .args(["--trials", "2", "--seed", "11", "--jobs", "4", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(out.path().join("nemesis/billing_credit.json")).unwrap();
    let file = verify::load::load_nemesis(&bytes).unwrap();
    assert_eq!(file.trials.len(), 2 * 3 * 2);
    let report =
        verify::nemesis::check::verify_nemesis(&file, &verify::receipt::KeyCheck::SelfAttested);
    assert!(report.ok, "{:?}", report.findings.first());
    // Every decide kill in kill_random was a real SIGKILL or found the worker already done.
    for t in file.trials.iter().filter(|t| t.nemesis == "kill_random") {
        assert_eq!(t.kills.len(), 1, "{}", t.id);
    }
    // The approval revoked while the worker was dead: no_check re-sends anyway, the careful
    // columns refuse; the judge sees the credit after the revocation.
    let violating: Vec<_> = file.trials.iter().filter(|t| t.violation).collect();
    assert!(
        violating.iter().all(|t| t.column == "no_check"),
        "{violating:?}"
    );
    let t = violating
        .iter()
        .find(|t| t.nemesis == "revoke_in_outage")
        .unwrap();
    for careful in file
        .trials
        .iter()
        .filter(|t| t.nemesis == "revoke_in_outage" && t.column != "no_check")
    {
        assert!(
            careful.outcome.starts_with("REFUSED:"),
            "{}: {}",
            careful.id,
            careful.outcome
        );
        assert_eq!(careful.ground_truth.case_credit_count, 0);
    }

    let replay = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--replay", &t.id])
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains(&format!("outcome {}", t.outcome)), "{text}");
    assert!(text.contains("violation true"), "{text}");
    assert!(text.contains(&format!("outage {}", t.outage)), "{text}");
}

#[test]
fn a_malformed_trial_id_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--replay", "kill_random:interlock:xyz"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
