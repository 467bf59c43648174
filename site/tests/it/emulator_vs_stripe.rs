//! The page "The emulator against real Stripe": rendered from an emulator run and the original
//! run on Stripe beside it, linked from the report, and only when that reference exists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;
use serde_json::Value;

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A results directory holding the site fixture and, if given, a reference run.
fn results_dir(reference: Option<&Value>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        workspace().join("site/tests/fixtures/billing_credit.json"),
        dir.path().join("billing_credit.json"),
    )
    .unwrap();
    if let Some(r) = reference {
        std::fs::create_dir(dir.path().join("reference")).unwrap();
        std::fs::write(
            dir.path().join("reference/billing_credit.original.json"),
            serde_json::to_vec_pretty(r).unwrap(),
        )
        .unwrap();
    }
    dir
}

fn original() -> Value {
    let bytes =
        std::fs::read(workspace().join("results/reference/billing_credit.original.json")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn fixture() -> verify::results::ResultsFile {
    let bytes = std::fs::read(workspace().join("site/tests/fixtures/billing_credit.json")).unwrap();
    verify::load::load_results(&bytes).unwrap()
}

fn build(dir: &Path) -> (String, String) {
    let out = tempfile::tempdir().unwrap();
    site::build(dir, out.path()).unwrap();
    let read = |p: &str| std::fs::read_to_string(out.path().join(p)).unwrap_or_default();
    (
        read("billing_credit/emulator-vs-stripe.html"),
        read("billing_credit/index.html"),
    )
}

#[test]
fn the_page_shows_every_cell_side_by_side_with_the_count_from_the_data() {
    let reference = original();
    let expected = site::conformance::compare(&fixture(), &reference).unwrap();
    let (page, report) = build(results_dir(Some(&reference)).path());
    assert!(report.contains(r#"<a href="emulator-vs-stripe.html">"#));
    assert!(
        page.contains(&format!(
            "<b>{} of {}</b>",
            expected.identical(),
            expected.cells.len()
        )),
        "{page}"
    );
    assert_eq!(expected.cells.len(), 18);
    for c in &expected.cells {
        assert!(page.contains(&format!(r#"id="{}-{}-{}""#, c.crash, c.outage, c.column)));
    }
    support::snapshot("billing_credit_emulator_vs_stripe", &page);
}

#[test]
fn a_changed_answer_from_stripe_shows_as_a_difference() {
    let mut reference = original();
    reference["cells"][0]["ground_truth"]["customer_balance"] = Value::from(-1234);
    let expected = site::conformance::compare(&fixture(), &reference).unwrap();
    let (page, _) = build(results_dir(Some(&reference)).path());
    assert!(page.contains("customer balance: emulator"), "{page}");
    assert!(page.contains("Stripe -1234"));
    assert!(page.contains(&format!("<b>{} of 18</b>", expected.identical())));
    assert!(!expected.cells[0].identical());
}

#[test]
fn no_reference_means_no_page_and_no_link() {
    let (page, report) = build(results_dir(None).path());
    assert!(page.is_empty());
    assert!(!report.contains("emulator-vs-stripe.html"));
}

#[test]
fn a_reference_whose_receipts_fail_verification_is_refused() {
    let mut reference = original();
    let cell = reference["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["system"] == "interlock")
        .unwrap();
    cell["receipt"]["entries"][0]["agent"] = Value::from("someone else");
    let out = tempfile::tempdir().unwrap();
    let err = site::build(results_dir(Some(&reference)).path(), out.path()).unwrap_err();
    assert!(matches!(err, site::SiteError::Unverified { .. }), "{err}");
}

/// The fixture's own signer, as `site build --key` would be given it by the publisher.
fn genuine_key() -> [u8; 32] {
    let signer = fixture().environment.signer;
    verify::entry::decode_lower_hex::<32>(&signer).unwrap()
}

#[test]
fn under_a_pinned_key_the_unsigned_reference_is_never_rendered() {
    // A forger's reference: every Stripe answer changed, so no cell is identical any more.
    let mut reference = original();
    for cell in reference["cells"].as_array_mut().unwrap() {
        cell["ground_truth"]["customer_balance"] = Value::from(-999_999);
    }
    let dir = results_dir(Some(&reference));
    let out = tempfile::tempdir().unwrap();
    let options = site::BuildOptions {
        pinned_key: Some(genuine_key()),
        ..site::BuildOptions::default()
    };
    let built = site::build_with(dir.path(), out.path(), &options).unwrap();
    let read = |p: &str| std::fs::read_to_string(out.path().join(p)).unwrap_or_default();
    assert!(!out
        .path()
        .join("billing_credit/emulator-vs-stripe.html")
        .exists());
    assert!(!out
        .path()
        .join("data/billing_credit.original.json")
        .exists());
    for page in [
        "index.html",
        "billing_credit/index.html",
        "billing_credit/ids.html",
    ] {
        assert!(
            !read(page).contains("emulator-vs-stripe.html"),
            "{page} links the page"
        );
    }
    assert_eq!(built.withheld.len(), 1, "{:?}", built.withheld);
    assert!(
        built.withheld[0].contains("billing_credit.original.json"),
        "{:?}",
        built.withheld
    );
}

#[test]
fn without_a_pinned_key_the_reference_page_is_still_rendered() {
    let dir = results_dir(Some(&original()));
    let out = tempfile::tempdir().unwrap();
    let built = site::build(dir.path(), out.path()).unwrap();
    assert!(out
        .path()
        .join("billing_credit/emulator-vs-stripe.html")
        .is_file());
    assert!(out
        .path()
        .join("data/billing_credit.original.json")
        .is_file());
    assert!(built.withheld.is_empty());
}
