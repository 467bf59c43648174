//! The seal of a receipt bundle (DESIGN §3.4): a signed head saying how long the chain is.
//!
//! Entries are chained backwards only, so a receipt cut after any entry still verifies as that
//! prefix. The head closes it: `{effect_id, count, last, ts_ms}` signed over
//! `"interlock-head-v1:" + canonical JSON` by the key that signed the entries. A sealed bundle
//! must hold exactly `count` entries ending in the entry whose hash is `last`. The writer is
//! [`crate::binding::seal_bundle`].

use crate::canonical::{self, CanonicalError};
use crate::entry::{decode_lower_hex, ReceiptBundle};
use crate::problem::Problem;
use crate::receipt::Happened;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
    let Some(h) = &bundle.head else {
        return false;
    };
    let before = problems.len();
    check_head(bundle, h, signer, problems);
    problems.len() == before
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

fn check_head(
    bundle: &ReceiptBundle,
    h: &Head,
    signer: Option<[u8; 32]>,
    problems: &mut Vec<Problem>,
) {
    let eid = &bundle.effect_id;
    let mut mismatch = |what: String| {
        let msg = format!(
            "effect {eid}: head: {what}; entries were dropped, added or replaced after sealing"
        );
        problems.push(Problem::receipt(code::HEAD_MISMATCH, msg));
    };
    if &h.effect_id != eid {
        mismatch(format!(
            "effect_id is {}",
            crate::display::shorten(&h.effect_id, 80)
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
    if last.and_then(|e| e.get("hash")).and_then(Value::as_str) != Some(h.last.as_str()) {
        mismatch("last is not the hash of the bundle's last entry".to_owned());
    }
    if last
        .and_then(|e| e.get("ts_ms"))
        .and_then(Value::as_u64)
        .is_some_and(|t| t > h.ts_ms)
    {
        mismatch(format!("ts_ms = {} is before the last entry", h.ts_ms));
    }
    let named = decode_lower_hex::<32>(&h.signer);
    if named.is_none() || named != signer {
        let msg = format!(
            "effect {eid}: the head is signed by {}, not by the key that signed the entries",
            crate::display::shorten(&h.signer, 80)
        );
        problems.push(Problem::receipt(code::HEAD_SIGNER, msg));
        return;
    }
    let key = named
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .filter(crate::signatures::key_is_acceptable);
    let sig = decode_lower_hex::<64>(&h.sig).map(|b| Signature::from_bytes(&b));
    let ok = match (key, sig, head_message(h)) {
        (Some(k), Some(s), Ok(m)) => k.verify_strict(&m, &s).is_ok(),
        _ => false,
    };
    if !ok {
        let msg = format!("effect {eid}: the head's signature does not verify for its signer");
        problems.push(Problem::receipt(code::HEAD_SIGNATURE, msg));
    }
}
