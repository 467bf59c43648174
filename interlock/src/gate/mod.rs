//! The gate: `submit` (DESIGN §2.3) as named steps, receipts, and the pieces recovery shares.
//!
//! This module holds the gate itself (opening it, its clocks, journal appends, claim records,
//! reads and receipts); `submit`'s steps up to DISPATCHED are in `submit`, the send and the
//! settling of its answer in `send`, the settings and the error type in `config`.

use crate::budget::Budgets;
use crate::claim::{boot_id, monotonic_ms, ClaimRecord, MonoInstant, Owner, Role};
use crate::lease::LeaseStore;
use crate::status::{status_of, Status, Step};
use crate::store::{Claim, Location, Section, Store};
use crate::target::Target;
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use verify::canonical;
use verify::entry::{Kind, ReceiptBundle};

mod config;
mod send;
mod submit;

pub use config::{GateConfig, GateError};
pub(crate) use send::Settled;

type Observer = Box<dyn Fn(Step) + Send + Sync>;
type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

/// What one recoverer remembers about an open dispatch between its rounds (a fresh process
/// learns it again: at the cost of one more resend).
#[derive(Debug, Clone, Default)]
pub(crate) struct RecoveryMemory {
    /// A replayed failure proved the requests under the key finished.
    pub finished: bool,
    /// Resends answered "unknown".
    pub unknown_answers: u32,
    /// A resend was answered "in use" (see `RecoveryFacts::heard_in_use`).
    pub heard_in_use: bool,
    /// Every resend's answer, oldest first, for the entry that settles the dispatch.
    pub answers: crate::recover::answers::Answers,
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
        let still_open = j.with_state(eid, |s| {
            s.and_then(|s| s.open.as_ref())
                .is_some_and(|o| o.hash == dispatch)
        });
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
            told_in_use: self
                .memory
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(dispatch)
                .is_some_and(|m| m.heard_in_use),
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

    /// Release a claim taken for an effect, with no send of this holder able to still leave:
    /// its file is removed when no dispatch is open (the effect is settled or was never
    /// dispatched), kept otherwise (its record names the dispatch's last holder, and that it let
    /// the claim go).
    pub(crate) fn release(&self, claim: Claim<'_>, eid: &str) {
        let open = self
            .journal
            .peek(Some(eid), |j| {
                j.with_state(eid, |s| s.is_some_and(|s| s.open.is_some()))
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
    use serde_json::json;

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
