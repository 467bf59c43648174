//! Snapshot of every page built from the checked-in fixture (the Nemesis and trial pages, built
//! from the committed nemesis run, and the emulator-against-Stripe page are snapshotted by their
//! own tests). A template, prose or model change
//! shows up as a snapshot diff: review it with `cargo insta review` (see the crate README).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

fn snapshot(name: &str, path: &Path) {
    support::snapshot(name, &std::fs::read_to_string(path).unwrap());
}

#[test]
fn every_page_matches_its_snapshot() {
    let (out, report) = support::build_fixture_site();
    let root = out.path();
    snapshot("index", &root.join("index.html"));
    snapshot(
        "billing_credit_report",
        &root.join("billing_credit/index.html"),
    );
    snapshot("billing_credit_ids", &root.join("billing_credit/ids.html"));
    // Receipt pages are named by the cell they belong to, so a new fixture keeps the names.
    let file: verify::results::ResultsFile = serde_json::from_slice(
        &std::fs::read(support::fixture_dir().join("billing_credit.json")).unwrap(),
    )
    .unwrap();
    let mut receipts = 0;
    for cell in &file.cells {
        let Some(bundle) = &cell.receipt else {
            continue;
        };
        let page = root.join(format!("billing_credit/receipts/{}.html", bundle.effect_id));
        snapshot(
            &format!(
                "billing_credit_receipt_{}_{}_{}_{}",
                cell.crash, cell.outage, cell.column, cell.repeat
            ),
            &page,
        );
        receipts += 1;
    }
    assert!(receipts > 0);
    assert_eq!(
        report.pages.len(),
        3 + receipts,
        "every page is snapshotted"
    );
}
