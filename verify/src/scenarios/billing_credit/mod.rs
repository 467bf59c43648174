//! The billing_credit scenario's rules, stated once (DESIGN §4): a support agent credits a
//! customer for an incident, and billing may compensate the same incident on its own. Read in
//! this order:
//!
//! - [`case`]: a case's request, effect id and clock start;
//! - [`plan`]: the reference matrix and which cells a run plans;
//! - [`ground_truth`]: what Stripe holds, read the judge's way, and whether a file states it
//!   consistently;
//! - [`want`], [`invariant`], [`answer`], [`proof`]: the judgement of a cell, put together by
//!   [`judge`];
//! - [`outage`]: what each outage's record must show;
//! - [`summary`]: the per-column counts and medians;
//! - [`assumptions`]: the in-flight bound and the nemesis's within-assumptions rule.
//!
//! The runner judges a cell with these functions, and `verify` re-derives every judgement from
//! the raw data in a results file with the same ones.

pub mod answer;
pub mod assumptions;
pub mod case;
pub mod ground_truth;
pub mod invariant;
pub mod judge;
pub mod outage;
pub mod plan;
pub mod proof;
pub mod summary;
pub mod want;

pub use answer::*;
pub use case::*;
pub use ground_truth::*;
pub use invariant::*;
pub use judge::{judge, judge_in_place, Judgement};
pub use outage::*;
pub use plan::{REFERENCE_COLUMNS, REFERENCE_ROWS};
pub use proof::{proof, Proof};
pub use summary::*;
pub use want::*;

#[cfg(test)]
mod tests;
