//! Pull requests: their small record beside the repository (written atomically), their state as
//! git shows it, and the merge, which makes a real merge commit and moves the base branch with a
//! compare-and-swap.
//!
//! Whether a pull request is merged is read from git, not from the record: the record names the
//! merge commit the service made (written before the base branch moves), and the pull request is
//! merged exactly when that commit is on the base branch.

use crate::git::{Actor, Git};
use crate::repos::Repo;
use crate::{ForgeError, OWNER};
use serde::{Deserialize, Serialize};
use std::io::Write;

/// A pull request as [`Forge::create_case`](crate::Forge::create_case) made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    /// Its number.
    pub number: u64,
    /// The commit its branch pointed at when it was opened (the head a review sees).
    pub head: String,
    /// The commit its base branch pointed at when it was opened.
    pub base: String,
}

/// The pull requests of one repository, as stored beside it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PullsFile {
    /// Every pull request, by number.
    pub pulls: Vec<PullRecord>,
}

/// One pull request's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PullRecord {
    /// Its number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// The branch it merges.
    pub head_ref: String,
    /// The branch it merges into.
    pub base_ref: String,
    /// How many reflog entries each branch had when the pull request was opened: the updates of
    /// the setup, which the ground truth leaves out.
    pub setup_entries: SetupEntries,
    /// The merge the service made, once it made one (merged only if git agrees).
    pub merge: Option<MergeRecord>,
}

/// Reflog lengths at the opening of a pull request.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetupEntries {
    /// Of the base branch.
    pub base: usize,
    /// Of the pull request's branch.
    pub head: usize,
}

/// A merge the service made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MergeRecord {
    /// The merge commit.
    pub commit: String,
    /// The login of who merged.
    pub merged_by: String,
}

impl PullsFile {
    /// Reads the record of `repo`.
    pub(crate) fn load(repo: &Repo) -> Result<PullsFile, ForgeError> {
        let path = &repo.pulls_file;
        let text = std::fs::read(path).map_err(|source| ForgeError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_slice(&text).map_err(|source| ForgeError::Record {
            path: path.clone(),
            source,
        })
    }

    /// Writes the record of `repo` atomically (a synced temporary file renamed over it).
    pub(crate) fn save(&self, repo: &Repo) -> Result<(), ForgeError> {
        let path = &repo.pulls_file;
        let io = |source| ForgeError::Io {
            path: path.clone(),
            source,
        };
        let text = serde_json::to_vec_pretty(self).map_err(|source| ForgeError::Record {
            path: path.clone(),
            source,
        })?;
        let tmp = path.with_extension("json.tmp");
        let mut file = std::fs::File::create(&tmp).map_err(io)?;
        file.write_all(&text).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// The record of pull request `number`.
    pub(crate) fn get(&self, number: u64) -> Option<&PullRecord> {
        self.pulls.iter().find(|p| p.number == number)
    }

    fn get_mut(&mut self, number: u64) -> Option<&mut PullRecord> {
        self.pulls.iter_mut().find(|p| p.number == number)
    }
}

/// A pull request's state, read from git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PullState {
    /// Its number.
    pub number: u64,
    /// Its branch and the commit it points at.
    pub head: (String, String),
    /// Its base branch and the commit it points at.
    pub base: (String, String),
    /// The merge that is on the base branch, if any.
    pub merged: Option<MergeRecord>,
    /// Whether its head merges cleanly into its base (`None` once merged).
    pub mergeable: Option<bool>,
}

/// Why a merge was refused: each is a definite answer (nothing was changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No such pull request.
    NoSuchPull,
    /// Already merged (GitHub's 405).
    AlreadyMerged,
    /// `sha` was given and is not the head (GitHub's 409).
    HeadModified,
    /// The head does not merge cleanly (GitHub's 405).
    Conflict,
}

/// A merge as asked for: the head it must be at, and the commit message's two parts.
#[derive(Debug, Clone, Default)]
pub(crate) struct MergeAsk {
    /// The head the pull request must be at, if given.
    pub sha: Option<String>,
    /// The first line of the message (a default when absent).
    pub title: Option<String>,
    /// The rest of the message (none when absent).
    pub message: Option<String>,
}

/// The merge commit on the base branch the record names, if git shows it there.
fn merged_on_base(
    git: &Git,
    record: &PullRecord,
    base: &str,
) -> Result<Option<MergeRecord>, ForgeError> {
    let Some(merge) = &record.merge else {
        return Ok(None);
    };
    if git.resolve(&merge.commit)?.is_none() {
        return Ok(None);
    }
    Ok(git.is_ancestor(&merge.commit, base)?.then(|| merge.clone()))
}

/// The state of pull request `number` of `repo`; `None` when there is no such pull request.
pub(crate) fn state(repo: &Repo, number: u64) -> Result<Option<PullState>, ForgeError> {
    let file = PullsFile::load(repo)?;
    let Some(record) = file.get(number) else {
        return Ok(None);
    };
    let git = &repo.git;
    let head = git.branch_head(&record.head_ref)?;
    let base = git.branch_head(&record.base_ref)?;
    let merged = merged_on_base(git, record, &base)?;
    let mergeable = match merged {
        Some(_) => None,
        None => Some(git.merge_tree(&base, &head)?.is_some()),
    };
    Ok(Some(PullState {
        number,
        head: (record.head_ref.clone(), head),
        base: (record.base_ref.clone(), base),
        merged,
        mergeable,
    }))
}

/// The message of a merge commit: the title, and after a blank line the message (when there is
/// one), so that trailers at the end of the message stay trailers.
fn merge_message(record: &PullRecord, ask: &MergeAsk) -> String {
    let title = ask.title.clone().unwrap_or_else(|| {
        format!(
            "Merge pull request #{} from {OWNER}/{}",
            record.number, record.head_ref
        )
    });
    match ask.message.as_deref() {
        Some(m) if !m.is_empty() => format!("{title}\n\n{m}\n"),
        _ => format!("{title}\n"),
    }
}

/// Merges pull request `number` of `repo` as `who`: a merge commit whose first parent is the
/// base branch and second the head, then the base branch moved to it if it has not moved since.
/// The merge commit, or why it was refused.
pub(crate) fn merge(
    repo: &Repo,
    number: u64,
    ask: &MergeAsk,
    who: Actor,
) -> Result<Result<String, Refusal>, ForgeError> {
    let mut file = PullsFile::load(repo)?;
    let Some(state) = state(repo, number)? else {
        return Ok(Err(Refusal::NoSuchPull));
    };
    if state.merged.is_some() {
        return Ok(Err(Refusal::AlreadyMerged));
    }
    let (head, base) = (&state.head.1, &state.base.1);
    if ask.sha.as_ref().is_some_and(|sha| sha != head) {
        return Ok(Err(Refusal::HeadModified));
    }
    let git = &repo.git;
    let Some(tree) = git.merge_tree(base, head)? else {
        return Ok(Err(Refusal::Conflict));
    };
    let Some(record) = file.get_mut(number) else {
        return Ok(Err(Refusal::NoSuchPull));
    };
    let at = git.next_tick()?;
    let message = merge_message(record, ask);
    let commit = git.commit_tree(&tree, &[base, head], &message, who, at)?;
    // Recorded first: until the base branch moves, the record names a commit git does not show
    // on the base, which reads as "not merged", as git says.
    record.merge = Some(MergeRecord {
        commit: commit.clone(),
        merged_by: who.login().to_string(),
    });
    let base_ref = record.base_ref.clone();
    file.save(repo)?;
    let reason = format!("merge pull request #{number} as {}", who.login());
    if !git.update_branch(&base_ref, &commit, Some(base), &reason, who, at)? {
        return Err(ForgeError::Moved {
            repo: repo.name.clone(),
            branch: base_ref,
        });
    }
    Ok(Ok(commit))
}
