//! Recovery's decisions: what it knows about an open dispatch, and the next step from there
//! (DESIGN §2.3's table with §2.4's rules).

use crate::recover::effective_tier;
use crate::status::{RefusalCode, Via};
use crate::target::{Capabilities, Tier};
use std::time::Duration;

/// The in-flight bound: how recovery decides that a "not found" can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// Monotonic now (ms).
    pub now_ms: u64,
    /// The monotonic instant (ms) the bound counts from: when this recoverer first found the
    /// claim free (every request of a dead holder had left by then), or its own last send,
    /// whichever is later.
    pub counted_from_ms: u64,
}

/// The monotonic instant (ms) the in-flight bound counts from when recovery takes the claim:
/// the instant a dead recoverer of the same dispatch recorded (same host and boot: monotonic
/// instants mean nothing elsewhere), never later than now; else now, when the claim was found
/// free. Never the DISPATCHED timestamp: a sender can stall between DISPATCHED and its send.
pub fn in_flight_start(now_ms: u64, recorded_ms: Option<u64>) -> u64 {
    recorded_ms.map_or(now_ms, |ms| ms.min(now_ms))
}

/// Everything recovery knows about one open dispatch at a step, as plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryFacts {
    /// What the target can do.
    pub caps: Capabilities,
    /// The gate's margin on the dedup window.
    pub dedup_margin: Duration,
    /// Wall-clock age of the open DISPATCHED (ms), for the dedup window.
    pub dispatch_age_ms: u64,
    /// The clocks of the in-flight bound.
    pub in_flight: InFlight,
    /// A replayed failure proved every request under the key has finished: the key is never
    /// resent again; the effect is settled by lookup.
    pub finished: bool,
    /// Resends of this dispatch answered "unknown" since the last "in use" answer (by this
    /// recoverer); a rejection not saved under the key after an "in use" answer counts too.
    pub unknown_answers: u32,
    /// After this many unknown answers in a row, stop resending and settle by lookup.
    pub max_unknown_answers: u32,
    /// A resend of this dispatch was answered "in use" (a request under the key was still
    /// executing at the service): unless a saved failure since proved every request under the
    /// key finished, a lookup's "not found" then ends in AMBIGUOUS, never a refusal, since that
    /// request may still land (DESIGN §4.10).
    pub heard_in_use: bool,
    /// The premises recorded on the DISPATCHED still hold (`None`: not checked yet).
    pub premises_hold: Option<bool>,
    /// The lease is live and covers the effect (`None`: not checked yet).
    pub lease_live: Option<bool>,
    /// A lookup found the effect (`None`: not looked up yet).
    pub found: Option<bool>,
    /// The monotonic instant (ms) that lookup was sent: a "not found" is trusted only from a
    /// lookup sent once the in-flight bound had passed.
    pub looked_up_at_ms: Option<u64>,
    /// The lease, checked again after the lookup and right before a resend (`None`: not yet).
    pub lease_live_before_resend: Option<bool>,
    /// The budget the DISPATCHED was admitted against can still take it (DESIGN §2.8): checked
    /// with the lease, each time, so the answer before a reapply is the latest. `None` when the
    /// effect names no budget (nothing to check).
    pub budget_within: Option<bool>,
    /// The monotonic instant (ms) until which an earlier holder that may still live (its
    /// database session was lost, not necessarily its process) can send: the take-over of its
    /// claim plus the store's send window, since it confirmed the claim last before the
    /// take-over. The in-flight bound then counts from no earlier than this. `None` when every
    /// earlier holder is dead or let the claim go with nothing left to send, or when claims are
    /// lost only with their holder (a file lock).
    pub lost_holder_sends_until_ms: Option<u64>,
}

impl RecoveryFacts {
    /// Facts before anything was asked.
    pub fn new(
        caps: Capabilities,
        dedup_margin: Duration,
        dispatch_age_ms: u64,
        in_flight: InFlight,
    ) -> RecoveryFacts {
        RecoveryFacts {
            caps,
            dedup_margin,
            dispatch_age_ms,
            in_flight,
            finished: false,
            unknown_answers: 0,
            max_unknown_answers: 3,
            heard_in_use: false,
            premises_hold: None,
            lease_live: None,
            found: None,
            looked_up_at_ms: None,
            lease_live_before_resend: None,
            budget_within: None,
            lost_holder_sends_until_ms: None,
        }
    }
}

/// Why recovery reports an effect AMBIGUOUS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmbiguousWhy {
    /// Tier 3: no dedupe, no lookup.
    NoDedupNoLookup,
    /// Tier 1 past its dedup window, and no lookup.
    KeyExpiredNoLookup,
    /// The lease no longer holds and the target cannot be looked up.
    LeaseStaleNoLookup,
    /// A premise no longer holds and the target cannot be looked up.
    PremiseStaleNoLookup,
    /// The service failed the request (replayed failure, or too many unknown answers) and
    /// cannot be looked up.
    FailedNoLookup,
    /// The budget can no longer take the effect and the target cannot be looked up.
    OverBudgetNoLookup,
    /// A lookup did not find it, but the target states no in-flight bound, so "not found" can
    /// never be trusted.
    NoInFlightBound,
    /// The service said a request under the key was still executing, and no answer since said
    /// how it ended (its result, or its saved failure): a lookup did not find the effect, but
    /// that request may still land.
    InUseUnanswered,
}

impl AmbiguousWhy {
    /// One sentence, for the AMBIGUOUS entry's `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            AmbiguousWhy::NoDedupNoLookup => "The target neither dedupes nor can be looked up, so whether the lost send landed cannot be known.",
            AmbiguousWhy::KeyExpiredNoLookup => "The idempotency key is older than the target's dedup window and the target cannot be looked up, so whether the lost send landed cannot be known.",
            AmbiguousWhy::LeaseStaleNoLookup => "The lease no longer holds at recovery and the target cannot be looked up, so whether the lost send landed cannot be known.",
            AmbiguousWhy::PremiseStaleNoLookup => "A premise no longer holds at recovery and the target cannot be looked up, so whether the lost send landed cannot be known.",
            AmbiguousWhy::OverBudgetNoLookup => "The budget can no longer take the effect at recovery and the target cannot be looked up, so whether the lost send landed cannot be known.",
            AmbiguousWhy::FailedNoLookup => "The service failed the request without a usable answer and the target cannot be looked up, so whether it landed cannot be known.",
            AmbiguousWhy::NoInFlightBound => "A lookup did not find the effect, but the target states no bound on how late a sent request can still land, so \"not found\" cannot be trusted.",
            AmbiguousWhy::InUseUnanswered => "The service said a request under the key was still executing, and no answer since said how it ended; a lookup did not find the effect, but that request may still land.",
        }
    }
}

/// What recovery does next for one open dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Re-check the premises recorded on the DISPATCHED (I3).
    CheckPremises,
    /// Re-check the lease recorded on the DISPATCHED (I4), and the budget it was admitted
    /// against (its cap now, the others' reservations now).
    CheckLease,
    /// Look the effect up at the target.
    Lookup,
    /// Check the lease (and the budget) once more: a resend follows, and a lookup ran since the
    /// last check.
    CheckLeaseBeforeResend,
    /// Resend the recorded payload (I5) under the same effect id.
    Resend(Via),
    /// The lookup found it: COMMITTED via `recovery-query`.
    CommitFound,
    /// A resolving REFUSED with this code; it rests on a trusted "not found".
    Refuse(RefusalCode),
    /// AMBIGUOUS.
    Ambiguous(AmbiguousWhy),
    /// A request may still land: try again at this monotonic instant (ms).
    WaitInFlight {
        /// Monotonic ms.
        until_ms: u64,
    },
}

/// The next step of recovery for an open dispatch, from what is known so far (DESIGN §2.3's
/// table with §2.4's rules). The order of questions is fixed: premises, then the lease (the last
/// check before a resend under the key), then a lookup, then — before a reapply — the lease
/// again.
pub fn next_recovery_step(f: &RecoveryFacts) -> Next {
    let lookup = f.caps.lookup;
    let tier = effective_tier(
        f.caps.tier(),
        lookup,
        f.caps.dedup_window(),
        f.dedup_margin,
        f.dispatch_age_ms,
    );
    if tier == Tier::Three {
        return Next::Ambiguous(if f.caps.tier() == Tier::Three {
            AmbiguousWhy::NoDedupNoLookup
        } else {
            AmbiguousWhy::KeyExpiredNoLookup
        });
    }
    let Some(premises_hold) = f.premises_hold else {
        return Next::CheckPremises;
    };
    let Some(lease_live) = f.lease_live else {
        return Next::CheckLease;
    };
    // Re-checked with the lease: a lowered cap or a forgotten budget stops a resend as a
    // revoked lease does.
    let budget_within = f.budget_within != Some(false);
    let holds = premises_hold && lease_live && budget_within;
    // A replayed failure, or too many unknown answers in a row (an "in use" answer ends a
    // streak): the key is not resent again. After an "in use" answer, what follows a "not
    // found" is AMBIGUOUS, never a refusal (`after_not_found`).
    let failed = f.finished || f.unknown_answers >= f.max_unknown_answers;
    if tier == Tier::One && holds && !failed {
        // The service dedupes a late first request: the resend may go at once.
        return Next::Resend(Via::RetryIdempotent);
    }
    if !lookup {
        return Next::Ambiguous(if !lease_live {
            AmbiguousWhy::LeaseStaleNoLookup
        } else if !premises_hold {
            AmbiguousWhy::PremiseStaleNoLookup
        } else if !budget_within {
            AmbiguousWhy::OverBudgetNoLookup
        } else {
            AmbiguousWhy::FailedNoLookup
        });
    }
    let Some(found) = f.found else {
        return Next::Lookup;
    };
    if found {
        return Next::CommitFound;
    }
    after_not_found(
        f,
        Rechecked {
            premises_hold,
            lease_live,
            budget_within,
            failed,
        },
    )
}

/// What recovery's re-checks answered, and whether the requests under the key failed.
struct Rechecked {
    premises_hold: bool,
    lease_live: bool,
    budget_within: bool,
    failed: bool,
}

/// The step after a lookup did not find the effect. "Not found" is trusted only once the
/// target's server-side bound has passed since the claim was found free (or our own last
/// send): a sender can stall between DISPATCHED and its send, and a request keeps executing
/// after its client gave up. A holder that lost its claim but lives may send until its send
/// window runs out: that is waited for too.
fn after_not_found(f: &RecoveryFacts, r: Rechecked) -> Next {
    let Some(bound) = f.caps.max_in_flight else {
        return Next::Ambiguous(AmbiguousWhy::NoInFlightBound);
    };
    let trusted_at = f
        .in_flight
        .counted_from_ms
        .max(f.lost_holder_sends_until_ms.unwrap_or(0))
        .saturating_add(u64::try_from(bound.as_millis()).unwrap_or(u64::MAX));
    if f.in_flight.now_ms < trusted_at {
        return Next::WaitInFlight {
            until_ms: trusted_at,
        };
    }
    // The bound has passed, but a lookup sent before it did may have missed a request that
    // landed after the lookup read: only a lookup sent since is trusted.
    if f.looked_up_at_ms.is_none_or(|at| at < trusted_at) {
        return Next::Lookup;
    }
    // Told that a request under the key was executing and never told how it ended: a refusal
    // would rest on the bound alone against the service's own word, and a reapply (the key
    // forgotten past its dedup window) could land beside that request (DESIGN §4.10).
    if f.heard_in_use && !f.finished {
        return Next::Ambiguous(AmbiguousWhy::InUseUnanswered);
    }
    if !r.lease_live {
        return Next::Refuse(RefusalCode::LeaseAtRecovery);
    }
    if !r.premises_hold {
        return Next::Refuse(RefusalCode::StalePremiseAtRecovery);
    }
    if !r.budget_within {
        return Next::Refuse(RefusalCode::OverBudget);
    }
    if r.failed {
        return Next::Refuse(RefusalCode::TargetFailedAtRecovery);
    }
    match f.lease_live_before_resend {
        None => Next::CheckLeaseBeforeResend,
        Some(false) => Next::Refuse(RefusalCode::LeaseAtRecovery),
        Some(true) => Next::Resend(Via::RecoveryReapply),
    }
}
