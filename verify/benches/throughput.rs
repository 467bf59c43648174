//! Verification throughput, printed as JSON lines (`cargo bench -p verify --bench throughput`).
//!
//! 1. `ed25519_batch`: the limit — ed25519-dalek `verify_batch` over batches of 256, spread over
//!    threads with rayon, measured in this run on this machine; `ed25519_strict` the one-by-one rate.
//! 2. `receipts`: synthetic signed receipts of 4 entries through [`verify_bundles`].
//! 3. `results_file`: a synthetic results file with `VERIFY_BENCH_RECEIPTS` (default 100 000)
//!    signed receipts, loaded and verified in a child process (so its peak memory is the
//!    verifier's alone): signatures/s against the batch rate, and peak RSS.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rayon::prelude::*;
use serde_json::json;
use std::time::Instant;
use verify::check::verify_results;
use verify::load::load_results;
use verify::receipt::{verify_bundles, KeyCheck};
use verify::synthetic::{generate, signing_key, Spec};

const CHILD_ENV: &str = "VERIFY_BENCH_CHILD";

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn cpu_flags() -> Vec<&'static str> {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    ["sha_ni", "avx2", "avx512ifma"]
        .into_iter()
        .filter(|f| info.split_whitespace().any(|w| w == *f))
        .collect()
}

/// The child: load and verify one results file, print timings and peak memory.
fn child(path: &str) {
    let t0 = Instant::now();
    let bytes = std::fs::read(path).unwrap();
    let t_read = t0.elapsed().as_secs_f64();
    let file = load_results(&bytes).unwrap();
    drop(bytes);
    let t_load = t0.elapsed().as_secs_f64();
    let report = verify_results(&file, &KeyCheck::SelfAttested);
    let t_total = t0.elapsed().as_secs_f64();
    assert!(report.ok, "the synthetic file must verify");
    let sigs: usize = file
        .cells
        .iter()
        .filter_map(|c| c.receipt.as_ref())
        .map(|r| r.entries.len())
        .sum();
    println!(
        "{}",
        json!({"receipts": report.receipts, "cells": report.cells, "signatures": sigs,
               "read_s": t_read, "load_s": t_load - t_read, "verify_s": t_total - t_load,
               "total_s": t_total, "peak_rss_mb": peak_rss_mb()})
    );
}

fn batch_rate(n: usize) -> (f64, f64) {
    let key = SigningKey::from_bytes(&[11u8; 32]);
    let vk = key.verifying_key();
    let msgs: Vec<Vec<u8>> = (0..n)
        .map(|i| verify::entry::signing_message(&format!("{i:064x}")))
        .collect();
    let sigs: Vec<Signature> = msgs.par_iter().map(|m| key.sign(m)).collect();
    let keys: Vec<VerifyingKey> = vec![vk; 256];
    let t = Instant::now();
    let ok = msgs
        .par_chunks(256)
        .zip(sigs.par_chunks(256))
        .all(|(m, s)| {
            let m: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
            ed25519_dalek::verify_batch(&m, s, &keys[..s.len()]).is_ok()
        });
    let batch = n as f64 / t.elapsed().as_secs_f64();
    assert!(ok);
    let single_n = n / 8;
    let t = Instant::now();
    let ok = msgs[..single_n]
        .par_iter()
        .zip(&sigs[..single_n])
        .all(|(m, s)| vk.verify_strict(m, s).is_ok());
    let single = single_n as f64 / t.elapsed().as_secs_f64();
    assert!(ok);
    (batch, single)
}

fn main() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        child(&path);
        return;
    }
    let target: u32 = std::env::var("VERIFY_BENCH_RECEIPTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let threads = rayon::current_num_threads();
    let flags = cpu_flags();

    let (batch, single) = batch_rate(131_072);
    println!(
        "{}",
        json!({"bench": "ed25519_batch", "signatures": 131_072, "batch_size": 256, "threads": threads,
               "sigs_per_s": batch.round(), "cpu_flags": flags})
    );
    println!(
        "{}",
        json!({"bench": "ed25519_strict", "signatures": 131_072 / 8, "threads": threads, "sigs_per_s": single.round()})
    );

    // Receipts straight through the library.
    let spec = Spec {
        seed: 3,
        repeats: 4_200,
        columns: vec!["interlock".into()],
    };
    let file = generate(&spec);
    let mut bundles: Vec<_> = file.cells.into_iter().filter_map(|c| c.receipt).collect();
    let key = KeyCheck::Pinned(signing_key(&spec).verifying_key());
    let sigs: usize = bundles.iter().map(|b| b.entries.len()).sum();
    let t = Instant::now();
    let reports = verify_bundles(&bundles, &key);
    let secs = t.elapsed().as_secs_f64();
    assert!(reports.iter().all(|r| r.valid));
    println!(
        "{}",
        json!({"bench": "receipts", "receipts": bundles.len(), "entries_per_receipt": 4, "threads": threads,
               "receipts_per_s": (bundles.len() as f64 / secs).round(),
               "sigs_per_s": (sigs as f64 / secs).round(),
               "vs_batch": ((sigs as f64 / secs) / batch * 1000.0).round() / 1000.0})
    );
    // One bad signature among them: the batch fails, the fallback names the entry.
    let victim = bundles.len() / 2;
    if let Some(e) = bundles[victim].entries[2].as_object_mut() {
        let sig = e["sig"].as_str().unwrap_or_default().to_owned();
        let forged = format!("{}{}", if sig.starts_with('0') { '1' } else { '0' }, &sig[1..]);
        e.insert("sig".into(), json!(forged));
    }
    let t = Instant::now();
    let reports = verify_bundles(&bundles, &key);
    let secs = t.elapsed().as_secs_f64();
    let bad: Vec<(usize, Option<usize>)> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.valid)
        .map(|(i, r)| (i, r.problems.first().and_then(|p| p.entry)))
        .collect();
    assert_eq!(bad, vec![(victim, Some(2))]);
    println!(
        "{}",
        json!({"bench": "receipts_one_bad_signature", "receipts": bundles.len(),
               "sigs_per_s": (sigs as f64 / secs).round(), "named": {"receipt": victim, "entry": 2}})
    );
    drop(bundles);

    // A whole results file with `target` receipts, verified in a child process.
    let spec = Spec {
        seed: 4,
        repeats: target.div_ceil(6),
        columns: vec!["interlock".into()],
    };
    let t = Instant::now();
    let file = generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    let bytes = serde_json::to_vec(&file).unwrap();
    drop(file);
    std::fs::write(&path, &bytes).unwrap();
    let gen_s = t.elapsed().as_secs_f64();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let child: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sigs = child["signatures"].as_f64().unwrap_or(0.0);
    let verify_s = child["verify_s"].as_f64().unwrap_or(f64::NAN);
    let total_s = child["total_s"].as_f64().unwrap_or(f64::NAN);
    println!(
        "{}",
        json!({"bench": "results_file", "receipts": child["receipts"], "cells": child["cells"],
               "signatures": sigs, "file_bytes": bytes.len(), "generate_s": gen_s,
               "read_s": child["read_s"], "load_s": child["load_s"], "verify_s": verify_s, "total_s": total_s,
               "sigs_per_s_verify": (sigs / verify_s).round(),
               "sigs_per_s_end_to_end": (sigs / total_s).round(),
               "vs_batch_verify": ((sigs / verify_s) / batch * 1000.0).round() / 1000.0,
               "vs_batch_end_to_end": ((sigs / total_s) / batch * 1000.0).round() / 1000.0,
               "peak_rss_mb": child["peak_rss_mb"], "threads": threads})
    );
}
