//! What only a writer of entries needs: an entry's hash as hex, the exact bytes its signature
//! covers, sealing an entry with a key, and a bundle's constructor. No check calls these; they sit
//! beside the format so that every writer and the core's tests use the same bytes the checks
//! recompute.

use crate::canonical::CanonicalError;
use crate::entry::{compute_digest, lower_hex, ReceiptBundle, RECEIPT_FORMAT, SIGNING_CONTEXT};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Map, Value};

/// The hex SHA-256 of the canonical JSON of `entry` without its `hash` and `sig` fields.
pub fn compute_hash(entry: &Map<String, Value>) -> Result<String, CanonicalError> {
    compute_digest(entry).map(|d| lower_hex(&d))
}

/// The exact bytes an entry signature covers: `"interlock-entry-v1:" + hash` (hash as lowercase hex).
pub fn signing_message(hash_hex: &str) -> Vec<u8> {
    let mut msg = Vec::with_capacity(SIGNING_CONTEXT.len() + hash_hex.len());
    msg.extend_from_slice(SIGNING_CONTEXT.as_bytes());
    msg.extend_from_slice(hash_hex.as_bytes());
    msg
}

/// Complete an entry in place: set `signer` to the key's public half, then `hash`, then `sig`.
///
/// The entry must already hold `v`, `ts_ms`, `kind`, `effect_id`, its kind fields and `prev`.
/// Any existing `signer`, `hash` and `sig` are replaced.
pub fn seal(entry: &mut Map<String, Value>, key: &SigningKey) -> Result<(), CanonicalError> {
    entry.remove("hash");
    entry.remove("sig");
    entry.insert(
        "signer".to_owned(),
        Value::String(hex::encode(key.verifying_key().as_bytes())),
    );
    let hash = compute_hash(entry)?;
    let sig = key.sign(&signing_message(&hash));
    entry.insert("hash".to_owned(), Value::String(hash));
    entry.insert("sig".to_owned(), Value::String(hex::encode(sig.to_bytes())));
    Ok(())
}

impl ReceiptBundle {
    /// A bundle in the current format.
    pub fn new(effect_id: impl Into<String>, entries: Vec<Value>) -> ReceiptBundle {
        ReceiptBundle {
            format: RECEIPT_FORMAT.to_owned(),
            effect_id: effect_id.into(),
            entries,
            head: None,
        }
    }
}
