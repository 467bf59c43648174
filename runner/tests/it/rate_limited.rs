//! Cells run in parallel against an emulator rate-limited like a Stripe sandbox: the 429s are
//! retried by the client inside its budget, no cell becomes a HARNESS_ERROR, and what each cell
//! leaves at "Stripe" is still what real Stripe left in the original run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn the_default_matrix_with_eight_jobs_against_a_sandbox_rate_limit_completes_clean() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--jobs", "8"])
        .arg("--out")
        .arg(out.path())
        .env("INTERLOCK_EMULATOR_RATE_LIMIT", "25")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "runner failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let limited: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("emulator rate limit 25/s: "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rate limit line in:\n{stdout}"));
    assert!(
        limited > 0,
        "the limit was never met, so nothing was tested"
    );

    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let run = verify::load::load_results(&bytes).unwrap();
    assert_eq!(run.cells.len(), 18);
    for c in &run.cells {
        assert!(c.harness_error.is_none(), "{:?}", c.harness_error);
        assert_eq!(c.worker_exit_signal, Some(9));
    }
    let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/reference/billing_credit.original.json");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reference).unwrap()).unwrap();
    let comparison = site::conformance::compare(&run, &original).unwrap();
    let run_here: Vec<_> = comparison
        .cells
        .iter()
        .filter(|c| c.emulator.is_some())
        .collect();
    assert_eq!(run_here.len(), 18);
    for c in run_here {
        assert!(
            c.identical(),
            "{}/{}/{}: {:?}",
            c.crash,
            c.outage,
            c.column,
            c.differences
        );
    }
}
