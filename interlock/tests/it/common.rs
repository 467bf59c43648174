//! Shared helpers for the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::{Signature, SigningKey, Verifier};
use interlock::testing::{MemLeases, MemTarget};
use interlock::{Gate, GateConfig, Proposal, Tier};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub type MemGate = Gate<Arc<MemTarget>, Arc<MemLeases>>;

pub fn key() -> SigningKey {
    SigningKey::from_bytes(&[42u8; 32])
}

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub gate: MemGate,
    pub target: Arc<MemTarget>,
    pub leases: Arc<MemLeases>,
    pub clock: Arc<AtomicU64>,
}

impl Setup {
    pub fn now(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }
    pub fn advance(&self, ms: u64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }
    pub fn kinds(&self, eid: &str) -> Vec<String> {
        kinds(&self.gate.entries(eid).unwrap())
    }
    pub fn last(&self, eid: &str) -> Value {
        self.gate.entries(eid).unwrap().last().cloned().unwrap()
    }
}

/// Which journal store the suites run against: `INTERLOCK_TEST_STORE=postgres` (with
/// `INTERLOCK_TEST_PG_URL`) runs them against PostgreSQL, each test in a fresh schema; anything
/// else against a JSONL file in the test's temporary directory.
pub fn on_postgres() -> bool {
    let asked = std::env::var("INTERLOCK_TEST_STORE").as_deref() == Ok("postgres");
    assert!(
        !asked || cfg!(feature = "postgres"),
        "INTERLOCK_TEST_STORE=postgres needs interlock's `postgres` feature (on by default)"
    );
    asked
}

/// Say that a file-only test does not apply to the store under test.
pub fn file_only(test: &str) -> bool {
    if on_postgres() {
        eprintln!("{test}: about the JSONL file itself; not run against PostgreSQL");
        return true;
    }
    false
}

/// A fresh journal location for one test: `dir/journal.jsonl`, or a new schema of the test
/// database.
pub fn store_at(dir: &std::path::Path) -> interlock::Location {
    if !on_postgres() {
        return interlock::Location::File(dir.join("journal.jsonl"));
    }
    let url = std::env::var("INTERLOCK_TEST_PG_URL")
        .expect("INTERLOCK_TEST_STORE=postgres needs INTERLOCK_TEST_PG_URL (see .ci/pg-cluster)");
    let schema = format!("t_{:016x}", rand::random::<u64>());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    interlock::Location::Postgres(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
}

/// Every entry at `location`, in append order.
pub fn read_store(location: &interlock::Location) -> Vec<Value> {
    interlock::read_entries(location).unwrap()
}

pub fn setup_with(target: MemTarget) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let target = Arc::new(target);
    target.set_fact("incident_compensation", json!(0));
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
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
    Setup {
        dir,
        gate,
        target,
        leases,
        clock,
    }
}

pub fn setup(tier: Tier, queryable: bool) -> Setup {
    setup_with(MemTarget::new(tier, queryable))
}

pub fn proposal(amount: i64) -> Proposal {
    Proposal {
        agent: "agent-1".into(),
        lease: json!("lease-1"),
        premises: json!({"incident_compensation": 0}),
        effect: json!({"amount": amount, "customer": "cus_1"}),
        request_id: Some("req-1".into()),
        budget: None,
    }
}

pub fn kinds(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// Every entry: hash recomputes, prev links, signature valid for the test key, integer ts.
pub fn assert_chain(entries: &[Value]) {
    let pk = key().verifying_key();
    let mut prev = Value::Null;
    for (i, e) in entries.iter().enumerate() {
        let m = e.as_object().unwrap();
        assert_eq!(m["v"], json!(1), "entry {i}");
        assert!(m["ts_ms"].is_u64(), "entry {i}: ts_ms");
        assert_eq!(m["prev"], prev, "entry {i}: prev");
        let hash = verify::entry::compute_hash(m).unwrap();
        assert_eq!(m["hash"], json!(hash), "entry {i}: hash");
        assert_eq!(m["signer"], json!(hex::encode(pk.as_bytes())));
        let sig: [u8; 64] = hex::decode(m["sig"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        pk.verify(
            &verify::entry::signing_message(&hash),
            &Signature::from_bytes(&sig),
        )
        .unwrap_or_else(|e| panic!("entry {i}: signature: {e}"));
        if matches!(m["kind"].as_str(), Some("REFUSED" | "AMBIGUOUS")) {
            assert!(m["code"].is_string(), "entry {i}: code");
            let reason = m["reason"].as_str().unwrap();
            assert!(
                reason.ends_with('.'),
                "entry {i}: reason is a sentence: {reason}"
            );
        }
        prev = m["hash"].clone();
    }
}
