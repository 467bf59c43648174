//! The `site` binary end to end: exit codes (0 built, 1 a check failed, 2 could not build, as
//! `verify` has them) and one error line on stderr, every input checked before any work.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::process::Command;

/// `site ARGS`: the exit code, standard output and standard error.
fn site(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_site"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// One line on stderr, in the tools' style, saying how to fix it; nothing on stdout.
fn assert_one_error_line(code: Option<i32>, stdout: &str, stderr: &str, want: i32) {
    assert_eq!(code, Some(want), "{stderr}");
    assert_eq!(stdout, "", "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("site: error: "), "{stderr}");
}

#[test]
fn a_missing_results_directory_exits_2_with_the_os_error_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("public");
    let (code, stdout, stderr) =
        site(&["build", "--results", "/nonexistent", "--out", &shown(&out)]);
    assert_one_error_line(code, &stdout, &stderr, 2);
    assert!(
        stderr.contains("--results /nonexistent: cannot read: "),
        "{stderr}"
    );
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
    assert!(stderr.contains("; pass the directory"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn a_results_file_given_as_the_directory_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = support::fixture_dir().join("billing_credit.json");
    let (code, stdout, stderr) = site(&[
        "build",
        "--results",
        &shown(&file),
        "--out",
        &shown(&tmp.path().join("o")),
    ]);
    assert_one_error_line(code, &stdout, &stderr, 2);
    assert!(
        stderr.contains("not a directory; pass the directory"),
        "{stderr}"
    );
}

#[test]
fn a_directory_without_results_exits_2_saying_where_results_come_from() {
    let empty = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = site(&[
        "build",
        "--results",
        &shown(empty.path()),
        "--out",
        &shown(&empty.path().join("o")),
    ]);
    assert_one_error_line(code, &stdout, &stderr, 2);
    assert!(stderr.contains("no results file (*.json)"), "{stderr}");
    assert!(
        stderr.contains("runner --scenario billing_credit"),
        "{stderr}"
    );
}

/// An `--out` that cannot be written is found before any results file is read or rendered, and
/// the OS error is printed once (the error used to print its source a second time).
#[test]
fn an_unwritable_out_exits_2_before_any_rendering() {
    let tmp = tempfile::tempdir().unwrap();
    let blocker = tmp.path().join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let results = shown(&support::fixture_dir());
    for out in [blocker.clone(), blocker.join("sub")] {
        let started = std::time::Instant::now();
        let (code, stdout, stderr) = site(&["build", "--results", &results, "--out", &shown(&out)]);
        assert_one_error_line(code, &stdout, &stderr, 2);
        assert!(
            stderr.contains(&format!("--out {}", out.display())),
            "{stderr}"
        );
        assert!(
            stderr.contains("; pass a directory you can write"),
            "{stderr}"
        );
        assert!(stderr.matches("(os error").count() <= 1, "{stderr}");
        assert!(started.elapsed().as_secs() < 10);
    }
    assert_eq!(std::fs::read(&blocker).unwrap(), b"");
}

#[test]
fn a_results_file_that_fails_verification_exits_1() {
    let results = support::edited_fixture(|v| {
        let cells = v["cells"].as_array_mut().unwrap();
        let cell = cells
            .iter_mut()
            .find(|c| c["column"] == "no_check" && c["invariant_held"] == false)
            .unwrap();
        cell["invariant_held"] = serde_json::Value::Bool(true);
    });
    let out = results.path().join("public");
    let (code, stdout, stderr) = site(&[
        "build",
        "--results",
        &shown(results.path()),
        "--out",
        &shown(&out),
    ]);
    assert_one_error_line(code, &stdout, &stderr, 1);
    assert!(stderr.contains("failed verification"), "{stderr}");
    assert!(!out.exists());
}

/// A results file cut short is not a file that failed verification: it could not be checked, as
/// `verify` says with 2.
#[test]
fn a_results_file_cut_short_exits_2_like_verify() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let whole =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json"))
            .unwrap();
    std::fs::write(results.join("billing_credit.json"), &whole[..50_000]).unwrap();
    let out = dir.path().join("public");
    let (code, stdout, stderr) = site(&[
        "build",
        "--results",
        &shown(&results),
        "--out",
        &shown(&out),
    ]);
    assert_one_error_line(code, &stdout, &stderr, 2);
    assert!(stderr.contains("cannot check"), "{stderr}");
}

#[test]
fn bad_arguments_exit_2_on_one_line() {
    for args in [
        &["build", "--bogus"][..],
        &[][..],
        &["build", "--key", "abcd"][..],
    ] {
        let (code, stdout, stderr) = site(args);
        assert_one_error_line(code, &stdout, &stderr, 2);
    }
}

#[test]
fn help_wraps_at_100_columns_without_a_terminal() {
    for args in [&["--help"][..], &["build", "--help"][..]] {
        let (code, stdout, _) = site(args);
        assert_eq!(code, Some(0));
        let widest = stdout.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(
            widest <= 100,
            "{args:?}: a help line of {widest} characters"
        );
        let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        for code in [
            "Exit status: 0 the site was written;",
            "1 a check failed",
            "2 could not build",
        ] {
            assert!(flat.contains(code), "{args:?}: {code} not in: {stdout}");
        }
    }
}

/// `site build` in `cwd` (outside any checkout, so git knows no history) with `args` after
/// `build`; the exit code and stderr.
fn site_in(cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_site"))
        .current_dir(cwd)
        .env_remove("GITHUB_SHA")
        .arg("build")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 35, item 7: every page says at which commit its data was made and how that stands to
/// the commit the site was built from (`--commit`, else GITHUB_SHA, else git's HEAD).
#[test]
fn the_pages_compare_the_data_commit_with_the_commit_given() {
    let tmp = tempfile::tempdir().unwrap();
    let results = support::fixture_dir();
    let data = "7d3e2af608882abf26b6e26e3ff4147a3cb5f485";
    let cases = [
        (Some(data), "Data made at commit 7d3e2af60888, the commit this site was built from."),
        (
            Some("1111111111111111111111111111111111111111"),
            "Data made at commit 7d3e2af60888, not the commit this site was built from (111111111111); how far apart they are is not known here.",
        ),
        (None, "Data made at commit 7d3e2af60888; the commit this site was built from is not known."),
    ];
    for (i, (commit, words)) in cases.into_iter().enumerate() {
        let out = tmp.path().join(format!("o{i}"));
        let mut args = vec![
            "--results",
            results.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if let Some(c) = commit {
            args.extend(["--commit", c]);
        }
        let (code, stderr) = site_in(tmp.path(), &args);
        assert_eq!(code, Some(0), "{stderr}");
        for page in [
            "index.html",
            "billing_credit/index.html",
            "billing_credit/ids.html",
        ] {
            let html = std::fs::read_to_string(out.join(page)).unwrap();
            assert!(html.contains(words), "{page} lacks {words:?}");
        }
    }
}

#[test]
fn a_commit_that_is_not_a_full_hash_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    for bad in ["HEAD", "7d3e2af..HEAD", "7d3e2af"] {
        let (code, stderr) = site_in(
            tmp.path(),
            &[
                "--results",
                support::fixture_dir().to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--commit",
                bad,
            ],
        );
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("not a full commit hash"), "{bad}: {stderr}");
    }
}

#[test]
fn a_full_or_closed_standard_output_silences_the_build_line_not_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/pr_merge.json");
    std::fs::copy(published, results.join("pr_merge.json")).unwrap();
    let out = dir.path().join("public");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_site"))
        .arg("build")
        .arg("--results")
        .arg(&results)
        .arg("--out")
        .arg(&out)
        .stdout(full)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(out.join("index.html").is_file());
}
