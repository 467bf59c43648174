//! A notify cell as a results file records it.

use super::judge::Judgement;
use super::plan::Planned;
use crate::scenarios::pr_merge::TicketRecord;
use serde::{Deserialize, Serialize};

/// One cell: its plan, the case, what the mailbox and the emulator hold, the worker's ticket,
/// the stated judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// What the plan puts here.
    pub planned: Planned,
    /// The case's name: the value of the `X-Interlock-Case` header of its emails.
    pub case: String,
    /// The refund the email announces (`re_...`), made before the worker started.
    pub refund: String,
    /// What the mailbox and the emulator hold, read by the runner after the restart exited.
    pub truth: MailTruth,
    /// The worker's ticket (one email is asked for per case); the gate's ticket carries its
    /// receipt. The shape is pr_merge's.
    pub ticket: TicketRecord,
    /// Why the cell did not run to its end.
    pub harness_error: Option<String>,
    /// The failing worker's stderr tail, kept with a harness error.
    pub worker_output: Option<String>,
    /// The judgement the runner derived (absent for a harness error).
    pub judgement: Option<Judgement>,
}

/// The ground truth of a case, read from the Maildir's files once the mail server's queue was
/// empty (never from the worker's or the runner's memory), and from the emulator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailTruth {
    /// The case's messages in the Maildir after the kill, the queue drained, before the outage
    /// was made: what the first worker delivered.
    pub before_outage: Vec<Message>,
    /// The case's messages in the Maildir after the restart exited and the queue drained.
    pub delivered: Vec<Message>,
    /// The refund's `status` as the emulator answered after the restart (`succeeded`,
    /// `failed`).
    pub refund_status: String,
    /// Whether the approval was revoked, as the case's approval reads after the restart.
    pub approval_revoked: bool,
}

/// One delivered message, as its file in the Maildir names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Its file's name in the Maildir (one per delivery, never reused).
    pub file: String,
    /// Its `Message-ID` header, as written (with angle brackets).
    pub message_id: Option<String>,
}
