//! `pr_merge_nemesis`: randomized faults on the pr_merge case (DESIGN §4.9), on the contract.
//! Kills at every step of every column and of their restarts, a merge request held at the
//! service (inside and past the declared in-flight bound) while its worker is killed, answers
//! dropped or replaced by a 500 after the merge landed, and an unreviewed push or the approval
//! revoked while the worker is paused mid-check. Every draw derives from the campaign's seed and the trial's place;
//! every trial is judged by `pr_merge`'s want rule and labelled within or beyond its column's
//! assumptions by one rule ([`judge::beyond`]). Files are `interlock-scenario/1`.

mod judge;
mod plan;
mod record;
mod summary;

pub use judge::{
    beyond, fired, judge, reads_approval_after, revoked_at, TrialJudgement, RESTART_FAILED,
};
pub use plan::{
    draw, first_steps, held_within, pause_steps, plan, release_steps, restart_steps, Draw, Params,
    Planned, FORGE_MAX_IN_FLIGHT_MS, HELD_STEP, NEMESES,
};
pub use record::Cell;
pub use summary::{summarize, NemesisColumn, Summary};

use crate::contract::{Evidence, HarnessError, PlanError, Scenario};
use crate::finding::Finding;
use crate::receipt::ReceiptReport;

/// The scenario, as the registry lists it.
pub struct PrMergeNemesis;

impl Scenario for PrMergeNemesis {
    const NAME: &'static str = "pr_merge_nemesis";
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
