//! What the harness does to a case's repository outside the HTTP API: set it up, push an
//! unreviewed commit, land an unrelated commit on the base branch. Each change is a real commit
//! and a compare-and-swap of its branch, logged in the branch's reflog.

use crate::git::{Actor, Git};
use crate::pulls::{Pull, PullRecord, PullsFile, SetupEntries};
use crate::repos::Repo;
use crate::ForgeError;

/// The base branch of every case.
pub(crate) const BASE: &str = "main";
/// The pull request's branch of every case.
pub(crate) const HEAD: &str = "feature";

/// Fills a new repository: `main` with one commit, `feature` with one commit on top (its own
/// file), and pull request #1 from `feature` into `main`.
pub(crate) fn set_up(repo: &Repo) -> Result<Pull, ForgeError> {
    let git = &repo.git;
    let name = &repo.name;
    let at = git.next_tick()?;
    let readme = format!("The repository of case {name}.\n");
    let base = git.commit_file(
        None,
        "README",
        &readme,
        "Initial commit\n",
        Actor::Setup,
        at,
    )?;
    create_branch(repo, BASE, &base, at)?;
    let at = git.next_tick()?;
    let content = format!("The change under review in case {name}.\n");
    let message = "Add the feature\n";
    let head = git.commit_file(
        Some(&base),
        "feature.txt",
        &content,
        message,
        Actor::Setup,
        at,
    )?;
    create_branch(repo, HEAD, &head, at)?;
    let record = PullRecord {
        number: 1,
        title: "Add the feature".into(),
        head_ref: HEAD.into(),
        base_ref: BASE.into(),
        setup_entries: SetupEntries {
            base: git.reflog(BASE)?.len(),
            head: git.reflog(HEAD)?.len(),
        },
        merge: None,
    };
    PullsFile {
        pulls: vec![record],
    }
    .save(repo)?;
    Ok(Pull {
        number: 1,
        head,
        base,
    })
}

fn create_branch(repo: &Repo, branch: &str, commit: &str, at: u64) -> Result<(), ForgeError> {
    let reason = format!("create {branch}");
    if repo
        .git
        .update_branch(branch, commit, None, &reason, Actor::Setup, at)?
    {
        Ok(())
    } else {
        Err(ForgeError::Moved {
            repo: repo.name.clone(),
            branch: branch.into(),
        })
    }
}

/// A new commit by [`Actor::Person`] on top of `branch`, adding the file `<stem>-<n>.txt` (`n`
/// the branch's commit count, so each is new), the branch moved to it by compare-and-swap.
fn add_commit(repo: &Repo, branch: &str, stem: &str, what: &str) -> Result<String, ForgeError> {
    let git: &Git = &repo.git;
    let old = git.branch_head(branch)?;
    let n = git.count(&old)?;
    let at = git.next_tick()?;
    let path = format!("{stem}-{n}.txt");
    let content = format!("{what} {n} of case {}.\n", repo.name);
    let message = format!("{what} {n}\n");
    let new = git.commit_file(Some(&old), &path, &content, &message, Actor::Person, at)?;
    let reason = format!("push by {}", Actor::Person.login());
    if git.update_branch(branch, &new, Some(&old), &reason, Actor::Person, at)? {
        Ok(new)
    } else {
        Err(ForgeError::Moved {
            repo: repo.name.clone(),
            branch: branch.into(),
        })
    }
}

/// Pushes an unreviewed commit onto pull request `number`'s branch; the new head.
pub(crate) fn push_unreviewed(repo: &Repo, number: u64) -> Result<String, ForgeError> {
    let file = PullsFile::load(repo)?;
    let record = file.get(number).ok_or_else(|| ForgeError::NoSuchPull {
        repo: repo.name.clone(),
        pull: number,
    })?;
    add_commit(repo, &record.head_ref, "unreviewed", "Unreviewed change")
}

/// Lands an unrelated commit on the base branch; the commit.
pub(crate) fn commit_on_base(repo: &Repo) -> Result<String, ForgeError> {
    add_commit(repo, BASE, "base", "Unrelated change")
}
