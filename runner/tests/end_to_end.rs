//! End to end: the runner binary runs a few cells through real worker processes against the
//! embedded emulator, SIGKILLs each worker, and writes a results file that verifies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use verify::results::{Cell, ResultsFile};

fn run(args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--seed", "7", "--jobs", "2"])
        .arg("--out")
        .arg(out.path())
        .args(args)
        .output()
        .unwrap();
    (output, out)
}

fn cell<'a>(file: &'a ResultsFile, crash: &str, outage: &str, column: &str) -> &'a Cell {
    file.cells
        .iter()
        .find(|c| c.crash == crash && c.outage == outage && c.column == column)
        .unwrap_or_else(|| panic!("no cell {crash}/{outage}/{column}"))
}

#[test]
fn cells_run_through_real_processes_and_sigkills() {
    let (output, out) = run(&[
        "--cells",
        "before_send:billing_credit:*",
        "after_send:renewal:interlock",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "runner failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verify: ok"), "{stdout}");

    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    assert_eq!(file.format, "interlock-results/1");
    assert_eq!(file.cells.len(), 4);
    assert_eq!(file.environment.backend, "emulator");
    assert_eq!(file.environment.decider.kind, "policy");
    assert_eq!(file.environment.seed, 7);
    assert_eq!(file.environment.signer.len(), 64);
    assert!(file.environment.claim.max_in_flight_ms >= 5000);
    assert_eq!(file.rows.len(), 2);
    assert_eq!(file.columns, ["no_check", "hand_check", "interlock"]);

    for c in &file.cells {
        assert_eq!(c.worker_exit_signal, Some(9), "{}/{}/{}", c.crash, c.outage, c.column);
        assert_eq!(c.worker_exit_code, None);
        assert!(c.harness_error.is_none(), "{:?}", c.harness_error);
        assert!(c.answer_matches, "{}/{}/{}", c.crash, c.outage, c.column);
        assert!(c.timings.is_some());
        assert!(c.decision.is_some());
        assert!(c.observations.decision.is_some());
        assert!(c.observations.crash.is_some());
        assert!(c.observations.restart.is_some());
    }

    let no_check = cell(&file, "before_send", "billing_credit", "no_check");
    assert_eq!(no_check.outcome, "CREDITED");
    assert!(!no_check.invariant_held, "no_check pays twice for the incident");
    assert!(!no_check.proof);
    assert_eq!(no_check.record, "none");

    let hand = cell(&file, "before_send", "billing_credit", "hand_check");
    assert_eq!(hand.outcome, "REFUSED:stale_premise");
    assert!(hand.invariant_held && hand.proof);
    assert_eq!(hand.ground_truth.case_credit_count, 0);

    let gate = cell(&file, "before_send", "billing_credit", "interlock");
    assert_eq!(gate.outcome, "REFUSED:stale_premise_at_recovery");
    assert!(gate.invariant_held && gate.proof);
    assert!(gate.receipt.is_some());
    assert_eq!(gate.journal_kinds.last().map(String::as_str), Some("REFUSED"));

    let retry = cell(&file, "after_send", "renewal", "interlock");
    assert_eq!(retry.outcome, "COMMITTED_BY_RETRY");
    assert_eq!(retry.via.as_deref(), Some("retry-idempotent"));
    assert!(retry.invariant_held && retry.proof);
    assert_eq!(retry.ground_truth.case_credit_count, 1);
    assert_eq!(retry.want.count, 1);

    let s = &file.summary["interlock"];
    assert_eq!((s.cells, s.held, s.proof, s.harness_errors), (2, 2, 2, 0));
    let s = &file.summary["no_check"];
    assert_eq!((s.cells, s.held, s.proof), (1, 0, 0));
}

#[test]
fn bad_cell_specs_are_refused_before_anything_runs() {
    let (output, out) = run(&["--cells", "before_send:renewal"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("crash:outage:column"), "{stderr}");
    assert!(!out.path().join("billing_credit.json").exists());
}

#[test]
fn stripe_backend_refuses_live_keys() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--backend", "stripe"])
        .arg("--out")
        .arg(out.path())
        .env("STRIPE_SECRET_KEY", "sk_live_notarealkey")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TEST key"), "{stderr}");
    assert!(!stderr.contains("notarealkey"), "{stderr}");
}

#[test]
fn anthropic_decider_needs_its_key() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--decider", "anthropic"])
        .arg("--out")
        .arg(out.path())
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("ANTHROPIC_API_KEY"));
}
