//! A recovering process's rounds, each step the one `next_recovery_step` names.

use super::{Activity, ClaimRecord, Memory, Recovery, Seen, State};
use crate::journal::Entry;
use crate::properties::Check;
use crate::{Bug, GateModel};
use interlock::decide::{
    after_rejection, in_flight_start, next_recovery_step, LookupAnswer, Next, SendAnswer,
    SubmitEnd, SubmitNext,
};
use interlock::Via;

impl GateModel {
    /// End a recovery round: resolved (the claim record goes) or blocked (it stays).
    fn end_round(&self, s: &mut State, p: u8, settled: bool) {
        self.release(s, p, settled, true);
        Self::idle(s, p);
        if let Some(proc) = s.procs.get_mut(usize::from(p)).filter(|_| settled) {
            proc.memory = None;
        }
    }

    pub(super) fn step_recovery(&self, s: &mut State, p: u8, mut r: Recovery) {
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
    pub(super) fn answer_recovery(
        &self,
        s: &mut State,
        p: u8,
        mut r: Recovery,
        answer: SendAnswer,
    ) {
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
                        told_in_use: false,
                        heard_in_use: false,
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
            // After an "in use" answer, a rejection under the key says nothing of the request
            // the service said was executing: the key is asked again (as the gate does).
            SendAnswer::Rejected
                if via == Via::RetryIdempotent
                    && !self.has(Bug::UnknownAfterInUseGivesUp)
                    && s.procs
                        .get(pi)
                        .and_then(|proc| proc.memory)
                        .is_some_and(|m| m.dispatch == r.dispatch && m.heard_in_use) =>
            {
                // It counts as an unknown answer, as the gate counts it.
                memory(s, &|m| {
                    m.unknown_answers = m.unknown_answers.saturating_add(1)
                });
                self.end_round(s, p, false);
            }
            SendAnswer::Rejected => self.resend_rejected(s, p, r.dispatch),
            SendAnswer::Replayed => {
                memory(s, &|m| m.finished = true);
                r.found = None;
                r.counted_from = s.now;
                if let Some(proc) = s.procs.get_mut(pi) {
                    proc.act = Activity::Recovering(r);
                }
            }
            SendAnswer::InFlight if !self.has(Bug::InUseCountedAsUnknown) => {
                // A request under the key is executing now: the bound counts from this answer
                // (the record says so, as the gate's resend record does), it is no unknown
                // answer, and the key is asked again once the clock has moved on.
                let now = s.now;
                memory(s, &|m| {
                    m.told_in_use = true;
                    m.heard_in_use = true;
                    m.unknown_answers = 0;
                });
                // A probe answered "in use" did nothing: it is not counted among the resends
                // the progress property bounds (the clock bounds these).
                s.resends = s.resends.saturating_sub(1);
                if let Some(rec) = s
                    .record
                    .as_mut()
                    .filter(|rec| rec.dispatch == r.dispatch && rec.recovering)
                {
                    rec.in_flight_from = Some(now);
                }
                self.end_round(s, p, false);
            }
            SendAnswer::Unknown | SendAnswer::InFlight => {
                memory(s, &|m| {
                    m.unknown_answers = m.unknown_answers.saturating_add(1)
                });
                self.end_round(s, p, false);
            }
        }
    }

    /// A resend the service rejected: settled by a lookup, as `submit` settles a rejection.
    fn resend_rejected(&self, s: &mut State, p: u8, dispatch: u8) {
        let looked_up = s.service.found().then_some(LookupAnswer::Found);
        let looked_up = looked_up.unwrap_or(LookupAnswer::NotFound);
        let mut next = after_rejection(self.lookup, None);
        if let SubmitNext::Do(_) = next {
            next = after_rejection(self.lookup, Some(looked_up));
        }
        match next {
            SubmitNext::Finish(SubmitEnd::Commit(via)) => {
                let written = self.resolve(s, p, dispatch, Entry::Committed(via));
                self.end_round(s, p, written);
            }
            SubmitNext::Finish(SubmitEnd::Refuse(code)) => {
                let refused = Entry::Refused {
                    code,
                    resolves: true,
                };
                let written = self.resolve(s, p, dispatch, refused);
                self.end_round(s, p, written);
            }
            _ => self.end_round(s, p, false),
        }
    }

    /// Start a recovery round: take the claim (found free, or — the bug — taken from a live
    /// holder) and count the in-flight bound from now, or from the instant a dead recoverer of
    /// the same dispatch recorded.
    pub(super) fn start_recovery(&self, s: &mut State, p: u8, at: usize) {
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
}
