//! `notify`: after a $20 refund, an agent emails the customer that the money is on the way,
//! under an approval. The email goes to a real mail server: it cannot be taken back, a second
//! send is a second email, and the sender has nothing to look a sent one up by, so the gate's
//! target is tier 3 and its honest answer after a crash mid-send is AMBIGUOUS. DESIGN §4.11.
//!
//! This folder holds the scenario's rules on the contract ([`crate::contract::Scenario`]): the
//! plan, the ground truth (the case's emails in the Maildir, the refund's status, the
//! approval), the want rule, the answer rule (a "cannot know" answer is handed to a person,
//! never wrong), the judgement and the summary. The mail server, the emulator and the worker
//! steps live in the runner; files of this scenario are `interlock-scenario/1`.

mod judge;
mod plan;
mod record;
mod summary;

pub use judge::{
    answer, case_receipt_findings, gate_message_id, judge, judgement, receipt_findings,
    status_hands_off, status_says_sent, want, Answer, Judgement, ESCALATED, HANDOFF_STATUSES,
    MAIL_DOMAIN, REFUSED_APPROVAL, REFUSED_REFUND, SENT, UNRESOLVED_STATUSES,
};
pub use plan::{plan, Params, Planned, COLUMNS, CRASH_POINTS, OUTAGES};
pub use record::{Cell, MailTruth, Message};
pub use summary::{summarize, ColumnSummary, Handoff, Summary};

use crate::contract::{Evidence, HarnessError, PlanError, Scenario};
use crate::finding::Finding;
use crate::receipt::ReceiptReport;

/// The scenario, as the registry lists it.
pub struct Notify;

impl Scenario for Notify {
    const NAME: &'static str = "notify";
    type Params = Params;
    type Planned = Planned;
    type Cell = Cell;
    type Judgement = Judgement;
    type Summary = Summary;

    fn plan(params: &Params, at_most: usize) -> Result<Vec<Planned>, PlanError> {
        plan(params, at_most)
    }

    fn planned(cell: &Cell) -> &Planned {
        &cell.planned
    }

    fn evidence(cell: &Cell) -> Evidence<'_> {
        Evidence {
            tickets: vec![cell.ticket.evidence(cell.planned.column == "interlock")],
            harness_error: cell.harness_error.as_deref().map(|reason| HarnessError {
                reason,
                output: cell.worker_output.as_deref(),
            }),
        }
    }

    fn judge(cell: &Cell, _receipts: &[Option<&ReceiptReport>]) -> Result<Judgement, Vec<Finding>> {
        judge(cell)
    }

    fn stated(cell: &Cell) -> Option<&Judgement> {
        cell.judgement.as_ref()
    }

    fn summarize(judged: &[(&Cell, &Judgement)]) -> Summary {
        summarize(judged)
    }
}

#[cfg(test)]
mod tests;
