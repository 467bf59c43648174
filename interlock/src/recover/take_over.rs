//! Taking an open dispatch over once its claim is free: the dispatch read under the journal
//! lock, and this recoverer's claim record written before any target call.

use super::{OpenDispatch, TakenOver};
use crate::claim::{ClaimRecord, Role};
use crate::decide::in_flight_start;
use crate::gate::{duration_ms, Gate, GateError};
use crate::journal::JournalError;
use crate::lease::LeaseStore;
use crate::store::{Claim, Section};
use crate::target::Target;
use serde_json::Value;

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// With the claim held: read the open dispatch under the journal lock, and write this gate's
    /// claim record (before any target call) with the instant the in-flight bound counts from:
    /// the one a dead recoverer of this host and boot recorded for the same dispatch, else now —
    /// when the claim was found free.
    ///
    /// Where claims can be lost while their holder lives (the store states a send window), an
    /// earlier holder that may still live — its record does not say it let the claim go, and it
    /// is not known dead — may still send until the window after its last confirmation, which
    /// came before now: until now plus the window. So may any holder before it that its record
    /// says may still send (an instant of this host and boot is taken as it is; any other, or a
    /// missing record, counts as now plus the window).
    pub(super) fn take_over(
        &self,
        eid: &str,
        claim: &Claim<'_>,
    ) -> Result<Option<TakenOver>, GateError> {
        let mut j = self.journal.lock(eid)?;
        let Some(dispatch) = self.open_dispatch(&j, eid)? else {
            return Ok(None);
        };
        let now = self.mono_ms();
        // A record that is not signed by a trusted key is not believed: recovery then counts
        // from its own take-over and waits out any earlier holder's whole send window, and
        // says so on the entry that settles the dispatch.
        let (record, record_ignored) = match self.trusted_record(&j, eid) {
            Ok(r) => (r.filter(|r| r.dispatch == dispatch.hash), None),
            Err(why) => (None, Some(why)),
        };
        let lost_holder_sends_until = self.lost_holder_sends_until(record.as_ref(), now);
        // Told "in use" by an earlier holder's resend: so is this recoverer.
        if record.as_ref().is_some_and(|r| r.told_in_use) {
            self.remember(&dispatch.hash, |m| m.heard_in_use = true);
        }
        let inherited = record
            .filter(|r| r.role == Role::Recover && r.owner.host == self.owner.host)
            .and_then(|r| r.in_flight_from)
            .filter(|m| m.boot == self.boot && !m.boot.is_empty())
            .map(|m| m.ms);
        let from = in_flight_start(now, inherited);
        let record = self.claim_record(
            Role::Recover,
            &dispatch.hash,
            self.now_ms(),
            Some(from),
            lost_holder_sends_until,
            self.journal.next_record_gen(&j, eid)?,
        );
        j.write_record(claim, eid, &record)?;
        drop(j);
        if let Some(why) = record_ignored {
            self.remember(&dispatch.hash, |m| m.record_ignored = Some(why));
        }
        let memory = self
            .memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&dispatch.hash)
            .cloned()
            .unwrap_or_default();
        Ok(Some(TakenOver {
            dispatch,
            memory,
            from,
            lost_holder_sends_until,
        }))
    }

    /// The effect's open dispatch, read from its DISPATCHED in the journal lock hold `j`
    /// (`None` when no dispatch is open); a DISPATCHED without the effect to resend is corrupt.
    fn open_dispatch(&self, j: &Section<'_>, eid: &str) -> Result<Option<OpenDispatch>, GateError> {
        let Some(open) = j.with_state(eid, |s| s.and_then(|s| s.open.clone())) else {
            return Ok(None);
        };
        let d = j.entry(eid, open.index)?;
        let Some(effect) = d.get("effect").cloned() else {
            return Err(GateError::Journal(JournalError::Corrupt {
                path: self.journal.path().to_owned(),
                line: 0,
                reason: format!(
                    "the open DISPATCHED {} of effect {eid} has no `effect` to resend",
                    open.hash
                ),
            }));
        };
        Ok(Some(OpenDispatch {
            hash: open.hash.clone(),
            ts_ms: d.get("ts_ms").and_then(Value::as_u64).unwrap_or(0),
            effect,
            lease: d.get("lease").cloned().unwrap_or(Value::Null),
            premises: d.get("premises").cloned().unwrap_or(Value::Null),
            budget: j.with_state(eid, |s| s.and_then(|s| s.admitted_budget.clone())),
        }))
    }

    /// Where the store states a send window, until when (monotonic) an earlier holder that may
    /// still live can send, as its trusted claim `record` of this dispatch says (`now` plus the
    /// window when there is none).
    fn lost_holder_sends_until(&self, record: Option<&ClaimRecord>, now: u64) -> Option<u64> {
        self.journal.send_window().and_then(|window| {
            let window_from_now = now.saturating_add(duration_ms(window));
            let Some(r) = record else {
                return Some(window_from_now);
            };
            let itself = (!r.released && r.owner.may_be_alive()).then_some(window_from_now);
            let before_it = r.earlier_sends_until.as_ref().map(|m| {
                if r.owner.host == self.owner.host && m.boot == self.boot && !m.boot.is_empty() {
                    m.ms
                } else {
                    window_from_now
                }
            });
            // Kept once passed: the in-flight bound still counts from it.
            itself.max(before_it)
        })
    }
}
