//! A recovery resend of the recorded payload under the same effect id, and what its answer
//! leaves the round with.

use super::answers::ResendAnswer;
use super::{AfterResend, OpenDispatch};
use crate::claim::Role;
use crate::decide::RecoveryFacts;
use crate::gate::{duration_ms, recordable, Gate, GateError, Settled};
use crate::lease::LeaseStore;
use crate::status::{Holder, RecoveryOutcome, Status, Step, Via};
use crate::store::Claim;
use crate::target::{Target, TargetError};
use serde_json::{json, Value};
use verify::entry::Kind;

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Resend the recorded payload (I5) under the same effect id. The in-flight count restarts
    /// from this send.
    pub(super) fn resend(
        &self,
        eid: &str,
        d: &OpenDispatch,
        via: Via,
        rechecked: &Value,
        facts: &RecoveryFacts,
        claim: &Claim<'_>,
    ) -> Result<AfterResend, GateError> {
        // Durable before the send: a resend is under way, with no instant to count from yet. A
        // request can stall before it leaves (a slow connect, a paused process), so no instant
        // taken before the call bounds when it left; a recoverer that finds this holder dead
        // counts from its own take-over (every request of a dead holder had left by then).
        self.write_resend_record(eid, d, facts, claim, None)?;
        let deadline = match claim.confirm() {
            Ok(deadline) => deadline,
            Err(e) => {
                let why = format!(
                    "The claim could not be confirmed before the resend ({e}); nothing was sent."
                );
                return Ok(AfterResend::Report(self.retry_later(Holder::Journal, why)));
            }
        };
        let result = self.target.apply_before(eid, &d.effect, &d.hash, deadline);
        // Whatever left, left before the call returned: the bound counts from here.
        let sent_at = self.mono_ms();
        let answer = ResendAnswer::new(&result, sent_at);
        let in_use = matches!(result, Err(TargetError::InFlight { .. }));
        self.remember(&d.hash, |m| {
            m.answers.push(answer);
            // The unknown answers before it are no longer a streak; and the claim record
            // written next says so, for any recoverer after this one.
            if in_use {
                m.heard_in_use = true;
                m.unknown_answers = 0;
            }
        });
        if result.is_err() {
            self.write_resend_record(eid, d, facts, claim, Some(sent_at))?;
        }
        match result {
            Ok(evidence) => self
                .commit_resent((eid, d), via, evidence, (rechecked, facts), claim)
                .map(AfterResend::Report),
            // A resend under the key that the service refused before executing it (a 400 or
            // 401 it does not save under the key) says nothing of the first request, which may
            // still be on its way: settle as after a replayed failure, by a lookup only once the
            // bound has passed since this resend, never by an immediate "not found".
            // After an "in use" answer, a rejection the service did not save under the key says
            // nothing of the request it said was executing: ask the key again.
            // It counts as an unknown answer: after enough of them in a row, recovery settles
            // by lookup, and AMBIGUOUS where it does not find the effect.
            Err(TargetError::Rejected { reason })
                if via == Via::RetryIdempotent && facts.heard_in_use =>
            {
                self.remember(&d.hash, |m| m.unknown_answers += 1);
                Ok(AfterResend::Report(self.retry_later(
                    Holder::Target,
                    format!(
                        "The service refused the resend without executing it ({reason}), after saying a request under this key was still executing; recovery asks the key again."
                    ),
                )))
            }
            Err(TargetError::Rejected { .. }) if via == Via::RetryIdempotent => {
                self.remember(&d.hash, |m| m.finished = true);
                Ok(AfterResend::Finished)
            }
            Err(TargetError::Rejected { reason }) => Ok(AfterResend::Report(
                match self.settle_rejected(
                    eid,
                    &d.hash,
                    &d.effect,
                    &reason,
                    (Some(rechecked), Some(claim)),
                )? {
                    Settled::Done(status, _) => RecoveryOutcome::Resolved(status),
                    Settled::Open(why) => self.retry_later(Holder::Target, why),
                },
            )),
            Err(TargetError::Replayed { .. }) => {
                self.remember(&d.hash, |m| m.finished = true);
                Ok(AfterResend::Finished)
            }
            Err(TargetError::NotSent { reason }) => Ok(AfterResend::Report(self.retry_later(
                Holder::Journal,
                format!("The resend did not leave ({reason}); nothing was sent."),
            ))),
            Err(TargetError::Unknown { reason }) => {
                self.remember(&d.hash, |m| m.unknown_answers += 1);
                Ok(AfterResend::Report(
                    self.unknown_resend(via, facts, sent_at, &reason),
                ))
            }
            // Evidence that a request under the key is executing now (DESIGN §4.10): not an
            // unknown answer, so it never ends the probing under the key. The bound counts from
            // this answer (the record written above says so), and the key is asked again.
            Err(TargetError::InFlight { reason }) => Ok(AfterResend::Report(
                self.in_use_resend(via, facts, sent_at, &reason),
            )),
        }
    }

    /// The service says an earlier request under the key is still executing: blocked for the
    /// retry interval under the key (its answer then is the earlier request's, once it ends),
    /// or, for a reapply, until the bound has passed since this answer.
    fn in_use_resend(
        &self,
        via: Via,
        facts: &RecoveryFacts,
        sent_at: u64,
        reason: &str,
    ) -> RecoveryOutcome {
        let until = match (via, facts.caps.max_in_flight) {
            (Via::RecoveryReapply, Some(bound)) => {
                let from = sent_at.max(facts.lost_holder_sends_until_ms.unwrap_or(0));
                self.wall_of(from).saturating_add(duration_ms(bound))
            }
            _ => self
                .now_ms()
                .saturating_add(duration_ms(self.config.retry_interval)),
        };
        RecoveryOutcome::Blocked {
            holder: Holder::Target,
            until_ms: until,
            reason: format!(
                "The service says an earlier request under this key is still executing ({reason}); the in-flight bound counts from this answer, and recovery asks again under the key."
            ),
        }
    }

    /// The claim record of a resend: `sent_by` is the instant by which its request had left
    /// (after the call returned), `None` while it may still be on its way out.
    fn write_resend_record(
        &self,
        eid: &str,
        d: &OpenDispatch,
        facts: &RecoveryFacts,
        claim: &Claim<'_>,
        sent_by: Option<u64>,
    ) -> Result<(), GateError> {
        let mut j = self.journal.lock(eid)?;
        let record = self.claim_record(
            Role::Recover,
            &d.hash,
            self.now_ms(),
            sent_by,
            facts.lost_holder_sends_until_ms,
            self.journal.next_record_gen(&j, eid)?,
        );
        j.write_record(claim, eid, &record)?;
        Ok(())
    }

    /// The resend applied the effect: COMMITTED via `via`, with the in-flight assumption of a
    /// reapply or the dedup age and assumed skew of a resend under the key.
    fn commit_resent(
        &self,
        (eid, d): (&str, &OpenDispatch),
        via: Via,
        evidence: Value,
        (rechecked, facts): (&Value, &RecoveryFacts),
        claim: &Claim<'_>,
    ) -> Result<RecoveryOutcome, GateError> {
        self.observe(Step::Sent);
        let status = Status::committed_via(via);
        let mut fields =
            json!({"via": via.as_str(), "evidence": recordable(evidence), "rechecked": rechecked});
        if via == Via::RecoveryReapply {
            self.record_assumption(&mut fields, facts);
        }
        if let (Via::RetryIdempotent, Some(m)) = (via, fields.as_object_mut()) {
            // Resent under the key because the dispatch looked younger than the dedup
            // window: its age on two hosts' wall clocks, and the skew assumed.
            m.insert("dedup_age_ms".into(), json!(facts.dispatch_age_ms));
            m.insert(
                "assumed_clock_skew_ms".into(),
                json!(duration_ms(self.config.dedup_margin)),
            );
        }
        let out = self.resolve((eid, &d.hash), Kind::Committed, fields, status, claim)?;
        self.observe(Step::Committed);
        Ok(out)
    }

    /// The resend's outcome is unknown: blocked until a reapply's request can no longer land
    /// (its in-flight bound from the send, or from when an earlier holder may still send), or
    /// for the retry interval.
    fn unknown_resend(
        &self,
        via: Via,
        facts: &RecoveryFacts,
        sent_at: u64,
        reason: &str,
    ) -> RecoveryOutcome {
        let until = match (via, facts.caps.max_in_flight) {
            (Via::RecoveryReapply, Some(bound)) => {
                let from = sent_at.max(facts.lost_holder_sends_until_ms.unwrap_or(0));
                self.wall_of(from).saturating_add(duration_ms(bound))
            }
            _ => self
                .now_ms()
                .saturating_add(duration_ms(self.config.retry_interval)),
        };
        RecoveryOutcome::Blocked {
            holder: Holder::Target,
            until_ms: until,
            reason: format!("The resend's outcome is unknown ({reason}); the dispatch stays open."),
        }
    }
}
