//! Property tests: random sequences of submits, recoveries, faults (rejected, lost, landed but
//! lost, rejected but landed, landing after the client gave up — inside and beyond the target's
//! declared in-flight bound —, a saved error replayed under the key, failing lookups), premise
//! changes, lease revocations (also while a premise check runs) and clock jumps, for every tier.
//! After every step the attacked invariants hold. 2,500 cases per tier: 10,000 in all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemLeases, MemTarget};
use interlock::{Gate, GateConfig, Proposal, RecoveryOutcome, Tier};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    Submit {
        request: u8,
        amount: u8,
        lease: u8,
        premise: u8,
    },
    Recover,
    SetFact(u8),
    Revoke(u8),
    Grant(u8),
    Faults(Vec<Fault>),
    FailQueries(u8),
    Advance(u64),
    /// The next premise check revokes this lease while it runs.
    RevokeDuringPremiseCheck(u8),
}

/// The target's declared in-flight bound in these tests.
const BOUND_MS: u64 = 1_000;

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        6 => prop::sample::select(Fault::ALL.to_vec()),
        // Lands after the client gave up: inside the declared bound ...
        2 => (0..=BOUND_MS).prop_map(Fault::LandsLate),
        // ... and beyond it (the gate may then be wrong, but must say what it assumed).
        1 => (BOUND_MS + 1..4 * BOUND_MS).prop_map(Fault::LandsLate),
        1 => Just(Fault::FailsSaved),
        1 => Just(Fault::LandsThenFailsSaved),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2u8, 0..2u8, 0..2u8, 0..2u8).prop_map(|(request, amount, lease, premise)| Op::Submit { request, amount, lease, premise }),
        3 => Just(Op::Recover),
        1 => (0..2u8).prop_map(Op::SetFact),
        1 => (0..2u8).prop_map(Op::Revoke),
        1 => (0..2u8).prop_map(Op::Grant),
        3 => prop::collection::vec(fault(), 1..4).prop_map(Op::Faults),
        1 => (1..3u8).prop_map(Op::FailQueries),
        2 => prop_oneof![0..3_000u64, Just(2 * 86_400_000u64)].prop_map(Op::Advance),
        1 => (0..2u8).prop_map(Op::RevokeDuringPremiseCheck),
    ]
}

fn lease(n: u8) -> Value {
    json!(format!("lease-{n}"))
}

/// A temporary directory in memory where the machine has one (fsync there is cheap; the
/// properties are about the protocol, the crash suites are about the disk).
fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

fn run(tier: Tier, queryable: bool, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = scratch_dir();
    let at = store_at(dir.path());
    // I1: every apply finds a durable, open DISPATCHED of its effect in the store.
    let violations: Arc<Mutex<Vec<String>>> = Arc::default();
    let (p2, v2) = (at.clone(), violations.clone());
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
    let leases = Arc::new(MemLeases::new());
    let revoke_next: Arc<Mutex<Option<u8>>> = Arc::default();
    let (l2, r2) = (leases.clone(), revoke_next.clone());
    let target = MemTarget::new(tier, queryable)
        .with_dedup_window(Some(Duration::from_secs(86_400)))
        .with_max_in_flight(Duration::from_millis(BOUND_MS))
        .with_clock(clock.clone())
        .with_premise_hook(Box::new(move || {
            if let Some(l) = r2.lock().unwrap().take() {
                l2.revoke(&lease(l));
            }
        }))
        .with_apply_hook(Box::new(move |eid| {
            let mut open = false;
            for e in read_store(&p2) {
                if e["effect_id"] != json!(eid) {
                    continue;
                }
                match e["kind"].as_str().unwrap() {
                    "DISPATCHED" => open = true,
                    "COMMITTED" | "AMBIGUOUS" => open = false,
                    "REFUSED" if e["resolves"] == json!(true) => open = false,
                    _ => {}
                }
            }
            if !open {
                v2.lock()
                    .unwrap()
                    .push(format!("apply of {eid} without an open DISPATCHED"));
            }
        }));
    target.set_fact("incident_compensation", json!(0));
    let target = Arc::new(target);
    leases.grant(&lease(0));
    leases.grant(&lease(1));
    let mut gate = Gate::open_at(
        &at,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));

    let check = |gate: &Gate<Arc<MemTarget>, Arc<MemLeases>>,
                 signatures: bool|
     -> Result<(), TestCaseError> {
        prop_assert!(
            violations.lock().unwrap().is_empty(),
            "{:?}",
            violations.lock().unwrap()
        );
        for eid in gate.effect_ids().unwrap() {
            let entries = gate.entries(&eid).unwrap();
            let ks = kinds(&entries);
            prop_assert_eq!(ks.first().map(String::as_str), Some("PROPOSED"));
            let commits = ks.iter().filter(|k| *k == "COMMITTED").count();
            prop_assert!(commits <= 1, "two COMMITTED: {:?}", ks);
            // Every decision that rests on a "not found" names the bound it assumed.
            for e in &entries {
                let reapplied = e["via"] == json!("recovery-reapply");
                let refused_on_lookup = e["kind"] == json!("REFUSED")
                    && e["code"]
                        .as_str()
                        .is_some_and(|c| c.ends_with("_at_recovery"));
                if reapplied || refused_on_lookup {
                    prop_assert_eq!(&e["assumed_max_in_flight_ms"], &json!(BOUND_MS), "{:?}", e);
                    prop_assert!(e["counted_from_ms"].is_u64(), "{:?}", e);
                }
            }
            // Beyond the declared bound the gate may be wrong; everything else must hold.
            if !target.landed_beyond_bound(&eid) {
                // At most one effect at the target, whatever the tier and the faults.
                prop_assert!(
                    target.landed(&eid) + target.pending_for(&eid) <= 1,
                    "landed {} times ({} pending): {:?}",
                    target.landed(&eid),
                    target.pending_for(&eid),
                    ks
                );
                if commits == 1 {
                    prop_assert_eq!(
                        target.landed(&eid),
                        1,
                        "COMMITTED but nothing landed: {:?}",
                        ks
                    );
                }
                // A REFUSED effect never lands later — except a rejection the service lied
                // about ("rejected" but landed) at a target that cannot be looked up: no
                // gate can see that.
                let refusal = interlock::status_of(&entries).and_then(|s| s.refusal());
                let undetectable_lie = !queryable
                    && entries.iter().any(|e| {
                        e["kind"] == json!("REFUSED") && e["code"] == json!("target_error")
                    });
                if refusal.is_some() && !undetectable_lie {
                    prop_assert_eq!(
                        target.landed(&eid) + target.pending_for(&eid),
                        0,
                        "REFUSED but it landed or still may: {:?}",
                        ks
                    );
                }
            }
            // No DISPATCHED while one is open; each follows checks that held (I3, I4).
            let mut open = false;
            for e in &entries {
                match e["kind"].as_str().unwrap() {
                    "DISPATCHED" => {
                        prop_assert!(!open, "DISPATCHED while one is open: {:?}", ks);
                        prop_assert_eq!(&e["checks"]["lease_live"], &json!(true));
                        prop_assert_eq!(&e["checks"]["violations"], &json!([]));
                        open = true;
                    }
                    "COMMITTED" | "AMBIGUOUS" => {
                        prop_assert!(open, "{} without an open dispatch: {:?}", e["kind"], ks);
                        open = false;
                    }
                    "REFUSED" if e["resolves"] == json!(true) => {
                        prop_assert!(open, "resolving REFUSED without an open dispatch: {:?}", ks);
                        open = false;
                    }
                    _ => {}
                }
            }
            if signatures {
                // The receipt checker of the `verify` crate agrees (DESIGN §3.3).
                let bundle = gate.receipt(&eid).unwrap();
                let report = verify::receipt::verify_bundle(
                    &bundle,
                    &verify::receipt::KeyCheck::Pinned(key().verifying_key()),
                );
                prop_assert!(
                    report.valid,
                    "verify rejects {:?}: {:?}",
                    ks,
                    report.problems
                );
                prop_assert_eq!(report.signed, Some(true));
                if report.happened == verify::receipt::Happened::Yes
                    && !target.landed_beyond_bound(&eid)
                {
                    prop_assert_eq!(target.landed(&eid), 1);
                }
            }
            // I5: every DISPATCHED carries the payload of the first PROPOSED.
            for e in entries.iter().filter(|e| e["kind"] == "DISPATCHED") {
                prop_assert_eq!(&e["effect"], &entries[0]["effect"]);
            }
        }
        Ok(())
    };

    for op in ops {
        match op {
            Op::Submit {
                request,
                amount,
                lease: l,
                premise,
            } => {
                let p = Proposal {
                    agent: "agent".into(),
                    lease: lease(l),
                    premises: json!({"incident_compensation": premise}),
                    effect: json!({"amount": 1000 + i64::from(amount), "customer": "cus_1"}),
                    request_id: Some(format!("req-{request}")),
                    budget: None,
                };
                let before = gate.entries(&interlock::effect_id(&p)).unwrap().len();
                let r = gate.submit(&p).unwrap();
                let after = gate.entries(&r.effect_id).unwrap();
                // Short-circuits write nothing; everything else leaves a record.
                if after.len() == before {
                    prop_assert!(
                        ["IN_FLIGHT", "AMBIGUOUS", "DUPLICATE_IGNORED"]
                            .contains(&r.status.as_str()),
                        "{} wrote nothing",
                        r.status
                    );
                }
            }
            Op::Recover => {
                let open: BTreeSet<String> = gate.open_effects().unwrap().into_iter().collect();
                let rec = gate.recover().unwrap();
                let reported: BTreeSet<String> = rec.iter().map(|r| r.effect_id.clone()).collect();
                // P: every open effect is reported, resolved or blocked; never skipped.
                prop_assert_eq!(&open, &reported);
                for r in &rec {
                    if let RecoveryOutcome::Blocked { until_ms, .. } = r.outcome {
                        prop_assert!(until_ms >= clock.load(Ordering::SeqCst));
                    }
                }
            }
            Op::SetFact(v) => target.set_fact("incident_compensation", json!(v)),
            Op::Revoke(l) => leases.revoke(&lease(l)),
            Op::Grant(l) => leases.grant(&lease(l)),
            Op::Faults(f) => target.push_faults(f),
            Op::FailQueries(n) => target.fail_queries(usize::from(n)),
            Op::RevokeDuringPremiseCheck(l) => *revoke_next.lock().unwrap() = Some(l),
            Op::Advance(ms) => {
                clock.fetch_add(ms, Ordering::SeqCst);
            }
        }
        check(&gate, false)?;
    }
    // P: with the faults gone, recovery settles everything, each wait at an instant it named
    // (no livelock: a bounded number of rounds).
    target.clear_faults();
    for _ in 0..20 {
        let rec = gate.recover().unwrap();
        let Some(wake) = rec
            .iter()
            .filter_map(|r| match r.outcome {
                RecoveryOutcome::Blocked { until_ms, .. } => Some(until_ms),
                RecoveryOutcome::Resolved(_) => None,
            })
            .max()
        else {
            break;
        };
        let now = clock.load(Ordering::SeqCst);
        clock.store(wake.max(now + 1), Ordering::SeqCst);
    }
    prop_assert!(
        gate.open_effects().unwrap().is_empty(),
        "left open: {:?}",
        gate.recover().unwrap()
    );
    // Let every late request land, then check the journal against the service.
    clock.fetch_add(4 * BOUND_MS, Ordering::SeqCst);
    check(&gate, true)?;
    Ok(())
}

proptest! {
    // 2,500 cases per tier against the file; a tenth against PostgreSQL, where every case
    // creates its own schema.
    #![proptest_config(ProptestConfig {
        cases: if on_postgres() { 250 } else { 2_500 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn tier_one_queryable(ops in prop::collection::vec(op(), 1..20)) {
        run(Tier::One, true, ops)?;
    }

    #[test]
    fn tier_one_not_queryable(ops in prop::collection::vec(op(), 1..20)) {
        run(Tier::One, false, ops)?;
    }

    #[test]
    fn tier_two(ops in prop::collection::vec(op(), 1..20)) {
        run(Tier::Two, true, ops)?;
    }

    #[test]
    fn tier_three(ops in prop::collection::vec(op(), 1..20)) {
        run(Tier::Three, false, ops)?;
    }
}
