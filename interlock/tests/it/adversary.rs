//! Sequences from the adversarial (Jepsen-style) review of issue 21 that broke a promise of
//! `interlock/README.md` or DESIGN §2, each failing before its fix: an entry edited in place under
//! an open gate (payload, lease), a tier-1 resend
//! rejected while the first request was still on its way, and claim-record generations restarted
//! after the marks were deleted alone, and a journal reached through a second name (a hard link,
//! a bind-mounted file) whose claims the sender's did not share.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemLeases, MemTarget};
use interlock::{
    Capabilities, Gate, GateConfig, RecoveryOutcome, SendDeadline, Status, Target, TargetError,
    Tier,
};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A target that records the payload of every request that left the gate, in front of a
/// [`MemTarget`].
struct Rec {
    inner: MemTarget,
    sent: Mutex<Vec<Value>>,
}

impl Rec {
    fn new(inner: MemTarget) -> Rec {
        Rec {
            inner,
            sent: Mutex::new(Vec::new()),
        }
    }
    fn sent(&self) -> Vec<Value> {
        self.sent.lock().unwrap().clone()
    }
}

impl Target for Rec {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn check_premises(&self, eid: &str, p: &Value) -> Result<Vec<String>, TargetError> {
        self.inner.check_premises(eid, p)
    }
    fn apply(&self, eid: &str, effect: &Value) -> Result<Value, TargetError> {
        self.sent.lock().unwrap().push(effect.clone());
        self.inner.apply(eid, effect)
    }
    fn apply_before(
        &self,
        eid: &str,
        effect: &Value,
        dispatch: &str,
        deadline: SendDeadline,
    ) -> Result<Value, TargetError> {
        self.sent.lock().unwrap().push(effect.clone());
        self.inner.apply_before(eid, effect, dispatch, deadline)
    }
    fn query(&self, eid: &str, effect: &Value) -> Result<Option<Value>, TargetError> {
        self.inner.query(eid, effect)
    }
}

type RecGate = Gate<Arc<Rec>, Arc<MemLeases>>;

fn rec_gate(path: &Path, target: &Arc<Rec>, leases: &Arc<MemLeases>) -> RecGate {
    Gate::open(
        path,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap()
}

/// Rewrite the file in place (same inode), replacing `from` by `to` (same length) everywhere.
fn edit_in_place(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in the journal");
    std::fs::write(path, text.replace(from, to)).unwrap();
}

fn fresh_leases() -> Arc<MemLeases> {
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    leases
}

// ---------------------------------------------------------------------------------------------
// F1. "Every line read is checked ... the gate acts only on lines it has checked." A gate that
// stays open re-reads an entry's bytes (`Locked::entry`): a same-length in-place edit of the open
// DISPATCHED after it was indexed was resent as written. A re-read entry must now recompute to
// the hash it was checked with; an edited one is an error, and nothing is sent.
// ---------------------------------------------------------------------------------------------

#[test]
fn f1a_an_edited_open_dispatched_is_not_resent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let target = Arc::new(Rec::new(MemTarget::new(Tier::Two, true)));
    target.inner.set_fact("incident_compensation", json!(0));
    let leases = fresh_leases();
    let gate = rec_gate(&path, &target, &leases);
    target.inner.push_faults([Fault::Unknown]);
    let s = gate.submit(&proposal(500)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    // Someone with write access to the file (not the key) edits the amount in place.
    edit_in_place(&path, "\"amount\":500", "\"amount\":900");
    let recovered = gate.recover();
    let amounts: Vec<Value> = target.sent().iter().map(|e| e["amount"].clone()).collect();
    assert_eq!(amounts, vec![json!(500)], "an edited payload was sent");
    let err = recovered.expect_err("recovery acted on an edited entry");
    assert!(err.to_string().contains("edited in place"), "{err}");
    // A fresh process refuses the journal too (the hash no longer recomputes).
    let fresh = Gate::open(
        &path,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    );
    assert!(fresh.is_err(), "a fresh open sees the edit");
}

#[test]
fn f1b_an_edited_lease_on_the_open_dispatched_is_not_resent_after_the_revocation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let target = Arc::new(Rec::new(MemTarget::new(Tier::Two, true)));
    target.inner.set_fact("incident_compensation", json!(0));
    let leases = fresh_leases();
    let gate = rec_gate(&path, &target, &leases);
    target.inner.push_faults([Fault::Unknown]);
    let s = gate.submit(&proposal(500)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    // The approval is revoked; some other approval is live.
    leases.revoke(&json!("lease-1"));
    leases.grant(&json!("lease-9"));
    edit_in_place(&path, "\"lease\":\"lease-1\"", "\"lease\":\"lease-9\"");
    let out = gate.recover();
    assert_eq!(
        target.sent().len(),
        1,
        "resent after its approval was revoked: {out:?}"
    );
    assert!(out.is_err(), "recovery acted on an edited entry: {out:?}");
}

// ---------------------------------------------------------------------------------------------
// F4. Recovery resends under a tier-1 key at once (before the in-flight bound), then settles a
// *rejected* resend by one immediate lookup: "not found" is trusted though the dead sender's
// own request may still be in flight inside the declared bound. REFUSED, then it lands.
// ---------------------------------------------------------------------------------------------

/// A deduping, queryable service with a network in front of it: a request can be delayed on
/// the way (arriving later, within the declared bound) and a request can be rejected before
/// the service executes it (a 400/401/403 that is not saved under the key, as at Stripe).
struct NetService {
    clock: Arc<AtomicU64>,
    st: Mutex<NetState>,
}

#[derive(Default)]
struct NetState {
    /// (arrives at ms, effect id, effect)
    in_network: Vec<(u64, String, Value)>,
    landed: Vec<(String, Value)>,
    /// What the next sends do: "delay:<ms>" (timeout at the client), "reject" (not saved),
    /// anything else lands.
    plan: Vec<String>,
}

impl NetService {
    fn deliver(&self, st: &mut NetState) {
        let now = self.clock.load(Ordering::SeqCst);
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut st.in_network)
            .into_iter()
            .partition(|(at, _, _)| *at <= now);
        st.in_network = later;
        for (_, eid, effect) in due {
            if !st.landed.iter().any(|(e, _)| *e == eid) {
                st.landed.push((eid, effect));
            }
        }
    }
    fn landed(&self, eid: &str) -> usize {
        let mut st = self.st.lock().unwrap();
        self.deliver(&mut st);
        st.landed.iter().filter(|(e, _)| e == eid).count()
    }
}

impl Target for NetService {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dedup: Some(Some(Duration::from_secs(86_400))),
            lookup: true,
            max_in_flight: Some(Duration::from_secs(5)),
        }
    }
    fn check_premises(&self, _: &str, _: &Value) -> Result<Vec<String>, TargetError> {
        Ok(vec![])
    }
    fn apply(&self, eid: &str, effect: &Value) -> Result<Value, TargetError> {
        let mut st = self.st.lock().unwrap();
        self.deliver(&mut st);
        let step = if st.plan.is_empty() {
            "ok".to_owned()
        } else {
            st.plan.remove(0)
        };
        if let Some(ms) = step.strip_prefix("delay:") {
            let at = self.clock.load(Ordering::SeqCst) + ms.parse::<u64>().unwrap();
            st.in_network.push((at, eid.to_owned(), effect.clone()));
            return Err(TargetError::Unknown {
                reason: "client timeout".into(),
            });
        }
        if step == "reject" {
            return Err(TargetError::Rejected {
                reason: "401 (not saved under the key)".into(),
            });
        }
        if !st.landed.iter().any(|(e, _)| e == eid) {
            st.landed.push((eid.to_owned(), effect.clone()));
        }
        Ok(json!({"id": "obj"}))
    }
    fn query(&self, eid: &str, _: &Value) -> Result<Option<Value>, TargetError> {
        let mut st = self.st.lock().unwrap();
        self.deliver(&mut st);
        Ok(st
            .landed
            .iter()
            .any(|(e, _)| e == eid)
            .then(|| json!({"id": "obj"})))
    }
}

#[test]
fn f4_a_rejected_tier_one_resend_is_refused_at_once_though_the_first_request_is_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
    let target = Arc::new(NetService {
        clock: clock.clone(),
        st: Mutex::new(NetState {
            plan: vec!["delay:1000".into(), "reject".into()],
            ..NetState::default()
        }),
    });
    let leases = fresh_leases();
    let mut gate = Gate::open_at(
        &store_at(dir.path()),
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
    let s = gate.submit(&proposal(500)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    clock.fetch_add(100, Ordering::SeqCst);
    let out = gate.recover().unwrap();
    // 1 s later (inside the declared 5 s bound) the first request reaches the service.
    clock.fetch_add(1_000, Ordering::SeqCst);
    let landed = target.landed(&s.effect_id);
    let status = gate.status(&s.effect_id).unwrap();
    assert!(
        !(landed == 1 && matches!(status, Some(Status::Refused(_)))),
        "final {status:?} but the effect landed {landed}x (recovery: {out:?})"
    );
}

// ---------------------------------------------------------------------------------------------
// F2. "Two spellings of one journal share one lock" — but the claims and the marks are placed by
// the canonical path, and a hard link (or the file bind-mounted over another path) is a second
// canonical path. A recoverer through it found the live sender's claim free and reapplied. A
// journal file that another name reaches is now refused, at open and at every lock.
// ---------------------------------------------------------------------------------------------

#[test]
fn f2_a_journal_reached_through_a_hard_link_is_refused_by_every_gate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let other = dir.path().join("other.jsonl");
    let target = Arc::new(Rec::new(MemTarget::new(Tier::Two, true)));
    target.inner.set_fact("incident_compensation", json!(0));
    let leases = fresh_leases();
    let sender = rec_gate(&path, &target, &leases);
    target.inner.push_faults([Fault::Unknown]);
    let s = sender.submit(&proposal(500)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    std::fs::hard_link(&path, &other).unwrap();
    // A recoverer through the second name would look for the claim in other.jsonl.claims.
    let through_link = Gate::open(
        &other,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    );
    let err = through_link.expect_err("a gate opened through a hard link");
    assert!(err.to_string().contains("hard links"), "{err}");
    // The gate opened before the link was made refuses too, at its next lock.
    let err = sender
        .recover()
        .expect_err("recovery with two names of the journal");
    assert!(err.to_string().contains("hard links"), "{err}");
    assert_eq!(target.sent().len(), 1, "sent again with two names");
    // With the second name gone, the one journal recovers as usual.
    std::fs::remove_file(&other).unwrap();
    sender.recover().unwrap();
}

#[test]
#[ignore = "needs root (mount --bind); run with --include-ignored"]
fn f2_a_journal_file_bind_mounted_over_another_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let other = dir.path().join("other.jsonl");
    let target = Arc::new(Rec::new(MemTarget::new(Tier::Two, true)));
    let leases = fresh_leases();
    drop(rec_gate(&path, &target, &leases));
    std::fs::write(&other, b"").unwrap();
    let mounted = std::process::Command::new("mount")
        .arg("--bind")
        .arg(&path)
        .arg(&other)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount --bind failed (needs root)");
    let opened = Gate::open(
        &other,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    );
    // Close a gate that did open before unmounting (it holds the file).
    let refused = opened.err().map(|e| e.to_string());
    let unmounted = std::process::Command::new("umount")
        .arg("--lazy")
        .arg(&other)
        .status()
        .unwrap();
    let err = refused.expect("a gate opened through a bind-mounted file");
    assert!(err.contains("mount point"), "{err}");
    assert!(unmounted.success());
}

// ---------------------------------------------------------------------------------------------
// A1 (second review). "A recoverer's own resend restarts the count from its own send" — but the
// instant it recorded was taken before the journal lock, the record, the confirmation and the
// request leaving. A reapply that stalls before its request leaves (a slow connect, a paused
// process) and is then lost was counted from before the stall: the next round trusted a "not
// found" while that request was still executing, and reapplied. The count now runs from when
// the resend's call returned (every request it sent had left by then).
// ---------------------------------------------------------------------------------------------

/// A tier-2 target with a 300 ms in-flight bound whose second request (the reapply) stalls
/// 1.5 s, by the gate's clock, before it leaves.
fn stalling_reapply_target(clock: &Arc<AtomicU64>) -> Arc<MemTarget> {
    let calls = Arc::new(AtomicU64::new(0));
    let c = clock.clone();
    let target = Arc::new(
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(Duration::from_millis(300))
            .with_clock(clock.clone())
            .with_apply_hook(Box::new(move |_| {
                if calls.fetch_add(1, Ordering::SeqCst) == 1 {
                    c.fetch_add(1_500, Ordering::SeqCst);
                }
            })),
    );
    target.set_fact("incident_compensation", json!(0));
    target
}

#[test]
fn a1_a_recoverers_resend_that_stalls_before_leaving_is_not_reapplied_over() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
    let leases = fresh_leases();
    let target = stalling_reapply_target(&clock);
    let mut gate = Gate::open_at(
        &store_at(dir.path()),
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
    // The first send is lost without landing; the reapply lands 250 ms after it left (inside
    // the 300 ms bound), after its client gave up.
    target.push_faults([Fault::Unknown, Fault::LandsLate(250)]);
    let s = gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    let mut outcomes = Vec::new();
    for _ in 0..20 {
        match gate.recover_effect(&s.effect_id).unwrap() {
            Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                let now = clock.load(Ordering::SeqCst);
                clock.fetch_add(until_ms.saturating_sub(now).max(1), Ordering::SeqCst);
            }
            other => {
                outcomes.push(other);
                break;
            }
        }
    }
    clock.fetch_add(10_000, Ordering::SeqCst);
    assert_eq!(
        target.landed(&s.effect_id),
        1,
        "reapplied over a resend still executing: {outcomes:?}, {} calls",
        target.apply_calls()
    );
}

/// A1, through the claim record: the recoverer that resent is gone after its resend's answer
/// was lost, and a fresh recoverer of the same host takes over at once. It inherits the instant
/// the record names, which must be the resend's return, not the earlier take-over (mutant: the
/// resend's records not written).
#[test]
fn a1_a_fresh_recoverer_counts_from_the_stalled_resends_return() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
    let leases = fresh_leases();
    let target = stalling_reapply_target(&clock);
    let at = store_at(dir.path());
    let open = || {
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
        gate
    };
    target.push_faults([Fault::Unknown, Fault::LandsLate(250)]);
    let first = open();
    let s = first.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight);
    // Rounds of the first recoverer until its reapply has gone out (and its answer was lost).
    for _ in 0..5 {
        let out = first.recover_effect(&s.effect_id).unwrap();
        if target.apply_calls() == 2 {
            break;
        }
        if let Some(RecoveryOutcome::Blocked { until_ms, .. }) = out {
            let now = clock.load(Ordering::SeqCst);
            clock.fetch_add(until_ms.saturating_sub(now).max(1), Ordering::SeqCst);
        }
    }
    assert_eq!(target.apply_calls(), 2, "the reapply went out");
    drop(first);
    // A fresh recoverer, 1 ms after the resend returned.
    clock.fetch_add(1, Ordering::SeqCst);
    let second = open();
    let mut outcome = None;
    for _ in 0..10 {
        match second.recover_effect(&s.effect_id).unwrap() {
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
    clock.fetch_add(10_000, Ordering::SeqCst);
    assert_eq!(
        target.landed(&s.effect_id),
        1,
        "reapplied over the stalled resend: {outcome:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// F5. "More than one unmarked entry (chains merged in) is Unmarked; one unmarked last entry is a
// crash between the entry and its mark, and is marked." So ONE line merged in from a fork of the
// journal (a restored copy that a gate appended to) is adopted. A resolving REFUSED from the
// fork closes the open dispatch here; the effect, which had landed, is then sent again.
// ---------------------------------------------------------------------------------------------

#[test]
fn f7_marks_deleted_alone_reset_record_generations_and_an_older_record_is_believed_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let claims = dir.path().join("journal.jsonl.claims");
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
    let target = Arc::new(
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(Duration::from_millis(5_500))
            .with_clock(clock.clone()),
    );
    target.set_fact("incident_compensation", json!(0));
    let leases = fresh_leases();
    let open = || {
        let mut g = Gate::open(
            &path,
            target.clone(),
            leases.clone(),
            key(),
            GateConfig::default(),
        )
        .unwrap();
        let c = clock.clone();
        g.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
        g
    };
    let now = || clock.load(Ordering::SeqCst);
    let gate = open();
    target.push_faults([Fault::Unknown, Fault::LandsLate(3_000)]);
    let s = gate.submit(&proposal(1000)).unwrap();
    let eid = s.effect_id.clone();
    let record = || std::fs::read(claims.join(&eid)).unwrap();
    // Round 1: take-over (gen 2, counted from t1), not found, wait the bound.
    let Some(RecoveryOutcome::Blocked { until_ms, .. }) = gate.recover_effect(&eid).unwrap() else {
        panic!()
    };
    let first = record();
    clock.fetch_add(until_ms - now(), Ordering::SeqCst);
    // Round 2: reapply (gen 4, counted from t2); its request lands 3 s later.
    assert!(matches!(
        gate.recover_effect(&eid).unwrap(),
        Some(RecoveryOutcome::Blocked { .. })
    ));
    assert_eq!(target.apply_calls(), 2);
    drop(gate);
    // The marks file alone is deleted (the journal is intact).
    std::fs::remove_file(dir.path().join("journal.jsonl.marks")).unwrap();
    clock.fetch_add(1, Ordering::SeqCst);
    // Two recovery rounds from fresh processes: generations 1 and 2 are written again.
    let _ = open().recover_effect(&eid).unwrap();
    clock.fetch_add(1, Ordering::SeqCst);
    let _ = open().recover_effect(&eid).unwrap();
    // The genuine first record (gen 2) put back.
    std::fs::write(claims.join(&eid), &first).unwrap();
    clock.fetch_add(1, Ordering::SeqCst);
    let out = open().recover_effect(&eid).unwrap();
    clock.fetch_add(10_000, Ordering::SeqCst);
    assert_eq!(
        target.landed(&eid),
        1,
        "reapplied over a request still executing: {out:?}"
    );
}

// F5 on PostgreSQL, where there are no marks at all: a row of a fork (a schema restored from a
// dump, recovered in a drill) inserted into the journal — an ordinary INSERT, the privilege
// every gate has — closes the open dispatch; the landed effect is sent again.
