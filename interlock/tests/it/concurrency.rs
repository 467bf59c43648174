//! Many writers at once (DESIGN §2.7): threads sharing one gate (the file store's group commit)
//! and gates of their own; every chain stays linear, every effect is sent once, and an append
//! returns only once its line is in the store. On both stores (`INTERLOCK_TEST_STORE=postgres`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::journal::{read_all, Journal};
use interlock::testing::MemTarget;
use interlock::{Gate, GateConfig, Proposal, Status, Tier};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::Duration;
use verify::entry::Kind;

fn numbered(w: usize, n: usize) -> Proposal {
    Proposal {
        request_id: Some(format!("w{w}-n{n}")),
        effect: json!({"amount": 100, "customer": "cus_1", "w": w, "n": n}),
        ..proposal(100)
    }
}

/// Group the store's entries by effect, in store order.
fn by_effect(entries: &[Value]) -> HashMap<String, Vec<Value>> {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    for e in entries {
        let eid = e["effect_id"].as_str().unwrap().to_owned();
        out.entry(eid).or_default().push(e.clone());
    }
    out
}

#[test]
fn sixteen_threads_sharing_one_gate_commit_every_effect_once_on_linear_chains() {
    let s = setup(Tier::One, true);
    let (writers, each) = (16, 6);
    let statuses: Vec<Status> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let gate = &s.gate;
                scope.spawn(move || {
                    (0..each)
                        .map(|n| gate.submit(&numbered(w, n)).unwrap().status)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        statuses.iter().all(|s| *s == Status::Committed),
        "{statuses:?}"
    );
    assert_eq!(s.target.landed_total(), writers * each);
    let effects = by_effect(&read_store(&store_at_of(&s)));
    assert_eq!(effects.len(), writers * each);
    for (eid, entries) in &effects {
        assert_eq!(
            kinds(entries),
            ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"],
            "{eid}"
        );
        assert_chain(entries);
        assert_eq!(s.target.landed(eid), 1, "{eid}");
    }
}

/// The location the setup's gate writes to.
fn store_at_of(s: &Setup) -> interlock::Location {
    interlock::Location::parse(&s.gate.journal_path().to_string_lossy())
}

#[test]
fn threads_racing_one_proposal_through_one_gate_send_it_once() {
    let s = setup(Tier::One, true);
    let statuses: Vec<Status> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let gate = &s.gate;
                scope.spawn(move || gate.submit(&proposal(1000)).unwrap().status)
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let committed = statuses.iter().filter(|s| **s == Status::Committed).count();
    assert_eq!(committed, 1, "{statuses:?}");
    assert_eq!(s.target.landed_total(), 1);
    let entries = read_store(&store_at_of(&s));
    assert_chain(&entries);
    let dispatched = entries.iter().filter(|e| e["kind"] == "DISPATCHED").count();
    assert_eq!(dispatched, 1);
}

/// What a submit racing another on the same effect may answer.
fn settled_or_in_flight(st: &Status) -> bool {
    matches!(
        st,
        Status::Committed | Status::DuplicateIgnored | Status::InFlight
    )
}

#[test]
fn threads_of_one_gate_and_gates_of_their_own_interleave_without_forking_a_chain() {
    let s = setup(Tier::One, true);
    let at = store_at_of(&s);
    let others: Vec<MemGate> = (0..3)
        .map(|_| {
            Gate::open_at(
                &at,
                s.target.clone(),
                s.leases.clone(),
                key(),
                GateConfig::default(),
            )
            .unwrap()
        })
        .collect();
    std::thread::scope(|scope| {
        for w in 0..6 {
            let gate = &s.gate;
            scope.spawn(move || {
                for n in 0..4 {
                    let st = gate.submit(&numbered(w, n)).unwrap().status;
                    assert!(settled_or_in_flight(&st), "{st:?}");
                }
            });
        }
        for (i, gate) in others.iter().enumerate() {
            scope.spawn(move || {
                for n in 0..4 {
                    // Each gate of its own races one shared gate's thread on the same effect.
                    let st = gate.submit(&numbered(i, n)).unwrap().status;
                    assert!(settled_or_in_flight(&st), "{st:?}");
                }
            });
        }
    });
    let effects = by_effect(&read_store(&at));
    assert_eq!(effects.len(), 24);
    for (eid, entries) in &effects {
        assert_chain(entries);
        assert_eq!(s.target.landed(eid), 1, "{eid}");
        let dispatched = entries.iter().filter(|e| e["kind"] == "DISPATCHED").count();
        assert_eq!(dispatched, 1, "{eid}");
    }
    // A fresh gate re-reads and re-checks every entry (and, on the file, every mark).
    let fresh = Gate::open_at(
        &at,
        MemTarget::new(Tier::One, true),
        s.leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    assert_eq!(fresh.effect_ids().unwrap().len(), 24);
    assert!(fresh.open_effects().unwrap().is_empty());
}

fn fields(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn a_line_is_in_the_file_when_its_append_returns_while_other_threads_append() {
    if file_only("a_line_is_in_the_file_when_its_append_returns_while_other_threads_append") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let journal =
        Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(30)).unwrap();
    std::thread::scope(|scope| {
        for w in 0..12 {
            let (journal, path) = (&journal, &path);
            scope.spawn(move || {
                for n in 0..5 {
                    let eid = format!("effect-{w}-{n}");
                    let proposed = json!({"agent": "a", "lease": "l", "premises": {}, "effect": {"w": w, "n": n}});
                    let p = journal
                        .append_entry(&eid, Kind::Proposed, fields(proposed), 1, &key())
                        .unwrap();
                    let a = journal
                        .append_entry(&eid, Kind::Authorized, fields(json!({"lease": "l"})), 2, &key())
                        .unwrap();
                    assert_eq!(a["prev"], p["hash"]);
                    // Read through the file, not the handle: the line was written before the
                    // append returned (and fsynced by the group commit that covered it).
                    let on_disk = read_all(path).unwrap();
                    assert!(on_disk.iter().any(|e| e["hash"] == a["hash"]), "{eid}");
                }
            });
        }
    });
    let entries = read_all(&path).unwrap();
    assert_eq!(entries.len(), 12 * 5 * 2);
    for chain in by_effect(&entries).values() {
        assert_chain(chain);
    }
    // Reopening checks every line and every mark: a batch's intents and marks are in order.
    let again = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
    assert_eq!(again.effect_ids().unwrap().len(), 60);
}
