//! Conformance with real Stripe: the default matrix run against the embedded emulator, each
//! cell's ground truth compared with what real Stripe test mode held for the same cell in the
//! original implementation's published run (`results/reference/billing_credit.original.json`),
//! ids and times normalised, created-time order kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn the_default_matrix_on_the_emulator_matches_real_stripe_cell_for_cell() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--jobs", "2"])
        .arg("--out")
        .arg(out.path())
        .env_remove("INTERLOCK_EMULATOR_RATE_LIMIT")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "runner failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let run = verify::load::load_results(&bytes).unwrap();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/reference/billing_credit.original.json");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reference).unwrap()).unwrap();
    let comparison = site::conformance::compare(&run, &original).unwrap();
    let differing: Vec<String> = comparison
        .cells
        .iter()
        .filter(|c| !c.identical())
        .map(|c| {
            format!(
                "{}/{}/{}: {}",
                c.crash,
                c.outage,
                c.column,
                c.differences.join("; ")
            )
        })
        .collect();
    assert!(differing.is_empty(), "{differing:#?}");
    assert_eq!(comparison.cells.len(), 18);
    assert_eq!(comparison.identical(), 18);
}
