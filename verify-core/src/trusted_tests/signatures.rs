//! Unit tests of `signatures` (kept apart so the trusted core reads without them).
use super::*;
use ed25519_dalek::{Signer, SigningKey};

#[test]
fn batch_sequential_names_the_bad_signature_and_fails_closed() {
    let key = SigningKey::from_bytes(&[5u8; 32]);
    let keys = vec![AcceptedKey::new(key.verifying_key()).unwrap()];
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
fn a_signing_key_is_acceptable_and_a_weak_one_cannot_be_an_accepted_key() {
    let key = SigningKey::from_bytes(&[3u8; 32]);
    assert!(key_is_acceptable(&key.verifying_key()));
    assert!(AcceptedKey::new(key.verifying_key()).is_some());
    // The identity point as a key: anything "verifies" under it in a batch equation, so the
    // batch must never be given it.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let weak = VerifyingKey::from_bytes(&identity).unwrap();
    assert!(AcceptedKey::new(weak).is_none());
}

#[test]
fn weak_keys_are_not_acceptable() {
    // The identity point (y = 1) is a small-order public key.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let weak = VerifyingKey::from_bytes(&identity).unwrap();
    assert!(!key_is_acceptable(&weak));
}

#[test]
fn a_key_with_a_torsion_component_or_a_second_spelling_is_not_acceptable() {
    let good = SigningKey::from_bytes(&[3u8; 32]).verifying_key();
    // The point of order 2 (y = -1, encoded as p - 1 = 2^255 - 20).
    let mut order_two = [0xffu8; 32];
    order_two[0] = 0xec;
    order_two[31] = 0x7f;
    let order_two = VerifyingKey::from_bytes(&order_two).unwrap();
    let mixed = VerifyingKey::from(good.to_edwards() + order_two.to_edwards());
    assert!(
        !mixed.is_weak(),
        "not of small order: only the torsion check refuses it"
    );
    assert!(!key_is_acceptable(&mixed));
    // y + p (y < 19) spells the point y again, with either sign bit: never acceptable.
    for d in 0u8..19 {
        for sign in [0u8, 0x80] {
            let mut bytes = [0xffu8; 32];
            bytes[0] = 0xed + d;
            bytes[31] = 0x7f | sign;
            if let Ok(k) = VerifyingKey::from_bytes(&bytes) {
                assert!(!key_is_acceptable(&k), "y = p + {d}, sign {sign}");
            }
        }
    }
}

#[test]
fn a_whole_file_signature_is_lowercase_hex_strictly_verified_by_an_acceptable_key() {
    let key = SigningKey::from_bytes(&[3u8; 32]);
    let sig = crate::entry::lower_hex(&key.sign(b"file").to_bytes());
    let vk = key.verifying_key();
    assert_eq!(check_file_signature(&vk, b"file", &sig), Ok(()));
    assert_eq!(
        check_file_signature(&vk, b"other", &sig),
        Err(FileSignatureError::Invalid)
    );
    assert_eq!(
        check_file_signature(&vk, b"file", &sig.to_ascii_uppercase()),
        Err(FileSignatureError::Malformed)
    );
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let weak = VerifyingKey::from_bytes(&identity).unwrap();
    assert_eq!(
        check_file_signature(&weak, b"file", &sig),
        Err(FileSignatureError::Key)
    );
    let hex = crate::entry::lower_hex(vk.as_bytes());
    assert_eq!(published_key(&hex), Some(vk));
    assert_eq!(published_key(&hex.to_ascii_uppercase()), None);
    assert_eq!(published_key(&crate::entry::lower_hex(&identity)), None);
}
