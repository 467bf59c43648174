//! What a run says about where it came from: the commit of the code that ran, and the command
//! that reproduces it (with database passwords left out, as it is published).

use crate::clock::ClockStart;
use std::path::PathBuf;

/// The commit of the code that ran, with `-dirty` appended when tracked files differ from it (as
/// `git describe --dirty` marks it), so a published run never claims a commit it did not run.
/// The published results under `results/` are data, not code: a run written there beside
/// another one, before both are committed, does not make the next run's commit dirty.
pub(crate) fn git_commit() -> Option<String> {
    let dirs = [
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    dirs.into_iter().flatten().find_map(|dir| commit_of(&dir))
}

/// [`git_commit`] of the repository `dir` is in, if it is in one.
fn commit_of(dir: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || text.len() != 40 {
        return None;
    }
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no", "--"])
        .args([":(top)", ":(top,exclude)results"])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .map(|o| !o.status.success() || !o.stdout.is_empty())
        .unwrap_or(true);
    Some(if dirty { format!("{text}-dirty") } else { text })
}

/// `arg` as a shell reads it back: as it is when it is plain, else single-quoted.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The command that reproduces the run (the seed and the clock start made explicit).
pub(super) fn reproduce_command(seed: u64, seed_given: bool, clock_start: ClockStart) -> String {
    let mut parts = vec!["cargo run --release -p runner --".to_string()];
    parts.extend(
        std::env::args()
            .skip(1)
            .map(|a| shell_quote(&without_password(&a))),
    );
    if !seed_given {
        parts.push(format!("--seed {seed}"));
    }
    if !std::env::args().any(|a| a.starts_with("--clock-start")) {
        parts.push(format!("--clock-start {clock_start}"));
    }
    parts.join(" ")
}

/// A URL argument (`postgres://user:password@host/db`, any scheme) without its password: it is
/// published in the reproduce command and printed in errors.
pub(crate) fn without_password(arg: &str) -> String {
    // Any URL: its authority (after `scheme://`, before the first `/`) may hold `user:password@`.
    let Some(scheme) = arg.find("://") else {
        return arg.to_owned();
    };
    let rest = &arg[scheme + 3..];
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => {
            let user = authority[..at].split(':').next().unwrap_or_default();
            format!("{}{user}@{}", &arg[..scheme + 3], &rest[at + 1..])
        }
        None => arg.to_owned(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_changed_results_file_is_data_and_a_changed_source_file_makes_the_commit_dirty() {
        let repo = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(repo.path())
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(repo.path().join("results")).unwrap();
        std::fs::write(repo.path().join("results/run.json"), "{}").unwrap();
        std::fs::write(repo.path().join("code.rs"), "fn a() {}").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "c"]);
        let sub = repo.path().join("results");
        let clean = super::commit_of(&sub).unwrap();
        assert_eq!(clean.len(), 40, "{clean}");
        std::fs::write(repo.path().join("results/run.json"), "{\"new\": 1}").unwrap();
        assert_eq!(super::commit_of(&sub).unwrap(), clean);
        std::fs::write(repo.path().join("code.rs"), "fn b() {}").unwrap();
        assert_eq!(super::commit_of(&sub).unwrap(), format!("{clean}-dirty"));
    }

    #[test]
    fn published_database_urls_carry_no_password() {
        assert_eq!(
            without_password("postgres://u:secret@h:5432/db"),
            "postgres://u@h:5432/db"
        );
        assert_eq!(without_password("postgres://h/db"), "postgres://h/db");
        assert_eq!(without_password("--seed"), "--seed");
        assert_eq!(
            without_password("mysql://u:pw@h/db"),
            "mysql://u@h/db",
            "every scheme"
        );
        assert_eq!(
            without_password("postgres://u:p@ss@h/db?x=a@b"),
            "postgres://u@h/db?x=a@b"
        );
    }

    use super::*;

    #[test]
    fn quoting_keeps_specs_copy_pasteable() {
        assert_eq!(
            shell_quote("before_send:renewal:interlock"),
            "before_send:renewal:interlock"
        );
        assert_eq!(
            shell_quote("after_send:proration:*"),
            "'after_send:proration:*'"
        );
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
