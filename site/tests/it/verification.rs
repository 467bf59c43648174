//! The site renders only verified data: a results file that fails `verify` is refused with the
//! problem named, and nothing is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use site::SiteError;

#[test]
fn a_tampered_results_file_is_refused_naming_the_problem() {
    let results = support::edited_fixture(|v| {
        // Claim the no_check column held everywhere.
        let cells = v["cells"].as_array_mut().unwrap();
        let cell = cells
            .iter_mut()
            .find(|c| c["column"] == "no_check" && c["invariant_held"] == false)
            .expect("a no_check cell that violated the invariant");
        cell["invariant_held"] = serde_json::Value::Bool(true);
    });
    let out = tempfile::tempdir().unwrap();
    let site_dir = out.path().join("public");
    let err = site::build(results.path(), &site_dir).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SiteError::Unverified { .. }), "{err:?}");
    assert!(msg.contains("invariant_held"), "{msg}");
    assert!(!site_dir.exists(), "nothing is written for a refused file");
}

#[test]
fn a_tampered_receipt_is_refused() {
    let results = support::edited_fixture(|v| {
        let cells = v["cells"].as_array_mut().unwrap();
        let cell = cells.iter_mut().find(|c| !c["receipt"].is_null()).unwrap();
        cell["receipt"]["entries"][0]["ts_ms"] = serde_json::json!(1);
    });
    let out = tempfile::tempdir().unwrap();
    let err = site::build(results.path(), out.path()).unwrap_err();
    assert!(matches!(err, SiteError::Unverified { .. }), "{err:?}");
    assert!(err.to_string().contains("receipt"), "{err}");
}

#[test]
fn a_wrong_pinned_key_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let other = ed25519_dalek::SigningKey::from_bytes(&[42u8; 32]).verifying_key();
    let err = site::build_with(
        &support::fixture_dir(),
        out.path(),
        &site::BuildOptions {
            prose: site::ProseSource::Embedded,
            pinned_key: Some(other.to_bytes()),
            repository: None,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, SiteError::Unverified { .. }), "{err:?}");
}

#[test]
fn an_empty_results_directory_is_an_error() {
    let empty = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    assert!(matches!(
        site::build(empty.path(), out.path()),
        Err(SiteError::NoResults(_))
    ));
}
