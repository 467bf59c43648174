//! The gate processes and their world as one `stateright` model. Every step a process takes
//! is the one `interlock::decide` names; the model only carries it out against the journal,
//! the claim, the lease store, the premises and the service it holds.
//!
//! This module holds the model's state and the actions on it shared by both callers; a
//! submitting process's steps are in `submit`, a recovering one's in `recovery`, the
//! `stateright` model and the protocol left alone in `transitions`.

use crate::bounded::{Bounded, Packed};
use crate::journal::{closing, fold, Entry, Fold, Line};
use crate::properties::Check;
use crate::service::{Outcome, Request, Service};
use crate::{Bug, GateModel};
use interlock::decide::{InFlight, RecoveryFacts, SendAnswer, SubmitFacts};
use interlock::Via;
use std::hash::{Hash, Hasher};
use std::time::Duration;

mod recovery;
mod submit;
mod transitions;

/// What one recovering process remembers about a dispatch between its rounds (lost when it
/// crashes), as the gate's `RecoveryMemory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Memory {
    /// The dispatch it is about.
    pub dispatch: u8,
    /// A replayed failure was seen.
    pub finished: bool,
    /// Resends answered "unknown".
    pub unknown_answers: u8,
    /// Its last resend was answered "in use" (an earlier request under the key still
    /// executing) at the current tick: it asks again only once the clock has moved on, as the
    /// gate waits its retry interval. Cleared when the clock ticks.
    pub told_in_use: bool,
    /// A resend of the dispatch was answered "in use" (sticky, as the gate's
    /// `RecoveryMemory::heard_in_use`): unknown answers no longer end the resends under the key.
    pub heard_in_use: bool,
}

/// A submit in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Submit {
    /// The payload proposed.
    pub payload: u8,
    /// What it learned so far (`interlock::decide::SubmitFacts`).
    pub facts: SubmitFacts,
    /// The identity of its DISPATCHED, once written.
    pub dispatch: Option<u8>,
    /// Its request left and it waits for the answer.
    pub awaiting: bool,
    /// It confirmed its claim: the request must leave before this instant.
    pub deadline: Option<u8>,
}

/// A recovery round in progress, holding the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Recovery {
    /// The identity of the open DISPATCHED.
    pub dispatch: u8,
    /// Its position in the journal (the DISPATCHED it read).
    pub at: u8,
    /// The instant the in-flight bound counts from.
    pub counted_from: u8,
    /// Premises re-checked.
    pub premises_hold: Option<bool>,
    /// Lease re-checked.
    pub lease_live: Option<bool>,
    /// Looked up.
    pub found: Option<bool>,
    /// When the lookup was sent.
    pub looked_up_at: Option<u8>,
    /// Lease checked again before a reapply.
    pub lease_live_before_resend: Option<bool>,
    /// A resend left under this `via`; the answer is awaited.
    pub awaiting: Option<Via>,
    /// Until when an earlier holder that may still live can send (the take-over plus the send
    /// window, or what the record inherited).
    pub lost_holder_sends_until: Option<u8>,
    /// It confirmed its claim for a resend: the request must leave before this instant.
    pub deadline: Option<u8>,
}

/// What a process is doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Activity {
    /// Nothing (between calls).
    #[default]
    Idle,
    /// In `submit`.
    Submitting(Submit),
    /// In a round of `recover`, holding the claim.
    Recovering(Recovery),
}

/// A gate process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Proc {
    /// The payload it has yet to propose.
    pub todo: Option<u8>,
    /// What it is doing.
    pub act: Activity,
    /// Its recovery memory.
    pub memory: Option<Memory>,
    /// Its claim was lost with its session while it lives; it learns so when it next confirms
    /// (or writes the claim record), and forgets it when its call ends.
    pub lost: bool,
}

impl Proc {
    /// Between calls.
    pub fn is_idle(&self) -> bool {
        self.act == Activity::Idle
    }
}

/// The effect's claim record (the file beside the claim lock), kept after its holder died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClaimRecord {
    /// The dispatch it is about.
    pub dispatch: u8,
    /// Written by a recoverer (else by the sender).
    pub recovering: bool,
    /// The instant a recoverer counts the in-flight bound from.
    pub in_flight_from: Option<u8>,
    /// Where claims can be lost while their holder lives: the process that wrote the record,
    /// while it may still send (`None` once it let the claim go with every send returned, or
    /// died). Always `None` where claims are lost only with their holder (nothing reads it).
    pub owner: Option<u8>,
    /// Until when a holder before the writer, that may still live, can send.
    pub earlier_sends_until: Option<u8>,
}

/// The most gate processes a configuration may have.
pub const MAX_PROCS: usize = 3;
/// The most journal lines a state may hold: each proposal writes at most three (PROPOSED, then
/// a refusal, or DISPATCHED and the line that resolves it) and one line is replayed, so 10 for
/// three proposers; with room. A push past it stops the check with a message.
pub const MAX_LINES: usize = 12;

/// The whole world of one effect. It holds no heap allocation (it is `Copy`): the checker
/// clones and hashes every state it generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    /// The clock (ticks; the gate reads them as ms).
    pub now: u8,
    /// The gate processes.
    pub procs: Bounded<Proc, MAX_PROCS>,
    /// The journal's lines for the effect.
    pub journal: Bounded<Line, MAX_LINES>,
    /// The process holding the claim.
    pub claim: Option<u8>,
    /// The claim record.
    pub record: Option<ClaimRecord>,
    /// The lease is live.
    pub lease_live: bool,
    /// The premises hold.
    pub premises_hold: bool,
    /// The service.
    pub service: Service,
    /// Crashes left.
    pub crashes_left: u8,
    /// Revocations left.
    pub revocations_left: u8,
    /// Premise changes left.
    pub premise_changes_left: u8,
    /// Replayed lines left.
    pub replays_left: u8,
    /// Claim losses left.
    pub losses_left: u8,
    /// Resends by recovery of the open dispatch (a ghost for P), capped past the bound.
    pub resends: u8,
    /// The step-checked properties broken so far ([`Check`] bits).
    pub broken: u16,
    /// What happened so far that reachability asks about ([`Seen`] bits; a ghost).
    pub seen: u8,
    /// The dispatches (bit `1 << id`) refused by a process that had been told "in use" for
    /// them (a ghost, for [`crate::properties::IN_USE_NOT_REFUSED`]).
    pub refused_after_in_use: u8,
}

/// The state's identity for the checker: every field's derived `Hash`, gathered in one stream
/// ([`Packed`]). The fields are named one by one without `..`, so a field added to [`State`]
/// and not hashed here does not compile.
impl Hash for State {
    fn hash<H: Hasher>(&self, out: &mut H) {
        let State {
            now,
            procs,
            journal,
            claim,
            record,
            lease_live,
            premises_hold,
            service,
            crashes_left,
            revocations_left,
            premise_changes_left,
            replays_left,
            losses_left,
            resends,
            broken,
            seen,
            refused_after_in_use,
        } = self;
        let mut h = Packed::new(out);
        now.hash(&mut h);
        procs.hash(&mut h);
        journal.hash(&mut h);
        claim.hash(&mut h);
        record.hash(&mut h);
        lease_live.hash(&mut h);
        premises_hold.hash(&mut h);
        service.hash(&mut h);
        crashes_left.hash(&mut h);
        revocations_left.hash(&mut h);
        premise_changes_left.hash(&mut h);
        replays_left.hash(&mut h);
        losses_left.hash(&mut h);
        resends.hash(&mut h);
        broken.hash(&mut h);
        seen.hash(&mut h);
        refused_after_in_use.hash(&mut h);
        h.flush();
    }
}

/// Events recorded in [`State::seen`], so that reachability can ask whether they happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A request left a holder whose claim had been lost.
    LostHolderSent = 1,
    /// A holder's send deadline passed before its request left: not sent.
    DeadlineStopped = 2,
}

/// One step of one actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Process `p` calls `submit` with its proposal.
    Propose(u8),
    /// Process `p` takes the next step of its `submit` or recovery round.
    Step(u8),
    /// The answer to process `p`'s request reaches it (`Unknown`: lost, or it gave up).
    Answer(u8, SendAnswer),
    /// Process `p` starts a recovery round of the open dispatch.
    Recover(u8),
    /// Process `p` dies (its claim is released); it restarts idle.
    Crash(u8),
    /// The service ends request `i` (by position) so.
    End(u8, Outcome),
    /// The lease is revoked.
    Revoke,
    /// A premise changes.
    ChangePremises,
    /// An old DISPATCHED line is copied back into the journal.
    ReplayLine,
    /// The clock moves on one tick.
    Tick,
    /// The claim's session ends while its holder lives: the lock is free, the holder does not
    /// know until it next confirms.
    LoseClaim,
}

impl GateModel {
    fn fold(&self, s: &State) -> Fold {
        fold(&s.journal, !self.has(Bug::UncheckedJournalLines))
    }

    fn append(s: &mut State, entry: Entry) {
        let n = s.journal.len();
        let id = u8::try_from(n).unwrap_or(u8::MAX);
        s.journal.push(Line {
            id,
            prev: id.checked_sub(1),
            entry,
        });
        if let Entry::Dispatched { .. } = entry {
            s.resends = 0;
        }
    }

    /// Process `p` lost its claim with its session and does not know it yet.
    fn lost(s: &State, p: u8) -> bool {
        s.procs.get(usize::from(p)).is_some_and(|x| x.lost)
    }

    /// Append a resolving entry only while `dispatch` is the open one (the gate's
    /// `append_if_open`); otherwise the process lost its dispatch to another writer — which
    /// breaks the claim's promise unless its claim was lost. With `fenced_writes`, a process
    /// whose claim was lost cannot confirm it in the same journal lock hold and writes nothing.
    /// Whether it wrote.
    fn resolve(&self, s: &mut State, p: u8, dispatch: u8, entry: Entry) -> bool {
        let lost = Self::lost(s, p);
        if lost && self.fenced_writes {
            return false;
        }
        let f = self.fold(s);
        let open = f.open.and_then(|i| s.journal.get(i)).map(|l| l.id);
        if open == Some(dispatch) {
            let told = s
                .procs
                .get(usize::from(p))
                .and_then(|proc| proc.memory)
                .is_some_and(|m| m.dispatch == dispatch && m.heard_in_use && !m.finished);
            if told && matches!(entry, Entry::Refused { resolves: true, .. }) {
                s.refused_after_in_use |= 1u8.checked_shl(u32::from(dispatch)).unwrap_or(0);
            }
            Self::append(s, entry);
            return true;
        }
        if !lost {
            s.broken |= Check::HolderKeepsDispatch as u16;
        }
        false
    }

    /// Give the claim up: the record is removed when the effect is settled, kept otherwise,
    /// saying (when `wrote`: this claim wrote it) that its holder let it go. A claim lost with
    /// its session is gone already: nothing is touched.
    fn release(&self, s: &mut State, p: u8, settled: bool, wrote: bool) {
        if s.claim == Some(p) {
            s.claim = None;
            if settled {
                s.record = None;
            } else if let Some(r) = s.record.as_mut().filter(|r| wrote && r.owner == Some(p)) {
                r.owner = None;
            }
        }
    }

    /// Process `p`'s call ends: it is between calls (its next claim is on a new session).
    fn idle(s: &mut State, p: u8) {
        if let Some(proc) = s.procs.get_mut(usize::from(p)) {
            proc.act = Activity::Idle;
            proc.lost = false;
        }
    }

    /// A request leaves process `p` under `dispatch`: check what must hold at every send.
    fn send(&self, s: &mut State, p: u8, dispatch: u8, payload: u8) {
        let f = self.fold(s);
        let genuine = s.journal.iter().enumerate().find(|(i, l)| {
            l.id == dispatch
                && usize::from(l.id) == *i
                && matches!(l.entry, Entry::Dispatched { .. })
        });
        match genuine {
            None => s.broken |= Check::SendAfterDispatched as u16,
            Some((i, _)) => {
                if closing(&s.journal, i).is_some() {
                    s.broken |= Check::SettledNotResent as u16;
                }
            }
        }
        if !self.dedup && s.service.requests.iter().any(|r| r.outcome.is_none()) {
            s.broken |= Check::NoConcurrentSend as u16;
        }
        if f.first_payload.is_some_and(|first| first != payload) {
            s.broken |= Check::FirstPayload as u16;
        }
        if Self::lost(s, p) {
            s.seen |= Seen::LostHolderSent as u8;
        }
        s.service.requests.push(Request {
            dispatch,
            payload,
            sent_at: s.now,
            waiter: Some(p),
            outcome: None,
        });
    }

    /// The recovery facts `interlock::decide` reads, from what this round learned.
    pub fn recovery_facts(&self, s: &State, r: &Recovery, memory: Option<Memory>) -> RecoveryFacts {
        let at = match s.journal.get(usize::from(r.at)).map(|l| l.entry) {
            Some(Entry::Dispatched { at, .. }) => at,
            _ => 0,
        };
        let mut f = RecoveryFacts::new(
            self.caps(),
            Duration::ZERO,
            u64::from(s.now.saturating_sub(at)),
            InFlight {
                now_ms: u64::from(s.now),
                counted_from_ms: u64::from(r.counted_from),
            },
        );
        let memory = memory.filter(|m| m.dispatch == r.dispatch);
        f.finished = memory.is_some_and(|m| m.finished);
        f.unknown_answers = memory.map_or(0, |m| u32::from(m.unknown_answers));
        f.max_unknown_answers = self.max_unknown_answers;
        f.heard_in_use =
            memory.is_some_and(|m| m.heard_in_use) && !self.has(Bug::UnknownAfterInUseGivesUp);
        f.premises_hold = r.premises_hold;
        f.lease_live = r.lease_live;
        f.found = r.found;
        f.looked_up_at_ms = r.looked_up_at.map(u64::from);
        f.lease_live_before_resend = r.lease_live_before_resend;
        f.lost_holder_sends_until_ms = r.lost_holder_sends_until.map(u64::from);
        if self.has(Bug::StaleNotFoundTrusted) && r.found.is_some() {
            f.looked_up_at_ms = Some(u64::from(s.now));
        }
        if self.has(Bug::ResendWithoutLookup) {
            f.finished = false;
        }
        f
    }

    /// Where claims can be lost while their holder lives, until when an earlier holder of
    /// `dispatch` may still send, as a take-over reads the record (`recover.rs`'s `take_over`;
    /// every process of the model is on one host and boot): the writer itself, unless it let the
    /// claim go or died, until now plus the window (its last confirmation came before now); a
    /// holder before it until the instant the record kept; no record of this dispatch, now plus
    /// the window.
    fn lost_holder_sends_until(&self, s: &State, dispatch: u8) -> Option<u8> {
        let window = s.now.saturating_add(self.send_window?);
        let Some(r) = s.record.filter(|r| r.dispatch == dispatch) else {
            return Some(window);
        };
        r.owner.map(|_| window).max(r.earlier_sends_until)
    }

    fn may_tick(&self, s: &State) -> bool {
        s.now < self.max_time
            && (self.land_late
                || s.service.requests.iter().all(|r| {
                    r.outcome.is_some()
                        || u16::from(r.sent_at) + u16::from(self.bound) > u16::from(s.now) + 1
                }))
    }
}
