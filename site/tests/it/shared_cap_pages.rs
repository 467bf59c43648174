//! The shared_cap scenario's pages, built beside billing_credit's from the checked-in fixtures
//! (`tests/fixtures/shared_cap/shared_cap.json`, see the fixtures README): the suite's front page,
//! the report, the ids page and the interlock receipts, each against its snapshot; and a file
//! that does not verify is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

fn suite_dir(edit: impl FnOnce(&mut serde_json::Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        support::fixture_dir().join("billing_credit.json"),
        dir.path().join("billing_credit.json"),
    )
    .unwrap();
    let bytes = std::fs::read(support::fixture_dir().join("shared_cap/shared_cap.json")).unwrap();
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    edit(&mut value);
    std::fs::write(
        dir.path().join("shared_cap.json"),
        serde_json::to_vec_pretty(&value).unwrap(),
    )
    .unwrap();
    dir
}

fn snapshot(name: &str, path: &Path) {
    support::snapshot(name, &std::fs::read_to_string(path).unwrap());
}

#[test]
fn the_suite_renders_both_scenarios_and_matches_its_snapshots() {
    let results = suite_dir(|_| {});
    let out = tempfile::tempdir().unwrap();
    site::build(results.path(), out.path()).unwrap();
    let root = out.path();
    snapshot("suite_index", &root.join("index.html"));
    snapshot("shared_cap_report", &root.join("shared_cap/index.html"));
    snapshot("shared_cap_ids", &root.join("shared_cap/ids.html"));
    let bytes = std::fs::read(support::fixture_dir().join("shared_cap/shared_cap.json")).unwrap();
    let file: verify::shared_cap::record::CapResults = serde_json::from_slice(&bytes).unwrap();
    let mut receipts = 0;
    for c in &file.cells {
        for t in &c.tickets {
            let Some(b) = &t.receipt else { continue };
            let page = root.join(format!("shared_cap/receipts/{}.html", b.effect_id));
            snapshot(
                &format!(
                    "shared_cap_receipt_{}_{}_{}_{}",
                    c.crash_point, c.overlap, c.repeat, t.name
                ),
                &page,
            );
            receipts += 1;
        }
    }
    assert_eq!(receipts, 8, "two receipts per interlock cell");
    let index = std::fs::read_to_string(root.join("index.html")).unwrap();
    assert!(index.contains("billing_credit/index.html") && index.contains("shared_cap/index.html"));
}

#[test]
fn a_shared_cap_file_that_does_not_verify_is_refused() {
    let results = suite_dir(|v| {
        v["cells"][0]["invariant_held"] = serde_json::json!(true);
    });
    let out = tempfile::tempdir().unwrap();
    let err = site::build(results.path(), out.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("shared_cap.json"), "{err}");
    assert!(
        !out.path().join("index.html").exists(),
        "nothing is written"
    );
}
