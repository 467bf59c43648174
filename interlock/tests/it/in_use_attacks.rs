//! From the second gate review of "the gate, told 'in use', never refuses" (issue 35, item 2),
//! against a target that keeps each key for a window, holds the first request under a key, and
//! answers a resend under the key "in use" while it is held:
//! - A: a recoverer that took over after the one that was told "in use" refused (the claim
//!   record now carries that it was told);
//! - B, C, D: "in use", then the key past the dedup window (recovery goes on as tier 2): a
//!   revocation during the trusted lookup refused, a reapply landed beside the held request, a
//!   reapply answered 401 refused (recovery now answers AMBIGUOUS after "not found" once told);
//! - E: "in use", then a revoked lease at tier 1 is AMBIGUOUS.
//!
//! A to D failed before their fix; E kills a mutant of the rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::MemLeases;
use interlock::{
    Capabilities, Gate, GateConfig, RecoveryOutcome, SendDeadline, Status, Target, TargetError,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const START_MS: u64 = 1_800_000_000_000;
const BOUND_MS: u64 = 5_500;

/// What happens to one send on its way to the service.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Net {
    Through,
    Lost,
    Unauthorized,
}

#[derive(Default)]
struct Service {
    keys: Vec<(String, u64)>,
    held: Vec<(String, u64)>,
    landed: Vec<String>,
    last_in_use: Option<u64>,
    calls: usize,
}

type NetRule = Box<dyn FnMut(usize, u64) -> Net + Send>;
type QueryHook = Box<dyn FnMut(u64, Option<u64>) + Send>;

/// Keys kept for `window`; the first request under a key held for `held_ms` (its client gives
/// up after 5 s); a resend under a live key answered "in use" while it is held.
struct Keyed {
    clock: Arc<AtomicU64>,
    window: Duration,
    held_ms: u64,
    service: Mutex<Service>,
    net: Mutex<NetRule>,
    on_query: Mutex<QueryHook>,
}

impl Keyed {
    fn now(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    fn settle(&self, s: &mut Service) {
        let now = self.now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut s.held)
            .into_iter()
            .partition(|(_, at)| *at <= now);
        s.held = later;
        s.landed.extend(due.into_iter().map(|(e, _)| e));
    }

    fn landed(&self, eid: &str) -> usize {
        let mut s = self.service.lock().unwrap();
        self.settle(&mut s);
        s.landed.iter().filter(|e| *e == eid).count()
    }

    fn send(&self, eid: &str) -> Result<Value, TargetError> {
        let n = {
            let mut s = self.service.lock().unwrap();
            s.calls += 1;
            s.calls
        };
        match (self.net.lock().unwrap())(n, self.now()) {
            Net::Lost => {
                self.clock.fetch_add(5_000, Ordering::SeqCst);
                return Err(TargetError::Unknown {
                    reason: "timed out after 5000 ms (outcome unknown)".into(),
                });
            }
            Net::Unauthorized => {
                return Err(TargetError::Rejected {
                    reason: "HTTP 401 authentication_error (not saved under the key)".into(),
                })
            }
            Net::Through => {}
        }
        let now = self.now();
        let mut s = self.service.lock().unwrap();
        self.settle(&mut s);
        let window = u64::try_from(self.window.as_millis()).unwrap();
        let live = s
            .keys
            .iter()
            .any(|(k, at)| k == eid && now.saturating_sub(*at) < window);
        if live {
            if s.held.iter().any(|(e, _)| e == eid) {
                s.last_in_use = Some(now);
                return Err(TargetError::InFlight {
                    reason: "HTTP 409 idempotency_key_in_use".into(),
                });
            }
            if s.landed.iter().any(|e| e == eid) {
                return Ok(json!({"id": "obj", "effect_id": eid}));
            }
        }
        let first = !s.keys.iter().any(|(k, _)| k == eid);
        s.keys.retain(|(k, _)| k != eid);
        s.keys.push((eid.to_owned(), now));
        if first {
            s.held.push((eid.to_owned(), now + self.held_ms));
            drop(s);
            self.clock.fetch_add(5_000, Ordering::SeqCst);
            return Err(TargetError::Unknown {
                reason: "timed out after 5000 ms (outcome unknown)".into(),
            });
        }
        s.landed.push(eid.to_owned());
        Ok(json!({"id": "obj2", "effect_id": eid}))
    }
}

impl Target for Keyed {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dedup: Some(Some(self.window)),
            lookup: true,
            max_in_flight: Some(Duration::from_millis(BOUND_MS)),
        }
    }
    fn check_premises(&self, _eid: &str, _p: &Value) -> Result<Vec<String>, TargetError> {
        Ok(vec![])
    }
    fn apply(&self, eid: &str, _e: &Value) -> Result<Value, TargetError> {
        self.send(eid)
    }
    fn apply_before(
        &self,
        eid: &str,
        _e: &Value,
        _d: &str,
        deadline: SendDeadline,
    ) -> Result<Value, TargetError> {
        deadline.check()?;
        self.send(eid)
    }
    fn query(&self, eid: &str, _e: &Value) -> Result<Option<Value>, TargetError> {
        let (now, last) = {
            let mut s = self.service.lock().unwrap();
            self.settle(&mut s);
            (self.now(), s.last_in_use)
        };
        (self.on_query.lock().unwrap())(now, last);
        let mut s = self.service.lock().unwrap();
        self.settle(&mut s);
        Ok(s.landed
            .iter()
            .any(|e| e == eid)
            .then(|| json!({"id": "obj", "effect_id": eid})))
    }
}

type KeyedGate = Gate<Arc<Keyed>, Arc<MemLeases>>;

struct World {
    /// Kept for the file store's journal; `location` is in it (or a schema of the test database).
    _dir: tempfile::TempDir,
    /// One journal for every gate process of the world (each call of `store_at` is a fresh one).
    location: interlock::Location,
    clock: Arc<AtomicU64>,
    target: Arc<Keyed>,
    leases: Arc<MemLeases>,
    config: GateConfig,
}

fn world(window: Duration, margin: Duration, held_ms: u64) -> World {
    let clock = Arc::new(AtomicU64::new(START_MS));
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let target = Arc::new(Keyed {
        clock: clock.clone(),
        window,
        held_ms,
        service: Mutex::new(Service::default()),
        net: Mutex::new(Box::new(|_, _| Net::Through)),
        on_query: Mutex::new(Box::new(|_, _| {})),
    });
    let config = GateConfig {
        dedup_margin: margin,
        ..GateConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    World {
        location: store_at(dir.path()),
        _dir: dir,
        clock,
        target,
        leases,
        config,
    }
}

impl World {
    /// A gate process on the shared journal and clock (a new one stands for a restart).
    fn gate(&self) -> KeyedGate {
        let mut g = Gate::open_at(
            &self.location,
            self.target.clone(),
            self.leases.clone(),
            key(),
            self.config.clone(),
        )
        .unwrap();
        let c = self.clock.clone();
        g.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
        g
    }

    fn recover_until_resolved(&self, gate: &KeyedGate, eid: &str) -> Status {
        for _ in 0..400 {
            match gate.recover_effect(eid).unwrap() {
                Some(RecoveryOutcome::Resolved(s)) => return s,
                Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                    let now = self.clock.load(Ordering::SeqCst);
                    self.clock
                        .fetch_add(until_ms.saturating_sub(now).max(1), Ordering::SeqCst);
                }
                None => return gate.status(eid).unwrap().unwrap(),
            }
        }
        panic!("never resolved")
    }

    /// The final answer, checked: never a refusal, never two landings, and a receipt that
    /// verifies under the pinned key.
    fn finish(&self, gate: &KeyedGate, eid: &str) -> (Status, Value) {
        let status = self.recover_until_resolved(gate, eid);
        let last = gate.entries(eid).unwrap().last().cloned().unwrap();
        let pinned = verify::receipt::KeyCheck::Pinned(key().verifying_key());
        let report = verify::receipt::verify_bundle(&gate.receipt(eid).unwrap(), &pinned);
        assert!(report.valid, "{:?}\n{last}", report.problems);
        self.clock.fetch_add(300_000, Ordering::SeqCst);
        let landed = self.target.landed(eid);
        assert!(
            !matches!(status, Status::Refused(_)),
            "{status} after the service said 'in use' (landed {landed})\n{last}"
        );
        assert!(landed <= 1, "{status}: landed {landed} times\n{last}");
        (status, last)
    }
}

#[test]
fn a_recoverer_after_the_one_told_in_use_does_not_refuse() {
    let w = world(
        Duration::from_secs(86_400),
        Duration::from_secs(600),
        120_000,
    );
    let eid = {
        let first = w.gate();
        let s = first.submit(&proposal(1000)).unwrap();
        assert_eq!(s.status, Status::InFlight);
        let r = first.recover_effect(&s.effect_id).unwrap();
        assert!(matches!(r, Some(RecoveryOutcome::Blocked { .. })), "{r:?}");
        assert!(w.target.service.lock().unwrap().last_in_use.is_some());
        s.effect_id
    };
    // The first process ends; the next one's resends are all lost.
    *w.target.net.lock().unwrap() = Box::new(|_, _| Net::Lost);
    let second = w.gate();
    let (status, last) = w.finish(&second, &eid);
    assert_eq!(status, Status::Ambiguous, "{last}");
}

#[test]
fn in_use_then_past_the_dedup_window_a_revocation_during_the_lookup_is_ambiguous() {
    let w = world(Duration::from_secs(20), Duration::from_secs(1), 120_000);
    let leases = w.leases.clone();
    *w.target.on_query.lock().unwrap() = Box::new(move |now, last| {
        if last.is_some_and(|t| now >= t + BOUND_MS) {
            leases.revoke(&json!("lease-1"));
        }
    });
    let g = w.gate();
    let s = g.submit(&proposal(1000)).unwrap();
    let (status, last) = w.finish(&g, &s.effect_id);
    assert_eq!(status, Status::Ambiguous, "{last}");
}

#[test]
fn in_use_then_past_the_dedup_window_nothing_is_reapplied() {
    let w = world(Duration::from_secs(20), Duration::from_secs(1), 120_000);
    let g = w.gate();
    let s = g.submit(&proposal(1000)).unwrap();
    let (status, last) = w.finish(&g, &s.effect_id);
    assert_eq!(status, Status::Ambiguous, "{last}");
}

#[test]
fn in_use_then_past_the_dedup_window_an_unsaved_401_is_no_refusal() {
    let w = world(Duration::from_secs(20), Duration::from_secs(1), 120_000);
    *w.target.net.lock().unwrap() = Box::new(|_, now| {
        if now > START_MS + 20_000 {
            Net::Unauthorized
        } else {
            Net::Through
        }
    });
    let g = w.gate();
    let s = g.submit(&proposal(1000)).unwrap();
    w.finish(&g, &s.effect_id);
}

#[test]
fn in_use_then_a_revoked_lease_at_tier_one_is_ambiguous() {
    let w = world(
        Duration::from_secs(86_400),
        Duration::from_secs(600),
        120_000,
    );
    let g = w.gate();
    let s = g.submit(&proposal(1000)).unwrap();
    let r = g.recover_effect(&s.effect_id).unwrap();
    assert!(matches!(r, Some(RecoveryOutcome::Blocked { .. })), "{r:?}");
    w.leases.revoke(&json!("lease-1"));
    let (status, last) = w.finish(&g, &s.effect_id);
    assert_eq!(status, Status::Ambiguous, "{last}");
}
