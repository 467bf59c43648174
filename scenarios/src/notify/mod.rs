//! The notify scenario (DESIGN §4.11): after a $20 refund the agent made at Stripe, it emails
//! the customer that the money is on the way, under an approval. The email goes to a real mail
//! server (the `mailhost` crate's Postfix on loopback): a message handed to it cannot be taken
//! back, a second send is a second email, and the sender has nothing to look a sent one up by.
//!
//! What lives here: the case's files ([`CaseFile`], [`Decision`]), the email and its premise
//! (the refund's status), and the four columns behind [`send`], [`restart`] and [`finished`]:
//! `no_check` (the saved decision re-sent on restart), `hand_check` (a log line before and after
//! the send; a send begun and never ended is escalated to a person; otherwise the refund and the
//! approval are re-checked before sending), `hand_resend` (the same, but it sends again when
//! unsure) and `interlock` (the gate over a tier-3 target: AMBIGUOUS when it cannot know).
//!
//! What does not: worker processes, SIGKILL, the outages, the mail server and the results file
//! belong to the runner; the want rule and the judgement to `verify::scenarios::notify`.

mod case;
mod error;
mod hand_check;
mod interlock;
mod mail;
mod plain;
mod target;

pub use case::{Approval, CaseFile, Decision, CASE_FILE, DECISION_FILE};
pub use error::NotifyError;
pub use hand_check::LOG_FILE;
pub use interlock::{JOURNAL_FILE, JOURNAL_LOCATION_FILE, RECEIPT_FILE};
pub use mail::{refund_status, sender, MailServer, MidData};
pub use target::MailTarget;

use crate::billing_credit::hand_check::{read_jsonl, Phase};
use crate::billing_credit::{
    fire, Crash, CrashPoint, RestartReport, ScenarioError, ScenarioSettings,
};
use interlock::GateParts;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The agent name written into proposals and log lines.
pub const AGENT: &str = "notify-agent";
/// Who approves the emails.
pub const APPROVER: &str = "support-lead";

/// The four ways of sending the email that the experiment compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// The saved decision sent as it is; the restart sends it again.
    NoCheck,
    /// Log before and after the send; escalate a send begun and never ended; else re-check.
    HandCheck,
    /// As `HandCheck`, but a send begun and never ended is sent again after the re-checks.
    HandResend,
    /// The Interlock gate over a tier-3 target.
    Interlock,
}

impl Column {
    /// Every column, in display order.
    pub const ALL: [Column; 4] = [
        Column::NoCheck,
        Column::HandCheck,
        Column::HandResend,
        Column::Interlock,
    ];

    /// verify's name of the column ([`verify::scenarios::notify::COLUMNS`], in the same order).
    pub fn as_str(self) -> &'static str {
        let [no_check, hand_check, hand_resend, interlock] = verify::scenarios::notify::COLUMNS;
        match self {
            Column::NoCheck => no_check,
            Column::HandCheck => hand_check,
            Column::HandResend => hand_resend,
            Column::Interlock => interlock,
        }
    }
}

impl FromStr for Column {
    type Err = ScenarioError;
    fn from_str(s: &str) -> Result<Column, ScenarioError> {
        Column::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| ScenarioError::UnknownName {
                what: "notify column",
                got: s.to_owned(),
                expected: Column::ALL.map(Column::as_str).join(", "),
            })
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a worker of a case works with: the Stripe client of the case's account, the mail
/// server, the case's directory, the run's key and the gate's settings.
pub struct Worker<'a> {
    /// The client of the case's Stripe account (to read the refund).
    pub stripe: &'a stripe::Client,
    /// The mail server.
    pub server: &'a MailServer,
    /// The case's directory (`case.json`, the decision, the log or journal).
    pub cell_dir: &'a Path,
    /// The run's signing key (the gate's journal and receipt).
    pub gate_key: &'a ed25519_dalek::SigningKey,
    /// The gate's settings.
    pub settings: &'a ScenarioSettings,
    /// Run inside each SMTP `DATA`, with half of the message at the server (a nemesis kills
    /// the worker there); `None` sends without a pause.
    pub mid_data: Option<MidData>,
}

impl Worker<'_> {
    fn gate(&self) -> GateParts<'_> {
        GateParts {
            stripe: self.stripe,
            server: self.server,
            gate_key: self.gate_key,
            settings: self.settings,
            mid_data: self.mid_data.clone(),
        }
    }
}

/// First phase of the case's worker: decide (the policy: tell the customer), save the decision
/// durably, and send through `column`. Returns the final status string.
pub fn send(w: &Worker<'_>, column: Column, crash: Option<Crash>) -> Result<String, NotifyError> {
    let case = CaseFile::load(w.cell_dir)?;
    let decision = Decision::policy(&case);
    decision.save(w.cell_dir)?;
    fire(crash.as_ref(), CrashPoint::DecisionSaved);
    match column {
        Column::NoCheck => plain::send(
            w.server,
            &decision,
            "decide",
            crash.as_ref(),
            w.mid_data.as_ref(),
        ),
        Column::HandCheck | Column::HandResend => hand_check::send(
            w,
            &decision,
            Phase::Decide,
            column == Column::HandResend,
            crash.as_ref(),
        ),
        Column::Interlock => interlock::submit(&w.gate(), w.cell_dir, &decision, crash),
    }
}

/// Second phase of a killed worker: finish the case's email as the column does after a crash.
/// `crash` fires at the steps the restart passes (a nemesis kills restarts too).
pub fn restart(
    w: &Worker<'_>,
    column: Column,
    crash: Option<Crash>,
) -> Result<RestartReport, NotifyError> {
    let decision = Decision::load(w.cell_dir)?;
    let mid_data = w.mid_data.as_ref();
    let status = match column {
        Column::NoCheck => plain::send(w.server, &decision, "restart", crash.as_ref(), mid_data)?,
        Column::HandCheck | Column::HandResend => hand_check::send(
            w,
            &decision,
            Phase::Restart,
            column == Column::HandResend,
            crash.as_ref(),
        )?,
        Column::Interlock => return interlock::restart(&w.gate(), w.cell_dir, &decision, crash),
    };
    finished(w, column, status)
}

/// The report of a worker whose phase ended by itself with `status`: for `interlock` the
/// effect's journal kinds and receipt (also written as `receipt.json`), for the hand-written
/// columns their log.
pub fn finished(
    w: &Worker<'_>,
    column: Column,
    status: String,
) -> Result<RestartReport, NotifyError> {
    match column {
        Column::Interlock => {
            let decision = Decision::load(w.cell_dir)?;
            interlock::finished(&w.gate(), w.cell_dir, &decision, status)
        }
        Column::HandCheck | Column::HandResend => Ok(RestartReport::without_gate(
            status,
            read_jsonl(&w.cell_dir.join(LOG_FILE)).ok(),
            serde_json::Value::Null,
        )),
        Column::NoCheck => Ok(RestartReport::without_gate(
            status,
            None,
            serde_json::Value::Null,
        )),
    }
}
