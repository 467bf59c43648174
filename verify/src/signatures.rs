//! Checking many ed25519 signatures fast without losing the name of the bad one.
//!
//! Signatures are checked in batches (`ed25519_dalek::verify_batch`, batches spread over threads
//! with rayon). A batch answers only "all good" or "something is wrong", so a failed batch is
//! re-checked one signature at a time with `verify_strict`, which names the bad entry.
//!
//! Batch verification is looser than `verify_strict` in two ways, both closed here:
//! - it does not reject weak (small-order) public keys: every key is checked once with
//!   [`key_is_acceptable`] before its signatures are queued;
//! - it accepts a small-order `R`. For a key without a torsion component the only small-order `R`
//!   that can satisfy the equation is the identity, so [`r_is_identity`] rejects its encodings
//!   up front, before any batch.

use ed25519_dalek::{Signature, VerifyingKey};
use rayon::prelude::*;

/// Signatures per batch: large enough for the batch speed-up, small enough to spread over threads.
pub const BATCH_SIZE: usize = 256;

/// One signature to check: the message, the signature and the index of its key in a key table.
#[derive(Debug, Clone)]
pub struct SigJob {
    /// The signed bytes.
    pub message: Vec<u8>,
    /// The signature.
    pub signature: Signature,
    /// Index into the key table passed to [`verify_all`].
    pub key: usize,
}

/// A key may sign records: it is not of small order and has no torsion component.
pub fn key_is_acceptable(key: &VerifyingKey) -> bool {
    !key.is_weak() && key.to_edwards().is_torsion_free()
}

/// Whether the `R` half of a signature encodes the identity point (y = 1, or its non-canonical
/// form y = p + 1, with either sign bit).
pub fn r_is_identity(signature: &Signature) -> bool {
    let r = signature.r_bytes();
    let top = r[31] & 0x7f;
    let canonical_one = r[0] == 1 && r[1..31].iter().all(|b| *b == 0) && top == 0;
    let p_plus_one = r[0] == 0xee && r[1..31].iter().all(|b| *b == 0xff) && top == 0x7f;
    canonical_one || p_plus_one
}

/// Check every job; `result[i]` tells whether job `i` holds. Keys must already have passed
/// [`key_is_acceptable`].
pub fn verify_all(jobs: &[SigJob], keys: &[VerifyingKey]) -> Vec<bool> {
    jobs.par_chunks(BATCH_SIZE)
        .flat_map_iter(|chunk| verify_chunk(chunk, keys))
        .collect()
}

/// Check every job on the calling thread, in batches; `result[i]` tells whether job `i` holds.
pub fn verify_sequential(jobs: &[SigJob], keys: &[VerifyingKey]) -> Vec<bool> {
    jobs.chunks(BATCH_SIZE)
        .flat_map(|chunk| verify_chunk(chunk, keys))
        .collect()
}

fn verify_chunk(chunk: &[SigJob], keys: &[VerifyingKey]) -> Vec<bool> {
    let messages: Vec<&[u8]> = chunk.iter().map(|j| j.message.as_slice()).collect();
    let signatures: Vec<Signature> = chunk.iter().map(|j| j.signature).collect();
    let key_of: Vec<usize> = chunk.iter().map(|j| j.key).collect();
    verify_batch_sequential(&messages, &signatures, &key_of, keys)
}

/// Check signature `i` (`signatures[i]` over `messages[i]` by `keys[key_of[i]]`) for every `i`, on
/// the calling thread, in batches of [`BATCH_SIZE`]; `result[i]` tells whether it holds. A batch
/// that fails (or cannot be batched) is re-checked one by one with `verify_strict`. Keys must
/// already have passed [`key_is_acceptable`]. With slices of different lengths, every signature from
/// the batch where the shortest slice ends on fails.
pub fn verify_batch_sequential(
    messages: &[&[u8]],
    signatures: &[Signature],
    key_of: &[usize],
    keys: &[VerifyingKey],
) -> Vec<bool> {
    let n = messages.len().max(signatures.len()).max(key_of.len());
    let mut out = Vec::with_capacity(n);
    let mut chunk_keys: Vec<VerifyingKey> = Vec::with_capacity(BATCH_SIZE);
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
        chunk_keys.clear();
        let mut batchable = true;
        for (sig, key) in s.iter().zip(k) {
            match keys.get(*key) {
                Some(vk) if !r_is_identity(sig) => chunk_keys.push(*vk),
                _ => {
                    batchable = false;
                    break;
                }
            }
        }
        if batchable && ed25519_dalek::verify_batch(m, s, &chunk_keys).is_ok() {
            out.resize(end, true);
        } else {
            out.extend(m.iter().zip(s).zip(k).map(|((msg, sig), key)| {
                keys.get(*key)
                    .is_some_and(|vk| vk.verify_strict(msg, sig).is_ok())
            }));
        }
        start = end;
    }
    out
}

/// Check one job with `verify_strict` (rejects small-order keys and `R`).
pub fn verify_one(job: &SigJob, keys: &[VerifyingKey]) -> bool {
    match keys.get(job.key) {
        Some(key) => key.verify_strict(&job.message, &job.signature).is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    #[test]
    fn batches_name_the_one_bad_signature() {
        let key = SigningKey::from_bytes(&[3u8; 32]);
        let keys = vec![key.verifying_key()];
        let mut jobs: Vec<SigJob> = (0..300u32)
            .map(|i| {
                let message = format!("m{i}").into_bytes();
                SigJob {
                    signature: key.sign(&message),
                    message,
                    key: 0,
                }
            })
            .collect();
        assert!(verify_all(&jobs, &keys).iter().all(|ok| *ok));
        jobs[260].message.push(b'!');
        let out = verify_all(&jobs, &keys);
        let bad: Vec<usize> = (0..out.len()).filter(|i| !out[*i]).collect();
        assert_eq!(bad, vec![260]);
        jobs[1].key = 9;
        assert!(!verify_all(&jobs, &keys)[1]);
    }

    #[test]
    fn batch_sequential_names_the_bad_signature_and_fails_closed() {
        let key = SigningKey::from_bytes(&[5u8; 32]);
        let keys = vec![key.verifying_key()];
        let messages: Vec<Vec<u8>> = (0..300u32).map(|i| format!("m{i}").into_bytes()).collect();
        let mut signatures: Vec<Signature> = messages.iter().map(|m| key.sign(m)).collect();
        let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        let key_of = vec![0usize; 300];
        let all = verify_batch_sequential(&refs, &signatures, &key_of, &keys);
        assert_eq!(all, vec![true; 300]);
        signatures.swap(3, 4);
        let out = verify_batch_sequential(&refs, &signatures, &key_of, &keys);
        let bad: Vec<usize> = (0..out.len()).filter(|i| !out[*i]).collect();
        assert_eq!(bad, vec![3, 4]);
        // A key index outside the table, and slices of different lengths, never pass.
        let mut wrong_key = key_of.clone();
        wrong_key[299] = 1;
        assert!(!verify_batch_sequential(&refs, &signatures, &wrong_key, &keys)[299]);
        let short = verify_batch_sequential(&refs[..299], &signatures, &key_of, &keys);
        assert_eq!(short.len(), 300);
        assert!(short[256..].iter().all(|ok| !ok));
    }

    #[test]
    fn identity_r_is_refused_before_batching() {
        let mut bytes = [0u8; 64];
        bytes[0] = 1;
        assert!(r_is_identity(&Signature::from_bytes(&bytes)));
        bytes[31] = 0x80;
        assert!(r_is_identity(&Signature::from_bytes(&bytes)));
        let mut other = [0xffu8; 64];
        other[0] = 0xee;
        other[31] = 0x7f;
        assert!(r_is_identity(&Signature::from_bytes(&other)));
        let key = SigningKey::from_bytes(&[3u8; 32]);
        assert!(!r_is_identity(&key.sign(b"x")));
        assert!(key_is_acceptable(&key.verifying_key()));
    }

    #[test]
    fn weak_keys_are_not_acceptable() {
        // The identity point (y = 1) is a small-order public key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = VerifyingKey::from_bytes(&identity).unwrap();
        assert!(!key_is_acceptable(&weak));
    }
}
