//! Issue 10: the site never offers the file's own signer as if pinning it meant something; it
//! tells the reader where to get a key, and shows the signer's fingerprint as `verify` prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

#[test]
fn receipt_pages_do_not_pin_the_files_own_key() {
    let (out, report) = support::build_fixture_site();
    let fixture = std::fs::read(support::fixture_dir().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&fixture).unwrap();
    let signer = file.environment.signer.clone();
    let key = verify::keys::parse_key(&signer).unwrap();
    let fingerprint = verify::fingerprint(&key);
    let receipts: Vec<_> = report
        .pages
        .iter()
        .filter(|p| p.to_string_lossy().contains("receipts"))
        .collect();
    assert!(!receipts.is_empty());
    for page in receipts {
        let html = std::fs::read_to_string(out.path().join(page)).unwrap();
        assert!(
            !html.contains(&format!("--key {signer}")),
            "{}: offers the file's own key as a pin",
            page.display()
        );
        assert!(html.contains(&fingerprint), "{}", page.display());
        assert!(html.contains("--signers"), "{}", page.display());
        assert!(html.contains("self-attested"), "{}", page.display());
    }
}

#[test]
fn a_pinned_build_says_on_every_page_kind_that_the_key_was_pinned() {
    let fixture = std::fs::read(support::fixture_dir().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&fixture).unwrap();
    let key = verify::entry::decode_lower_hex::<32>(&file.environment.signer).unwrap();
    let out = tempfile::tempdir().unwrap();
    let options = site::BuildOptions {
        pinned_key: Some(key),
        ..site::BuildOptions::default()
    };
    let report = site::build_with(&support::fixture_dir(), out.path(), &options).unwrap();
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    assert!(!index.contains("named by the file itself"), "{index}");
    assert!(index.contains("(fingerprint"), "{index}");
    assert!(index.contains("pinned:"), "{index}");
    let ids = std::fs::read_to_string(out.path().join("billing_credit/ids.html")).unwrap();
    assert!(!ids.contains("the run's published key"), "{ids}");
    for page in report
        .pages
        .iter()
        .filter(|p| !p.ends_with("index.html") || p.parent() != Some(out.path()))
    {
        let html = std::fs::read_to_string(page).unwrap();
        let footer = html.split("<p class=\"signer\">").nth(1).unwrap_or("");
        assert!(
            footer.contains("pinned"),
            "{}: the signer label does not say the key was pinned",
            page.display()
        );
        assert!(!html.contains("self-attested key"), "{}", page.display());
    }
}
