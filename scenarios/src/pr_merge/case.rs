//! A case's files in its cell directory: `case.json` (the pull request, the head it was
//! reviewed at, the approval) written by the runner, and `decision.json` (what the agent
//! decided) written durably by the worker before any send.

use crate::billing_credit::{read_json, write_json_durably, ScenarioError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name of the case in a cell directory.
pub const CASE_FILE: &str = "case.json";
/// File name of the saved decision in a cell directory.
pub const DECISION_FILE: &str = "decision.json";

/// The approval a merge runs under: who approved it, until when, and whether it was revoked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// `ap_...`: the lease id the gate records.
    pub id: String,
    /// Who approved the merge.
    pub approver: String,
    /// The pull request it covers.
    pub pull: u64,
    /// Until when it holds, ms since the Unix epoch (set by the runner when it opens the case).
    pub expires_at_ms: u64,
    /// Why it was revoked, once it is.
    pub revoked: Option<String>,
}

impl Approval {
    /// Whether the approval covers merging `pull` at `now_ms`.
    pub fn covers(&self, pull: u64, now_ms: u64) -> bool {
        self.revoked.is_none() && self.pull == pull && now_ms < self.expires_at_ms
    }
}

/// One case: a pull request reviewed at head `reviewed_head`, in the forge repository `repo`,
/// under `approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The case's name; also its repository's name at the forge.
    pub repo: String,
    /// The pull request's number.
    pub pull: u64,
    /// The head the pull request was reviewed at (`H`).
    pub reviewed_head: String,
    /// The approval to merge it.
    pub approval: Approval,
}

impl CaseFile {
    /// Reads `case.json` from `cell_dir`.
    pub fn load(cell_dir: &Path) -> Result<CaseFile, ScenarioError> {
        read_json(&cell_dir.join(CASE_FILE))
    }

    /// Writes `case.json` into `cell_dir` durably.
    pub fn save(&self, cell_dir: &Path) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(CASE_FILE), self)
    }
}

/// What the agent decided: merge the pull request at the head it reviewed, with this title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The pull request.
    pub pull: u64,
    /// The head reviewed and to be merged.
    pub sha: String,
    /// The merge commit's title.
    pub title: String,
}

impl Decision {
    /// The policy's decision: the review passed at the case's reviewed head, so merge it.
    pub fn policy(case: &CaseFile) -> Decision {
        Decision {
            pull: case.pull,
            sha: case.reviewed_head.clone(),
            title: format!("Merge pull request #{} (reviewed)", case.pull),
        }
    }

    /// Writes `decision.json` into `cell_dir` durably (temp file, fsync, rename, directory
    /// fsync).
    pub fn save(&self, cell_dir: &Path) -> Result<(), ScenarioError> {
        write_json_durably(&cell_dir.join(DECISION_FILE), self)
    }

    /// Reads `decision.json` from `cell_dir`.
    pub fn load(cell_dir: &Path) -> Result<Decision, ScenarioError> {
        read_json(&cell_dir.join(DECISION_FILE))
    }
}
