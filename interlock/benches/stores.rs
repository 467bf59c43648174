//! Both journal stores under concurrent writers: submits per second (each is four appends:
//! PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED, plus the claim) and submit latency p50/p99, with
//! 1, 4, 8 and 16 writers, each with its own gate and so its own store handle (own file
//! descriptors; own database sessions). Synchronous commit stays on. One JSON line per
//! measurement.
//!
//! Run: `cargo bench -p interlock --bench stores`. The PostgreSQL rows need
//! `INTERLOCK_TEST_PG_URL` (`.ci/pg-cluster start`); `STORES_SECONDS` sets the time per row
//! (default 3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use interlock::testing::{AllLive, MemTarget};
use interlock::{Gate, GateConfig, Location, Proposal, Tier};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn fresh_schema(url: &str) -> Location {
    let schema = format!("bench_{:016x}", rand::random::<u64>());
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("CREATE SCHEMA {schema}")).unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    Location::Postgres(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn measure(store: &str, at: &Location, writers: usize, seconds: f64) {
    let key = SigningKey::from_bytes(&[11u8; 32]);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (at, key, stop) = (at.clone(), key.clone(), stop.clone());
            std::thread::spawn(move || {
                let target = MemTarget::new(Tier::One, true);
                let gate = Gate::open_at(&at, target, AllLive, key, GateConfig::default()).unwrap();
                let mut lat = Vec::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let p = Proposal {
                        agent: "bench".into(),
                        lease: json!("lease-1"),
                        premises: json!({}),
                        effect: json!({"amount": 1000, "w": w, "n": n}),
                        request_id: Some(format!("w{w}-n{n}")),
                        budget: None,
                    };
                    let t = Instant::now();
                    let s = gate.submit(&p).unwrap();
                    lat.push(t.elapsed().as_secs_f64() * 1e3);
                    assert_eq!(s.status.as_str(), "COMMITTED");
                    n += 1;
                }
                lat
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut lat: Vec<f64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let elapsed = started.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let submits = lat.len() as f64;
    println!(
        "{}",
        json!({
            "bench": "journal_store_concurrent_submits",
            "store": store,
            "writers": writers,
            "seconds": (elapsed * 100.0).round() / 100.0,
            "submits": lat.len(),
            "submits_per_s": (submits / elapsed).round(),
            "appends_per_s": (4.0 * submits / elapsed).round(),
            "submit_p50_ms": (percentile(&lat, 0.5) * 100.0).round() / 100.0,
            "submit_p99_ms": (percentile(&lat, 0.99) * 100.0).round() / 100.0,
        })
    );
}

fn main() {
    let seconds: f64 = std::env::var("STORES_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    for writers in [1usize, 4, 8, 16] {
        let dir = tempfile::tempdir().unwrap();
        measure(
            "jsonl_file",
            &Location::File(dir.path().join("journal.jsonl")),
            writers,
            seconds,
        );
    }
    match std::env::var("INTERLOCK_TEST_PG_URL") {
        Ok(url) => {
            for writers in [1usize, 4, 8, 16] {
                measure("postgres", &fresh_schema(&url), writers, seconds);
            }
        }
        Err(_) => eprintln!("postgres rows skipped: INTERLOCK_TEST_PG_URL is not set"),
    }
}
