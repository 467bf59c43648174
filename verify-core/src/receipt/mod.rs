//! Receipt verification (DESIGN §3.3): re-derive, offline, what one effect's journal entries prove.
//!
//! [`verify_bundle`] checks one bundle; [`verify_group`] checks several and batches their
//! signatures together (the results checker spreads groups over threads, outside this core).
//! Neither fails open: every check that does not hold adds a [`Problem`], and `valid` is true
//! only when there is none (`Prepared::finish`).
//!
//! Reading order: [`prepare`] (per entry: [`chain`]), [`replay`] (the protocol rules), then the
//! signatures in [`check_signatures`].
//!
//! Two formats are understood:
//! - `interlock-receipt/1` (this project): signed entries, RFC 8785 hashes, 64-hex effect ids;
//! - `python-original` (the original Python implementation, see [`crate::pycompat`]): unsigned,
//!   Python-canonical hashes, 12-hex effect ids, `ts` floats, `result`/`found` evidence and the
//!   grant under `checks.lease`. A bundle of that format is recognised by `verify::load::load_document`.

pub mod answers;
mod chain;
mod replay;

use crate::entry::{self, ReceiptBundle, Via, RECEIPT_FORMAT};
use crate::problem::{code, shown_kind, Listing, Problem};
use crate::report::ReceiptReport;
use crate::signatures::{self, AcceptedKey};
use crate::view::{BundleView, Object, View};
use chain::ChainWalk;
use ed25519_dalek::{Signature, VerifyingKey};
use std::collections::HashMap;
use std::sync::Mutex;

/// The `format` a [`ReceiptReport`] names for a bundle of the original Python implementation.
pub const PYTHON_ORIGINAL_FORMAT: &str = "python-original";

/// The ways a COMMITTED entry can say the effect happened.
pub const VIAS: [&str; 5] = [
    Via::Send.as_str(),
    Via::RetryIdempotent.as_str(),
    Via::RecoveryQuery.as_str(),
    Via::RecoveryReapply.as_str(),
    Via::FailedButLanded.as_str(),
];

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
pub enum SignerRule {
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

/// Verify one receipt bundle.
pub fn verify_bundle(bundle: &ReceiptBundle, key: &KeyCheck) -> ReceiptReport {
    let bundle = BundleView::of(bundle);
    let mut prepared = [prepare(&bundle, &SignerRule::from(key))];
    check_signatures(&mut prepared, &Vetted::default());
    let [prepared] = prepared;
    prepared.finish()
}

/// Each distinct signer, decoded and vetted once per run (`None`: not an acceptable key).
pub type Vetted = Mutex<HashMap<[u8; 32], Option<AcceptedKey>>>;

fn vet(vetted: &Vetted, signer: &[u8; 32]) -> Option<AcceptedKey> {
    // A poisoned lock only means another thread panicked; the map itself is still valid.
    let mut known = vetted.lock().unwrap_or_else(|e| e.into_inner());
    *known.entry(*signer).or_insert_with(|| {
        let key = VerifyingKey::from_bytes(signer).ok();
        key.and_then(AcceptedKey::new)
    })
}

/// Verify one group of receipts on the calling thread: every check, then all their signatures in
/// shared batches. `result[i]` is the report of `group[i]`.
pub fn verify_group(
    group: &[&ReceiptBundle],
    rule: &SignerRule,
    vetted: &Vetted,
) -> Vec<ReceiptReport> {
    let views: Vec<BundleView<'_>> = group.iter().map(|b| BundleView::of(b)).collect();
    let views: Vec<&BundleView<'_>> = views.iter().collect();
    verify_group_views(&views, rule, vetted)
}

/// [`verify_group`] of bundles read as [`BundleView`]s (as a results file's cells are read).
pub fn verify_group_views(
    group: &[&BundleView<'_>],
    rule: &SignerRule,
    vetted: &Vetted,
) -> Vec<ReceiptReport> {
    let mut prepared: Vec<Prepared<'_>> = group.iter().map(|b| prepare(b, rule)).collect();
    check_signatures(&mut prepared, vetted);
    prepared.into_iter().map(Prepared::finish).collect()
}

/// Check every pending signature of `prepared` in shared batches; each that fails is a problem of
/// its entry.
fn check_signatures(prepared: &mut [Prepared<'_>], vetted: &Vetted) {
    let batch = collect_signatures(prepared, vetted);
    let messages: Vec<&[u8]> = batch
        .spans
        .iter()
        .map(|&(from, to)| batch.text.get(from..to).unwrap_or_default())
        .collect();
    let results = signatures::verify_batch_sequential(
        &messages,
        &batch.signatures,
        &batch.key_of,
        &batch.table,
    );
    for (owner, ok) in batch.owners.into_iter().zip(results) {
        let (r, e) = match owner {
            Owner::Entry(r, e) => (r, e),
            Owner::Head(r) => {
                if let (false, Some(p)) = (ok, prepared.get_mut(r)) {
                    p.head_failed();
                }
                continue;
            }
        };
        if let (false, Some(p)) = (ok, prepared.get_mut(r)) {
            p.sig_failed = true;
            let kind = p.report.journal_kinds.get(e).cloned();
            let msg = format!(
                "effect {}: the signature of entry {e} does not verify for its signer",
                p.report.effect_id
            );
            let problem = Problem::at(e, kind.as_deref(), code::BAD_SIGNATURE, msg);
            p.signature_problems.push(problem);
        }
    }
}

/// Every signed message of a group, back to back in one buffer (`context + stored hash` of an
/// entry, or a head's message), with its signature, the index of its key in `table`, and its
/// owner.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    spans: Vec<(usize, usize)>,
    signatures: Vec<Signature>,
    key_of: Vec<usize>,
    owners: Vec<Owner>,
    table: Vec<AcceptedKey>,
}

/// Whose signature a batch slot holds.
#[derive(Clone, Copy)]
enum Owner {
    /// Receipt `r`'s entry `e`.
    Entry(usize, usize),
    /// Receipt `r`'s head ([`crate::seal`]).
    Head(usize),
}

impl Batch {
    /// Room for `n` signatures, so that filling it grows none of its lists (but the messages' text
    /// when heads' messages, longer than entries', are many).
    fn with_capacity(n: usize) -> Batch {
        const MESSAGE: usize = 128;
        Batch {
            text: Vec::with_capacity(n * MESSAGE),
            spans: Vec::with_capacity(n),
            signatures: Vec::with_capacity(n),
            key_of: Vec::with_capacity(n),
            owners: Vec::with_capacity(n),
            table: Vec::new(),
        }
    }

    fn push(&mut self, parts: [&[u8]; 2], signature: Signature, key: usize, owner: Owner) {
        let from = self.text.len();
        for part in parts {
            self.text.extend_from_slice(part);
        }
        self.spans.push((from, self.text.len()));
        self.signatures.push(signature);
        self.key_of.push(key);
        self.owners.push(owner);
    }
}

/// Queue every pending signature of the group; a signer that is not an acceptable key is
/// reported (weak_key) and its signatures are never queued.
fn collect_signatures(prepared: &mut [Prepared<'_>], vetted: &Vetted) -> Batch {
    let mut batch = Batch::with_capacity(prepared.iter().map(|p| p.pending.len() + 1).sum());
    let mut index: HashMap<[u8; 32], Option<usize>> = HashMap::new();
    // Nearly every entry has the same signer as the one before: skip the map for it.
    let mut last: Option<([u8; 32], Option<usize>)> = None;
    for (r, p) in prepared.iter_mut().enumerate() {
        for s in std::mem::take(&mut p.pending) {
            let slot = match last {
                Some((signer, slot)) if signer == s.signer => slot,
                _ => {
                    let slot = *index.entry(s.signer).or_insert_with(|| {
                        vet(vetted, &s.signer).map(|k| {
                            batch.table.push(k);
                            batch.table.len() - 1
                        })
                    });
                    last = Some((s.signer, slot));
                    slot
                }
            };
            let Some(key) = slot else {
                p.weak_signer(s.entry, &s.signer);
                continue;
            };
            let message = [entry::SIGNING_CONTEXT.as_bytes(), s.hash.as_bytes()];
            batch.push(message, s.signature, key, Owner::Entry(r, s.entry));
        }
        if let Some(head) = p.head.take() {
            let slot = *index.entry(head.signer).or_insert_with(|| {
                vet(vetted, &head.signer).map(|k| {
                    batch.table.push(k);
                    batch.table.len() - 1
                })
            });
            // A head signed by a key that may not sign does not verify (as `seal::check` says).
            match slot {
                Some(key) => batch.push([&head.message, &[]], head.signature, key, Owner::Head(r)),
                None => p.head_failed(),
            }
        }
    }
    batch
}

/// A receipt checked in everything but its signatures, which wait in `pending`.
struct Prepared<'a> {
    report: ReceiptReport,
    pending: Vec<PendingSig<'a>>,
    signed_format: bool,
    sig_failed: bool,
    /// What the signatures' check found (checked after the other stages, in batches).
    signature_problems: Listing,
    /// The head's signature, when every other check of the head holds: checked with the
    /// entries' signatures; the receipt is sealed exactly when it verifies.
    head: Option<crate::seal::PendingHead>,
    /// The head holds so far (see `head`).
    sealed: bool,
    /// Where in `report.problems` the head's signature problem goes: where the seal's check
    /// would have put it.
    head_problem_at: usize,
}

/// A signature to check: the entry's signer and signature, over `SIGNING_CONTEXT + hash` where
/// `hash` is the entry's stored `hash` text.
pub(super) struct PendingSig<'a> {
    entry: usize,
    signer: [u8; 32],
    hash: &'a str,
    signature: Signature,
}

impl Prepared<'_> {
    /// A receipt with nothing to check further: no signature pending, unsealed.
    fn unchecked(report: ReceiptReport) -> Self {
        Prepared {
            report,
            pending: Vec::new(),
            signed_format: false,
            sig_failed: false,
            signature_problems: Listing::default(),
            head: None,
            sealed: false,
            head_problem_at: 0,
        }
    }

    fn head_failed(&mut self) {
        self.sealed = false;
        let problem = crate::seal::signature_problem(&self.report.effect_id);
        let at = self.head_problem_at.min(self.report.problems.len());
        self.report.problems.insert(at, problem);
    }

    fn weak_signer(&mut self, entry: usize, signer: &[u8; 32]) {
        self.sig_failed = true;
        let kind = self.report.journal_kinds.get(entry).cloned();
        let msg = format!(
            "effect {}: entry {entry} is signed by {}, which is not a valid ed25519 key of prime order (weak or with a torsion component)",
            self.report.effect_id,
            entry::lower_hex(signer)
        );
        self.signature_problems
            .push(Problem::at(entry, kind.as_deref(), code::WEAK_KEY, msg));
    }

    fn finish(mut self) -> ReceiptReport {
        self.report.happened = crate::seal::proven(self.report.entries_say, self.sealed);
        if self.signed_format {
            self.report.signed = Some(!self.sig_failed);
        }
        let found = self
            .signature_problems
            .into_problems(&self.report.effect_id);
        self.report.problems.extend(found);
        self.report
            .problems
            .sort_by_key(|p| p.entry.unwrap_or(usize::MAX));
        self.report.valid = self.report.problems.is_empty();
        self.report
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Current,
    Original,
}

/// Every check of one receipt but its signatures, which wait in `pending`.
fn prepare<'a>(bundle: &'a BundleView<'_>, rule: &SignerRule) -> Prepared<'a> {
    let format = match bundle.format.as_ref() {
        RECEIPT_FORMAT => Some(Format::Current),
        PYTHON_ORIGINAL_FORMAT => Some(Format::Original),
        _ => None,
    };
    let key_label = match (format, rule) {
        (Some(Format::Current), SignerRule::Pinned(_)) => "pinned",
        (Some(Format::Current), _) => "self-attested",
        _ => "none",
    };
    let mut report = ReceiptReport::empty_for(&bundle.format, &bundle.effect_id, key_label);
    let eid = bundle.effect_id.as_ref();
    let Some(format) = format else {
        let what = format!(
            "effect {eid}: the bundle format {:?} is not one this verifier knows",
            crate::text::shorten(&bundle.format, 40)
        );
        report
            .problems
            .push(Problem::receipt(code::UNKNOWN_FORMAT, what));
        return Prepared::unchecked(report);
    };
    check_bundle(&mut report, bundle, format);
    let mut walk = ChainWalk {
        eid,
        format,
        rule,
        problems: Listing::default(),
        chain_ok: true,
        pending: Vec::new(),
        first_signer: None,
        unsigned: bundle.entries.is_empty(),
    };
    let objects: Vec<Option<&Object<'_>>> = bundle
        .entries
        .iter()
        .enumerate()
        .map(|(i, raw)| walk.check(i, raw, bundle.entries.get(i.wrapping_sub(1))))
        .collect();
    let kind_of = |e: &View<'_>| e.get("kind").and_then(View::as_str).map(shown_kind);
    report.journal_kinds = bundle
        .entries
        .iter()
        .map(|e| kind_of(e).unwrap_or_else(|| "?".to_owned()))
        .collect();
    report.final_kind = bundle.entries.last().and_then(kind_of);
    report.chain_consistent = walk.chain_ok;
    report.signer = walk.first_signer.map(|s| entry::lower_hex(&s));
    report.problems.extend(walk.problems.into_problems(eid));
    let sealer = match rule {
        SignerRule::Pinned(k) | SignerRule::Published(k) => Some(k.to_bytes()),
        SignerRule::FromRecord => walk.first_signer,
    };
    use crate::seal::{check_but_signature, Seal};
    let (head, sealed) = match check_but_signature(bundle, sealer, &mut report.problems) {
        Seal::Pending(head) => (Some(head), true),
        Seal::Unsealed | Seal::Broken => (None, false),
    };
    let head_problem_at = report.problems.len();
    replay::replay(eid, format, &objects, &mut report);
    Prepared {
        pending: walk.pending,
        signed_format: format == Format::Current,
        sig_failed: walk.unsigned,
        head,
        sealed,
        head_problem_at,
        ..Prepared::unchecked(report)
    }
}

/// The bundle as a whole: an effect id of its format's shape, and at least one entry.
fn check_bundle(report: &mut ReceiptReport, bundle: &BundleView<'_>, format: Format) {
    let eid = bundle.effect_id.as_ref();
    let id_len = match format {
        Format::Current => 64,
        Format::Original => crate::pycompat::ORIGINAL_EFFECT_ID_LEN,
    };
    if !(eid.len() == id_len && entry::is_lower_hex(eid)) {
        let what = format!(
            "effect {}: the effect id is not {id_len} lowercase hex characters",
            crate::text::shorten(eid, 80)
        );
        report
            .problems
            .push(Problem::receipt(code::BAD_EFFECT_ID, what));
    }
    if bundle.entries.is_empty() {
        let what = format!("effect {eid}: the receipt holds no entries");
        report
            .problems
            .push(Problem::receipt(code::EMPTY_RECEIPT, what));
    }
}
