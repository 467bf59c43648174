//! The `git` command line, run against one bare repository with a fixed environment: no user or
//! system configuration, a fixed identity per actor and dates the caller chooses, so that the same
//! operations make the same objects on any machine.

use crate::ForgeError;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The instant every repository's clock starts from (2026-01-01T00:00:00Z). Each reference
/// update of a repository happens one second after the one before (see [`Git::next_tick`]), so
/// the reflogs of different branches can be put in one order by their timestamps.
pub(crate) const EPOCH: u64 = 1_767_225_600;

/// The all-zero object name: "the reference must not exist yet" in a compare-and-swap.
const ZERO: &str = "0000000000000000000000000000000000000000";

/// Who a git operation is done as: its author and committer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Actor {
    /// The harness setting up a case.
    Setup,
    /// The caller of the HTTP API (the service has no authentication: one user).
    Agent,
    /// Someone else who merges the pull request during an outage.
    Other,
    /// A person who pushes an unreviewed commit, or lands an unrelated one on the base.
    Person,
}

impl Actor {
    /// The login shown as `merged_by` and used as the git name.
    pub(crate) fn login(self) -> &'static str {
        match self {
            Actor::Setup => "case-setup",
            Actor::Agent => "agent",
            Actor::Other => "someone-else",
            Actor::Person => "a-person",
        }
    }
}

/// A commit as the commits endpoint lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitInfo {
    /// Its object name.
    pub sha: String,
    /// Its parents' object names, first parent first.
    pub parents: Vec<String>,
    /// Its whole message.
    pub message: String,
}

/// One entry of a branch's reflog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReflogEntry {
    /// The commit the branch moved to.
    pub commit: String,
    /// When (seconds since the Unix epoch, from the committer date of the update).
    pub at: u64,
}

/// One bare repository.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    dir: PathBuf,
}

/// Whether `s` is a full object name as git prints it.
pub(crate) fn is_object_name(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Git {
    /// The repository at `dir` (not checked).
    pub(crate) fn at(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
        }
    }

    /// Creates a bare repository at `dir` whose first branch is `main`, with every reference
    /// update logged (`core.logAllRefUpdates=always`) and no automatic garbage collection (which
    /// could expire reflog entries).
    pub(crate) fn init_bare(dir: &Path) -> Result<Git, ForgeError> {
        let git = Git::at(dir);
        let mut init = git.base_command(Actor::Setup, EPOCH);
        init.arg("init")
            .arg("--quiet")
            .arg("--bare")
            .arg("--initial-branch=main")
            .arg(dir);
        git.finish(init, &["init"], None)?;
        git.run(&["config", "core.logAllRefUpdates", "always"])?;
        git.run(&["config", "gc.auto", "0"])?;
        Ok(git)
    }

    /// A `git` command for this repository with the fixed environment, as `who` at `at`.
    fn base_command(&self, who: Actor, at: u64) -> Command {
        let mut cmd = Command::new("git");
        cmd.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        let date = format!("{at} +0000");
        let email = format!("{}@users.noreply.forge.invalid", who.login());
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .env("GIT_AUTHOR_NAME", who.login())
            .env("GIT_AUTHOR_EMAIL", &email)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_NAME", who.login())
            .env("GIT_COMMITTER_EMAIL", &email)
            .env("GIT_COMMITTER_DATE", &date);
        let mut git_dir = OsString::from("--git-dir=");
        git_dir.push(self.dir.as_os_str());
        cmd.arg(git_dir);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `cmd` (described by `args` in errors), feeding it `input`; its output whatever the
    /// exit status.
    fn finish(
        &self,
        mut cmd: Command,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<Output, ForgeError> {
        let spawn_error = |source| ForgeError::GitSpawn {
            args: args.join(" "),
            source,
        };
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(spawn_error)?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(bytes).map_err(spawn_error)?;
        }
        child.wait_with_output().map_err(spawn_error)
    }

    /// Runs `git args` as `who` at `at` with `input`; its standard output when it succeeds.
    fn run_as(
        &self,
        args: &[&str],
        who: Actor,
        at: u64,
        input: Option<&[u8]>,
    ) -> Result<String, ForgeError> {
        let mut cmd = self.base_command(who, at);
        cmd.args(args);
        let out = self.finish(cmd, args, input)?;
        if !out.status.success() {
            return Err(failed(args, &out));
        }
        String::from_utf8(out.stdout).map_err(|_| ForgeError::GitOutput {
            args: args.join(" "),
            reason: "not UTF-8".into(),
        })
    }

    /// Runs a read-only `git args`; its standard output when it succeeds.
    fn run(&self, args: &[&str]) -> Result<String, ForgeError> {
        self.run_as(args, Actor::Setup, EPOCH, None)
    }

    /// The commit `rev` names, or `None` when it names none.
    pub(crate) fn resolve(&self, rev: &str) -> Result<Option<String>, ForgeError> {
        let spec = format!("{rev}^{{commit}}");
        let args = [
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ];
        let mut cmd = self.base_command(Actor::Setup, EPOCH);
        cmd.args(args);
        let out = self.finish(cmd, &args, None)?;
        if !out.status.success() {
            return Ok(None);
        }
        let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
        object_name(&args, sha).map(Some)
    }

    /// The commit branch `branch` points at; an error when it does not exist.
    pub(crate) fn branch_head(&self, branch: &str) -> Result<String, ForgeError> {
        self.resolve(&format!("refs/heads/{branch}"))?
            .ok_or_else(|| ForgeError::GitOutput {
                args: format!("rev-parse refs/heads/{branch}"),
                reason: "the branch does not exist".into(),
            })
    }

    /// A new commit on top of `parent` (or a root commit) whose tree is the parent's with the
    /// top-level file `path` set to `content`.
    pub(crate) fn commit_file(
        &self,
        parent: Option<&str>,
        path: &str,
        content: &str,
        message: &str,
        who: Actor,
        at: u64,
    ) -> Result<String, ForgeError> {
        let blob = self.run_as(
            &["hash-object", "-w", "--stdin"],
            who,
            at,
            Some(content.as_bytes()),
        )?;
        let blob = object_name(&["hash-object"], blob.trim().to_string())?;
        let mut entries = String::new();
        if let Some(parent) = parent {
            let listing = self.run(&["ls-tree", "--end-of-options", parent])?;
            for line in listing.lines() {
                let name = line.split_once('\t').map(|(_, name)| name);
                if name != Some(path) {
                    entries.push_str(line);
                    entries.push('\n');
                }
            }
        }
        entries.push_str(&format!("100644 blob {blob}\t{path}\n"));
        let tree = self.run_as(&["mktree"], who, at, Some(entries.as_bytes()))?;
        let tree = object_name(&["mktree"], tree.trim().to_string())?;
        let parents: Vec<&str> = parent.into_iter().collect();
        self.commit_tree(&tree, &parents, message, who, at)
    }

    /// A new commit of `tree` with `parents` (in order) and `message`, made as `who` at `at`.
    pub(crate) fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
        who: Actor,
        at: u64,
    ) -> Result<String, ForgeError> {
        let mut args = vec!["commit-tree"];
        for p in parents {
            args.push("-p");
            args.push(p);
        }
        args.push("--end-of-options");
        args.push(tree);
        let sha = self.run_as(&args, who, at, Some(message.as_bytes()))?;
        object_name(&args, sha.trim().to_string())
    }

    /// The tree of merging `theirs` into `ours`, or `None` when they do not merge cleanly.
    pub(crate) fn merge_tree(
        &self,
        ours: &str,
        theirs: &str,
    ) -> Result<Option<String>, ForgeError> {
        let args = [
            "merge-tree",
            "--write-tree",
            "--end-of-options",
            ours,
            theirs,
        ];
        let mut cmd = self.base_command(Actor::Setup, EPOCH);
        cmd.args(args);
        let out = self.finish(cmd, &args, None)?;
        match out.status.code() {
            Some(0) => {
                let text = String::from_utf8_lossy(&out.stdout);
                let tree = text.lines().next().unwrap_or_default().trim().to_string();
                object_name(&args, tree).map(Some)
            }
            // 1: the merge has conflicts (the tree is written, but it is not clean)
            Some(1) => Ok(None),
            _ => Err(failed(&args, &out)),
        }
    }

    /// Moves branch `branch` to `new` if it is at `old` now (`None`: if it does not exist yet),
    /// logging `reason` in its reflog as `who` at `at`. `Ok(false)` when the branch was not at
    /// `old` (nothing changed).
    pub(crate) fn update_branch(
        &self,
        branch: &str,
        new: &str,
        old: Option<&str>,
        reason: &str,
        who: Actor,
        at: u64,
    ) -> Result<bool, ForgeError> {
        let name = format!("refs/heads/{branch}");
        let old = old.unwrap_or(ZERO);
        let args = ["update-ref", "-m", reason, &name, new, old];
        if self.resolve(&name)?.as_deref().unwrap_or(ZERO) != old {
            return Ok(false);
        }
        let mut cmd = self.base_command(who, at);
        cmd.args(args);
        let out = self.finish(cmd, &args, None)?;
        if out.status.success() {
            return Ok(true);
        }
        // Lost a race against a writer outside this process: the branch is not at `old`.
        if self.resolve(&name)?.as_deref().unwrap_or(ZERO) != old {
            return Ok(false);
        }
        Err(failed(&args, &out))
    }

    /// Whether `ancestor` is reachable from `descendant` (or is it).
    pub(crate) fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, ForgeError> {
        let args = [
            "merge-base",
            "--is-ancestor",
            "--end-of-options",
            ancestor,
            descendant,
        ];
        let mut cmd = self.base_command(Actor::Setup, EPOCH);
        cmd.args(args);
        let out = self.finish(cmd, &args, None)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(&args, &out)),
        }
    }

    /// The reflog of branch `branch`, oldest entry first (empty when it has none).
    pub(crate) fn reflog(&self, branch: &str) -> Result<Vec<ReflogEntry>, ForgeError> {
        let name = format!("refs/heads/{branch}");
        let args = [
            "reflog",
            "show",
            "--date=unix",
            "--format=%H %gd",
            "--end-of-options",
            &name,
        ];
        if self.resolve(&name)?.is_none() {
            return Ok(Vec::new());
        }
        let text = self.run(&args)?;
        let mut entries = text
            .lines()
            .map(|line| parse_reflog_line(&args, line))
            .collect::<Result<Vec<_>, _>>()?;
        entries.reverse();
        Ok(entries)
    }

    /// The branches of the repository.
    pub(crate) fn branches(&self) -> Result<Vec<String>, ForgeError> {
        let text = self.run(&["for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads"])?;
        Ok(text.lines().map(str::to_string).collect())
    }

    /// The instant for the next reference update: one second after the latest entry of any
    /// branch's reflog (the repository's first update is at [`EPOCH`] + 1).
    pub(crate) fn next_tick(&self) -> Result<u64, ForgeError> {
        let mut latest = EPOCH;
        for branch in self.branches()? {
            if let Some(last) = self.reflog(&branch)?.last() {
                latest = latest.max(last.at);
            }
        }
        Ok(latest + 1)
    }

    /// The parents of `commit`, first parent first.
    pub(crate) fn parents(&self, commit: &str) -> Result<Vec<String>, ForgeError> {
        let args = [
            "rev-list",
            "--parents",
            "-n",
            "1",
            "--end-of-options",
            commit,
        ];
        let text = self.run(&args)?;
        let mut names = text.split_whitespace().map(str::to_string);
        let first = names.next();
        if first.as_deref() != Some(commit) {
            return Err(ForgeError::GitOutput {
                args: args.join(" "),
                reason: format!("expected the commit itself first, got {first:?}"),
            });
        }
        names.map(|n| object_name(&args, n)).collect()
    }

    /// The number of commits reachable from `commit`.
    pub(crate) fn count(&self, commit: &str) -> Result<u64, ForgeError> {
        let args = ["rev-list", "--count", "--end-of-options", commit];
        let text = self.run(&args)?;
        text.trim().parse().map_err(|_| ForgeError::GitOutput {
            args: args.join(" "),
            reason: format!("not a count: {text:?}"),
        })
    }

    /// Up to `max` commits reachable from `commit`, newest first, after skipping `skip`.
    pub(crate) fn log(
        &self,
        commit: &str,
        skip: u64,
        max: u64,
    ) -> Result<Vec<CommitInfo>, ForgeError> {
        let skip = format!("--skip={skip}");
        let max = format!("--max-count={max}");
        // Fields end with NUL, records with the record separator: neither occurs in a message.
        let args = [
            "log",
            "--format=%H%x00%P%x00%B%x00%x1e",
            &skip,
            &max,
            "--end-of-options",
            commit,
        ];
        let text = self.run(&args)?;
        text.split('\u{1e}')
            .map(|record| record.trim_start_matches('\n'))
            .filter(|record| !record.is_empty())
            .map(|record| parse_log_record(&args, record))
            .collect()
    }
}

/// The error for a git command that exited unsuccessfully.
fn failed(args: &[&str], out: &Output) -> ForgeError {
    ForgeError::Git {
        args: args.join(" "),
        status: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    }
}

/// `name` if it is a full object name, else an error about the output of `args`.
fn object_name(args: &[&str], name: String) -> Result<String, ForgeError> {
    if is_object_name(&name) {
        Ok(name)
    } else {
        Err(ForgeError::GitOutput {
            args: args.join(" "),
            reason: format!("not an object name: {name:?}"),
        })
    }
}

/// `<sha> refs/heads/x@{<unix seconds>}`.
fn parse_reflog_line(args: &[&str], line: &str) -> Result<ReflogEntry, ForgeError> {
    let bad = || ForgeError::GitOutput {
        args: args.join(" "),
        reason: format!("not a reflog line: {line:?}"),
    };
    let (sha, selector) = line.split_once(' ').ok_or_else(bad)?;
    let at = selector
        .rsplit_once("@{")
        .and_then(|(_, rest)| rest.strip_suffix('}'))
        .and_then(|secs| secs.parse().ok())
        .ok_or_else(bad)?;
    Ok(ReflogEntry {
        commit: object_name(args, sha.to_string())?,
        at,
    })
}

/// `<sha> NUL <parents> NUL <message> NUL`.
fn parse_log_record(args: &[&str], record: &str) -> Result<CommitInfo, ForgeError> {
    let mut fields = record.split('\0');
    let (Some(sha), Some(parents), Some(message)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(ForgeError::GitOutput {
            args: args.join(" "),
            reason: format!("not a log record: {record:?}"),
        });
    };
    Ok(CommitInfo {
        sha: object_name(args, sha.to_string())?,
        parents: parents
            .split_whitespace()
            .map(|p| object_name(args, p.to_string()))
            .collect::<Result<_, _>>()?,
        message: message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reflog_line_gives_its_commit_and_second() {
        let sha = "a28d604265c9ff1f50d4eb977a0347818890473b";
        let line = format!("{sha} main@{{1767225601}}");
        let entry = parse_reflog_line(&["reflog"], &line);
        assert!(
            matches!(entry, Ok(ReflogEntry { ref commit, at: 1_767_225_601 }) if commit == sha)
        );
        assert!(parse_reflog_line(&["reflog"], "nonsense").is_err());
        assert!(parse_reflog_line(&["reflog"], &format!("{sha} main@{{1")).is_err());
    }

    /// Needs the `git` command line.
    #[test]
    fn a_branch_moves_only_from_the_commit_it_is_at_with_git() -> Result<(), ForgeError> {
        let dir = tempfile::tempdir().map_err(|source| ForgeError::Io {
            path: "tempdir".into(),
            source,
        })?;
        let git = Git::init_bare(&dir.path().join("r.git"))?;
        let a = git.commit_file(None, "a", "a\n", "a\n", Actor::Setup, EPOCH + 1)?;
        let b = git.commit_file(Some(&a), "b", "b\n", "b\n", Actor::Setup, EPOCH + 2)?;
        assert!(git.update_branch("main", &a, None, "create", Actor::Setup, EPOCH + 1)?);
        assert!(!git.update_branch("main", &b, None, "again", Actor::Setup, EPOCH + 2)?);
        assert!(!git.update_branch("main", &b, Some(&b), "stale", Actor::Setup, EPOCH + 2)?);
        assert_eq!(git.branch_head("main")?, a);
        assert!(git.update_branch("main", &b, Some(&a), "move", Actor::Setup, EPOCH + 2)?);
        assert_eq!(git.branch_head("main")?, b);
        let log: Vec<(String, u64)> = git
            .reflog("main")?
            .into_iter()
            .map(|e| (e.commit, e.at))
            .collect();
        assert_eq!(log, vec![(a, EPOCH + 1), (b, EPOCH + 2)]);
        assert_eq!(git.next_tick()?, EPOCH + 3);
        Ok(())
    }

    #[test]
    fn only_forty_lowercase_hex_digits_are_an_object_name() {
        assert!(is_object_name("a28d604265c9ff1f50d4eb977a0347818890473b"));
        assert!(!is_object_name("A28D604265C9FF1F50D4EB977A0347818890473B"));
        assert!(!is_object_name("a28d6042"));
    }
}
