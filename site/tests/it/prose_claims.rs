//! Prose cannot lie: a false claim, an unknown claim or placeholder, and a hand-written number
//! each fail the build, naming the file, the line and (for a false claim) the contradicting data.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use site::{BuildOptions, ProseSource, SiteError};
use std::path::Path;

fn build_with_verdict(verdict: &str) -> Result<site::BuildReport, SiteError> {
    let prose = support::prose_with_verdict(verdict);
    let out = tempfile::tempdir().unwrap();
    site::build_with(
        &support::fixture_dir(),
        out.path(),
        &BuildOptions {
            prose: ProseSource::Dir(prose.path().to_path_buf()),
            pinned_key: None,
            repository: None,
            ..Default::default()
        },
    )
}

#[test]
fn the_real_prose_builds_from_a_directory_too() {
    let real = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/billing_credit/verdict.md"),
    )
    .unwrap();
    build_with_verdict(&real).unwrap();
}

#[test]
fn a_false_claim_fails_the_build_with_the_contradicting_data() {
    let err = build_with_verdict("Fine words.\nclaim: held.no_check = 6/6\n").unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, SiteError::FalseClaim { line: 2, .. }),
        "{err:?}"
    );
    assert!(msg.contains("verdict.md:2"), "{msg}");
    assert!(msg.contains("held.no_check = 6/6"), "{msg}");
    assert!(msg.contains("held.no_check is 5/6"), "{msg}");
}

#[test]
fn a_false_sentence_claim_names_the_rows() {
    let err = build_with_verdict("claim: no_check and interlock agree on every row\n").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SiteError::FalseClaim { .. }), "{err:?}");
    assert!(msg.contains("before_send / billing_credit"), "{msg}");
}

#[test]
fn an_unknown_claim_or_placeholder_fails_the_build() {
    let err = build_with_verdict("claim: interlock is better\n").unwrap_err();
    assert!(matches!(err, SiteError::Prose { line: 1, .. }), "{err:?}");
    let err = build_with_verdict("x\n\nheld {{held.nobody}}\n").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("verdict.md:3") && msg.contains("unknown placeholder `{{held.nobody}}`"),
        "{msg}"
    );
    let err = build_with_verdict("claim: held.nobody = 1/2\n").unwrap_err();
    assert!(
        err.to_string().contains("unknown fact `held.nobody`"),
        "{err}"
    );
}

#[test]
fn a_number_written_by_hand_fails_the_build() {
    let err = build_with_verdict("interlock held 6 of 6.\n").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SiteError::Prose { line: 1, .. }), "{err:?}");
    assert!(msg.contains("written by hand"), "{msg}");
    // Numbers inside code spans and fenced blocks are allowed; placeholders are the way for data.
    build_with_verdict("Uses `ed25519`; held {{held.interlock}}.\n\n```\nverify --key 00\n```\n")
        .unwrap();
}

#[test]
fn claims_hold_on_the_fixture_and_are_listed_on_the_page() {
    let (out, _) = support::build_fixture_site();
    let html = std::fs::read_to_string(out.path().join("billing_credit/index.html")).unwrap();
    assert!(html.contains("hand_check and interlock agree on every row"));
    assert!(!html.contains("{{"), "no placeholder left unfilled");
}
