//! From the gate review of "the gate hears 'in use'" (issue 35, item 2): once the service has said
//! a request under the key is still executing, recovery never gives the key up into a refusal.
//! Lost answers around an "in use" answer, and a rejection the service did not save under the
//! key, used to end the resends; recovery then trusted a "not found" and wrote REFUSED while the
//! held request landed later. Each test below failed that way before the fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemLeases, MemTarget};
use interlock::{
    Capabilities, Gate, GateConfig, RecoveryOutcome, SendDeadline, Status, Target, TargetError,
    Tier,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const START_MS: u64 = 1_800_000_000_000;

/// A [`MemTarget`] whose sends can lose their answer (the calls in `lost`: a 5 s client timeout,
/// outcome unknown) or be refused before the service's idempotency layer (the calls in
/// `rejected`: a 401 saved under no key). Calls count from 1 (the submit's send).
struct Lossy {
    inner: Arc<MemTarget>,
    clock: Arc<AtomicU64>,
    calls: AtomicUsize,
    lost: Vec<usize>,
    rejected: Vec<usize>,
}

impl Target for Lossy {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn check_premises(&self, eid: &str, p: &Value) -> Result<Vec<String>, TargetError> {
        self.inner.check_premises(eid, p)
    }
    fn apply(&self, eid: &str, e: &Value) -> Result<Value, TargetError> {
        self.inner.apply(eid, e)
    }
    fn apply_before(
        &self,
        eid: &str,
        e: &Value,
        d: &str,
        deadline: SendDeadline,
    ) -> Result<Value, TargetError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.lost.contains(&n) {
            self.clock.fetch_add(5_000, Ordering::SeqCst);
            return Err(TargetError::Unknown {
                reason: "timed out after 5000 ms (outcome unknown)".into(),
            });
        }
        if self.rejected.contains(&n) {
            return Err(TargetError::Rejected {
                reason: "HTTP 401 authentication_error (not saved under the key)".into(),
            });
        }
        self.inner.apply_before(eid, e, d, deadline)
    }
    fn query(&self, eid: &str, e: &Value) -> Result<Option<Value>, TargetError> {
        self.inner.query(eid, e)
    }
}

type LossyGate = Gate<Arc<Lossy>, Arc<MemLeases>>;

/// Tier 1 with a lookup and a 5.5 s in-flight bound; every send takes 5 s of the shared clock
/// (the client's timeout); the submit's request is held at the service for `held_ms`.
fn world(
    held_ms: u64,
    lost: Vec<usize>,
    rejected: Vec<usize>,
) -> (LossyGate, Arc<Lossy>, Arc<AtomicU64>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(START_MS));
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let c = clock.clone();
    let inner = Arc::new(
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_millis(5_500))
            .with_clock(clock.clone())
            .with_apply_hook(Box::new(move |_| {
                c.fetch_add(5_000, Ordering::SeqCst);
            })),
    );
    inner.set_fact("incident_compensation", json!(0));
    inner.push_faults([Fault::LandsLate(held_ms)]);
    let target = Arc::new(Lossy {
        inner,
        clock: clock.clone(),
        calls: AtomicUsize::new(0),
        lost,
        rejected,
    });
    let mut gate = Gate::open_at(
        &store_at(dir.path()),
        target.clone(),
        leases,
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
    (gate, target, clock, dir)
}

/// Recover until the effect resolves, moving the shared clock to each stated instant.
fn recover_until_resolved(gate: &LossyGate, clock: &AtomicU64, eid: &str) -> Status {
    for _ in 0..200 {
        match gate.recover_effect(eid).unwrap() {
            Some(RecoveryOutcome::Resolved(s)) => return s,
            Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                let now = clock.load(Ordering::SeqCst);
                clock.fetch_add(until_ms.saturating_sub(now).max(1), Ordering::SeqCst);
            }
            None => return gate.status(eid).unwrap().unwrap(),
        }
    }
    panic!("never resolved")
}

/// Runs the effect to its end and checks what a reader of the receipt is promised: the answer
/// agrees with the service once the held request has ended, and the receipt verifies.
fn run(lost: Vec<usize>, rejected: Vec<usize>) -> (Status, Value) {
    let (gate, target, clock, _dir) = world(60_000, lost, rejected);
    let s = gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let status = recover_until_resolved(&gate, &clock, &s.effect_id);
    let last = gate.entries(&s.effect_id).unwrap().last().cloned().unwrap();
    let pinned = verify::receipt::KeyCheck::Pinned(key().verifying_key());
    let report = verify::receipt::verify_bundle(&gate.receipt(&s.effect_id).unwrap(), &pinned);
    assert!(report.valid, "{:?}", report.problems);
    // Long after the hold: whatever the service holds now is final.
    clock.fetch_add(120_000, Ordering::SeqCst);
    let landed = target.inner.landed(&s.effect_id);
    assert!(
        !matches!(status, Status::Refused(_)),
        "{status} after the service said 'in use' (the held request: {landed} landing(s)); {last}"
    );
    if status.is_committed() {
        assert_eq!(landed, 1, "{status}");
    }
    (status, last)
}

/// Resends answered: lost, "in use", lost, lost. The unknown answers are not three in a row: the
/// key is asked until the held request's own answer comes back.
#[test]
fn lost_answers_around_an_in_use_answer_do_not_end_the_resends() {
    let (status, last) = run(vec![2, 4, 5], vec![]);
    assert_eq!(status, Status::CommittedByRetry, "{last}");
    let answers = last["resend_answers"]["answers"].as_array().unwrap();
    assert!(answers.iter().any(|a| a["answer"] == "in_use"), "{last}");
}

/// Resends answered "in use", "in use", then a 401 saved under no key: the rejection says
/// nothing of the held request, so the key is asked again.
#[test]
fn an_unsaved_rejection_after_in_use_answers_does_not_end_the_resends() {
    let (status, last) = run(vec![], vec![4]);
    assert_eq!(status, Status::CommittedByRetry, "{last}");
}

/// "In use", then every answer lost for long enough to end the resends: a lookup does not find
/// the effect (the request is still held), and the gate answers AMBIGUOUS, naming why, instead
/// of a refusal the held request would contradict.
#[test]
fn in_use_then_silence_is_ambiguous_never_a_refusal() {
    let (status, last) = run(vec![2, 4, 5, 6], vec![]);
    assert_eq!(status, Status::Ambiguous, "{last}");
    assert!(
        last["reason"].as_str().unwrap().contains("still executing"),
        "{last}"
    );
}

/// The refusal at recovery names what the service said last (Deliver 2: "every refusal's
/// reason names what the service said"): a saved failure replayed under the key.
#[test]
fn a_refusal_at_recovery_names_the_services_last_answer() {
    let dir = tempfile::tempdir().unwrap();
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let target =
        Arc::new(MemTarget::new(Tier::One, true).with_max_in_flight(Duration::from_millis(1)));
    target.set_fact("incident_compensation", json!(0));
    target.push_faults([Fault::FailsSaved]);
    let gate = Gate::open_at(
        &store_at(dir.path()),
        target.clone(),
        leases,
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let s = gate.submit(&proposal(1000)).unwrap();
    let status = loop {
        match gate.recover_effect(&s.effect_id).unwrap() {
            Some(RecoveryOutcome::Resolved(st)) => break st,
            Some(RecoveryOutcome::Blocked { .. }) => std::thread::sleep(Duration::from_millis(5)),
            None => break gate.status(&s.effect_id).unwrap().unwrap(),
        }
    };
    let last = gate.entries(&s.effect_id).unwrap().last().cloned().unwrap();
    if status.as_str() == "REFUSED:target_failed_at_recovery" {
        let reason = last["reason"].as_str().unwrap();
        assert!(
            reason.contains("The service's last answer to a resend (replayed)"),
            "{reason}"
        );
        // The refusal lists the answers it rests on.
        let answers = last["resend_answers"]["answers"].as_array().unwrap();
        assert!(answers.iter().any(|a| a["answer"] == "replayed"), "{last}");
    } else {
        panic!("expected a refusal after a replayed failure, got {status}: {last}");
    }
}
