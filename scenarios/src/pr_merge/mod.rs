//! The pr_merge scenario (DESIGN §4.9): an agent merges a pull request that was reviewed at
//! head `H`, under an approval. The merge endpoint (a GitHub REST subset served by the `forge`
//! crate over a real git repository) has no idempotency key; a merge can be looked up by a
//! trailer in its commit; and the service has a precondition of its own: `sha` on the merge
//! request must equal the head, or it answers 409.
//!
//! What lives here: the case's files ([`CaseFile`], [`Decision`]), and the four columns behind
//! [`send`], [`restart`] and [`finished`]: `no_check` (the saved decision sent without `sha`),
//! `native` (`sha = H` and nothing else: the service's own precondition), `hand_check` (its own
//! merge looked up, the approval and the pull request re-read, then `sha = H`) and `interlock`
//! (the gate, a tier-2 target).
//!
//! What does not: worker processes, SIGKILL, the outages and the results file belong to the
//! runner; the ground truth is read with git by `forge`; the want rule and the judgement belong
//! to `verify::scenarios::pr_merge`.

mod case;
mod error;
mod hand_check;
mod interlock;
mod merge;
mod plain;
mod target;

pub use case::{Approval, CaseFile, Decision, CASE_FILE, DECISION_FILE};
pub use error::MergeError;
pub use hand_check::{ticket, LOG_FILE};
pub use interlock::{JOURNAL_FILE, JOURNAL_LOCATION_FILE, RECEIPT_FILE};
pub use merge::{refused_by_service, trailer, BASE, EFFECT_TRAILER, TICKET_TRAILER};
pub use target::MergeTarget;

use crate::billing_credit::hand_check::read_jsonl;
use crate::billing_credit::hand_check::Phase;
use crate::billing_credit::{
    fire, Crash, CrashPoint, RestartReport, ScenarioError, ScenarioSettings,
};
use forge::client::Client;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The agent name written into proposals and log lines.
pub const AGENT: &str = "pr-merge-agent";
/// Who approves the merges.
pub const APPROVER: &str = "release-manager";

/// The four ways of merging that the experiment compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// The saved decision sent without `sha`; the restart sends it again.
    NoCheck,
    /// `sha = H` on every send, and nothing else: the service's own compare-and-swap.
    Native,
    /// Look its own merge up, re-check the approval and the pull request, merge with `sha = H`;
    /// a plain log before and after the send.
    HandCheck,
    /// The Interlock gate over a tier-2 target.
    Interlock,
}

impl Column {
    /// Every column, in display order.
    pub const ALL: [Column; 4] = [
        Column::NoCheck,
        Column::Native,
        Column::HandCheck,
        Column::Interlock,
    ];

    /// verify's name of the column ([`verify::scenarios::pr_merge::COLUMNS`], in the same order).
    pub fn as_str(self) -> &'static str {
        let [no_check, native, hand_check, interlock] = verify::scenarios::pr_merge::COLUMNS;
        match self {
            Column::NoCheck => no_check,
            Column::Native => native,
            Column::HandCheck => hand_check,
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
                what: "pr_merge column",
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

/// First phase of the case's worker: decide (the policy: merge the reviewed head), save the
/// decision durably, and send through `column`. Returns the final status string.
pub fn send(
    column: Column,
    client: &Client,
    cell_dir: &Path,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<String, MergeError> {
    let case = CaseFile::load(cell_dir)?;
    let decision = Decision::policy(&case);
    decision.save(cell_dir)?;
    fire(crash.as_ref(), CrashPoint::DecisionSaved);
    match column {
        Column::NoCheck | Column::Native => {
            plain::send(client, &decision, column == Column::Native, crash.as_ref())
        }
        Column::HandCheck => {
            hand_check::send(client, cell_dir, &decision, Phase::Decide, crash.as_ref())
        }
        Column::Interlock => {
            interlock::submit(client, cell_dir, &decision, crash, gate_key, settings)
        }
    }
}

/// Second phase of a killed worker: finish the case's merge as the column does after a crash.
/// `crash` lets the nemesis kill the restart too.
pub fn restart(
    column: Column,
    client: &Client,
    cell_dir: &Path,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
    crash: Option<Crash>,
) -> Result<RestartReport, MergeError> {
    let decision = Decision::load(cell_dir)?;
    match column {
        Column::NoCheck | Column::Native => {
            let status = plain::send(client, &decision, column == Column::Native, crash.as_ref())?;
            finished(column, client, cell_dir, status, gate_key, settings)
        }
        Column::HandCheck => {
            let status =
                hand_check::send(client, cell_dir, &decision, Phase::Restart, crash.as_ref())?;
            finished(column, client, cell_dir, status, gate_key, settings)
        }
        Column::Interlock => {
            interlock::restart(client, cell_dir, &decision, gate_key, settings, crash)
        }
    }
}

/// The report of a worker whose phase ended by itself with `status`: for `interlock` the
/// effect's journal kinds and receipt (also written as `receipt.json`), for `hand_check` its
/// log.
pub fn finished(
    column: Column,
    client: &Client,
    cell_dir: &Path,
    status: String,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<RestartReport, MergeError> {
    match column {
        Column::Interlock => {
            let decision = Decision::load(cell_dir)?;
            interlock::finished(client, cell_dir, &decision, status, gate_key, settings)
        }
        Column::HandCheck => Ok(RestartReport::without_gate(
            status,
            read_jsonl(&cell_dir.join(LOG_FILE)).ok(),
            serde_json::Value::Null,
        )),
        _ => Ok(RestartReport::without_gate(
            status,
            None,
            serde_json::Value::Null,
        )),
    }
}
