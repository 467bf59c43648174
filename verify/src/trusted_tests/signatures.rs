//! Unit tests of `trusted::signatures` (kept apart so the trusted core reads without them).
use super::*;
use ed25519_dalek::{Signer, SigningKey};

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
