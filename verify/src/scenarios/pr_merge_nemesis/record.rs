//! A pr_merge campaign's trial as a file records it.

use super::judge::TrialJudgement;
use super::plan::Planned;
use crate::scenarios::pr_merge::{RepoTruth, TicketRecord};
use serde::{Deserialize, Serialize};

/// One trial: its plan and draw, the repository's ground truth, the worker's ticket, where its
/// faults landed, the stated judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// What the plan puts here.
    pub planned: Planned,
    /// The pull request's number in the trial's repository.
    pub pull: u64,
    /// What the repository holds, read back with git after the last restart exited.
    pub truth: RepoTruth,
    /// The worker's ticket: its final status (the last restart's), its first worker's kill and
    /// exit, and for `interlock` its receipt.
    pub ticket: TicketRecord,
    /// The step the first restart was SIGKILLed at, when it was.
    pub restart_killed_at: Option<String>,
    /// The step the first worker was paused at while the head moved, when it was.
    pub paused_at: Option<String>,
    /// Whether the first merge request took the drawn service fault (a hold, a dropped answer,
    /// a 500), when one was drawn.
    pub fault_taken: Option<bool>,
    /// The step of the restart at which the runner landed the held merge request, when it did
    /// (`release_mid_restart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_at: Option<String>,
    /// How long the service held the first merge request, ms, as the runner measured it when
    /// it released it (`release_mid_restart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_ms: Option<u64>,
    /// Why the trial did not run to its end.
    pub harness_error: Option<String>,
    /// The failing worker's stderr tail, kept with a harness error (or with an unresolved
    /// restart).
    pub worker_output: Option<String>,
    /// The judgement the runner derived (absent for a harness error).
    pub judgement: Option<TrialJudgement>,
}
