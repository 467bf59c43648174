//! Issue 10: the site never offers the file's own signer as if pinning it meant something; it
//! tells the reader where to get a key, and shows the signer's fingerprint as `verify` prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

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
