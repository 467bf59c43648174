//! Budgets: limits that span effects (DESIGN §2.8).
//!
//! A [`Proposal`](crate::Proposal) may name a [`Budget`] (`{id, amount}`); a [`BudgetStore`]
//! gives each budget's cap. Right before DISPATCHED, under the budget's lock, the gate admits the
//! effect only if what the budget's other effects hold — committed, dispatched and not yet
//! resolved, or ambiguous (it may have landed) — plus this amount stays within the cap; else
//! the effect ends `REFUSED:over_budget`. Recovery re-checks the same before any resend. The
//! entry that decides records a [`BudgetRecord`] (cap, amount, the effects counted, total), so
//! `verify::budget::check_budget` can re-derive every admission from the receipts alone.
//!
//! The record format and the admission rule are `verify`'s ([`verify::budget`]): the gate
//! decides with the same function the verifier re-derives with.

use crate::gate::GateError;
use crate::journal::JournalError;
use crate::store::Section;
pub use verify::budget::{Budget, BudgetRecord, Counted};

/// The budget store could not answer (as opposed to answering "no such budget").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("budget store error: {reason}")]
pub struct BudgetError {
    /// What went wrong, in words.
    pub reason: String,
}

impl BudgetError {
    /// An error with this reason.
    pub fn new(reason: impl Into<String>) -> BudgetError {
        BudgetError {
            reason: reason.into(),
        }
    }
}

/// Where budgets' caps live (a policy table: "refunds on one order stay within $30").
pub trait BudgetStore {
    /// The cap of budget `id`, in the unit of its amounts (integer cents); `None` when the store
    /// does not know the budget (an effect naming it is refused). Read at every dispatch and
    /// before every resend, so a changed cap takes effect at once.
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError>;
}

impl<B: BudgetStore + ?Sized> BudgetStore for &B {
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError> {
        (**self).cap(id)
    }
}

impl<B: BudgetStore + ?Sized> BudgetStore for std::sync::Arc<B> {
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError> {
        (**self).cap(id)
    }
}

impl<B: BudgetStore + ?Sized> BudgetStore for Box<B> {
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError> {
        (**self).cap(id)
    }
}

/// A budget store for a gate, as [`Gate::set_budgets`](crate::Gate::set_budgets) takes it.
pub type Budgets = Box<dyn BudgetStore + Send + Sync>;

/// Check what a proposal names before anything is written: an amount in `0..=2^53 − 1` (a
/// negative amount would free room that others hold), a non-empty id, and a gate that has a
/// budget store to ask. A proposal that names no budget passes.
pub(crate) fn check_named(
    eid: &str,
    budget: Option<&Budget>,
    has_store: bool,
) -> Result<(), GateError> {
    let Some(b) = budget else {
        return Ok(());
    };
    let why = if !has_store {
        "it names a budget, but this gate has no budget store (Gate::set_budgets)".to_owned()
    } else if b.id.is_empty() {
        "its budget id is empty".to_owned()
    } else if !(0..=verify::canonical::MAX_SAFE_INTEGER).contains(&b.amount) {
        format!(
            "its budget amount {} is not an integer from 0 to 2^53 - 1",
            b.amount
        )
    } else {
        return Ok(());
    };
    Err(GateError::Budget {
        effect_id: eid.to_owned(),
        budget: b.id.clone(),
        reason: why,
    })
}

/// The one place a budget's reservations are read for a decision (an admission at dispatch, a
/// re-check before a resend). It takes **the budget's lock** in `j` ([`Section::lock_budget`]:
/// on PostgreSQL a session advisory lock keyed by the budget id, taken after the effect's lock
/// and held until the section ends; the file store's journal lock covers it) and catches up
/// with every row committed before it. Every DISPATCHED of a budgeted effect is written under
/// its budget's lock, so every reservation taken is read, and none can be taken until the entry
/// that decides is written in the same hold. Entries that release a reservation (a resolving
/// REFUSED) are written under the effect's lock only: one committing meanwhile may be missed,
/// and its reservation is then still counted — a refusal too many, never an admission over the
/// cap. Every caller goes through here.
///
/// Counts every other effect of the budget that holds a reservation (committed, open or
/// ambiguous) at the amount its DISPATCHED admitted, then this effect's `amount` (its own
/// reservation, if it holds one, is never counted twice), and asks `store` for the cap.
pub(crate) fn reckon_under_budget_lock(
    j: &mut Section<'_>,
    store: &dyn BudgetStore,
    eid: &str,
    budget: &Budget,
) -> Result<Reckoning, GateError> {
    if !j.holds_lock() {
        return Err(GateError::Journal(JournalError::Poisoned {
            path: j.shown_path(),
            reason: format!("budget {:?} was read without the effect's lock", budget.id),
        }));
    }
    j.lock_budget(&budget.id)?;
    let counted = j.budget_holders(&budget.id, eid);
    let budget_err = |reason: String| GateError::Budget {
        effect_id: eid.to_owned(),
        budget: budget.id.clone(),
        reason,
    };
    let total = verify::budget::total_of(&counted, budget.amount).ok_or_else(|| {
        budget_err("its total passes 2^53 - 1 and cannot be recorded exactly".into())
    })?;
    let cap = store
        .cap(&budget.id)
        .map_err(|source| GateError::BudgetStore {
            effect_id: eid.to_owned(),
            source,
        })?;
    if cap.is_some_and(|c| !(0..=verify::canonical::MAX_SAFE_INTEGER).contains(&c)) {
        return Err(budget_err(format!(
            "the budget store gave cap {cap:?}, not an integer from 0 to 2^53 - 1"
        )));
    }
    Ok(Reckoning {
        within: verify::budget::admits(cap, total),
        record: BudgetRecord {
            id: budget.id.clone(),
            cap,
            amount: budget.amount,
            counted,
            total,
        },
    })
}

/// What the budget says of one effect, read under the journal lock.
#[derive(Debug, Clone)]
pub(crate) struct Reckoning {
    /// The record written on the entry that decides (`budget`, or `rechecked.budget`).
    pub record: BudgetRecord,
    /// The effect fits: the cap is known and the total is within it.
    pub within: bool,
}

impl Reckoning {
    /// The record as an entry field.
    pub fn field(&self) -> serde_json::Value {
        serde_json::to_value(&self.record).unwrap_or(serde_json::Value::Null)
    }

    /// One sentence on why the budget cannot take the effect.
    pub fn refusal(&self) -> String {
        let r = &self.record;
        match r.cap {
            None => format!("The budget store does not know budget {:?}.", r.id),
            Some(cap) => format!(
                "Budget {:?} cannot take {}: with the {} other effects it counts (committed, open or ambiguous) the total would be {}, over its cap of {}.",
                r.id,
                r.amount,
                r.counted.len(),
                r.total,
                cap
            ),
        }
    }
}
