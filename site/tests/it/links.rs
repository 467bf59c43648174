//! Every internal link of the built site resolves: each `href` and `src` in every HTML file
//! names a file that exists (and an `#id` that exists in it); nothing is absolute.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            html_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
}

/// Values of `attr="..."` in `html`.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!(" {attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&needle) {
        let after = &rest[i + needle.len()..];
        let end = after.find('"').unwrap();
        out.push(after[..end].replace("&amp;", "&"));
        rest = &after[end..];
    }
    out
}

#[test]
fn every_href_and_src_resolves() {
    let (out, report) = support::build_fixture_site();
    let mut files = Vec::new();
    html_files(out.path(), &mut files);
    assert!(files.len() >= 4, "expected several pages, got {files:?}");
    let reported: BTreeSet<_> = report.pages.iter().cloned().collect();
    let found: BTreeSet<_> = files.iter().cloned().collect();
    assert_eq!(
        reported, found,
        "BuildReport.pages lists exactly the HTML files written"
    );
    let mut checked = 0;
    for file in &files {
        let html = std::fs::read_to_string(file).unwrap();
        assert!(!html.contains("<script"), "{} has a script", file.display());
        let links: Vec<String> = attr_values(&html, "href")
            .into_iter()
            .chain(attr_values(&html, "src"))
            .collect();
        for link in links {
            assert!(
                !link.starts_with('/') && !link.contains("://") && !link.starts_with("//"),
                "{}: link {link:?} is not relative",
                file.display()
            );
            let (path_part, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let target = if path_part.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path_part)
            };
            assert!(
                target.is_file(),
                "{}: link {link:?} -> {} does not exist",
                file.display(),
                target.display()
            );
            let canon = target.canonicalize().unwrap();
            assert!(
                canon.starts_with(out.path().canonicalize().unwrap()),
                "{link:?} leaves the site"
            );
            if let Some(id) = fragment {
                let body = std::fs::read_to_string(&target).unwrap();
                assert!(
                    body.contains(&format!("id=\"{id}\"")),
                    "{}: link {link:?}: no id {id:?} in {}",
                    file.display(),
                    target.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} links checked");
}

#[test]
fn downloads_are_published_beside_the_pages() {
    let (out, _) = support::build_fixture_site();
    let published = std::fs::read(out.path().join("data/billing_credit.json")).unwrap();
    let original = std::fs::read(support::fixture_dir().join("billing_credit.json")).unwrap();
    assert_eq!(
        published, original,
        "the results JSON is published byte for byte"
    );
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.path().join("data/results.schema.json")).unwrap(),
    )
    .unwrap();
    assert!(schema.to_string().contains("worker_exit_signal"));
    assert!(out.path().join("style.css").is_file());
}

#[test]
fn a_repeated_matrix_renders_every_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let file = synthetic::generate(&synthetic::Spec {
        repeats: 2,
        ..synthetic::Spec::default()
    });
    std::fs::write(
        dir.path().join("billing_credit.json"),
        serde_json::to_vec(&file).unwrap(),
    )
    .unwrap();
    // The synthetic file's invented ground truth is not the run the real verdict describes, so
    // render it with a verdict that makes only claims about repeats.
    let prose = support::prose_with_verdict(
        "Each cell ran {{repeats}} times.\nclaim: repeats = 2\nclaim: every receipt verified\n",
    );
    let out = tempfile::tempdir().unwrap();
    let options = site::BuildOptions {
        prose: site::ProseSource::Dir(prose.path().to_path_buf()),
        pinned_key: None,
        repository: None,
        ..Default::default()
    };
    let report = site::build_with(dir.path(), out.path(), &options).unwrap();
    assert_eq!(report.pages.len(), 3 + 12);
    let html = std::fs::read_to_string(out.path().join("billing_credit/index.html")).unwrap();
    assert!(html.contains("before_send/renewal/interlock#1"));
    assert_eq!(html.matches("<div class=\"cell\" id=").count(), 36);
}

#[test]
fn a_rebuild_replaces_the_whole_site_folder() {
    let (out, _) = support::build_fixture_site();
    let receipts = out.path().join("billing_credit/receipts");
    let stale = receipts.join(format!("{}.html", "ab".repeat(32)));
    let added = out.path().join("notes.txt");
    std::fs::write(&stale, "old").unwrap();
    std::fs::write(&added, "added to the site folder").unwrap();
    site::build(&support::fixture_dir(), out.path()).unwrap();
    assert!(!stale.exists(), "a receipt page of another run is removed");
    // The folder is the site's: a build replaces it whole (a folder holding no site is refused,
    // see tests/it/whole_builds.rs).
    assert!(
        !added.exists(),
        "a file added to a site folder does not survive a rebuild"
    );
    assert!(receipts.is_dir());
}

#[test]
fn a_partial_matrix_renders_with_the_full_matrix_verdict_withheld() {
    let dir = tempfile::tempdir().unwrap();
    let file = synthetic::generate(&synthetic::Spec {
        columns: vec!["interlock".into()],
        ..synthetic::Spec::default()
    });
    std::fs::write(
        dir.path().join("billing_credit.json"),
        serde_json::to_vec(&file).unwrap(),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    site::build(dir.path(), out.path()).unwrap();
    let html = std::fs::read_to_string(out.path().join("billing_credit/index.html")).unwrap();
    assert!(
        html.contains("so it is not shown"),
        "the verdict is withheld, not faked"
    );
    assert!(html.contains("<code>held.no_check</code>"));
    assert!(html.contains("not applicable (a column is missing)"));
}
