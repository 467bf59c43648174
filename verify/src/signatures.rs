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
    let mut chunk_keys: Vec<VerifyingKey> = Vec::with_capacity(chunk.len());
    let mut batchable = true;
    for j in chunk {
        match keys.get(j.key) {
            Some(k) if !r_is_identity(&j.signature) => chunk_keys.push(*k),
            _ => {
                batchable = false;
                break;
            }
        }
    }
    if batchable {
        let messages: Vec<&[u8]> = chunk.iter().map(|j| j.message.as_slice()).collect();
        let signatures: Vec<Signature> = chunk.iter().map(|j| j.signature).collect();
        if ed25519_dalek::verify_batch(&messages, &signatures, &chunk_keys).is_ok() {
            return vec![true; chunk.len()];
        }
    }
    chunk.iter().map(|j| verify_one(j, keys)).collect()
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
