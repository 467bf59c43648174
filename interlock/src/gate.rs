//! The gate: `submit` (DESIGN §2.3) as named steps, receipts, and the pieces recovery shares.

use crate::budget::{check_named, reckon_under_budget_lock, BudgetError, Budgets};
use crate::claim::{boot_id, monotonic_ms, ClaimRecord, MonoInstant, Owner, Role};
use crate::decide::{
    admit, after_rejection, next_submit_step, Admission, AdmissionPoint, EffectFacts, LookupAnswer,
    SendAnswer, SubmitEnd, SubmitFacts, SubmitNext, SubmitStep,
};
use crate::journal::{EffectState, JournalError};
use crate::lease::{LeaseCheck, LeaseError, LeaseStore};
use crate::proposal::{effect_id, Proposal};
use crate::status::{status_of, RefusalCode, Status, Step, Submitted, Via};
use crate::store::{Claim, Location, Section, Store};
use crate::target::{SendDeadline, Target, TargetError};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
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
    /// The dispatch's age is this recoverer's wall clock minus the DISPATCHED entry's `ts_ms`,
    /// written on the sender's: the margin is also the clock skew between hosts the gate
    /// assumes, and a resend under the key records both (`dedup_age_ms`,
    /// `assumed_clock_skew_ms`).
    pub dedup_margin: Duration,
    /// When recovery cannot ask the lease store or the target now (an error), or a claim's TTL
    /// has passed while its holder still lives, it reports `Blocked` until now plus this.
    /// Default 1 s.
    pub retry_interval: Duration,
    /// The longest any call waits for another process's journal lock; past it `submit` fails
    /// with [`JournalError::Busy`] and `recover` reports the effect `Blocked` by the journal.
    /// Default 10 s.
    pub journal_lock_wait: Duration,
    /// After this many resends of one dispatch answered "unknown", recovery stops resending and
    /// settles the effect by lookup. Default 3.
    pub max_unknown_answers: u32,
    /// Signers, besides this gate's own key, whose journal entries the gate accepts (e.g. the
    /// keys of earlier runs writing the same journal). Lines signed by any other key make the
    /// journal corrupt at that line.
    pub trusted_signers: Vec<VerifyingKey>,
    /// The PostgreSQL store's send window L (DESIGN §2.4): a holder sends only before it
    /// confirmed its claim plus this, on its own monotonic clock, checked right before the
    /// request leaves; a recoverer that takes the claim over from a holder that may still live
    /// (its session was lost, not its process) waits this plus the target's in-flight bound
    /// before it trusts a "not found", and records it (`assumed_send_window_ms`). It must cover
    /// the time from confirming to the request leaving (a sender past it does not send, and
    /// recovery settles the dispatch). The file store has none: its claims are lost only with
    /// their holder. Default 2 s.
    pub send_window: Duration,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            claim_ttl: Duration::from_secs(40),
            dedup_margin: Duration::from_secs(600),
            retry_interval: Duration::from_secs(1),
            journal_lock_wait: Duration::from_secs(10),
            max_unknown_answers: 3,
            trusted_signers: Vec::new(),
            send_window: Duration::from_secs(2),
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
    /// This process's claim on the effect was lost (its database session ended) before it could
    /// write the entry that settles the dispatch: it writes nothing, and whoever holds the claim
    /// now settles it.
    #[error("effect {effect_id}: the claim was lost before the settling entry was written ({reason}); nothing was written")]
    ClaimLost {
        /// The effect.
        effect_id: String,
        /// Why the claim could not be confirmed.
        reason: String,
    },
    /// The proposal's budget cannot be checked: the gate has no budget store, the amount is not
    /// a recordable non-negative integer, or a total or cap leaves the exact range. Nothing was
    /// sent; an effect whose dispatch this stopped stays as it was.
    #[error("effect {effect_id}: budget {budget:?}: {reason}; nothing was sent")]
    Budget {
        /// The effect.
        effect_id: String,
        /// The budget it names.
        budget: String,
        /// Why.
        reason: String,
    },
    /// The budget store could not answer; nothing was dispatched.
    #[error("effect {effect_id}: reading the budget's cap failed: {source}")]
    BudgetStore {
        /// The effect.
        effect_id: String,
        /// The store's error.
        source: BudgetError,
    },
    /// The receipt's head could not be sealed (an entry holds a value with no canonical form).
    #[error("effect {effect_id}: the receipt cannot be sealed: {source}")]
    Seal {
        /// The effect.
        effect_id: String,
        /// Why.
        source: CanonicalError,
    },
}

type Observer = Box<dyn Fn(Step) + Send + Sync>;
type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

/// What one recoverer remembers about an open dispatch between its rounds (a fresh process
/// learns it again: at the cost of one more resend).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RecoveryMemory {
    /// A replayed failure proved the requests under the key finished.
    pub finished: bool,
    /// Resends answered "unknown".
    pub unknown_answers: u32,
    /// Why a claim record of this dispatch was not believed, if one was not (said on the entry
    /// that settles it).
    pub record_ignored: Option<&'static str>,
}

/// The commit gate over one target, one lease store and one journal.
///
/// `Gate` is `Sync` when its target and lease store are: several threads (and several processes
/// opening the same journal) may submit and recover concurrently.
pub struct Gate<T: Target, L: LeaseStore> {
    pub(crate) journal: Store,
    pub(crate) target: T,
    pub(crate) leases: L,
    pub(crate) key: SigningKey,
    pub(crate) config: GateConfig,
    pub(crate) owner: Owner,
    pub(crate) memory: Mutex<HashMap<String, RecoveryMemory>>,
    pub(crate) boot: String,
    pub(crate) budgets: Option<Budgets>,
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

/// The admission facts of an effect's journal state for `prep`: its payload (and the budget it
/// names, fixed with the payload by the first PROPOSED) against the first PROPOSED's.
fn facts_of(state: Option<&EffectState>, prep: &Prepared<'_>) -> Option<EffectFacts> {
    state.map(|st| EffectFacts {
        open: st.open.is_some(),
        committed: st.committed,
        ambiguous: st.ambiguous,
        target_rejected: st.target_rejected,
        payload_differs: st.first_effect.as_ref().is_some_and(|f| {
            *f != prep.effect_c || st.proposed_budget.as_ref() != prep.p.budget.as_ref()
        }),
    })
}

/// A proposal with its id and canonical forms, as the steps of `submit` need it.
struct Prepared<'p> {
    p: &'p Proposal,
    eid: String,
    effect_c: String,
    lease_c: String,
}

impl Prepared<'_> {
    fn answer(&self, status: Status, detail: Option<String>) -> Submitted {
        Submitted {
            effect_id: self.eid.clone(),
            status,
            detail,
        }
    }
}

/// A step of `submit` either goes on with a value or has the final answer.
enum Flow<T> {
    Go(T),
    Done(Submitted),
}

/// What `submit` carries from step to step.
struct SubmitRun<'g> {
    /// The answers so far, for [`next_submit_step`].
    facts: SubmitFacts,
    /// The premises the effect is decided on (set by step 1).
    decided_on: Value,
    /// The checks record for DISPATCHED (`lease_live`, `grant`, `violations`).
    checks: Value,
    /// The premise violations found by step 3.
    violations: Vec<String>,
    /// The claim, once taken.
    claim: Option<Claim<'g>>,
    /// The DISPATCHED hash, once written.
    dispatch: String,
}

/// How [`next_submit_step`] classes the target's answer to a send that left.
fn send_answer(answer: &Result<Value, TargetError>) -> SendAnswer {
    match answer {
        Ok(_) => SendAnswer::Applied,
        Err(TargetError::Rejected { .. }) => SendAnswer::Rejected,
        // A request that did not leave is answered before this is asked.
        Err(TargetError::Unknown { .. } | TargetError::NotSent { .. }) => SendAnswer::Unknown,
        Err(TargetError::Replayed { .. }) => SendAnswer::Replayed,
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
    /// Open the gate over the journal at `journal_path` (created if missing; the claim directory
    /// `<canonical journal path>.claims/` is created beside it). Every line already in the journal
    /// is checked: hash, chain, a trusted signer (this key or
    /// [`GateConfig::trusted_signers`]) and signature.
    pub fn open(
        journal_path: &Path,
        target: T,
        leases: L,
        key: SigningKey,
        config: GateConfig,
    ) -> Result<Self, GateError> {
        Gate::open_at(
            &Location::File(journal_path.to_owned()),
            target,
            leases,
            key,
            config,
        )
    }

    /// Open the gate over the journal store at `location`: a JSONL file (as [`Gate::open`]) or a
    /// PostgreSQL database (`postgres://…`; the schema is created or migrated on open) shared by
    /// gates on many hosts. Every entry already in the store is checked, as for a file.
    pub fn open_at(
        location: &Location,
        target: T,
        leases: L,
        key: SigningKey,
        config: GateConfig,
    ) -> Result<Self, GateError> {
        let mut trusted = vec![key.verifying_key()];
        trusted.extend(config.trusted_signers.iter().copied());
        let journal = Store::open(
            location,
            trusted,
            config.journal_lock_wait,
            config.send_window,
        )?;
        Ok(Gate {
            journal,
            target,
            leases,
            key,
            config,
            owner: Owner::current(),
            memory: Mutex::new(HashMap::new()),
            boot: boot_id(),
            budgets: None,
            observer: None,
            clock: None,
        })
    }

    /// Call `f` right after each durable step of `submit` (and after a recovery resend returns
    /// and its COMMITTED is written). For crash tests: block in `f` and kill the process.
    pub fn set_observer(&mut self, f: Box<dyn Fn(Step) + Send + Sync>) {
        self.observer = Some(f);
    }

    /// Give the gate the store of budgets' caps (DESIGN §2.8). Without one, a proposal that
    /// names a budget is refused with [`GateError::Budget`] before anything is written.
    ///
    /// A setter rather than a type parameter or a [`GateConfig`] field: a third type parameter
    /// would change the type of every gate users name (`Gate<T, L>`) for a feature most of them
    /// do not use, and `GateConfig` is plain, comparable data (`Clone`, `Eq`) that a trait
    /// object cannot be part of. Set it before sharing the gate between threads.
    pub fn set_budgets(&mut self, store: Budgets) {
        self.budgets = Some(store);
    }

    /// Replace the clock (milliseconds) used for entry timestamps, claim expiry and — for tests
    /// only — also as the monotonic clock of the in-flight bound.
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

    /// The journal file, as given to [`Gate::open`].
    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// This gate instance, as it appears in claim records.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The public half of the signing key (hex), as written in every entry's `signer`.
    pub fn signer(&self) -> String {
        hex::encode(self.key.verifying_key().as_bytes())
    }

    /// Wall-clock now, Unix ms.
    pub(crate) fn now_ms(&self) -> u64 {
        match &self.clock {
            Some(f) => f(),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// The host's monotonic clock in ms (the test clock when one is set).
    pub(crate) fn mono_ms(&self) -> u64 {
        match &self.clock {
            Some(f) => f(),
            None => monotonic_ms(),
        }
    }

    /// The wall-clock instant of a monotonic one (for entries and `Blocked.until_ms`).
    pub(crate) fn wall_of(&self, mono: u64) -> u64 {
        let (wall, now) = (self.now_ms(), self.mono_ms());
        if mono >= now {
            wall.saturating_add(mono - now)
        } else {
            wall.saturating_sub(now - mono)
        }
    }

    pub(crate) fn observe(&self, step: Step) {
        if let Some(f) = &self.observer {
            f(step);
        }
    }

    pub(crate) fn append(
        &self,
        j: &mut Section<'_>,
        eid: &str,
        kind: Kind,
        fields: Value,
    ) -> Result<Map<String, Value>, GateError> {
        let now = self.now_ms();
        Ok(j.append(eid, kind, obj(fields), now, &self.key)?)
    }

    /// Append only if `dispatch` (a DISPATCHED hash) is still the effect's open dispatch and,
    /// with `claim`, only while this process still holds it: confirmed under the journal lock,
    /// so a holder whose claim was lost (a database session ended while it lived) never settles
    /// the dispatch of the process that took the claim over (that one reads the journal under
    /// the same lock after taking it, so it sees an entry written before the loss).
    pub(crate) fn append_if_open(
        &self,
        eid: &str,
        dispatch: &str,
        kind: Kind,
        fields: Value,
        claim: Option<&Claim<'_>>,
    ) -> Result<Appended, GateError> {
        let mut j = self.journal.lock(eid)?;
        let still_open = j
            .state(eid)
            .and_then(|s| s.open.as_ref())
            .is_some_and(|o| o.hash == dispatch);
        if !still_open {
            return Ok(None);
        }
        if let Some(Err(e)) = claim.map(Claim::confirm) {
            return Err(GateError::ClaimLost {
                effect_id: eid.to_owned(),
                reason: e.to_string(),
            });
        }
        self.append(&mut j, eid, kind, fields).map(Some)
    }

    /// A claim record for `dispatch` naming this gate, its TTL counted from `since_ms` (wall),
    /// signed with the gate's key.
    /// `earlier_sends_until_ms` (monotonic): until when an earlier holder may still send.
    pub(crate) fn claim_record(
        &self,
        role: Role,
        dispatch: &str,
        since_ms: u64,
        in_flight_from_ms: Option<u64>,
        earlier_sends_until_ms: Option<u64>,
        gen: u64,
    ) -> ClaimRecord {
        ClaimRecord {
            owner: self.owner.clone(),
            role,
            expires_ms: since_ms.saturating_add(duration_ms(self.config.claim_ttl)),
            dispatch: dispatch.to_owned(),
            in_flight_from: in_flight_from_ms.map(|ms| MonoInstant {
                boot: self.boot.clone(),
                ms,
            }),
            released: false,
            earlier_sends_until: earlier_sends_until_ms.map(|ms| MonoInstant {
                boot: self.boot.clone(),
                ms,
            }),
            gen,
            signer: None,
            sig: None,
        }
        .signed(&self.key)
    }

    /// The keys a claim record may be signed with: this gate's and the trusted signers'.
    pub(crate) fn trusted_keys(&self) -> Vec<ed25519_dalek::VerifyingKey> {
        let mut keys = vec![self.key.verifying_key()];
        keys.extend(self.config.trusted_signers.iter().copied());
        keys
    }

    /// The effect's claim record, if it is one to believe: signed by a trusted key and the
    /// latest generation written (else `Err` says why it was ignored). Read under the lock `j`.
    pub(crate) fn trusted_record(
        &self,
        j: &Section<'_>,
        eid: &str,
    ) -> Result<Option<ClaimRecord>, &'static str> {
        match self.journal.read_record(j, eid) {
            None => Ok(None),
            Some((r, latest)) => match r.untrusted(&self.trusted_keys()) {
                Some(why) => Err(why),
                None if !latest => Err(
                    "the claim record is not the latest one written for the effect (an older one put back)",
                ),
                None => Ok(Some(r)),
            },
        }
    }

    /// Check the lease, as an error for `submit` when the store cannot answer.
    fn check_lease(&self, prep: &Prepared<'_>) -> Result<LeaseCheck, GateError> {
        self.leases
            .check(&prep.p.lease, &prep.p.effect)
            .map_err(|source| GateError::Lease {
                effect_id: prep.eid.clone(),
                source,
            })
    }

    /// Settle a send the target rejected: a lookup (if the target has one) decides between
    /// COMMITTED via failed-but-landed and a resolving REFUSED target_error.
    pub(crate) fn settle_rejected(
        &self,
        eid: &str,
        dispatch: &str,
        effect: &Value,
        reason: &str,
        (rechecked, claim): (Option<&Value>, Option<&Claim<'_>>),
    ) -> Result<Settled, GateError> {
        let lookup = self.target.capabilities().lookup;
        let mut looked_up = None;
        let mut evidence = Value::Null;
        let mut lookup_error = String::new();
        let end = loop {
            match after_rejection(lookup, looked_up) {
                SubmitNext::Finish(end) => break end,
                SubmitNext::Do(_) => {
                    looked_up = Some(match self.target.query(eid, effect) {
                        Ok(Some(found)) => {
                            evidence = found;
                            LookupAnswer::Found
                        }
                        Ok(None) => LookupAnswer::NotFound,
                        Err(e) => {
                            lookup_error = e.to_string();
                            LookupAnswer::Failed
                        }
                    });
                }
            }
        };
        let (kind, mut fields, status, detail) = match end {
            SubmitEnd::Commit(via) => (
                Kind::Committed,
                json!({"via": via.as_str(), "evidence": recordable(evidence)}),
                Status::CommittedOnQuery,
                format!("the target rejected the send ({reason}) but a lookup found the effect"),
            ),
            SubmitEnd::Refuse(code) => {
                let why = if lookup {
                    format!("The target rejected the send ({reason}) and a lookup did not find it, so it is settled as not done and never resent.")
                } else {
                    format!("The target rejected the send ({reason}); it is settled as not done and never resent.")
                };
                (
                    Kind::Refused,
                    json!({"code": code.as_str(), "reason": why, "resolves": true}),
                    Status::Refused(code),
                    why,
                )
            }
            SubmitEnd::LeaveOpen | SubmitEnd::NotAdmitted(_) | SubmitEnd::ClaimHeld => {
                return Ok(Settled::Open(format!(
                    "the target rejected the send ({reason}) and the lookup that would settle it failed ({lookup_error}); the dispatch stays open for recovery"
                )))
            }
        };
        if let (Some(r), Some(m)) = (rechecked, fields.as_object_mut()) {
            m.insert("rechecked".into(), r.clone());
        }
        match self.append_if_open(eid, dispatch, kind, fields, claim)? {
            Some(_) => Ok(Settled::Done(status, detail)),
            None => Err(GateError::LostDispatch {
                effect_id: eid.to_owned(),
            }),
        }
    }

    /// Submit a proposal (DESIGN §2.3, §2.4). [`next_submit_step`] names each step in turn from
    /// the answers so far; each step is a function below that records its answer and asks
    /// [`next_submit_step`] whether to go on (writing its entry) or how to end:
    ///
    /// 1. [`record_proposal`](Self::record_proposal): open dispatch → `IN_FLIGHT`; payload
    ///    differs from the first PROPOSED → `REFUSED:conflicting_payload`; AMBIGUOUS →
    ///    `AMBIGUOUS`; COMMITTED → `DUPLICATE_IGNORED`; else PROPOSED;
    /// 2. [`authorize`](Self::authorize): lease → `REFUSED:lease`, or AUTHORIZED;
    /// 3. [`check_premises_before_dispatch`](Self::check_premises_before_dispatch): the premises
    ///    (those of the first PROPOSED under the same lease) re-checked at the target →
    ///    `REFUSED:stale_premise`;
    /// 4. [`take_claim`](Self::take_claim): held by another process → `IN_FLIGHT`;
    /// 5. [`write_dispatched`](Self::write_dispatched) under the claim and the journal lock: the
    ///    blockers of 1 again (plus a rejection settled earlier → `REFUSED:target_error`), the
    ///    **lease checked again** (a revocation during the premise reads is seen →
    ///    `REFUSED:lease`), DISPATCHED and the claim record;
    /// 6. [`send`](Self::send): result → COMMITTED → `COMMITTED`; rejected → lookup: found →
    ///    `COMMITTED_ON_QUERY`, else `REFUSED:target_error`; unknown or a replayed failure → the
    ///    dispatch stays open and the answer is `IN_FLIGHT`: recovery settles it.
    ///
    /// So the lease is checked at proposal, right before DISPATCHED (under the claim and the
    /// journal lock), and at recovery before any resend.
    pub fn submit(&self, p: &Proposal) -> Result<Submitted, GateError> {
        let prep = self.prepare(p)?;
        let mut run = SubmitRun {
            facts: SubmitFacts::new(self.target.capabilities().lookup),
            decided_on: Value::Null,
            checks: Value::Null,
            violations: Vec::new(),
            claim: None,
            dispatch: String::new(),
        };
        loop {
            let step = match next_submit_step(&run.facts) {
                SubmitNext::Do(step) => step,
                // Each end is carried out by the step whose answer led to it; this is reached
                // only if a step went on where the decision ends.
                SubmitNext::Finish(end) => {
                    let mut j = self.journal.lock(&prep.eid)?;
                    return self.finish(&mut j, &prep, &run, end);
                }
            };
            let flow = match step {
                SubmitStep::RecordProposal => self.record_proposal(&prep, &mut run)?,
                SubmitStep::CheckLease => self.authorize(&prep, &mut run)?,
                SubmitStep::CheckPremises => {
                    self.check_premises_before_dispatch(&prep, &mut run)?
                }
                SubmitStep::TakeClaim => self.take_claim(&prep, &mut run)?,
                SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim => {
                    self.write_dispatched(&prep, &mut run)?
                }
                SubmitStep::Send | SubmitStep::LookupRejected => return self.send(&prep, run),
            };
            match (flow, step) {
                (Flow::Done(s), _) => return Ok(s),
                (Flow::Go(()), SubmitStep::RecordProposal) => self.observe(Step::Proposed),
                (Flow::Go(()), SubmitStep::CheckLease) => self.observe(Step::Authorized),
                (Flow::Go(()), SubmitStep::AdmitUnderClaim | SubmitStep::CheckLeaseUnderClaim) => {
                    self.observe(Step::Dispatched)
                }
                (Flow::Go(()), _) => {}
            }
        }
    }

    /// The effect id and the canonical forms (floats and out-of-range integers refused).
    fn prepare<'p>(&self, p: &'p Proposal) -> Result<Prepared<'p>, GateError> {
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
        check_named(&eid, p.budget.as_ref(), self.budgets.is_some())?;
        Ok(Prepared {
            p,
            eid,
            effect_c,
            lease_c,
        })
    }

    /// Carry out an end that [`next_submit_step`] decided before the send, in the journal lock
    /// hold `j` of the step that decided it: write the entry the end names, and answer.
    fn finish(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
        end: SubmitEnd,
    ) -> Result<Submitted, GateError> {
        let refuse = |j: &mut Section<'_>, code: RefusalCode, why: String| {
            self.append(
                j,
                &prep.eid,
                Kind::Refused,
                json!({"code": code.as_str(), "reason": why, "checks": run.checks}),
            )?;
            Ok(prep.answer(Status::Refused(code), Some(why)))
        };
        match end {
            SubmitEnd::NotAdmitted(admission) => self.short_circuit(j, prep, admission),
            SubmitEnd::Refuse(code @ RefusalCode::Lease) => {
                let when = if run.facts.lease_live_under_claim.is_some() {
                    " at dispatch (it changed after the proposal was authorized)"
                } else {
                    ""
                };
                let why = format!(
                    "The lease {} is not live or does not cover this effect{when}.",
                    short(&prep.lease_c)
                );
                refuse(j, code, why)
            }
            SubmitEnd::Refuse(code @ RefusalCode::StalePremise) => {
                let why = format!(
                    "A premise the decision was made on no longer holds: {}.",
                    run.violations.join("; ")
                );
                refuse(j, code, why)
            }
            SubmitEnd::ClaimHeld => Ok(prep.answer(
                Status::InFlight,
                Some("Another process holds this effect's claim (it is dispatching, sending or recovering it).".into()),
            )),
            // Ends that follow a send are carried out by `send`; before one, nothing of them
            // applies: write nothing, and leave whatever is open to recovery.
            SubmitEnd::Refuse(_) | SubmitEnd::Commit(_) | SubmitEnd::LeaveOpen => {
                Ok(prep.answer(Status::InFlight, Some(OPEN_DETAIL.to_owned())))
            }
        }
    }

    /// Step 1: the admission, then PROPOSED, in one journal lock hold. Goes on having set the
    /// premises the effect is decided on: those of the first PROPOSED under the same lease,
    /// else these.
    fn record_proposal(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let p = prep.p;
        let mut proposed = json!({
            "agent": p.agent,
            "lease": p.lease,
            "premises": p.premises,
            "effect": p.effect,
        });
        if let (Some(r), Some(m)) = (&p.request_id, proposed.as_object_mut()) {
            m.insert("request_id".into(), Value::String(r.clone()));
        }
        if let (Some(b), Some(m)) = (&p.budget, proposed.as_object_mut()) {
            m.insert("budget".into(), json!(b));
        }
        let mut j = self.journal.lock(&prep.eid)?;
        let facts = facts_of(j.state(&prep.eid), prep);
        run.facts.admission = Some(admit(facts, AdmissionPoint::Proposal));
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            if end == SubmitEnd::NotAdmitted(Admission::Conflicting) {
                // The conflicting proposal is recorded too, then refused.
                self.append(&mut j, &prep.eid, Kind::Proposed, proposed)?;
            }
            return self.finish(&mut j, prep, run, end).map(Flow::Done);
        }
        run.decided_on = j
            .state(&prep.eid)
            .and_then(|s| s.premises_for(&prep.lease_c))
            .cloned()
            .unwrap_or_else(|| p.premises.clone());
        self.append(&mut j, &prep.eid, Kind::Proposed, proposed)?;
        Ok(Flow::Go(()))
    }

    /// The answer (and entry, where one is written) of an admission that does not proceed.
    fn short_circuit(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        admission: Admission,
    ) -> Result<Submitted, GateError> {
        let (code, why) = match admission {
            Admission::Proceed | Admission::InFlight => {
                return Ok(prep.answer(Status::InFlight, Some(OPEN_DETAIL.to_owned())))
            }
            Admission::Ambiguous => {
                return Ok(prep.answer(Status::Ambiguous, Some(AMBIGUOUS_DETAIL.to_owned())))
            }
            Admission::Duplicate => {
                return Ok(prep.answer(
                    Status::DuplicateIgnored,
                    Some(DUPLICATE_DETAIL.to_owned()),
                ))
            }
            Admission::Conflicting => (
                RefusalCode::ConflictingPayload,
                "The payload differs from the one this effect was first proposed with; the first proposal fixes it.",
            ),
            Admission::TargetRejected => (
                RefusalCode::TargetError,
                "The target already rejected this effect and it was settled as not done; a rejected effect is never resent.",
            ),
        };
        self.append(
            j,
            &prep.eid,
            Kind::Refused,
            json!({"code": code.as_str(), "reason": why}),
        )?;
        Ok(prep.answer(Status::Refused(code), Some(why.to_owned())))
    }

    /// Step 2: the lease at proposal → REFUSED:lease or AUTHORIZED. Goes on having set the
    /// checks record (`lease_live`, `grant`) for DISPATCHED.
    fn authorize(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let lc = self.check_lease(prep)?;
        run.checks = json!({"lease_live": lc.live, "grant": lc.grant.map(recordable)});
        run.facts.lease_live = Some(lc.live);
        let mut j = self.journal.lock(&prep.eid)?;
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            return self.finish(&mut j, prep, run, end).map(Flow::Done);
        }
        self.append(
            &mut j,
            &prep.eid,
            Kind::Authorized,
            json!({"lease": prep.p.lease}),
        )?;
        Ok(Flow::Go(()))
    }

    /// Step 3: the premises re-checked at the target right before dispatch (I3).
    fn check_premises_before_dispatch(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let violations = self
            .target
            .check_premises(&prep.eid, &run.decided_on)
            .map_err(|source| GateError::PremiseCheck {
                effect_id: prep.eid.clone(),
                source,
            })?;
        if let Some(m) = run.checks.as_object_mut() {
            m.insert("violations".into(), json!(violations));
        }
        run.facts.premises_hold = Some(violations.is_empty());
        run.violations = violations;
        match next_submit_step(&run.facts) {
            SubmitNext::Finish(end) => {
                let mut j = self.journal.lock(&prep.eid)?;
                self.finish(&mut j, prep, run, end).map(Flow::Done)
            }
            SubmitNext::Do(_) => Ok(Flow::Go(())),
        }
    }

    /// Step 4: the effect's claim; held by another process → `IN_FLIGHT`, nothing written.
    fn take_claim<'g>(
        &'g self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'g>,
    ) -> Result<Flow<()>, GateError> {
        run.claim = self.journal.try_take(&prep.eid)?;
        run.facts.claim_taken = Some(run.claim.is_some());
        match next_submit_step(&run.facts) {
            SubmitNext::Finish(SubmitEnd::ClaimHeld) => Ok(Flow::Done(prep.answer(
                Status::InFlight,
                Some("Another process holds this effect's claim (it is dispatching, sending or recovering it).".into()),
            ))),
            SubmitNext::Finish(end) => {
                let mut j = self.journal.lock(&prep.eid)?;
                self.finish(&mut j, prep, run, end).map(Flow::Done)
            }
            SubmitNext::Do(_) => Ok(Flow::Go(())),
        }
    }

    /// Step 5, under the claim and the journal lock: the blockers again, the lease checked
    /// again (counted from here, not from proposal: a revocation during the premise reads is
    /// seen), then DISPATCHED and the claim record, as one step to every other process. Goes on
    /// having set the DISPATCHED hash; an end releases the claim.
    fn write_dispatched(
        &self,
        prep: &Prepared<'_>,
        run: &mut SubmitRun<'_>,
    ) -> Result<Flow<()>, GateError> {
        let done = |run: &mut SubmitRun<'_>, s: Submitted| {
            if let Some(claim) = run.claim.take() {
                self.release(claim, &prep.eid);
            }
            Ok(Flow::Done(s))
        };
        let mut j = self.journal.lock(&prep.eid)?;
        let facts = facts_of(j.state(&prep.eid), prep);
        run.facts.admission_under_claim = Some(admit(facts, AdmissionPoint::Dispatch));
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            let s = self.finish(&mut j, prep, run, end)?;
            drop(j);
            return done(run, s);
        }
        let lc = self.check_lease(prep)?;
        if let Some(m) = run.checks.as_object_mut() {
            m.insert("lease_live".into(), json!(lc.live));
            m.insert("grant".into(), lc.grant.map_or(Value::Null, recordable));
        }
        run.facts.lease_live_under_claim = Some(lc.live);
        if let SubmitNext::Finish(end) = next_submit_step(&run.facts) {
            let s = self.finish(&mut j, prep, run, end)?;
            drop(j);
            return done(run, s);
        }
        let budget = match self.admit_budget(&mut j, prep, run)? {
            Flow::Go(budget) => budget,
            Flow::Done(s) => {
                drop(j);
                return done(run, s);
            }
        };
        run.dispatch = self.append_dispatched(&mut j, prep, run, budget)?;
        Ok(Flow::Go(()))
    }

    /// Step 5's budget admission, in its journal lock hold `j` (DESIGN §2.8): a proposal that
    /// names a budget goes on with the record for DISPATCHED only if the budget can take it;
    /// else `REFUSED:over_budget`, the record beside the refusal.
    fn admit_budget(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
    ) -> Result<Flow<Option<Value>>, GateError> {
        let Some(budget) = &prep.p.budget else {
            return Ok(Flow::Go(None));
        };
        let Some(store) = &self.budgets else {
            // `prepare` refused it already: a budgeted effect is never dispatched unchecked.
            check_named(&prep.eid, Some(budget), false)?;
            return Ok(Flow::Go(None));
        };
        let r = reckon_under_budget_lock(j, store.as_ref(), &prep.eid, budget)?;
        if r.within {
            return Ok(Flow::Go(Some(r.field())));
        }
        let (code, why) = (RefusalCode::OverBudget, r.refusal());
        let fields = json!({"code": code.as_str(), "reason": why, "checks": run.checks, "budget": r.field()});
        self.append(j, &prep.eid, Kind::Refused, fields)?;
        Ok(Flow::Done(prep.answer(Status::Refused(code), Some(why))))
    }

    /// DISPATCHED (with the budget admission's record, if any) and the sender's claim record,
    /// in the journal lock hold `j`; returns the DISPATCHED hash.
    fn append_dispatched(
        &self,
        j: &mut Section<'_>,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
        budget: Option<Value>,
    ) -> Result<String, GateError> {
        let mut fields = json!({
            "effect": prep.p.effect,
            "lease": prep.p.lease,
            "premises": run.decided_on,
            "checks": run.checks,
        });
        if let (Some(b), Some(m)) = (budget, fields.as_object_mut()) {
            m.insert("budget".into(), b);
        }
        let d = self.append(j, &prep.eid, Kind::Dispatched, fields)?;
        let hash = d
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let at = d.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
        if let Some(claim) = &run.claim {
            let gen = self.journal.next_record_gen(j, &prep.eid)?;
            let record = self.claim_record(Role::Send, &hash, at, None, None, gen);
            j.write_record(claim, &prep.eid, &record)?;
        }
        Ok(hash)
    }

    /// Step 6: send, and settle what [`next_submit_step`] makes of the answer.
    fn send(&self, prep: &Prepared<'_>, mut run: SubmitRun<'_>) -> Result<Submitted, GateError> {
        let dispatch = run.dispatch.clone();
        let deadline = match self.confirm_claim(prep, &run) {
            Ok(deadline) => deadline,
            Err(not_sent) => return Ok(not_sent),
        };
        let answer = self
            .target
            .apply_before(&prep.eid, &prep.p.effect, &dispatch, deadline);
        if let Err(TargetError::NotSent { reason }) = &answer {
            if let Some(claim) = run.claim.take() {
                claim.release(&self.key);
            }
            return Ok(prep.answer(
                Status::InFlight,
                Some(format!(
                    "The request did not leave ({reason}); nothing was sent and recovery will settle the dispatch."
                )),
            ));
        }
        run.facts.sent = Some(send_answer(&answer));
        let claim = run.claim.take();
        match (next_submit_step(&run.facts), answer) {
            (SubmitNext::Finish(SubmitEnd::Commit(via)), Ok(evidence)) => {
                self.observe(Step::Sent);
                self.commit_sent(prep, &dispatch, via, evidence, claim)
            }
            (
                SubmitNext::Do(SubmitStep::LookupRejected)
                | SubmitNext::Finish(SubmitEnd::Refuse(_)),
                Err(TargetError::Rejected { reason }),
            ) => self.settle_sent_rejection(prep, &dispatch, &reason, claim),
            (_, answer) => Ok(self.leave_open(prep, &answer, claim)),
        }
    }

    /// Before the send: the deadline the request must leave by. A holder that cannot confirm it
    /// still holds the claim (a lost database session) does not send: its answer (IN_FLIGHT,
    /// recovery settles the dispatch once the claim is free) is the error.
    fn confirm_claim(
        &self,
        prep: &Prepared<'_>,
        run: &SubmitRun<'_>,
    ) -> Result<SendDeadline, Submitted> {
        match run.claim.as_ref().map(Claim::confirm) {
            Some(Ok(deadline)) => Ok(deadline),
            Some(Err(e)) => Err(prep.answer(
                Status::InFlight,
                Some(format!(
                    "The claim could not be confirmed before the send ({e}); nothing was sent and recovery will settle the dispatch."
                )),
            )),
            None => Ok(SendDeadline::none()),
        }
    }

    /// The target applied the effect: COMMITTED is written (unless the claim was lost meanwhile,
    /// when recovery settles it) and the claim removed.
    fn commit_sent(
        &self,
        prep: &Prepared<'_>,
        dispatch: &str,
        via: Via,
        evidence: Value,
        claim: Option<Claim<'_>>,
    ) -> Result<Submitted, GateError> {
        let written = match self.append_if_open(
            &prep.eid,
            dispatch,
            Kind::Committed,
            json!({"via": via.as_str(), "evidence": recordable(evidence)}),
            claim.as_ref(),
        ) {
            Err(GateError::ClaimLost { reason, .. }) => {
                return Ok(prep.answer(
                    Status::InFlight,
                    Some(format!("The credit was sent, but the claim was lost before COMMITTED could be written ({reason}); recovery will settle the dispatch.")),
                ))
            }
            other => other?,
        };
        if written.is_none() {
            return Err(GateError::LostDispatch {
                effect_id: prep.eid.clone(),
            });
        }
        if let Some(claim) = claim {
            claim.remove();
        }
        self.observe(Step::Committed);
        Ok(prep.answer(Status::Committed, None))
    }

    /// The target rejected the effect: settle by lookup ([`Gate::settle_rejected`]); the claim is
    /// removed when the dispatch is settled, let go when it stays open.
    fn settle_sent_rejection(
        &self,
        prep: &Prepared<'_>,
        dispatch: &str,
        reason: &str,
        claim: Option<Claim<'_>>,
    ) -> Result<Submitted, GateError> {
        let settled = self.settle_rejected(
            &prep.eid,
            dispatch,
            &prep.p.effect,
            reason,
            (None, claim.as_ref()),
        );
        match settled {
            Err(GateError::ClaimLost { reason, .. }) => Ok(prep.answer(
                Status::InFlight,
                Some(format!("The send was rejected, but the claim was lost before the dispatch could be settled ({reason}); recovery will settle it.")),
            )),
            Err(e) => Err(e),
            Ok(Settled::Done(status, detail)) => {
                if let Some(claim) = claim {
                    claim.remove();
                }
                Ok(prep.answer(status, Some(detail)))
            }
            Ok(Settled::Open(detail)) => {
                if let Some(claim) = claim {
                    claim.release(&self.key);
                }
                Ok(prep.answer(Status::InFlight, Some(detail)))
            }
        }
    }

    /// The send's outcome cannot be used: the dispatch stays open for recovery. The send
    /// returned, so nothing of this holder can still leave and the claim is let go.
    fn leave_open(
        &self,
        prep: &Prepared<'_>,
        answer: &Result<Value, TargetError>,
        claim: Option<Claim<'_>>,
    ) -> Submitted {
        if let Some(claim) = claim {
            claim.release(&self.key);
        }
        let why = match answer {
            Err(e) => e.reason().to_owned(),
            Ok(_) => "the answer could not be used".to_owned(),
        };
        prep.answer(
            Status::InFlight,
            Some(format!(
                "The send's outcome is unknown ({why}); the dispatch stays open and recovery will settle it."
            )),
        )
    }

    /// Release a claim taken for an effect, with no send of this holder able to still leave:
    /// its file is removed when no dispatch is open (the effect is settled or was never
    /// dispatched), kept otherwise (its record names the dispatch's last holder, and that it let
    /// the claim go).
    pub(crate) fn release(&self, claim: Claim<'_>, eid: &str) {
        let open = self
            .journal
            .peek(Some(eid), |j| {
                j.state(eid).is_some_and(|s| s.open.is_some())
            })
            .unwrap_or(true);
        if open {
            claim.release(&self.key);
        } else {
            claim.remove();
        }
    }

    /// Every entry of one effect, in journal order, exactly as stored (empty if none). Reads
    /// without waiting for another process's journal lock.
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, GateError> {
        Ok(self
            .journal
            .peek(Some(effect_id), |j| j.entries(effect_id))??)
    }

    /// Every effect id in the journal, in first-seen order.
    pub fn effect_ids(&self) -> Result<Vec<String>, GateError> {
        Ok(self.journal.peek(None, |j| j.effect_ids())?)
    }

    /// Effects with an open dispatch (what [`Gate::recover`] will work on), first-seen order.
    pub fn open_effects(&self) -> Result<Vec<String>, GateError> {
        Ok(self.journal.peek(None, |j| j.open_effects())?)
    }

    /// The status the journal now records for an effect ([`status_of`](crate::status_of) of
    /// its entries). `None` when nothing was decided yet (only PROPOSED/AUTHORIZED, e.g. a
    /// sender that died before dispatch) or the effect is unknown. Never waits for another
    /// process's journal lock.
    pub fn status(&self, effect_id: &str) -> Result<Option<Status>, GateError> {
        Ok(status_of(&self.entries(effect_id)?))
    }

    /// The receipt bundle of one effect: all its entries, sealed with this gate's key (a signed
    /// head naming how many entries it holds and the last one's hash), for `verify`.
    pub fn receipt(&self, effect_id: &str) -> Result<ReceiptBundle, GateError> {
        let entries = self.entries(effect_id)?;
        let Some(last) = entries.last() else {
            return Err(GateError::UnknownEffect {
                effect_id: effect_id.to_owned(),
            });
        };
        let last_ts = last.get("ts_ms").and_then(Value::as_u64).unwrap_or(0);
        let mut bundle = ReceiptBundle::new(effect_id, entries);
        // Never before the last entry, whatever this process's clock says.
        let at = self.now_ms().max(last_ts);
        verify::binding::seal_bundle(&mut bundle, &self.key, at).map_err(|source| {
            GateError::Seal {
                effect_id: effect_id.to_owned(),
                source,
            }
        })?;
        Ok(bundle)
    }
}

const OPEN_DETAIL: &str =
    "A dispatch of this effect is open (being sent, or a lost send awaiting recovery); recovery decides, nothing is resent from here.";
const AMBIGUOUS_DETAIL: &str =
    "Whether this effect happened cannot be known, so it is never sent again.";
const DUPLICATE_DETAIL: &str = "This effect was already committed; nothing was sent.";

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
