//! [`MemTarget`]: an in-memory target of any tier with injectable faults.

use super::{caps, premise_violations, replayed_error, Fault};
use crate::target::{Capabilities, SendDeadline, Target, TargetError, Tier};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

type ApplyHook = Box<dyn Fn(&str) + Send + Sync>;
type PremiseHook = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct MemState {
    /// Every request that landed, in order (an effect once per landing).
    landed: Vec<(String, Value)>,
    /// Where each effect first landed in `landed` (the object a lookup finds): a send and a
    /// lookup find it without a scan of every landing (benchmarks land tens of thousands).
    first_landed: HashMap<String, usize>,
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
    /// Land `effect` of `effect_id`: its place in `landed`.
    fn land(&mut self, effect_id: String, effect: Value) -> usize {
        let n = self.landed.len();
        self.first_landed.entry(effect_id.clone()).or_insert(n);
        self.landed.push((effect_id, effect));
        n
    }

    /// Land every pending request whose time has come.
    fn settle(&mut self, now: u64) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(_, _, at)| *at <= now);
        self.pending = later;
        for (eid, effect, _) in due {
            self.land(eid, effect);
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
            .first_landed
            .get(effect_id)
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
                return Err(TargetError::InFlight {
                    reason: "a request with this idempotency key is in progress".into(),
                });
            }
            if st.saved_errors.iter().any(|e| e == effect_id) {
                return Err(replayed_error(true));
            }
        }
        let existing = st.first_landed.get(effect_id).copied();
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
                st.land(effect_id.to_owned(), effect.clone())
            }
        };
        fault.answer(json!({"id": format!("obj_{n}"), "effect_id": effect_id}))
    }
}
