//! Interleavings the model checker (`model` crate) found, replayed against the real gate with a
//! fake clock. Each failed on the gate before its fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::MemLeases;
use interlock::{Capabilities, Gate, GateConfig, RecoveryOutcome, Status, Target, TargetError};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const START_MS: u64 = 1_800_000_000_000;
const BOUND_MS: u64 = 1_000;

/// A tier-2 service (no dedupe, lookup) whose first request is lost to its client and lands
/// 900 ms later — inside the declared 1 s bound — and whose lookups are slow: each answers
/// from the moment it was received, then takes 2 s to come back.
struct SlowLookup {
    clock: Arc<AtomicU64>,
    first_lands_at: AtomicU64,
    landed: AtomicUsize,
}

impl SlowLookup {
    fn landed(&self) -> usize {
        let now = self.clock.load(Ordering::SeqCst);
        let first = self.first_lands_at.load(Ordering::SeqCst);
        self.landed.load(Ordering::SeqCst) + usize::from(first != 0 && now >= first)
    }
}

impl Target for SlowLookup {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dedup: None,
            lookup: true,
            max_in_flight: Some(Duration::from_millis(BOUND_MS)),
        }
    }

    fn check_premises(&self, _: &str, _: &Value) -> Result<Vec<String>, TargetError> {
        Ok(Vec::new())
    }

    fn apply(&self, _: &str, _: &Value) -> Result<Value, TargetError> {
        let now = self.clock.load(Ordering::SeqCst);
        if self
            .first_lands_at
            .compare_exchange(0, now + 900, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Err(TargetError::Unknown {
                reason: "timeout".into(),
            });
        }
        self.landed.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"id": "re_2"}))
    }

    fn query(&self, _: &str, _: &Value) -> Result<Option<Value>, TargetError> {
        let found = self.landed() > 0;
        self.clock.fetch_add(2_000, Ordering::SeqCst);
        Ok(found.then(|| json!({"id": "re_1"})))
    }
}

/// The lookup is sent before the in-flight bound has passed and answers "not found"; the
/// request lands meanwhile; the lookup's answer arrives after the bound. That "not found" must
/// not be trusted: recovery looks again and finds the effect, and nothing is sent twice.
#[test]
fn a_not_found_from_a_lookup_sent_before_the_bound_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(START_MS));
    let target = Arc::new(SlowLookup {
        clock: clock.clone(),
        first_lands_at: AtomicU64::new(0),
        landed: AtomicUsize::new(0),
    });
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let mut gate = Gate::open(
        &dir.path().join("journal.jsonl"),
        target.clone(),
        leases,
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));

    let s = gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let mut outcome = None;
    for _ in 0..10 {
        match gate.recover_effect(&s.effect_id).unwrap() {
            Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                let now = clock.load(Ordering::SeqCst);
                clock.fetch_add(until_ms.saturating_sub(now).max(1), Ordering::SeqCst);
            }
            other => {
                outcome = other;
                break;
            }
        }
    }
    assert_eq!(target.landed(), 1, "sent twice");
    assert_eq!(
        outcome,
        Some(RecoveryOutcome::Resolved(Status::CommittedOnQuery))
    );
}
