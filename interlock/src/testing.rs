//! Test helpers: targets and lease stores with injectable faults. Not for production use.
//!
//! - [`MemTarget`]: an in-memory target of any tier whose sends can be rejected, lost, or land
//!   while the answer is lost.
//! - [`FileTarget`]: a target whose state lives in a JSON file under `flock`, so it survives the
//!   SIGKILL of the process that called it (used by the `gate-crash-probe` binary).
//! - [`MemLeases`]: leases that can be granted and revoked.

use crate::budget::{BudgetError, BudgetStore};
use crate::lease::{LeaseCheck, LeaseError, LeaseStore};
use crate::target::{Capabilities, SendDeadline, Target, TargetError, Tier};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// What one `apply` call does at a fault-injecting target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Lands (or, at a deduping tier-1 target, replays the first result) and answers.
    Ok,
    /// Does not land; the service answers "no".
    Rejected,
    /// Does not land; the answer is lost (timeout).
    Unknown,
    /// Lands; the answer is lost.
    LandedButUnknown,
    /// Lands, yet the service answers "no" (a lying or confused service).
    RejectedButLanded,
    /// The client gives up (the answer is unknown) while the request is still executing at the
    /// service: it lands this many milliseconds later, by the target's clock
    /// ([`MemTarget::with_clock`]). Until then a tier-1 resend under the same key is answered
    /// "in progress" (unknown).
    LandsLate(u64),
    /// The request executes and fails at the service (an internal error, nothing lands); a
    /// tier-1 service saves that error under the key and replays it to every resend.
    FailsSaved,
    /// The request lands, then the service answers an internal error that a tier-1 service
    /// saves under the key and replays to every resend.
    LandsThenFailsSaved,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 5] = [
        Fault::Ok,
        Fault::Rejected,
        Fault::Unknown,
        Fault::LandedButUnknown,
        Fault::RejectedButLanded,
    ];

    fn lands(self) -> bool {
        matches!(
            self,
            Fault::Ok
                | Fault::LandedButUnknown
                | Fault::RejectedButLanded
                | Fault::LandsThenFailsSaved
        )
    }

    fn saves_error(self) -> bool {
        matches!(self, Fault::FailsSaved | Fault::LandsThenFailsSaved)
    }

    fn answer(self, evidence: Value) -> Result<Value, TargetError> {
        match self {
            Fault::Ok => Ok(evidence),
            Fault::Rejected | Fault::RejectedButLanded => Err(TargetError::Rejected {
                reason: "injected rejection".into(),
            }),
            Fault::Unknown | Fault::LandedButUnknown | Fault::LandsLate(_) => {
                Err(TargetError::Unknown {
                    reason: "injected lost answer".into(),
                })
            }
            Fault::FailsSaved | Fault::LandsThenFailsSaved => Err(replayed_error(false)),
        }
    }

    /// Parse `ok`, `rejected`, `unknown`, `landed-but-unknown`, `rejected-but-landed`,
    /// `lands-late:<ms>`.
    pub fn parse(s: &str) -> Option<Fault> {
        if let Some(ms) = s.strip_prefix("lands-late:") {
            return ms.parse().ok().map(Fault::LandsLate);
        }
        Some(match s {
            "ok" => Fault::Ok,
            "rejected" => Fault::Rejected,
            "unknown" => Fault::Unknown,
            "landed-but-unknown" => Fault::LandedButUnknown,
            "rejected-but-landed" => Fault::RejectedButLanded,
            _ => return None,
        })
    }
}

fn premise_violations(premises: &Value, facts: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(p) = premises {
        for (k, was) in p {
            let now = facts.get(k).unwrap_or(&Value::Null);
            if now != was {
                out.push(format!("{k}: was {was}, now {now}"));
            }
        }
    }
    out
}

/// The answer of a service that failed a request with an internal error (`replayed`: the saved
/// answer of an earlier request under the same key).
fn replayed_error(replayed: bool) -> TargetError {
    if replayed {
        TargetError::Replayed {
            reason: "internal error (replayed under the idempotency key)".into(),
        }
    } else {
        TargetError::Unknown {
            reason: "internal error".into(),
        }
    }
}

type ApplyHook = Box<dyn Fn(&str) + Send + Sync>;
type PremiseHook = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct MemState {
    landed: Vec<(String, Value)>,
    /// Requests still executing at the service: (effect id, effect, lands at ms).
    pending: Vec<(String, Value, u64)>,
    /// Effect ids whose (tier-1) key holds a saved internal error.
    saved_errors: Vec<String>,
    /// Effect ids with a request that lands later than the declared in-flight bound.
    beyond_bound: Vec<String>,
    apply_calls: usize,
    query_calls: usize,
    /// The anchor (DISPATCHED hash) each send carried: (effect id, hash), in send order.
    anchors: Vec<(String, String)>,
    facts: Map<String, Value>,
    faults: VecDeque<Fault>,
    failing_queries: usize,
}

impl MemState {
    /// Land every pending request whose time has come.
    fn settle(&mut self, now: u64) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(_, _, at)| *at <= now);
        self.pending = later;
        for (eid, effect, _) in due {
            self.landed.push((eid, effect));
        }
    }
}

/// An in-memory target with injectable faults. Premises are a JSON object compared key by key
/// with the target's current facts.
pub struct MemTarget {
    tier: Tier,
    queryable: bool,
    dedup_window: Option<Duration>,
    max_in_flight: Option<Duration>,
    state: Mutex<MemState>,
    on_apply: Option<ApplyHook>,
    on_query: Option<ApplyHook>,
    on_premise_check: Option<PremiseHook>,
    clock: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl std::fmt::Debug for MemTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTarget")
            .field("tier", &self.tier)
            .field("queryable", &self.queryable)
            .finish_non_exhaustive()
    }
}

impl MemTarget {
    /// A target of `tier`; tier 2 is always queryable, tier 3 never. Dedup window forever,
    /// in-flight bound zero (requests land at once or never, unless a fault says otherwise).
    pub fn new(tier: Tier, queryable: bool) -> MemTarget {
        MemTarget {
            tier,
            queryable: match tier {
                Tier::One => queryable,
                Tier::Two => true,
                Tier::Three => false,
            },
            dedup_window: None,
            max_in_flight: Some(Duration::ZERO),
            state: Mutex::new(MemState::default()),
            on_apply: None,
            on_query: None,
            on_premise_check: None,
            clock: None,
        }
    }

    /// Read time (Unix ms) from this shared clock, for requests that land late
    /// ([`Fault::LandsLate`]); share it with the gate's clock.
    pub fn with_clock(mut self, clock: std::sync::Arc<std::sync::atomic::AtomicU64>) -> MemTarget {
        self.clock = Some(clock);
        self
    }

    /// Call `f()` at the start of every premise check (e.g. to revoke a lease while the
    /// premise reads run).
    pub fn with_premise_hook(mut self, f: Box<dyn Fn() + Send + Sync>) -> MemTarget {
        self.on_premise_check = Some(f);
        self
    }

    fn now(&self) -> u64 {
        self.clock
            .as_ref()
            .map_or(0, |c| c.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Set the dedup window.
    pub fn with_dedup_window(mut self, w: Option<Duration>) -> MemTarget {
        self.dedup_window = w;
        self
    }

    /// Set the declared server-side in-flight bound.
    pub fn with_max_in_flight(mut self, d: Duration) -> MemTarget {
        self.max_in_flight = Some(d);
        self
    }

    /// Declare no in-flight bound (recovery then never trusts a "not found").
    pub fn without_in_flight_bound(mut self) -> MemTarget {
        self.max_in_flight = None;
        self
    }

    /// Call `f(effect_id)` at the start of every `apply` (e.g. to assert a durable DISPATCHED).
    /// In a send through [`Target::apply_before`] it runs before the deadline is checked: it
    /// stands for whatever delays the request before it leaves (a slow connection, a paused
    /// sender).
    pub fn with_apply_hook(mut self, f: Box<dyn Fn(&str) + Send + Sync>) -> MemTarget {
        self.on_apply = Some(f);
        self
    }

    /// Call `f(effect_id)` at the start of every `query`, before the service is asked: it
    /// stands for a lookup whose request or answer is delayed.
    pub fn with_query_hook(mut self, f: Box<dyn Fn(&str) + Send + Sync>) -> MemTarget {
        self.on_query = Some(f);
        self
    }

    fn st(&self) -> std::sync::MutexGuard<'_, MemState> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.settle(self.now());
        st
    }

    /// Queue faults for the next `apply` calls (after the queue empties, sends succeed).
    pub fn push_faults(&self, faults: impl IntoIterator<Item = Fault>) {
        self.st().faults.extend(faults);
    }

    /// Drop queued faults.
    pub fn clear_faults(&self) {
        let mut st = self.st();
        st.faults.clear();
        st.failing_queries = 0;
    }

    /// Make the next `n` lookups fail with an unknown error.
    pub fn fail_queries(&self, n: usize) {
        self.st().failing_queries = n;
    }

    /// Set a fact premises are compared with.
    pub fn set_fact(&self, key: &str, value: Value) {
        self.st().facts.insert(key.to_owned(), value);
    }

    /// How many times this effect landed.
    pub fn landed(&self, effect_id: &str) -> usize {
        self.st()
            .landed
            .iter()
            .filter(|(e, _)| e == effect_id)
            .count()
    }

    /// How many effects landed in all.
    pub fn landed_total(&self) -> usize {
        self.st().landed.len()
    }

    /// How many times `apply` was called.
    pub fn apply_calls(&self) -> usize {
        self.st().apply_calls
    }

    /// The anchor (the DISPATCHED entry's hash) each send of this effect carried, in order.
    pub fn anchors(&self, effect_id: &str) -> Vec<String> {
        self.st()
            .anchors
            .iter()
            .filter(|(e, _)| e == effect_id)
            .map(|(_, h)| h.clone())
            .collect()
    }

    /// How many times `query` was called.
    pub fn query_calls(&self) -> usize {
        self.st().query_calls
    }

    /// How many requests are still executing at the service (will land later).
    pub fn pending(&self) -> usize {
        self.st().pending.len()
    }

    /// How many requests of this effect are still executing at the service.
    pub fn pending_for(&self, effect_id: &str) -> usize {
        self.st()
            .pending
            .iter()
            .filter(|(e, _, _)| e == effect_id)
            .count()
    }

    /// Whether a request of this effect was made to land later than the declared bound (the
    /// gate's assumption broken on purpose).
    pub fn landed_beyond_bound(&self, effect_id: &str) -> bool {
        self.st().beyond_bound.iter().any(|e| e == effect_id)
    }
}

/// The capabilities of a test target of `tier`.
fn caps(
    tier: Tier,
    queryable: bool,
    dedup_window: Option<Duration>,
    max_in_flight: Option<Duration>,
) -> Capabilities {
    Capabilities {
        dedup: (tier == Tier::One).then_some(dedup_window),
        lookup: queryable,
        max_in_flight,
    }
}

impl Target for MemTarget {
    fn capabilities(&self) -> Capabilities {
        caps(
            self.tier,
            self.queryable,
            self.dedup_window,
            self.max_in_flight,
        )
    }
    fn check_premises(
        &self,
        _effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        if let Some(f) = &self.on_premise_check {
            f();
        }
        Ok(premise_violations(premises, &self.st().facts))
    }
    fn apply_dispatched(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
    ) -> Result<Value, TargetError> {
        self.apply_before(effect_id, effect, dispatch, SendDeadline::none())
    }
    fn apply_before(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
        deadline: SendDeadline,
    ) -> Result<Value, TargetError> {
        if let Some(f) = &self.on_apply {
            f(effect_id);
        }
        // The request leaves here: the deadline is checked after whatever the hook stands for
        // (a slow connection, a paused sender), as a client checks it right before its write.
        deadline.check()?;
        self.st()
            .anchors
            .push((effect_id.to_owned(), dispatch.to_owned()));
        self.execute(effect_id, effect)
    }
    fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError> {
        if let Some(f) = &self.on_apply {
            f(effect_id);
        }
        self.execute(effect_id, effect)
    }
    fn query(&self, effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        if let Some(f) = &self.on_query {
            f(effect_id);
        }
        let mut st = self.st();
        st.query_calls += 1;
        if st.failing_queries > 0 {
            st.failing_queries -= 1;
            return Err(TargetError::Unknown {
                reason: "injected lookup failure".into(),
            });
        }
        Ok(st
            .landed
            .iter()
            .position(|(e, _)| e == effect_id)
            .map(|n| json!({"id": format!("obj_{n}"), "effect_id": effect_id})))
    }
}

impl MemTarget {
    /// The request has reached the service: land it (or not) as the next fault says.
    fn execute(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError> {
        let now = self.now();
        let mut st = self.st();
        st.apply_calls += 1;
        let fault = st.faults.pop_front().unwrap_or(Fault::Ok);
        if self.tier == Tier::One {
            // The key: in progress while a first request executes; a saved error is replayed.
            if st.pending.iter().any(|(e, _, _)| e == effect_id) {
                return Err(TargetError::Unknown {
                    reason: "a request with this idempotency key is in progress".into(),
                });
            }
            if st.saved_errors.iter().any(|e| e == effect_id) {
                return Err(replayed_error(true));
            }
        }
        let existing = st.landed.iter().position(|(e, _)| e == effect_id);
        let n = match existing {
            Some(i) if self.tier == Tier::One => i,
            _ => {
                if let Fault::LandsLate(ms) = fault {
                    st.pending
                        .push((effect_id.to_owned(), effect.clone(), now.saturating_add(ms)));
                    if self
                        .max_in_flight
                        .is_none_or(|b| u128::from(ms) > b.as_millis())
                    {
                        st.beyond_bound.push(effect_id.to_owned());
                    }
                }
                if fault.saves_error() && self.tier == Tier::One {
                    st.saved_errors.push(effect_id.to_owned());
                }
                if !fault.lands() {
                    return fault.answer(Value::Null);
                }
                st.landed.push((effect_id.to_owned(), effect.clone()));
                st.landed.len() - 1
            }
        };
        fault.answer(json!({"id": format!("obj_{n}"), "effect_id": effect_id}))
    }
}

/// Leases that are live once granted and until revoked. The grant record is
/// `{"lease": <lease>, "revoked": null}` while live, `"revoked": true` once revoked.
#[derive(Debug, Default)]
pub struct MemLeases {
    leases: Mutex<HashMap<String, bool>>,
}

impl MemLeases {
    /// No leases.
    pub fn new() -> MemLeases {
        MemLeases::default()
    }

    fn key(lease: &Value) -> String {
        verify::canonical::to_string(lease).unwrap_or_else(|_| lease.to_string())
    }

    /// Grant (or un-revoke) a lease.
    pub fn grant(&self, lease: &Value) {
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Self::key(lease), true);
    }

    /// Revoke a lease.
    pub fn revoke(&self, lease: &Value) {
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Self::key(lease), false);
    }
}

impl LeaseStore for MemLeases {
    fn check(&self, lease: &Value, _effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let state = self
            .leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&Self::key(lease))
            .copied();
        Ok(LeaseCheck {
            live: state == Some(true),
            grant: state.map(|live| {
                json!({"lease": lease, "revoked": if live { Value::Null } else { Value::Bool(true) }})
            }),
        })
    }
}

/// Budgets' caps in memory: set, lowered, forgotten, or made to fail, at any time.
#[derive(Debug, Default)]
pub struct MemBudgets {
    caps: Mutex<HashMap<String, i64>>,
    failing: Mutex<Option<String>>,
}

impl MemBudgets {
    /// No budgets.
    pub fn new() -> MemBudgets {
        MemBudgets::default()
    }

    /// Budgets with these caps.
    pub fn with_caps<'a>(caps: impl IntoIterator<Item = (&'a str, i64)>) -> MemBudgets {
        let b = MemBudgets::new();
        for (id, cap) in caps {
            b.set_cap(id, cap);
        }
        b
    }

    /// Set (or change) a budget's cap.
    pub fn set_cap(&self, id: &str, cap: i64) {
        self.caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned(), cap);
    }

    /// Forget a budget: it is unknown from now on.
    pub fn forget(&self, id: &str) {
        self.caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Make every read fail with `reason` (`None`: answer again).
    pub fn fail(&self, reason: Option<&str>) {
        *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = reason.map(str::to_owned);
    }
}

impl BudgetStore for MemBudgets {
    fn cap(&self, id: &str) -> Result<Option<i64>, BudgetError> {
        if let Some(why) = &*self.failing.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(BudgetError::new(why.clone()));
        }
        Ok(self
            .caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .copied())
    }
}

/// Leases that are always live (for tests and probes that do not exercise leases).
#[derive(Debug, Default, Clone, Copy)]
pub struct AllLive;

impl LeaseStore for AllLive {
    fn check(&self, lease: &Value, _effect: &Value) -> Result<LeaseCheck, LeaseError> {
        Ok(LeaseCheck {
            live: true,
            grant: Some(json!({"lease": lease})),
        })
    }
}

/// A target whose state lives in a JSON file (`{"landed": [...], "facts": {...}, "faults":
/// [...], "apply_calls": n}`), read and written under an exclusive `flock` on `<file>.lock`, so it
/// outlives any process that calls it. Tier 1 dedupes on the effect id; tier 2 does not.
#[derive(Debug, Clone)]
pub struct FileTarget {
    path: PathBuf,
    tier: Tier,
    queryable: bool,
    max_in_flight: Duration,
    apply_delay: Duration,
}

/// Why a [`FileTarget`] state file could not be used.
fn file_err(path: &Path, what: &str, e: impl std::fmt::Display) -> TargetError {
    TargetError::Unknown {
        reason: format!("{}: could not {what}: {e}", path.display()),
    }
}

impl FileTarget {
    /// A target with its state in `path` (created empty on first use).
    pub fn new(path: &Path, tier: Tier, queryable: bool, max_in_flight: Duration) -> FileTarget {
        FileTarget {
            path: path.to_owned(),
            tier,
            queryable: match tier {
                Tier::One => queryable,
                Tier::Two => true,
                Tier::Three => false,
            },
            max_in_flight,
            apply_delay: Duration::ZERO,
        }
    }

    /// Sleep this long inside `apply` (while holding nothing but the caller's claim).
    pub fn with_apply_delay(mut self, d: Duration) -> FileTarget {
        self.apply_delay = d;
        self
    }

    /// Run `f` on the state under the state file's lock, then write it back (fsynced).
    pub fn with_state<R>(
        path: &Path,
        f: impl FnOnce(&mut Map<String, Value>) -> R,
    ) -> Result<R, TargetError> {
        let mut lock_name = path.as_os_str().to_owned();
        lock_name.push(".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(lock_name))
            .map_err(|e| file_err(path, "open the lock file", e))?;
        lock.lock().map_err(|e| file_err(path, "lock", e))?;
        let mut state = match std::fs::read(path) {
            Ok(b) if !b.is_empty() => match serde_json::from_slice::<Value>(&b) {
                Ok(Value::Object(m)) => m,
                _ => return Err(file_err(path, "parse", "not a JSON object")),
            },
            Ok(_) => Map::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(e) => return Err(file_err(path, "read", e)),
        };
        land_due(&mut state);
        let out = f(&mut state);
        let mut tmp_name = path.as_os_str().to_owned();
        tmp_name.push(".tmp");
        let tmp = PathBuf::from(tmp_name);
        let bytes = serde_json::to_vec(&state).map_err(|e| file_err(path, "encode", e))?;
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            std::io::Write::write_all(&mut f, &bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| file_err(path, "write", e))?;
        Ok(out)
    }

    /// The landed effects recorded in the state file at `path`.
    pub fn landed_in(path: &Path) -> Result<Vec<Value>, TargetError> {
        Self::with_state(path, |s| {
            s.get("landed")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Set a fact in the state file at `path`.
    pub fn set_fact_in(path: &Path, key: &str, value: Value) -> Result<(), TargetError> {
        Self::with_state(path, |s| {
            let facts = s
                .entry("facts")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = facts {
                m.insert(key.to_owned(), value);
            }
        })
    }

    /// Queue faults (by [`Fault::parse`] name) in the state file at `path`.
    pub fn push_faults_in(path: &Path, faults: &[&str]) -> Result<(), TargetError> {
        Self::with_state(path, |s| {
            let q = s.entry("faults").or_insert_with(|| json!([]));
            if let Value::Array(a) = q {
                a.extend(faults.iter().map(|f| json!(f)));
            }
        })
    }
}

/// Wall-clock now in Unix ms (a [`FileTarget`] outlives processes, so it keeps wall time).
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Move every pending request of a [`FileTarget`] state whose time has come to `landed`.
fn land_due(state: &mut Map<String, Value>) {
    let now = wall_ms();
    let Some(Value::Array(pending)) = state.remove("pending") else {
        return;
    };
    let (due, later): (Vec<Value>, Vec<Value>) = pending.into_iter().partition(|p| {
        p.get("at_ms")
            .and_then(Value::as_u64)
            .is_some_and(|t| t <= now)
    });
    state.insert("pending".into(), Value::Array(later));
    if let Value::Array(landed) = state.entry("landed").or_insert_with(|| json!([])) {
        for mut p in due {
            if let Some(m) = p.as_object_mut() {
                m.remove("at_ms");
            }
            landed.push(p);
        }
    }
}

impl Target for FileTarget {
    fn capabilities(&self) -> Capabilities {
        caps(self.tier, self.queryable, None, Some(self.max_in_flight))
    }
    fn check_premises(
        &self,
        _effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        Self::with_state(&self.path, |s| {
            let facts = s
                .get("facts")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            premise_violations(premises, &facts)
        })
    }
    fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError> {
        if !self.apply_delay.is_zero() {
            std::thread::sleep(self.apply_delay);
        }
        let tier = self.tier;
        let answer = Self::with_state(&self.path, |s| {
            let calls = s.get("apply_calls").and_then(Value::as_u64).unwrap_or(0);
            s.insert("apply_calls".into(), json!(calls + 1));
            let fault = match s.get_mut("faults").and_then(Value::as_array_mut) {
                Some(q) if !q.is_empty() => {
                    Fault::parse(q.remove(0).as_str().unwrap_or("")).unwrap_or(Fault::Ok)
                }
                _ => Fault::Ok,
            };
            if let Fault::LandsLate(ms) = fault {
                let late = json!({"effect_id": effect_id, "effect": effect, "pid": std::process::id(), "at_ms": wall_ms().saturating_add(ms)});
                if let Value::Array(p) = s.entry("pending").or_insert_with(|| json!([])) {
                    p.push(late);
                }
                return fault.answer(Value::Null);
            }
            let landed = s.entry("landed").or_insert_with(|| json!([]));
            let Value::Array(landed) = landed else {
                return Err(TargetError::Unknown {
                    reason: "state file: `landed` is not an array".into(),
                });
            };
            let existing = landed
                .iter()
                .position(|l| l.get("effect_id").and_then(Value::as_str) == Some(effect_id));
            let n = match existing {
                Some(i) if tier == Tier::One => i,
                _ => {
                    if !fault.lands() {
                        return fault.answer(Value::Null);
                    }
                    landed.push(json!({"effect_id": effect_id, "effect": effect, "pid": std::process::id()}));
                    landed.len() - 1
                }
            };
            fault.answer(json!({"id": format!("obj_{n}"), "effect_id": effect_id}))
        })?;
        answer
    }
    fn query(&self, effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        Self::with_state(&self.path, |s| {
            s.get("landed").and_then(Value::as_array).and_then(|l| {
                l.iter()
                    .position(|x| x.get("effect_id").and_then(Value::as_str) == Some(effect_id))
                    .map(|n| json!({"id": format!("obj_{n}"), "effect_id": effect_id}))
            })
        })
    }
}

/// The advisory-lock namespace of a PostgreSQL journal kept in `schema`: the first key of its
/// two-key advisory locks, for tests that look at the locks a gate holds.
pub fn pg_journal_namespace(schema: &str) -> i32 {
    crate::pg::journal_namespace(schema)
}

/// The advisory-lock key of an effect's sections in a PostgreSQL journal kept in `schema`, for
/// tests that hold it from another session.
pub fn pg_effect_lock_key(schema: &str, effect_id: &str) -> i64 {
    crate::pg::effect_key(schema, effect_id)
}
