//! Checking many ed25519 signatures fast without losing the name of the bad one.
//!
//! Signatures are checked in batches, each by one equation ([`crate::batch::holds`], which
//! multiplies each signer's key once). A batch answers only "all good" or "something is wrong", so
//! a failed batch is re-checked one signature at a time with `verify_strict`, which names the bad
//! entry.
//!
//! A batch equation is looser than `verify_strict` in three ways; two are closed:
//! - it does not reject weak (small-order) public keys: it takes only [`AcceptedKey`]s, which
//!   have passed [`key_is_acceptable`];
//! - it would accept a small-order `R`, or an `R` written in a non-canonical encoding:
//!   [`crate::batch::holds`] refuses both before its sum, as `verify_strict` does;
//! - it may accept, for the key's holder only, an `R` with a torsion component added (see
//!   [`crate::batch`]), as `ed25519_dalek::verify_batch` does.

use crate::batch;
use crate::entry::decode_lower_hex;
use ed25519_dalek::{Signature, VerifyingKey};

/// Signatures per batch: large enough for the batch speed-up, small enough to spread over threads.
/// From 800 points on, curve25519-dalek's Pippenger sum takes windows of 8 bits instead of 6,
/// about a quarter fewer point additions per signature than at 256 (the bench's 100,000-receipt
/// file checks some 3 % faster, in less memory). A failed batch is re-checked one by one, so a
/// file with a bad signature in every batch checks at the one-by-one rate whatever the size.
pub const BATCH_SIZE: usize = 1024;

/// A key may sign records: it is not of small order, has no torsion component, and is written in
/// its one canonical encoding (a `y` below the field's prime, no sign bit on a point whose `x` is
/// zero), so one key has one spelling.
pub fn key_is_acceptable(key: &VerifyingKey) -> bool {
    let point = key.to_edwards();
    !key.is_weak() && point.is_torsion_free() && point.compress().to_bytes() == key.to_bytes()
}

/// A key [`key_is_acceptable`] allows. [`AcceptedKey::new`] is the only way to make one, so the
/// batch equation ([`crate::batch::holds`]) and [`verify_batch_sequential`], which multiply keys
/// without checking them again, are never given any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptedKey(VerifyingKey);

impl AcceptedKey {
    /// `key`, if [`key_is_acceptable`] allows it.
    pub fn new(key: VerifyingKey) -> Option<AcceptedKey> {
        key_is_acceptable(&key).then_some(AcceptedKey(key))
    }

    /// The key.
    pub fn key(&self) -> &VerifyingKey {
        &self.0
    }
}

/// Why a signature over a whole file does not hold ([`check_file_signature`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FileSignatureError {
    /// The key is not one [`key_is_acceptable`] allows.
    #[error("the signer is not an acceptable ed25519 public key (small order, torsion or a non-canonical encoding)")]
    Key,
    /// The signature is not 128 lowercase hex characters.
    #[error("the signature is not 128 lowercase hex characters")]
    Malformed,
    /// It does not verify, strictly, under the key.
    #[error("the signature does not verify under the key")]
    Invalid,
}

/// A signer's key as a whole-file format publishes it: 64 lowercase hex characters of a key that
/// [`key_is_acceptable`] allows; `None` for any other text.
pub fn published_key(hex: &str) -> Option<VerifyingKey> {
    decode_lower_hex::<32>(hex)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .filter(key_is_acceptable)
}

/// The one rule for a signature over a whole file, whatever the format (a results file's
/// manifest, a nemesis file, each shard of a merged one, a shared_cap matrix or nemesis file):
/// `key` is acceptable ([`key_is_acceptable`]), `sig` is 128 lowercase hex characters, and it
/// verifies over `message` with `verify_strict`.
pub fn check_file_signature(
    key: &VerifyingKey,
    message: &[u8],
    sig: &str,
) -> Result<(), FileSignatureError> {
    if !key_is_acceptable(key) {
        return Err(FileSignatureError::Key);
    }
    let sig = decode_lower_hex::<64>(sig).ok_or(FileSignatureError::Malformed)?;
    key.verify_strict(message, &Signature::from_bytes(&sig))
        .map_err(|_| FileSignatureError::Invalid)
}

/// Check signature `i` (`signatures[i]` over `messages[i]` by `keys[key_of[i]]`) for every `i`, on
/// the calling thread, in batches of [`BATCH_SIZE`]; `result[i]` tells whether it holds. A batch
/// that fails (or cannot be batched) is re-checked one by one with `verify_strict`. With slices of different lengths, every signature from
/// the batch where the shortest slice ends on fails.
pub fn verify_batch_sequential(
    messages: &[&[u8]],
    signatures: &[Signature],
    key_of: &[usize],
    keys: &[AcceptedKey],
) -> Vec<bool> {
    let n = messages.len().max(signatures.len()).max(key_of.len());
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    while start < n {
        let end = (start + BATCH_SIZE).min(n);
        let (Some(m), Some(s), Some(k)) = (
            messages.get(start..end),
            signatures.get(start..end),
            key_of.get(start..end),
        ) else {
            // Mismatched lengths: nothing past the shortest slice can hold.
            out.resize(n, false);
            return out;
        };
        if batch::holds(m, s, k, keys) {
            out.resize(end, true);
        } else {
            out.extend(m.iter().zip(s).zip(k).map(|((msg, sig), key)| {
                keys.get(*key)
                    .is_some_and(|vk| vk.key().verify_strict(msg, sig).is_ok())
            }));
        }
        start = end;
    }
    out
}

#[cfg(test)]
#[path = "trusted_tests/signatures.rs"]
mod tests;
