//! Five interleavings in which the first version of the gate broke its own invariants, each as a
//! deterministic test (in-memory target, fake clock). Each failed on the gate as it was before
//! the fix and must pass from then on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemLeases, MemTarget};
use interlock::{Gate, GateConfig, RecoveryOutcome, Status, Tier};
use serde_json::json;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const START_MS: u64 = 1_800_000_000_000;

/// A gate whose clock and target share one fake clock.
struct World {
    dir: tempfile::TempDir,
    /// Where the journal is.
    at: interlock::Location,
    gate: MemGate,
    target: Arc<MemTarget>,
    leases: Arc<MemLeases>,
    clock: Arc<AtomicU64>,
}

impl World {
    fn new(make: impl FnOnce(Arc<AtomicU64>, Arc<MemLeases>) -> MemTarget) -> World {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(AtomicU64::new(START_MS));
        let leases = Arc::new(MemLeases::new());
        leases.grant(&json!("lease-1"));
        let target = Arc::new(make(clock.clone(), leases.clone()));
        target.set_fact("incident_compensation", json!(0));
        let at = store_at(dir.path());
        let gate = World::open_gate(&at, &target, &leases, &clock);
        World {
            dir,
            at,
            gate,
            target,
            leases,
            clock,
        }
    }

    fn open_gate(
        at: &interlock::Location,
        target: &Arc<MemTarget>,
        leases: &Arc<MemLeases>,
        clock: &Arc<AtomicU64>,
    ) -> MemGate {
        let mut gate = Gate::open_at(
            at,
            target.clone(),
            leases.clone(),
            key(),
            GateConfig::default(),
        )
        .unwrap();
        let c = clock.clone();
        gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
        gate
    }

    fn advance(&self, ms: u64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }

    /// Run recovery of `eid` until it resolves, sleeping (on the fake clock) until each stated
    /// instant; at most `rounds` rounds. Returns the status and the rounds it took.
    fn recover_until_resolved(&self, eid: &str, rounds: usize) -> Option<(Status, usize)> {
        for round in 1..=rounds {
            match self.gate.recover_effect(eid).unwrap() {
                Some(RecoveryOutcome::Resolved(s)) => return Some((s, round)),
                Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                    let now = self.clock.load(Ordering::SeqCst);
                    self.advance(until_ms.saturating_sub(now).max(1));
                }
                None => return self.gate.status(eid).unwrap().map(|s| (s, round)),
            }
        }
        None
    }
}

/// Sequence 1: the approval is revoked while the premise reads run. The lease must be checked
/// again under the claim, right before DISPATCHED: nothing is sent.
#[test]
fn a_revocation_during_the_premise_check_is_not_sent() {
    let w = World::new(|_, leases| {
        MemTarget::new(Tier::One, true).with_premise_hook(Box::new(move || {
            leases.revoke(&json!("lease-1"));
        }))
    });
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::Refused(interlock::RefusalCode::Lease));
    assert_eq!(w.target.apply_calls(), 0, "sent after the revocation");
    assert!(!w
        .gate
        .entries(&s.effect_id)
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "DISPATCHED"));
    let _ = (&w.leases, &w.dir);
}

/// Sequence 2a: the client gives up (5 s timeout) while its request still executes at the
/// service, where it lands at 8 s; the approval is revoked meanwhile. The target declares a
/// 5.5 s bound. Counted from DISPATCHED, "not found" was trusted at 5.5 s and the effect refused
/// before it landed; counted from when recovery found the claim free (after the client gave up),
/// the landing is seen and the journal agrees with the service.
#[test]
fn a_request_landing_after_its_client_gave_up_is_not_refused_away() {
    let w = World::new(|clock, _| {
        let c = clock.clone();
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_millis(5_500))
            .with_clock(clock)
            .with_apply_hook(Box::new(move |_| {
                // The client waits out its 5 s timeout; the request executes on.
                c.fetch_add(5_000, Ordering::SeqCst);
            }))
    });
    w.target.push_faults([Fault::LandsLate(3_000)]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    w.leases.revoke(&json!("lease-1"));
    let (status, _) = w.recover_until_resolved(&s.effect_id, 100).unwrap();
    let at = w.clock.load(Ordering::SeqCst) - START_MS;
    assert_eq!(
        w.target.pending(),
        0,
        "settled at {at} ms with a request still executing"
    );
    assert_eq!(w.target.landed(&s.effect_id), 1, "the late request landed");
    assert!(
        status.is_committed(),
        "journal says {status} at {at} ms but the service holds the effect"
    );
}

/// Sequence 2c (the referee's beyond-bound case): the client gives up (5 s timeout) while its
/// request is held at the service for 60 s, far past the declared 5.5 s bound. Every resend under
/// the key is answered "in use". Counted as unknown answers, recovery stopped resending after
/// three, trusted a lookup once the bound had passed since the last one and refused the effect,
/// which landed after. Heard as evidence of a request in flight, each answer restarts the bound
/// and recovery keeps asking under the key until the held request's own answer comes back: the
/// journal agrees with the service, and the settling entry lists every answer it heard.
#[test]
fn a_request_held_past_the_bound_while_the_service_answers_in_use_is_not_refused_away() {
    let w = World::new(|clock, _| {
        let c = clock.clone();
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_millis(5_500))
            .with_clock(clock)
            .with_apply_hook(Box::new(move |_| {
                c.fetch_add(5_000, Ordering::SeqCst);
            }))
    });
    w.target.push_faults([Fault::LandsLate(60_000)]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let (status, _) = w.recover_until_resolved(&s.effect_id, 100).unwrap();
    let at = w.clock.load(Ordering::SeqCst) - START_MS;
    w.advance(60_000);
    assert_eq!(w.target.landed(&s.effect_id), 1, "the held request landed");
    assert_eq!(
        status,
        Status::CommittedByRetry,
        "journal says {status} at {at} ms but the service holds the effect"
    );
    let entries = w.gate.entries(&s.effect_id).unwrap();
    let settled = entries.last().unwrap();
    let answers = settled["resend_answers"]["answers"].as_array().unwrap();
    let classes: Vec<&str> = answers
        .iter()
        .map(|a| a["answer"].as_str().unwrap())
        .collect();
    assert!(classes.len() > 3, "{classes:?}");
    assert_eq!(classes.last(), Some(&"applied"), "{classes:?}");
    assert!(
        classes[..classes.len() - 1].iter().all(|c| *c == "in_use"),
        "{classes:?}"
    );
    assert!(answers[0]["said"]
        .as_str()
        .is_some_and(|said| said.contains("in progress")));
    let pinned = verify::receipt::KeyCheck::Pinned(key().verifying_key());
    let report = verify::receipt::verify_bundle(&w.gate.receipt(&s.effect_id).unwrap(), &pinned);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Sequence 2b: the sender stalls 60 s between DISPATCHED and the send (alive, holding its
/// claim), then sends and dies. The wait counts from when recovery found the claim free, not from
/// the DISPATCHED timestamp: no second effect.
#[test]
fn a_sender_that_stalled_after_dispatched_is_not_reapplied_over() {
    let bound = Duration::from_secs(10);
    let stall = Arc::new(AtomicU64::new(60_000));
    let w = World::new(|clock, _| {
        let (c, st) = (clock.clone(), stall.clone());
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(bound)
            .with_clock(clock)
            .with_apply_hook(Box::new(move |_| {
                c.fetch_add(st.swap(0, Ordering::SeqCst), Ordering::SeqCst);
            }))
    });
    // After the stall the request leaves and lands 5 s later; the sender dies meanwhile.
    w.target.push_faults([Fault::LandsLate(5_000)]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    w.advance(1_000);
    let (status, _) = w.recover_until_resolved(&s.effect_id, 100).unwrap();
    assert_eq!(
        w.target.landed(&s.effect_id),
        1,
        "two effects at a tier-2 target"
    );
    assert_eq!(status, Status::CommittedOnQuery);
}

/// Sequence 3: a copy of an effect's old DISPATCHED line is appended after the effect was
/// settled REFUSED (a bad merge, a restored backup). The gate checks every line it reads: the
/// journal is reported corrupt at that line and the effect is never resent.
#[test]
fn a_replayed_dispatched_line_never_reopens_a_settled_effect() {
    if file_only("a_replayed_dispatched_line_never_reopens_a_settled_effect") {
        return;
    }
    let w = World::new(|_, _| MemTarget::new(Tier::Two, true));
    w.target.push_faults([Fault::Rejected]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(
        s.status,
        Status::Refused(interlock::RefusalCode::TargetError)
    );
    let path = w.dir.path().join("journal.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let dispatched = text
        .lines()
        .find(|l| l.contains("\"DISPATCHED\""))
        .unwrap()
        .to_owned();
    let line_no = text.lines().count() + 1;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{dispatched}").unwrap();
    drop(f);
    let calls = w.target.apply_calls();
    w.advance(3_600_000);
    let reopened = Gate::open(
        &path,
        w.target.clone(),
        w.leases.clone(),
        key(),
        GateConfig::default(),
    );
    match reopened {
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(&format!("line {line_no}")), "{text}");
        }
        Ok(gate) => {
            let r = gate.recover();
            assert!(r.is_err(), "the replayed line was acted on: {r:?}");
        }
    }
    // The gate that already had the journal open sees the line when it catches up.
    assert!(w.gate.recover().is_err());
    assert_eq!(w.target.apply_calls(), calls, "a send after REFUSED");
}

/// Sequence 4: a process opens the journal through a symlink while a hung sender holds the
/// effect's claim under the real path. Both spellings are one gate: recovery is Blocked.
#[test]
fn a_symlinked_journal_shares_the_claims_of_its_target() {
    if file_only("a_symlinked_journal_shares_the_claims_of_its_target") {
        return;
    }
    let bound = Duration::from_millis(100);
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let entered_tx = std::sync::Mutex::new(entered_tx);
    let first = std::sync::atomic::AtomicBool::new(true);
    let w = World::new(|_, _| {
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(bound)
            .with_apply_hook(Box::new(move |_| {
                // Only the first send hangs (until released); any other send goes through.
                if first.swap(false, Ordering::SeqCst) {
                    let _ = entered_tx.lock().unwrap().send(());
                    let _ = release_rx.lock().unwrap().recv();
                }
            }))
    });
    let link = w.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(w.dir.path().join("journal.jsonl"), &link).unwrap();
    std::thread::scope(|scope| {
        let sender = scope.spawn(|| w.gate.submit(&proposal(1000)).unwrap());
        entered_rx.recv().unwrap(); // the sender is inside apply, claim held
        w.advance(3_600_000);
        let other = World::open_gate(
            &interlock::Location::File(link.clone()),
            &w.target,
            &w.leases,
            &w.clock,
        );
        let eid = interlock::effect_id(&proposal(1000));
        let r = other.recover_effect(&eid);
        release_tx.send(()).unwrap();
        let r = r.unwrap();
        assert!(
            matches!(r, Some(RecoveryOutcome::Blocked { .. })),
            "took over a live sender's effect: {r:?}"
        );
        let s = sender.join().unwrap();
        assert_eq!(s.status, Status::Committed);
    });
    let eid = interlock::effect_id(&proposal(1000));
    assert_eq!(w.target.landed(&eid), 1);
}

/// Sequence 5: the first request executed and failed at the service, which saved the error under
/// the key; every resend gets that error replayed. Recovery must settle by lookup within a
/// bounded number of calls, not resend the same key until the dedup window runs out.
#[test]
fn a_replayed_error_is_settled_by_lookup_not_resent_forever() {
    let w = World::new(|clock, _| {
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_secs(5))
            .with_dedup_window(Some(Duration::from_secs(86_400)))
            .with_clock(clock)
    });
    w.target.push_faults([Fault::FailsSaved]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let resolved = w.recover_until_resolved(&s.effect_id, 60);
    let (status, rounds) = resolved.unwrap_or_else(|| {
        panic!(
            "still open after 60 rounds and {} sends",
            w.target.apply_calls()
        )
    });
    assert_eq!(w.target.landed(&s.effect_id), 0);
    assert!(status.refusal().is_some(), "{status}");
    assert!(rounds <= 10, "{rounds} rounds");
    assert!(
        w.target.apply_calls() <= 3,
        "{} sends",
        w.target.apply_calls()
    );
}

/// After a replayed failure settled as `REFUSED:target_failed_at_recovery`, the same request
/// submitted again is refused as the target's failure, never dispatched and sent again (the
/// second gate review: only `target_error` used to block a new dispatch).
#[test]
fn a_request_refused_after_a_replayed_failure_is_not_sent_again() {
    let w = World::new(|clock, _| {
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_secs(5))
            .with_dedup_window(Some(Duration::from_secs(86_400)))
            .with_clock(clock)
    });
    w.target.push_faults([Fault::FailsSaved]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let (status, _) = w.recover_until_resolved(&s.effect_id, 60).unwrap();
    assert!(
        status.to_string().contains("target_failed_at_recovery"),
        "{status}"
    );
    let calls = w.target.apply_calls();
    let again = w.gate.submit(&proposal(1000)).unwrap();
    assert!(again.status.refusal().is_some(), "{}", again.status);
    assert_eq!(w.target.apply_calls(), calls, "sent again after a refusal");
    assert_eq!(w.target.landed(&s.effect_id), 0);
}

/// Sequence 5, the other way round: the request landed, then the service answered an error it
/// saved under the key. The lookup finds it.
#[test]
fn a_replayed_error_after_a_landing_commits_on_lookup() {
    let w = World::new(|clock, _| {
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_secs(5))
            .with_clock(clock)
    });
    w.target.push_faults([Fault::LandsThenFailsSaved]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let (status, _) = w.recover_until_resolved(&s.effect_id, 60).unwrap();
    assert_eq!(status, Status::CommittedOnQuery);
    assert_eq!(w.target.landed(&s.effect_id), 1);
}

/// The effect's claim record as stored (the claim file's bytes, or the row's text).
fn stored_claim_record(at: &interlock::Location, eid: &str) -> String {
    match at {
        interlock::Location::File(journal) => {
            let mut dir = std::fs::canonicalize(journal).unwrap().into_os_string();
            dir.push(".claims");
            std::fs::read_to_string(std::path::Path::new(&dir).join(eid)).unwrap()
        }
        interlock::Location::Postgres(url) => {
            let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
            c.query_one(
                "SELECT record FROM interlock_claims WHERE effect_id = $1",
                &[&eid],
            )
            .unwrap()
            .get(0)
        }
    }
}

/// Rewrites the effect's claim record with `edit`, as someone with write access to the claims
/// (the folder beside the journal, or the claims table) could, without the gate's key.
fn edit_claim_record(
    at: &interlock::Location,
    eid: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    match at {
        interlock::Location::File(journal) => {
            let mut dir = std::fs::canonicalize(journal).unwrap().into_os_string();
            dir.push(".claims");
            let path = std::path::Path::new(&dir).join(eid);
            let mut record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            edit(&mut record);
            std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        }
        interlock::Location::Postgres(url) => {
            let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let row = c
                .query_one(
                    "SELECT record FROM interlock_claims WHERE effect_id = $1",
                    &[&eid],
                )
                .unwrap();
            let mut record: serde_json::Value = serde_json::from_str(row.get(0)).unwrap();
            edit(&mut record);
            let text = serde_json::to_string(&record).unwrap();
            // The row's generation may only move forward, so the edit moves it too.
            c.execute(
                "UPDATE interlock_claims SET record = $2, gen = gen + 1 WHERE effect_id = $1",
                &[&eid, &text],
            )
            .unwrap();
        }
    }
}

/// A claim record is believed only when a trusted key signed it. The request of a sender whose
/// client gave up lands 3 s later; recovery takes the claim over and must wait the 5.5 s bound
/// from then before it trusts "not found". Someone moves the record's counted instant back to 0:
/// believed, the bound had long passed, "not found" was trusted at once and the effect refused
/// while its request still executed. Not believed, recovery counts from its own take-over, sees
/// the landing, and the settling entry says the record was ignored.
#[test]
fn an_edited_claim_record_is_not_believed_and_recovery_counts_from_its_own_take_over() {
    let w = World::new(|clock, _| {
        let c = clock.clone();
        MemTarget::new(Tier::One, true)
            .with_max_in_flight(Duration::from_millis(5_500))
            .with_clock(clock)
            .with_apply_hook(Box::new(move |_| {
                c.fetch_add(5_000, Ordering::SeqCst);
            }))
    });
    w.target.push_faults([Fault::LandsLate(3_000)]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    w.leases.revoke(&json!("lease-1"));
    assert!(matches!(
        w.gate.recover_effect(&s.effect_id).unwrap(),
        Some(RecoveryOutcome::Blocked { .. })
    ));
    edit_claim_record(&w.at, &s.effect_id, |r| {
        r["in_flight_from"]["ms"] = json!(0);
    });
    let (status, _) = w.recover_until_resolved(&s.effect_id, 100).unwrap();
    assert_eq!(w.target.landed(&s.effect_id), 1, "the late request landed");
    assert!(
        status.is_committed(),
        "refused ({status}) on a \"not found\" counted from an edited instant"
    );
    let entries = w.gate.entries(&s.effect_id).unwrap();
    let settled = entries.last().unwrap();
    assert!(
        settled["rechecked"]["claim_record_ignored"]
            .as_str()
            .is_some_and(|why| why.contains("signature")),
        "{settled}"
    );
}

/// A genuine older claim record put back is not believed either. Tier 2, a 5.5 s bound: the
/// first send's answer is lost; recovery takes the claim over (its record: counted from then),
/// waits the bound, finds nothing and reapplies — its record now counts from the reapply, whose
/// request is still executing (it lands 3 s later). Someone puts the first record back, signed
/// as it was. A fresh recoverer that believed it would count from the first take-over, trust
/// "not found" at once and reapply a second time: two landings. Its generation is older than the
/// latest written, so it is ignored: recovery counts from its own take-over and finds the
/// landing.
#[test]
fn an_older_claim_record_put_back_is_not_believed() {
    let w = World::new(|clock, _| {
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(Duration::from_millis(5_500))
            .with_clock(clock)
    });
    w.target
        .push_faults([Fault::Unknown, Fault::LandsLate(3_000)]);
    let s = w.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let Some(RecoveryOutcome::Blocked { until_ms, .. }) =
        w.gate.recover_effect(&s.effect_id).unwrap()
    else {
        panic!("recovery did not wait the bound");
    };
    let first = stored_claim_record(&w.at, &s.effect_id);
    w.advance(until_ms - w.clock.load(Ordering::SeqCst));
    // The reapply: its answer is lost, its request lands 3 s later.
    assert!(matches!(
        w.gate.recover_effect(&s.effect_id).unwrap(),
        Some(RecoveryOutcome::Blocked { .. })
    ));
    assert_eq!(
        w.target.apply_calls(),
        2,
        "the bound passed: reapplied once"
    );
    assert_ne!(stored_claim_record(&w.at, &s.effect_id), first);
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    edit_claim_record(&w.at, &s.effect_id, |r| *r = first);
    w.advance(1);
    let fresh = World::open_gate(&w.at, &w.target, &w.leases, &w.clock);
    let mut settled = None;
    for _ in 0..100 {
        match fresh.recover_effect(&s.effect_id).unwrap() {
            Some(RecoveryOutcome::Resolved(status)) => {
                settled = Some(status);
                break;
            }
            Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                let now = w.clock.load(Ordering::SeqCst);
                w.advance(until_ms.saturating_sub(now).max(1));
            }
            None => break,
        }
    }
    // Past every request's bound: whatever was executing has landed.
    w.advance(10_000);
    assert_eq!(
        w.target.landed(&s.effect_id),
        1,
        "reapplied over a request still executing"
    );
    assert!(settled.is_some_and(|s| s.is_committed()), "{settled:?}");
    let entries = fresh.entries(&s.effect_id).unwrap();
    let last = entries.last().unwrap();
    assert!(
        last["rechecked"]["claim_record_ignored"]
            .as_str()
            .is_some_and(|why| why.contains("older one put back")),
        "{last}"
    );
}
