//! A stable signer through real processes: `runner keygen` makes a key, a run with
//! `--signing-key` (and one with `INTERLOCK_SIGNING_KEY`) is signed by it and passes
//! `verify --signers` with the printed line, and a key file others can read is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn runner(args: &[&str], out: &Path, env_key: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.args(["--scenario", "billing_credit", "--no-site", "--jobs", "1"])
        .args(["--cells", "after_send:renewal:interlock"])
        .arg("--out")
        .arg(out)
        .args(args)
        .env_remove("INTERLOCK_EMULATOR_RATE_LIMIT")
        .env_remove("INTERLOCK_SIGNING_KEY");
    if let Some(k) = env_key {
        cmd.env("INTERLOCK_SIGNING_KEY", k);
    }
    cmd.output().unwrap()
}

fn signer_of(dir: &Path) -> String {
    let bytes = std::fs::read(dir.join("billing_credit.json")).unwrap();
    verify::load::load_results(&bytes)
        .unwrap()
        .environment
        .signer
}

#[test]
fn a_run_signed_with_the_project_key_passes_under_the_signers_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("project.key");
    let made = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "keygen",
            key.to_str().unwrap(),
            "--comment",
            "test project key",
        ])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let line = String::from_utf8(made.stdout).unwrap();
    let public = line.split_whitespace().next().unwrap().to_owned();
    let signers = dir.path().join("SIGNERS");
    std::fs::write(&signers, &line).unwrap();

    let by_file = dir.path().join("by-file");
    let out = runner(&["--signing-key", key.to_str().unwrap()], &by_file, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(signer_of(&by_file), public);

    let by_env = dir.path().join("by-env");
    let secret = std::fs::read_to_string(&key).unwrap();
    let out = runner(&[], &by_env, Some(&secret));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(signer_of(&by_env), public);

    for run in [&by_file, &by_env] {
        let results = run.join("billing_credit.json");
        let checked = verify::cli::check_file(
            &results,
            &verify::cli::Pinned::Keys(verify::keys::parse_signers(&line).unwrap()),
        );
        assert_eq!(checked.0, verify::cli::Status::Ok, "{:?}", checked.1);
    }

    // A per-run key is not in the signers file.
    let per_run = dir.path().join("per-run");
    let out = runner(&[], &per_run, None);
    assert!(out.status.success());
    assert_ne!(signer_of(&per_run), public);
    let checked = verify::cli::check_file(
        &per_run.join("billing_credit.json"),
        &verify::cli::Pinned::Keys(verify::keys::parse_signers(&line).unwrap()),
    );
    assert_eq!(checked.0, verify::cli::Status::Failed, "{:?}", checked.1);
}

#[test]
fn a_key_file_others_can_read_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("loose.key");
    std::fs::write(&key, "11".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = runner(
        &["--signing-key", key.to_str().unwrap()],
        &dir.path().join("out"),
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("readable by group or others") && err.contains("chmod 600"),
        "{err}"
    );
    assert!(!dir.path().join("out/billing_credit.json").exists());
}
