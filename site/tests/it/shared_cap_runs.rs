//! Several shared_cap runs in one site: a one-host run and a two-host run side by side, each in
//! the folder its run name gives; a run's Nemesis page from its campaign
//! (`nemesis/<run name>.json`); and the refusals: two files of one run name, a campaign that does
//! not verify, a campaign of another run name. Fixtures in `tests/fixtures/shared_cap/` (see the
//! fixtures README).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};

fn cap_fixture(name: &str) -> PathBuf {
    support::fixture_dir().join("shared_cap").join(name)
}

/// A results directory holding `files`: (fixture under `shared_cap/`, name in the directory).
fn results(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in files {
        let to = dir.path().join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(cap_fixture(from), to).unwrap();
    }
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_one_host_run_and_a_two_host_run_each_get_their_own_folder_and_index_entry() {
    let dir = results(&[
        ("shared_cap.json", "shared_cap.json"),
        ("shared_cap_two_hosts.json", "shared_cap_two_hosts.json"),
    ]);
    let out = tempfile::tempdir().unwrap();
    site::build(dir.path(), out.path()).unwrap();
    let root = out.path();
    // The one-host pages are those of a build without the two-host run.
    support::snapshot(
        "shared_cap_report",
        &read(&root.join("shared_cap/index.html")),
    );
    support::snapshot("shared_cap_ids", &read(&root.join("shared_cap/ids.html")));
    let two = read(&root.join("shared_cap_two_hosts/index.html"));
    support::snapshot("shared_cap_two_hosts_report", &two);
    assert!(two.contains(site::shared_cap::TITLE_TWO_HOSTS));
    assert!(two.contains("orders nothing with"), "the two-host verdict");
    let ids = read(&root.join("shared_cap_two_hosts/ids.html"));
    assert!(ids.contains("<h1>shared_cap_two_hosts: ids and receipts</h1>"));
    for name in ["shared_cap", "shared_cap_two_hosts"] {
        assert_eq!(
            std::fs::read(root.join(format!("data/{name}.json"))).unwrap(),
            std::fs::read(cap_fixture(&format!("{name}.json"))).unwrap(),
            "{name}'s results file is published byte for byte"
        );
    }
    let index = read(&root.join("index.html"));
    assert!(index.contains("href=\"shared_cap/index.html\""));
    assert!(index.contains("href=\"shared_cap_two_hosts/index.html\""));
    assert_eq!(
        index.matches("<p class=\"lede\">").count(),
        3,
        "the opening's line on what Interlock is, then a verdict each"
    );
    assert!(index.contains(site::shared_cap::TITLE_TWO_HOSTS));
    assert!(support::assert_links_resolve(root) > 50);
}

#[test]
fn two_shared_cap_files_of_one_run_name_are_refused_naming_both() {
    let dir = results(&[
        ("shared_cap.json", "first.json"),
        ("shared_cap.json", "second.json"),
    ]);
    let out = tempfile::tempdir().unwrap();
    let err = site::build(dir.path(), out.path()).unwrap_err().to_string();
    assert!(
        err.contains("first.json") && err.contains("second.json"),
        "{err}"
    );
    assert!(err.contains("shared_cap/"), "{err}");
    assert!(
        !out.path().join("index.html").exists(),
        "nothing is written"
    );
}

#[test]
fn a_run_with_a_campaign_gets_a_nemesis_page_linked_from_its_report_and_nav() {
    let dir = results(&[
        ("shared_cap.json", "shared_cap.json"),
        ("nemesis/shared_cap.json", "nemesis/shared_cap.json"),
    ]);
    let out = tempfile::tempdir().unwrap();
    let report = site::build(dir.path(), out.path()).unwrap();
    let root = out.path();
    let page = read(&root.join("shared_cap/nemesis.html"));
    support::snapshot("shared_cap_nemesis", &page);
    assert!(report.pages.contains(&root.join("shared_cap/nemesis.html")));
    let file: verify::shared_cap::nemesis::record::CapNemesisFile =
        serde_json::from_slice(&std::fs::read(cap_fixture("nemesis/shared_cap.json")).unwrap())
            .unwrap();
    for s in &file.summary {
        assert!(page.contains(&format!("id=\"{}-{}\"", s.nemesis, s.column)));
    }
    for n in &file.plan.nemeses {
        let what = verify::shared_cap::nemesis::describe(n).replace('\'', "&#39;");
        assert!(page.contains(&what[1..]), "{n}");
    }
    for t in file.trials.iter().filter(|t| !t.cell.invariant_held) {
        assert!(page.contains(&format!("id=\"trial-{}\"", t.id)), "{}", t.id);
    }
    assert!(page.contains(&file.environment.command));
    assert!(
        page.contains("violations.interlock = 0"),
        "the prose's claim"
    );
    assert_eq!(
        std::fs::read(root.join("data/shared_cap.nemesis.json")).unwrap(),
        std::fs::read(cap_fixture("nemesis/shared_cap.json")).unwrap()
    );
    for page in ["index.html", "ids.html"] {
        let html = read(&root.join("shared_cap").join(page));
        assert!(html.contains("href=\"nemesis.html\""), "{page} links it");
    }
    let index = read(&root.join("index.html"));
    assert!(index.contains("href=\"shared_cap/nemesis.html\""));
    // The front page quotes the campaign beside the matrix, so it names the campaign's commit
    // too (the two files may come from different commits).
    assert!(index.contains("For the campaign: "), "{index}");
    assert!(support::assert_links_resolve(root) > 50);
}

#[test]
fn a_shared_cap_campaign_that_does_not_verify_stops_the_build() {
    let dir = results(&[
        ("shared_cap.json", "shared_cap.json"),
        ("nemesis/shared_cap.json", "nemesis/shared_cap.json"),
    ]);
    let path = dir.path().join("nemesis/shared_cap.json");
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let trial = value["trials"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["cell"]["invariant_held"] == serde_json::Value::Bool(false))
        .unwrap();
    trial["cell"]["invariant_held"] = serde_json::Value::Bool(true);
    std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = site::build(dir.path(), out.path()).unwrap_err().to_string();
    assert!(err.contains("failed verification"), "{err}");
    assert!(err.contains("nemesis/shared_cap.json"), "{err}");
    assert!(
        !out.path().join("index.html").exists(),
        "nothing is written"
    );
}

#[test]
fn a_one_host_campaign_does_not_join_the_two_host_run() {
    let dir = results(&[
        ("shared_cap_two_hosts.json", "shared_cap_two_hosts.json"),
        (
            "nemesis/shared_cap.json",
            "nemesis/shared_cap_two_hosts.json",
        ),
    ]);
    let out = tempfile::tempdir().unwrap();
    let err = site::build(dir.path(), out.path()).unwrap_err().to_string();
    assert!(err.contains("cannot join"), "{err}");
}

/// The key a fixture names itself (`environment.public_key`), as its publisher would hand it out.
fn key_of(fixture: &str) -> [u8; 32] {
    let value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cap_fixture(fixture)).unwrap()).unwrap();
    let hex = value["environment"]["public_key"].as_str().unwrap();
    verify::entry::decode_lower_hex::<32>(hex).unwrap()
}

#[test]
fn a_pinned_shared_cap_report_says_its_key_was_pinned_not_named_by_the_file() {
    let dir = results(&[("shared_cap.json", "shared_cap.json")]);
    let out = tempfile::tempdir().unwrap();
    let options = site::BuildOptions {
        pinned_key: Some(key_of("shared_cap.json")),
        ..site::BuildOptions::default()
    };
    site::build_with(dir.path(), out.path(), &options).unwrap();
    let report = read(&out.path().join("shared_cap/index.html"));
    assert!(!report.contains("named by the file itself"), "{report}");
    assert!(report.contains("(pinned:"), "{report}");
    let unpinned = tempfile::tempdir().unwrap();
    site::build(dir.path(), unpinned.path()).unwrap();
    let report = read(&unpinned.path().join("shared_cap/index.html"));
    assert!(report.contains("named by the file itself"), "{report}");
}

#[test]
fn a_pinned_shared_cap_campaign_page_says_its_key_was_pinned_not_named_by_the_file() {
    let dir = results(&[("nemesis/shared_cap.json", "nemesis/shared_cap.json")]);
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key_of("nemesis/shared_cap.json")).unwrap();
    let prose = site::prose::load("shared_cap", &site::ProseSource::Embedded).unwrap();
    let page = site::cap_nemesis::render(
        dir.path(),
        "shared_cap",
        Some(&key),
        &prose.nemesis,
        &|_, _, _, _| None,
        &site::built_from::BuiltFrom::default(),
    )
    .unwrap()
    .unwrap();
    assert!(
        !page.html.contains("named by the file itself"),
        "{}",
        page.html
    );
    assert!(page.html.contains("(pinned:"), "{}", page.html);
}

/// Every page a build writes, by its path under the output directory.
fn pages(root: &Path) -> std::collections::BTreeMap<PathBuf, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let text = read(&path);
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), text);
            }
        }
    }
    out
}

/// A campaign stored compressed (`nemesis/<run name>.json.gz`, as the runner writes it) gives
/// the same pages as its plain form but for the links to its data file, which is published as
/// it is stored (`data/<run name>.nemesis.json.gz`); both forms side by side are refused, naming
/// both; a compressed file that does not decompress stops the build, naming it.
#[test]
fn a_compressed_campaign_gives_the_same_pages_and_is_published_compressed() {
    let plain = results(&[
        ("shared_cap.json", "shared_cap.json"),
        ("nemesis/shared_cap.json", "nemesis/shared_cap.json"),
    ]);
    let packed = results(&[("shared_cap.json", "shared_cap.json")]);
    let text = std::fs::read(cap_fixture("nemesis/shared_cap.json")).unwrap();
    let gz = verify::input::compress(&text).unwrap();
    let gz_path = packed.path().join("nemesis/shared_cap.json.gz");
    std::fs::create_dir_all(gz_path.parent().unwrap()).unwrap();
    std::fs::write(&gz_path, &gz).unwrap();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    site::build(plain.path(), a.path()).unwrap();
    site::build(packed.path(), b.path()).unwrap();
    let (pa, pb) = (pages(a.path()), pages(b.path()));
    assert_eq!(pa.keys().collect::<Vec<_>>(), pb.keys().collect::<Vec<_>>());
    let mut differ = 0;
    for (name, html) in &pa {
        let other = &pb[name];
        if html != other {
            differ += 1;
            assert_eq!(
                html.replace("shared_cap.nemesis.json", "DATA"),
                other.replace("shared_cap.nemesis.json.gz", "DATA"),
                "{}",
                name.display()
            );
        }
    }
    assert!(differ > 0, "the nemesis page links its data file");
    assert!(read(&b.path().join("shared_cap/nemesis.html")).contains("shared_cap.nemesis.json.gz"));
    assert_eq!(
        std::fs::read(b.path().join("data/shared_cap.nemesis.json.gz")).unwrap(),
        gz,
        "published as stored"
    );
    assert!(!b.path().join("data/shared_cap.nemesis.json").exists());
    assert!(support::assert_links_resolve(b.path()) > 50);

    // Both forms at once: which to publish would be a guess.
    std::fs::copy(
        cap_fixture("nemesis/shared_cap.json"),
        packed.path().join("nemesis/shared_cap.json"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = site::build(packed.path(), out.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nemesis/shared_cap.json:") && err.contains("nemesis/shared_cap.json.gz"),
        "{err}"
    );
    std::fs::remove_file(packed.path().join("nemesis/shared_cap.json")).unwrap();

    // Cut short.
    std::fs::write(&gz_path, &gz[..gz.len() / 2]).unwrap();
    let err = site::build(packed.path(), out.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("shared_cap.json.gz") && err.contains("truncated or corrupt"),
        "{err}"
    );
}
