//! A submitting process's steps, each the one `next_submit_step` names, carried out against
//! the model's journal, claim, lease store, premises and service.

use super::{Activity, ClaimRecord, Seen, State, Submit};
use crate::journal::Entry;
use crate::properties::Check;
use crate::{Bug, GateModel};
use interlock::decide::{
    admit, next_submit_step, AdmissionPoint, LookupAnswer, SendAnswer, SubmitEnd, SubmitNext,
    SubmitStep,
};
use interlock::RefusalCode;

impl GateModel {
    /// Process `p` takes the step of `submit` that [`next_submit_step`] names (or carries out
    /// the end it names); a step that goes on leaves the process submitting, and ends the call
    /// when the decision ends with no answer awaited.
    pub(super) fn step_submit(&self, s: &mut State, p: u8, mut sub: Submit) {
        let pi = usize::from(p);
        let step = match next_submit_step(&sub.facts) {
            SubmitNext::Do(step) => step,
            SubmitNext::Finish(end) => {
                self.finish_submit(s, p, &sub, end);
                return;
            }
        };
        let goes_on = match step {
            SubmitStep::RecordProposal => self.record_proposal(s, p, &mut sub),
            SubmitStep::CheckLease => {
                sub.facts.lease_live = Some(s.lease_live);
                true
            }
            SubmitStep::CheckPremises => {
                sub.facts.premises_hold = Some(s.premises_hold);
                true
            }
            SubmitStep::TakeClaim => {
                let free = s.claim.is_none();
                if free {
                    s.claim = Some(p);
                }
                sub.facts.claim_taken = Some(free);
                true
            }
            SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim => {
                self.write_dispatched(s, p, &mut sub)
            }
            SubmitStep::Send | SubmitStep::LookupRejected => self.send_submit(s, p, &mut sub),
        };
        if !goes_on {
            return;
        }
        if let Some(proc) = s.procs.get_mut(pi) {
            proc.act = Activity::Submitting(sub);
        }
        if let SubmitNext::Finish(end) = next_submit_step(&sub.facts) {
            if !sub.awaiting {
                self.finish_submit(s, p, &sub, end);
            }
        }
    }

    /// Step 1: the admission, then PROPOSED (a conflicting proposal is recorded, then
    /// refused). Whether the submit goes on.
    fn record_proposal(&self, s: &mut State, p: u8, sub: &mut Submit) -> bool {
        let facts = self.fold(s).facts(sub.payload);
        sub.facts.admission = Some(admit(facts, AdmissionPoint::Proposal));
        if let SubmitNext::Finish(end) = next_submit_step(&sub.facts) {
            if end == SubmitEnd::NotAdmitted(interlock::decide::Admission::Conflicting) {
                Self::append(s, Entry::Proposed(sub.payload));
            }
            self.finish_submit(s, p, sub, end);
            return false;
        }
        Self::append(s, Entry::Proposed(sub.payload));
        true
    }

    /// Step 5, in one journal lock hold under the claim: the admission, the lease again,
    /// DISPATCHED and the claim record (none on a lost session: the call ends, the dispatch
    /// open for recovery). Whether the submit goes on.
    fn write_dispatched(&self, s: &mut State, p: u8, sub: &mut Submit) -> bool {
        let facts = self.fold(s).facts(sub.payload);
        sub.facts.admission_under_claim = Some(admit(facts, AdmissionPoint::Dispatch));
        if let SubmitNext::Do(SubmitStep::CheckLeaseUnderClaim) = next_submit_step(&sub.facts) {
            sub.facts.lease_live_under_claim = Some(if self.has(Bug::LeaseOnlyBeforePremises) {
                sub.facts.lease_live == Some(true)
            } else {
                s.lease_live
            });
        }
        if let SubmitNext::Finish(end) = next_submit_step(&sub.facts) {
            self.finish_submit(s, p, sub, end);
            return false;
        }
        if !s.lease_live {
            s.broken |= Check::LeaseRechecked as u16;
        }
        if sub.facts.premises_hold != Some(true) {
            s.broken |= Check::PremisesRechecked as u16;
        }
        let id = u8::try_from(s.journal.len()).unwrap_or(u8::MAX);
        Self::append(
            s,
            Entry::Dispatched {
                payload: sub.payload,
                at: s.now,
            },
        );
        if Self::lost(s, p) {
            // The record cannot be written on a lost session: the call ends with an
            // error, the dispatch open for recovery.
            Self::idle(s, p);
            return false;
        }
        s.record = Some(ClaimRecord {
            dispatch: id,
            recovering: false,
            in_flight_from: None,
            owner: self.send_window.map(|_| p),
            earlier_sends_until: None,
        });
        sub.dispatch = Some(id);
        true
    }

    /// Step 6: where claims can be lost, confirm the claim first (setting the send deadline)
    /// and send only before the deadline; then the request leaves. Whether the submit goes on.
    fn send_submit(&self, s: &mut State, p: u8, sub: &mut Submit) -> bool {
        let dispatch = sub.dispatch.unwrap_or(u8::MAX);
        match (self.send_window, sub.deadline) {
            (Some(window), None) => {
                // Confirm the claim's session: a lost one cannot be, and nothing is
                // sent (the dispatch stays open for recovery).
                if Self::lost(s, p) {
                    self.finish_submit(s, p, sub, SubmitEnd::LeaveOpen);
                    return false;
                }
                sub.deadline = Some(s.now.saturating_add(window));
            }
            (Some(_), Some(by)) if s.now >= by && !self.has(Bug::NoSendDeadline) => {
                // The deadline passed before the request left: not sent; the claim is
                // let go saying so.
                s.seen |= Seen::DeadlineStopped as u8;
                self.finish_submit(s, p, sub, SubmitEnd::LeaveOpen);
                return false;
            }
            _ => {
                self.send(s, p, dispatch, sub.payload);
                sub.awaiting = true;
            }
        }
        true
    }

    /// Carry out how `submit` ends: write the entry the end names, release the claim, idle.
    fn finish_submit(&self, s: &mut State, p: u8, sub: &Submit, end: SubmitEnd) {
        let dispatch = sub.dispatch.unwrap_or(u8::MAX);
        let mut settled = self.fold(s).open.is_none();
        match end {
            SubmitEnd::NotAdmitted(a) => match a {
                interlock::decide::Admission::Conflicting => Self::append(
                    s,
                    Entry::Refused {
                        code: RefusalCode::ConflictingPayload,
                        resolves: false,
                    },
                ),
                interlock::decide::Admission::TargetRejected => Self::append(
                    s,
                    Entry::Refused {
                        code: RefusalCode::TargetError,
                        resolves: false,
                    },
                ),
                _ => {}
            },
            SubmitEnd::Refuse(code) if sub.dispatch.is_none() => Self::append(
                s,
                Entry::Refused {
                    code,
                    resolves: false,
                },
            ),
            SubmitEnd::Refuse(code) => {
                self.resolve(
                    s,
                    p,
                    dispatch,
                    Entry::Refused {
                        code,
                        resolves: true,
                    },
                );
                settled = true;
            }
            SubmitEnd::Commit(via) => {
                self.resolve(s, p, dispatch, Entry::Committed(via));
                settled = true;
            }
            SubmitEnd::ClaimHeld | SubmitEnd::LeaveOpen => {}
        }
        self.release(s, p, settled, sub.dispatch.is_some());
        Self::idle(s, p);
    }

    /// The answer to a submit's send.
    pub(super) fn answer_submit(&self, s: &mut State, p: u8, mut sub: Submit, answer: SendAnswer) {
        sub.awaiting = false;
        sub.facts.sent = Some(answer);
        if let SubmitNext::Do(SubmitStep::LookupRejected) = next_submit_step(&sub.facts) {
            sub.facts.rejected_lookup = Some(if s.service.found() {
                LookupAnswer::Found
            } else {
                LookupAnswer::NotFound
            });
        }
        match next_submit_step(&sub.facts) {
            SubmitNext::Finish(end) => self.finish_submit(s, p, &sub, end),
            SubmitNext::Do(_) => {
                if let Some(proc) = s.procs.get_mut(usize::from(p)) {
                    proc.act = Activity::Submitting(sub);
                }
            }
        }
    }
}
