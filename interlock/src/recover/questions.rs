//! The questions a recovery round asks, one per step: the premises, the lease (and with it the
//! budget) re-checked, and the lookup.

use super::{OpenDispatch, Round};
use crate::budget::{reckon_under_budget_lock, BudgetError, BudgetStore};
use crate::gate::{recordable, Gate};
use crate::lease::LeaseStore;
use crate::status::{Holder, RecoveryOutcome};
use crate::target::Target;
use serde_json::{json, Value};

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Re-check the premises recorded on the DISPATCHED (I3); `Some` when it cannot now.
    pub(super) fn recheck_premises(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        match self.target.check_premises(eid, &d.premises) {
            Ok(v) => {
                round.facts.premises_hold = Some(v.is_empty());
                round.rechecked.insert("violations".into(), json!(v));
                None
            }
            Err(e) => Some(self.retry_later(
                Holder::Target,
                format!("The premises could not be re-checked ({e}); nothing was sent."),
            )),
        }
    }

    /// Re-check the lease recorded on the DISPATCHED (I4) — the second time, right before a
    /// reapply; `Some` when the store cannot answer now.
    pub(super) fn recheck_lease(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        let lc = match self.leases.check(&d.lease, &d.effect) {
            Ok(lc) => lc,
            Err(e) => {
                return Some(self.retry_later(
                    Holder::LeaseStore,
                    format!("The lease could not be re-checked ({e}); nothing was sent."),
                ))
            }
        };
        let r = &mut round.rechecked;
        r.insert("lease_live".into(), json!(lc.live));
        r.insert("grant".into(), lc.grant.map_or(Value::Null, recordable));
        if round.facts.lease_live.is_some() {
            round.facts.lease_live_before_resend = Some(lc.live);
        } else {
            round.facts.lease_live = Some(lc.live);
        }
        self.recheck_budget(eid, d, round)
    }

    /// Re-check the budget the DISPATCHED was admitted against (DESIGN §2.8), with the lease:
    /// the cap now, and the other effects' reservations now, read under the journal lock (this
    /// effect's own is its amount, counted once). `Some` when it cannot be read now.
    fn recheck_budget(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        let budget = d.budget.as_ref()?;
        // A gate without a budget store knows no budget: the effect is not resent.
        let store: &dyn BudgetStore = match &self.budgets {
            Some(store) => store.as_ref(),
            None => &NoBudgets,
        };
        let reckoned = match self.journal.lock(eid) {
            Ok(mut j) => reckon_under_budget_lock(&mut j, store, eid, budget),
            Err(e) => {
                return Some(self.retry_later(
                    Holder::Journal,
                    format!("The budget could not be re-checked ({e}); nothing was sent."),
                ))
            }
        };
        match reckoned {
            Ok(r) => {
                round.facts.budget_within = Some(r.within);
                round.rechecked.insert("budget".into(), r.field());
                None
            }
            // The budget store is reported as the lease store: both are the gate's authority.
            Err(e) => Some(self.retry_later(
                Holder::LeaseStore,
                format!("The budget could not be re-checked ({e}); nothing was sent."),
            )),
        }
    }

    /// Look the effect up, noting when the lookup left; `Some` when the lookup failed.
    pub(super) fn look_up(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        match self.target.query(eid, &d.effect) {
            Ok(found) => {
                round.facts.found = Some(found.is_some());
                round.facts.looked_up_at_ms = Some(round.facts.in_flight.now_ms);
                round.evidence = found.map_or(Value::Null, recordable);
                None
            }
            Err(e) => Some(self.retry_later(
                Holder::Target,
                format!("The lookup failed ({e}); nothing was sent."),
            )),
        }
    }
}

/// The budget store of a gate that has none: it knows no budget.
struct NoBudgets;

impl BudgetStore for NoBudgets {
    fn cap(&self, _id: &str) -> Result<Option<i64>, BudgetError> {
        Ok(None)
    }
}
