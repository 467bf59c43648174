//! The ground truth of a case, read with git: every update of the base branch and of the pull
//! request's branch after the case was set up, in the order git wrote them, and for each merge
//! commit on the base branch the head it merged (its second parent).
//!
//! The order across the two branches comes from the reflogs' timestamps: every reference update
//! of a repository is made one second after the latest one before it (`Git::next_tick`), under
//! the repository's lock, so the timestamps are distinct and increasing in the order of the
//! updates. Two entries with one timestamp are an error, not a guess.

use crate::git::{Git, ReflogEntry};
use crate::pulls::PullsFile;
use crate::repos::Repo;
use crate::ForgeError;
use verify::scenarios::pr_merge::{Branch, RefUpdate, RepoTruth};

/// The ground truth of pull request `number` of `repo`.
pub(crate) fn read(
    repo: &Repo,
    number: u64,
    reviewed_head: &str,
    outage_merge: Option<String>,
) -> Result<RepoTruth, ForgeError> {
    let file = PullsFile::load(repo)?;
    let record = file.get(number).ok_or_else(|| ForgeError::NoSuchPull {
        repo: repo.name.clone(),
        pull: number,
    })?;
    let git = &repo.git;
    let after_setup = |branch: &str, setup: usize| -> Result<Vec<ReflogEntry>, ForgeError> {
        Ok(git.reflog(branch)?.into_iter().skip(setup).collect())
    };
    let mut entries: Vec<(Branch, ReflogEntry)> = Vec::new();
    for entry in after_setup(&record.base_ref, record.setup_entries.base)? {
        entries.push((Branch::Base, entry));
    }
    for entry in after_setup(&record.head_ref, record.setup_entries.head)? {
        entries.push((Branch::Head, entry));
    }
    entries.sort_by_key(|(_, e)| e.at);
    if let Some(pair) = entries.windows(2).find(|w| w[0].1.at == w[1].1.at) {
        return Err(ForgeError::Unordered {
            repo: repo.name.clone(),
            at: pair[0].1.at,
        });
    }
    let updates = entries
        .into_iter()
        .map(|(branch, entry)| update(git, branch, entry))
        .collect::<Result<_, _>>()?;
    Ok(RepoTruth {
        reviewed_head: reviewed_head.to_string(),
        updates,
        outage_merge,
    })
}

/// One update; for the base branch, the merged head when the commit is a merge.
fn update(git: &Git, branch: Branch, entry: ReflogEntry) -> Result<RefUpdate, ForgeError> {
    let merged_head = match branch {
        Branch::Base => match git.parents(&entry.commit)?.as_slice() {
            [_, second] => Some(second.clone()),
            _ => None,
        },
        Branch::Head => None,
    };
    Ok(RefUpdate {
        branch,
        commit: entry.commit,
        merged_head,
    })
}
