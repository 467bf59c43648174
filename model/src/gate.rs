//! The gate processes and their world as one `stateright` model. Every step a process takes
//! is the one `interlock::decide` names; the model only carries it out against the journal,
//! the claim, the lease store, the premises and the service it holds.

use crate::journal::{closing, fold, Entry, Fold, Line};
use crate::properties::{properties, Check};
use crate::service::{Outcome, Request, Service};
use crate::{Bug, GateModel};
use interlock::decide::{
    admit, after_rejection, in_flight_start, next_recovery_step, next_submit_step, AdmissionPoint,
    InFlight, LookupAnswer, Next, RecoveryFacts, SendAnswer, SubmitEnd, SubmitFacts, SubmitNext,
    SubmitStep,
};
use interlock::{RefusalCode, Via};
use stateright::{Model, Property};
use std::time::Duration;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activity {
    /// Nothing (between calls).
    Idle,
    /// In `submit`.
    Submitting(Submit),
    /// In a round of `recover`, holding the claim.
    Recovering(Recovery),
}

/// A gate process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// The whole world of one effect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The clock (ticks; the gate reads them as ms).
    pub now: u8,
    /// The gate processes.
    pub procs: Vec<Proc>,
    /// The journal's lines for the effect.
    pub journal: Vec<Line>,
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

    fn step_submit(&self, s: &mut State, p: u8, mut sub: Submit) {
        let pi = usize::from(p);
        let step = match next_submit_step(&sub.facts) {
            SubmitNext::Do(step) => step,
            SubmitNext::Finish(end) => {
                self.finish_submit(s, p, &sub, end);
                return;
            }
        };
        match step {
            SubmitStep::RecordProposal => {
                let facts = self.fold(s).facts(sub.payload);
                sub.facts.admission = Some(admit(facts, AdmissionPoint::Proposal));
                if let SubmitNext::Finish(end) = next_submit_step(&sub.facts) {
                    if end == SubmitEnd::NotAdmitted(interlock::decide::Admission::Conflicting) {
                        Self::append(s, Entry::Proposed(sub.payload));
                    }
                    self.finish_submit(s, p, &sub, end);
                    return;
                }
                Self::append(s, Entry::Proposed(sub.payload));
            }
            SubmitStep::CheckLease => sub.facts.lease_live = Some(s.lease_live),
            SubmitStep::CheckPremises => sub.facts.premises_hold = Some(s.premises_hold),
            SubmitStep::TakeClaim => {
                let free = s.claim.is_none();
                if free {
                    s.claim = Some(p);
                }
                sub.facts.claim_taken = Some(free);
            }
            SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim => {
                // One journal lock hold: admission, the lease again, DISPATCHED.
                let facts = self.fold(s).facts(sub.payload);
                sub.facts.admission_under_claim = Some(admit(facts, AdmissionPoint::Dispatch));
                if let SubmitNext::Do(SubmitStep::CheckLeaseUnderClaim) =
                    next_submit_step(&sub.facts)
                {
                    sub.facts.lease_live_under_claim =
                        Some(if self.has(Bug::LeaseOnlyBeforePremises) {
                            sub.facts.lease_live == Some(true)
                        } else {
                            s.lease_live
                        });
                }
                if let SubmitNext::Finish(end) = next_submit_step(&sub.facts) {
                    self.finish_submit(s, p, &sub, end);
                    return;
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
                    return;
                }
                s.record = Some(ClaimRecord {
                    dispatch: id,
                    recovering: false,
                    in_flight_from: None,
                    owner: self.send_window.map(|_| p),
                    earlier_sends_until: None,
                });
                sub.dispatch = Some(id);
            }
            SubmitStep::Send | SubmitStep::LookupRejected => {
                let dispatch = sub.dispatch.unwrap_or(u8::MAX);
                match (self.send_window, sub.deadline) {
                    (Some(window), None) => {
                        // Confirm the claim's session: a lost one cannot be, and nothing is
                        // sent (the dispatch stays open for recovery).
                        if Self::lost(s, p) {
                            self.finish_submit(s, p, &sub, SubmitEnd::LeaveOpen);
                            return;
                        }
                        sub.deadline = Some(s.now.saturating_add(window));
                    }
                    (Some(_), Some(by)) if s.now >= by && !self.has(Bug::NoSendDeadline) => {
                        // The deadline passed before the request left: not sent; the claim is
                        // let go saying so.
                        s.seen |= Seen::DeadlineStopped as u8;
                        self.finish_submit(s, p, &sub, SubmitEnd::LeaveOpen);
                        return;
                    }
                    _ => {
                        self.send(s, p, dispatch, sub.payload);
                        sub.awaiting = true;
                    }
                }
            }
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
    fn answer_submit(&self, s: &mut State, p: u8, mut sub: Submit, answer: SendAnswer) {
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

    /// End a recovery round: resolved (the claim record goes) or blocked (it stays).
    fn end_round(&self, s: &mut State, p: u8, settled: bool) {
        self.release(s, p, settled, true);
        Self::idle(s, p);
        if let Some(proc) = s.procs.get_mut(usize::from(p)).filter(|_| settled) {
            proc.memory = None;
        }
    }

    fn step_recovery(&self, s: &mut State, p: u8, mut r: Recovery) {
        let pi = usize::from(p);
        let memory = s.procs.get(pi).and_then(|x| x.memory);
        let facts = self.recovery_facts(s, &r, memory);
        match next_recovery_step(&facts) {
            Next::CheckPremises => r.premises_hold = Some(s.premises_hold),
            Next::CheckLease => r.lease_live = Some(s.lease_live),
            Next::CheckLeaseBeforeResend => r.lease_live_before_resend = Some(s.lease_live),
            Next::Lookup => {
                r.found = Some(s.service.found());
                r.looked_up_at = Some(s.now);
            }
            Next::CommitFound => {
                let written = self.resolve(s, p, r.dispatch, Entry::Committed(Via::RecoveryQuery));
                return self.end_round(s, p, written);
            }
            Next::Refuse(code) => {
                let written = self.resolve(
                    s,
                    p,
                    r.dispatch,
                    Entry::Refused {
                        code,
                        resolves: true,
                    },
                );
                return self.end_round(s, p, written);
            }
            Next::Ambiguous(_) => {
                let written = self.resolve(s, p, r.dispatch, Entry::Ambiguous);
                return self.end_round(s, p, written);
            }
            Next::WaitInFlight { .. } => return self.end_round(s, p, false),
            Next::Resend(via) => {
                // Durable before the send: a later recoverer counts the bound from it.
                let record = self.recovery_record(p, &r, s.now);
                match (self.send_window, r.deadline) {
                    (None, _) => s.record = Some(record),
                    (Some(window), None) => {
                        // A lost session can write neither the record nor confirm the claim:
                        // nothing is sent, the round ends.
                        if Self::lost(s, p) {
                            return self.end_round(s, p, false);
                        }
                        s.record = Some(record);
                        r.deadline = Some(s.now.saturating_add(window));
                        if let Some(proc) = s.procs.get_mut(pi) {
                            proc.act = Activity::Recovering(r);
                        }
                        return;
                    }
                    (Some(_), Some(by)) if s.now >= by && !self.has(Bug::NoSendDeadline) => {
                        // Not sent: the deadline passed first.
                        s.seen |= Seen::DeadlineStopped as u8;
                        return self.end_round(s, p, false);
                    }
                    (Some(_), Some(_)) => r.deadline = None,
                }
                if r.premises_hold != Some(true) {
                    s.broken |= Check::PremisesRechecked as u16;
                }
                let reapply_checked =
                    via != Via::RecoveryReapply || r.lease_live_before_resend == Some(true);
                if r.lease_live != Some(true) || !reapply_checked {
                    s.broken |= Check::LeaseRechecked as u16;
                }
                let payload = match s.journal.get(usize::from(r.at)).map(|l| l.entry) {
                    Some(Entry::Dispatched { payload, .. }) => payload,
                    _ => u8::MAX,
                };
                self.send(s, p, r.dispatch, payload);
                s.resends = s.resends.saturating_add(1).min(self.resend_bound() + 1);
                r.awaiting = Some(via);
            }
        }
        if let Some(proc) = s.procs.get_mut(pi) {
            proc.act = Activity::Recovering(r);
        }
    }

    /// The record a recoverer writes: at its take-over and before each resend.
    fn recovery_record(&self, p: u8, r: &Recovery, in_flight_from: u8) -> ClaimRecord {
        ClaimRecord {
            dispatch: r.dispatch,
            recovering: true,
            in_flight_from: Some(in_flight_from),
            owner: self.send_window.map(|_| p),
            earlier_sends_until: r.lost_holder_sends_until,
        }
    }

    /// The answer to a recovery resend.
    fn answer_recovery(&self, s: &mut State, p: u8, mut r: Recovery, answer: SendAnswer) {
        let pi = usize::from(p);
        let via = r.awaiting.unwrap_or(Via::RetryIdempotent);
        r.awaiting = None;
        let memory = |s: &mut State, f: &dyn Fn(&mut Memory)| {
            if let Some(proc) = s.procs.get_mut(pi) {
                let mut m = proc
                    .memory
                    .filter(|m| m.dispatch == r.dispatch)
                    .unwrap_or(Memory {
                        dispatch: r.dispatch,
                        finished: false,
                        unknown_answers: 0,
                    });
                f(&mut m);
                proc.memory = Some(m);
            }
        };
        match answer {
            SendAnswer::Applied => {
                let written = self.resolve(s, p, r.dispatch, Entry::Committed(via));
                self.end_round(s, p, written);
            }
            SendAnswer::Rejected => {
                let looked_up = s.service.found().then_some(LookupAnswer::Found);
                let looked_up = looked_up.unwrap_or(LookupAnswer::NotFound);
                let mut next = after_rejection(self.lookup, None);
                if let SubmitNext::Do(_) = next {
                    next = after_rejection(self.lookup, Some(looked_up));
                }
                match next {
                    SubmitNext::Finish(SubmitEnd::Commit(via)) => {
                        let written = self.resolve(s, p, r.dispatch, Entry::Committed(via));
                        self.end_round(s, p, written);
                    }
                    SubmitNext::Finish(SubmitEnd::Refuse(code)) => {
                        let written = self.resolve(
                            s,
                            p,
                            r.dispatch,
                            Entry::Refused {
                                code,
                                resolves: true,
                            },
                        );
                        self.end_round(s, p, written);
                    }
                    _ => self.end_round(s, p, false),
                }
            }
            SendAnswer::Replayed => {
                memory(s, &|m| m.finished = true);
                r.found = None;
                r.counted_from = s.now;
                if let Some(proc) = s.procs.get_mut(pi) {
                    proc.act = Activity::Recovering(r);
                }
            }
            SendAnswer::Unknown => {
                memory(s, &|m| {
                    m.unknown_answers = m.unknown_answers.saturating_add(1)
                });
                self.end_round(s, p, false);
            }
        }
    }

    /// Start a recovery round: take the claim (found free, or — the bug — taken from a live
    /// holder) and count the in-flight bound from now, or from the instant a dead recoverer of
    /// the same dispatch recorded.
    fn start_recovery(&self, s: &mut State, p: u8, at: usize) {
        let Some(line) = s.journal.get(at).copied() else {
            return;
        };
        let dispatched_at = match line.entry {
            Entry::Dispatched { at, .. } => at,
            _ => 0,
        };
        let recorded = s
            .record
            .filter(|r| r.dispatch == line.id && r.recovering)
            .and_then(|r| r.in_flight_from)
            .map(u64::from);
        let counted_from = if self.has(Bug::InFlightFromDispatched) {
            dispatched_at
        } else {
            u8::try_from(in_flight_start(u64::from(s.now), recorded)).unwrap_or(u8::MAX)
        };
        let lost_holder_sends_until = if self.has(Bug::TakeOverWaitsOnlyInFlight) {
            None
        } else {
            self.lost_holder_sends_until(s, line.id)
        };
        let r = Recovery {
            dispatch: line.id,
            at: u8::try_from(at).unwrap_or(u8::MAX),
            counted_from,
            premises_hold: None,
            lease_live: None,
            found: None,
            looked_up_at: None,
            lease_live_before_resend: None,
            awaiting: None,
            lost_holder_sends_until,
            deadline: None,
        };
        s.claim = Some(p);
        s.record = Some(self.recovery_record(p, &r, counted_from));
        if let Some(proc) = s.procs.get_mut(usize::from(p)) {
            proc.act = Activity::Recovering(r);
        }
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

impl GateModel {
    /// Left alone from `s` — no more crashes, revocations, premise changes or replayed lines,
    /// no new proposals, the clock free to run past `max_time` — does the protocol settle the
    /// effect? Every process takes its steps, idle ones start recovery rounds, requests end in
    /// the first way the service allows; answers reach their process (`hostile`: every answer
    /// is lost). Checked where every process is between calls.
    pub fn settles_alone(&self, s: &State, hostile: bool) -> bool {
        self.continue_alone(s, hostile, None)
    }

    /// [`GateModel::settles_alone`], recording the steps taken into `path` when given.
    pub fn continue_alone(
        &self,
        s: &State,
        hostile: bool,
        mut path: Option<&mut Vec<(State, Option<Action>)>>,
    ) -> bool {
        if !s.procs.iter().all(Proc::is_idle) || self.fold(s).corrupt_at.is_some() {
            return true;
        }
        let mut s = s.clone();
        s.crashes_left = 0;
        s.revocations_left = 0;
        s.premise_changes_left = 0;
        s.replays_left = 0;
        s.losses_left = 0;
        let mut actions = Vec::new();
        let mut blocked = false;
        let busy_after = |m: &GateModel, s: &State, a: Action| {
            m.next_state(s, a)
                .is_some_and(|n| n.procs.iter().any(|p| !p.is_idle()))
        };
        for _ in 0..400 {
            let f = self.fold(&s);
            if f.corrupt_at.is_some() || (f.open.is_none() && s.procs.iter().all(Proc::is_idle)) {
                if let Some(p) = path.as_deref_mut() {
                    p.push((s, None));
                }
                return true;
            }
            actions.clear();
            self.actions(&s, &mut actions);
            let pick = |want: &dyn Fn(&Action) -> bool| actions.iter().copied().find(|a| want(a));
            let next = pick(&|a| matches!(a, Action::End(..)))
                .or_else(|| {
                    pick(&|a| match a {
                        Action::Answer(_, ans) => hostile == (*ans == SendAnswer::Unknown),
                        _ => false,
                    })
                })
                .or_else(|| pick(&|a| matches!(a, Action::Answer(..))))
                .or_else(|| pick(&|a| matches!(a, Action::Step(_))))
                // A round that ended blocked is retried once the clock has moved on (the
                // gate's `recover_wait` sleeps until the instant it was told).
                .or_else(|| {
                    (!blocked)
                        .then(|| pick(&|a| matches!(a, Action::Recover(_))))
                        .flatten()
                })
                .unwrap_or(Action::Tick);
            let busy = |s: &State| s.procs.iter().any(|p| !p.is_idle());
            blocked = match next {
                Action::Tick => false,
                Action::Step(_) | Action::Answer(..) => busy(&s) && !busy_after(self, &s, next),
                _ => blocked,
            };
            let Some(n) = self.next_state(&s, next) else {
                return false;
            };
            if let Some(p) = path.as_deref_mut() {
                p.push((s, Some(next)));
            }
            s = n;
        }
        if let Some(p) = path {
            p.push((s, None));
        }
        false
    }
}

impl Model for GateModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            now: 0,
            procs: self
                .proposals
                .iter()
                .map(|&todo| Proc {
                    todo,
                    act: Activity::Idle,
                    memory: None,
                    lost: false,
                })
                .collect(),
            journal: Vec::new(),
            claim: None,
            record: None,
            lease_live: true,
            premises_hold: true,
            service: Service::default(),
            crashes_left: self.crashes,
            revocations_left: self.revocations,
            premise_changes_left: self.premise_changes,
            replays_left: self.replayed_lines,
            losses_left: self.claim_losses,
            resends: 0,
            broken: 0,
            seen: 0,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let f = self.fold(s);
        // A journal found corrupt stops every gate process with an error naming the line.
        let usable = f.corrupt_at.is_none();
        for (i, proc) in s.procs.iter().enumerate() {
            let p = u8::try_from(i).unwrap_or(u8::MAX);
            if usable {
                match proc.act {
                    Activity::Idle => {
                        if proc.todo.is_some() {
                            actions.push(Action::Propose(p));
                        }
                        let holder_live = s.claim.is_some_and(|h| h != p);
                        if f.open.is_some()
                            && (s.claim.is_none()
                                || (holder_live && self.has(Bug::TakeOverLiveHolder)))
                        {
                            actions.push(Action::Recover(p));
                        }
                    }
                    Activity::Submitting(Submit { awaiting: true, .. })
                    | Activity::Recovering(Recovery {
                        awaiting: Some(_), ..
                    }) => {
                        if let Some(r) = s.service.awaited_by(p) {
                            if let Some(o) = r.outcome {
                                actions.push(Action::Answer(p, o.answer()));
                            }
                            if r.outcome.map(Outcome::answer) != Some(SendAnswer::Unknown) {
                                actions.push(Action::Answer(p, SendAnswer::Unknown));
                            }
                        }
                    }
                    Activity::Submitting(_) | Activity::Recovering(_) => {
                        actions.push(Action::Step(p));
                    }
                }
            }
            if s.crashes_left > 0 && (!proc.is_idle() || proc.memory.is_some()) {
                actions.push(Action::Crash(p));
            }
        }
        for (i, r) in s.service.requests.iter().enumerate() {
            if r.outcome.is_none() {
                for o in s
                    .service
                    .possible(i, self.dedup, self.failures, self.rejects)
                {
                    actions.push(Action::End(u8::try_from(i).unwrap_or(u8::MAX), o));
                }
            }
        }
        if s.revocations_left > 0 && s.lease_live {
            actions.push(Action::Revoke);
        }
        if s.premise_changes_left > 0 && s.premises_hold {
            actions.push(Action::ChangePremises);
        }
        if s.replays_left > 0
            && f.open.is_none()
            && s.journal
                .iter()
                .any(|l| matches!(l.entry, Entry::Dispatched { .. }))
        {
            actions.push(Action::ReplayLine);
        }
        if self.may_tick(s) {
            actions.push(Action::Tick);
        }
        if s.losses_left > 0 && s.claim.is_some() {
            actions.push(Action::LoseClaim);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Propose(p) => {
                let proc = s.procs.get_mut(usize::from(p))?;
                let payload = proc.todo.take()?;
                proc.act = Activity::Submitting(Submit {
                    payload,
                    facts: SubmitFacts::new(self.lookup),
                    dispatch: None,
                    awaiting: false,
                    deadline: None,
                });
                let Activity::Submitting(sub) = proc.act else {
                    return None;
                };
                self.step_submit(&mut s, p, sub);
            }
            Action::Step(p) => match s.procs.get(usize::from(p))?.act {
                Activity::Submitting(sub) => self.step_submit(&mut s, p, sub),
                Activity::Recovering(r) => self.step_recovery(&mut s, p, r),
                Activity::Idle => return None,
            },
            Action::Answer(p, answer) => {
                s.service.forget_waiter(p);
                match s.procs.get(usize::from(p))?.act {
                    Activity::Submitting(sub) => self.answer_submit(&mut s, p, sub, answer),
                    Activity::Recovering(r) => self.answer_recovery(&mut s, p, r, answer),
                    Activity::Idle => return None,
                }
            }
            Action::Recover(p) => {
                let at = self.fold(&s).open?;
                self.start_recovery(&mut s, p, at);
            }
            Action::Crash(p) => {
                s.crashes_left -= 1;
                if s.claim == Some(p) {
                    s.claim = None;
                }
                s.service.forget_waiter(p);
                // A process of this host known to be gone can no longer send.
                if let Some(r) = s.record.as_mut().filter(|r| r.owner == Some(p)) {
                    r.owner = None;
                }
                let proc = s.procs.get_mut(usize::from(p))?;
                proc.act = Activity::Idle;
                proc.memory = None;
                proc.lost = false;
            }
            Action::End(i, outcome) => s.service.resolve(usize::from(i), outcome, self.dedup),
            Action::Revoke => {
                s.revocations_left -= 1;
                s.lease_live = false;
            }
            Action::ChangePremises => {
                s.premise_changes_left -= 1;
                s.premises_hold = false;
            }
            Action::ReplayLine => {
                s.replays_left -= 1;
                let old = s
                    .journal
                    .iter()
                    .find(|l| matches!(l.entry, Entry::Dispatched { .. }))
                    .copied()?;
                s.journal.push(old);
            }
            Action::Tick => s.now += 1,
            Action::LoseClaim => {
                s.losses_left -= 1;
                let holder = s.claim.take()?;
                s.procs.get_mut(usize::from(holder))?.lost = true;
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties()
    }

    fn format_action(&self, action: &Action) -> String {
        format!("{action:?}")
    }
}
