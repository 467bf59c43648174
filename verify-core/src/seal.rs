//! The seal of a receipt bundle (DESIGN §3.4): a signed head saying how long the chain is.
//!
//! Entries are chained backwards only, so a receipt cut after any entry still verifies as that
//! prefix. The head closes it: `{effect_id, count, last, ts_ms}` signed over
//! `"interlock-head-v1:" + canonical JSON` by the key that signed the entries. A sealed bundle
//! must hold exactly `count` entries ending in the entry whose hash is `last`. The writer is
//! `verify::binding::seal_bundle`.

use crate::canonical::{self, CanonicalError};
use crate::entry::{decode_lower_hex, ReceiptBundle};
use crate::problem::Problem;
use crate::report::Happened;
use crate::view::{BundleView, View};
use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Domain-separation prefix of the head signature (never valid as an entry signature).
pub const HEAD_CONTEXT: &str = "interlock-head-v1:";

/// Problem codes of the seal.
pub mod code {
    /// The head disagrees with the bundle (effect, count, last hash, or time).
    pub const HEAD_MISMATCH: &str = "head_mismatch";
    /// The head is signed by another key than the entries must be.
    pub const HEAD_SIGNER: &str = "head_signer";
    /// The head's signature does not verify.
    pub const HEAD_SIGNATURE: &str = "head_signature";
}

/// A bundle's signed head. `signer` and `sig` sit beside the four signed fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Head {
    /// The bundle's effect id.
    pub effect_id: String,
    /// How many entries the bundle holds.
    pub count: u64,
    /// The `hash` of the bundle's last entry.
    pub last: String,
    /// When the bundle was sealed (Unix milliseconds), not before its last entry.
    pub ts_ms: u64,
    /// Hex ed25519 public key of the sealer (the entries' signer).
    pub signer: String,
    /// Hex ed25519 signature over [`head_message`].
    pub sig: String,
}

/// The exact bytes the head signature covers.
pub fn head_message(h: &Head) -> Result<Vec<u8>, CanonicalError> {
    let body =
        json!({"effect_id": h.effect_id, "count": h.count, "last": h.last, "ts_ms": h.ts_ms});
    let mut msg = HEAD_CONTEXT.as_bytes().to_vec();
    msg.extend(canonical::to_vec(&body)?);
    Ok(msg)
}

/// Check a bundle's head, if it has one, against its entries and against `signer`, the key the
/// entries had to be signed by. Adds a problem per disagreement; an unsealed bundle adds none
/// (its caller decides whether a seal is required). Returns whether the bundle is sealed: it has
/// a head and every check of it holds.
pub fn check(
    bundle: &ReceiptBundle,
    signer: Option<[u8; 32]>,
    problems: &mut Vec<Problem>,
) -> bool {
    match check_but_signature(&crate::view::BundleView::of(bundle), signer, problems) {
        Seal::Unsealed | Seal::Broken => false,
        Seal::Pending(head) => check_now(&bundle.effect_id, &head, problems),
    }
}

/// Check a head's signature with `verify_strict`, adding its problem when it does not hold.
fn check_now(effect_id: &str, head: &PendingHead, problems: &mut Vec<Problem>) -> bool {
    let ok = VerifyingKey::from_bytes(&head.signer)
        .ok()
        .filter(crate::signatures::key_is_acceptable)
        .is_some_and(|k| k.verify_strict(&head.message, &head.signature).is_ok());
    if !ok {
        problems.push(signature_problem(effect_id));
    }
    ok
}

/// What [`check_but_signature`] found of a bundle's head.
pub enum Seal {
    /// The bundle has no head.
    Unsealed,
    /// The head does not hold (its problems were added).
    Broken,
    /// Every check of the head holds but its signature, which is left to the caller: the bundle
    /// is sealed exactly when that signature verifies (else [`signature_problem`]).
    Pending(PendingHead),
}

/// A head signature to check: `signature` by `signer` over `message` ([`head_message`]). The
/// caller must check that `signer` is an acceptable key ([`crate::signatures::key_is_acceptable`]).
pub struct PendingHead {
    /// The sealer's key, which is the key the entries had to be signed by.
    pub signer: [u8; 32],
    /// The head's signature.
    pub signature: Signature,
    /// The exact bytes it must cover.
    pub message: Vec<u8>,
}

/// [`check`] without the signature, so that the caller can check it in a batch with others.
pub fn check_but_signature(
    bundle: &BundleView<'_>,
    signer: Option<[u8; 32]>,
    problems: &mut Vec<Problem>,
) -> Seal {
    let Some(h) = &bundle.head else {
        return Seal::Unsealed;
    };
    let before = problems.len();
    match check_head(bundle, h, signer, problems) {
        Some(p) if problems.len() == before => Seal::Pending(p),
        // A head that is broken anyway: its signature is still checked, to be reported too.
        Some(p) => {
            check_now(&bundle.effect_id, &p, problems);
            Seal::Broken
        }
        None => Seal::Broken,
    }
}

/// The problem of a head whose signature does not verify for its signer.
pub fn signature_problem(effect_id: &str) -> Problem {
    let msg = format!("effect {effect_id}: the head's signature does not verify for its signer");
    Problem::receipt(code::HEAD_SIGNATURE, msg)
}

/// What the receipt proves happened, given whether it is sealed ([`check`]): without a seal,
/// nothing shows the receipt holds every entry (one cut after AUTHORIZED, or with its COMMITTED
/// dropped, reads as its prefix), so it never proves the effect did not happen.
pub fn proven(entries_say: Happened, sealed: bool) -> Happened {
    match entries_say {
        Happened::No if !sealed => Happened::Unknown,
        other => other,
    }
}

/// Every check of the head but its signature, which is returned to be checked (`None` when it
/// cannot be: the problem is added).
fn check_head(
    bundle: &BundleView<'_>,
    h: &Head,
    signer: Option<[u8; 32]>,
    problems: &mut Vec<Problem>,
) -> Option<PendingHead> {
    let eid = bundle.effect_id.as_ref();
    let mut mismatch = |what: String| {
        let msg = format!(
            "effect {eid}: head: {what}; entries were dropped, added or replaced after sealing"
        );
        problems.push(Problem::receipt(code::HEAD_MISMATCH, msg));
    };
    if h.effect_id != eid {
        mismatch(format!(
            "effect_id is {}",
            crate::text::shorten(&h.effect_id, 80)
        ));
    }
    if h.count != bundle.entries.len() as u64 {
        mismatch(format!(
            "count = {}, the bundle holds {} entries",
            h.count,
            bundle.entries.len()
        ));
    }
    let last = bundle.entries.last();
    if last.and_then(|e| e.get("hash")).and_then(View::as_str) != Some(h.last.as_str()) {
        mismatch("last is not the hash of the bundle's last entry".to_owned());
    }
    if last
        .and_then(|e| e.get("ts_ms"))
        .and_then(View::as_u64)
        .is_some_and(|t| t > h.ts_ms)
    {
        mismatch(format!("ts_ms = {} is before the last entry", h.ts_ms));
    }
    let named = decode_lower_hex::<32>(&h.signer);
    let Some(signer) = named.filter(|n| Some(*n) == signer) else {
        let msg = format!(
            "effect {eid}: the head is signed by {}, not by the key that signed the entries",
            crate::text::shorten(&h.signer, 80)
        );
        problems.push(Problem::receipt(code::HEAD_SIGNER, msg));
        return None;
    };
    let sig = decode_lower_hex::<64>(&h.sig).map(|b| Signature::from_bytes(&b));
    match (sig, head_message(h)) {
        (Some(signature), Ok(message)) => Some(PendingHead {
            signer,
            signature,
            message,
        }),
        _ => {
            problems.push(signature_problem(eid));
            None
        }
    }
}
