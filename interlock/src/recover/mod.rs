//! Recovery of open dispatches (DESIGN §2.3 table, §2.4 claims): the gate carries out what
//! [`next_recovery_step`] decides, one question at a time.
//!
//! This module holds the rounds themselves (who holds the claim, the round's loop, waiting for
//! blocked effects); taking a dispatch over is in `take_over`, the questions a round asks in
//! `questions`, the resend in `resend`, and the decisions that end a round in `conclude`.

use crate::budget::Budget;
use crate::claim::Role;
use crate::decide::{next_recovery_step, InFlight, Next, RecoveryFacts};
use crate::gate::{duration_ms, Gate, GateError, RecoveryMemory};
use crate::journal::JournalError;
use crate::lease::LeaseStore;
use crate::status::{Holder, Recovered, RecoveryOutcome};
use crate::store::Claim;
use crate::target::{Target, Tier};
use serde_json::{Map, Value};

pub(crate) mod answers;
mod conclude;
mod questions;
mod resend;
mod take_over;

/// The tier recovery acts on: a tier-1 dispatch older than the dedup window minus the margin is
/// treated as tier 2 if the target is queryable, else tier 3 (the service may have forgotten the
/// key).
pub fn effective_tier(
    tier: Tier,
    queryable: bool,
    dedup_window: Option<std::time::Duration>,
    dedup_margin: std::time::Duration,
    age_ms: u64,
) -> Tier {
    match (tier, dedup_window) {
        (Tier::One, Some(window)) if age_ms > duration_ms(window.saturating_sub(dedup_margin)) => {
            if queryable {
                Tier::Two
            } else {
                Tier::Three
            }
        }
        (t, _) => t,
    }
}

/// The open dispatch recovery works on, read under the journal lock after taking the claim.
struct OpenDispatch {
    hash: String,
    ts_ms: u64,
    effect: Value,
    lease: Value,
    premises: Value,
    /// The budget and amount the DISPATCHED was admitted against.
    budget: Option<Budget>,
}

/// What taking a claim over gives recovery.
struct TakenOver {
    dispatch: OpenDispatch,
    memory: RecoveryMemory,
    /// The monotonic instant the in-flight bound counts from.
    from: u64,
    /// Until when (monotonic) an earlier holder that may still live can send.
    lost_holder_sends_until: Option<u64>,
}

/// What a resend's answer leaves recovery with.
enum AfterResend {
    /// Settled or blocked: report this.
    Report(RecoveryOutcome),
    /// A replayed failure: every request under the key has finished; settle by lookup.
    Finished,
}

/// What one recovery round has learned so far: the decision facts, the re-check record written
/// on the resolving entry, and the lookup's evidence.
struct Round {
    facts: RecoveryFacts,
    rechecked: Map<String, Value>,
    evidence: Value,
}

/// At most this many questions in one recovery round (each step answers one; a replayed failure
/// adds one lookup): a guard, never reached by the decision function.
const MAX_STEPS_PER_ROUND: usize = 12;

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Recover every effect with an open dispatch, in first-seen order. Each gets exactly one
    /// [`Recovered`]: either resolved (COMMITTED, resolving REFUSED or AMBIGUOUS written) or
    /// `Blocked` with who or what holds it and until when — never skipped silently. A journal
    /// held by another process past the lock wait blocks each effect, never the caller.
    pub fn recover(&self) -> Result<Vec<Recovered>, GateError> {
        let open = self.open_effects()?;
        let mut out = Vec::with_capacity(open.len());
        for effect_id in open {
            if let Some(outcome) = self.recover_effect(&effect_id)? {
                out.push(Recovered { effect_id, outcome });
            }
        }
        Ok(out)
    }

    /// Recover one effect. `None` when it has no open dispatch (never dispatched, or already
    /// settled — possibly by another process a moment ago).
    ///
    /// - Another live process holds the effect's claim (a sender mid-send or another
    ///   recoverer): `Blocked { holder: Process(owner), until_ms: its claim expiry }`. A holder
    ///   past its TTL is alive but hung; it is never taken over (that could make two sends at
    ///   once): `Blocked` until now plus the retry interval, naming it.
    /// - Otherwise every earlier holder is dead: recovery takes the claim (and holds it while it
    ///   works), and from that instant counts the target's in-flight bound. It then follows
    ///   [`next_recovery_step`]: premises, lease, resend under the key (tier 1), lookup, the
    ///   bound, the lease again before a reapply.
    /// - A lookup, re-check or resend whose answer is unknown leaves the dispatch open and
    ///   reports `Blocked { holder: Target | LeaseStore, .. }`.
    pub fn recover_effect(&self, effect_id: &str) -> Result<Option<RecoveryOutcome>, GateError> {
        match self.recover_effect_locked(effect_id) {
            Err(GateError::Journal(e @ JournalError::Database { .. })) => Ok(Some(self.retry_later(
                Holder::Journal,
                format!("The journal store could not be used ({e}); nothing was sent."),
            ))),
            Err(GateError::Journal(JournalError::Busy { waited_ms, .. })) => {
                Ok(Some(RecoveryOutcome::Blocked {
                    holder: Holder::Journal,
                    until_ms: self
                        .now_ms()
                        .saturating_add(duration_ms(self.config.retry_interval)),
                    reason: format!(
                        "Another process has held the journal lock for over {waited_ms} ms; nothing was sent."
                    ),
                }))
            }
            other => other,
        }
    }

    fn recover_effect_locked(&self, eid: &str) -> Result<Option<RecoveryOutcome>, GateError> {
        let open = self.journal.peek(Some(eid), |j| {
            j.with_state(eid, |s| s.and_then(|s| s.open.clone()))
        })?;
        let Some(open) = open else {
            return Ok(None);
        };
        let Some(claim) = self.journal.try_take(eid)? else {
            return self.blocked_by_holder(eid, &open.hash).map(Some);
        };
        let Some(taken) = self.take_over(eid, &claim)? else {
            // Settled by another process a moment ago.
            self.release(claim, eid);
            return Ok(None);
        };
        let outcome = match self.settle(eid, &taken, &claim) {
            // Lost while settling (a database session ended): whoever holds the claim now
            // settles the dispatch; this process wrote nothing.
            Err(GateError::ClaimLost { reason, .. }) => {
                drop(claim);
                return Ok(Some(self.retry_later(
                    Holder::Journal,
                    format!("This recoverer's claim was lost before it could settle the dispatch ({reason}); nothing was written."),
                )));
            }
            other => other?,
        };
        if matches!(outcome, RecoveryOutcome::Resolved(_)) {
            self.forget(&taken.dispatch.hash);
            claim.remove();
        } else {
            // Every send of this round returned; an earlier holder's window stays in the record.
            claim.release(&self.key);
        }
        Ok(Some(outcome))
    }

    fn remember(&self, dispatch: &str, f: impl FnOnce(&mut RecoveryMemory)) {
        let mut memories = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        f(memories.entry(dispatch.to_owned()).or_default());
    }

    fn forget(&self, dispatch: &str) {
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(dispatch);
    }

    /// Ask what [`next_recovery_step`] asks, one question at a time, until it settles or waits.
    fn settle(
        &self,
        eid: &str,
        taken: &TakenOver,
        claim: &Claim<'_>,
    ) -> Result<RecoveryOutcome, GateError> {
        let d = &taken.dispatch;
        let mut facts = RecoveryFacts::new(
            self.target.capabilities(),
            self.config.dedup_margin,
            self.now_ms().saturating_sub(d.ts_ms),
            InFlight {
                now_ms: self.mono_ms(),
                counted_from_ms: taken.from,
            },
        );
        facts.finished = taken.memory.finished;
        facts.unknown_answers = taken.memory.unknown_answers;
        facts.heard_in_use = taken.memory.heard_in_use;
        facts.max_unknown_answers = self.config.max_unknown_answers;
        facts.lost_holder_sends_until_ms = taken.lost_holder_sends_until;
        let mut round = Round {
            facts,
            rechecked: taken
                .memory
                .record_ignored
                .map(|why| {
                    Map::from_iter([(
                        "claim_record_ignored".to_owned(),
                        Value::String(why.to_owned()),
                    )])
                })
                .unwrap_or_default(),
            evidence: Value::Null,
        };
        for _ in 0..MAX_STEPS_PER_ROUND {
            round.facts.in_flight.now_ms = self.mono_ms();
            let blocked = match next_recovery_step(&round.facts) {
                Next::CheckPremises => self.recheck_premises(eid, d, &mut round),
                Next::CheckLease | Next::CheckLeaseBeforeResend => {
                    self.recheck_lease(eid, d, &mut round)
                }
                Next::Lookup => self.look_up(eid, d, &mut round),
                Next::Resend(via) => {
                    let fields = Value::Object(round.rechecked.clone());
                    match self.resend(eid, d, via, &fields, &round.facts, claim)? {
                        AfterResend::Report(outcome) => Some(outcome),
                        AfterResend::Finished => {
                            round.facts.finished = true;
                            round.facts.found = None;
                            round.facts.in_flight.counted_from_ms = self.mono_ms();
                            None
                        }
                    }
                }
                decided => return self.conclude((eid, d), decided, round, claim),
            };
            if let Some(outcome) = blocked {
                return Ok(outcome);
            }
        }
        Ok(self.retry_later(
            Holder::Target,
            "Recovery asked every question one round allows without settling; it tries again."
                .into(),
        ))
    }

    /// Report who holds an effect's claim. The holder is named only if its record is for this
    /// open dispatch and the process it names may still be alive (not a reused pid).
    fn blocked_by_holder(&self, eid: &str, dispatch: &str) -> Result<RecoveryOutcome, GateError> {
        let record = {
            let j = self.journal.lock(eid)?;
            // A record that is not to be believed names nobody.
            self.trusted_record(&j, eid).ok().flatten()
        };
        let now = self.now_ms();
        let retry = now.saturating_add(duration_ms(self.config.retry_interval));
        Ok(match record {
            Some(r) if r.dispatch == dispatch && r.owner.may_be_alive() => {
                if r.expires_ms > now {
                    RecoveryOutcome::Blocked {
                        reason: format!(
                            "{} holds this effect's claim; it is {} it.",
                            r.owner,
                            if r.role == Role::Send { "sending" } else { "recovering" }
                        ),
                        holder: Holder::Process(r.owner),
                        until_ms: r.expires_ms,
                    }
                } else {
                    RecoveryOutcome::Blocked {
                        reason: format!(
                            "{} still holds this effect's claim although its TTL ran out at {} ms: it is alive but hung; it is not overridden (that could send twice) — stop that process and recovery proceeds at once.",
                            r.owner, r.expires_ms
                        ),
                        holder: Holder::Process(r.owner),
                        until_ms: retry,
                    }
                }
            }
            _ => RecoveryOutcome::Blocked {
                holder: Holder::UnnamedProcess,
                until_ms: retry,
                reason: "Another process holds this effect's claim and has not yet recorded itself for this dispatch.".into(),
            },
        })
    }

    fn retry_later(&self, holder: Holder, reason: String) -> RecoveryOutcome {
        RecoveryOutcome::Blocked {
            holder,
            until_ms: self
                .now_ms()
                .saturating_add(duration_ms(self.config.retry_interval)),
            reason,
        }
    }

    /// Recover every open effect, waiting (with real sleeps) for blocked ones until they can be
    /// settled, for at most `max_wait` in all. Each open effect gets one [`Recovered`]: its
    /// resolution, the status another process settled it with meanwhile, or — when `max_wait`
    /// runs out first — the last `Blocked` report. Sleeps until the earliest `until_ms`
    /// reported (at least 5 ms), never polls blindly.
    pub fn recover_wait(&self, max_wait: std::time::Duration) -> Result<Vec<Recovered>, GateError> {
        let started = std::time::Instant::now();
        let mut done: Vec<Recovered> = Vec::new();
        let mut pending: Vec<String> = self.open_effects()?;
        loop {
            let mut blocked: Vec<Recovered> = Vec::new();
            for effect_id in pending {
                match self.recover_effect(&effect_id)? {
                    Some(outcome @ RecoveryOutcome::Blocked { .. }) => {
                        blocked.push(Recovered { effect_id, outcome });
                    }
                    Some(outcome) => done.push(Recovered { effect_id, outcome }),
                    None => {
                        if let Some(status) = self.status(&effect_id)? {
                            done.push(Recovered {
                                effect_id,
                                outcome: RecoveryOutcome::Resolved(status),
                            });
                        }
                    }
                }
            }
            let Some(wake) = blocked
                .iter()
                .filter_map(|r| match r.outcome {
                    RecoveryOutcome::Blocked { until_ms, .. } => Some(until_ms),
                    RecoveryOutcome::Resolved(_) => None,
                })
                .min()
            else {
                return Ok(done);
            };
            let wait = std::time::Duration::from_millis(wake.saturating_sub(self.now_ms()))
                .max(std::time::Duration::from_millis(5));
            if started.elapsed() + wait > max_wait {
                done.extend(blocked);
                return Ok(done);
            }
            std::thread::sleep(wait);
            pending = blocked.into_iter().map(|r| r.effect_id).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn old_tier_one_dispatches_are_demoted() {
        let day = Some(Duration::from_secs(86_400));
        let margin = Duration::from_secs(600);
        let inside = 86_400_000 - 600_000;
        assert_eq!(
            effective_tier(Tier::One, true, day, margin, inside),
            Tier::One
        );
        assert_eq!(
            effective_tier(Tier::One, true, day, margin, inside + 1),
            Tier::Two
        );
        assert_eq!(
            effective_tier(Tier::One, false, day, margin, inside + 1),
            Tier::Three
        );
        assert_eq!(
            effective_tier(Tier::One, false, None, margin, u64::MAX),
            Tier::One
        );
        assert_eq!(effective_tier(Tier::Two, true, None, margin, 0), Tier::Two);
        assert_eq!(
            effective_tier(Tier::Three, false, day, margin, 0),
            Tier::Three
        );
    }
}
