//! A pr_merge cell as a results file records it.

use super::judge::Judgement;
use super::plan::Planned;
use crate::entry::ReceiptBundle;
use serde::{Deserialize, Serialize};

/// One cell: its plan, the repository's ground truth, the worker's ticket, the stated judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// What the plan puts here.
    pub planned: Planned,
    /// The pull request's number in the run's repository.
    pub pull: u64,
    /// What the repository holds, read back with git after the restart exited.
    pub truth: RepoTruth,
    /// The worker's ticket (one merge is asked for per case).
    pub ticket: TicketRecord,
    /// Why the cell did not run to its end.
    pub harness_error: Option<String>,
    /// The failing worker's stderr tail, kept with a harness error.
    pub worker_output: Option<String>,
    /// The judgement the runner derived (absent for a harness error).
    pub judgement: Option<Judgement>,
}

/// The repository's ground truth for one case, read with git from the service's repository
/// (its reflogs, in the order git wrote them), never from the service's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoTruth {
    /// The head the pull request was reviewed at (`H`).
    pub reviewed_head: String,
    /// Every update of the base branch and of the pull request's branch, in order.
    pub updates: Vec<RefUpdate>,
    /// The merge commit the outage made as someone else (`merged_by_other`), if any.
    pub outage_merge: Option<String>,
}

/// Which branch an update moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Branch {
    /// The branch the pull request merges into.
    Base,
    /// The pull request's own branch.
    Head,
}

/// One update of a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefUpdate {
    /// The branch moved.
    pub branch: Branch,
    /// The commit it moved to (40 lowercase hex).
    pub commit: String,
    /// For a merge commit of the pull request on the base branch: the head it merged (its
    /// second parent).
    pub merged_head: Option<String>,
}

/// The worker's ticket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketRecord {
    /// The final status the worker answered.
    pub status: String,
    /// The effect id (interlock).
    pub effect_id: Option<String>,
    /// The journal kinds (interlock).
    pub journal_kinds: Option<Vec<String>>,
    /// The receipt bundle (interlock).
    pub receipt: Option<ReceiptBundle>,
    /// The crash point the runner killed the worker at.
    pub killed_at: Option<String>,
    /// How the first worker process ended.
    pub first_exit: Option<WorkerExit>,
}

/// How a worker process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerExit {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// The point it had announced when the signal came.
    pub at: Option<String>,
}

/// The final status of a ticket whose last restart ended in an error: unresolved, whatever
/// the column (one rule for every column; such a worker wrote no report, so a gated one carries
/// no receipt either).
pub const RESTART_FAILED: &str = "RESTART_FAILED";

impl TicketRecord {
    /// The ticket as the trusted core binds it (path `ticket`); `gated` when its column sends
    /// through the gate: it must then carry its receipt, unless its restart failed
    /// ([`RESTART_FAILED`]: no report, no receipt; counted unresolved, against the column).
    pub fn evidence(&self, gated: bool) -> crate::contract::Ticket<'_> {
        use crate::contract::Exit;
        crate::contract::Ticket {
            path: "ticket".into(),
            gated: gated && self.status != RESTART_FAILED,
            status: &self.status,
            effect_id: self.effect_id.as_deref(),
            journal_kinds: self.journal_kinds.as_deref(),
            receipt: self.receipt.as_ref(),
            killed_at: self.killed_at.as_deref(),
            first_exit: self.first_exit.as_ref().map(|e| match e.signal {
                Some(signal) => Exit::Signal {
                    signal,
                    at: e.at.as_deref(),
                },
                None => Exit::Code(e.code.unwrap_or(-1)),
            }),
        }
    }

    /// A ticket with nothing recorded yet: the runner fills it in as the cell runs.
    pub fn blank() -> TicketRecord {
        TicketRecord {
            status: String::new(),
            effect_id: None,
            journal_kinds: None,
            receipt: None,
            killed_at: None,
            first_exit: None,
        }
    }
}
