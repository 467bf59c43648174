//! The pr_merge skeleton through the runner's registry: named on the command line, refused with
//! why before anything runs, and left out of `--scenario all`'s list.
#![allow(clippy::expect_used)]

use std::process::Command;

fn runner(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .output()
        .expect("the runner binary starts");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn pr_merge_is_a_scenario_the_runner_refuses_to_run_yet() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("out");
    let out = out.to_str().expect("a UTF-8 path");
    for args in [
        &["--scenario", "pr_merge", "--out", out][..],
        &["--scenario", "pr_merge", "--nemesis", "all", "--out", out][..],
    ] {
        let (code, stderr) = runner(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("--scenario pr_merge cannot be run yet: its rules (verify)"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

#[test]
fn a_campaign_without_a_scenario_lists_only_scenarios_that_run() {
    let (code, stderr) = runner(&["--scenario", "all", "--nemesis", "all"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--scenario billing_credit"), "{stderr}");
    assert!(!stderr.contains("pr_merge"), "{stderr}");
}

#[test]
fn help_names_pr_merge_among_the_scenarios() {
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--help")
        .output()
        .expect("the runner binary starts");
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("pr_merge"), "{help}");
}
