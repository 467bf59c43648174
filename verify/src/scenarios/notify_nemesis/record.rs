//! A notify campaign's trial as a file records it.

use super::judge::TrialJudgement;
use super::plan::Planned;
use crate::scenarios::notify::{MailTruth, Message};
use crate::scenarios::pr_merge::TicketRecord;
use serde::{Deserialize, Serialize};

/// One trial: its plan and draw, the case, what the mailbox and the emulator hold, the
/// worker's ticket, where its faults landed, the stated judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// What the plan puts here.
    pub planned: Planned,
    /// The case's name: the value of the `X-Interlock-Case` header of its emails.
    pub case: String,
    /// The refund the email announces (`re_...`).
    pub refund: String,
    /// What the mailbox and the emulator hold. `before_outage` is the mailbox read (the queue
    /// drained) right before the change was made, or after the first worker when none was.
    pub truth: MailTruth,
    /// The worker's ticket: its final status (the last restart's), its first worker's kill and
    /// exit, and for `interlock` its receipt.
    pub ticket: TicketRecord,
    /// The step the first restart was SIGKILLed at, when it was.
    pub restart_killed_at: Option<String>,
    /// The case's messages in the Maildir right after that restart was killed (the queue
    /// drained), when it was.
    pub after_restart_kill: Option<Vec<Message>>,
    /// The step the first worker was paused at while the change was made, when it was.
    pub paused_at: Option<String>,
    /// Why the trial did not run to its end.
    pub harness_error: Option<String>,
    /// The failing worker's stderr tail, kept with a harness error (or with an unresolved
    /// restart).
    pub worker_output: Option<String>,
    /// The judgement the runner derived (absent for a harness error).
    pub judgement: Option<TrialJudgement>,
}
