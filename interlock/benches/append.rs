//! Append latency (with fsync) at journal sizes 1k, 10k and 100k entries, one JSON line per
//! measurement. The big journals are built fast (pre-sealed lines written without fsync); then a
//! few hundred real appends are timed at each size. Append cost must not grow with the journal:
//! the ratio to the 1k figure should stay within 1.5.
//!
//! Run: `cargo bench -p interlock --bench append` (env `APPEND_SAMPLES` overrides 300).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use interlock::journal::Journal;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::time::Instant;
use verify::entry::{seal, Kind};

fn fields(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// Four entries per effect (PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED), properly chained and
/// signed, written as one buffered write without fsync.
fn build(path: &std::path::Path, entries: usize, key: &SigningKey) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let kinds = [
        Kind::Proposed,
        Kind::Authorized,
        Kind::Dispatched,
        Kind::Committed,
    ];
    let mut prev = Value::Null;
    for i in 0..entries {
        let eid = format!("{:064x}", i / 4);
        let kind = kinds[i % 4];
        if i % 4 == 0 {
            prev = Value::Null;
        }
        let body = match kind {
            Kind::Proposed => {
                json!({"agent": "bench", "lease": "lease-1", "premises": {"incident_compensation": 0}, "effect": {"amount": 1000, "customer": "cus_bench"}})
            }
            Kind::Authorized => json!({"lease": "lease-1"}),
            Kind::Dispatched => {
                json!({"effect": {"amount": 1000, "customer": "cus_bench"}, "lease": "lease-1", "premises": {"incident_compensation": 0}, "checks": {"lease_live": true, "grant": null, "violations": []}})
            }
            _ => json!({"via": "send", "evidence": {"id": format!("cbtxn_{i}")}}),
        };
        let mut e = Map::new();
        e.insert("v".into(), json!(1));
        e.insert("ts_ms".into(), json!(1_800_000_000_000u64 + i as u64));
        e.insert("kind".into(), json!(kind.as_str()));
        e.insert("effect_id".into(), json!(eid));
        for (k, v) in fields(body) {
            e.insert(k, v);
        }
        e.insert("prev".into(), prev.clone());
        seal(&mut e, key).unwrap();
        prev = e["hash"].clone();
        serde_json::to_writer(&mut out, &e).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn main() {
    let samples: usize = std::env::var("APPEND_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let key = SigningKey::from_bytes(&[9u8; 32]);
    // The default temp dir (a real disk: fsync dominates), and /dev/shm when present (fsync is
    // nearly free there, so the gate's own per-append work shows).
    let mut places = vec![("tempdir", tempfile::tempdir().unwrap())];
    if std::path::Path::new("/dev/shm").is_dir() {
        if let Ok(d) = tempfile::tempdir_in("/dev/shm") {
            places.push(("dev_shm", d));
        }
    }
    for (place, dir) in &places {
        measure(place, dir.path(), samples, &key);
    }
}

fn measure(place: &str, dir: &std::path::Path, samples: usize, key: &SigningKey) {
    let mut base_median = None;
    for size in [1_000usize, 10_000, 100_000] {
        let path = dir.join(format!("j{size}.jsonl"));
        let t = Instant::now();
        build(&path, size, key);
        let build_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let journal = Journal::open(
            &path,
            vec![key.verifying_key()],
            std::time::Duration::from_secs(10),
        )
        .unwrap();
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        let bytes = std::fs::metadata(&path).unwrap().len();
        let mut lat = Vec::with_capacity(samples);
        for i in 0..samples {
            // New effects and existing ones alternate: both kinds of prev lookup are timed.
            let eid = if i % 2 == 0 {
                format!("{:064x}", 1_000_000 + i)
            } else {
                format!("{:064x}", (i * 7919) % (size / 4))
            };
            let f = fields(
                json!({"agent": "bench", "lease": "lease-1", "premises": {}, "effect": {"amount": 1000, "n": i}}),
            );
            let t = Instant::now();
            journal
                .append_entry(&eid, Kind::Proposed, f, 1_900_000_000_000, key)
                .unwrap();
            lat.push(t.elapsed().as_secs_f64() * 1e6);
        }
        lat.sort_by(f64::total_cmp);
        let median = percentile(&lat, 0.5);
        let p95 = percentile(&lat, 0.95);
        let base = *base_median.get_or_insert(median);
        println!(
            "{}",
            json!({
                "bench": "journal_append_fsync",
                "dir": place,
                "journal_entries": size,
                "journal_bytes": bytes,
                "samples": samples,
                "median_us": (median * 10.0).round() / 10.0,
                "p95_us": (p95 * 10.0).round() / 10.0,
                "ratio_to_1k": (median / base * 100.0).round() / 100.0,
                "within_1_5x": median / base <= 1.5,
                "build_ms": build_ms.round(),
                "open_and_index_ms": (open_ms * 10.0).round() / 10.0,
            })
        );
        drop(journal);
        let _ = std::fs::remove_file(&path);
    }
}
