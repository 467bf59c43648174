//! What only the PostgreSQL store has to show: the database itself keeps every chain linear and
//! append-only, rows are checked like lines, the schema is versioned, and a sender whose claim
//! session is gone does not send.
//!
//! Needs `INTERLOCK_TEST_PG_URL` (`.ci/pg-cluster start` sets it). Without it these tests say
//! they were skipped — and fail when `CI` is set, so CI cannot skip them silently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemLeases, MemTarget};
use interlock::{effect_id, Gate, GateConfig, Location, RecoveryOutcome, Status, Step, Tier};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A fresh schema of the test database, or `None` (skipped) when no database is configured.
fn database(test: &str) -> Option<(String, Location)> {
    let Ok(url) = std::env::var("INTERLOCK_TEST_PG_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: INTERLOCK_TEST_PG_URL is not set under CI (.ci/run starts a cluster)"
        );
        eprintln!("{test}: skipped, INTERLOCK_TEST_PG_URL is not set (see .ci/pg-cluster)");
        return None;
    };
    let schema = format!("t_{:016x}", rand::random::<u64>());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let at = Location::Postgres(format!("{url}{sep}options=-c%20search_path%3D{schema}"));
    Some((schema, at))
}

fn client(schema: &str) -> postgres::Client {
    let url = std::env::var("INTERLOCK_TEST_PG_URL").unwrap();
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("SET search_path = {schema}"))
        .unwrap();
    c
}

fn gate(at: &Location, target: MemTarget) -> Gate<Arc<MemTarget>, Arc<MemLeases>> {
    target.set_fact("incident_compensation", json!(0));
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    Gate::open_at(at, Arc::new(target), leases, key(), GateConfig::default()).unwrap()
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn the_database_refuses_a_second_extension_of_a_hash_and_any_edit() {
    let Some((schema, at)) =
        database("the_database_refuses_a_second_extension_of_a_hash_and_any_edit")
    else {
        return;
    };
    let g = gate(&at, MemTarget::new(Tier::One, true));
    g.submit(&proposal(1000)).unwrap();
    let mut c = client(&schema);
    // A copy of the DISPATCHED row (a replayed or merged line) extends a hash already extended.
    let copied = c.execute(
        "INSERT INTO interlock_entries (effect_id, prev, hash, line) \
         SELECT effect_id, prev, hash || 'x', line FROM interlock_entries \
         WHERE line LIKE '%\"DISPATCHED\"%'",
        &[],
    );
    assert!(
        copied.is_err(),
        "a second row after the same prev was accepted"
    );
    assert!(c
        .execute("UPDATE interlock_entries SET line = line", &[])
        .is_err());
    assert!(c.execute("DELETE FROM interlock_entries", &[]).is_err());
    // Emptying the table (to refill it with an older copy) is refused as well.
    assert!(c.batch_execute("TRUNCATE interlock_entries").is_err());
    let rows: i64 = c
        .query_one("SELECT count(*) FROM interlock_entries", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        rows, 4,
        "PROPOSED, AUTHORIZED, DISPATCHED and COMMITTED are all kept"
    );
    let version: i32 = c
        .query_one("SELECT max(version) FROM interlock_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 5);
    // Each row records its transaction, stamped by the database whatever the INSERT says (a
    // row claiming an old transaction would hide below the readers' horizon).
    let stamped: bool = c
        .query_one(
            "SELECT bool_and(xid <> '1'::xid8) FROM interlock_entries",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(stamped);
    // A claim record's row only moves forward: no older generation, no removal.
    let gen: i64 = c
        .query_one("SELECT gen FROM interlock_claims", &[])
        .unwrap()
        .get(0);
    assert!(gen >= 1, "the sender's record has a generation");
    assert!(c
        .execute("UPDATE interlock_claims SET gen = gen - 1", &[])
        .is_err());
    assert!(c
        .execute("UPDATE interlock_claims SET record = record", &[])
        .is_err());
    assert!(c.execute("DELETE FROM interlock_claims", &[]).is_err());
    assert!(c.batch_execute("TRUNCATE interlock_claims").is_err());
    // Opening again migrates nothing and reads the same journal.
    let again = gate(&at, MemTarget::new(Tier::One, true));
    assert_eq!(again.effect_ids().unwrap(), g.effect_ids().unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_row_signed_by_an_untrusted_key_is_corrupt_at_its_row() {
    let Some((schema, at)) = database("a_row_signed_by_an_untrusted_key_is_corrupt_at_its_row")
    else {
        return;
    };
    let other = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let target = MemTarget::new(Tier::One, true);
    target.set_fact("incident_compensation", json!(0));
    let forger =
        Gate::open_at(&at, Arc::new(target), leases, other, GateConfig::default()).unwrap();
    forger.submit(&proposal(1000)).unwrap();
    let err = Gate::open_at(
        &at,
        Arc::new(MemTarget::new(Tier::One, true)),
        Arc::new(MemLeases::new()),
        key(),
        GateConfig::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not a key this gate trusts"), "{err}");
    let _ = schema;
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_sender_whose_claim_session_is_gone_does_not_send() {
    let Some((schema, at)) = database("a_sender_whose_claim_session_is_gone_does_not_send") else {
        return;
    };
    let mut g = gate(&at, MemTarget::new(Tier::Two, true));
    // Right after DISPATCHED, the server ends this process's claims session (as it does for a
    // partitioned host): the sender must notice before its send.
    let url = std::env::var("INTERLOCK_TEST_PG_URL").unwrap();
    let name = format!("interlock-claims {schema}");
    g.set_observer(Box::new(move |step| {
        if step == Step::Dispatched {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let ended: i64 = c
                .query_one(
                    "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name = $1) t",
                    &[&name],
                )
                .unwrap()
                .get(0);
            assert!(ended >= 1, "no claims session to end");
        }
    }));
    let s = g.submit(&proposal(1000)).unwrap();
    assert_eq!(s.status, Status::InFlight, "{:?}", s.detail);
    assert!(s.detail.unwrap_or_default().contains("nothing was sent"));
    assert_eq!(g.target().apply_calls(), 0);
    // Another gate (another host) recovers once the claim is free: one effect.
    let other = gate(&at, MemTarget::new(Tier::Two, true));
    let target = other.target().clone();
    drop(other);
    let recoverer = Gate::open_at(
        &at,
        target.clone(),
        Arc::new({
            let l = MemLeases::new();
            l.grant(&json!("lease-1"));
            l
        }),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    // The sender lost its session, not its life: recovery waits out its send window too.
    let out = recoverer.recover().unwrap();
    assert!(
        matches!(&out[0].outcome, RecoveryOutcome::Blocked { reason, .. } if reason.contains("send window")),
        "{out:?}"
    );
    let out = recoverer.recover_wait(Duration::from_secs(30)).unwrap();
    assert_eq!(
        out[0].outcome,
        RecoveryOutcome::Resolved(Status::ReappliedAfterQuery)
    );
    assert_eq!(target.landed(&s.effect_id), 1);
    let last = recoverer.entries(&s.effect_id).unwrap().pop().unwrap();
    assert_eq!(last["assumed_send_window_ms"], json!(2000));
    let _ = (schema, Fault::Ok);
}

/// A point where one thread stops (once armed) until the test lets it go on. Every wait is
/// bounded: a sequence that does not happen fails the test instead of hanging it.
#[derive(Default)]
struct Hold {
    armed: AtomicBool,
    state: Mutex<HoldState>,
    changed: Condvar,
}

#[derive(Default)]
struct HoldState {
    reached: bool,
    released: bool,
}

const HOLD_WAIT: Duration = Duration::from_secs(30);

impl Hold {
    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    /// Called by the thread that is to stop: stops only if armed (and disarms).
    fn stop_here(&self) {
        if !self.armed.swap(false, Ordering::SeqCst) {
            return;
        }
        let mut s = self.state.lock().unwrap();
        s.reached = true;
        self.changed.notify_all();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, HOLD_WAIT, |s| !s.released)
            .unwrap();
        assert!(s.released, "the test never let the thread go on");
    }

    /// Wait until the thread stopped here, or `instead` became true.
    fn wait_reached_or(&self, instead: impl Fn() -> bool) {
        let deadline = Instant::now() + HOLD_WAIT;
        let mut s = self.state.lock().unwrap();
        while !s.reached && !instead() {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the thread never reached its stop");
            // `instead` is not signalled through the condition variable: look again soon.
            s = self
                .changed
                .wait_timeout(s, left.min(Duration::from_millis(20)))
                .unwrap()
                .0;
        }
    }

    fn wait_reached(&self) {
        self.wait_reached_or(|| false);
    }

    fn release(&self) {
        self.state.lock().unwrap().released = true;
        self.changed.notify_all();
    }
}

/// End every claims session of the journal in `schema` from another connection, as a server
/// restart or an operator would, waiting (at most 30 s) until each has ended and its locks are
/// free. Returns how many were ended.
fn end_claim_sessions(schema: &str) -> i64 {
    let mut c = client(schema);
    c.query_one(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 30000) AS ended \
         FROM pg_stat_activity WHERE application_name = $1) t WHERE ended",
        &[&format!("interlock-claims {schema}")],
    )
    .unwrap()
    .get(0)
}

/// How many claim locks (one-key advisory locks) the claims sessions of `schema` hold.
fn claim_locks_held(schema: &str) -> i64 {
    let mut c = client(schema);
    c.query_one(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted \
         AND a.application_name = $1",
        &[&format!("interlock-claims {schema}")],
    )
    .unwrap()
    .get(0)
}

fn leases() -> Arc<MemLeases> {
    let l = MemLeases::new();
    l.grant(&json!("lease-1"));
    Arc::new(l)
}

/// Recover `eid` until the store has noticed that its claims session was ended (a first round
/// meets the closed connection, or still sees this process's own claim), then report the first
/// round that got past it.
fn recover_past_the_lost_session(
    g: &Gate<Arc<MemTarget>, Arc<MemLeases>>,
    eid: &str,
) -> Result<Option<RecoveryOutcome>, interlock::GateError> {
    let deadline = Instant::now() + HOLD_WAIT;
    loop {
        let out = g.recover_effect(eid)?;
        let store_down = matches!(
            &out,
            Some(RecoveryOutcome::Blocked {
                holder: interlock::Holder::Journal | interlock::Holder::UnnamedProcess,
                ..
            })
        );
        if !store_down || Instant::now() > deadline {
            return Ok(out);
        }
    }
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_claim_lost_with_its_session_is_not_confirmed_on_the_reconnected_one() {
    let Some((schema, at)) =
        database("a_claim_lost_with_its_session_is_not_confirmed_on_the_reconnected_one")
    else {
        return;
    };
    // One gate, two threads: a submitter and a recoverer. The target does not dedupe.
    let submitter_hold = Arc::new(Hold::default());
    let resend_hold = Arc::new(Hold::default());
    let r = resend_hold.clone();
    let target = MemTarget::new(Tier::Two, true).with_apply_hook(Box::new(move |_| r.stop_here()));
    let mut g = gate(&at, target);
    let h = submitter_hold.clone();
    g.set_observer(Box::new(move |step| {
        if step == Step::Dispatched {
            h.stop_here();
        }
    }));
    submitter_hold.arm();
    let g = &g;
    let round_done = &AtomicBool::new(false);
    let (submitted, recovered) = std::thread::scope(|scope| {
        let submitter = scope.spawn(|| g.submit(&proposal(1000)));
        // The submitter holds the claim on session s1 and wrote DISPATCHED; the server ends s1.
        submitter_hold.wait_reached();
        let eid = g.open_effects().unwrap().pop().unwrap();
        assert_eq!(end_claim_sessions(&schema), 1);
        // The recoverer reconnects (session s2) and takes the claim there. Its resend, if it
        // gets that far, waits here, holding the claim on s2.
        resend_hold.arm();
        let recoverer = scope.spawn(move || {
            let out = recover_past_the_lost_session(g, &eid);
            round_done.store(true, Ordering::SeqCst);
            out
        });
        resend_hold.wait_reached_or(|| round_done.load(Ordering::SeqCst));
        // The submitter goes on to confirm its claim and send.
        submitter_hold.release();
        let submitted = submitter.join().unwrap();
        resend_hold.disarm();
        resend_hold.release();
        (submitted, recoverer.join().unwrap())
    });
    let eid = effect_id(&proposal(1000));
    // Whatever is still open is settled by recovery, as after a crash.
    let settled = g.recover_wait(Duration::from_secs(30)).unwrap();
    assert_eq!(
        g.target().landed(&eid),
        1,
        "submitter: {submitted:?}; recoverer: {recovered:?}; then: {settled:?}"
    );
    let submitted = submitted.unwrap();
    assert_eq!(submitted.status, Status::InFlight, "{submitted:?}");
    assert!(
        submitted
            .detail
            .unwrap_or_default()
            .contains("nothing was sent"),
        "the submitter must not send on a claim its session lost"
    );
    assert_eq!(g.status(&eid).unwrap(), Some(Status::ReappliedAfterQuery));
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_stale_claim_given_up_after_a_reconnect_leaves_the_new_holders_lock_alone() {
    let Some((schema, at)) =
        database("a_stale_claim_given_up_after_a_reconnect_leaves_the_new_holders_lock_alone")
    else {
        return;
    };
    let submitter_hold = Arc::new(Hold::default());
    let premise_hold = Arc::new(Hold::default());
    let p = premise_hold.clone();
    let target = MemTarget::new(Tier::Two, true).with_premise_hook(Box::new(move || p.stop_here()));
    let mut g = gate(&at, target);
    let h = submitter_hold.clone();
    g.set_observer(Box::new(move |step| {
        if step == Step::Dispatched {
            h.stop_here();
        }
    }));
    submitter_hold.arm();
    let g = &g;
    let (held_after, submitted, recovered) = std::thread::scope(|scope| {
        let submitter = scope.spawn(|| g.submit(&proposal(1000)));
        submitter_hold.wait_reached();
        let eid = g.open_effects().unwrap().pop().unwrap();
        assert_eq!(end_claim_sessions(&schema), 1);
        // The recoverer takes the claim on the new session and stops in its premise check,
        // holding it.
        premise_hold.arm();
        let recoverer = scope.spawn(move || recover_past_the_lost_session(g, &eid));
        premise_hold.wait_reached();
        assert_eq!(
            claim_locks_held(&schema),
            1,
            "the recoverer holds the claim"
        );
        // The submitter's claim (taken on the ended session) is confirmed or given up.
        submitter_hold.release();
        let submitted = submitter.join().unwrap();
        let held_after = claim_locks_held(&schema);
        premise_hold.release();
        (held_after, submitted, recoverer.join().unwrap())
    });
    assert_eq!(
        held_after, 1,
        "the stale claim released the recoverer's lock (submitter: {submitted:?}, \
         recoverer: {recovered:?})"
    );
    assert!(recovered.is_ok(), "{recovered:?}");
    let settled = g.recover_wait(Duration::from_secs(30)).unwrap();
    let eid = effect_id(&proposal(1000));
    assert_eq!(g.target().landed(&eid), 1, "{settled:?}");
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_holder_that_lost_its_session_after_confirming_does_not_send_after_its_deadline() {
    let Some((schema, at)) = database(
        "a_holder_that_lost_its_session_after_confirming_does_not_send_after_its_deadline",
    ) else {
        return;
    };
    // Host A confirms its claim; its request is about to leave when its session ends. Host B
    // takes the claim over at once. The target does not dedupe and declares a 200 ms bound.
    let leaving = Arc::new(Hold::default());
    let l = leaving.clone();
    let target = Arc::new(
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(std::time::Duration::from_millis(200))
            .with_apply_hook(Box::new(move |_| l.stop_here())),
    );
    target.set_fact("incident_compensation", json!(0));
    let open =
        || Gate::open_at(&at, target.clone(), leases(), key(), GateConfig::default()).unwrap();
    let host_a = open();
    leaving.arm();
    let (sent_by_a, recovered_by_b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| host_a.submit(&proposal(1000)));
        leaving.wait_reached();
        assert_eq!(end_claim_sessions(&schema), 1);
        let host_b = open();
        let recovered = host_b.recover_wait(std::time::Duration::from_secs(30));
        // Only now does A's request leave: after B's wait, B's lookup and B's reapply.
        leaving.release();
        (a.join().unwrap(), recovered)
    });
    let eid = effect_id(&proposal(1000));
    assert_eq!(
        target.landed(&eid),
        1,
        "A: {sent_by_a:?}; B: {recovered_by_b:?}"
    );
    let recovered = recovered_by_b.unwrap();
    assert_eq!(
        recovered[0].outcome,
        RecoveryOutcome::Resolved(Status::ReappliedAfterQuery)
    );
    let sent = sent_by_a.unwrap();
    assert_eq!(sent.status, Status::InFlight, "{sent:?}");
    assert!(sent.detail.unwrap_or_default().contains("nothing was sent"));
    let last = host_a.entries(&eid).unwrap().pop().unwrap();
    assert_eq!(last["assumed_max_in_flight_ms"], json!(200));
    assert_eq!(last["assumed_send_window_ms"], json!(2000));
}

/// The model's finding, on real sessions: a holder whose session ends between its rejected send
/// and the lookup that settles it must not settle the dispatch another host took over. Host A's
/// send is rejected; its lookup is delayed while its claims session is ended; host B takes the
/// claim over, waits the send window and the bound, finds nothing and reapplies — its request
/// is about to land when A's lookup answers "not found". Unfenced, A wrote `REFUSED:target_error`
/// and the effect landed (a final answer the target contradicts). A settling entry needs the
/// claim confirmed under the journal lock, so A writes nothing and B's commit stands.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_holder_that_lost_its_session_does_not_settle_the_dispatch_another_host_reapplies() {
    let Some((schema, at)) = database(
        "a_holder_that_lost_its_session_does_not_settle_the_dispatch_another_host_reapplies",
    ) else {
        return;
    };
    let looking_up = Arc::new(Hold::default());
    let reapplying = Arc::new(Hold::default());
    let (l, r) = (looking_up.clone(), reapplying.clone());
    let target = Arc::new(
        MemTarget::new(Tier::Two, true)
            .with_max_in_flight(std::time::Duration::from_millis(200))
            .with_query_hook(Box::new(move |_| l.stop_here()))
            .with_apply_hook(Box::new(move |_| r.stop_here())),
    );
    target.set_fact("incident_compensation", json!(0));
    target.push_faults([Fault::Rejected]);
    let open =
        || Gate::open_at(&at, target.clone(), leases(), key(), GateConfig::default()).unwrap();
    let host_a = open();
    looking_up.arm();
    let (sent_by_a, recovered_by_b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| host_a.submit(&proposal(1000)));
        looking_up.wait_reached();
        assert_eq!(end_claim_sessions(&schema), 1);
        reapplying.arm();
        let host_b = open();
        let b = scope.spawn(move || host_b.recover_wait(std::time::Duration::from_secs(30)));
        reapplying.wait_reached();
        // B's reapply is about to land; only now does A's lookup answer, "not found".
        looking_up.release();
        let a = a.join().unwrap();
        reapplying.release();
        (a, b.join().unwrap())
    });
    let eid = effect_id(&proposal(1000));
    assert_eq!(
        target.landed(&eid),
        1,
        "A: {sent_by_a:?}; B: {recovered_by_b:?}"
    );
    let recovered = recovered_by_b.unwrap();
    assert_eq!(
        recovered[0].outcome,
        RecoveryOutcome::Resolved(Status::ReappliedAfterQuery),
        "A: {sent_by_a:?}"
    );
    let kinds: Vec<String> = host_a
        .entries(&eid)
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(!kinds.contains(&"REFUSED".to_owned()), "{kinds:?}");
    assert_eq!(
        host_a.status(&eid).unwrap(),
        Some(Status::ReappliedAfterQuery)
    );
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_search_path_naming_a_missing_schema_is_an_error_not_a_panic() {
    let Some((_, _)) = database("a_search_path_naming_a_missing_schema_is_an_error_not_a_panic")
    else {
        return;
    };
    let url = std::env::var("INTERLOCK_TEST_PG_URL").unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let missing = format!("missing_{:016x}", rand::random::<u64>());
    let at = Location::Postgres(format!("{url}{sep}options=-c%20search_path%3D{missing}"));
    let opened = std::panic::catch_unwind(|| {
        Gate::open_at(
            &at,
            Arc::new(MemTarget::new(Tier::One, true)),
            leases(),
            key(),
            GateConfig::default(),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    });
    let err = opened
        .expect("opening panicked")
        .expect_err("a journal without a schema opened");
    assert!(
        err.contains("search_path"),
        "the error names what to fix: {err}"
    );
}

/// Issue 21's review, F5 on PostgreSQL: a row written by a gate of a fork (a restored copy of
/// the schema) and inserted into the journal table — an ordinary INSERT — extends the open
/// dispatch's chain by a REFUSED the target contradicts (the effect landed). Every row a gate
/// appends is now marked in the same statement; a row without its mark is refused.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_resolving_row_from_a_fork_of_the_schema_is_refused() {
    let Some((schema, at)) = database("a_resolving_row_from_a_fork_of_the_schema_is_refused")
    else {
        return;
    };
    let target = MemTarget::new(Tier::Two, true);
    target.push_faults([Fault::LandedButUnknown]);
    let g = gate(&at, target);
    let sent = g.submit(&proposal(1000)).unwrap();
    assert_eq!(sent.status, Status::InFlight);
    // The fork: a schema with the journal's tables, given a copy of its rows and their marks.
    let Some((fork, fork_at)) = database("a_resolving_row_from_a_fork_of_the_schema_is_refused")
    else {
        return;
    };
    let fork_target = Arc::new(MemTarget::new(Tier::Two, true));
    fork_target.set_fact("incident_compensation", json!(0));
    // Under a revoked approval, before a target that never saw the effect.
    let mut fork_gate = Gate::open_at(
        &fork_at,
        fork_target,
        Arc::new(MemLeases::new()),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let mut c = client(&schema);
    c.batch_execute(&format!(
        "INSERT INTO {fork}.interlock_entries (effect_id, prev, hash, line) \
         SELECT effect_id, prev, hash, line FROM {schema}.interlock_entries ORDER BY seq"
    ))
    .unwrap();
    let marks_copied = c.batch_execute(&format!(
        "INSERT INTO {fork}.interlock_marks (hash) SELECT hash FROM {schema}.interlock_marks"
    ));
    // (Before schema version 4 there was no marks table to copy.)
    drop(marks_copied);
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_800_000_000_000));
    let c2 = clock.clone();
    fork_gate.set_clock(Box::new(move || c2.load(Ordering::SeqCst)));
    let mut resolved = None;
    for _ in 0..5 {
        match fork_gate.recover_effect(&sent.effect_id).unwrap() {
            Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
                let now = clock.load(Ordering::SeqCst);
                clock.fetch_add(until_ms.saturating_sub(now) + 1, Ordering::SeqCst);
            }
            other => {
                resolved = other;
                break;
            }
        }
    }
    assert!(
        matches!(
            resolved,
            Some(RecoveryOutcome::Resolved(Status::Refused(_)))
        ),
        "the fork did not resolve as refused: {resolved:?}"
    );
    drop(fork_gate);
    // Its REFUSED row inserted into the real journal.
    c.batch_execute(&format!(
        "INSERT INTO {schema}.interlock_entries (effect_id, prev, hash, line) \
         SELECT effect_id, prev, hash, line FROM {fork}.interlock_entries \
         WHERE line LIKE '%\"REFUSED\"%'"
    ))
    .unwrap();
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let reopened = Gate::open_at(
        &at,
        Arc::new(MemTarget::new(Tier::Two, true)),
        leases,
        key(),
        GateConfig::default(),
    );
    match reopened {
        Err(interlock::GateError::Journal(interlock::JournalError::Unmarked { count, .. })) => {
            assert_eq!(count, 1)
        }
        Err(e) => panic!("refused, but not as an unmarked row: {e}"),
        Ok(gate) => panic!(
            "a row from a fork was taken in: the effect landed, and the journal says {:?}",
            gate.status(&sent.effect_id).unwrap()
        ),
    }
    // The gate that was open refuses it too.
    assert!(g.status(&sent.effect_id).is_err() || g.recover().is_err());
}

/// The open DISPATCHED's row edited past the triggers (by a role that owns the table, which
/// can disable them) after an open gate checked it: recovery reads the row back and must find
/// the entry it checked, or stop; the edited payload is never sent (mutant: the re-read check in
/// `PgSection::entry` → `true`).
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_row_edited_past_the_triggers_under_an_open_gate_is_not_sent() {
    let Some((schema, at)) =
        database("a_row_edited_past_the_triggers_under_an_open_gate_is_not_sent")
    else {
        return;
    };
    let target = Arc::new(MemTarget::new(Tier::Two, true));
    target.set_fact("incident_compensation", json!(0));
    target.push_faults([Fault::Unknown]);
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let mut g = Gate::open_at(&at, target.clone(), leases, key(), GateConfig::default()).unwrap();
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(1_800_000_000_000));
    let c = clock.clone();
    g.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
    let sent = g.submit(&proposal(500)).unwrap();
    assert_eq!(sent.status, Status::InFlight);
    let mut c = client(&schema);
    c.batch_execute(
        "ALTER TABLE interlock_entries DISABLE TRIGGER interlock_entries_append_only; \
         UPDATE interlock_entries SET line = replace(line, '\"amount\":500', '\"amount\":900') \
         WHERE line LIKE '%\"DISPATCHED\"%'; \
         ALTER TABLE interlock_entries ENABLE TRIGGER interlock_entries_append_only;",
    )
    .unwrap();
    for _ in 0..5 {
        match g.recover_effect(&sent.effect_id) {
            Ok(Some(RecoveryOutcome::Blocked { until_ms, .. })) => {
                let now = clock.load(Ordering::SeqCst);
                clock.fetch_add(until_ms.saturating_sub(now) + 1, Ordering::SeqCst);
            }
            _ => break,
        }
    }
    assert_eq!(target.apply_calls(), 1, "the edited payload was sent");
}

/// A signed PROPOSED of a new effect, and its JSON line, as a gate of the test key writes it.
fn proposed_line(eid: &str) -> (String, String) {
    let mut e = serde_json::Map::new();
    e.insert("v".into(), json!(1));
    e.insert("ts_ms".into(), json!(1_800_000_000_000u64));
    e.insert("kind".into(), json!("PROPOSED"));
    e.insert("effect_id".into(), json!(eid));
    e.insert("agent".into(), json!("late"));
    e.insert("lease".into(), json!("lease-1"));
    e.insert("premises".into(), json!({}));
    e.insert("effect".into(), json!({"late": true}));
    e.insert("prev".into(), serde_json::Value::Null);
    verify::entry::seal(&mut e, &key()).unwrap();
    let hash = e["hash"].as_str().unwrap().to_owned();
    (hash, serde_json::to_string(&e).unwrap())
}

/// Rows of concurrent writers commit out of `seq` order. A row whose transaction took its `seq`
/// before other writers' rows but commits after a reader caught up past them is still read by
/// that reader's next catch-up (mutant: catching up by `seq` alone skipped it for good).
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_row_that_commits_late_is_not_missed_by_catch_up() {
    let Some((schema, at)) = database("a_row_that_commits_late_is_not_missed_by_catch_up") else {
        return;
    };
    let writer = gate(&at, MemTarget::new(Tier::One, true));
    let reader = gate(&at, MemTarget::new(Tier::One, true));
    let late = "late-effect";
    let (hash, line) = proposed_line(late);
    let mut c = client(&schema);
    let mut tx = c.transaction().unwrap();
    // Takes its seq (and its transaction id) now; commits only at the end.
    tx.execute(
        "WITH mark AS (INSERT INTO interlock_marks (hash) VALUES ($2)) \
         INSERT INTO interlock_entries (effect_id, prev, hash, line) VALUES ($1, NULL, $2, $3)",
        &[&late, &hash, &line],
    )
    .unwrap();
    assert_eq!(
        writer.submit(&proposal(1000)).unwrap().status,
        Status::Committed
    );
    // The reader catches up past the writer's rows, whose seqs follow the open row's.
    assert_eq!(reader.effect_ids().unwrap().len(), 1);
    tx.commit().unwrap();
    let ids = reader.effect_ids().unwrap();
    assert!(ids.iter().any(|e| e == late), "{ids:?}");
    assert_eq!(reader.entries(late).unwrap().len(), 1);
}

/// Budget admission on PostgreSQL takes the budget's own lock, not a journal-wide one: writers
/// of many effects under one budget, each with its own sessions, never pass its cap together.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn concurrent_admissions_under_one_budget_never_pass_its_cap() {
    let Some((_schema, at)) = database("concurrent_admissions_under_one_budget_never_pass_its_cap")
    else {
        return;
    };
    let target = Arc::new(MemTarget::new(Tier::One, true));
    let budgets = Arc::new(interlock::testing::MemBudgets::with_caps([(
        "order-9", 5_000,
    )]));
    let gates: Vec<_> = (0..10)
        .map(|_| {
            let leases = Arc::new(MemLeases::new());
            leases.grant(&json!("lease-1"));
            let mut g =
                Gate::open_at(&at, target.clone(), leases, key(), GateConfig::default()).unwrap();
            g.set_budgets(Box::new(budgets.clone()));
            g
        })
        .collect();
    let statuses: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = gates
            .iter()
            .enumerate()
            .map(|(i, g)| {
                scope.spawn(move || {
                    (0..3)
                        .map(|n| {
                            let p = interlock::Proposal {
                                agent: "bot".into(),
                                lease: json!("lease-1"),
                                premises: json!({}),
                                effect: json!({"refund": 700, "i": i, "n": n}),
                                request_id: Some(format!("refund-{i}-{n}")),
                                budget: Some(interlock::Budget {
                                    id: "order-9".into(),
                                    amount: 700,
                                }),
                            };
                            g.submit(&p).unwrap().status.as_str().to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let committed = statuses.iter().filter(|s| *s == "COMMITTED").count();
    let refused = statuses
        .iter()
        .filter(|s| *s == "REFUSED:over_budget")
        .count();
    // 7 x 700 = 4,900 fits under 5,000; an eighth would not.
    assert_eq!((committed, refused), (7, 23), "{statuses:?}");
    assert_eq!(target.landed_total(), 7);
}

/// From the gate review: a gate from before per-effect locks appends under the journal-wide
/// lock `(ns, 1)`, which current gates never take; mixed, both were admitted over a budget's
/// cap. A current gate now holds that lock shared for its session's life, so an older gate's
/// exclusive take times out (it gets `Busy`) instead of racing. (The URL here also asks for
/// asynchronous commit, which the gate overrides: it sets synchronous commit on its sessions.)
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn an_older_gates_journal_lock_cannot_be_taken_while_a_current_gate_runs() {
    let Some((schema, at)) =
        database("an_older_gates_journal_lock_cannot_be_taken_while_a_current_gate_runs")
    else {
        return;
    };
    let Location::Postgres(url) = &at else {
        unreachable!()
    };
    let lax = Location::Postgres(format!("{url}%20-c%20synchronous_commit%3Doff"));
    let g = gate(&lax, MemTarget::new(Tier::Three, false));
    let mut other = client(&schema);
    let ns = interlock::testing::pg_journal_namespace(&schema);
    let held: Vec<String> = other
        .query(
            "SELECT application_name FROM pg_locks JOIN pg_stat_activity USING (pid) \
             WHERE locktype = 'advisory' AND mode = 'ShareLock' AND classid = $1::bigint::oid \
             AND objid = 1 AND objsubid = 2",
            &[&i64::from(ns)],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(held, ["interlock-journal"]);
    other.batch_execute("SET lock_timeout = 200").unwrap();
    let taken = other.execute("SELECT pg_advisory_lock($1, 1)", &[&ns]);
    assert!(taken.is_err(), "an older gate's exclusive lock was granted");
    drop(g);
    let mut after = client(&schema);
    after.batch_execute("SET lock_timeout = 2000").unwrap();
    after
        .execute("SELECT pg_advisory_lock($1, 1)", &[&ns])
        .unwrap();
}

/// A count of the locks of `locktype` that the sessions of the journal in `schema` wait for
/// (each holds the older gates' journal lock, namespace and 1, shared). Other tests' gates run
/// in the same cluster at the same time: a count over every session saw their waits as this
/// test's and went on before this test's gate had got there.
fn journal_sessions_waiting(schema: &str, locktype: &str) -> String {
    let ns = i64::from(interlock::testing::pg_journal_namespace(schema));
    format!(
        "SELECT count(*) FROM pg_locks l WHERE NOT l.granted AND l.locktype = '{locktype}' \
         AND l.pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' \
         AND classid::bigint = {ns} AND objid::bigint = 1 AND objsubid = 2)"
    )
}

/// Waits (polling, bounded) until `sql`'s count is positive.
fn until_counted(c: &mut postgres::Client, what: &str, sql: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n: i64 = c.query_one(sql, &[]).unwrap().get(0);
        if n > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// From the gate review of per-effect locks: an effect's lock and its catch-up go to the server
/// in one round trip, and the catch-up must see what the lock's last holder committed. Under a
/// session default of repeatable read (a URL option here; a role's setting does the same) the
/// catch-up's snapshot was taken before the lock was granted. Sequence: sender A's send is
/// rejected and its lookup finds nothing; under the effect's lock A confirms its claim, then its
/// claims session is ended while its REFUSED:target_error INSERT waits (held by a table lock);
/// recoverer B takes the freed claim and waits for the effect's lock; A commits; B read the
/// dispatch as open and resent it (tier 1), and it landed beside A's REFUSED answer.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_dispatch_settled_refused_while_recovery_waited_is_never_resent_under_any_isolation_default() {
    for isolation in [None, Some("repeatable%5C%20read"), Some("serializable")] {
        let Some((schema, at)) = database("a_dispatch_settled_refused_while_recovery_waited")
        else {
            return;
        };
        let at = match (at, isolation) {
            (Location::Postgres(u), Some(i)) => {
                Location::Postgres(format!("{u}%20-c%20default_transaction_isolation%3D{i}"))
            }
            (at, _) => at,
        };
        let holder = Arc::new(Mutex::new(client(&schema)));
        let first_lookup = Arc::new(AtomicBool::new(true));
        let target = {
            let (holder, first_lookup) = (Arc::clone(&holder), Arc::clone(&first_lookup));
            MemTarget::new(Tier::One, true).with_query_hook(Box::new(move |_eid| {
                if first_lookup.swap(false, Ordering::SeqCst) {
                    // A's lookup after its rejected send: A's settling INSERT will now wait.
                    holder
                        .lock()
                        .unwrap()
                        .batch_execute("BEGIN; LOCK TABLE interlock_marks IN SHARE MODE")
                        .unwrap();
                }
            }))
        };
        target.set_fact("incident_compensation", json!(0));
        target.push_faults([Fault::Rejected]);
        let target = Arc::new(target);
        let leases = Arc::new(MemLeases::new());
        leases.grant(&json!("lease-1"));
        let open = || {
            Gate::open_at(
                &at,
                Arc::clone(&target),
                Arc::clone(&leases),
                key(),
                GateConfig::default(),
            )
            .unwrap()
        };
        let (a_gate, b_gate) = (open(), open());
        let p = proposal(1000);
        let eid = effect_id(&p);
        let mut watch = client(&schema);
        let (a_answer, b_recovered) = std::thread::scope(|s| {
            let a = s.spawn(|| a_gate.submit(&p).unwrap().status);
            until_counted(
                &mut watch,
                "A's settling INSERT waits for the table lock",
                &journal_sessions_waiting(&schema, "relation"),
            );
            // A confirmed its claim under the effect's lock; now its claims session ends.
            let pid: i32 = watch
                .query_one(
                    "SELECT a.pid FROM pg_stat_activity a WHERE a.application_name = $1 \
                     AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid \
                     AND l.locktype = 'advisory' AND l.granted)",
                    &[&format!("interlock-claims {schema}")],
                )
                .unwrap()
                .get(0);
            watch
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .unwrap();
            until_counted(
                &mut watch,
                "A's claims session is gone",
                &format!("SELECT 1 - count(*) FROM pg_stat_activity WHERE pid = {pid}"),
            );
            let b = s.spawn(|| b_gate.recover());
            until_counted(
                &mut watch,
                "B waits for the effect's lock (A's section holds it)",
                &journal_sessions_waiting(&schema, "advisory"),
            );
            holder.lock().unwrap().batch_execute("COMMIT").unwrap();
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!(
            a_answer,
            Status::Refused(interlock::RefusalCode::TargetError),
            "isolation {isolation:?}"
        );
        assert!(
            b_recovered.is_ok(),
            "isolation {isolation:?}: {b_recovered:?}"
        );
        assert_eq!(
            target.landed(&eid),
            0,
            "isolation {isolation:?}: an effect settled REFUSED:target_error (never resent) landed"
        );
    }
}

/// Every lease live; a check of lease `"slow"` stops at `hold` when it is armed: a lease store
/// that takes as long as the test wants.
struct SlowLeases {
    hold: Arc<Hold>,
}

impl interlock::LeaseStore for SlowLeases {
    fn check(
        &self,
        lease: &serde_json::Value,
        _effect: &serde_json::Value,
    ) -> Result<interlock::LeaseCheck, interlock::LeaseError> {
        if lease == &json!("slow") {
            self.hold.stop_here();
        }
        Ok(interlock::LeaseCheck {
            live: true,
            grant: Some(json!({"lease": lease})),
        })
    }
}

/// DESIGN §2.7: a slow lease store stalls only the effect whose section asked it. While one
/// thread's dispatch-time lease check (inside its effect's section, under its claim) does not
/// answer, another thread of the same gate submits another effect to the end and `status`
/// answers; then the slow one commits. Before sections had connections of their own, the
/// second submit waited for the first's section.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_slow_lease_store_stalls_only_the_effect_that_asked_it() {
    let Some((_schema, at)) = database("a_slow_lease_store_stalls_only_the_effect_that_asked_it")
    else {
        return;
    };
    let hold = Arc::new(Hold::default());
    let target = Arc::new(MemTarget::new(Tier::One, true));
    target.set_fact("incident_compensation", json!(0));
    let leases = SlowLeases { hold: hold.clone() };
    let mut g = Gate::open_at(&at, target.clone(), leases, key(), GateConfig::default()).unwrap();
    // Armed once the slow effect is authorized: its next lease check is the one under the claim.
    let h = hold.clone();
    g.set_observer(Box::new(move |step| {
        if step == Step::Authorized {
            h.arm();
        }
    }));
    let mut slow = proposal(1000);
    slow.lease = json!("slow");
    slow.request_id = Some("slow".into());
    let mut other = proposal(2000);
    other.request_id = Some("other".into());
    let (slow_eid, other_eid) = (effect_id(&slow), effect_id(&other));
    let g = &g;
    let (other_answer, status_meanwhile, slow_answer) = std::thread::scope(|scope| {
        let slow_thread = scope.spawn(|| g.submit(&slow));
        hold.wait_reached();
        let other_answer = g.submit(&other).map(|s| s.status);
        let status_meanwhile = g.status(&slow_eid);
        hold.release();
        (
            other_answer,
            status_meanwhile,
            slow_thread.join().unwrap().map(|s| s.status),
        )
    });
    assert_eq!(other_answer.unwrap(), Status::Committed);
    // Proposed and authorized, not dispatched: nothing decided yet.
    assert_eq!(status_meanwhile.unwrap(), None);
    assert_eq!(slow_answer.unwrap(), Status::Committed);
    assert_eq!(target.landed(&slow_eid), 1);
    assert_eq!(target.landed(&other_eid), 1);
}

/// DESIGN §2.7: a main connection the server ended while it sat in the gate's pool (a restart,
/// an operator's `pg_terminate_backend`) costs no call an error: the section that finds it lost
/// opens again on a new connection (the lost session's locks went with it). Before the retry,
/// the first submit after the sessions ended failed with a database error.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_pooled_connection_the_server_ended_is_replaced_without_an_error() {
    let Some((schema, at)) =
        database("a_pooled_connection_the_server_ended_is_replaced_without_an_error")
    else {
        return;
    };
    let g = gate(&at, MemTarget::new(Tier::One, true));
    assert_eq!(g.submit(&proposal(1000)).unwrap().status, Status::Committed);
    // Every main session of this journal holds the older gates' journal lock (namespace, 1)
    // shared: end those, as a restart would.
    let ns = i64::from(interlock::testing::pg_journal_namespace(&schema));
    let mut c = client(&schema);
    let ended: i64 = c
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(l.pid, 30000) AS ended \
             FROM pg_locks l WHERE l.locktype = 'advisory' AND l.classid::bigint = $1 \
             AND l.objid::bigint = 1 AND l.objsubid = 2) t WHERE ended",
            &[&ns],
        )
        .unwrap()
        .get(0);
    assert!(ended >= 1, "no main session of the gate was found to end");
    let mut second = proposal(2000);
    second.request_id = Some("req-2".into());
    assert_eq!(
        g.submit(&second)
            .map(|s| s.status)
            .map_err(|e| e.to_string()),
        Ok(Status::Committed)
    );
    assert_eq!(
        g.status(&effect_id(&proposal(1000))).unwrap(),
        Some(Status::Committed)
    );
}

/// Advisory locks (one-key form: effects, budgets, claims) held by the main sessions of the
/// journal in `schema` (each holds the older gates' journal lock, namespace and 1, shared).
/// Other tests' gates run in the same process: only this journal's sessions count.
fn gate_advisory_locks(c: &mut postgres::Client, schema: &str) -> i64 {
    let ns = i64::from(interlock::testing::pg_journal_namespace(schema));
    c.query_one(
        "SELECT count(*) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted \
         AND l.objsubid = 1 AND l.pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' \
         AND classid::bigint = $1 AND objid::bigint = 1 AND objsubid = 2)",
        &[&ns],
    )
    .unwrap()
    .get(0)
}

fn short_lock_wait() -> GateConfig {
    GateConfig {
        journal_lock_wait: Duration::from_millis(300),
        ..GateConfig::default()
    }
}

/// From the gate review of the connection pool: an effect's lock can be granted while the
/// round trip that took it still fails with `Busy` (here the catch-up waits for a table lock an
/// operator holds; the lock wait can also fire as the last holder lets go). The store let go
/// only when the error was not `Busy`, so the connection went back to the pool holding the
/// lock, and every other gate was `Busy` on that effect for as long as this gate lived.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_lock_granted_to_a_round_trip_that_failed_is_let_go() {
    let Some((schema, at)) = database("a_lock_granted_to_a_round_trip_that_failed_is_let_go")
    else {
        return;
    };
    let target = Arc::new(MemTarget::new(Tier::One, true));
    target.set_fact("incident_compensation", json!(0));
    let a = Gate::open_at(&at, target.clone(), leases(), key(), short_lock_wait()).unwrap();
    let b = Gate::open_at(&at, target.clone(), leases(), key(), short_lock_wait()).unwrap();
    let p = proposal(1000);
    let mut admin = client(&schema);
    admin
        .batch_execute("BEGIN; LOCK TABLE interlock_marks IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let during = a.submit(&p).map(|s| s.status).map_err(|e| e.to_string());
    admin.batch_execute("COMMIT").unwrap();
    assert!(
        during
            .as_ref()
            .is_err_and(|e| e.contains("held the journal lock")),
        "{during:?}"
    );
    let mut watch = client(&schema);
    assert_eq!(
        gate_advisory_locks(&mut watch, &schema),
        0,
        "a pooled connection kept the effect's lock"
    );
    assert_eq!(b.submit(&p).unwrap().status, Status::Committed);
}

/// The same for a budget's lock (taken with its catch-up in one round trip since sections have
/// connections of their own): leaked into the pool, it made every other gate's admission under
/// the budget `Busy`.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn a_budget_lock_granted_to_a_round_trip_that_failed_is_let_go() {
    let Some((schema, at)) =
        database("a_budget_lock_granted_to_a_round_trip_that_failed_is_let_go")
    else {
        return;
    };
    let target = Arc::new(MemTarget::new(Tier::One, true));
    target.set_fact("incident_compensation", json!(0));
    let budgets = Arc::new(interlock::testing::MemBudgets::with_caps([(
        "order-9", 100_000,
    )]));
    let hold = Arc::new(Hold::default());
    let slow = SlowLeases { hold: hold.clone() };
    let mut a = Gate::open_at(&at, target.clone(), slow, key(), short_lock_wait()).unwrap();
    a.set_budgets(Box::new(budgets.clone()));
    let h = hold.clone();
    a.set_observer(Box::new(move |step| {
        if step == Step::Authorized {
            h.arm();
        }
    }));
    let mut b = Gate::open_at(&at, target.clone(), leases(), key(), short_lock_wait()).unwrap();
    b.set_budgets(Box::new(budgets.clone()));
    let budgeted = |i: usize, lease: &str| interlock::Proposal {
        agent: "bot".into(),
        lease: json!(lease),
        premises: json!({}),
        effect: json!({"refund": 100, "i": i}),
        request_id: Some(format!("refund-{i}")),
        budget: Some(interlock::Budget {
            id: "order-9".into(),
            amount: 100,
        }),
    };
    let mut admin = client(&schema);
    let a = &a;
    let first = std::thread::scope(|s| {
        let t = s.spawn(|| a.submit(&budgeted(0, "slow")));
        // A is in its effect's section, checking the lease under the claim; the budget's lock
        // and catch-up come next, while an operator holds a table the catch-up reads.
        hold.wait_reached();
        admin
            .batch_execute("BEGIN; LOCK TABLE interlock_marks IN ACCESS EXCLUSIVE MODE")
            .unwrap();
        hold.release();
        let r = t.join().unwrap();
        admin.batch_execute("COMMIT").unwrap();
        r
    });
    assert!(first.is_err(), "{first:?}");
    let mut watch = client(&schema);
    assert_eq!(
        gate_advisory_locks(&mut watch, &schema),
        0,
        "a pooled connection kept the budget's lock"
    );
    for i in 1..3 {
        assert_eq!(
            b.submit(&budgeted(i, "lease-1")).unwrap().status,
            Status::Committed
        );
    }
}

/// From the gate review of the connection pool: sections of one gate read concurrently, and
/// the first to fold a batch in checked its signatures and marks only afterwards, so a second
/// section whose read overlapped skipped the forged row as indexed and answered from it:
/// `status` said COMMITTED for an effect the target never received. Rows are now checked
/// before any is folded in, under the index's lock. A forged COMMITTED (hash and chain right,
/// a trusted signer named, another entry's signature) after an open dispatch; then six threads
/// ask `status` at once, eight times over.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn concurrent_readers_never_answer_from_a_row_whose_signature_fails() {
    concurrent_readers_meet_a_forged_row(
        "concurrent_readers_never_answer_from_a_row_whose_signature_fails",
        false,
    );
}

/// The same with a validly signed row of a fork of the schema, inserted without its mark.
#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn concurrent_readers_never_answer_from_an_unmarked_row() {
    concurrent_readers_meet_a_forged_row(
        "concurrent_readers_never_answer_from_an_unmarked_row",
        true,
    );
}

fn concurrent_readers_meet_a_forged_row(test: &str, unmarked: bool) {
    let p = proposal(1000);
    let eid = effect_id(&p);
    // A genuine COMMITTED of the same proposal, from a scratch journal: its fields are copied.
    let dir = tempfile::tempdir().unwrap();
    let scratch_at = Location::File(dir.path().join("scratch.jsonl"));
    gate(&scratch_at, MemTarget::new(Tier::One, false))
        .submit(&p)
        .unwrap();
    let scratch = interlock::read_entries(&scratch_at).unwrap();
    let scratch_dispatch =
        scratch.iter().find(|e| e["kind"] == "DISPATCHED").unwrap()["hash"].clone();
    let template = scratch
        .iter()
        .find(|e| e["kind"] == "COMMITTED")
        .unwrap()
        .clone();
    for attempt in 0..8 {
        let Some((schema, at)) = database(test) else {
            return;
        };
        let target = MemTarget::new(Tier::One, false);
        target.push_faults([Fault::Unknown]);
        let victim = gate(&at, target);
        victim.submit(&p).unwrap();
        assert_eq!(victim.status(&eid).unwrap(), Some(Status::InFlight));
        let rows = interlock::read_entries(&at).unwrap();
        let d = rows.last().unwrap().clone();
        assert_eq!(d["kind"], "DISPATCHED");
        let d_hash = d["hash"].as_str().unwrap().to_owned();
        let mut forged = template.as_object().unwrap().clone();
        for v in forged.values_mut() {
            if *v == scratch_dispatch {
                *v = json!(d_hash);
            }
        }
        forged.insert("prev".into(), json!(d_hash));
        forged.insert("ts_ms".into(), json!(d["ts_ms"].as_u64().unwrap() + 1));
        verify::entry::seal(&mut forged, &key()).unwrap();
        if !unmarked {
            forged.insert("sig".into(), d["sig"].clone());
        }
        let line = serde_json::to_string(&forged).unwrap();
        let hash = forged["hash"].as_str().unwrap().to_owned();
        // Every reader below finds an idle connection waiting.
        let warm = std::sync::Barrier::new(6);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    warm.wait();
                    victim.status(&eid).unwrap();
                });
            }
        });
        let sql = if unmarked {
            "INSERT INTO interlock_entries (effect_id, prev, hash, line) VALUES ($1, $2, $3, $4)"
        } else {
            "WITH mark AS (INSERT INTO interlock_marks (hash) VALUES ($3)) \
             INSERT INTO interlock_entries (effect_id, prev, hash, line) VALUES ($1, $2, $3, $4)"
        };
        client(&schema)
            .execute(sql, &[&eid, &d_hash, &hash, &line])
            .unwrap();
        let at_once = std::sync::Barrier::new(6);
        let answers: Vec<String> = std::thread::scope(|s| {
            let asks: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        at_once.wait();
                        format!("{:?}", victim.status(&eid))
                    })
                })
                .collect();
            asks.into_iter().map(|a| a.join().unwrap()).collect()
        });
        assert!(
            answers.iter().all(|a| a.starts_with("Err(")),
            "attempt {attempt}: a reader answered from the forged row (the target has {}): \
             {answers:?}",
            victim.target().landed(&eid)
        );
    }
}
