//! Recovery of open dispatches (DESIGN §2.3 table, §2.4 claims): the gate carries out what
//! [`next_recovery_step`] decides, one question at a time.

use crate::budget::{reckon_under_budget_lock, Budget, BudgetError, BudgetStore};
use crate::claim::Role;
use crate::decide::{in_flight_start, next_recovery_step, InFlight, Next, RecoveryFacts};
use crate::gate::{duration_ms, recordable, Gate, GateError, RecoveryMemory, Settled};
use crate::journal::JournalError;
use crate::lease::LeaseStore;
use crate::status::{
    Holder, Recovered, RecoveryOutcome, RefusalCode, Status, Step, Via, AMBIGUOUS_CODE,
};
use crate::store::Claim;
use crate::target::{Target, TargetError, Tier};
use serde_json::{json, Map, Value};
use verify::entry::Kind;

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
        let open = self
            .journal
            .peek(Some(eid), |j| j.state(eid).and_then(|s| s.open.clone()))?;
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

    /// With the claim held: read the open dispatch under the journal lock, and write this gate's
    /// claim record (before any target call) with the instant the in-flight bound counts from:
    /// the one a dead recoverer of this host and boot recorded for the same dispatch, else now —
    /// when the claim was found free.
    ///
    /// Where claims can be lost while their holder lives (the store states a send window), an
    /// earlier holder that may still live — its record does not say it let the claim go, and it
    /// is not known dead — may still send until the window after its last confirmation, which
    /// came before now: until now plus the window. So may any holder before it that its record
    /// says may still send (an instant of this host and boot is taken as it is; any other, or a
    /// missing record, counts as now plus the window).
    fn take_over(&self, eid: &str, claim: &Claim<'_>) -> Result<Option<TakenOver>, GateError> {
        let mut j = self.journal.lock(eid)?;
        let Some(open) = j.state(eid).and_then(|s| s.open.clone()) else {
            return Ok(None);
        };
        let d = j.entry(eid, open.index)?;
        let Some(effect) = d.get("effect").cloned() else {
            return Err(GateError::Journal(JournalError::Corrupt {
                path: self.journal.path().to_owned(),
                line: 0,
                reason: format!(
                    "the open DISPATCHED {} of effect {eid} has no `effect` to resend",
                    open.hash
                ),
            }));
        };
        let dispatch = OpenDispatch {
            hash: open.hash.clone(),
            ts_ms: d.get("ts_ms").and_then(Value::as_u64).unwrap_or(0),
            effect,
            lease: d.get("lease").cloned().unwrap_or(Value::Null),
            premises: d.get("premises").cloned().unwrap_or(Value::Null),
            budget: j.state(eid).and_then(|s| s.admitted_budget.clone()),
        };
        let now = self.mono_ms();
        // A record that is not signed by a trusted key is not believed: recovery then counts
        // from its own take-over and waits out any earlier holder's whole send window, and
        // says so on the entry that settles the dispatch.
        let (record, record_ignored) = match self.trusted_record(&j, eid) {
            Ok(r) => (r.filter(|r| r.dispatch == dispatch.hash), None),
            Err(why) => (None, Some(why)),
        };
        let lost_holder_sends_until = self.journal.send_window().and_then(|window| {
            let window_from_now = now.saturating_add(duration_ms(window));
            let Some(r) = &record else {
                return Some(window_from_now);
            };
            let itself = (!r.released && r.owner.may_be_alive()).then_some(window_from_now);
            let before_it = r.earlier_sends_until.as_ref().map(|m| {
                if r.owner.host == self.owner.host && m.boot == self.boot && !m.boot.is_empty() {
                    m.ms
                } else {
                    window_from_now
                }
            });
            // Kept once passed: the in-flight bound still counts from it.
            itself.max(before_it)
        });
        let inherited = record
            .filter(|r| r.role == Role::Recover && r.owner.host == self.owner.host)
            .and_then(|r| r.in_flight_from)
            .filter(|m| m.boot == self.boot && !m.boot.is_empty())
            .map(|m| m.ms);
        let from = in_flight_start(now, inherited);
        let record = self.claim_record(
            Role::Recover,
            &dispatch.hash,
            self.now_ms(),
            Some(from),
            lost_holder_sends_until,
            self.journal.next_record_gen(&j, eid)?,
        );
        j.write_record(claim, eid, &record)?;
        drop(j);
        if let Some(why) = record_ignored {
            self.remember(&dispatch.hash, |m| m.record_ignored = Some(why));
        }
        let memory = self
            .memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&dispatch.hash)
            .copied()
            .unwrap_or_default();
        Ok(Some(TakenOver {
            dispatch,
            memory,
            from,
            lost_holder_sends_until,
        }))
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

    /// Re-check the premises recorded on the DISPATCHED (I3); `Some` when it cannot now.
    fn recheck_premises(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        match self.target.check_premises(eid, &d.premises) {
            Ok(v) => {
                round.facts.premises_hold = Some(v.is_empty());
                round.rechecked.insert("violations".into(), json!(v));
                None
            }
            Err(e) => Some(self.retry_later(
                Holder::Target,
                format!("The premises could not be re-checked ({e}); nothing was sent."),
            )),
        }
    }

    /// Re-check the lease recorded on the DISPATCHED (I4) — the second time, right before a
    /// reapply; `Some` when the store cannot answer now.
    fn recheck_lease(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        let lc = match self.leases.check(&d.lease, &d.effect) {
            Ok(lc) => lc,
            Err(e) => {
                return Some(self.retry_later(
                    Holder::LeaseStore,
                    format!("The lease could not be re-checked ({e}); nothing was sent."),
                ))
            }
        };
        let r = &mut round.rechecked;
        r.insert("lease_live".into(), json!(lc.live));
        r.insert("grant".into(), lc.grant.map_or(Value::Null, recordable));
        if round.facts.lease_live.is_some() {
            round.facts.lease_live_before_resend = Some(lc.live);
        } else {
            round.facts.lease_live = Some(lc.live);
        }
        self.recheck_budget(eid, d, round)
    }

    /// Re-check the budget the DISPATCHED was admitted against (DESIGN §2.8), with the lease:
    /// the cap now, and the other effects' reservations now, read under the journal lock (this
    /// effect's own is its amount, counted once). `Some` when it cannot be read now.
    fn recheck_budget(
        &self,
        eid: &str,
        d: &OpenDispatch,
        round: &mut Round,
    ) -> Option<RecoveryOutcome> {
        let budget = d.budget.as_ref()?;
        // A gate without a budget store knows no budget: the effect is not resent.
        let store: &dyn BudgetStore = match &self.budgets {
            Some(store) => store.as_ref(),
            None => &NoBudgets,
        };
        let reckoned = match self.journal.lock(eid) {
            Ok(mut j) => reckon_under_budget_lock(&mut j, store, eid, budget),
            Err(e) => {
                return Some(self.retry_later(
                    Holder::Journal,
                    format!("The budget could not be re-checked ({e}); nothing was sent."),
                ))
            }
        };
        match reckoned {
            Ok(r) => {
                round.facts.budget_within = Some(r.within);
                round.rechecked.insert("budget".into(), r.field());
                None
            }
            // The budget store is reported as the lease store: both are the gate's authority.
            Err(e) => Some(self.retry_later(
                Holder::LeaseStore,
                format!("The budget could not be re-checked ({e}); nothing was sent."),
            )),
        }
    }

    /// Look the effect up, noting when the lookup left; `Some` when the lookup failed.
    fn look_up(&self, eid: &str, d: &OpenDispatch, round: &mut Round) -> Option<RecoveryOutcome> {
        match self.target.query(eid, &d.effect) {
            Ok(found) => {
                round.facts.found = Some(found.is_some());
                round.facts.looked_up_at_ms = Some(round.facts.in_flight.now_ms);
                round.evidence = found.map_or(Value::Null, recordable);
                None
            }
            Err(e) => Some(self.retry_later(
                Holder::Target,
                format!("The lookup failed ({e}); nothing was sent."),
            )),
        }
    }

    /// Carry out a decision that ends the round: COMMITTED found, a resolving REFUSED, AMBIGUOUS,
    /// or a wait for the in-flight bound.
    fn conclude(
        &self,
        (eid, d): (&str, &OpenDispatch),
        decided: Next,
        round: Round,
        claim: &Claim<'_>,
    ) -> Result<RecoveryOutcome, GateError> {
        let rechecked = Value::Object(round.rechecked);
        match decided {
            Next::CommitFound => {
                let fields = json!({"via": Via::RecoveryQuery.as_str(), "evidence": round.evidence, "rechecked": rechecked});
                self.resolve(
                    (eid, &d.hash),
                    Kind::Committed,
                    fields,
                    Status::CommittedOnQuery,
                    claim,
                )
            }
            Next::Refuse(code) => {
                let mut fields = json!({"code": code.as_str(), "reason": refusal_reason(code), "rechecked": rechecked, "resolves": true});
                if let (RefusalCode::OverBudget, Some(m)) = (code, fields.as_object_mut()) {
                    // Where every over_budget refusal keeps it, for verify.
                    let budget = m.get("rechecked").and_then(|r| r.get("budget")).cloned();
                    m.insert("budget".into(), budget.unwrap_or(Value::Null));
                }
                self.record_assumption(&mut fields, &round.facts);
                self.resolve(
                    (eid, &d.hash),
                    Kind::Refused,
                    fields,
                    Status::Refused(code),
                    claim,
                )
            }
            Next::Ambiguous(why) => {
                let fields =
                    json!({"code": AMBIGUOUS_CODE, "reason": why.reason(), "rechecked": rechecked});
                self.resolve(
                    (eid, &d.hash),
                    Kind::Ambiguous,
                    fields,
                    Status::Ambiguous,
                    claim,
                )
            }
            Next::WaitInFlight { until_ms } => {
                let counted_from = self.wall_of(round.facts.in_flight.counted_from_ms);
                let until = self.wall_of(until_ms);
                let reason = match round.facts.lost_holder_sends_until_ms {
                    Some(sends_until) if sends_until > round.facts.in_flight.counted_from_ms => {
                        format!(
                            "A lookup did not find the effect, but a request may still land at the target until {until} ms: an earlier holder of the claim may live (its claim was lost, not necessarily its process) and send until {} ms (the store's send window from when this recovery took the claim over), and the declared in-flight bound counts from then.",
                            self.wall_of(sends_until)
                        )
                    }
                    _ => format!(
                        "A lookup did not find the effect, but a request may still land at the target until {until} ms (its declared in-flight bound, counted from {counted_from} ms, when this recovery found the claim free or last sent)."
                    ),
                };
                Ok(RecoveryOutcome::Blocked {
                    holder: Holder::Target,
                    until_ms: until,
                    reason,
                })
            }
            // Questions are asked in `settle`; none reaches here.
            Next::CheckPremises
            | Next::CheckLease
            | Next::CheckLeaseBeforeResend
            | Next::Lookup
            | Next::Resend(_) => Ok(self.retry_later(
                Holder::Target,
                "Recovery reached a question where it expected a decision; it tries again.".into(),
            )),
        }
    }

    /// Record on a REFUSED or REAPPLIED the in-flight assumption its "not found" rests on, and
    /// beside it, when an earlier holder may have lived, the send window it waited out and the
    /// instant that holder could send until.
    fn record_assumption(&self, fields: &mut Value, facts: &RecoveryFacts) {
        if let (Some(m), Some(bound)) = (fields.as_object_mut(), facts.caps.max_in_flight) {
            m.insert("assumed_max_in_flight_ms".into(), json!(duration_ms(bound)));
            if let (Some(until), Some(window)) =
                (facts.lost_holder_sends_until_ms, self.journal.send_window())
            {
                m.insert("assumed_send_window_ms".into(), json!(duration_ms(window)));
                m.insert("holder_sends_until_ms".into(), json!(self.wall_of(until)));
            }
            m.insert(
                "counted_from_ms".into(),
                json!(self.wall_of(facts.in_flight.counted_from_ms)),
            );
        }
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

    /// Write the resolving entry (only while the dispatch is still open) and report it.
    fn resolve(
        &self,
        (eid, d_hash): (&str, &str),
        kind: Kind,
        fields: Value,
        status: Status,
        claim: &Claim<'_>,
    ) -> Result<RecoveryOutcome, GateError> {
        match self.append_if_open(eid, d_hash, kind, fields, Some(claim))? {
            Some(_) => Ok(RecoveryOutcome::Resolved(status)),
            None => Err(GateError::LostDispatch {
                effect_id: eid.to_owned(),
            }),
        }
    }

    /// Resend the recorded payload (I5) under the same effect id. The in-flight count restarts
    /// from this send.
    fn resend(
        &self,
        eid: &str,
        d: &OpenDispatch,
        via: Via,
        rechecked: &Value,
        facts: &RecoveryFacts,
        claim: &Claim<'_>,
    ) -> Result<AfterResend, GateError> {
        // Durable before the send: a resend is under way, with no instant to count from yet. A
        // request can stall before it leaves (a slow connect, a paused process), so no instant
        // taken before the call bounds when it left; a recoverer that finds this holder dead
        // counts from its own take-over (every request of a dead holder had left by then).
        self.write_resend_record(eid, d, facts, claim, None)?;
        let deadline = match claim.confirm() {
            Ok(deadline) => deadline,
            Err(e) => {
                let why = format!(
                    "The claim could not be confirmed before the resend ({e}); nothing was sent."
                );
                return Ok(AfterResend::Report(self.retry_later(Holder::Journal, why)));
            }
        };
        let result = self.target.apply_before(eid, &d.effect, &d.hash, deadline);
        // Whatever left, left before the call returned: the bound counts from here.
        let sent_at = self.mono_ms();
        if result.is_err() {
            self.write_resend_record(eid, d, facts, claim, Some(sent_at))?;
        }
        match result {
            Ok(evidence) => {
                self.observe(Step::Sent);
                let status = Status::committed_via(via);
                let mut fields = json!({"via": via.as_str(), "evidence": recordable(evidence), "rechecked": rechecked});
                if via == Via::RecoveryReapply {
                    self.record_assumption(&mut fields, facts);
                }
                if let (Via::RetryIdempotent, Some(m)) = (via, fields.as_object_mut()) {
                    // Resent under the key because the dispatch looked younger than the dedup
                    // window: its age on two hosts' wall clocks, and the skew assumed.
                    m.insert("dedup_age_ms".into(), json!(facts.dispatch_age_ms));
                    m.insert(
                        "assumed_clock_skew_ms".into(),
                        json!(duration_ms(self.config.dedup_margin)),
                    );
                }
                let out = self.resolve((eid, &d.hash), Kind::Committed, fields, status, claim)?;
                self.observe(Step::Committed);
                Ok(AfterResend::Report(out))
            }
            // A resend under the key that the service refused before executing it (a 400 or
            // 401 it does not save under the key) says nothing of the first request, which may
            // still be on its way: settle as after a replayed failure, by a lookup only once the
            // bound has passed since this resend, never by an immediate "not found".
            Err(TargetError::Rejected { .. }) if via == Via::RetryIdempotent => {
                self.remember(&d.hash, |m| m.finished = true);
                Ok(AfterResend::Finished)
            }
            Err(TargetError::Rejected { reason }) => Ok(AfterResend::Report(
                match self.settle_rejected(
                    eid,
                    &d.hash,
                    &d.effect,
                    &reason,
                    (Some(rechecked), Some(claim)),
                )? {
                    Settled::Done(status, _) => RecoveryOutcome::Resolved(status),
                    Settled::Open(why) => self.retry_later(Holder::Target, why),
                },
            )),
            Err(TargetError::Replayed { .. }) => {
                self.remember(&d.hash, |m| m.finished = true);
                Ok(AfterResend::Finished)
            }
            Err(TargetError::NotSent { reason }) => Ok(AfterResend::Report(self.retry_later(
                Holder::Journal,
                format!("The resend did not leave ({reason}); nothing was sent."),
            ))),
            Err(TargetError::Unknown { reason }) => {
                self.remember(&d.hash, |m| m.unknown_answers += 1);
                let until = match (via, facts.caps.max_in_flight) {
                    (Via::RecoveryReapply, Some(bound)) => {
                        let from = sent_at.max(facts.lost_holder_sends_until_ms.unwrap_or(0));
                        self.wall_of(from).saturating_add(duration_ms(bound))
                    }
                    _ => self
                        .now_ms()
                        .saturating_add(duration_ms(self.config.retry_interval)),
                };
                Ok(AfterResend::Report(RecoveryOutcome::Blocked {
                    holder: Holder::Target,
                    until_ms: until,
                    reason: format!(
                        "The resend's outcome is unknown ({reason}); the dispatch stays open."
                    ),
                }))
            }
        }
    }

    /// The claim record of a resend: `sent_by` is the instant by which its request had left
    /// (after the call returned), `None` while it may still be on its way out.
    fn write_resend_record(
        &self,
        eid: &str,
        d: &OpenDispatch,
        facts: &RecoveryFacts,
        claim: &Claim<'_>,
        sent_by: Option<u64>,
    ) -> Result<(), GateError> {
        let mut j = self.journal.lock(eid)?;
        let record = self.claim_record(
            Role::Recover,
            &d.hash,
            self.now_ms(),
            sent_by,
            facts.lost_holder_sends_until_ms,
            self.journal.next_record_gen(&j, eid)?,
        );
        j.write_record(claim, eid, &record)?;
        Ok(())
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

/// The budget store of a gate that has none: it knows no budget.
struct NoBudgets;

impl BudgetStore for NoBudgets {
    fn cap(&self, _id: &str) -> Result<Option<i64>, BudgetError> {
        Ok(None)
    }
}

/// The one-sentence reason of a refusal at recovery.
fn refusal_reason(code: RefusalCode) -> &'static str {
    match code {
        RefusalCode::LeaseAtRecovery => "The lease no longer holds at recovery and a lookup, trusted once the target's in-flight bound had passed, did not find the send.",
        RefusalCode::StalePremiseAtRecovery => "A premise no longer holds at recovery and a lookup, trusted once the target's in-flight bound had passed, did not find the send.",
        RefusalCode::OverBudget => "The budget can no longer take the effect at recovery (its cap was lowered, or the budget is unknown now) and a lookup, trusted once the target's in-flight bound had passed, did not find the send.",
        RefusalCode::TargetFailedAtRecovery => "The service failed the request (a saved error replayed under its key, or unknown answers past the gate's limit) and a lookup, trusted once the target's in-flight bound had passed, did not find it.",
        _ => "Recovery refused the effect.",
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
