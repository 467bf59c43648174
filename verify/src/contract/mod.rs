//! The scenario contract: what a scenario states once, and the one pipeline every file of a
//! scenario on it is checked by.
//!
//! A scenario implements [`Scenario`] (its name, its cell and summary types, its plan, its
//! judgement, its summary) in a folder of its own, and is listed by one line in
//! [`crate::scenarios::REGISTRY`]. Its results are one whole-file format, [`ScenarioFile`]
//! ([`FORMAT`]), checked in numbered stages, each with its own finding codes ([`codes`]) and
//! typed output:
//!
//! 1. [`signature`]: the file's signature, by one key rule (lowercase hex, a key
//!    [`crate::trusted::signatures::key_is_acceptable`] accepts, `verify_strict`); under a pinned
//!    key a file that fails here is read no further. Output: the key everything else is checked
//!    against.
//! 2. [`plan`](stages::plan_stage): the cells are exactly the scenario's plan for the file's
//!    parameters, in order ([`Scenario::plan`], the function the runner plans with; nemesis draws
//!    are part of the plan, so they are re-derived, never read).
//! 3. [`cells`](stages::cells_stage): every receipt verified by the trusted core under the
//!    file's key and bound to the ticket that names it (effect id, journal kinds, status),
//!    every kill bound to the worker's first exit, every harness error carrying its evidence
//!    ([`Evidence`]); then each judged cell re-judged by [`Scenario::judge`].
//! 4. [`summary`](stages::summary_stage): [`Scenario::summarize`] over the verifier's own
//!    judgements, compared with the stated summary.
//!
//! A file that passes every stage becomes a [`Verified`], which only this module can build: it
//! is what a renderer receives.

pub mod codes;
mod errors;
mod evidence;
mod file;
mod registry;
pub mod signature;
mod stages;

pub use errors::{PlanError, ReadError};
pub use evidence::{Evidence, Exit, HarnessError, Ticket};
pub use file::{file_hash, sign, FileSignature, ScenarioFile, SigningError, FORMAT};
pub use registry::{
    read, read_and_check, read_head, Entry, FileHead, Refused, Registered, ScenarioReport,
    COMPRESSED_REFUSED, CONTAINER_ALLOWANCE, MAX_DEPTH, MIN_BYTES_PER_CONTAINER,
};
pub use stages::{check, Report, Verified, MAX_FINDINGS};

use crate::finding::Finding;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// What a scenario states once. Every rule here is a pure function of the file: the runner
/// judges with the same functions, `verify` re-derives with them.
pub trait Scenario: 'static + Send + Sync {
    /// The name a file states in `scenario` and the runner's `--scenario` takes.
    const NAME: &'static str;
    /// What decides the plan: the columns, crash points, outages, repeats, seed a run was asked
    /// for (signed with the file).
    type Params: Serialize + DeserializeOwned + Clone + Debug + Send + Sync;
    /// One planned cell: what the runner runs and the file must hold at that place (for a
    /// nemesis, the trial and its drawn faults).
    type Planned: Serialize + DeserializeOwned + Clone + PartialEq + Debug + Send + Sync;
    /// One cell as the file records it: its plan, what happened, and the stated judgement.
    type Cell: Serialize + DeserializeOwned + Clone + Debug + Send + Sync;
    /// What the rules derive for a judged cell (want, invariant, answer, proof, ...).
    type Judgement: Serialize + DeserializeOwned + Clone + PartialEq + Debug + Send + Sync;
    /// The per-column figures over every judged cell.
    type Summary: Serialize + DeserializeOwned + Clone + PartialEq + Debug + Send + Sync;

    /// The cells a run with these parameters holds, in order; `Err` names what is wrong with the
    /// parameters. A plan of more than `at_most` cells is refused before it is built
    /// ([`PlanError::TooLarge`]): the verifier passes the number of cells the file holds.
    fn plan(params: &Self::Params, at_most: usize) -> Result<Vec<Self::Planned>, PlanError>;
    /// The cell's planned part.
    fn planned(cell: &Self::Cell) -> &Self::Planned;
    /// What the cell records that the trusted core binds: tickets, receipts, exits, harness
    /// error ([`Evidence`]). Ticket paths are relative to the cell (`ticket`, `tickets[1]`).
    fn evidence(cell: &Self::Cell) -> Evidence<'_>;
    /// The judgement the rules derive from the cell's ground truth (and its verified
    /// receipts' reports, in ticket order); findings (their paths relative to the cell) when
    /// the ground truth does not add up.
    fn judge(
        cell: &Self::Cell,
        receipts: &[Option<&crate::receipt::ReceiptReport>],
    ) -> Result<Self::Judgement, Vec<Finding>>;
    /// The judgement the file states for the cell (`None` for a cell that is not judged).
    fn stated(cell: &Self::Cell) -> Option<&Self::Judgement>;
    /// The summary of the judged cells, from the verifier's own judgements.
    fn summarize(judged: &[(&Self::Cell, &Self::Judgement)]) -> Self::Summary;
}

/// Whether a cell is judged: it ran to its end (no harness error). The one definition.
pub fn judged<S: Scenario>(cell: &S::Cell) -> bool {
    S::evidence(cell).harness_error.is_none()
}
