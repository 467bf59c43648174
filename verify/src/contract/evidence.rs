//! What a scenario's cell records that the trusted core binds, in one shape for every scenario.

use crate::entry::ReceiptBundle;

/// What a cell records about how it ran: one ticket per effect a worker was asked for, and the
/// harness error when the cell did not run to its end.
#[derive(Debug, Clone, Default)]
pub struct Evidence<'c> {
    /// Every ticket, in the cell's order.
    pub tickets: Vec<Ticket<'c>>,
    /// Why the cell did not run to its end; `None` for a judged cell.
    pub harness_error: Option<HarnessError<'c>>,
}

/// A cell that did not run to its end, and what shows why.
#[derive(Debug, Clone, Copy)]
pub struct HarnessError<'c> {
    /// The runner's reason, one sentence.
    pub reason: &'c str,
    /// The failing worker's output (its stderr tail), as recorded; `None` when none was kept.
    pub output: Option<&'c str>,
}

/// One effect a worker was asked for, as the cell records it.
#[derive(Debug, Clone)]
pub struct Ticket<'c> {
    /// The ticket's JSON path in the file, for findings (`cells[3].tickets[0]`).
    pub path: String,
    /// The ticket's column sends through the gate: it must carry its receipt.
    pub gated: bool,
    /// The final status the worker answered (`COMMITTED`, `REFUSED:lease`, ...).
    pub status: &'c str,
    /// The effect id the ticket names.
    pub effect_id: Option<&'c str>,
    /// The journal kinds the ticket states, in order.
    pub journal_kinds: Option<&'c [String]>,
    /// The receipt bundle the ticket carries.
    pub receipt: Option<&'c ReceiptBundle>,
    /// The point the runner says it killed the worker at.
    pub killed_at: Option<&'c str>,
    /// How the ticket's first worker process ended.
    pub first_exit: Option<Exit<'c>>,
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit<'c> {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it; `at` is the point the worker had announced when it was killed.
    Signal {
        /// The signal's number (9 for SIGKILL).
        signal: i32,
        /// The point announced before the signal, if any.
        at: Option<&'c str>,
    },
}

/// SIGKILL's number.
pub const SIGKILL: i32 = 9;
