//! `submit`'s steps before the send (DESIGN §2.3): the admission, PROPOSED, AUTHORIZED, the
//! premises re-checked, the claim, and DISPATCHED.

use super::{recordable, short, Gate, GateError};
use crate::budget::{check_named, reckon_under_budget_lock};
use crate::claim::Role;
use crate::decide::{
    admit, next_submit_step, Admission, AdmissionPoint, EffectFacts, SubmitEnd, SubmitFacts,
    SubmitNext, SubmitStep,
};
use crate::journal::EffectState;
use crate::lease::{LeaseCheck, LeaseStore};
use crate::proposal::{effect_id, Proposal};
use crate::status::{RefusalCode, Status, Step, Submitted};
use crate::store::{Claim, Section};
use crate::target::Target;
use serde_json::{json, Value};
use verify::canonical;
use verify::entry::Kind;

/// The admission facts of an effect's journal state for `prep`: its payload (and the budget it
/// names, fixed with the payload by the first PROPOSED) against the first PROPOSED's.
fn facts_of(state: Option<&EffectState>, prep: &Prepared<'_>) -> Option<EffectFacts> {
    state.map(|st| EffectFacts {
        open: st.open.is_some(),
        committed: st.committed,
        ambiguous: st.ambiguous,
        target_rejected: st.target_rejected,
        payload_differs: st.first_effect.as_ref().is_some_and(|f| {
            *f != prep.effect_c || st.proposed_budget.as_ref() != prep.p.budget.as_ref()
        }),
    })
}

/// The reason of `REFUSED:conflicting_payload` when nothing was ever dispatched for the effect
/// (DESIGN §2: the refusal closes only the new proposal; the gate never sends a payload no caller
/// submits).
const NEVER_DISPATCHED_CONFLICT: &str = "The payload differs from the one this effect was first proposed with; the first proposal fixes it. Nothing was ever dispatched for this effect, so nothing was sent: this refusal closes only the new proposal. Submitting the first payload again sends it if the lease and its premises still hold; otherwise a person decides.";

/// A proposal with its id and canonical forms, as the steps of `submit` need it.
pub(super) struct Prepared<'p> {
    pub(super) p: &'p Proposal,
    pub(super) eid: String,
    effect_c: String,
    lease_c: String,
}

impl Prepared<'_> {
    pub(super) fn answer(&self, status: Status, detail: Option<String>) -> Submitted {
        Submitted {
            effect_id: self.eid.clone(),
            status,
            detail,
        }
    }
}

/// A step of `submit` either goes on with a value or has the final answer.
enum Flow<T> {
    Go(T),
    Done(Submitted),
}

/// What `submit` carries from step to step.
pub(super) struct SubmitRun<'g> {
    /// The answers so far, for [`next_submit_step`].
    pub(super) facts: SubmitFacts,
    /// The premises the effect is decided on (set by step 1).
    pub(super) decided_on: Value,
    /// The checks record for DISPATCHED (`lease_live`, `grant`, `violations`).
    pub(super) checks: Value,
    /// The premise violations found by step 3.
    pub(super) violations: Vec<String>,
    /// The claim, once taken.
    pub(super) claim: Option<Claim<'g>>,
    /// The DISPATCHED hash, once written.
    pub(super) dispatch: String,
}

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Check the lease, as an error for `submit` when the store cannot answer.
    fn check_lease(&self, prep: &Prepared<'_>) -> Result<LeaseCheck, GateError> {
        self.leases
            .check(&prep.p.lease, &prep.p.effect)
            .map_err(|source| GateError::Lease {
                effect_id: prep.eid.clone(),
                source,
            })
    }

    /// Submit a proposal (DESIGN §2.3, §2.4). [`next_submit_step`] names each step in turn from
    /// the answers so far; each step is a function below that records its answer and asks
    /// [`next_submit_step`] whether to go on (writing its entry) or how to end:
    ///
    /// 1. [`record_proposal`](Self::record_proposal): open dispatch → `IN_FLIGHT`; payload
    ///    differs from the first PROPOSED → `REFUSED:conflicting_payload`; AMBIGUOUS →
    ///    `AMBIGUOUS`; COMMITTED → `DUPLICATE_IGNORED`; else PROPOSED;
    /// 2. [`authorize`](Self::authorize): lease → `REFUSED:lease`, or AUTHORIZED;
    /// 3. [`check_premises_before_dispatch`](Self::check_premises_before_dispatch): the premises
    ///    (those of the first PROPOSED under the same lease) re-checked at the target →
    ///    `REFUSED:stale_premise`;
    /// 4. [`take_claim`](Self::take_claim): held by another process → `IN_FLIGHT`;
    /// 5. [`write_dispatched`](Self::write_dispatched) under the claim and the journal lock: the
    ///    blockers of 1 again (plus a rejection settled earlier → `REFUSED:target_error`), the
    ///    **lease checked again** (a revocation during the premise reads is seen →
    ///    `REFUSED:lease`), DISPATCHED and the claim record;
    /// 6. [`send`](Self::send): result → COMMITTED → `COMMITTED`; rejected → lookup: found →
    ///    `COMMITTED_ON_QUERY`, else `REFUSED:target_error`; unknown or a replayed failure → the
    ///    dispatch stays open and the answer is `IN_FLIGHT`: recovery settles it.
    ///
    /// So the lease is checked at proposal, right before DISPATCHED (under the claim and the
    /// journal lock), and at recovery before any resend.
    pub fn submit(&self, p: &Proposal) -> Result<Submitted, GateError> {
        let prep = self.prepare(p)?;
        let mut run = SubmitRun {
            facts: SubmitFacts::new(self.target.capabilities().lookup),
            decided_on: Value::Null,
            checks: Value::Null,
            violations: Vec::new(),
            claim: None,
            dispatch: String::new(),
        };
        loop {
            let step = match next_submit_step(&run.facts) {
                SubmitNext::Do(step) => step,
                // Each end is carried out by the step whose answer led to it; this is reached
                // only if a step went on where the decision ends.
                SubmitNext::Finish(end) => {
                    let mut j = self.journal.lock(&prep.eid)?;
                    return self.finish(&mut j, &prep, &run, end);
                }
            };
            let flow = match step {
                SubmitStep::RecordProposal => self.record_proposal(&prep, &mut run)?,
                SubmitStep::CheckLease => self.authorize(&prep, &mut run)?,
                SubmitStep::CheckPremises => {
                    self.check_premises_before_dispatch(&prep, &mut run)?
                }
                SubmitStep::TakeClaim => self.take_claim(&prep, &mut run)?,
                SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim => {
                    self.write_dispatched(&prep, &mut run)?
                }
                SubmitStep::Send | SubmitStep::LookupRejected => return self.send(&prep, run),
            };
            match (flow, step) {
                (Flow::Done(s), _) => return Ok(s),
                (Flow::Go(()), SubmitStep::RecordProposal) => self.observe(Step::Proposed),
                (Flow::Go(()), SubmitStep::CheckLease) => self.observe(Step::Authorized),
                (Flow::Go(()), SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim) => {
                    self.observe(Step::Dispatched)
                }
                (Flow::Go(()), _) => {}
            }
        }
    }

    /// The effect id and the canonical forms (floats and out-of-range integers refused).
    fn prepare<'p>(&self, p: &'p Proposal) -> Result<Prepared<'p>, GateError> {
        let eid = effect_id(p);
        let canon = |field: &'static str, v: &Value| {
            canonical::to_string(v).map_err(|source| GateError::InvalidProposal {
                effect_id: eid.clone(),
                field,
                source,
            })
        };
        let effect_c = canon("effect", &p.effect)?;
        let lease_c = canon("lease", &p.lease)?;
        canon("premises", &p.premises)?;
        check_named(&eid, p.budget.as_ref(), self.budgets.is_some())?;
        Ok(Prepared {
            p,
            eid,
            effect_c,
            lease_c,
        })
    }

    /// Carry out an end that [`next_submit_step`] decided before the send, in the journal lock
    /// hold `j` of the step that decided it: write the entry the end names, and answer.
    fn finish(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
        end: SubmitEnd,
    ) -> Result<Submitted, GateError> {
        let refuse = |j: &mut Section<'_>, code: RefusalCode, why: String| {
            self.append(
                j,
                &prep.eid,
                Kind::Refused,
                json!({"code": code.as_str(), "reason": why, "checks": run.checks}),
            )?;
            Ok(prep.answer(Status::Refused(code), Some(why)))
        };
        match end {
            SubmitEnd::NotAdmitted(admission) => self.short_circuit(j, prep, admission),
            SubmitEnd::Refuse(code @ RefusalCode::Lease) => {
                let when = if run.facts.lease_live_under_claim.is_some() {
                    " at dispatch (it changed after the proposal was authorized)"
                } else {
                    ""
                };
                let why = format!(
                    "The lease {} is not live or does not cover this effect{when}.",
                    short(&prep.lease_c)
                );
                refuse(j, code, why)
            }
            SubmitEnd::Refuse(code @ RefusalCode::StalePremise) => {
                let why = format!(
                    "A premise the decision was made on no longer holds: {}.",
                    run.violations.join("; ")
                );
                refuse(j, code, why)
            }
            SubmitEnd::ClaimHeld => Ok(prep.answer(
                Status::InFlight,
                Some("Another process holds this effect's claim (it is dispatching, sending or recovering it).".into()),
            )),
            // Ends that follow a send are carried out by `send`; before one, nothing of them
            // applies: write nothing, and leave whatever is open to recovery.
            SubmitEnd::Refuse(_) | SubmitEnd::Commit(_) | SubmitEnd::LeaveOpen => {
                Ok(prep.answer(Status::InFlight, Some(OPEN_DETAIL.to_owned())))
            }
        }
    }

    /// Step 1: the admission, then PROPOSED, in one journal lock hold. Goes on having set the
    /// premises the effect is decided on: those of the first PROPOSED under the same lease,
    /// else these.
    fn record_proposal(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let p = prep.p;
        let mut proposed = json!({
            "agent": p.agent,
            "lease": p.lease,
            "premises": p.premises,
            "effect": p.effect,
        });
        if let (Some(r), Some(m)) = (&p.request_id, proposed.as_object_mut()) {
            m.insert("request_id".into(), Value::String(r.clone()));
        }
        if let (Some(b), Some(m)) = (&p.budget, proposed.as_object_mut()) {
            m.insert("budget".into(), json!(b));
        }
        let mut j = self.journal.lock(&prep.eid)?;
        let facts = j.with_state(&prep.eid, |s| facts_of(s, prep));
        run.facts.admission = Some(admit(facts, AdmissionPoint::Proposal));
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            if end == SubmitEnd::NotAdmitted(Admission::Conflicting) {
                // The conflicting proposal is recorded too, then refused.
                self.append(&mut j, &prep.eid, Kind::Proposed, proposed)?;
            }
            return self.finish(&mut j, prep, run, end).map(Flow::Done);
        }
        run.decided_on = j
            .with_state(&prep.eid, |s| {
                s.and_then(|s| s.premises_for(&prep.lease_c)).cloned()
            })
            .unwrap_or_else(|| p.premises.clone());
        self.append(&mut j, &prep.eid, Kind::Proposed, proposed)?;
        Ok(Flow::Go(()))
    }

    /// The answer (and entry, where one is written) of an admission that does not proceed.
    fn short_circuit(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        admission: Admission,
    ) -> Result<Submitted, GateError> {
        let (code, why) = match admission {
            Admission::Proceed | Admission::InFlight => {
                return Ok(prep.answer(Status::InFlight, Some(OPEN_DETAIL.to_owned())))
            }
            Admission::Ambiguous => {
                return Ok(prep.answer(Status::Ambiguous, Some(AMBIGUOUS_DETAIL.to_owned())))
            }
            Admission::Duplicate => {
                return Ok(prep.answer(
                    Status::DuplicateIgnored,
                    Some(DUPLICATE_DETAIL.to_owned()),
                ))
            }
            Admission::Conflicting => (
                RefusalCode::ConflictingPayload,
                if j.with_state(&prep.eid, |s| s.is_some_and(|st| st.dispatched)) {
                    "The payload differs from the one this effect was first proposed with; the first proposal fixes it."
                } else {
                    NEVER_DISPATCHED_CONFLICT
                },
            ),
            Admission::TargetRejected => (
                RefusalCode::TargetError,
                "The target already rejected this effect and it was settled as not done; a rejected effect is never resent.",
            ),
        };
        self.append(
            j,
            &prep.eid,
            Kind::Refused,
            json!({"code": code.as_str(), "reason": why}),
        )?;
        Ok(prep.answer(Status::Refused(code), Some(why.to_owned())))
    }

    /// Step 2: the lease at proposal → REFUSED:lease or AUTHORIZED. Goes on having set the
    /// checks record (`lease_live`, `grant`) for DISPATCHED.
    fn authorize(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let lc = self.check_lease(prep)?;
        run.checks = json!({"lease_live": lc.live, "grant": lc.grant.map(recordable)});
        run.facts.lease_live = Some(lc.live);
        let mut j = self.journal.lock(&prep.eid)?;
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            return self.finish(&mut j, prep, run, end).map(Flow::Done);
        }
        self.append(
            &mut j,
            &prep.eid,
            Kind::Authorized,
            json!({"lease": prep.p.lease}),
        )?;
        Ok(Flow::Go(()))
    }

    /// Step 3: the premises re-checked at the target right before dispatch (I3).
    fn check_premises_before_dispatch(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let violations = self
            .target
            .check_premises(&prep.eid, &run.decided_on)
            .map_err(|source| GateError::PremiseCheck {
                effect_id: prep.eid.clone(),
                source,
            })?;
        if let Some(m) = run.checks.as_object_mut() {
            m.insert("violations".into(), json!(violations));
        }
        run.facts.premises_hold = Some(violations.is_empty());
        run.violations = violations;
        match next_submit_step(&run.facts) {
            SubmitNext::Finish(end) => {
                let mut j = self.journal.lock(&prep.eid)?;
                self.finish(&mut j, prep, run, end).map(Flow::Done)
            }
            SubmitNext::Do(_) => Ok(Flow::Go(())),
        }
    }

    /// Step 4: the effect's claim; held by another process → `IN_FLIGHT`, nothing written.
    fn take_claim<'g>(
        &'g self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'g>,
    ) -> Result<Flow<()>, GateError> {
        run.claim = self.journal.try_take(&prep.eid)?;
        run.facts.claim_taken = Some(run.claim.is_some());
        match next_submit_step(&run.facts) {
            SubmitNext::Finish(SubmitEnd::ClaimHeld) => Ok(Flow::Done(prep.answer(
                Status::InFlight,
                Some("Another process holds this effect's claim (it is dispatching, sending or recovering it).".into()),
            ))),
            SubmitNext::Finish(end) => {
                let mut j = self.journal.lock(&prep.eid)?;
                self.finish(&mut j, prep, run, end).map(Flow::Done)
            }
            SubmitNext::Do(_) => Ok(Flow::Go(())),
        }
    }

    /// Step 5, under the claim and the journal lock: the blockers again, the lease checked
    /// again (counted from here, not from proposal: a revocation during the premise reads is
    /// seen), then DISPATCHED and the claim record, as one step to every other process. Goes on
    /// having set the DISPATCHED hash; an end releases the claim.
    fn write_dispatched(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let done = |run: &mut SubmitRun<'_>, s: Submitted| {
            if let Some(claim) = run.claim.take() {
                self.release(claim, &prep.eid);
            }
            Ok(Flow::Done(s))
        };
        let mut j = self.journal.lock(&prep.eid)?;
        let facts = j.with_state(&prep.eid, |s| facts_of(s, prep));
        run.facts.admission_under_claim = Some(admit(facts, AdmissionPoint::Dispatch));
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            let s = self.finish(&mut j, prep, run, end)?;
            drop(j);
            return done(run, s);
        }
        let lc = self.check_lease(prep)?;
        if let Some(m) = run.checks.as_object_mut() {
            m.insert("lease_live".into(), json!(lc.live));
            m.insert("grant".into(), lc.grant.map_or(Value::Null, recordable));
        }
        run.facts.lease_live_under_claim = Some(lc.live);
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            let s = self.finish(&mut j, prep, run, end)?;
            drop(j);
            return done(run, s);
        }
        let budget = match self.admit_budget(&mut j, prep, run)? {
            Flow::Go(budget) => budget,
            Flow::Done(s) => {
                drop(j);
                return done(run, s);
            }
        };
        run.dispatch = self.append_dispatched(&mut j, prep, run, budget)?;
        Ok(Flow::Go(()))
    }

    /// Step 5's budget admission, in its journal lock hold `j` (DESIGN §2.8): a proposal that
    /// names a budget goes on with the record for DISPATCHED only if the budget can take it;
    /// else `REFUSED:over_budget`, the record beside the refusal.
    fn admit_budget(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
    ) -> Result<Flow<Option<Value>>, GateError> {
        let Some(budget) = &prep.p.budget else {
            return Ok(Flow::Go(None));
        };
        let Some(store) = &self.budgets else {
            // `prepare` refused it already: a budgeted effect is never dispatched unchecked.
            check_named(&prep.eid, Some(budget), false)?;
            return Ok(Flow::Go(None));
        };
        let r = reckon_under_budget_lock(j, store.as_ref(), &prep.eid, budget)?;
        if r.within {
            return Ok(Flow::Go(Some(r.field())));
        }
        let (code, why) = (RefusalCode::OverBudget, r.refusal());
        let fields = json!({"code": code.as_str(), "reason": why, "checks": run.checks, "budget": r.field()});
        self.append(j, &prep.eid, Kind::Refused, fields)?;
        Ok(Flow::Done(prep.answer(Status::Refused(code), Some(why))))
    }

    /// DISPATCHED (with the budget admission's record, if any) and the sender's claim record,
    /// in the journal lock hold `j`; returns the DISPATCHED hash.
    fn append_dispatched(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
        budget: Option<Value>,
    ) -> Result<String, GateError> {
        let mut fields = json!({
            "effect": prep.p.effect,
            "lease": prep.p.lease,
            "premises": run.decided_on,
            "checks": run.checks,
        });
        if let (Some(b), Some(m)) = (budget, fields.as_object_mut()) {
            m.insert("budget".into(), b);
        }
        let d = self.append(j, &prep.eid, Kind::Dispatched, fields)?;
        let hash = d
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let at = d.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
        if let Some(claim) = &run.claim {
            let gen = self.journal.next_record_gen(j, &prep.eid)?;
            let record = self.claim_record(Role::Send, &hash, at, None, None, gen);
            j.write_record(claim, &prep.eid, &record)?;
        }
        Ok(hash)
    }
}

const OPEN_DETAIL: &str =
    "A dispatch of this effect is open (being sent, or a lost send awaiting recovery); recovery decides, nothing is resent from here.";
const AMBIGUOUS_DETAIL: &str =
    "Whether this effect happened cannot be known, so it is never sent again.";
const DUPLICATE_DETAIL: &str = "This effect was already committed; nothing was sent.";
