//! Recovery of open dispatches (DESIGN §2.3 table, §2.4 claims).

use crate::gate::{duration_ms, recordable, Gate, GateError, Settled, AMBIGUOUS};
use crate::lease::LeaseStore;
use crate::status::{Recovered, RecoveryOutcome, RefusalCode, Status, Step, Via};
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

/// What failed at the re-check.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stale {
    Lease,
    Premise,
}

const TARGET: &str = "target";

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Recover every effect with an open dispatch, in first-seen order. Each gets exactly one
    /// [`Recovered`]: either resolved (COMMITTED, resolving REFUSED or AMBIGUOUS written) or
    /// `Blocked` with who holds it and until when — never skipped silently.
    pub fn recover(&self) -> Result<Vec<Recovered>, GateError> {
        let open = self.journal.lock()?.open_effects();
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
    /// - If another live process holds the effect's claim (a sender mid-send or another
    ///   recoverer): `Blocked { holder, until_ms: its claim expiry }`. When that expiry has passed
    ///   and the holder is still alive (a hung sender), recovery still does not take over —
    ///   taking over could make two sends at once — and reports `Blocked` until now plus
    ///   [`GateConfig::retry_interval`](crate::GateConfig::retry_interval), naming the pid to stop.
    /// - Otherwise the previous holder is dead: recovery takes the claim and holds it while it
    ///   works, so a concurrent recoverer gets `Blocked`. It re-checks the lease and premises
    ///   recorded on the DISPATCHED and follows DESIGN §2.3: tier 3 → AMBIGUOUS; tier 1 in window
    ///   and holds → resend at once under the same key → `COMMITTED_BY_RETRY`; tier 1 not
    ///   queryable and fails → AMBIGUOUS; queryable and found → `COMMITTED_ON_QUERY`; not found →
    ///   trusted only once `max_in_flight` has passed since the last send (else `Blocked` until
    ///   that instant), then `REFUSED:<lease|stale_premise>_at_recovery` or a resend →
    ///   `REAPPLIED_AFTER_QUERY`.
    /// - A lookup, re-check or resend whose answer is unknown leaves the dispatch open and
    ///   reports `Blocked { holder: "target", .. }`.
    pub fn recover_effect(&self, effect_id: &str) -> Result<Option<RecoveryOutcome>, GateError> {
        let eid = effect_id;
        if self
            .journal
            .lock()?
            .state(eid)
            .and_then(|s| s.open.as_ref())
            .is_none()
        {
            return Ok(None);
        }
        let Some(claim) = self.claims.try_take(eid)? else {
            return self.blocked_by_holder(eid).map(Some);
        };

        // The previous holder is gone. Re-read under the journal lock: it may have just settled.
        let (dispatch, last_send) = {
            let j = self.journal.lock()?;
            let Some(open) = j.state(eid).and_then(|s| s.open.clone()) else {
                return Ok(None);
            };
            let d = j.entry(eid, open.index)?;
            let d_ts = d.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
            let last_send = match self.claims.read_record(eid) {
                Some(r) if r.dispatch == open.hash => r.last_send_ms.max(d_ts),
                _ => d_ts,
            };
            (d, last_send)
        };
        let d_hash = dispatch
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.write_claim(&claim, "recover", &d_hash, last_send)?;

        let d_ts = dispatch.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
        let Some(effect) = dispatch.get("effect").cloned() else {
            return Err(GateError::Journal(crate::JournalError::Corrupt {
                path: self.journal.path().to_owned(),
                line: 0,
                reason: format!(
                    "the open DISPATCHED {d_hash} of effect {eid} has no `effect` to resend"
                ),
            }));
        };
        let lease = dispatch.get("lease").cloned().unwrap_or(Value::Null);
        let premises = dispatch.get("premises").cloned().unwrap_or(Value::Null);
        let now = self.now_ms();
        let queryable = self.target.queryable() || self.target.tier() == Tier::Two;
        let tier = effective_tier(
            self.target.tier(),
            queryable,
            self.target.dedup_window(),
            self.config.dedup_margin,
            now.saturating_sub(d_ts),
        );

        if tier == Tier::Three {
            let why = if self.target.tier() == Tier::Three {
                "The target neither dedupes nor can be looked up, so whether the lost send landed cannot be known."
            } else {
                "The idempotency key is older than the target's dedup window and the target cannot be looked up, so whether the lost send landed cannot be known."
            };
            return self.resolve(
                eid,
                &d_hash,
                Kind::Ambiguous,
                json!({"code": AMBIGUOUS, "reason": why}),
                Status::Ambiguous,
            );
        }

        // Re-check what the DISPATCHED was decided on (I3, I4).
        let lc = match self.leases.check(&lease, &effect) {
            Ok(lc) => lc,
            Err(e) => {
                return Ok(Some(self.retry_later(
                    "lease store",
                    format!("The lease could not be re-checked ({e}); nothing was sent."),
                )))
            }
        };
        let mut rechecked = Map::new();
        rechecked.insert("lease_live".into(), json!(lc.live));
        rechecked.insert("grant".into(), lc.grant.map_or(Value::Null, recordable));
        let stale = if !lc.live {
            Some(Stale::Lease)
        } else {
            match self.target.check_premises(eid, &premises) {
                Ok(v) => {
                    let stale = (!v.is_empty()).then_some(Stale::Premise);
                    rechecked.insert("violations".into(), json!(v));
                    stale
                }
                Err(e) => {
                    return Ok(Some(self.retry_later(
                        TARGET,
                        format!("The premises could not be re-checked ({e}); nothing was sent."),
                    )))
                }
            }
        };
        let rechecked = Value::Object(rechecked);

        if tier == Tier::One && stale.is_none() {
            return self.resend(
                eid,
                &d_hash,
                &effect,
                Via::RetryIdempotent,
                &rechecked,
                &claim,
            );
        }
        if tier == Tier::One && !queryable {
            let why = match stale {
                Some(Stale::Lease) => "The lease no longer holds at recovery and the target cannot be looked up, so whether the lost send landed cannot be known.",
                _ => "A premise no longer holds at recovery and the target cannot be looked up, so whether the lost send landed cannot be known.",
            };
            return self.resolve(
                eid,
                &d_hash,
                Kind::Ambiguous,
                json!({"code": AMBIGUOUS, "reason": why, "rechecked": rechecked}),
                Status::Ambiguous,
            );
        }

        // Queryable: look it up.
        match self.target.query(eid, &effect) {
            Err(e) => Ok(Some(self.retry_later(
                TARGET,
                format!("The lookup failed ({e}); nothing was sent."),
            ))),
            Ok(Some(evidence)) => self.resolve(
                eid,
                &d_hash,
                Kind::Committed,
                json!({"via": Via::RecoveryQuery.as_str(), "evidence": recordable(evidence), "rechecked": rechecked}),
                Status::CommittedOnQuery,
            ),
            Ok(None) => {
                let trusted_at =
                    last_send.saturating_add(duration_ms(self.target.max_in_flight()));
                if now < trusted_at {
                    return Ok(Some(RecoveryOutcome::Blocked {
                        holder: TARGET.into(),
                        until_ms: trusted_at,
                        reason: format!(
                            "A lookup did not find the effect, but a send that left at {last_send} ms may still land until {trusted_at} ms (the target's max_in_flight)."
                        ),
                    }));
                }
                match stale {
                    Some(which) => {
                        let (code, why) = match which {
                            Stale::Lease => (
                                RefusalCode::LeaseAtRecovery,
                                "The lease no longer holds at recovery and a lookup proved the send never landed.",
                            ),
                            Stale::Premise => (
                                RefusalCode::StalePremiseAtRecovery,
                                "A premise no longer holds at recovery and a lookup proved the send never landed.",
                            ),
                        };
                        self.resolve(
                            eid,
                            &d_hash,
                            Kind::Refused,
                            json!({"code": code.as_str(), "reason": why, "rechecked": rechecked, "resolves": true}),
                            Status::Refused(code),
                        )
                    }
                    None => {
                        self.resend(eid, &d_hash, &effect, Via::RecoveryReapply, &rechecked, &claim)
                    }
                }
            }
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
        let mut pending: Vec<String> = self.journal.lock()?.open_effects();
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

    /// Report who holds an effect's claim.
    fn blocked_by_holder(&self, eid: &str) -> Result<RecoveryOutcome, GateError> {
        let record = {
            let _j = self.journal.lock()?;
            self.claims.read_record(eid)
        };
        let now = self.now_ms();
        Ok(match record {
            Some(r) if r.expires_ms > now => RecoveryOutcome::Blocked {
                holder: r.owner.clone(),
                until_ms: r.expires_ms,
                reason: format!(
                    "{} (pid {}) holds this effect's claim; it is sending or recovering it.",
                    r.owner, r.pid
                ),
            },
            Some(r) => RecoveryOutcome::Blocked {
                holder: r.owner.clone(),
                until_ms: now.saturating_add(duration_ms(self.config.retry_interval)),
                reason: format!(
                    "{} (pid {}) still holds this effect's claim although its TTL ran out at {} ms: it is alive but hung; it is not overridden (that could send twice) — stop that process and recovery proceeds at once.",
                    r.owner, r.pid, r.expires_ms
                ),
            },
            None => RecoveryOutcome::Blocked {
                holder: "unknown".into(),
                until_ms: now.saturating_add(duration_ms(self.config.retry_interval)),
                reason: "Another process holds this effect's claim and has not yet recorded who it is.".into(),
            },
        })
    }

    fn retry_later(&self, holder: &str, reason: String) -> RecoveryOutcome {
        RecoveryOutcome::Blocked {
            holder: holder.into(),
            until_ms: self
                .now_ms()
                .saturating_add(duration_ms(self.config.retry_interval)),
            reason,
        }
    }

    /// Write the resolving entry (only while the dispatch is still open) and report it.
    fn resolve(
        &self,
        eid: &str,
        d_hash: &str,
        kind: Kind,
        fields: Value,
        status: Status,
    ) -> Result<Option<RecoveryOutcome>, GateError> {
        match self.append_if_open(eid, d_hash, kind, fields)? {
            Some(_) => Ok(Some(RecoveryOutcome::Resolved(status))),
            None => Err(GateError::LostDispatch {
                effect_id: eid.to_owned(),
            }),
        }
    }

    /// Resend the recorded payload (I5) under the same effect id.
    fn resend(
        &self,
        eid: &str,
        d_hash: &str,
        effect: &Value,
        via: Via,
        rechecked: &Value,
        claim: &crate::claim::HeldClaim,
    ) -> Result<Option<RecoveryOutcome>, GateError> {
        let sent_at = self.now_ms();
        // Durable before the send: a later recoverer must wait max_in_flight from this send.
        self.write_claim(claim, "recover", d_hash, sent_at)?;
        match self.target.apply(eid, effect) {
            Ok(evidence) => {
                self.observe(Step::Sent);
                let status = match via {
                    Via::RetryIdempotent => Status::CommittedByRetry,
                    _ => Status::ReappliedAfterQuery,
                };
                let out = self.resolve(
                    eid,
                    d_hash,
                    Kind::Committed,
                    json!({"via": via.as_str(), "evidence": recordable(evidence), "rechecked": rechecked}),
                    status,
                )?;
                self.observe(Step::Committed);
                Ok(out)
            }
            Err(TargetError::Rejected { reason }) => {
                match self.settle_rejected(eid, d_hash, effect, &reason, Some(rechecked))? {
                    Settled::Done(status, _) => Ok(Some(RecoveryOutcome::Resolved(status))),
                    Settled::Open(why) => Ok(Some(self.retry_later(TARGET, why))),
                }
            }
            Err(TargetError::Unknown { reason }) => {
                let wait = match via {
                    Via::RetryIdempotent => self.config.retry_interval,
                    _ => self.target.max_in_flight(),
                };
                Ok(Some(RecoveryOutcome::Blocked {
                    holder: TARGET.into(),
                    until_ms: self.now_ms().saturating_add(duration_ms(wait)),
                    reason: format!(
                        "The resend's outcome is unknown ({reason}); the dispatch stays open."
                    ),
                }))
            }
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
