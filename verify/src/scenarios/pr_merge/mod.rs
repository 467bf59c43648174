//! `pr_merge`: an agent merges a pull request that was reviewed at head `H`, under an approval;
//! the merge endpoint has no idempotency key, a merge can be looked up (the merge commit), and
//! the service has a precondition of its own (`sha` must equal the head). DESIGN §4.9.
//!
//! This folder holds the scenario's rules on the contract ([`crate::contract::Scenario`]): the
//! plan, the ground truth as read back from the repository with git, the want rule, the
//! judgement and the summary. The service (a GitHub REST subset over a real git repository)
//! and the worker steps live in the runner; files of this scenario are `interlock-scenario/1`.

mod judge;
mod plan;
mod record;
mod summary;

pub use judge::{
    judge, judgement, merged_state_violation, receipt_findings, says_merged_by_other,
    status_says_merged, want, Judgement, ALREADY_MERGED, DECLARED_MAX_IN_FLIGHT_MS, MERGED,
};
pub use plan::{plan, Params, Planned, COLUMNS, CRASH_POINTS, OUTAGES};
pub use record::{Branch, Cell, RefUpdate, RepoTruth, TicketRecord, WorkerExit, RESTART_FAILED};
pub use summary::{summarize, ColumnSummary, Summary};

use crate::contract::{Evidence, HarnessError, PlanError, Scenario};
use crate::finding::Finding;
use crate::receipt::ReceiptReport;

/// The scenario, as the registry lists it.
pub struct PrMerge;

impl Scenario for PrMerge {
    const NAME: &'static str = "pr_merge";
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
