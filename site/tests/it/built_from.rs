//! Issue 35, item 7: every page of every kind of run says how far its data's commit is behind
//! the commit the site was built from, as the build was told.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use site::built_from::BuiltFrom;
use std::path::Path;

const SITE: &str = "89abcdef0123456789abcdef0123456789abcdef";

fn pages(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            pages(&p, found);
        } else if p.extension().is_some_and(|x| x == "html") {
            found.push(p);
        }
    }
}

#[test]
fn every_page_says_how_far_behind_its_data_is() {
    for results in [
        support::fixture_dir(),
        support::fixture_dir().join("shared_cap"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let options = site::BuildOptions {
            built_from: BuiltFrom {
                commit: Some(SITE.into()),
                distance: Box::new(|data, site| (site == SITE && data != site).then_some(7)),
            },
            ..Default::default()
        };
        site::build_with(&results, out.path(), &options).unwrap();
        let mut found = Vec::new();
        pages(out.path(), &mut found);
        assert!(found.len() >= 5, "{}", found.len());
        for page in found {
            let html = std::fs::read_to_string(&page).unwrap();
            assert!(
                html.contains("7 commits before the one this site was built from (89abcdef0123)"),
                "{} does not say how far behind its data is",
                page.display()
            );
        }
    }
}
