//! Shared helpers of the site's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The checked-in results fixture directory (holds `billing_credit.json`).
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Build the site from the fixture into a fresh temporary directory.
pub fn build_fixture_site() -> (tempfile::TempDir, site::BuildReport) {
    let out = tempfile::tempdir().expect("temp dir");
    let report = site::build(&fixture_dir(), out.path()).expect("the fixture site builds");
    (out, report)
}

/// Copy the fixture into a fresh results directory, after editing its JSON with `edit`.
pub fn edited_fixture(edit: impl FnOnce(&mut serde_json::Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = std::fs::read(fixture_dir().join("billing_credit.json")).expect("fixture");
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).expect("fixture JSON");
    edit(&mut value);
    std::fs::write(
        dir.path().join("billing_credit.json"),
        serde_json::to_vec_pretty(&value).expect("JSON"),
    )
    .expect("write");
    dir
}

/// A synthetic, signed, verifying results file from `verify::synthetic` (used to make the
/// fixture before a real run existed, and by tests that need a variant of it).
pub fn synthetic() -> verify::results::ResultsFile {
    synthetic::generate(&synthetic::Spec::default())
}

/// A prose directory holding the real billing_credit prose with `verdict.md` replaced.
pub fn prose_with_verdict(verdict: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let scen = dir.path().join("billing_credit");
    std::fs::create_dir_all(&scen).expect("mkdir");
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/billing_credit");
    for name in ["setup.md", "rows.md", "verdict.md"] {
        std::fs::copy(real.join(name), scen.join(name)).expect("copy prose");
    }
    std::fs::write(scen.join("verdict.md"), verdict).expect("write verdict");
    dir
}

/// Compare a page with its snapshot (`tests/snapshots/<name>.snap`), the site's version filtered
/// out (it may change without the page meaning something else).
pub fn snapshot(name: &str, html: &str) {
    let filters = vec![(r"site \d+\.\d+\.\d+(-[0-9A-Za-z.]+)?", "site [version]")];
    insta::with_settings!({ filters => filters, prepend_module_to_snapshot => false, snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!(name, html);
    });
}

/// Every `href` and `src` of every HTML page under `out` is relative and names a file that
/// exists (with its `#id`, when it names one); returns how many links were checked.
pub fn assert_links_resolve(out: &Path) -> usize {
    fn pages(dir: &Path, found: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                pages(&p, found);
            } else if p.extension().is_some_and(|x| x == "html") {
                found.push(p);
            }
        }
    }
    let mut found = Vec::new();
    pages(out, &mut found);
    let mut checked = 0;
    for file in &found {
        let html = std::fs::read_to_string(file).expect("page");
        for attr in [" href=\"", " src=\""] {
            for piece in html.split(attr).skip(1) {
                let link = piece[..piece.find('"').expect("closing quote")].replace("&amp;", "&");
                assert!(
                    !link.starts_with('/') && !link.contains("://"),
                    "{}: link {link:?} is not relative",
                    file.display()
                );
                let (path, id) = link.split_once('#').unwrap_or((&link, ""));
                let target = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().expect("parent").join(path)
                };
                assert!(
                    target.is_file(),
                    "{}: link {link:?} names no file",
                    file.display()
                );
                if !id.is_empty() {
                    let body = std::fs::read_to_string(&target).expect("target");
                    assert!(
                        body.contains(&format!("id=\"{id}\"")),
                        "{}: link {link:?}: no such id",
                        file.display()
                    );
                }
                checked += 1;
            }
        }
    }
    checked
}
