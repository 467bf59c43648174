//! Both journal stores under concurrent writers, in one run: appends per second (a submit is
//! four appends: PROPOSED, AUTHORIZED, DISPATCHED, COMMITTED, plus the claim and its record) and
//! submit latency p50/p99, with 1, 4, 8 and 16 writers, three ways:
//! - `shared_gate`: threads of one process sharing one gate (the file store's group commit);
//! - `own_gates`: threads of one process, each with a gate of its own (own descriptors, own
//!   database sessions);
//! - `processes`: one process per writer, each with its gate.
//!
//! What bounds the figures is measured in the same run and printed first: the fsync time of the
//! directory the file journals live in (`fsync`, and again before each row), the time of one
//! committed single-row INSERT on the database (`pg_commit`, a WAL flush), and per database row
//! the server's WAL syncs per second and per submit (five committed writes each: fewer syncs
//! than that is commits sharing a flush). The targets of the throughput issue are
//! printed as a last line per store with the measured ratio or rate (`target`). The file store's
//! `shared_gate` rows run again with every sync skipped (`jsonl_file_no_sync`, a test-only
//! switch): each writer count's ratio of durable to no-sync appends is its distance from the
//! CPU ceiling.
//!
//! The database's raw commit rate (single-row INSERTs committed one at a time on 1, 4, 8 and 16
//! sessions, `pg_raw_insert`) is measured in the same run, and the gate's appends at 8 writers
//! are printed as a ratio of it. So is what the server commits of the gate's own rows alone
//! (`pg_gate_row_insert`: the store's append statement on a fresh journal's tables, indexes and
//! triggers, with no effect lock, catch-up or signing): the part of the distance to the raw rate
//! that the rows themselves take, apart from the gate's protocol and CPU. And so is the ceiling
//! of the protocol of one round trip per append, on the server with no gate in front of it
//! (`pg_one_shot_ceiling`, and `pg_one_shot_ceiling_record_in_dispatch` with the claim's record
//! in DISPATCHED's transaction; see `stores/ceiling.rs`).
//!
//! Run: `cargo bench -p interlock --bench stores`. The PostgreSQL rows need
//! `INTERLOCK_TEST_PG_URL` (`.ci/pg-cluster start`); `STORES_SECONDS` sets the time per row
//! (default 3); `STORES_DIR` the directory of the file journals (default: the target's temporary
//! directory, on the build's disk — not a tmpfs, where fsync is free); `STORES_ONLY=file` or
//! `STORES_ONLY=postgres` runs one store's rows only; `STORES_WRITERS` (e.g. `16`) and
//! `STORES_MODES` (e.g. `shared_gate`) pick the file store's rows, comma-separated, for profiling one of them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use interlock::testing::{AllLive, MemTarget};
use interlock::{Gate, GateConfig, Location, Proposal, Tier};
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "stores/ceiling.rs"]
mod ceiling;

const WRITERS: [usize; 4] = [1, 4, 8, 16];
const MODES: [&str; 3] = ["shared_gate", "own_gates", "processes"];

/// The writer counts to run: `STORES_WRITERS` (comma-separated, e.g. `16`) or all four.
fn writer_counts() -> Vec<usize> {
    match std::env::var("STORES_WRITERS") {
        Ok(list) => list
            .split(',')
            .map(|w| {
                w.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("STORES_WRITERS: {w:?} is not a writer count"))
            })
            .collect(),
        Err(_) => WRITERS.to_vec(),
    }
}

/// The ways to run: `STORES_MODES` (comma-separated among [`MODES`]) or all three.
fn modes() -> Vec<&'static str> {
    match std::env::var("STORES_MODES") {
        Ok(list) => list
            .split(',')
            .map(|m| {
                MODES
                    .into_iter()
                    .find(|known| *known == m.trim())
                    .unwrap_or_else(|| panic!("STORES_MODES: {m:?} is not one of {MODES:?}"))
            })
            .collect(),
        Err(_) => MODES.to_vec(),
    }
}
const CHILD: &str = "STORES_CHILD";

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

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[11u8; 32])
}

fn open(at: &Location) -> Gate<MemTarget, AllLive> {
    Gate::open_at(
        at,
        MemTarget::new(Tier::One, true),
        AllLive,
        key(),
        GateConfig::default(),
    )
    .unwrap()
}

/// Submit distinct proposals of writer `w` through `gate` until `stop`; the latencies in ms.
fn submit_until(gate: &Gate<MemTarget, AllLive>, w: usize, stop: &AtomicBool) -> Vec<f64> {
    let mut lat = Vec::new();
    let mut n = 0u64;
    let run = rand::random::<u32>();
    while !stop.load(Ordering::Relaxed) {
        let p = Proposal {
            agent: "bench".into(),
            lease: json!("lease-1"),
            premises: json!({}),
            effect: json!({"amount": 1000, "w": w, "n": n, "run": run}),
            request_id: Some(format!("{run}-w{w}-n{n}")),
            budget: None,
        };
        let t = Instant::now();
        let s = gate.submit(&p).unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(s.status.as_str(), "COMMITTED");
        n += 1;
    }
    lat
}

/// Run `writers` writers the given way for `seconds`; every submit's latency (ms) and the
/// elapsed seconds.
fn run(mode: &str, at: &Location, writers: usize, seconds: f64) -> (Vec<f64>, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let lat: Vec<f64> = match mode {
        "shared_gate" => {
            let gate = open(at);
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..writers)
                    .map(|w| {
                        let (gate, stop) = (&gate, &stop);
                        scope.spawn(move || submit_until(gate, w, stop))
                    })
                    .collect();
                std::thread::sleep(Duration::from_secs_f64(seconds));
                stop.store(true, Ordering::Relaxed);
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap())
                    .collect()
            })
        }
        "own_gates" => {
            let gates: Vec<_> = (0..writers).map(|_| open(at)).collect();
            std::thread::scope(|scope| {
                let handles: Vec<_> = gates
                    .iter()
                    .enumerate()
                    .map(|(w, gate)| {
                        let stop = &stop;
                        scope.spawn(move || submit_until(gate, w, stop))
                    })
                    .collect();
                std::thread::sleep(Duration::from_secs_f64(seconds));
                stop.store(true, Ordering::Relaxed);
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap())
                    .collect()
            })
        }
        _ => {
            let exe = std::env::current_exe().unwrap();
            let children: Vec<_> = (0..writers)
                .map(|w| {
                    std::process::Command::new(&exe)
                        .env(
                            CHILD,
                            json!({"at": location_text(at), "w": w, "seconds": seconds})
                                .to_string(),
                        )
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            children
                .into_iter()
                .flat_map(|c| {
                    let out = c.wait_with_output().unwrap();
                    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                        .collect::<Vec<_>>()
                })
                .collect()
        }
    };
    (lat, started.elapsed().as_secs_f64())
}

fn location_text(at: &Location) -> String {
    match at {
        Location::File(p) => p.to_string_lossy().into_owned(),
        Location::Postgres(u) => u.clone(),
    }
}

/// A child of the `processes` way: open its gate, submit for the given time (counted from
/// when the gate is open), print the latencies as one JSON array.
fn child(spec: &str) {
    let spec: Value = serde_json::from_str(spec).unwrap();
    let at = Location::parse(spec["at"].as_str().unwrap());
    let w = spec["w"].as_u64().unwrap() as usize;
    let seconds = spec["seconds"].as_f64().unwrap();
    let gate = open(&at);
    let stop = AtomicBool::new(false);
    let lat = std::thread::scope(|scope| {
        let h = scope.spawn(|| submit_until(&gate, w, &stop));
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap()
    });
    println!("{}", json!(lat));
}

/// The server's WAL syncs so far (cumulative statistics, published by the server about once a
/// second: good over a row of seconds).
fn wal_syncs(url: &str) -> i64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.query_one("SELECT wal_sync FROM pg_stat_wal", &[])
        .unwrap()
        .get(0)
}

/// One row, with the fsync time of the file journals' directory measured right before it (the
/// disk is shared: its fsync time moves during a run) and, for the database, its WAL syncs and
/// commits during the row; returns appends per second.
fn measure(store: &str, mode: &str, at: &Location, writers: usize, seconds: f64) -> f64 {
    let (fsync_p50, _) = fsync_time(&bench_dir(), 40);
    let url = match at {
        Location::Postgres(u) => Some(u.clone()),
        Location::File(_) => None,
    };
    let before = url.as_deref().map(wal_syncs);
    let (mut lat, elapsed) = run(mode, at, writers, seconds);
    let wal = match (url.as_deref(), before) {
        (Some(u), Some(s0)) => {
            // Let the server publish the row's counters.
            std::thread::sleep(Duration::from_millis(1100));
            let syncs = (wal_syncs(u) - s0) as f64;
            // A submit commits five writes (four entries and the claim record): fewer syncs
            // per submit than that is commits sharing a WAL flush.
            json!({"wal_syncs_per_s": (syncs / elapsed).round(),
                   "wal_syncs_per_submit": round2(syncs / (lat.len().max(1) as f64))})
        }
        _ => Value::Null,
    };
    lat.sort_by(f64::total_cmp);
    let submits = lat.len() as f64;
    let appends = (4.0 * submits / elapsed).round();
    println!(
        "{}",
        json!({
            "bench": "journal_store_concurrent_submits",
            "store": store,
            "mode": mode,
            "writers": writers,
            "seconds": round2(elapsed),
            "submits": lat.len(),
            "submits_per_s": (submits / elapsed).round(),
            "appends_per_s": appends,
            "submit_p50_ms": round2(percentile(&lat, 0.5)),
            "submit_p99_ms": round2(percentile(&lat, 0.99)),
            "fsync_p50_ms_before": round2(fsync_p50),
            "wal": wal,
        })
    );
    appends
}

/// fdatasync of a small appended write in `dir`: p50 and p99 in ms over `samples`.
fn fsync_time(dir: &Path, samples: usize) -> (f64, f64) {
    let path = dir.join("fsync-probe");
    let f = std::fs::File::create(&path).unwrap();
    let line = [b'x'; 200];
    let mut lat = Vec::with_capacity(samples);
    for i in 0..samples {
        f.write_all_at(&line, (i * line.len()) as u64).unwrap();
        let t = Instant::now();
        f.sync_data().unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_file(&path);
    lat.sort_by(f64::total_cmp);
    (percentile(&lat, 0.5), percentile(&lat, 0.99))
}

/// Commits per second of `sessions` connections to `url`, each running `work` (its session
/// number, its connection, the stop flag; returns how many statements it committed) for
/// `seconds`.
fn session_rate(
    url: &str,
    sessions: usize,
    seconds: f64,
    work: impl Fn(usize, &mut postgres::Client, &AtomicBool) -> u64 + Sync,
) -> f64 {
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let commits: u64 = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..sessions)
            .map(|s| {
                let (stop, work) = (&stop, &work);
                scope.spawn(move || {
                    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                    work(s, &mut c, stop)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    (commits as f64 / started.elapsed().as_secs_f64()).round()
}

/// The server's raw commit rate: `sessions` connections, each committing single-row INSERTs one
/// at a time (as `pgbench` with a one-INSERT script) for `seconds`; commits per second.
fn raw_insert_rate(url: &str, sessions: usize, seconds: f64) -> f64 {
    let table = format!("bench_raw_{:08x}", rand::random::<u32>());
    let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("CREATE TABLE {table} (s int, n int)"))
        .unwrap();
    let rate = session_rate(url, sessions, seconds, |s, c, stop| {
        let insert = c
            .prepare(&format!("INSERT INTO {table} VALUES ($1, $2)"))
            .unwrap();
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            c.execute(&insert, &[&(s as i32), &(n as i32)]).unwrap();
            n += 1;
        }
        n
    });
    admin.batch_execute(&format!("DROP TABLE {table}")).unwrap();
    rate
}

/// The URL of a fresh schema on `url` holding a journal a gate made (its tables, indexes and
/// triggers), with no entry yet.
fn gate_schema(url: &str) -> String {
    let at = fresh_schema(url);
    drop(open(&at));
    match at {
        Location::Postgres(schema_url) => schema_url,
        Location::File(_) => unreachable!("fresh_schema gives a PostgreSQL location"),
    }
}

/// What the server commits of the gate's own rows, with nothing else: `sessions` connections to
/// a fresh journal (its schema made by a gate: the tables, indexes and triggers every append
/// meets), each committing the store's append statement one row at a time, with a line of the
/// size of a real entry, each session extending a chain of its own. No effect lock, no catch-up,
/// no signing: the ceiling the gate's appends are measured against besides the raw INSERT.
fn gate_row_insert_rate(url: &str, sessions: usize, seconds: f64) -> f64 {
    let schema_url = gate_schema(url);
    session_rate(&schema_url, sessions, seconds, |s, c, stop| {
        let append = c.prepare(interlock::testing::PG_APPEND_SQL).unwrap();
        let effect_id = format!("{s:064x}");
        let mut prev: Option<String> = None;
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let hash = format!("{:032x}{:032x}", rand::random::<u128>(), n);
            // About the size of a real entry's line (600 to 900 bytes).
            let line = format!(
                "{{\"effect_id\":\"{effect_id}\",\"hash\":\"{hash}\",\"pad\":\"{}\"}}",
                "x".repeat(700)
            );
            c.query_one(&append, &[&effect_id, &prev, &hash, &line])
                .unwrap();
            prev = Some(hash);
            n += 1;
        }
        n
    })
}

/// One committed single-row INSERT (a WAL flush with synchronous commit): p50 and p99 in ms.
fn pg_commit_time(url: &str, samples: usize) -> (f64, f64) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let table = format!("bench_flush_{:08x}", rand::random::<u32>());
    c.batch_execute(&format!("CREATE TABLE {table} (x int)"))
        .unwrap();
    let mut lat = Vec::with_capacity(samples);
    for i in 0..samples {
        let t = Instant::now();
        c.execute(&format!("INSERT INTO {table} VALUES ($1)"), &[&(i as i32)])
            .unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    c.batch_execute(&format!("DROP TABLE {table}")).unwrap();
    lat.sort_by(f64::total_cmp);
    (percentile(&lat, 0.5), percentile(&lat, 0.99))
}

fn bench_dir() -> PathBuf {
    std::env::var_os("STORES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    let seconds: f64 = std::env::var("STORES_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let base = bench_dir();
    std::fs::create_dir_all(&base).unwrap();
    let (p50, p99) = fsync_time(&base, 200);
    println!(
        "{}",
        json!({"bench": "fsync", "dir": base.to_string_lossy(), "fsync_p50_ms": round2(p50),
               "fsync_p99_ms": round2(p99), "fsyncs_per_s_one_at_a_time": (1e3 / p50).round()})
    );
    let pg = std::env::var("INTERLOCK_TEST_PG_URL").ok();
    if let Some(url) = &pg {
        let (p50, p99) = pg_commit_time(url, 200);
        println!(
            "{}",
            json!({"bench": "pg_commit", "commit_p50_ms": round2(p50), "commit_p99_ms": round2(p99),
                   "commits_per_s_one_at_a_time": (1e3 / p50).round()})
        );
    }
    let only = std::env::var("STORES_ONLY").unwrap_or_default();
    if only != "postgres" {
        let file = file_rows(&base, seconds);
        no_sync_rows(&base, &file, seconds);
    }
    if only == "file" {
        return;
    }
    let Some(url) = pg else {
        eprintln!("postgres rows skipped: INTERLOCK_TEST_PG_URL is not set");
        return;
    };
    postgres_rows(&url, seconds);
}

/// The file store's rows, every way and writer count, and its scaling target; the appends per
/// second of each row.
fn file_rows(base: &Path, seconds: f64) -> Vec<(&'static str, usize, f64)> {
    let mut file = Vec::new();
    for mode in modes() {
        for writers in writer_counts() {
            let dir = tempfile::tempdir_in(base).unwrap();
            let at = Location::File(dir.path().join("journal.jsonl"));
            file.push((
                mode,
                writers,
                measure("jsonl_file", mode, &at, writers, seconds),
            ));
        }
    }
    let one = file
        .iter()
        .find(|(m, w, _)| *m == "shared_gate" && *w == 1)
        .map_or(0.0, |r| r.2);
    let sixteen = file
        .iter()
        .find(|(m, w, _)| *m == "shared_gate" && *w == 16)
        .map_or(0.0, |r| r.2);
    let ratio = if one > 0.0 { sixteen / one } else { 0.0 };
    println!(
        "{}",
        json!({"bench": "target", "store": "jsonl_file",
               "target": "16 threads of one gate >= 5x one writer (under fsync)",
               "one_writer_appends_per_s": one, "sixteen_threads_appends_per_s": sixteen,
               "ratio": round2(ratio), "met": ratio >= 5.0})
    );
    file
}

/// The shared-gate rows again with every sync skipped, each with its ratio to the durable row.
fn no_sync_rows(base: &Path, file: &[(&'static str, usize, f64)], seconds: f64) {
    // The same workload without durability (every sync of the file store skipped), in the
    // same run: how far below its ceiling the store is at each writer count.
    for writers in writer_counts() {
        let durable = file
            .iter()
            .find(|(m, w, _)| *m == "shared_gate" && *w == writers)
            .map_or(0.0, |r| r.2);
        let dir = tempfile::tempdir_in(base).unwrap();
        let at = Location::File(dir.path().join("journal.jsonl"));
        interlock::testing::record::skip_syncs(true);
        let ceiling = measure("jsonl_file_no_sync", "shared_gate", &at, writers, seconds);
        interlock::testing::record::skip_syncs(false);
        let ratio = if ceiling > 0.0 {
            durable / ceiling
        } else {
            0.0
        };
        println!(
            "{}",
            json!({"bench": "target", "store": "jsonl_file", "writers": writers,
                   "target": "threads of one gate >= 0.7 of the no-sync ceiling (at 16)",
                   "durable_appends_per_s": durable, "no_sync_appends_per_s": ceiling,
                   // The target is set at 16 threads only: the other rows say how far below
                   // their ceiling they are, and are neither met nor missed.
                   "ratio": round2(ratio), "met": (writers == 16).then_some(ratio >= 0.7)})
        );
    }
}

/// The database's raw commit rate, the PostgreSQL store's rows, and their targets.
fn postgres_rows(url: &str, seconds: f64) {
    // Commits per second of `rate` at each session count, each printed as a row of `bench`.
    let by_sessions = |bench: &str, rate: &dyn Fn(usize) -> f64| -> Vec<f64> {
        WRITERS
            .iter()
            .map(|&sessions| {
                let r = rate(sessions);
                println!(
                    "{}",
                    json!({"bench": bench, "sessions": sessions, "commits_per_s": r})
                );
                r
            })
            .collect()
    };
    // What the server commits with no gate in front of it, in the same run.
    let raw = by_sessions("pg_raw_insert", &|n| raw_insert_rate(url, n, seconds));
    // The gate's own rows committed with nothing else (no lock, catch-up or signing).
    let row = by_sessions("pg_gate_row_insert", &|n| {
        gate_row_insert_rate(url, n, seconds)
    });
    // The protocol of one round trip per append, on the server alone (no gate): its ceiling,
    // with the claim's record apart (as the store writes it) and within DISPATCHED.
    let one_shot = ceiling::rows(url, seconds, &raw, ceiling::Claim::RecordApart);
    let one_shot_four = ceiling::rows(url, seconds, &raw, ceiling::Claim::RecordInDispatch);
    let mut rows = Vec::new();
    for mode in MODES {
        for writers in WRITERS {
            let at = fresh_schema(url);
            rows.push((
                mode,
                writers,
                measure("postgres", mode, &at, writers, seconds),
            ));
        }
    }
    let best = |w: usize| {
        rows.iter()
            .filter(|(_, n, _)| *n == w)
            .map(|r| r.2)
            .fold(0.0, f64::max)
    };
    let by_writers: Vec<f64> = WRITERS.iter().map(|w| best(*w)).collect();
    let rising = by_writers.windows(2).all(|p| p[1] >= p[0]);
    let _ = std::io::stdout().flush();
    println!(
        "{}",
        json!({"bench": "target", "store": "postgres",
               "target": ">= 3000 appends/s with 8 writers, rising with writers",
               "best_appends_per_s_by_writers": {"1": by_writers[0], "4": by_writers[1], "8": by_writers[2], "16": by_writers[3]},
               "met": by_writers[2] >= 3000.0 && rising})
    );
    let ratio = if raw[2] > 0.0 {
        by_writers[2] / raw[2]
    } else {
        0.0
    };
    let rising_to_8 = by_writers[..3].windows(2).all(|p| p[1] >= p[0]);
    println!(
        "{}",
        json!({"bench": "target", "store": "postgres",
               "target": "appends/s at 8 writers >= 0.5 of the raw INSERT commit rate at 8 sessions, rising from 1 to 8",
               "appends_per_s_at_8": by_writers[2], "raw_commits_per_s_at_8": raw[2],
               "ratio": round2(ratio), "met": ratio >= 0.5 && rising_to_8,
               "gate_rows_alone_per_s_at_8": row[2],
               "gate_rows_alone_over_raw_at_8": round2(if raw[2] > 0.0 { row[2] / raw[2] } else { 0.0 }),
               "appends_over_gate_rows_alone_at_8": round2(if row[2] > 0.0 { by_writers[2] / row[2] } else { 0.0 }),
               "one_shot_ceiling_per_s_at_8": one_shot[2].round(),
               "one_shot_ceiling_over_raw_at_8": round2(if raw[2] > 0.0 { one_shot[2] / raw[2] } else { 0.0 }),
               "one_shot_record_in_dispatch_per_s_at_8": one_shot_four[2].round(),
               "one_shot_record_in_dispatch_over_raw_at_8": round2(if raw[2] > 0.0 { one_shot_four[2] / raw[2] } else { 0.0 })})
    );
}
