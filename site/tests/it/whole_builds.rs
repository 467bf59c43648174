//! A site is built whole: a rebuild leaves no page of an earlier build, a failed build leaves the
//! previous site as it was, and a folder holding anything but a site is refused untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use site::{build, SiteError};
use std::path::Path;

/// A results directory holding one genuine pr_merge file.
fn results() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let file = synthetic::pr_merge::signed_file(&SigningKey::from_bytes(&[31; 32]));
    std::fs::write(
        dir.path().join("pr_merge.json"),
        serde_json::to_vec(&file).unwrap(),
    )
    .unwrap();
    dir
}

/// Every file under `dir`, as paths relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_rebuild_leaves_no_page_of_an_earlier_build() {
    let data = results();
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("public");
    build(data.path(), &out).unwrap();
    let first = tree(&out);
    // A page an earlier build wrote that this one does not (another scenario, another run).
    std::fs::create_dir_all(out.join("old_scenario")).unwrap();
    std::fs::write(out.join("old_scenario/index.html"), "stale").unwrap();
    let report = build(data.path(), &out).unwrap();
    assert_eq!(tree(&out), first);
    assert!(report.index.ends_with("public/index.html"), "{report:?}");
    assert!(report.index.is_file());
    // Nothing of the build is left beside the folder.
    let beside: Vec<_> = std::fs::read_dir(root.path()).unwrap().flatten().collect();
    assert_eq!(beside.len(), 1, "{beside:?}");
}

#[test]
fn a_failed_build_leaves_the_previous_site_as_it_was() {
    let data = results();
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("public");
    build(data.path(), &out).unwrap();
    let before = tree(&out);
    let index = std::fs::read(out.join("index.html")).unwrap();
    // A file that fails verification: the build stops before it writes anything.
    std::fs::write(data.path().join("stray.json"), "{}").unwrap();
    assert!(build(data.path(), &out).is_err());
    assert_eq!(tree(&out), before);
    assert_eq!(std::fs::read(out.join("index.html")).unwrap(), index);
    let beside: Vec<_> = std::fs::read_dir(root.path()).unwrap().flatten().collect();
    assert_eq!(beside.len(), 1, "{beside:?}");
}

#[test]
fn a_folder_holding_something_else_is_refused_and_left_untouched() {
    let data = results();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("notes.txt"), "mine").unwrap();
    let e = build(data.path(), out.path()).unwrap_err();
    assert!(matches!(e, SiteError::NotASiteFolder { .. }), "{e}");
    // What to do, said once.
    let said = e.to_string();
    assert!(
        said.contains("empty it, remove it, or choose another"),
        "{e}"
    );
    assert_eq!(said.matches("choose").count(), 1, "{e}");
    assert_eq!(tree(out.path()), vec!["notes.txt".to_owned()]);
}

#[test]
fn a_folder_with_an_index_and_a_stylesheet_but_no_marker_is_not_taken_for_a_site() {
    let data = results();
    let root = tempfile::tempdir().unwrap();
    let web = root.path().join("myweb");
    std::fs::create_dir_all(web.join("src")).unwrap();
    for (file, text) in [
        ("index.html", "hi"),
        ("style.css", "body{}"),
        ("notes.txt", "precious"),
        ("src/app.js", "x"),
    ] {
        std::fs::write(web.join(file), text).unwrap();
    }
    let before = tree(&web);
    match build(data.path(), &web) {
        Err(SiteError::NotASiteFolder { why, .. }) => {
            assert!(why.contains(".interlock-site"), "{why}")
        }
        other => panic!("not refused: {:?}", other.map(|_| ())),
    }
    assert_eq!(tree(&web), before, "nothing of it was touched");
    // A folder a build wrote carries the marker, and is replaced.
    let out = root.path().join("public");
    build(data.path(), &out).unwrap();
    assert!(out.join(".interlock-site").is_file());
    build(data.path(), &out).unwrap();
}

#[test]
fn results_inside_the_output_folder_are_refused_before_anything_is_written() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("public");
    build(results().path(), &out).unwrap();
    // The runner's --out inside the site, or the same folder: the swap would delete them.
    for inside in [out.clone(), out.join("data")] {
        let before = tree(&out);
        match build(&inside, &out) {
            Err(SiteError::NotASiteFolder { why, .. }) => {
                assert!(why.contains("results folder is inside it"), "{why}")
            }
            other => panic!("{} not refused: {:?}", inside.display(), other.map(|_| ())),
        }
        assert_eq!(tree(&out), before);
        assert!(site::check_folders(&out, &inside).is_err());
    }
    assert!(site::check_folders(&out, root.path().join("results").as_path()).is_ok());
}

#[test]
fn a_build_removes_what_a_killed_build_left_beside_the_folder() {
    let data = results();
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("public");
    // No process has this id (above the kernel's pid_max).
    for kind in ["building", "old"] {
        let left = root.path().join(format!(".public.{kind}-4194305"));
        std::fs::create_dir_all(&left).unwrap();
        std::fs::write(left.join("index.html"), "left").unwrap();
    }
    // A build of another folder's name is not this build's to remove.
    let other = root.path().join(".site.building-4194305");
    std::fs::create_dir_all(&other).unwrap();
    build(data.path(), &out).unwrap();
    let beside: Vec<String> = std::fs::read_dir(root.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(beside.contains(&"public".to_owned()), "{beside:?}");
    assert!(
        beside.contains(&".site.building-4194305".to_owned()),
        "{beside:?}"
    );
    assert!(
        !beside.iter().any(|b| b.starts_with(".public.")),
        "{beside:?}"
    );
}

#[test]
fn a_matrix_and_a_campaign_signed_by_two_keys_name_both_where_the_signer_is_named() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir_all(results.join("nemesis")).unwrap();
    for name in ["billing_credit.json", "nemesis/billing_credit.json.gz"] {
        std::fs::copy(root.join(name), results.join(name)).unwrap();
    }
    let out = dir.path().join("public");
    site::build(&results, &out).unwrap();
    let page = std::fs::read_to_string(out.join("billing_credit/index.html")).unwrap();
    let signer = page
        .split("Signer: ")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap();
    // The published matrix and campaign were made by two runs, each with its own per-run key.
    assert_eq!(signer.matches("SHA256:").count(), 2, "{signer}");
    assert!(signer.contains("two runs, two keys"), "{signer}");
}
