//! The one place where a results file is verified before anything is rendered from it.
//!
//! [`verify_file`] calls the `verify` crate's checker and turns its report
//! into the small, display-ready summaries the pages need. Nothing else in the site parses a
//! results file or judges a receipt.

use crate::error::SiteError;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use verify::check::verify_results;
use verify::entry::{compute_hash, signing_message, ReceiptBundle};
use verify::receipt::{KeyCheck, ReceiptReport};
use verify::results::{ColumnSummary, ResultsFile};

/// A results file that passed verification, with every receipt's re-derived summary.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The parsed file.
    pub file: ResultsFile,
    /// Receipt summaries re-derived at build time, keyed by effect id.
    pub receipts: BTreeMap<String, ReceiptCheck>,
    /// Which checker verified the file, for the pages to name.
    pub checker: &'static str,
    /// The per-column summary `verify` derived from its own judgements (the pages render this,
    /// never a count of their own).
    pub summary: BTreeMap<String, ColumnSummary>,
}

/// The summary of one receipt, re-derived at build time (never copied from the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptCheck {
    /// `verify` found no problem in the receipt.
    pub valid: bool,
    /// Hashes recompute and `prev` links hold.
    pub chain_consistent: bool,
    /// `true`, `false` or `unsigned`: every entry signed by the key the receipt is checked against.
    pub signed: String,
    /// `pinned` (checked against a key given to the build) or `self-attested` (the file's own key).
    pub key_check: String,
    /// `true`, `false` or `unknown`: whether the effect happened according to the receipt.
    pub happened: String,
    /// `true` or `false`.
    pub happened_once: String,
    /// `true`, `false` or `n/a` (no send counts).
    pub authorized_when_fired: String,
    /// `true`, `false` or `n/a` (no send counts).
    pub assumptions_held: String,
    /// Refusal code and reason, if the effect was refused.
    pub refused: Option<String>,
    /// What recovery re-checked, as compact JSON, if it did.
    pub rechecked_at_recovery: Option<String>,
    /// The COMMITTED entry's `via`, if any.
    pub via: Option<String>,
    /// The COMMITTED entry's evidence, as compact JSON, if any.
    pub evidence: Option<String>,
    /// The entries' kinds, in order, as read from the receipt itself.
    pub journal_kinds: Vec<String>,
    /// Problems found (empty when the receipt verifies).
    pub problems: Vec<String>,
}

impl ReceiptCheck {
    /// The receipt verifies: consistent chain, signed, no problem.
    pub fn ok(&self) -> bool {
        self.valid && self.problems.is_empty()
    }
}

/// Per-entry detail for a receipt page: does the hash recompute, does `prev` link, is the
/// signature valid and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryCheck {
    /// The stored hash equals the recomputed one.
    pub hash_ok: bool,
    /// `prev` names the previous entry's hash (`null` for the first).
    pub prev_ok: bool,
    /// Human-readable signature status.
    pub signature: String,
    /// The signature is valid and by the run's published key.
    pub signature_ok: bool,
}

/// Verify a results file's bytes with the `verify` crate (the same code as the `verify` binary);
/// refuse, naming the first problems, a file that fails. `pinned` pins the signer key; without it
/// the key the file publishes is used (self-attested).
pub fn verify_file(
    path: &Path,
    bytes: &[u8],
    pinned: Option<&VerifyingKey>,
) -> Result<Verified, SiteError> {
    let unverified = |problem: String| SiteError::Unverified {
        path: path.to_path_buf(),
        problem,
    };
    let file = verify::load::load_results(bytes).map_err(|e| SiteError::Unreadable {
        path: path.to_path_buf(),
        problem: e.to_string(),
    })?;
    let key = pinned.map_or(KeyCheck::SelfAttested, |k| KeyCheck::Pinned(*k));
    let report = verify_results(&file, &key);
    if !report.ok {
        let findings = report.first_findings();
        let mut lines: Vec<String> = findings.iter().take(5).map(ToString::to_string).collect();
        if findings.len() > 5 {
            lines.push(format!("and {} more", findings.len() - 5));
        }
        return Err(unverified(lines.join("; ")));
    }
    let mut receipts = BTreeMap::new();
    for r in report
        .cell_reports
        .iter()
        .filter_map(|c| c.receipt.as_ref())
    {
        receipts.insert(r.effect_id.clone(), summarize(r));
    }
    Ok(Verified {
        file,
        receipts,
        checker: "verify::check::verify_results",
        summary: report.summary,
    })
}

fn yes_no_na(v: Option<bool>, none: &str) -> String {
    v.map_or(none.to_owned(), |b| b.to_string())
}

/// The display summary of a receipt report.
pub fn summarize(r: &ReceiptReport) -> ReceiptCheck {
    ReceiptCheck {
        valid: r.valid,
        chain_consistent: r.chain_consistent,
        signed: yes_no_na(r.signed, "unsigned"),
        key_check: r.key.clone(),
        happened: r.happened.to_string(),
        happened_once: r.happened_once.to_string(),
        authorized_when_fired: yes_no_na(r.authorized_when_fired, "n/a (nothing sent)"),
        assumptions_held: yes_no_na(r.assumptions_held, "n/a (nothing sent)"),
        refused: r.refused.as_ref().map(|f| match &f.code {
            Some(code) => format!("{code}: {}", f.reason),
            None => f.reason.clone(),
        }),
        rechecked_at_recovery: r.rechecked_at_recovery.as_ref().map(Value::to_string),
        via: r.via.clone(),
        evidence: r.evidence.as_ref().map(Value::to_string),
        journal_kinds: r.journal_kinds.clone(),
        problems: r.problems.iter().map(ToString::to_string).collect(),
    }
}

/// Per-entry hash, link and signature status of a bundle, checked against the published key.
pub fn entry_checks(bundle: &ReceiptBundle, published_signer: &str) -> Vec<EntryCheck> {
    let mut prev: Option<String> = None;
    bundle
        .entries
        .iter()
        .map(|entry| {
            let obj = entry.as_object();
            let stored = obj.and_then(|o| o.get("hash")).and_then(Value::as_str);
            let hash_ok = match (obj, stored) {
                (Some(o), Some(h)) => compute_hash(o).map(|c| c == h).unwrap_or(false),
                _ => false,
            };
            let stored_prev = obj.and_then(|o| o.get("prev")).and_then(Value::as_str);
            let prev_ok = stored_prev == prev.as_deref();
            prev = stored.map(str::to_owned);
            let (signature, signature_ok) = signature_status(entry, published_signer);
            EntryCheck {
                hash_ok,
                prev_ok,
                signature,
                signature_ok,
            }
        })
        .collect()
}

fn signature_status(entry: &Value, published_signer: &str) -> (String, bool) {
    let field = |k: &str| entry.get(k).and_then(Value::as_str);
    let (Some(signer), Some(sig), Some(hash)) = (field("signer"), field("sig"), field("hash"))
    else {
        return ("unsigned".to_owned(), false);
    };
    let key = hex::decode(signer)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok());
    let sig = hex::decode(sig)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b));
    let valid = match (key, sig) {
        (Some(k), Some(s)) => k.verify(&signing_message(hash), &s).is_ok(),
        _ => false,
    };
    match (valid, signer == published_signer) {
        (true, true) => ("valid, by the run's published key".to_owned(), true),
        (true, false) => ("valid, but by a key other than the run's".to_owned(), false),
        (false, _) => ("INVALID".to_owned(), false),
    }
}
