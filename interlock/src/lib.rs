//! Interlock: a commit gate for side effects decided by AI agents.
//!
//! An agent's [`Proposal`] goes through [`Gate::submit`]: it is journaled (PROPOSED), its lease is
//! checked (AUTHORIZED), its premises are re-checked at the [`Target`], a DISPATCHED entry is made
//! durable and the sender's claim taken, and only then is the target called; the result is
//! journaled (COMMITTED). Every entry is signed and hash-chained per effect in the format the
//! `verify` crate owns. When a sender dies mid-effect, [`Gate::recover`] settles every open
//! dispatch according to the target's [`Tier`] — or reports exactly who or what it waits for.
//!
//! See `README.md` for the guarantees per tier and the claim rules.

mod budget;
pub mod claim;
pub mod decide;
mod fsio;
mod gate;
pub mod journal;
mod lease;
pub mod marks;
#[cfg(feature = "postgres")]
mod pg;
// Without the `postgres` feature: the same names, no values (a `postgres://` journal is refused).
#[cfg(not(feature = "postgres"))]
#[path = "pg_off.rs"]
mod pg;
mod proposal;
mod recover;
mod status;
mod store;
mod sync;
mod target;
#[cfg(feature = "testing")]
pub mod testing;

pub use budget::{Budget, BudgetError, BudgetRecord, BudgetStore, Budgets, Counted};
pub use claim::Owner;
pub use gate::{Gate, GateConfig, GateError};
pub use journal::JournalError;
pub use lease::{LeaseCheck, LeaseError, LeaseStore};
pub use proposal::{effect_id, Proposal};
pub use recover::effective_tier;
pub use status::{
    status_of, Holder, Recovered, RecoveryOutcome, RefusalCode, Status, Step, Submitted, Via,
    AMBIGUOUS_CODE,
};
pub use store::{read_entries, Location};
pub use target::{Capabilities, SendDeadline, Target, TargetError, Tier};
