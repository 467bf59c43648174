//! What the index knows about one effect, derived from its entries: each entry checked as the
//! next link of the effect's chain and folded into its state.

use super::{hash_tag, EntryLoc};
use serde_json::{Map, Value};
use verify::budget::{Budget, BudgetRecord};
use verify::canonical;
use verify::entry::Kind;

/// The open DISPATCHED of an effect.
#[derive(Debug, Clone)]
pub(crate) struct OpenDispatch {
    /// Index into the effect's entries.
    pub index: usize,
    /// The DISPATCHED entry's hash.
    pub hash: String,
}

/// What the index knows about one effect, derived from its entries.
#[derive(Debug, Default)]
pub(crate) struct EffectState {
    pub(super) entries: Vec<EntryLoc>,
    pub(super) last_hash: Option<String>,
    pub(super) last_ts: u64,
    /// Canonical JSON of the effect of the first PROPOSED.
    pub first_effect: Option<String>,
    /// (canonical lease, premises) of the first PROPOSED under each lease.
    pub(super) premises_by_lease: Vec<(String, Value)>,
    /// The open dispatch, if any.
    pub open: Option<OpenDispatch>,
    /// Any DISPATCHED (open or since settled): something may have been sent for this effect.
    pub dispatched: bool,
    /// Any COMMITTED.
    pub committed: bool,
    /// Any AMBIGUOUS.
    pub ambiguous: bool,
    /// A resolving REFUSED with code `target_error` or `target_failed_at_recovery` was written:
    /// the target answered it with a failure.
    pub target_rejected: bool,
    /// The budget the first PROPOSED named (fixed with the payload: a later proposal naming
    /// another is a conflicting payload).
    pub proposed_budget: Option<Budget>,
    /// The budget and amount the last DISPATCHED was admitted against.
    pub admitted_budget: Option<Budget>,
}

impl EffectState {
    /// The amount this effect holds of its budget: what its last DISPATCHED admitted, while that
    /// dispatch is open, committed or ambiguous (it may have landed); none once a REFUSED
    /// resolved it, or when it names no budget.
    pub fn budget_held(&self) -> Option<&Budget> {
        let holds = self.open.is_some() || self.committed || self.ambiguous;
        self.admitted_budget.as_ref().filter(|_| holds)
    }

    /// The premises of the first PROPOSED under this (canonical) lease.
    pub fn premises_for(&self, lease_canonical: &str) -> Option<&Value> {
        self.premises_by_lease
            .iter()
            .find(|(l, _)| l == lease_canonical)
            .map(|(_, p)| p)
    }

    /// Check that `entry` is the next link of this effect's chain (hash recomputes, `prev` is
    /// the last hash) and fold it into the state.
    pub(super) fn apply(
        &mut self,
        entry: &Map<String, Value>,
        loc: EntryLoc,
    ) -> Result<(), String> {
        let kind_text = entry
            .get("kind")
            .and_then(Value::as_str)
            .ok_or("no string `kind`")?;
        let kind = Kind::parse(kind_text).ok_or_else(|| format!("unknown kind {kind_text:?}"))?;
        let hash = entry
            .get("hash")
            .and_then(Value::as_str)
            .ok_or("no string `hash`")?;
        let computed = verify::entry::compute_hash(entry).map_err(|e| e.to_string())?;
        if computed != hash {
            return Err(format!(
                "its hash does not recompute (stored {hash}, computed {computed}): the line was changed after it was written"
            ));
        }
        let prev = entry.get("prev").ok_or("no `prev`")?;
        let expected = self.last_hash.as_deref();
        if prev.as_str() != expected || (expected.is_none() && !prev.is_null()) {
            return Err(format!(
                "its `prev` is {prev} but the effect's last entry is {}: the line is out of place (replayed, merged or reordered)",
                expected.map_or("none".to_owned(), |h| format!("\"{h}\""))
            ));
        }
        let ts = entry
            .get("ts_ms")
            .and_then(Value::as_u64)
            .ok_or("no integer `ts_ms`")?;
        let index = self.entries.len();
        if index == 0 && kind != Kind::Proposed {
            return Err(format!(
                "the effect's first entry is a {kind_text}: a chain starts with the PROPOSED a gate wrote"
            ));
        }
        match kind {
            Kind::Proposed => {
                let effect = entry.get("effect").ok_or("PROPOSED without `effect`")?;
                let lease = entry.get("lease").ok_or("PROPOSED without `lease`")?;
                let premises = entry.get("premises").cloned().unwrap_or(Value::Null);
                let effect_c = canonical::to_string(effect).map_err(|e| e.to_string())?;
                let lease_c = canonical::to_string(lease).map_err(|e| e.to_string())?;
                let budget = match entry.get("budget") {
                    None => self.proposed_budget.clone(),
                    Some(b) => Some(
                        serde_json::from_value::<Budget>(b.clone())
                            .map_err(|e| format!("PROPOSED with an unreadable `budget`: {e}"))?,
                    ),
                };
                if self.first_effect.is_none() {
                    self.first_effect = Some(effect_c);
                    self.proposed_budget = budget;
                }
                if self.premises_for(&lease_c).is_none() {
                    self.premises_by_lease.push((lease_c, premises));
                }
            }
            Kind::Authorized => {}
            Kind::Dispatched => {
                if self.open.is_some() {
                    return Err("a DISPATCHED while another dispatch of the effect is open".into());
                }
                self.open = Some(OpenDispatch {
                    index,
                    hash: hash.to_owned(),
                });
                self.dispatched = true;
                self.admitted_budget = match entry.get("budget") {
                    // A dispatch of a budgeted effect written without an admission (by a gate
                    // that predates budgets) still spends its proposed amount.
                    None => self.proposed_budget.clone(),
                    Some(b) => {
                        let r = serde_json::from_value::<BudgetRecord>(b.clone())
                            .map_err(|e| format!("DISPATCHED with an unreadable `budget`: {e}"))?;
                        Some(Budget {
                            id: r.id,
                            amount: r.amount,
                        })
                    }
                };
            }
            Kind::Committed => {
                self.open = None;
                self.committed = true;
            }
            Kind::Ambiguous => {
                self.open = None;
                self.ambiguous = true;
            }
            Kind::Refused => {
                if entry.get("resolves").and_then(Value::as_bool) == Some(true) {
                    self.open = None;
                    // The target answered this effect with a failure (at the send, or replayed
                    // to recovery): a later submit of it is refused, never sent again.
                    let code = entry.get("code").and_then(Value::as_str);
                    if matches!(code, Some("target_error" | "target_failed_at_recovery")) {
                        self.target_rejected = true;
                    }
                }
            }
        }
        self.entries.push(EntryLoc {
            tag: hash_tag(hash),
            ..loc
        });
        self.last_hash = Some(hash.to_owned());
        self.last_ts = self.last_ts.max(ts);
        Ok(())
    }
}
