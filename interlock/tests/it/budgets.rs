//! Budgets (DESIGN §2.8): two support bots refund one order under one cap that the service does
//! not enforce. On both stores (`INTERLOCK_TEST_STORE=postgres`), with threads and with real
//! processes (`gate-crash-probe`, SIGKILLed after DISPATCHED), and with `verify::budget`
//! re-deriving every admission from the gate's signed receipts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{assert_chain, key, store_at};
use interlock::testing::{Fault, FileTarget, MemBudgets, MemLeases, MemTarget};
use interlock::{Budget, Gate, GateConfig, GateError, Location, Proposal, Status, Tier};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use verify::budget::{check_budget_bundles, BudgetFinding};
use verify::entry::ReceiptBundle;

type MemGate = Gate<Arc<MemTarget>, Arc<MemLeases>>;

const ORDER: &str = "order-1";
const CAP: i64 = 3000;

/// One store, one target, the leases and the budgets that every gate of the test shares.
struct World {
    _dir: tempfile::TempDir,
    at: Location,
    target: Arc<MemTarget>,
    leases: Arc<MemLeases>,
    budgets: Arc<MemBudgets>,
    gate: MemGate,
}

impl World {
    fn new(target: MemTarget) -> World {
        let dir = tempfile::tempdir().unwrap();
        let at = store_at(dir.path());
        let target = Arc::new(target);
        let leases = Arc::new(MemLeases::new());
        leases.grant(&json!("lease-1"));
        let budgets = Arc::new(MemBudgets::with_caps([(ORDER, CAP)]));
        let gate = open(&at, &target, &leases, Some(&budgets));
        World {
            _dir: dir,
            at,
            target,
            leases,
            budgets,
            gate,
        }
    }

    /// Another gate (its own descriptors or database sessions) on the same store.
    fn another_gate(&self) -> MemGate {
        open(&self.at, &self.target, &self.leases, Some(&self.budgets))
    }

    fn receipts(&self, eids: &[&str]) -> Vec<ReceiptBundle> {
        eids.iter().map(|e| self.gate.receipt(e).unwrap()).collect()
    }
}

fn open(
    at: &Location,
    target: &Arc<MemTarget>,
    leases: &Arc<MemLeases>,
    budgets: Option<&Arc<MemBudgets>>,
) -> MemGate {
    let mut gate = Gate::open_at(
        at,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    if let Some(b) = budgets {
        gate.set_budgets(Box::new(b.clone()));
    }
    gate
}

/// A refund of `amount` on the order, decided for support ticket `ticket`.
fn refund(ticket: &str, amount: i64) -> Proposal {
    Proposal {
        agent: format!("support-bot-{ticket}"),
        lease: json!("lease-1"),
        premises: json!({}),
        effect: json!({"amount": amount, "payment_intent": "pi_1", "ticket": ticket}),
        request_id: Some(format!("refund:{ticket}")),
        budget: Some(Budget {
            id: ORDER.into(),
            amount,
        }),
    }
}

fn entry_of<'a>(entries: &'a [Value], kind: &str) -> &'a Value {
    entries
        .iter()
        .rev()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {entries:?}"))
}

/// Every receipt verifies with the test key pinned, and `verify::budget` re-derives every
/// admission of the order's budget from them.
fn assert_admissions_hold(w: &World, eids: &[&str]) {
    let pinned = verify::receipt::KeyCheck::Pinned(key().verifying_key());
    let bundles = w.receipts(eids);
    for b in &bundles {
        let report = verify::receipt::verify_bundle(b, &pinned);
        assert!(report.valid, "{}: {:?}", b.effect_id, report.problems);
        assert_chain(&b.entries);
    }
    assert_eq!(check_budget_bundles(ORDER, &bundles), vec![]);
}

#[test]
fn two_refunds_of_20_under_a_cap_of_30_send_only_the_first() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    let second = w.gate.submit(&refund("t2", 2000)).unwrap();
    assert_eq!(first.status, Status::Committed);
    assert_eq!(second.status.as_str(), "REFUSED:over_budget");
    assert!(second.detail.unwrap().contains("over its cap of 3000"));
    assert_eq!(
        w.target.landed(&second.effect_id),
        0,
        "never reached the target"
    );
    assert_eq!(w.target.apply_calls(), 1);

    let a = w.gate.entries(&first.effect_id).unwrap();
    assert_eq!(a[0]["budget"], json!({"id": ORDER, "amount": 2000}));
    assert_eq!(
        entry_of(&a, "DISPATCHED")["budget"],
        json!({"id": ORDER, "cap": CAP, "amount": 2000, "counted": [], "total": 2000})
    );
    let b = w.gate.entries(&second.effect_id).unwrap();
    assert_eq!(common::kinds(&b), ["PROPOSED", "AUTHORIZED", "REFUSED"]);
    let refused = entry_of(&b, "REFUSED");
    assert_eq!(refused["code"], "over_budget");
    assert_eq!(
        refused["budget"],
        json!({"id": ORDER, "cap": CAP, "amount": 2000,
               "counted": [{"effect_id": first.effect_id, "amount": 2000}], "total": 4000})
    );
    assert_admissions_hold(&w, &[&first.effect_id, &second.effect_id]);
}

#[test]
fn refunds_that_fit_the_cap_are_all_sent_and_count_each_other() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let a = w.gate.submit(&refund("t1", 1000)).unwrap();
    let b = w.gate.submit(&refund("t2", 2000)).unwrap();
    let c = w.gate.submit(&refund("t3", 1)).unwrap();
    assert_eq!((a.status, b.status), (Status::Committed, Status::Committed));
    assert_eq!(c.status.as_str(), "REFUSED:over_budget", "3001 > 3000");
    let d = w.gate.submit(&refund("t4", 0)).unwrap();
    assert_eq!(
        d.status,
        Status::Committed,
        "a zero amount fits a full budget"
    );
    let entries = w.gate.entries(&b.effect_id).unwrap();
    let counted = &entry_of(&entries, "DISPATCHED")["budget"];
    assert_eq!(counted["counted"][0]["effect_id"], json!(a.effect_id));
    assert_eq!(counted["total"], 3000);
    assert_admissions_hold(
        &w,
        &[&a.effect_id, &b.effect_id, &c.effect_id, &d.effect_id],
    );
}

#[test]
fn an_open_dispatch_keeps_its_reservation_until_it_resolves() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    // The first send's answer is lost and it did not land: the dispatch stays open.
    w.target.push_faults([Fault::Unknown]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(first.status, Status::InFlight);
    let second = w.gate.submit(&refund("t2", 2000)).unwrap();
    assert_eq!(second.status.as_str(), "REFUSED:over_budget");
    assert_eq!(w.target.apply_calls(), 1);
    // Recovery reapplies the first (the budget still takes it: its own amount counted once).
    let rec = w.gate.recover().unwrap();
    assert_eq!(rec[0].outcome.status(), Some(Status::ReappliedAfterQuery));
    let settled = w.gate.entries(&first.effect_id).unwrap();
    assert_eq!(
        entry_of(&settled, "COMMITTED")["rechecked"]["budget"],
        json!({"id": ORDER, "cap": CAP, "amount": 2000, "counted": [], "total": 2000})
    );
    assert_admissions_hold(&w, &[&first.effect_id, &second.effect_id]);
}

#[test]
fn a_refusal_releases_the_reservation() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    // The service rejects the first send and a lookup does not find it: REFUSED target_error.
    w.target.push_faults([Fault::Rejected]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(first.status.as_str(), "REFUSED:target_error");
    let second = w.gate.submit(&refund("t2", 2000)).unwrap();
    assert_eq!(second.status, Status::Committed);
    assert_eq!(w.target.landed_total(), 1);
    let entries = w.gate.entries(&second.effect_id).unwrap();
    let counted = &entry_of(&entries, "DISPATCHED")["budget"];
    assert_eq!(counted["counted"], json!([]));
    assert_admissions_hold(&w, &[&first.effect_id, &second.effect_id]);
}

#[test]
fn a_refusal_at_recovery_releases_the_reservation() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    w.target.push_faults([Fault::Unknown]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(first.status, Status::InFlight);
    w.leases.revoke(&json!("lease-1"));
    let rec = w.gate.recover().unwrap();
    assert_eq!(
        rec[0].outcome.status().map(Status::as_str),
        Some("REFUSED:lease_at_recovery")
    );
    w.leases.grant(&json!("lease-1"));
    let second = w.gate.submit(&refund("t2", 2000)).unwrap();
    assert_eq!(second.status, Status::Committed);
    assert_admissions_hold(&w, &[&first.effect_id, &second.effect_id]);
}

#[test]
fn an_ambiguous_effect_keeps_its_reservation() {
    // Tier 3: a lost answer can only end AMBIGUOUS — it may have landed.
    let w = World::new(MemTarget::new(Tier::Three, false));
    w.target.push_faults([Fault::LandedButUnknown]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(first.status, Status::InFlight);
    let rec = w.gate.recover().unwrap();
    assert_eq!(rec[0].outcome.status(), Some(Status::Ambiguous));
    let second = w.gate.submit(&refund("t2", 2000)).unwrap();
    assert_eq!(second.status.as_str(), "REFUSED:over_budget");
    assert_eq!(w.target.apply_calls(), 1);
    assert_admissions_hold(&w, &[&first.effect_id, &second.effect_id]);
}

#[test]
fn recovery_refuses_a_resend_the_lowered_cap_cannot_take() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    w.target.push_faults([Fault::Unknown]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(first.status, Status::InFlight);
    w.budgets.set_cap(ORDER, 1500);
    let rec = w.gate.recover().unwrap();
    assert_eq!(
        rec[0].outcome.status().map(Status::as_str),
        Some("REFUSED:over_budget")
    );
    assert_eq!(w.target.apply_calls(), 1, "nothing resent");
    assert_eq!(w.target.landed_total(), 0);
    let entries = w.gate.entries(&first.effect_id).unwrap();
    let refused = entry_of(&entries, "REFUSED");
    assert_eq!(refused["resolves"], true);
    assert_eq!(
        refused["budget"],
        json!({"id": ORDER, "cap": 1500, "amount": 2000, "counted": [], "total": 2000})
    );
    assert_eq!(refused["budget"], refused["rechecked"]["budget"]);
    // The cap differs between the admission and the refusal: said, not a violation.
    let findings = check_budget_bundles(ORDER, &w.receipts(&[&first.effect_id]));
    assert_eq!(
        findings,
        vec![BudgetFinding::CapsDiffer {
            caps: vec![1500, CAP]
        }]
    );
}

#[test]
fn recovery_refuses_a_resend_of_a_budget_the_store_no_longer_knows() {
    let w = World::new(MemTarget::new(Tier::One, true));
    w.target.push_faults([Fault::Unknown]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    w.budgets.forget(ORDER);
    // Tier 1 would resend under the key at once; the budget's re-check stops it.
    let rec = w.gate.recover().unwrap();
    assert_eq!(
        rec[0].outcome.status().map(Status::as_str),
        Some("REFUSED:over_budget")
    );
    assert_eq!(w.target.apply_calls(), 1);
    let refused = w.gate.entries(&first.effect_id).unwrap();
    assert_eq!(entry_of(&refused, "REFUSED")["budget"]["cap"], Value::Null);
    assert_admissions_hold(&w, &[&first.effect_id]);
}

#[test]
fn a_tier_one_resend_counts_its_own_reservation_once() {
    let w = World::new(MemTarget::new(Tier::One, true));
    w.budgets.set_cap(ORDER, 2000);
    w.target.push_faults([Fault::Unknown]);
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    let rec = w.gate.recover().unwrap();
    assert_eq!(rec[0].outcome.status(), Some(Status::CommittedByRetry));
    assert_eq!(w.target.landed(&first.effect_id), 1);
}

#[test]
fn a_budget_on_a_gate_without_a_budget_store_is_refused_before_anything_is_written() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let bare = open(&w.at, &w.target, &w.leases, None);
    let err = bare.submit(&refund("t1", 2000)).unwrap_err();
    assert!(
        matches!(&err, GateError::Budget { budget, reason, .. }
            if budget == ORDER && reason.contains("no budget store")),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was sent"));
    assert_eq!(bare.effect_ids().unwrap(), Vec::<String>::new());
    assert_eq!(w.target.apply_calls(), 0);
}

#[test]
fn a_negative_amount_is_refused_before_anything_is_written() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let err = w.gate.submit(&refund("t1", -500)).unwrap_err();
    assert!(matches!(err, GateError::Budget { .. }), "{err}");
    assert_eq!(w.gate.effect_ids().unwrap(), Vec::<String>::new());
}

#[test]
fn an_unknown_budget_is_refused_and_never_sent() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    w.budgets.forget(ORDER);
    let s = w.gate.submit(&refund("t1", 10)).unwrap();
    assert_eq!(s.status.as_str(), "REFUSED:over_budget");
    assert!(s.detail.unwrap().contains("does not know budget"));
    assert_eq!(w.target.apply_calls(), 0);
    assert_admissions_hold(&w, &[&s.effect_id]);
}

#[test]
fn a_budget_store_that_cannot_answer_stops_the_dispatch_and_leaves_the_effect_free() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    w.budgets.fail(Some("policy service down"));
    let err = w.gate.submit(&refund("t1", 2000)).unwrap_err();
    assert!(matches!(err, GateError::BudgetStore { .. }), "{err}");
    assert_eq!(w.target.apply_calls(), 0);
    w.budgets.fail(None);
    let s = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(s.status, Status::Committed, "the claim was not left held");
}

#[test]
fn the_first_proposal_fixes_the_budget_with_the_payload() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let first = w.gate.submit(&refund("t1", 2000)).unwrap();
    assert_eq!(first.status, Status::Committed);
    let mut other = refund("t1", 2000);
    other.budget = Some(Budget {
        id: "order-2".into(),
        amount: 2000,
    });
    w.budgets.set_cap("order-2", CAP);
    assert_eq!(
        w.gate.submit(&other).unwrap().status.as_str(),
        "REFUSED:conflicting_payload"
    );
    other.budget = None;
    assert_eq!(
        w.gate.submit(&other).unwrap().status.as_str(),
        "REFUSED:conflicting_payload"
    );
    assert_eq!(
        w.gate.submit(&refund("t1", 2000)).unwrap().status,
        Status::DuplicateIgnored
    );
}

#[test]
fn a_proposal_without_a_budget_writes_what_it_wrote_before() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let mut p = refund("t1", 2000);
    p.budget = None;
    let s = w.gate.submit(&p).unwrap();
    assert_eq!(s.status, Status::Committed);
    let entries = w.gate.entries(&s.effect_id).unwrap();
    assert_eq!(
        common::kinds(&entries),
        ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    );
    for e in &entries {
        assert!(e.get("budget").is_none(), "{e}");
    }
    let keys: Vec<&str> = entries[2]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "v",
            "ts_ms",
            "kind",
            "effect_id",
            "effect",
            "lease",
            "premises",
            "checks",
            "prev",
            "signer",
            "hash",
            "sig"
        ]
    );
    // The budget does not change the effect id.
    assert_eq!(
        interlock::effect_id(&p),
        interlock::effect_id(&refund("t1", 2000))
    );
}

#[test]
fn racing_threads_under_one_budget_never_exceed_the_cap() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let gates: Vec<MemGate> = (0..6).map(|_| w.another_gate()).collect();
    let statuses: Vec<Status> = std::thread::scope(|scope| {
        let handles: Vec<_> = gates
            .iter()
            .enumerate()
            .map(|(i, g)| {
                scope.spawn(move || g.submit(&refund(&format!("r{i}"), 1000)).unwrap().status)
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let committed = statuses.iter().filter(|s| **s == Status::Committed).count();
    let refused = statuses
        .iter()
        .filter(|s| s.as_str() == "REFUSED:over_budget")
        .count();
    assert_eq!((committed, refused), (3, 3), "{statuses:?}");
    assert_eq!(w.target.landed_total(), 3);
    let eids: Vec<String> = (0..6)
        .map(|i| interlock::effect_id(&refund(&format!("r{i}"), 1000)))
        .collect();
    let refs: Vec<&str> = eids.iter().map(String::as_str).collect();
    assert_admissions_hold(&w, &refs);
}

/// Re-seal an entry after tampering with it, and the entries after it in its chain, with the
/// gate's key: only the budget rule can then tell.
fn reseal(bundle: &mut ReceiptBundle, from: usize) {
    let mut prev = if from == 0 {
        Value::Null
    } else {
        bundle.entries[from - 1]["hash"].clone()
    };
    for e in &mut bundle.entries[from..] {
        let m = e.as_object_mut().unwrap();
        m.insert("prev".into(), prev);
        verify::entry::seal(m, &key()).unwrap();
        prev = m["hash"].clone();
    }
    bundle.head = None;
}

#[test]
fn verify_finds_each_kind_of_tampered_admission_in_genuine_receipts() {
    let w = World::new(MemTarget::new(Tier::Two, true));
    let a = w.gate.submit(&refund("t1", 1000)).unwrap().effect_id;
    let b = w.gate.submit(&refund("t2", 1500)).unwrap().effect_id;
    let c = w.gate.submit(&refund("t3", 1000)).unwrap().effect_id;
    let genuine = w.receipts(&[&a, &b, &c]);
    assert_eq!(check_budget_bundles(ORDER, &genuine), vec![]);
    let unpinned = verify::receipt::KeyCheck::SelfAttested;
    let codes = |bundles: &[ReceiptBundle]| -> Vec<&'static str> {
        for b in bundles {
            let report = verify::receipt::verify_bundle(b, &unpinned);
            assert!(
                report.valid,
                "tampered yet re-sealed: {:?}",
                report.problems
            );
        }
        check_budget_bundles(ORDER, bundles)
            .iter()
            .map(BudgetFinding::code)
            .collect()
    };
    let at = |bundle: &ReceiptBundle, kind: &str| {
        bundle
            .entries
            .iter()
            .position(|e| e["kind"] == kind)
            .unwrap()
    };
    // (a) c's refusal says the total was 2500: within the cap, and not its counted sum.
    let mut t = genuine.clone();
    let i = at(&t[2], "REFUSED");
    t[2].entries[i]["budget"]["total"] = json!(2500);
    reseal(&mut t[2], i);
    assert_eq!(
        codes(&t),
        ["budget_total_mismatch", "budget_refused_within_cap"]
    );
    // (a) b admitted with a cap of 2000 written in: over its cap.
    let mut t = genuine.clone();
    let i = at(&t[1], "DISPATCHED");
    t[1].entries[i]["budget"]["cap"] = json!(2000);
    reseal(&mut t[1], i);
    assert!(codes(&t).contains(&"budget_admitted_over_cap"));
    // (b) c counted a at 500 (a's PROPOSED says 1000), total adjusted to match.
    let mut t = genuine.clone();
    let i = at(&t[2], "REFUSED");
    let counted = t[2].entries[i]["budget"]["counted"].as_array_mut().unwrap();
    let of_a = counted
        .iter_mut()
        .find(|c| c["effect_id"] == a.as_str())
        .unwrap();
    of_a["amount"] = json!(500);
    t[2].entries[i]["budget"]["total"] = json!(3000);
    reseal(&mut t[2], i);
    assert_eq!(
        codes(&t),
        ["budget_refused_within_cap", "budget_amount_mismatch"]
    );
    // (c) b's admission did not count a, and its total says so: two holders unseen.
    let mut t = genuine.clone();
    let i = at(&t[1], "DISPATCHED");
    t[1].entries[i]["budget"]["counted"] = json!([]);
    t[1].entries[i]["budget"]["total"] = json!(1500);
    reseal(&mut t[1], i);
    assert_eq!(codes(&t), ["budget_unseen"]);
}

// ---- real processes: the crash probe ----

const PROBE: &str = env!("CARGO_BIN_EXE_gate-crash-probe");
const KEY: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";

fn location_arg(at: &Location) -> String {
    match at {
        Location::File(p) => p.to_string_lossy().into_owned(),
        Location::Postgres(url) => url.clone(),
    }
}

/// The probe over a tier-2 file target at `state`, refunding `amount` for `ticket` under the
/// order's budget with cap `cap`.
fn probe(
    at: &Location,
    state: &Path,
    mode: &str,
    ticket: &str,
    cap: i64,
    extra: &[&str],
) -> Command {
    let mut c = Command::new(PROBE);
    c.arg(mode)
        .args(["--journal", &location_arg(at)])
        .arg("--state")
        .arg(state)
        .args([
            "--key",
            KEY,
            "--tier",
            "2",
            "--queryable",
            "--max-in-flight-ms",
            "0",
        ])
        .args([
            "--budget",
            ORDER,
            "--caps",
            &format!("{{\"{ORDER}\": {cap}}}"),
        ])
        .args([
            "--request-id",
            &format!("refund:{ticket}"),
            "--amount",
            "2000",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The last JSON line of a probe run to completion.
fn last_line(mut c: Command) -> Value {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// Spawn a probe and wait (at most 30 s) until it blocks at its `--stop-at` step.
fn spawn_blocked(mut c: Command) -> Child {
    let mut child = c.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if line.contains("blocked_at") && tx.send(()).is_err() {
                break;
            }
        }
    });
    let blocked = rx.recv_timeout(Duration::from_secs(30));
    if blocked.is_err() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the probe never blocked");
    }
    child
}

fn sigkill(mut child: Child) {
    child.kill().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(9));
}

struct ProbeWorld {
    _dir: tempfile::TempDir,
    at: Location,
    state: PathBuf,
}

fn probe_world() -> ProbeWorld {
    let dir = tempfile::tempdir().unwrap();
    ProbeWorld {
        at: store_at(dir.path()),
        state: dir.path().join("target.json"),
        _dir: dir,
    }
}

#[test]
fn a_sender_killed_after_dispatched_keeps_its_reservation_and_recovery_resends_within_the_cap() {
    let w = probe_world();
    let sender = spawn_blocked(probe(
        &w.at,
        &w.state,
        "submit",
        "t1",
        CAP,
        &["--stop-at", "dispatched"],
    ));
    sigkill(sender);
    let second = last_line(probe(&w.at, &w.state, "submit", "t2", CAP, &[]));
    assert_eq!(second["status"], "REFUSED:over_budget", "{second}");
    assert_eq!(FileTarget::landed_in(&w.state).unwrap().len(), 0);
    let rec = last_line(probe(&w.at, &w.state, "recover", "t1", CAP, &[]));
    assert_eq!(
        rec["recovered"][0]["status"], "REAPPLIED_AFTER_QUERY",
        "{rec}"
    );
    assert_eq!(FileTarget::landed_in(&w.state).unwrap().len(), 1);
}

#[test]
fn a_cap_lowered_between_the_crash_and_recovery_refuses_the_resend() {
    let w = probe_world();
    let sender = spawn_blocked(probe(
        &w.at,
        &w.state,
        "submit",
        "t1",
        CAP,
        &["--stop-at", "dispatched"],
    ));
    sigkill(sender);
    let rec = last_line(probe(&w.at, &w.state, "recover", "t1", 1500, &[]));
    assert_eq!(
        rec["recovered"][0]["status"], "REFUSED:over_budget",
        "{rec}"
    );
    assert_eq!(
        FileTarget::landed_in(&w.state).unwrap().len(),
        0,
        "nothing sent"
    );
    // The refusal released the reservation: under a cap of 2000 a refund of 2000 fits again.
    let third = last_line(probe(&w.at, &w.state, "submit", "t3", 2000, &[]));
    assert_eq!(third["status"], "COMMITTED", "{third}");
}

#[test]
fn racing_processes_under_one_budget_never_exceed_the_cap() {
    let w = probe_world();
    let children: Vec<Child> = (0..4)
        .map(|i| {
            probe(&w.at, &w.state, "submit", &format!("r{i}"), 5000, &[])
                .spawn()
                .unwrap()
        })
        .collect();
    let mut statuses: Vec<String> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout).unwrap();
            let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
            last["status"].as_str().unwrap().to_owned()
        })
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        [
            "COMMITTED",
            "COMMITTED",
            "REFUSED:over_budget",
            "REFUSED:over_budget"
        ]
    );
    assert_eq!(
        FileTarget::landed_in(&w.state).unwrap().len(),
        2,
        "2 × 2000 ≤ 5000 < 3 × 2000"
    );
}

#[test]
fn a_budget_store_boxed_twice_or_borrowed_gives_the_same_caps() {
    // The gate takes its store as a trait object; a store handed over inside another box, or
    // as a reference, answers through the forwarding impls.
    for boxed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let at = store_at(dir.path());
        let target = Arc::new(MemTarget::new(Tier::Two, true));
        let leases = Arc::new(MemLeases::new());
        leases.grant(&json!("lease-1"));
        let mut gate = open(&at, &target, &leases, None);
        let caps = MemBudgets::with_caps([(ORDER, CAP)]);
        if boxed {
            gate.set_budgets(Box::new(Box::new(caps)));
        } else {
            let borrowed: &'static MemBudgets = Box::leak(Box::new(caps));
            gate.set_budgets(Box::new(borrowed));
        }
        let first = gate.submit(&refund("t1", 2000)).unwrap();
        let second = gate.submit(&refund("t2", 2000)).unwrap();
        assert_eq!(first.status, Status::Committed, "boxed {boxed}");
        assert_eq!(
            second.status.as_str(),
            "REFUSED:over_budget",
            "boxed {boxed}"
        );
    }
}
