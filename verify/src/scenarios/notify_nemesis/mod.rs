//! `notify_nemesis`: randomized faults on the notify case (DESIGN §4.11), on the contract.
//! Kills at every step of every column (inside the SMTP `DATA` too) and of their restarts, and
//! the refund failing or the approval revoked while the worker is paused mid-check. Every draw
//! derives from the campaign's seed and the trial's place; every trial is judged by `notify`'s
//! want and answer rules (a "cannot know" answer is handed to a person, never wrong) and
//! labelled within or beyond its column's assumptions by one rule ([`judge::beyond`]). Files
//! are `interlock-scenario/1`.

mod judge;
mod plan;
mod record;
mod summary;

pub use judge::{beyond, fired, judge, reads_after, TrialJudgement, RESTART_FAILED};
pub use plan::{
    draw, first_steps, pause_steps, plan, restart_steps, Draw, Params, Planned, CHANGES, MID_DATA,
    NEMESES, RESTART_FIRST_KILLS,
};
pub use record::Cell;
pub use summary::{summarize, NemesisColumn, Summary};

use crate::contract::{Evidence, HarnessError, PlanError, Scenario};
use crate::finding::Finding;
use crate::receipt::ReceiptReport;

/// The scenario, as the registry lists it.
pub struct NotifyNemesis;

impl Scenario for NotifyNemesis {
    const NAME: &'static str = "notify_nemesis";
    type Params = Params;
    type Planned = Planned;
    type Cell = Cell;
    type Judgement = TrialJudgement;
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

    fn judge(
        cell: &Cell,
        _receipts: &[Option<&ReceiptReport>],
    ) -> Result<TrialJudgement, Vec<Finding>> {
        judge(cell)
    }

    fn stated(cell: &Cell) -> Option<&TrialJudgement> {
        cell.judgement.as_ref()
    }

    fn summarize(judged: &[(&Cell, &TrialJudgement)]) -> Summary {
        summarize(judged)
    }
}

#[cfg(test)]
mod tests;
