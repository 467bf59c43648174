//! The gate's decisions as pure functions (DESIGN §2.3, §2.4).
//!
//! Given what the journal holds for an effect, what the claim and the clocks say, and what the
//! lease store, the premise check and the target answered, these functions say what the gate
//! does next. [`Gate::submit`](crate::Gate::submit) and [`Gate::recover`](crate::Gate::recover)
//! call them and carry out what they say; nothing else decides. They do no I/O, so a model
//! checker can drive them through every interleaving.
//!
//! This module holds the admission and `submit`'s decisions; recovery's are in `recovery`
//! (re-exported here).

mod recovery;

pub use recovery::{
    in_flight_start, next_recovery_step, AmbiguousWhy, InFlight, Next, RecoveryFacts,
};

use crate::status::{RefusalCode, Via};

/// What the journal records about an effect, as far as admitting a proposal is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EffectFacts {
    /// A DISPATCHED is open (being sent, or a lost send awaiting recovery).
    pub open: bool,
    /// The effect was committed.
    pub committed: bool,
    /// The effect was reported AMBIGUOUS.
    pub ambiguous: bool,
    /// The target rejected a send of it, settled as not done.
    pub target_rejected: bool,
    /// The proposal's payload differs from the one the first PROPOSED fixed (I5).
    pub payload_differs: bool,
}

/// Whether a proposal may go on, and if not, what `submit` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Admission {
    /// Go on (write PROPOSED, or at dispatch: check the lease and write DISPATCHED).
    Proceed,
    /// `IN_FLIGHT`: a dispatch is open; nothing is written.
    InFlight,
    /// `REFUSED:conflicting_payload` (I5).
    Conflicting,
    /// `AMBIGUOUS`: never sent again.
    Ambiguous,
    /// `DUPLICATE_IGNORED`: already committed.
    Duplicate,
    /// `REFUSED:target_error`: the target rejected this effect before; never resent.
    TargetRejected,
}

/// Where in `submit` the admission is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionPoint {
    /// Before PROPOSED.
    Proposal,
    /// Under the claim and the journal lock, right before DISPATCHED.
    Dispatch,
}

/// Admit a proposal for an effect the journal records as `facts` (`None`: never seen).
pub fn admit(facts: Option<EffectFacts>, at: AdmissionPoint) -> Admission {
    let Some(f) = facts else {
        return Admission::Proceed;
    };
    if f.open {
        Admission::InFlight
    } else if f.payload_differs {
        Admission::Conflicting
    } else if f.ambiguous {
        Admission::Ambiguous
    } else if f.committed {
        Admission::Duplicate
    } else if f.target_rejected && at == AdmissionPoint::Dispatch {
        Admission::TargetRejected
    } else {
        Admission::Proceed
    }
}

/// What `submit` does with the answer of its own send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterSend {
    /// Write COMMITTED via `send`.
    Commit,
    /// The service said no: settle by one lookup (found → COMMITTED via `failed-but-landed`;
    /// else a resolving REFUSED `target_error`).
    SettleRejected,
    /// The outcome is unknown (or a replayed failure): leave the dispatch open for recovery.
    LeaveOpen,
}

/// What a send answered, as far as deciding goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendAnswer {
    /// The service applied it (or answered with the saved success of an earlier request).
    Applied,
    /// The service said no: settled, not done as far as it knows.
    Rejected,
    /// Timeout, lost connection, 5xx: it may have landed or may still land.
    Unknown,
    /// "An earlier request under this key is still executing" (a 409 "in use"): this request
    /// did nothing; the earlier one was in flight when the service answered.
    InFlight,
    /// The saved failure of an earlier request under the same key.
    Replayed,
}

/// What `submit` does with the answer of its own send.
pub fn after_send(answer: SendAnswer) -> AfterSend {
    match answer {
        SendAnswer::Applied => AfterSend::Commit,
        SendAnswer::Rejected => AfterSend::SettleRejected,
        SendAnswer::Unknown | SendAnswer::InFlight | SendAnswer::Replayed => AfterSend::LeaveOpen,
    }
}

/// What a lookup answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LookupAnswer {
    /// The effect is at the service.
    Found,
    /// It is not.
    NotFound,
    /// The lookup itself failed.
    Failed,
}

/// A step of `submit` (DESIGN §2.3), in the order [`next_submit_step`] asks for them. Each step
/// asks one question; when the answer lets `submit` go on, the step writes the entry named here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitStep {
    /// Under the journal lock: [`admit`] at [`AdmissionPoint::Proposal`]; going on, PROPOSED
    /// (in the same lock hold).
    RecordProposal,
    /// The lease at proposal; going on, AUTHORIZED.
    CheckLease,
    /// The premises the effect is decided on, re-checked at the target (I3).
    CheckPremises,
    /// Take the effect's claim.
    TakeClaim,
    /// With the claim held, take the journal lock (held through the next step and DISPATCHED):
    /// [`admit`] at [`AdmissionPoint::Dispatch`].
    AdmitUnderClaim,
    /// In the same lock hold: the lease again (a revocation during the premise reads is seen);
    /// going on, DISPATCHED and the claim record.
    CheckLeaseUnderClaim,
    /// Call the target.
    Send,
    /// The target rejected the send: look it up once.
    LookupRejected,
}

/// How `submit` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitEnd {
    /// An admission that does not go on: its answer (and, for a conflicting payload or a rejection
    /// settled earlier, its REFUSED).
    NotAdmitted(Admission),
    /// A REFUSED with this code: `lease` or `stale_premise` before DISPATCHED; a resolving
    /// `target_error` after a rejected send that a lookup did not find.
    Refuse(RefusalCode),
    /// Another process holds the claim: `IN_FLIGHT`, nothing written.
    ClaimHeld,
    /// COMMITTED via `send` or `failed-but-landed`.
    Commit(Via),
    /// The outcome is unknown: the dispatch stays open for recovery, `IN_FLIGHT`.
    LeaveOpen,
}

/// What `submit` does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitNext {
    /// Ask this step's question.
    Do(SubmitStep),
    /// Stop, writing what the end says.
    Finish(SubmitEnd),
}

/// Everything `submit` learned so far, as plain data (`None`: not asked yet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SubmitFacts {
    /// The target can be looked up.
    pub lookup: bool,
    /// [`SubmitStep::RecordProposal`]'s admission.
    pub admission: Option<Admission>,
    /// [`SubmitStep::CheckLease`]: live and covering the effect.
    pub lease_live: Option<bool>,
    /// [`SubmitStep::CheckPremises`]: every premise still holds.
    pub premises_hold: Option<bool>,
    /// [`SubmitStep::TakeClaim`]: the claim was free and is now held.
    pub claim_taken: Option<bool>,
    /// [`SubmitStep::AdmitUnderClaim`]'s admission.
    pub admission_under_claim: Option<Admission>,
    /// [`SubmitStep::CheckLeaseUnderClaim`]: live and covering the effect.
    pub lease_live_under_claim: Option<bool>,
    /// [`SubmitStep::Send`]'s answer.
    pub sent: Option<SendAnswer>,
    /// [`SubmitStep::LookupRejected`]'s answer.
    pub rejected_lookup: Option<LookupAnswer>,
}

impl SubmitFacts {
    /// Facts before anything was asked, for a target that can (`lookup`) or cannot be looked up.
    pub fn new(lookup: bool) -> SubmitFacts {
        SubmitFacts {
            lookup,
            ..SubmitFacts::default()
        }
    }
}

/// The next step of `submit` from what it learned so far (DESIGN §2.3, §2.4). The order is
/// fixed: admission, lease, premises, claim, admission again and the lease again under the claim
/// and the journal lock (so a revocation during the premise reads is seen), send, and a lookup
/// of a rejected send.
pub fn next_submit_step(f: &SubmitFacts) -> SubmitNext {
    use SubmitNext::{Do, Finish};
    let go_on = |a: Option<Admission>, step: SubmitStep| match a {
        None => Some(Do(step)),
        Some(Admission::Proceed) => None,
        Some(other) => Some(Finish(SubmitEnd::NotAdmitted(other))),
    };
    if let Some(next) = go_on(f.admission, SubmitStep::RecordProposal) {
        return next;
    }
    match f.lease_live {
        None => return Do(SubmitStep::CheckLease),
        Some(false) => return Finish(SubmitEnd::Refuse(RefusalCode::Lease)),
        Some(true) => {}
    }
    match f.premises_hold {
        None => return Do(SubmitStep::CheckPremises),
        Some(false) => return Finish(SubmitEnd::Refuse(RefusalCode::StalePremise)),
        Some(true) => {}
    }
    match f.claim_taken {
        None => return Do(SubmitStep::TakeClaim),
        Some(false) => return Finish(SubmitEnd::ClaimHeld),
        Some(true) => {}
    }
    if let Some(next) = go_on(f.admission_under_claim, SubmitStep::AdmitUnderClaim) {
        return next;
    }
    // Checked again here, not only at proposal: the approval can be revoked while the premise
    // reads run, and only this check is atomic with DISPATCHED.
    match f.lease_live_under_claim {
        None => return Do(SubmitStep::CheckLeaseUnderClaim),
        Some(false) => return Finish(SubmitEnd::Refuse(RefusalCode::Lease)),
        Some(true) => {}
    }
    let Some(answer) = f.sent else {
        return Do(SubmitStep::Send);
    };
    match after_send(answer) {
        AfterSend::Commit => Finish(SubmitEnd::Commit(Via::Send)),
        AfterSend::LeaveOpen => Finish(SubmitEnd::LeaveOpen),
        AfterSend::SettleRejected => after_rejection(f.lookup, f.rejected_lookup),
    }
}

/// How a send the target rejected is settled (by `submit`, and by recovery when its resend is
/// rejected): one lookup where the target has one — found → COMMITTED via `failed-but-landed`,
/// not found → a resolving REFUSED `target_error`, the lookup failed → the dispatch stays open;
/// without a lookup → REFUSED `target_error`.
pub fn after_rejection(lookup: bool, looked_up: Option<LookupAnswer>) -> SubmitNext {
    use SubmitNext::{Do, Finish};
    if !lookup {
        return Finish(SubmitEnd::Refuse(RefusalCode::TargetError));
    }
    match looked_up {
        None => Do(SubmitStep::LookupRejected),
        Some(LookupAnswer::Found) => Finish(SubmitEnd::Commit(Via::FailedButLanded)),
        Some(LookupAnswer::NotFound) => Finish(SubmitEnd::Refuse(RefusalCode::TargetError)),
        Some(LookupAnswer::Failed) => Finish(SubmitEnd::LeaveOpen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Capabilities;
    use std::time::Duration;

    fn caps(dedup: bool, lookup: bool, bound_ms: Option<u64>) -> Capabilities {
        Capabilities {
            dedup: dedup.then_some(Some(Duration::from_secs(86_400))),
            lookup,
            max_in_flight: bound_ms.map(Duration::from_millis),
        }
    }

    fn facts(c: Capabilities) -> RecoveryFacts {
        RecoveryFacts::new(
            c,
            Duration::from_secs(600),
            0,
            InFlight {
                now_ms: 100,
                counted_from_ms: 100,
            },
        )
    }

    #[test]
    fn tier_one_that_holds_resends_at_once_after_premises_then_lease() {
        let mut f = facts(caps(true, true, Some(5_000)));
        assert_eq!(next_recovery_step(&f), Next::CheckPremises);
        f.premises_hold = Some(true);
        assert_eq!(next_recovery_step(&f), Next::CheckLease);
        f.lease_live = Some(true);
        assert_eq!(next_recovery_step(&f), Next::Resend(Via::RetryIdempotent));
    }

    #[test]
    fn a_replayed_failure_is_settled_by_lookup_and_refused_after_the_bound() {
        let mut f = facts(caps(true, true, Some(5_000)));
        f.premises_hold = Some(true);
        f.lease_live = Some(true);
        f.finished = true;
        assert_eq!(next_recovery_step(&f), Next::Lookup);
        f.found = Some(false);
        assert_eq!(
            next_recovery_step(&f),
            Next::WaitInFlight { until_ms: 5_100 }
        );
        f.looked_up_at_ms = Some(100);
        f.in_flight.now_ms = 5_100;
        assert_eq!(next_recovery_step(&f), Next::Lookup, "a stale not-found");
        f.looked_up_at_ms = Some(5_100);
        assert_eq!(
            next_recovery_step(&f),
            Next::Refuse(RefusalCode::TargetFailedAtRecovery)
        );
    }

    #[test]
    fn no_stated_bound_means_not_found_is_never_trusted() {
        let mut f = facts(caps(false, true, None));
        f.premises_hold = Some(true);
        f.lease_live = Some(false);
        f.found = Some(false);
        assert_eq!(
            next_recovery_step(&f),
            Next::Ambiguous(AmbiguousWhy::NoInFlightBound)
        );
    }

    #[test]
    fn a_claim_taken_over_from_a_holder_that_may_live_waits_its_send_window_too() {
        let mut f = facts(caps(false, true, Some(200)));
        f.premises_hold = Some(true);
        f.lease_live = Some(true);
        f.found = Some(false);
        f.looked_up_at_ms = Some(100);
        assert_eq!(next_recovery_step(&f), Next::WaitInFlight { until_ms: 300 });
        f.lost_holder_sends_until_ms = Some(2_100);
        assert_eq!(
            next_recovery_step(&f),
            Next::WaitInFlight { until_ms: 2_300 }
        );
        f.in_flight.now_ms = 2_300;
        assert_eq!(next_recovery_step(&f), Next::Lookup, "a lookup from before");
        f.looked_up_at_ms = Some(2_300);
        assert_eq!(next_recovery_step(&f), Next::CheckLeaseBeforeResend);
    }

    #[test]
    fn a_reapply_checks_the_lease_after_the_lookup() {
        let mut f = facts(caps(false, true, Some(0)));
        f.premises_hold = Some(true);
        f.lease_live = Some(true);
        f.found = Some(false);
        f.looked_up_at_ms = Some(100);
        assert_eq!(next_recovery_step(&f), Next::CheckLeaseBeforeResend);
        f.lease_live_before_resend = Some(false);
        assert_eq!(
            next_recovery_step(&f),
            Next::Refuse(RefusalCode::LeaseAtRecovery)
        );
        f.lease_live_before_resend = Some(true);
        assert_eq!(next_recovery_step(&f), Next::Resend(Via::RecoveryReapply));
    }

    #[test]
    fn a_budget_that_no_longer_takes_the_effect_stops_every_resend() {
        let mut f = facts(caps(true, true, Some(0)));
        f.premises_hold = Some(true);
        f.lease_live = Some(true);
        f.budget_within = Some(false);
        assert_eq!(
            next_recovery_step(&f),
            Next::Lookup,
            "no resend under the key"
        );
        f.found = Some(false);
        f.looked_up_at_ms = Some(100);
        assert_eq!(
            next_recovery_step(&f),
            Next::Refuse(RefusalCode::OverBudget)
        );
        f.found = Some(true);
        assert_eq!(
            next_recovery_step(&f),
            Next::CommitFound,
            "what landed is recorded"
        );
        // Within at the first check, not before the reapply.
        let mut f = facts(caps(false, true, Some(0)));
        f.premises_hold = Some(true);
        f.lease_live = Some(true);
        f.budget_within = Some(true);
        f.found = Some(false);
        f.looked_up_at_ms = Some(100);
        assert_eq!(next_recovery_step(&f), Next::CheckLeaseBeforeResend);
        f.lease_live_before_resend = Some(true);
        f.budget_within = Some(false);
        assert_eq!(
            next_recovery_step(&f),
            Next::Refuse(RefusalCode::OverBudget)
        );
        let mut f = facts(caps(true, false, Some(0)));
        f.premises_hold = Some(true);
        f.lease_live = Some(true);
        f.budget_within = Some(false);
        assert_eq!(
            next_recovery_step(&f),
            Next::Ambiguous(AmbiguousWhy::OverBudgetNoLookup)
        );
    }

    #[test]
    fn submit_checks_the_lease_again_under_the_claim_after_the_premises() {
        let mut f = SubmitFacts::new(true);
        let mut steps = Vec::new();
        loop {
            match next_submit_step(&f) {
                SubmitNext::Do(step) => {
                    steps.push(step);
                    match step {
                        SubmitStep::RecordProposal => f.admission = Some(Admission::Proceed),
                        SubmitStep::CheckLease => f.lease_live = Some(true),
                        SubmitStep::CheckPremises => f.premises_hold = Some(true),
                        SubmitStep::TakeClaim => f.claim_taken = Some(true),
                        SubmitStep::AdmitUnderClaim => {
                            f.admission_under_claim = Some(Admission::Proceed)
                        }
                        SubmitStep::CheckLeaseUnderClaim => f.lease_live_under_claim = Some(false),
                        SubmitStep::Send | SubmitStep::LookupRejected => break,
                    }
                }
                SubmitNext::Finish(end) => {
                    assert_eq!(end, SubmitEnd::Refuse(RefusalCode::Lease));
                    break;
                }
            }
        }
        assert_eq!(
            steps,
            [
                SubmitStep::RecordProposal,
                SubmitStep::CheckLease,
                SubmitStep::CheckPremises,
                SubmitStep::TakeClaim,
                SubmitStep::AdmitUnderClaim,
                SubmitStep::CheckLeaseUnderClaim,
            ]
        );
    }

    #[test]
    fn a_rejected_send_is_settled_by_one_lookup_and_an_unknown_one_stays_open() {
        let mut f = SubmitFacts {
            lookup: true,
            admission: Some(Admission::Proceed),
            lease_live: Some(true),
            premises_hold: Some(true),
            claim_taken: Some(true),
            admission_under_claim: Some(Admission::Proceed),
            lease_live_under_claim: Some(true),
            sent: Some(SendAnswer::Rejected),
            rejected_lookup: None,
        };
        assert_eq!(
            next_submit_step(&f),
            SubmitNext::Do(SubmitStep::LookupRejected)
        );
        f.rejected_lookup = Some(LookupAnswer::Found);
        assert_eq!(
            next_submit_step(&f),
            SubmitNext::Finish(SubmitEnd::Commit(Via::FailedButLanded))
        );
        f.lookup = false;
        assert_eq!(
            next_submit_step(&f),
            SubmitNext::Finish(SubmitEnd::Refuse(RefusalCode::TargetError))
        );
        f.sent = Some(SendAnswer::Replayed);
        assert_eq!(
            next_submit_step(&f),
            SubmitNext::Finish(SubmitEnd::LeaveOpen)
        );
        f.claim_taken = Some(false);
        assert_eq!(
            next_submit_step(&f),
            SubmitNext::Finish(SubmitEnd::ClaimHeld)
        );
    }

    #[test]
    fn the_in_flight_bound_counts_from_the_claim_found_free_or_an_earlier_record() {
        assert_eq!(in_flight_start(500, None), 500);
        assert_eq!(in_flight_start(500, Some(200)), 200);
        assert_eq!(in_flight_start(500, Some(900)), 500);
    }

    #[test]
    fn admission_order_is_open_conflict_ambiguous_committed() {
        let f = EffectFacts {
            open: true,
            payload_differs: true,
            ..EffectFacts::default()
        };
        assert_eq!(
            admit(Some(f), AdmissionPoint::Proposal),
            Admission::InFlight
        );
        let f = EffectFacts {
            target_rejected: true,
            ..EffectFacts::default()
        };
        assert_eq!(admit(Some(f), AdmissionPoint::Proposal), Admission::Proceed);
        assert_eq!(
            admit(Some(f), AdmissionPoint::Dispatch),
            Admission::TargetRejected
        );
        assert_eq!(admit(None, AdmissionPoint::Dispatch), Admission::Proceed);
    }
}
