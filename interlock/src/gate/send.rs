//! `submit`'s step 6: the send, and settling the target's answer (a rejection by lookup).

use super::submit::{Prepared, SubmitRun};
use super::{recordable, Gate, GateError};
use crate::decide::{
    after_rejection, next_submit_step, LookupAnswer, SendAnswer, SubmitEnd, SubmitNext, SubmitStep,
};
use crate::lease::LeaseStore;
use crate::status::{Status, Step, Submitted, Via};
use crate::store::Claim;
use crate::target::{SendDeadline, Target, TargetError};
use serde_json::{json, Value};
use verify::entry::Kind;

/// How a rejected send settled.
pub(crate) enum Settled {
    /// COMMITTED (failed-but-landed) or REFUSED target_error was written.
    Done(Status, String),
    /// The lookup failed: the dispatch stays open.
    Open(String),
}

/// How [`next_submit_step`] classes the target's answer to a send that left.
fn send_answer(answer: &Result<Value, TargetError>) -> SendAnswer {
    match answer {
        Ok(_) => SendAnswer::Applied,
        Err(TargetError::Rejected { .. }) => SendAnswer::Rejected,
        // A request that did not leave is answered before this is asked.
        Err(TargetError::Unknown { .. } | TargetError::NotSent { .. }) => SendAnswer::Unknown,
        Err(TargetError::InFlight { .. }) => SendAnswer::InFlight,
        Err(TargetError::Replayed { .. }) => SendAnswer::Replayed,
    }
}

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Settle a send the target rejected: a lookup (if the target has one) decides between
    /// COMMITTED via failed-but-landed and a resolving REFUSED target_error.
    pub(crate) fn settle_rejected(
        &self,
        eid: &str,
        dispatch: &str,
        effect: &Value,
        reason: &str,
        (rechecked, claim): (Option<&Value>, Option<&Claim<'_>>),
    ) -> Result<Settled, GateError> {
        let lookup = self.target.capabilities().lookup;
        let mut looked_up = None;
        let mut evidence = Value::Null;
        let mut lookup_error = String::new();
        let end = loop {
            match after_rejection(lookup, looked_up) {
                SubmitNext::Finish(end) => break end,
                SubmitNext::Do(_) => {
                    looked_up = Some(match self.target.query(eid, effect) {
                        Ok(Some(found)) => {
                            evidence = found;
                            LookupAnswer::Found
                        }
                        Ok(None) => LookupAnswer::NotFound,
                        Err(e) => {
                            lookup_error = e.to_string();
                            LookupAnswer::Failed
                        }
                    });
                }
            }
        };
        let (kind, mut fields, status, detail) = match end {
            SubmitEnd::Commit(via) => (
                Kind::Committed,
                json!({"via": via.as_str(), "evidence": recordable(evidence)}),
                Status::CommittedOnQuery,
                format!("the target rejected the send ({reason}) but a lookup found the effect"),
            ),
            SubmitEnd::Refuse(code) => {
                let why = if lookup {
                    format!("The target rejected the send ({reason}) and a lookup did not find it, so it is settled as not done and never resent.")
                } else {
                    format!("The target rejected the send ({reason}); it is settled as not done and never resent.")
                };
                (
                    Kind::Refused,
                    json!({"code": code.as_str(), "reason": why, "resolves": true}),
                    Status::Refused(code),
                    why,
                )
            }
            SubmitEnd::LeaveOpen | SubmitEnd::NotAdmitted(_) | SubmitEnd::ClaimHeld => {
                return Ok(Settled::Open(format!(
                    "the target rejected the send ({reason}) and the lookup that would settle it failed ({lookup_error}); the dispatch stays open for recovery"
                )))
            }
        };
        if let (Some(r), Some(m)) = (rechecked, fields.as_object_mut()) {
            m.insert("rechecked".into(), r.clone());
        }
        match self.append_if_open(eid, dispatch, kind, fields, claim)? {
            Some(_) => Ok(Settled::Done(status, detail)),
            None => Err(GateError::LostDispatch {
                effect_id: eid.to_owned(),
            }),
        }
    }

    /// Step 6: send, and settle what [`next_submit_step`] makes of the answer.
    pub(super) fn send(
        &self,
        prep: &Prepared<'_>,
        mut run: SubmitRun<'_>,
    ) -> Result<Submitted, GateError> {
        let dispatch = run.dispatch.clone();
        let deadline = match self.confirm_claim(prep, &run) {
            Ok(deadline) => deadline,
            Err(not_sent) => return Ok(not_sent),
        };
        let answer = self
            .target
            .apply_before(&prep.eid, &prep.p.effect, &dispatch, deadline);
        if let Err(TargetError::NotSent { reason }) = &answer {
            if let Some(claim) = run.claim.take() {
                claim.release(&self.key);
            }
            return Ok(prep.answer(
                Status::InFlight,
                Some(format!(
                    "The request did not leave ({reason}); nothing was sent and recovery will settle the dispatch."
                )),
            ));
        }
        run.facts.sent = Some(send_answer(&answer));
        let claim = run.claim.take();
        match (next_submit_step(&run.facts), answer) {
            (SubmitNext::Finish(SubmitEnd::Commit(via)), Ok(evidence)) => {
                self.observe(Step::Sent);
                self.commit_sent(prep, &dispatch, via, evidence, claim)
            }
            (
                SubmitNext::Do(SubmitStep::LookupRejected)
                | SubmitNext::Finish(SubmitEnd::Refuse(_)),
                Err(TargetError::Rejected { reason }),
            ) => self.settle_sent_rejection(prep, &dispatch, &reason, claim),
            (_, answer) => Ok(self.leave_open(prep, &answer, claim)),
        }
    }

    /// Before the send: the deadline the request must leave by. A holder that cannot confirm it
    /// still holds the claim (a lost database session) does not send: its answer (IN_FLIGHT,
    /// recovery settles the dispatch once the claim is free) is the error.
    fn confirm_claim(
        &self,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
    ) -> Result<SendDeadline, Submitted> {
        match run.claim.as_ref().map(Claim::confirm) {
            Some(Ok(deadline)) => Ok(deadline),
            Some(Err(e)) => Err(prep.answer(
                Status::InFlight,
                Some(format!(
                    "The claim could not be confirmed before the send ({e}); nothing was sent and recovery will settle the dispatch."
                )),
            )),
            None => Ok(SendDeadline::none()),
        }
    }

    /// The target applied the effect: COMMITTED is written (unless the claim was lost meanwhile,
    /// when recovery settles it) and the claim removed.
    fn commit_sent(
        &self,
        prep: &Prepared<'_>,
        dispatch: &str,
        via: Via,
        evidence: Value,
        claim: Option<Claim<'_>>,
    ) -> Result<Submitted, GateError> {
        let written = match self.append_if_open(
            &prep.eid,
            dispatch,
            Kind::Committed,
            json!({"via": via.as_str(), "evidence": recordable(evidence)}),
            claim.as_ref(),
        ) {
            Err(GateError::ClaimLost { reason, .. }) => {
                return Ok(prep.answer(
                    Status::InFlight,
                    Some(format!("The credit was sent, but the claim was lost before COMMITTED could be written ({reason}); recovery will settle the dispatch.")),
                ))
            }
            other => other?,
        };
        if written.is_none() {
            return Err(GateError::LostDispatch {
                effect_id: prep.eid.clone(),
            });
        }
        if let Some(claim) = claim {
            claim.remove();
        }
        self.observe(Step::Committed);
        Ok(prep.answer(Status::Committed, None))
    }

    /// The target rejected the effect: settle by lookup ([`Gate::settle_rejected`]); the claim is
    /// removed when the dispatch is settled, let go when it stays open.
    fn settle_sent_rejection(
        &self,
        prep: &Prepared<'_>,
        dispatch: &str,
        reason: &str,
        claim: Option<Claim<'_>>,
    ) -> Result<Submitted, GateError> {
        let settled = self.settle_rejected(
            &prep.eid,
            dispatch,
            &prep.p.effect,
            reason,
            (None, claim.as_ref()),
        );
        match settled {
            Err(GateError::ClaimLost { reason, .. }) => Ok(prep.answer(
                Status::InFlight,
                Some(format!("The send was rejected, but the claim was lost before the dispatch could be settled ({reason}); recovery will settle it.")),
            )),
            Err(e) => Err(e),
            Ok(Settled::Done(status, detail)) => {
                if let Some(claim) = claim {
                    claim.remove();
                }
                Ok(prep.answer(status, Some(detail)))
            }
            Ok(Settled::Open(detail)) => {
                if let Some(claim) = claim {
                    claim.release(&self.key);
                }
                Ok(prep.answer(Status::InFlight, Some(detail)))
            }
        }
    }

    /// The send's outcome cannot be used: the dispatch stays open for recovery. The send
    /// returned, so nothing of this holder can still leave and the claim is let go.
    fn leave_open(
        &self,
        prep: &Prepared<'_>,
        answer: &Result<Value, TargetError>,
        claim: Option<Claim<'_>>,
    ) -> Submitted {
        if let Some(claim) = claim {
            claim.release(&self.key);
        }
        let why = match answer {
            Err(e) => e.reason().to_owned(),
            Ok(_) => "the answer could not be used".to_owned(),
        };
        prep.answer(
            Status::InFlight,
            Some(format!(
                "The send's outcome is unknown ({why}); the dispatch stays open and recovery will settle it."
            )),
        )
    }
}
