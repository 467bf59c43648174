//! The decisions that end a recovery round, carried out: COMMITTED found, a resolving REFUSED,
//! AMBIGUOUS, or a wait for the in-flight bound.

use super::answers::Answers;
use super::{OpenDispatch, Round};
use crate::decide::{Next, RecoveryFacts};
use crate::gate::{duration_ms, Gate, GateError};
use crate::lease::LeaseStore;
use crate::status::{Holder, RecoveryOutcome, RefusalCode, Status, Via, AMBIGUOUS_CODE};
use crate::store::Claim;
use crate::target::Target;
use serde_json::{json, Value};
use verify::entry::Kind;

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Carry out a decision that ends the round: COMMITTED found, a resolving REFUSED, AMBIGUOUS,
    /// or a wait for the in-flight bound.
    pub(super) fn conclude(
        &self,
        (eid, d): (&str, &OpenDispatch),
        decided: Next,
        round: Round,
        claim: &Claim<'_>,
    ) -> Result<RecoveryOutcome, GateError> {
        let rechecked = Value::Object(round.rechecked);
        match decided {
            Next::CommitFound => {
                let fields = json!({"via": Via::RecoveryQuery.as_str(), "evidence": round.evidence, "rechecked": rechecked});
                self.resolve(
                    (eid, &d.hash),
                    Kind::Committed,
                    fields,
                    Status::CommittedOnQuery,
                    claim,
                )
            }
            Next::Refuse(code) => {
                let reason = self.refusal_reason(code, &d.hash);
                let mut fields = json!({"code": code.as_str(), "reason": reason, "rechecked": rechecked, "resolves": true});
                if let (RefusalCode::OverBudget, Some(m)) = (code, fields.as_object_mut()) {
                    // Where every over_budget refusal keeps it, for verify.
                    let budget = m.get("rechecked").and_then(|r| r.get("budget")).cloned();
                    m.insert("budget".into(), budget.unwrap_or(Value::Null));
                }
                self.record_assumption(&mut fields, &round.facts);
                self.resolve(
                    (eid, &d.hash),
                    Kind::Refused,
                    fields,
                    Status::Refused(code),
                    claim,
                )
            }
            Next::Ambiguous(why) => {
                let fields =
                    json!({"code": AMBIGUOUS_CODE, "reason": why.reason(), "rechecked": rechecked});
                self.resolve(
                    (eid, &d.hash),
                    Kind::Ambiguous,
                    fields,
                    Status::Ambiguous,
                    claim,
                )
            }
            Next::WaitInFlight { until_ms } => {
                let counted_from = self.wall_of(round.facts.in_flight.counted_from_ms);
                let until = self.wall_of(until_ms);
                let reason = match round.facts.lost_holder_sends_until_ms {
                    Some(sends_until) if sends_until > round.facts.in_flight.counted_from_ms => {
                        format!(
                            "A lookup did not find the effect, but a request may still land at the target until {until} ms: an earlier holder of the claim may live (its claim was lost, not necessarily its process) and send until {} ms (the store's send window from when this recovery took the claim over), and the declared in-flight bound counts from then.",
                            self.wall_of(sends_until)
                        )
                    }
                    _ => format!(
                        "A lookup did not find the effect, but a request may still land at the target until {until} ms (its declared in-flight bound, counted from {counted_from} ms, when this recovery found the claim free or last sent)."
                    ),
                };
                Ok(RecoveryOutcome::Blocked {
                    holder: Holder::Target,
                    until_ms: until,
                    reason,
                })
            }
            // Questions are asked in `settle`; none reaches here.
            Next::CheckPremises
            | Next::CheckLease
            | Next::CheckLeaseBeforeResend
            | Next::Lookup
            | Next::Resend(_) => Ok(self.retry_later(
                Holder::Target,
                "Recovery reached a question where it expected a decision; it tries again.".into(),
            )),
        }
    }

    /// Record on a REFUSED or REAPPLIED the in-flight assumption its "not found" rests on, and
    /// beside it, when an earlier holder may have lived, the send window it waited out and the
    /// instant that holder could send until.
    pub(super) fn record_assumption(&self, fields: &mut Value, facts: &RecoveryFacts) {
        if let (Some(m), Some(bound)) = (fields.as_object_mut(), facts.caps.max_in_flight) {
            m.insert("assumed_max_in_flight_ms".into(), json!(duration_ms(bound)));
            if let (Some(until), Some(window)) =
                (facts.lost_holder_sends_until_ms, self.journal.send_window())
            {
                m.insert("assumed_send_window_ms".into(), json!(duration_ms(window)));
                m.insert("holder_sends_until_ms".into(), json!(self.wall_of(until)));
            }
            // Counted from an "in use" answer: converted as that answer's `at_ms` is (the same
            // monotonic instant, the same offset), so a reader sees the bound start at it.
            let from = facts.in_flight.counted_from_ms;
            m.insert("counted_from_ms".into(), json!(self.wall_of(from)));
        }
    }
    /// Write the resolving entry (only while the dispatch is still open) and report it.
    pub(super) fn resolve(
        &self,
        (eid, d_hash): (&str, &str),
        kind: Kind,
        fields: Value,
        status: Status,
        claim: &Claim<'_>,
    ) -> Result<RecoveryOutcome, GateError> {
        let mut fields = fields;
        let to_wall = |mono: u64| self.wall_of(mono);
        if let (Some(m), Some(answers)) = (
            fields.as_object_mut(),
            self.answers_of(d_hash).field(&to_wall),
        ) {
            m.insert("resend_answers".into(), answers);
        }
        match self.append_if_open(eid, d_hash, kind, fields, Some(claim))? {
            Some(_) => Ok(RecoveryOutcome::Resolved(status)),
            None => Err(GateError::LostDispatch {
                effect_id: eid.to_owned(),
            }),
        }
    }
}

/// The one-sentence reason of a refusal at recovery.
impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// The answers this recoverer heard to its resends of `dispatch`.
    pub(super) fn answers_of(&self, dispatch: &str) -> Answers {
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(dispatch)
            .map(|m| m.answers.clone())
            .unwrap_or_default()
    }

    /// A resolving refusal's reason; when the service failed the request, with what the
    /// service said last.
    fn refusal_reason(&self, code: RefusalCode, dispatch: &str) -> String {
        let reason = refusal_reason(code);
        match (code, self.answers_of(dispatch).last()) {
            (RefusalCode::TargetFailedAtRecovery, Some(last)) => format!(
                "{reason} The service's last answer to a resend ({}): {}",
                last.class.as_str(),
                last.said
            ),
            _ => reason.to_owned(),
        }
    }
}

fn refusal_reason(code: RefusalCode) -> &'static str {
    match code {
        RefusalCode::LeaseAtRecovery => "The lease no longer holds at recovery and a lookup, trusted once the target's in-flight bound had passed, did not find the send.",
        RefusalCode::StalePremiseAtRecovery => "A premise no longer holds at recovery and a lookup, trusted once the target's in-flight bound had passed, did not find the send.",
        RefusalCode::OverBudget => "The budget can no longer take the effect at recovery (its cap was lowered, or the budget is unknown now) and a lookup, trusted once the target's in-flight bound had passed, did not find the send.",
        RefusalCode::TargetFailedAtRecovery => "The service failed the request (a saved error replayed under its key, or unknown answers past the gate's limit) and a lookup, trusted once the target's in-flight bound had passed, did not find it.",
        _ => "Recovery refused the effect.",
    }
}
