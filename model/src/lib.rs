//! An exhaustive model of the gate's protocol (DESIGN §2), checked with `stateright`.
//!
//! The model's gate processes do not re-describe the protocol: every step a process takes is
//! the one [`interlock::decide::next_submit_step`] or [`interlock::decide::next_recovery_step`]
//! names, every admission is [`interlock::decide::admit`], the in-flight bound counts from
//! [`interlock::decide::in_flight_start`], a rejected send is settled by
//! [`interlock::decide::after_rejection`], and the final status is read with
//! [`interlock::status_of`]. Around them the model holds a journal (durable lines with
//! hash/prev links, one lock: each process step is atomic), the effect's claim (released when
//! its holder dies) and its record, a lease store that can be revoked, premises that can
//! change, and a service whose requests land, fail or are rejected at any later step within
//! the declared in-flight bound, dedupe by key (tier 1), can be looked up, and replay a saved
//! failure. Processes crash at any step. Where the store states a send window, a claim can be
//! lost while its holder lives: the holder confirms right before it sends and sends only within
//! the window of confirming, and a take-over from a holder that may still live waits the window
//! plus the in-flight bound ([`interlock::decide::RecoveryFacts::lost_holder_sends_until_ms`]).
//!
//! [`Bug`] switches replace one decision or sequencing step with the broken one the gate was
//! fixed for; each must produce a counterexample. See `README.md` for what is checked, the
//! bounds and what the model leaves out.

mod bounded;
mod gate;
mod journal;
pub mod properties;
mod service;
mod trace;

pub use bounded::{Bounded, Packed};
pub use gate::{Action, Activity, ClaimRecord, Memory, Proc, Recovery, Seen, State, Submit};
pub use journal::{closing, fold, Entry, Fold, Line};
pub use properties::{expected_failure, Check};
pub use service::{Outcome, Request, Service};
pub use trace::{left_alone, narrate, summary};

use interlock::Capabilities;
use std::time::Duration;

/// A broken variant: one decision or sequencing step replaced with the one the gate was fixed
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bug {
    /// `submit` does not ask the lease store again under the claim: the answer from before the
    /// premise reads stands in for it.
    LeaseOnlyBeforePremises,
    /// Recovery counts the in-flight bound from the DISPATCHED timestamp instead of from when
    /// it found the claim free.
    InFlightFromDispatched,
    /// Journal lines are folded without the hash/prev check.
    UncheckedJournalLines,
    /// Recovery of a tier-1 dispatch ignores a replayed failure: it resends under the key again
    /// and again and never settles by lookup.
    ResendWithoutLookup,
    /// Recovery counts a resend answered "in use" (an earlier request under the key still
    /// executing) as an unknown answer: after `max_unknown_answers` of them it stops asking
    /// under the key and trusts a lookup once the bound passed since its own resend, though
    /// the service had just said a request was in flight.
    InUseCountedAsUnknown,
    /// Recovery hears "in use", then gives the key up anyway: unknown answers around it (or a
    /// rejection not saved under the key) end the resends as they do before any "in use", and
    /// it trusts a lookup once the bound passed since its own resend (the gate did until a
    /// review found it).
    UnknownAfterInUseGivesUp,
    /// Recovery takes an effect over while its claim is held by a live process.
    TakeOverLiveHolder,
    /// Recovery trusts a "not found" from a lookup sent before the in-flight bound passed, once
    /// the clock has passed it (the gate did until this model found it).
    StaleNotFoundTrusted,
    /// A holder does not check its send deadline right before the request leaves: one that
    /// confirmed its claim and then lost it sends however late.
    NoSendDeadline,
    /// Recovery that takes a claim over from a holder that may still live counts only the
    /// in-flight bound from its take-over, not the store's send window before it.
    TakeOverWaitsOnlyInFlight,
}

/// One configuration of the model: the target, the processes, the bounds, and at most one bug.
#[derive(Debug, Clone)]
pub struct GateModel {
    /// The target dedupes on the effect id (tier 1); its window outlasts the model.
    pub dedup: bool,
    /// The target can be looked up by effect id.
    pub lookup: bool,
    /// The service's true in-flight bound, in ticks (a request that left at `t` ends before
    /// the clock reaches `t + bound`), and the one the target declares.
    pub bound: u8,
    /// The target declares its bound (else "not found" is never trusted).
    pub declares_bound: bool,
    /// One entry per gate process: the payload it proposes once (`None`: it only recovers).
    pub proposals: Vec<Option<u8>>,
    /// Crashes, in all.
    pub crashes: u8,
    /// Revocations of the lease (0 or 1).
    pub revocations: u8,
    /// Changes of the premises (0 or 1).
    pub premise_changes: u8,
    /// Old lines copied back into the journal (a bad merge, a restored backup).
    pub replayed_lines: u8,
    /// The clock stops here.
    pub max_time: u8,
    /// Requests can fail at the service (a 5xx; saved under the key at tier 1).
    pub failures: bool,
    /// Requests can be rejected by the service.
    pub rejects: bool,
    /// The gate's `max_unknown_answers`.
    pub max_unknown_answers: u32,
    /// Requests can end after their bound (the assumption broken).
    pub land_late: bool,
    /// A process can give up on any answer (a timeout): it hears "unknown" whatever the
    /// service did. Off, every answer reaches the process still waiting for it (a crash still
    /// loses it).
    pub lost_answers: bool,
    /// The store's send window L, in ticks, where claims can be lost while their holder lives
    /// (a database session): a holder confirms its claim right before it sends and may send
    /// only before the confirmation plus L. `None`: claims are lost only with their holder (a
    /// file lock) and no confirmation is asked.
    pub send_window: Option<u8>,
    /// Claims lost while their holder lives (its session ends; it learns so when it next
    /// confirms), in all.
    pub claim_losses: u8,
    /// A resolving entry (COMMITTED, resolving REFUSED, AMBIGUOUS) is written only by a process
    /// that confirms its claim in the same journal lock hold, as the gate's `append_if_open`
    /// does (the fix this model's counterexample led to). Off, a holder that lost its claim can
    /// close the dispatch of the one that took it over (see `README.md`).
    pub fenced_writes: bool,
    /// The broken variant, if any.
    pub bug: Option<Bug>,
}

impl GateModel {
    /// Tier-2 defaults: one process that submits and one that only recovers, one crash, a bound
    /// of one tick, failures and rejections at the service, no nemesis besides crashes.
    pub fn new(dedup: bool, lookup: bool) -> GateModel {
        GateModel {
            dedup,
            lookup,
            bound: 1,
            declares_bound: true,
            proposals: vec![Some(0), None],
            crashes: 1,
            revocations: 0,
            premise_changes: 0,
            replayed_lines: 0,
            max_time: 2,
            failures: true,
            rejects: true,
            max_unknown_answers: 1,
            land_late: false,
            lost_answers: true,
            send_window: None,
            claim_losses: 0,
            fenced_writes: false,
            bug: None,
        }
    }

    /// The target's capabilities as `interlock` reads them (1 tick = 1 ms).
    pub fn caps(&self) -> Capabilities {
        Capabilities {
            dedup: self.dedup.then_some(None),
            lookup: self.lookup,
            max_in_flight: self
                .declares_bound
                .then(|| Duration::from_millis(u64::from(self.bound))),
        }
    }

    /// The most resends recovery may make of one dispatch before it decides: each recovering
    /// process (a crash makes a fresh one) stops resending after `max_unknown_answers` unknown
    /// answers and one replayed failure. Resends answered "in use" are not counted: they did
    /// nothing, and a process asks again after one only once the clock has moved on.
    pub fn resend_bound(&self) -> u8 {
        let incarnations = self.proposals.len() as u32 + u32::from(self.crashes);
        u8::try_from(incarnations * (self.max_unknown_answers + 1)).unwrap_or(u8::MAX)
    }

    /// The same configuration with a bug.
    pub fn with_bug(mut self, bug: Bug) -> GateModel {
        self.bug = Some(bug);
        self
    }

    fn has(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }
}
