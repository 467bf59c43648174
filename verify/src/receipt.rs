//! Receipt verification (DESIGN §3.3): re-derive, offline, what one effect's journal entries prove.
//!
//! [`verify_bundle`] checks one bundle; [`verify_bundles`] checks many and batches their
//! signatures together (the fast path for results files). Both never fail open: every check that
//! does not hold adds a [`Problem`], and `valid` is true only when there is none.
//!
//! Two formats are understood:
//! - `interlock-receipt/1` (this project): signed entries, RFC 8785 hashes, 64-hex effect ids;
//! - `python-original` (the original Python implementation, see [`crate::pycompat`]): unsigned,
//!   Python-canonical hashes, 12-hex effect ids, `ts` floats, `result`/`found` evidence and the
//!   grant under `checks.lease`. A bundle of that format is recognised by [`crate::load::load_document`].

use crate::canonical;
use crate::entry::{self, Kind, ReceiptBundle, RECEIPT_FORMAT};
use crate::problem::{code, Problem};
use crate::pycompat;
use crate::signatures;
use ed25519_dalek::{Signature, VerifyingKey};
use rayon::prelude::*;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// The `format` a [`ReceiptReport`] names for a bundle of the original Python implementation.
pub const PYTHON_ORIGINAL_FORMAT: &str = "python-original";

/// The ways a COMMITTED entry can say the effect happened.
pub const VIAS: [&str; 5] = [
    "send",
    "retry-idempotent",
    "recovery-query",
    "recovery-reapply",
    "failed-but-landed",
];

/// `via` values of a COMMITTED that sent the effect again (a second firing with its own checks).
pub const RESEND_VIAS: [&str; 2] = ["retry-idempotent", "recovery-reapply"];

/// Whether the effect happened at the target, as the receipt proves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Happened {
    /// A COMMITTED entry records it.
    Yes,
    /// Nothing was sent, or every send was refused as never landed.
    No,
    /// An AMBIGUOUS entry, or a dispatch still open: nobody can know.
    Unknown,
}

impl Happened {
    /// Whether this agrees with the target holding (`true`) or not holding the effect.
    /// `Unknown` agrees with neither.
    pub fn agrees_with(self, exists: bool) -> bool {
        matches!(
            (self, exists),
            (Happened::Yes, true) | (Happened::No, false)
        )
    }
}

impl Serialize for Happened {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Happened::Yes => s.serialize_bool(true),
            Happened::No => s.serialize_bool(false),
            Happened::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl std::fmt::Display for Happened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Happened::Yes => "true",
            Happened::No => "false",
            Happened::Unknown => "unknown",
        })
    }
}

/// The last refusal of an effect that did not happen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// Machine code (`None` in the original format, which had none).
    pub code: Option<String>,
    /// The human reason (a list of reasons in the original is joined with `"; "`).
    pub reason: String,
}

/// Which key must have signed the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// Every entry's `signer` must equal this key (`--key`).
    Pinned(VerifyingKey),
    /// The signer is taken from the record itself; reported as `self-attested`.
    SelfAttested,
}

/// Which signer the entries must carry, as the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignerRule {
    /// A key given by the person verifying.
    Pinned(VerifyingKey),
    /// A key published in the same file as the receipts (self-attested).
    Published(VerifyingKey),
    /// Whatever key the first entry names (self-attested).
    FromRecord,
}

impl From<&KeyCheck> for SignerRule {
    fn from(k: &KeyCheck) -> SignerRule {
        match k {
            KeyCheck::Pinned(key) => SignerRule::Pinned(*key),
            KeyCheck::SelfAttested => SignerRule::FromRecord,
        }
    }
}

/// What one receipt proves, and every problem found in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceiptReport {
    /// The bundle's effect id.
    pub effect_id: String,
    /// `interlock-receipt/1` or `python-original` (or the unknown format found).
    pub format: String,
    /// No problem was found.
    pub valid: bool,
    /// Every entry belongs to the effect, its hash recomputes and its `prev` links.
    pub chain_consistent: bool,
    /// Every entry carries a valid signature; `None` for the unsigned original format.
    pub signed: Option<bool>,
    /// `pinned`, `self-attested`, or `none` (unsigned format).
    pub key: String,
    /// The signer named by the entries (hex), if any.
    pub signer: Option<String>,
    /// Whether the effect happened.
    pub happened: Happened,
    /// Never committed twice, never dispatched while a dispatch was open or after a commit.
    pub happened_once: bool,
    /// Every send that counts had a live grant that covers it; `None` if nothing was sent.
    pub authorized_when_fired: Option<bool>,
    /// Every send that counts recorded no premise violation; `None` if nothing was sent.
    pub assumptions_held: Option<bool>,
    /// The last refusal, when the effect did not happen.
    pub refused: Option<Refusal>,
    /// The COMMITTED entry's evidence (`evidence`, or `result`/`found` in the original).
    pub evidence: Option<Value>,
    /// The COMMITTED entry's `via`.
    pub via: Option<String>,
    /// The kind of the last entry.
    pub final_kind: Option<String>,
    /// The last `rechecked` recorded (the checks at recovery).
    pub rechecked_at_recovery: Option<Value>,
    /// The entries' kinds, in order (`?` for an entry without one).
    pub journal_kinds: Vec<String>,
    /// Every problem, ordered by entry.
    pub problems: Vec<Problem>,
}

/// Verify one receipt bundle.
pub fn verify_bundle(bundle: &ReceiptBundle, key: &KeyCheck) -> ReceiptReport {
    verify_bundles(std::slice::from_ref(bundle), key)
        .into_iter()
        .next()
        .unwrap_or_else(|| unreachable_report(bundle))
}

/// Verify many receipt bundles, checking their signatures in shared batches.
/// `result[i]` is the report of `bundles[i]`.
pub fn verify_bundles(bundles: &[ReceiptBundle], key: &KeyCheck) -> Vec<ReceiptReport> {
    let refs: Vec<&ReceiptBundle> = bundles.iter().collect();
    verify_with_rule(&refs, &SignerRule::from(key))
}

fn unreachable_report(bundle: &ReceiptBundle) -> ReceiptReport {
    let mut report = empty_report(bundle, "none");
    report.problems.push(Problem::receipt(
        code::EMPTY_RECEIPT,
        format!(
            "effect {}: the receipt could not be checked",
            bundle.effect_id
        ),
    ));
    report
}

/// Verify bundles under a signer rule (the results checker passes the published key).
pub(crate) fn verify_with_rule(
    bundles: &[&ReceiptBundle],
    rule: &SignerRule,
) -> Vec<ReceiptReport> {
    // Each distinct signer is decoded and vetted once for the whole run.
    let vetted = Vetted::default();
    // Receipts go through in groups of about one signature batch: each group is checked and its
    // signatures batch-verified while its entries are still in cache, groups spread over threads.
    bundles
        .par_chunks(RECEIPTS_PER_GROUP)
        .flat_map_iter(|group| verify_group(group, rule, &vetted))
        .collect()
}

/// Receipts per group: about [`signatures::BATCH_SIZE`] signatures of 4-entry receipts.
pub(crate) const RECEIPTS_PER_GROUP: usize = signatures::BATCH_SIZE / 4;

/// Each distinct signer, decoded and vetted once per run (`None`: not an acceptable key).
pub(crate) type Vetted = Mutex<HashMap<[u8; 32], Option<VerifyingKey>>>;

fn vet(vetted: &Vetted, signer: &[u8; 32]) -> Option<VerifyingKey> {
    // A poisoned lock only means another thread panicked; the map itself is still valid.
    let cached = vetted
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(signer)
        .copied();
    if let Some(known) = cached {
        return known;
    }
    let key = VerifyingKey::from_bytes(signer)
        .ok()
        .filter(signatures::key_is_acceptable);
    vetted
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(*signer, key);
    key
}

/// Verify one group of receipts on the calling thread: every check, then all their signatures in
/// shared batches. `result[i]` is the report of `group[i]`.
pub(crate) fn verify_group(
    group: &[&ReceiptBundle],
    rule: &SignerRule,
    vetted: &Vetted,
) -> Vec<ReceiptReport> {
    // Read the whole group once up front: the loads of different entries do not wait on each
    // other, so the cache misses overlap, and the checks below run on cached data.
    std::hint::black_box(
        group
            .iter()
            .flat_map(|b| &b.entries)
            .fold(0usize, |acc, e| acc.wrapping_add(touch(e))),
    );
    let mut prepared: Vec<Prepared<'_>> = group.iter().map(|b| prepare(b, rule)).collect();
    let pending_total: usize = prepared.iter().map(|p| p.pending.len()).sum();
    // Every signed message of the group, back to back in one buffer: `context + stored hash`.
    let mut text: Vec<u8> = Vec::with_capacity(pending_total * (entry::SIGNING_CONTEXT.len() + 64));
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(pending_total);
    let mut signatures: Vec<Signature> = Vec::with_capacity(pending_total);
    let mut key_of: Vec<usize> = Vec::with_capacity(pending_total);
    let mut owners: Vec<(usize, usize)> = Vec::with_capacity(pending_total);
    let mut table: Vec<VerifyingKey> = Vec::new();
    let mut index: HashMap<[u8; 32], Option<usize>> = HashMap::new();
    // Nearly every entry has the same signer as the one before: skip the map for it.
    let mut last: Option<([u8; 32], Option<usize>)> = None;
    for (r, p) in prepared.iter_mut().enumerate() {
        let pending = std::mem::take(&mut p.pending);
        for s in pending {
            let slot = match last {
                Some((signer, slot)) if signer == s.signer => slot,
                _ => {
                    let slot = *index.entry(s.signer).or_insert_with(|| {
                        vet(vetted, &s.signer).map(|k| {
                            table.push(k);
                            table.len() - 1
                        })
                    });
                    last = Some((s.signer, slot));
                    slot
                }
            };
            match slot {
                Some(key) => {
                    let from = text.len();
                    text.extend_from_slice(entry::SIGNING_CONTEXT.as_bytes());
                    text.extend_from_slice(s.hash.as_bytes());
                    spans.push((from, text.len()));
                    signatures.push(s.signature);
                    key_of.push(key);
                    owners.push((r, s.entry));
                }
                None => {
                    p.sig_failed = true;
                    let kind = p.report.journal_kinds.get(s.entry).cloned();
                    p.report.problems.push(Problem::at(
                        s.entry,
                        kind.as_deref(),
                        code::WEAK_KEY,
                        format!(
                            "effect {}: entry {} is signed by {}, which is not a valid ed25519 key of prime order (weak or with a torsion component)",
                            p.report.effect_id,
                            s.entry,
                            hex::encode(s.signer)
                        ),
                    ));
                }
            }
        }
    }
    let messages: Vec<&[u8]> = spans
        .iter()
        .map(|&(from, to)| text.get(from..to).unwrap_or_default())
        .collect();
    let results = signatures::verify_batch_sequential(&messages, &signatures, &key_of, &table);
    for ((r, e), ok) in owners.into_iter().zip(results) {
        if !ok {
            if let Some(p) = prepared.get_mut(r) {
                p.sig_failed = true;
                let kind = p.report.journal_kinds.get(e).cloned();
                let msg = format!(
                    "effect {}: the signature of entry {} does not verify for its signer",
                    p.report.effect_id, e
                );
                p.report
                    .problems
                    .push(Problem::at(e, kind.as_deref(), code::BAD_SIGNATURE, msg));
            }
        }
    }
    prepared.into_iter().map(Prepared::finish).collect()
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

/// A receipt checked in everything but its signatures, which wait in `pending`.
struct Prepared<'a> {
    report: ReceiptReport,
    pending: Vec<PendingSig<'a>>,
    signed_format: bool,
    sig_failed: bool,
}

/// A signature to check: the entry's signer and signature, over `SIGNING_CONTEXT + hash` where
/// `hash` is the entry's stored `hash` text.
struct PendingSig<'a> {
    entry: usize,
    signer: [u8; 32],
    hash: &'a str,
    signature: Signature,
}

impl Prepared<'_> {
    fn finish(mut self) -> ReceiptReport {
        if self.signed_format {
            self.report.signed = Some(!self.sig_failed);
        }
        self.report
            .problems
            .sort_by_key(|p| p.entry.unwrap_or(usize::MAX));
        self.report.valid = self.report.problems.is_empty();
        self.report
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Current,
    Original,
}

fn empty_report(bundle: &ReceiptBundle, key: &str) -> ReceiptReport {
    ReceiptReport {
        effect_id: bundle.effect_id.clone(),
        format: bundle.format.clone(),
        valid: false,
        chain_consistent: false,
        signed: None,
        key: key.to_owned(),
        signer: None,
        happened: Happened::No,
        happened_once: true,
        authorized_when_fired: None,
        assumptions_held: None,
        refused: None,
        evidence: None,
        via: None,
        final_kind: None,
        rechecked_at_recovery: None,
        journal_kinds: Vec::new(),
        problems: Vec::new(),
    }
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn prepare<'a>(bundle: &'a ReceiptBundle, rule: &SignerRule) -> Prepared<'a> {
    let format = if bundle.format == RECEIPT_FORMAT {
        Some(Format::Current)
    } else if bundle.format == PYTHON_ORIGINAL_FORMAT {
        Some(Format::Original)
    } else {
        None
    };
    let key_label = match (format, rule) {
        (Some(Format::Current), SignerRule::Pinned(_)) => "pinned",
        (Some(Format::Current), _) => "self-attested",
        _ => "none",
    };
    let mut report = empty_report(bundle, key_label);
    let eid = bundle.effect_id.as_str();
    let Some(format) = format else {
        report.problems.push(Problem::receipt(
            code::UNKNOWN_FORMAT,
            format!(
                "effect {eid}: the bundle format {:?} is not one this verifier knows",
                bundle.format
            ),
        ));
        return Prepared {
            report,
            pending: Vec::new(),
            signed_format: false,
            sig_failed: false,
        };
    };
    let id_len = match format {
        Format::Current => 64,
        Format::Original => pycompat::ORIGINAL_EFFECT_ID_LEN,
    };
    if !is_lower_hex(eid, id_len) {
        report.problems.push(Problem::receipt(
            code::BAD_EFFECT_ID,
            format!("effect {eid}: the effect id is not {id_len} lowercase hex characters"),
        ));
    }
    if bundle.entries.is_empty() {
        report.problems.push(Problem::receipt(
            code::EMPTY_RECEIPT,
            format!("effect {eid}: the receipt holds no entries"),
        ));
    }
    let mut walk = ChainWalk {
        eid,
        format,
        rule,
        problems: Vec::new(),
        chain_ok: true,
        pending: Vec::new(),
        first_signer: None,
        unsigned: bundle.entries.is_empty(),
    };
    let objects: Vec<Option<&Map<String, Value>>> = bundle
        .entries
        .iter()
        .enumerate()
        .map(|(i, raw)| walk.check(i, raw, bundle.entries.get(i.wrapping_sub(1))))
        .collect();
    report.journal_kinds = bundle
        .entries
        .iter()
        .map(|e| {
            e.get("kind")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        })
        .collect();
    report.final_kind = bundle
        .entries
        .last()
        .and_then(|e| e.get("kind"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    report.chain_consistent = walk.chain_ok;
    report.signer = walk.first_signer.map(|s| entry::lower_hex(&s));
    let pending = std::mem::take(&mut walk.pending);
    report.problems.append(&mut walk.problems);
    replay(eid, format, &objects, &mut report);
    Prepared {
        report,
        pending,
        signed_format: format == Format::Current,
        sig_failed: walk.unsigned,
    }
}

/// The members of an entry that the chain checks read, found in one pass over the entry (the
/// same as `obj.get(name)` for each; keys of a JSON object are unique).
#[derive(Default)]
struct Fields<'a> {
    kind: Option<&'a Value>,
    effect_id: Option<&'a Value>,
    v: Option<&'a Value>,
    ts_ms: Option<&'a Value>,
    ts: Option<&'a Value>,
    hash: Option<&'a Value>,
    prev: Option<&'a Value>,
    signer: Option<&'a Value>,
    sig: Option<&'a Value>,
}

impl<'a> Fields<'a> {
    fn of(obj: &'a Map<String, Value>) -> Fields<'a> {
        let mut f = Fields::default();
        for (k, v) in obj {
            let slot = match k.as_str() {
                "kind" => &mut f.kind,
                "effect_id" => &mut f.effect_id,
                "v" => &mut f.v,
                "ts_ms" => &mut f.ts_ms,
                "ts" => &mut f.ts,
                "hash" => &mut f.hash,
                "prev" => &mut f.prev,
                "signer" => &mut f.signer,
                "sig" => &mut f.sig,
                _ => continue,
            };
            *slot = Some(v);
        }
        f
    }
}

/// The per-entry checks: shape, effect, hash, link, and the signature's parts.
struct ChainWalk<'r, 'a> {
    eid: &'r str,
    format: Format,
    rule: &'r SignerRule,
    problems: Vec<Problem>,
    chain_ok: bool,
    pending: Vec<PendingSig<'a>>,
    first_signer: Option<[u8; 32]>,
    /// Some entry has no signature that could be checked (so the receipt is not signed).
    unsigned: bool,
}

impl<'a> ChainWalk<'_, 'a> {
    fn problem(&mut self, i: usize, kind: Option<&str>, code: &str, what: String) {
        self.problems.push(Problem::at(
            i,
            kind,
            code,
            format!(
                "effect {}: entry {i}{} {what}",
                self.eid,
                kind.map(|k| format!(" ({k})")).unwrap_or_default()
            ),
        ));
    }

    fn chain_problem(&mut self, i: usize, kind: Option<&str>, code: &str, what: String) {
        self.chain_ok = false;
        self.problem(i, kind, code, what);
    }

    fn check(
        &mut self,
        i: usize,
        raw: &'a Value,
        before: Option<&Value>,
    ) -> Option<&'a Map<String, Value>> {
        let Some(obj) = raw.as_object() else {
            self.unsigned = true;
            self.chain_problem(
                i,
                None,
                code::MALFORMED_ENTRY,
                "is not a JSON object".into(),
            );
            return None;
        };
        let f = Fields::of(obj);
        let kind = f.kind.and_then(Value::as_str);
        match f.effect_id.and_then(Value::as_str) {
            Some(e) if e == self.eid => {}
            other => self.chain_problem(
                i,
                kind,
                code::FOREIGN_ENTRY,
                format!(
                    "belongs to effect {:?}, not to this receipt",
                    other.unwrap_or("(none)")
                ),
            ),
        }
        match self.format {
            Format::Current => {
                if f.v.and_then(Value::as_u64) != Some(entry::ENTRY_VERSION) {
                    self.chain_problem(
                        i,
                        kind,
                        code::UNKNOWN_VERSION,
                        format!(
                            "has version {}, expected 1",
                            f.v.map_or("(none)".into(), Value::to_string)
                        ),
                    );
                }
                if !f.ts_ms.is_some_and(|t| t.is_u64() || t.is_i64()) {
                    self.chain_problem(
                        i,
                        kind,
                        code::MALFORMED_ENTRY,
                        "has no integer ts_ms".into(),
                    );
                }
            }
            Format::Original => {
                if !f.ts.is_some_and(Value::is_number) {
                    self.chain_problem(i, kind, code::MALFORMED_ENTRY, "has no numeric ts".into());
                }
            }
        }
        // The hash must recompute over exactly what is stored.
        let stored = f.hash.and_then(Value::as_str);
        let computed = match self.format {
            // Compared as bytes; the hex text is only written for the report of a mismatch.
            Format::Current => entry::compute_digest(obj)
                .map(|d| match stored {
                    Some(s) if entry::is_lower_hex_of(s, &d) => None,
                    _ => Some(entry::lower_hex(&d)),
                })
                .map_err(|e| e.to_string()),
            Format::Original => pycompat::entry_hash(obj)
                .map(|c| (stored != Some(c.as_str())).then_some(c))
                .map_err(|e| e.to_string()),
        };
        match (stored, computed) {
            (None, _) => self.chain_problem(i, kind, code::MALFORMED_ENTRY, "has no hash".into()),
            (Some(_), Err(e)) => self.chain_problem(
                i,
                kind,
                code::UNCANONICAL_ENTRY,
                format!("cannot be put into canonical form: {e}"),
            ),
            (Some(s), Ok(Some(c))) => self.chain_problem(
                i,
                kind,
                code::HASH_MISMATCH,
                format!("was altered: its content hashes to {c}, but it says {s}"),
            ),
            (Some(_), Ok(None)) => {}
        }
        // `prev` must be the stored hash of the entry before it (null for the first).
        let expected_prev: Option<&Value> = match before {
            None => Some(&Value::Null),
            Some(b) => b.get("hash").filter(|h| h.is_string()),
        };
        let prev = f.prev;
        if let Some(expected) = expected_prev {
            if prev != Some(expected) {
                let shown = prev.map_or_else(|| "(missing)".to_owned(), Value::to_string);
                let what = if i == 0 {
                    format!("has prev {shown}, but the first entry must have prev null (an earlier entry is missing)")
                } else {
                    format!(
                        "has prev {shown}, but entry {} hashes to {expected} (an entry is missing or out of order)",
                        i - 1
                    )
                };
                self.chain_problem(i, kind, code::BROKEN_LINK, what);
            }
        }
        if self.format == Format::Current {
            self.signature_parts(i, kind, &f, stored);
        }
        Some(obj)
    }

    fn signature_parts(
        &mut self,
        i: usize,
        kind: Option<&str>,
        f: &Fields<'a>,
        hash: Option<&'a str>,
    ) {
        // Lowercase hex only: the same bytes must have exactly one accepted spelling.
        let signer = f
            .signer
            .and_then(Value::as_str)
            .and_then(entry::decode_lower_hex::<32>);
        let Some(signer) = signer else {
            self.unsigned = true;
            self.problem(
                i,
                kind,
                code::BAD_SIGNER,
                "has no signer that is 64 lowercase hex characters".into(),
            );
            return;
        };
        match self.rule {
            SignerRule::Pinned(k) | SignerRule::Published(k) if k.as_bytes() != &signer => {
                let whose = if matches!(self.rule, SignerRule::Pinned(_)) {
                    "the pinned key"
                } else {
                    "the key the file publishes"
                };
                self.problem(
                    i,
                    kind,
                    code::WRONG_SIGNER,
                    format!(
                        "is signed by {}, not by {whose} {}",
                        hex::encode(signer),
                        hex::encode(k.as_bytes())
                    ),
                );
            }
            _ => {}
        }
        match self.first_signer {
            None => self.first_signer = Some(signer),
            Some(first) if first != signer => self.problem(
                i,
                kind,
                code::MIXED_SIGNERS,
                format!(
                    "is signed by {}, but entry 0 by {}",
                    hex::encode(signer),
                    hex::encode(first)
                ),
            ),
            _ => {}
        }
        let sig = f
            .sig
            .and_then(Value::as_str)
            .and_then(entry::decode_lower_hex::<64>);
        let Some(sig) = sig else {
            self.unsigned = true;
            self.problem(
                i,
                kind,
                code::BAD_SIGNATURE,
                "has no sig that is 128 lowercase hex characters".into(),
            );
            return;
        };
        let Some(hash) = hash else {
            // Already reported: no hash, so nothing to have signed.
            self.unsigned = true;
            return;
        };
        self.pending.push(PendingSig {
            entry: i,
            signer,
            hash,
            signature: Signature::from_bytes(&sig),
        });
    }
}

/// One send that counts: the checks recorded right before it and the effect it sent.
struct Send<'a> {
    entry: usize,
    kind: &'static str,
    checks: Option<&'a Value>,
    effect: Option<&'a Value>,
}

fn replay(
    eid: &str,
    format: Format,
    entries: &[Option<&Map<String, Value>>],
    report: &mut ReceiptReport,
) {
    let grant_field = match format {
        Format::Current => "grant",
        Format::Original => "lease",
    };
    let mut problems: Vec<Problem> = Vec::new();
    let mut put = |i: usize, kind: Option<&str>, code: &str, what: String| {
        problems.push(Problem::at(
            i,
            kind,
            code,
            format!(
                "effect {eid}: entry {i}{} {what}",
                kind.map(|k| format!(" ({k})")).unwrap_or_default()
            ),
        ));
    };
    let mut open = false;
    let mut authorized_seen = false;
    let mut commits = 0usize;
    let mut ambiguous = false;
    let mut once = true;
    let mut sends: Vec<Send<'_>> = Vec::new();
    let mut current_effect: Option<&Value> = None;
    let mut first_proposed: Option<(usize, &Map<String, Value>)> = None;
    let mut refused: Option<Refusal> = None;
    let mut rechecked: Option<&Value> = None;
    let mut evidence: Option<&Value> = None;

    for (i, obj) in entries.iter().enumerate() {
        let Some(obj) = obj else { continue };
        let kind_str = obj.get("kind").and_then(Value::as_str);
        let kind = kind_str.and_then(Kind::parse);
        if i == 0 && kind != Some(Kind::Proposed) {
            put(
                i,
                kind_str,
                code::FIRST_NOT_PROPOSED,
                "is not PROPOSED; a receipt starts with the proposal".into(),
            );
        }
        if let Some(r) = obj.get("rechecked") {
            rechecked = Some(r);
        }
        let Some(kind) = kind else {
            put(
                i,
                kind_str,
                code::UNKNOWN_KIND,
                format!(
                    "has kind {:?}, which this verifier does not know",
                    kind_str.unwrap_or("(none)")
                ),
            );
            continue;
        };
        match kind {
            Kind::Proposed => {
                if !obj.contains_key("effect") {
                    put(i, kind_str, code::MALFORMED_ENTRY, "has no effect".into());
                }
                if first_proposed.is_none() {
                    first_proposed = Some((i, obj));
                }
            }
            Kind::Authorized => authorized_seen = true,
            Kind::Dispatched => {
                if commits > 0 {
                    once = false;
                    put(
                        i,
                        kind_str,
                        code::DISPATCH_AFTER_COMMIT,
                        "sends the effect again after it was committed".into(),
                    );
                }
                if open {
                    once = false;
                    put(
                        i,
                        kind_str,
                        code::DISPATCH_WHILE_OPEN,
                        "sends the effect again while an earlier dispatch is unresolved".into(),
                    );
                }
                if !authorized_seen {
                    put(
                        i,
                        kind_str,
                        code::DISPATCH_WITHOUT_AUTHORIZATION,
                        "sends the effect with no AUTHORIZED before it".into(),
                    );
                }
                let effect = obj.get("effect");
                let proposed = first_proposed.and_then(|(_, p)| p.get("effect"));
                if effect.is_none() || effect != proposed {
                    put(
                        i,
                        kind_str,
                        code::PAYLOAD_CHANGED,
                        "sends a payload other than the one the first PROPOSED fixed".into(),
                    );
                }
                open = true;
                current_effect = effect;
                sends.push(Send {
                    entry: i,
                    kind: "DISPATCHED",
                    checks: obj.get("checks"),
                    effect,
                });
            }
            Kind::Committed => {
                if !open {
                    put(
                        i,
                        kind_str,
                        code::COMMIT_WITHOUT_DISPATCH,
                        "commits, but no dispatch is open (nothing was sent)".into(),
                    );
                }
                commits += 1;
                if commits > 1 {
                    once = false;
                    put(
                        i,
                        kind_str,
                        code::MULTIPLE_COMMITS,
                        "is a second COMMITTED for the same effect".into(),
                    );
                }
                let via = obj.get("via").and_then(Value::as_str);
                match (format, via) {
                    (_, Some(v)) if VIAS.contains(&v) => {}
                    (Format::Original, None) => {}
                    _ => put(
                        i,
                        kind_str,
                        code::UNKNOWN_VIA,
                        format!(
                            "has via {:?}, which is not one of {}",
                            via.unwrap_or("(none)"),
                            VIAS.join(", ")
                        ),
                    ),
                }
                if via.is_some_and(|v| RESEND_VIAS.contains(&v)) {
                    sends.push(Send {
                        entry: i,
                        kind: "COMMITTED",
                        checks: obj.get("rechecked"),
                        effect: current_effect,
                    });
                }
                report.via = via.map(str::to_owned);
                evidence = match format {
                    Format::Current => obj.get("evidence"),
                    Format::Original => obj.get("result").or_else(|| obj.get("found")),
                };
                open = false;
            }
            Kind::Refused => {
                let code_field = obj.get("code").and_then(Value::as_str);
                let reason = match obj.get("reason") {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Array(items)) if format == Format::Original => Some(
                        items
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join("; "),
                    ),
                    _ => None,
                };
                if format == Format::Current && (code_field.is_none() || reason.is_none()) {
                    put(
                        i,
                        kind_str,
                        code::MALFORMED_ENTRY,
                        "has no string code and reason".into(),
                    );
                }
                refused = Some(Refusal {
                    code: code_field.map(str::to_owned),
                    reason: reason.unwrap_or_default(),
                });
                if obj.get("resolves") == Some(&Value::Bool(true)) {
                    if open {
                        // The send never landed, so its checks attest to nothing.
                        sends.pop();
                        open = false;
                    } else {
                        put(
                            i,
                            kind_str,
                            code::RESOLVES_NOTHING,
                            "resolves a dispatch, but none is open".into(),
                        );
                    }
                }
            }
            Kind::Ambiguous => {
                ambiguous = true;
                if format == Format::Current
                    && (!obj.get("code").is_some_and(Value::is_string)
                        || !obj.get("reason").is_some_and(Value::is_string))
                {
                    put(
                        i,
                        kind_str,
                        code::MALFORMED_ENTRY,
                        "has no string code and reason".into(),
                    );
                }
                if !open {
                    put(
                        i,
                        kind_str,
                        code::AMBIGUOUS_WITHOUT_DISPATCH,
                        "declares the effect ambiguous, but no dispatch is open".into(),
                    );
                }
                open = false;
            }
        }
    }

    // The effect id must be derived from what the first PROPOSED fixed (DESIGN §2.1).
    if format == Format::Current {
        if let Some((i, p)) = first_proposed {
            let key = match p.get("request_id") {
                Some(r) if !r.is_null() => Some(r),
                _ => p.get("effect"),
            };
            if let Some(key) = key {
                match canonical::to_vec(key) {
                    Ok(bytes) => {
                        let derived = Sha256::digest(&bytes);
                        if !entry::is_lower_hex_of(eid, &derived) {
                            let derived = entry::lower_hex(&derived);
                            put(i, Some("PROPOSED"), code::EFFECT_ID_MISMATCH, format!("derives effect id {derived} from its request_id (or effect), not {eid}"));
                        }
                    }
                    Err(e) => put(
                        i,
                        Some("PROPOSED"),
                        code::UNCANONICAL_ENTRY,
                        format!("has a request_id or effect with no canonical form: {e}"),
                    ),
                }
            }
        }
    }

    report.rechecked_at_recovery = rechecked.cloned();
    report.evidence = evidence.cloned();
    report.happened = if commits > 0 {
        Happened::Yes
    } else if ambiguous || open {
        Happened::Unknown
    } else {
        Happened::No
    };
    report.happened_once = once;
    if !sends.is_empty() {
        let unauthorized = sends
            .iter()
            .find(|s| !lease_held(s.checks, s.effect, grant_field));
        let violated = sends.iter().find(|s| {
            !s.checks
                .and_then(|c| c.get("violations"))
                .is_some_and(|v| v.as_array().is_some_and(Vec::is_empty))
        });
        if let Some(s) = unauthorized {
            put(
                s.entry,
                Some(s.kind),
                code::UNAUTHORIZED_SEND,
                format!("fires the effect without a live, unrevoked {grant_field} that covers its amount"),
            );
        }
        if let Some(s) = violated {
            put(
                s.entry,
                Some(s.kind),
                code::PREMISES_VIOLATED,
                "fires the effect with premise violations recorded (or no premise check)".into(),
            );
        }
        let authorized = unauthorized.is_none();
        let held = violated.is_none();
        report.authorized_when_fired = Some(authorized);
        report.assumptions_held = Some(held);
    }
    if report.happened != Happened::Yes {
        report.refused = refused;
    }
    report.problems.append(&mut problems);
}

/// The lease check recorded before a send covers it: `lease_live` exactly true; the grant (if an
/// object) not revoked and, if it has a cap, the effect's integer `amount` within it.
fn lease_held(checks: Option<&Value>, effect: Option<&Value>, grant_field: &str) -> bool {
    let Some(checks) = checks.and_then(Value::as_object) else {
        return false;
    };
    if checks.get("lease_live") != Some(&Value::Bool(true)) {
        return false;
    }
    match checks.get(grant_field) {
        Some(Value::Object(grant)) => {
            if grant.get("revoked").is_some_and(|r| !r.is_null()) {
                return false;
            }
            match grant.get("max_cents") {
                None | Some(Value::Null) => true,
                Some(cap) => {
                    let amount = effect.and_then(|e| e.get("amount")).and_then(Value::as_i64);
                    matches!((cap.as_i64(), amount), (Some(c), Some(a)) if a <= c)
                }
            }
        }
        _ => true,
    }
}
