//! What only the PostgreSQL store has to show: the database itself keeps every chain linear and
//! append-only, rows are checked like lines, the schema is versioned, and a sender whose claim
//! session is gone does not send.
//!
//! Needs `INTERLOCK_TEST_PG_URL` (`.ci/pg-cluster start` sets it). Without it these tests say
//! they were skipped — and fail when `CI` is set, so CI cannot skip them silently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use interlock::testing::{Fault, MemLeases, MemTarget};
use interlock::{Gate, GateConfig, Location, RecoveryOutcome, Status, Step, Tier};
use serde_json::json;
use std::sync::Arc;

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
    let version: i32 = c
        .query_one("SELECT max(version) FROM interlock_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 1);
    // Opening again migrates nothing and reads the same journal.
    let again = gate(&at, MemTarget::new(Tier::One, true));
    assert_eq!(again.effect_ids().unwrap(), g.effect_ids().unwrap());
}

#[test]
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
    let out = recoverer.recover().unwrap();
    assert_eq!(
        out[0].outcome,
        RecoveryOutcome::Resolved(Status::ReappliedAfterQuery)
    );
    assert_eq!(target.landed(&s.effect_id), 1);
    let _ = (schema, Fault::Ok);
}

fn leases() -> Arc<MemLeases> {
    let l = MemLeases::new();
    l.grant(&json!("lease-1"));
    Arc::new(l)
}

#[test]
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
    assert!(err.contains("search_path"), "the error names what to fix: {err}");
}
