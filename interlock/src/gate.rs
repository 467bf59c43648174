//! The gate: `submit` (DESIGN §2.3), receipts, and the pieces recovery shares.

use crate::claim::{process_owner, ClaimDir, ClaimRecord, HeldClaim};
use crate::journal::{Journal, JournalError, Locked};
use crate::lease::{LeaseError, LeaseStore};
use crate::proposal::{effect_id, Proposal};
use crate::status::{RefusalCode, Status, Step, Submitted, Via, AMBIGUOUS_CODE};
use crate::target::{Target, TargetError};
use ed25519_dalek::SigningKey;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;
use verify::canonical::{self, CanonicalError};
use verify::entry::{Kind, ReceiptBundle};

/// Settings of a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateConfig {
    /// Backstop for a sender that is alive but hung: how long a claim is expected to be held at
    /// most. Every target call must return well inside it. Default 40 s. A SIGKILLed sender is
    /// never waited out: the kernel releases its claim at once.
    pub claim_ttl: Duration,
    /// A tier-1 dispatch older than the target's dedup window minus this margin is recovered as
    /// tier 2 (if queryable) or tier 3: the service may have forgotten the key. Default 10 min.
    pub dedup_margin: Duration,
    /// When recovery cannot ask the lease store or the target now (an error), or a claim's TTL
    /// has passed while its holder still lives, it reports `Blocked` until now plus this.
    /// Default 1 s.
    pub retry_interval: Duration,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            claim_ttl: Duration::from_secs(40),
            dedup_margin: Duration::from_secs(600),
            retry_interval: Duration::from_secs(1),
        }
    }
}

/// Why the gate could not do what was asked. The journal is left consistent in every case:
/// nothing is sent without a durable DISPATCHED, and an open dispatch is left for recovery.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Reading or writing the journal or a claim file failed, or the journal is corrupt.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A proposal field cannot be recorded (a float or an integer beyond ±(2^53 − 1)).
    #[error("proposal for effect {effect_id}: field `{field}` cannot be recorded: {source}")]
    InvalidProposal {
        /// The effect.
        effect_id: String,
        /// `lease`, `premises` or `effect`.
        field: &'static str,
        /// Why.
        source: CanonicalError,
    },
    /// The lease store could not answer; nothing was dispatched.
    #[error("effect {effect_id}: checking the lease failed: {source}")]
    Lease {
        /// The effect.
        effect_id: String,
        /// The store's error.
        source: LeaseError,
    },
    /// The target could not check the premises; nothing was dispatched.
    #[error("effect {effect_id}: checking the premises failed: {source}")]
    PremiseCheck {
        /// The effect.
        effect_id: String,
        /// The target's error.
        source: TargetError,
    },
    /// No entry of this effect is in the journal.
    #[error("effect {effect_id} is not in the journal")]
    UnknownEffect {
        /// The effect.
        effect_id: String,
    },
    /// The dispatch this process was settling was closed by someone else while it held the
    /// claim; that breaks the claim protocol and is reported rather than papered over.
    #[error("effect {effect_id}: the dispatch this process holds was closed by another writer")]
    LostDispatch {
        /// The effect.
        effect_id: String,
    },
}

type Observer = Box<dyn Fn(Step) + Send + Sync>;
type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

/// The commit gate over one target, one lease store and one journal.
///
/// `Gate` is `Sync` when its target and lease store are: several threads (and several processes
/// opening the same journal) may submit and recover concurrently.
pub struct Gate<T: Target, L: LeaseStore> {
    pub(crate) journal: Journal,
    pub(crate) claims: ClaimDir,
    pub(crate) target: T,
    pub(crate) leases: L,
    pub(crate) key: SigningKey,
    pub(crate) config: GateConfig,
    pub(crate) owner: String,
    observer: Option<Observer>,
    clock: Option<Clock>,
}

impl<T: Target, L: LeaseStore> std::fmt::Debug for Gate<T, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("journal", &self.journal)
            .field("owner", &self.owner)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// How a rejected send settled.
pub(crate) enum Settled {
    /// COMMITTED (failed-but-landed) or REFUSED target_error was written.
    Done(Status, String),
    /// The lookup failed: the dispatch stays open.
    Open(String),
}

/// Outcome of an append that requires the dispatch to still be open.
pub(crate) type Appended = Option<Map<String, Value>>;

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Make target-supplied data recordable: floats and out-of-range integers become strings.
pub(crate) fn recordable(v: Value) -> Value {
    match v {
        Value::Number(n) => {
            if n.as_i64()
                .is_some_and(|i| i.unsigned_abs() <= canonical::MAX_SAFE_INTEGER as u64)
            {
                Value::Number(n)
            } else {
                Value::String(n.to_string())
            }
        }
        Value::Array(a) => Value::Array(a.into_iter().map(recordable).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, recordable(v))).collect()),
        other => other,
    }
}

impl<T: Target, L: LeaseStore> Gate<T, L> {
    /// Open the gate over the journal at `journal_path` (created if missing; its sidecar
    /// `<journal>.lock` and claim directory `<journal>.claims/` are created beside it).
    pub fn open(
        journal_path: &Path,
        target: T,
        leases: L,
        key: SigningKey,
        config: GateConfig,
    ) -> Result<Self, GateError> {
        let journal = Journal::open(journal_path)?;
        let claims = ClaimDir::beside(journal_path)?;
        Ok(Gate {
            journal,
            claims,
            target,
            leases,
            key,
            config,
            owner: process_owner(),
            observer: None,
            clock: None,
        })
    }

    /// Call `f` right after each durable step of `submit` (and after a recovery resend returns
    /// and its COMMITTED is written). For crash tests: block in `f` and kill the process.
    pub fn set_observer(&mut self, f: Box<dyn Fn(Step) + Send + Sync>) {
        self.observer = Some(f);
    }

    /// Replace the wall clock (Unix milliseconds) used for entry timestamps, claim expiry and the
    /// in-flight window. For tests.
    pub fn set_clock(&mut self, f: Box<dyn Fn() -> u64 + Send + Sync>) {
        self.clock = Some(f);
    }

    /// The target.
    pub fn target(&self) -> &T {
        &self.target
    }

    /// The lease store.
    pub fn leases(&self) -> &L {
        &self.leases
    }

    /// The journal file.
    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// This gate's owner string (`host:pid:nonce`), as it appears in claim records.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The public half of the signing key (hex), as written in every entry's `signer`.
    pub fn signer(&self) -> String {
        hex::encode(self.key.verifying_key().as_bytes())
    }

    pub(crate) fn now_ms(&self) -> u64 {
        match &self.clock {
            Some(f) => f(),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    pub(crate) fn observe(&self, step: Step) {
        if let Some(f) = &self.observer {
            f(step);
        }
    }

    pub(crate) fn append(
        &self,
        j: &mut Locked<'_>,
        eid: &str,
        kind: Kind,
        fields: Value,
    ) -> Result<Map<String, Value>, GateError> {
        let now = self.now_ms();
        Ok(j.append(eid, kind, obj(fields), now, &self.key)?)
    }

    /// Append only if `dispatch` (a DISPATCHED hash) is still the effect's open dispatch.
    pub(crate) fn append_if_open(
        &self,
        eid: &str,
        dispatch: &str,
        kind: Kind,
        fields: Value,
    ) -> Result<Appended, GateError> {
        let mut j = self.journal.lock()?;
        let still_open = j
            .state(eid)
            .and_then(|s| s.open.as_ref())
            .is_some_and(|o| o.hash == dispatch);
        if !still_open {
            return Ok(None);
        }
        self.append(&mut j, eid, kind, fields).map(Some)
    }

    /// Write a claim record for `dispatch` (under the journal lock, so readers never see it
    /// half-written).
    pub(crate) fn write_claim(
        &self,
        claim: &HeldClaim,
        role: &str,
        dispatch: &str,
        last_send_ms: u64,
    ) -> Result<(), GateError> {
        let now = self.now_ms();
        let record = ClaimRecord {
            owner: format!("{}/{role}", self.owner),
            pid: std::process::id(),
            expires_ms: now.saturating_add(duration_ms(self.config.claim_ttl)),
            dispatch: dispatch.to_owned(),
            last_send_ms,
        };
        let _j = self.journal.lock()?;
        claim.write_record(&record)?;
        Ok(())
    }

    /// Settle a send the target rejected: a lookup (if the target has one) decides between
    /// COMMITTED via failed-but-landed and a resolving REFUSED target_error.
    pub(crate) fn settle_rejected(
        &self,
        eid: &str,
        dispatch: &str,
        effect: &Value,
        reason: &str,
        rechecked: Option<&Value>,
    ) -> Result<Settled, GateError> {
        let queryable = self.target.queryable() || self.target.tier() == crate::Tier::Two;
        let (kind, mut fields, status, detail) = if queryable {
            match self.target.query(eid, effect) {
                Ok(Some(evidence)) => (
                    Kind::Committed,
                    json!({"via": Via::FailedButLanded.as_str(), "evidence": recordable(evidence)}),
                    Status::CommittedOnQuery,
                    format!("the target rejected the send ({reason}) but a lookup found the effect"),
                ),
                Ok(None) => {
                    let why = format!(
                        "The target rejected the send ({reason}) and a lookup did not find it, so it is settled as not done and never resent."
                    );
                    (
                        Kind::Refused,
                        json!({"code": RefusalCode::TargetError.as_str(), "reason": why, "resolves": true}),
                        Status::Refused(RefusalCode::TargetError),
                        why,
                    )
                }
                Err(e) => {
                    return Ok(Settled::Open(format!(
                        "the target rejected the send ({reason}) and the lookup that would settle it failed ({e}); the dispatch stays open for recovery"
                    )))
                }
            }
        } else {
            let why = format!(
                "The target rejected the send ({reason}); it is settled as not done and never resent."
            );
            (
                Kind::Refused,
                json!({"code": RefusalCode::TargetError.as_str(), "reason": why, "resolves": true}),
                Status::Refused(RefusalCode::TargetError),
                why,
            )
        };
        if let (Some(r), Some(m)) = (rechecked, fields.as_object_mut()) {
            m.insert("rechecked".into(), r.clone());
        }
        match self.append_if_open(eid, dispatch, kind, fields)? {
            Some(_) => Ok(Settled::Done(status, detail)),
            None => Err(GateError::LostDispatch {
                effect_id: eid.to_owned(),
            }),
        }
    }

    /// Submit a proposal (DESIGN §2.3). Step by step:
    ///
    /// 1. open dispatch → `IN_FLIGHT` (nothing written); payload differs from the first
    ///    PROPOSED → PROPOSED + REFUSED → `REFUSED:conflicting_payload`; any AMBIGUOUS →
    ///    `AMBIGUOUS`; any COMMITTED → `DUPLICATE_IGNORED`;
    /// 2. PROPOSED; lease check → REFUSED → `REFUSED:lease`, or AUTHORIZED;
    /// 3. premises (those of the first PROPOSED under the same lease, else these) re-checked at
    ///    the target → REFUSED → `REFUSED:stale_premise`;
    /// 4. take the effect's claim (if another process holds it → `IN_FLIGHT`); under the journal
    ///    lock re-check the blockers (as in 1, plus a target rejection settled earlier →
    ///    REFUSED → `REFUSED:target_error`) and write DISPATCHED;
    /// 5. apply: result → COMMITTED → `COMMITTED`; rejected → lookup: found → COMMITTED
    ///    (failed-but-landed) → `COMMITTED_ON_QUERY`, else resolving REFUSED →
    ///    `REFUSED:target_error`; unknown → the dispatch stays open, the claim is released and
    ///    the answer is `IN_FLIGHT` with the target's error in `detail`: recovery settles it.
    pub fn submit(&self, p: &Proposal) -> Result<Submitted, GateError> {
        let eid = effect_id(p);
        let canon = |field: &'static str, v: &Value| {
            canonical::to_string(v).map_err(|source| GateError::InvalidProposal {
                effect_id: eid.clone(),
                field,
                source,
            })
        };
        let effect_c = canon("effect", &p.effect)?;
        let lease_c = canon("lease", &p.lease)?;
        canon("premises", &p.premises)?;
        let done = |status: Status, detail: Option<String>| {
            Ok(Submitted {
                effect_id: eid.clone(),
                status,
                detail,
            })
        };

        let mut proposed = json!({
            "agent": p.agent,
            "lease": p.lease,
            "premises": p.premises,
            "effect": p.effect,
        });
        if let (Some(r), Some(m)) = (&p.request_id, proposed.as_object_mut()) {
            m.insert("request_id".into(), Value::String(r.clone()));
        }

        // 1. Short-circuits, then PROPOSED.
        let decided_on = {
            let mut j = self.journal.lock()?;
            if let Some(st) = j.state(&eid) {
                if st.open.is_some() {
                    return done(Status::InFlight, Some(OPEN_DETAIL.into()));
                }
                if st.first_effect.as_ref().is_some_and(|f| *f != effect_c) {
                    self.append(&mut j, &eid, Kind::Proposed, proposed)?;
                    let (fields, why) = conflicting();
                    self.append(&mut j, &eid, Kind::Refused, fields)?;
                    return done(Status::Refused(RefusalCode::ConflictingPayload), Some(why));
                }
                if st.ambiguous {
                    return done(Status::Ambiguous, Some(AMBIGUOUS_DETAIL.into()));
                }
                if st.committed {
                    return done(Status::DuplicateIgnored, Some(DUPLICATE_DETAIL.into()));
                }
            }
            let decided_on = j
                .state(&eid)
                .and_then(|s| s.premises_for(&lease_c))
                .cloned()
                .unwrap_or_else(|| p.premises.clone());
            self.append(&mut j, &eid, Kind::Proposed, proposed)?;
            decided_on
        };
        self.observe(Step::Proposed);

        // 2. Lease.
        let lc = self
            .leases
            .check(&p.lease, &p.effect)
            .map_err(|source| GateError::Lease {
                effect_id: eid.clone(),
                source,
            })?;
        let mut checks = json!({
            "lease_live": lc.live,
            "grant": lc.grant.map(recordable),
        });
        if !lc.live {
            let why = format!(
                "The lease {} is not live or does not cover this effect.",
                short(&lease_c)
            );
            let mut j = self.journal.lock()?;
            self.append(
                &mut j,
                &eid,
                Kind::Refused,
                json!({"code": RefusalCode::Lease.as_str(), "reason": why, "checks": checks}),
            )?;
            return done(Status::Refused(RefusalCode::Lease), Some(why));
        }
        {
            let mut j = self.journal.lock()?;
            self.append(&mut j, &eid, Kind::Authorized, json!({"lease": p.lease}))?;
        }
        self.observe(Step::Authorized);

        // 3. Premises, re-checked right before dispatch (I3).
        let violations = self
            .target
            .check_premises(&eid, &decided_on)
            .map_err(|source| GateError::PremiseCheck {
                effect_id: eid.clone(),
                source,
            })?;
        if let Some(m) = checks.as_object_mut() {
            m.insert("violations".into(), json!(violations));
        }
        if !violations.is_empty() {
            let why = format!(
                "A premise the decision was made on no longer holds: {}.",
                violations.join("; ")
            );
            let mut j = self.journal.lock()?;
            self.append(
                &mut j,
                &eid,
                Kind::Refused,
                json!({"code": RefusalCode::StalePremise.as_str(), "reason": why, "checks": checks}),
            )?;
            return done(Status::Refused(RefusalCode::StalePremise), Some(why));
        }

        // 4. Claim, then blockers + DISPATCHED atomically under the journal lock.
        let Some(claim) = self.claims.try_take(&eid)? else {
            return done(
                Status::InFlight,
                Some("Another process holds this effect's claim (it is dispatching, sending or recovering it).".into()),
            );
        };
        let dispatch = {
            let mut j = self.journal.lock()?;
            if let Some(st) = j.state(&eid) {
                if st.open.is_some() {
                    return done(Status::InFlight, Some(OPEN_DETAIL.into()));
                }
                if st.committed {
                    return done(Status::DuplicateIgnored, Some(DUPLICATE_DETAIL.into()));
                }
                if st.ambiguous {
                    return done(Status::Ambiguous, Some(AMBIGUOUS_DETAIL.into()));
                }
                if st.first_effect.as_ref().is_some_and(|f| *f != effect_c) {
                    let (fields, why) = conflicting();
                    self.append(&mut j, &eid, Kind::Refused, fields)?;
                    return done(Status::Refused(RefusalCode::ConflictingPayload), Some(why));
                }
                if st.target_rejected {
                    let why = "The target already rejected this effect and it was settled as not done; a rejected effect is never resent.".to_owned();
                    self.append(
                        &mut j,
                        &eid,
                        Kind::Refused,
                        json!({"code": RefusalCode::TargetError.as_str(), "reason": why}),
                    )?;
                    return done(Status::Refused(RefusalCode::TargetError), Some(why));
                }
            }
            let d = self.append(
                &mut j,
                &eid,
                Kind::Dispatched,
                json!({
                    "effect": p.effect,
                    "lease": p.lease,
                    "premises": decided_on,
                    "checks": checks,
                }),
            )?;
            let hash = d
                .get("hash")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let now = d.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
            let record = ClaimRecord {
                owner: format!("{}/send", self.owner),
                pid: std::process::id(),
                expires_ms: now.saturating_add(duration_ms(self.config.claim_ttl)),
                dispatch: hash.clone(),
                last_send_ms: now,
            };
            claim.write_record(&record)?;
            hash
        };
        self.observe(Step::Dispatched);

        // 5. Send.
        match self.target.apply(&eid, &p.effect) {
            Ok(evidence) => {
                self.observe(Step::Sent);
                let written = self.append_if_open(
                    &eid,
                    &dispatch,
                    Kind::Committed,
                    json!({"via": Via::Send.as_str(), "evidence": recordable(evidence)}),
                )?;
                drop(claim);
                if written.is_none() {
                    return Err(GateError::LostDispatch { effect_id: eid });
                }
                self.observe(Step::Committed);
                done(Status::Committed, None)
            }
            Err(TargetError::Rejected { reason }) => {
                let settled = self.settle_rejected(&eid, &dispatch, &p.effect, &reason, None)?;
                drop(claim);
                match settled {
                    Settled::Done(status, detail) => done(status, Some(detail)),
                    Settled::Open(detail) => done(Status::InFlight, Some(detail)),
                }
            }
            Err(TargetError::Unknown { reason }) => {
                drop(claim);
                done(
                    Status::InFlight,
                    Some(format!(
                        "The send's outcome is unknown ({reason}); the dispatch stays open and recovery will settle it."
                    )),
                )
            }
        }
    }

    /// Every entry of one effect, in journal order, exactly as stored (empty if none).
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, GateError> {
        Ok(self.journal.lock()?.entries(effect_id)?)
    }

    /// Every effect id in the journal, in first-seen order.
    pub fn effect_ids(&self) -> Result<Vec<String>, GateError> {
        Ok(self.journal.lock()?.effect_ids())
    }

    /// Effects with an open dispatch (what [`Gate::recover`] will work on), first-seen order.
    pub fn open_effects(&self) -> Result<Vec<String>, GateError> {
        Ok(self.journal.lock()?.open_effects())
    }

    /// The status the journal now records for an effect: `IN_FLIGHT` while a dispatch is open;
    /// else the COMMITTED's status by its `via` (`send` → `COMMITTED`, `retry-idempotent` →
    /// `COMMITTED_BY_RETRY`, `recovery-reapply` → `REAPPLIED_AFTER_QUERY`, `recovery-query` and
    /// `failed-but-landed` → `COMMITTED_ON_QUERY`); else `AMBIGUOUS`; else the last refusal
    /// (`REFUSED:<code>`). `None` when nothing was decided yet (only PROPOSED/AUTHORIZED, e.g. a
    /// sender that died before dispatch) or the effect is unknown.
    pub fn status(&self, effect_id: &str) -> Result<Option<Status>, GateError> {
        let entries = self.entries(effect_id)?;
        let mut open = false;
        let mut committed = None;
        let mut ambiguous = false;
        let mut refused = None;
        for e in &entries {
            match e.get("kind").and_then(Value::as_str) {
                Some("DISPATCHED") => open = true,
                Some("COMMITTED") => {
                    open = false;
                    committed = Some(match e.get("via").and_then(Value::as_str) {
                        Some("retry-idempotent") => Status::CommittedByRetry,
                        Some("recovery-reapply") => Status::ReappliedAfterQuery,
                        Some("recovery-query" | "failed-but-landed") => Status::CommittedOnQuery,
                        _ => Status::Committed,
                    });
                }
                Some("AMBIGUOUS") => {
                    open = false;
                    ambiguous = true;
                }
                Some("REFUSED") => {
                    if e.get("resolves").and_then(Value::as_bool) == Some(true) {
                        open = false;
                    }
                    refused = e
                        .get("code")
                        .and_then(Value::as_str)
                        .and_then(RefusalCode::parse)
                        .map(Status::Refused)
                        .or(refused);
                }
                _ => {}
            }
        }
        Ok(if open {
            Some(Status::InFlight)
        } else if committed.is_some() {
            committed
        } else if ambiguous {
            Some(Status::Ambiguous)
        } else {
            refused
        })
    }

    /// The receipt bundle of one effect: all its entries, for `verify`.
    pub fn receipt(&self, effect_id: &str) -> Result<ReceiptBundle, GateError> {
        let entries = self.entries(effect_id)?;
        if entries.is_empty() {
            return Err(GateError::UnknownEffect {
                effect_id: effect_id.to_owned(),
            });
        }
        Ok(ReceiptBundle::new(effect_id, entries))
    }
}

const OPEN_DETAIL: &str =
    "A dispatch of this effect is open (being sent, or a lost send awaiting recovery); recovery decides, nothing is resent from here.";
const AMBIGUOUS_DETAIL: &str =
    "Whether this effect happened cannot be known, so it is never sent again.";
const DUPLICATE_DETAIL: &str = "This effect was already committed; nothing was sent.";

fn conflicting() -> (Value, String) {
    let why = "The payload differs from the one this effect was first proposed with; the first proposal fixes it.".to_owned();
    (
        json!({"code": RefusalCode::ConflictingPayload.as_str(), "reason": why}),
        why,
    )
}

/// At most 80 characters of a canonical value, for reasons.
pub(crate) fn short(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    }
}

pub(crate) fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `code` of AMBIGUOUS entries, re-exported for recovery.
pub(crate) const AMBIGUOUS: &str = AMBIGUOUS_CODE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_data_is_made_recordable() {
        let v = json!({"a": 1.5, "b": [2, u64::MAX], "c": "x", "d": -3});
        let r = recordable(v);
        assert_eq!(
            r,
            json!({"a": "1.5", "b": [2, u64::MAX.to_string()], "c": "x", "d": -3})
        );
        assert!(canonical::to_string(&r).is_ok());
    }

    #[test]
    fn reasons_shorten_long_values() {
        assert_eq!(short("abc"), "abc");
        let long = "x".repeat(200);
        assert_eq!(short(&long).chars().count(), 80);
    }
}
