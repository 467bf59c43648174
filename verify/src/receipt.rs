//! Receipt verification: the checks, and the report they fill in (`ReceiptReport`, `Happened`,
//! `Refusal`), live in the trusted core (the `verify-core` crate: `verify_core::receipt`,
//! `verify_core::report`), re-exported here; this module spreads many receipts over threads (the
//! fast path for results files).

pub use verify_core::receipt::*;
pub use verify_core::report::{Happened, ReceiptReport, Refusal};

use rayon::prelude::*;
use serde_json::Value;
use verify_core::entry::ReceiptBundle;
use verify_core::signatures;

/// Receipts per group: about [`signatures::BATCH_SIZE`] signatures of sealed 4-entry receipts (four
/// entries and a head each), so that a group fills one batch and leaves no small one over.
pub(crate) const RECEIPTS_PER_GROUP: usize = signatures::BATCH_SIZE / 5;

/// Verify many receipt bundles, checking their signatures in shared batches.
/// `result[i]` is the report of `bundles[i]`.
pub fn verify_bundles(bundles: &[ReceiptBundle], key: &KeyCheck) -> Vec<ReceiptReport> {
    let refs: Vec<&ReceiptBundle> = bundles.iter().collect();
    let rule = SignerRule::from(key);
    // Each distinct signer is decoded and vetted once for the whole run.
    let vetted = Vetted::default();
    // Receipts go through in groups of about one signature batch: each group is checked and its
    // signatures batch-verified while its entries are still in cache, groups spread over threads.
    refs.par_chunks(RECEIPTS_PER_GROUP)
        .flat_map_iter(|group| {
            prefetch(group);
            verify_group(group, &rule, &vetted)
        })
        .collect()
}

/// Read every node of a group once up front: the loads of different entries do not wait on each
/// other, so their cache misses overlap, and the checks run on cached data.
pub(crate) fn prefetch(group: &[&ReceiptBundle]) {
    std::hint::black_box(
        group
            .iter()
            .flat_map(|b| &b.entries)
            .fold(0usize, |acc, e| acc.wrapping_add(touch(e))),
    );
}

/// Read every node of `v` (a prefetch in safe code; the sum means nothing).
fn touch(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() ^ usize::from(s.as_bytes().first().copied().unwrap_or(0)),
        Value::Array(a) => a.iter().map(touch).fold(0, usize::wrapping_add),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| usize::from(k.as_bytes().first().copied().unwrap_or(0)) ^ touch(v))
            .fold(0, usize::wrapping_add),
        _ => 1,
    }
}
