//! Unit tests of `batch` (kept apart so the trusted core reads without them).
use super::*;
use curve25519_dalek::constants::EIGHT_TORSION;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use proptest::prelude::*;

/// A key made from a known secret scalar, so a test can sign with a chosen `R`.
struct Handmade {
    secret: Scalar,
    key: AcceptedKey,
}

impl Handmade {
    fn new(seed: u64) -> Handmade {
        let secret = Scalar::from(seed) * Scalar::from(0x9e37_79b9_7f4a_7c15u64);
        let point = EdwardsPoint::mul_base(&secret);
        let key = VerifyingKey::from_bytes(&point.compress().to_bytes()).unwrap();
        let key = AcceptedKey::new(key).unwrap();
        Handmade { secret, key }
    }

    /// A signature with nonce `r` and `extra` added to `R` (the identity for an honest one).
    fn sign(&self, message: &[u8], r: u64, extra: EdwardsPoint) -> Signature {
        let nonce = Scalar::from(r) * Scalar::from(0x2545_f491_4f6c_dd1du64);
        let big_r = (EdwardsPoint::mul_base(&nonce) + extra).compress();
        let mut hram = [0u8; 64];
        hram.copy_from_slice(
            &Sha512::new()
                .chain_update(big_r.as_bytes())
                .chain_update(self.key.key().as_bytes())
                .chain_update(message)
                .finalize(),
        );
        let s = nonce + Scalar::from_bytes_mod_order_wide(&hram) * self.secret;
        let mut bytes = [0u8; 64];
        bytes[..32].copy_from_slice(big_r.as_bytes());
        bytes[32..].copy_from_slice(s.as_bytes());
        Signature::from_bytes(&bytes)
    }
}

/// `count` messages signed in turn by `keys.len()` keys: messages, signatures, key indexes.
fn signed(keys: &[SigningKey], count: usize) -> (Vec<Vec<u8>>, Vec<Signature>, Vec<usize>) {
    let messages: Vec<Vec<u8>> = (0..count).map(|i| format!("m{i}").into_bytes()).collect();
    let key_of: Vec<usize> = (0..count).map(|i| i % keys.len()).collect();
    let signatures = messages
        .iter()
        .zip(&key_of)
        .map(|(m, k)| keys[*k].sign(m))
        .collect();
    (messages, signatures, key_of)
}

fn refs(messages: &[Vec<u8>]) -> Vec<&[u8]> {
    messages.iter().map(Vec::as_slice).collect()
}

fn accepted(keys: &[SigningKey]) -> Vec<AcceptedKey> {
    keys.iter()
        .map(|k| AcceptedKey::new(k.verifying_key()).unwrap())
        .collect()
}

fn signing_keys(n: u8) -> Vec<SigningKey> {
    (0..n)
        .map(|i| SigningKey::from_bytes(&[i + 1; 32]))
        .collect()
}

#[test]
fn honest_batches_hold_for_one_signer_and_for_several() {
    for signers in [1u8, 3, 40] {
        let keys = signing_keys(signers);
        let table = accepted(&keys);
        for count in [0usize, 1, 2, 255, 256, 300] {
            let (messages, signatures, key_of) = signed(&keys, count);
            let ok = holds(&refs(&messages), &signatures, &key_of, &table);
            assert!(ok, "{signers} signers, {count} signatures");
        }
    }
}

#[test]
fn any_one_change_makes_the_batch_fail() {
    let keys = signing_keys(3);
    let table = accepted(&keys);
    let (messages, signatures, key_of) = signed(&keys, 64);
    let at = 37;
    let check = |m: &[Vec<u8>], s: &[Signature], k: &[usize]| holds(&refs(m), s, k, &table);
    assert!(check(&messages, &signatures, &key_of));

    let mut edited = messages.clone();
    edited[at].push(b'!');
    assert!(!check(&edited, &signatures, &key_of), "a message changed");

    let mut other_signer = key_of.clone();
    other_signer[at] = (key_of[at] + 1) % 3;
    assert!(
        !check(&messages, &signatures, &other_signer),
        "attributed to another signer"
    );

    let mut swapped = signatures.clone();
    swapped.swap(at, at + 1);
    assert!(
        !check(&messages, &swapped, &key_of),
        "two signatures swapped"
    );

    for byte in [0usize, 17, 31, 32, 45, 62] {
        let mut bytes = signatures[at].to_bytes();
        bytes[byte] ^= 0x01;
        let mut flipped = signatures.clone();
        flipped[at] = Signature::from_bytes(&bytes);
        assert!(!check(&messages, &flipped, &key_of), "byte {byte} flipped");
    }

    let mut outside = key_of.clone();
    outside[at] = 3;
    assert!(
        !check(&messages, &signatures, &outside),
        "a key index outside the table"
    );
    assert!(
        !check(&messages[..63], &signatures, &key_of),
        "slices of different lengths"
    );
}

#[test]
fn errors_that_cancel_in_a_plain_sum_are_caught() {
    // s_1 + d and s_2 − d by one signer, over the same message: without the z_i the errors
    // (d·B and −d·B) would cancel.
    let signer = Handmade::new(7);
    let message: &[u8] = b"same";
    let first = signer.sign(message, 1, EdwardsPoint::default());
    let second = signer.sign(message, 2, EdwardsPoint::default());
    let shift = Scalar::from(12_345u64);
    let moved = |signature: &Signature, by: Scalar| {
        let s = Scalar::from_canonical_bytes(*signature.s_bytes()).unwrap() + by;
        let mut bytes = signature.to_bytes();
        bytes[32..].copy_from_slice(s.as_bytes());
        Signature::from_bytes(&bytes)
    };
    let pair = [moved(&first, shift), moved(&second, -shift)];
    let table = [signer.key];
    assert!(holds(
        &[message, message],
        &[first, second],
        &[0, 0],
        &table
    ));
    assert!(!holds(&[message, message], &pair, &[0, 0], &table));
}

#[test]
fn an_s_at_or_above_the_group_order_is_refused() {
    let signer = Handmade::new(11);
    let message: &[u8] = b"x";
    let honest = signer.sign(message, 5, EdwardsPoint::default());
    // s + ℓ: the same scalar modulo ℓ, written non-canonically (ℓ < 2^253, so it fits).
    let ell = {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(
            &hex::decode("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
                .unwrap(),
        );
        bytes
    };
    let mut sum = [0u8; 32];
    let mut carry = 0u16;
    for (i, byte) in sum.iter_mut().enumerate() {
        let total = u16::from(honest.s_bytes()[i]) + u16::from(ell[i]) + carry;
        *byte = (total & 0xff) as u8;
        carry = total >> 8;
    }
    let mut bytes = honest.to_bytes();
    bytes[32..].copy_from_slice(&sum);
    let high = Signature::from_bytes(&bytes);
    assert!(signer.key.key().verify_strict(message, &high).is_err());
    assert!(holds(&[message], &[honest], &[0], &[signer.key]));
    assert!(!holds(&[message], &[high], &[0], &[signer.key]));
}

#[test]
fn a_small_order_r_is_refused_even_from_the_keys_holder() {
    // R = T of small order and s = h·a: the sum is z·T, which vanishes for some z. The holder
    // of the key can make it; verify_strict refuses it, and so must the batch, every time.
    let signer = Handmade::new(13);
    for (i, torsion) in EIGHT_TORSION.iter().enumerate() {
        let message = format!("small order {i}").into_bytes();
        let big_r = torsion.compress();
        let mut hram = [0u8; 64];
        hram.copy_from_slice(
            &Sha512::new()
                .chain_update(big_r.as_bytes())
                .chain_update(signer.key.key().as_bytes())
                .chain_update(&message)
                .finalize(),
        );
        let s = Scalar::from_bytes_mod_order_wide(&hram) * signer.secret;
        let mut bytes = [0u8; 64];
        bytes[..32].copy_from_slice(big_r.as_bytes());
        bytes[32..].copy_from_slice(s.as_bytes());
        let signature = Signature::from_bytes(&bytes);
        assert!(signer
            .key
            .key()
            .verify_strict(&message, &signature)
            .is_err());
        let honest = signer.sign(b"honest", 3, EdwardsPoint::default());
        let batch = holds(
            &[b"honest", &message],
            &[honest, signature],
            &[0, 0],
            &[signer.key],
        );
        assert!(!batch, "torsion point {i}");
    }
}

#[test]
fn a_torsion_component_on_r_is_the_documented_limit() {
    // R = r·B + T of order 8, by the key's holder: verify_strict refuses it; the batch may hold
    // (the module docs' limit), but only when the batch's z is divisible by 8, so not for all of
    // 64 such signatures.
    let signer = Handmade::new(17);
    let torsion = EIGHT_TORSION[1];
    let mut held = 0;
    for r in 0..64u64 {
        let message = format!("torsion {r}").into_bytes();
        let signature = signer.sign(&message, 100 + r, torsion);
        assert!(signer
            .key
            .key()
            .verify_strict(&message, &signature)
            .is_err());
        if holds(&[&message], &[signature], &[0], &[signer.key]) {
            held += 1;
        }
    }
    assert!(held < 32, "{held} of 64 held");
}

#[test]
fn y_at_or_above_the_prime_is_not_canonical() {
    let with_low = |low: u8, sign: bool| {
        let mut bytes = [0xffu8; 32];
        bytes[0] = low;
        bytes[31] = if sign { 0xff } else { 0x7f };
        bytes
    };
    for sign in [false, true] {
        assert!(y_is_canonical(&with_low(0xec, sign)), "p − 1");
        assert!(!y_is_canonical(&with_low(0xed, sign)), "p");
        assert!(!y_is_canonical(&with_low(0xee, sign)), "p + 1");
        assert!(!y_is_canonical(&with_low(0xff, sign)), "p + 18");
    }
    let mut one = [0u8; 32];
    one[0] = 1;
    assert!(y_is_canonical(&one));
}

#[test]
fn the_small_order_table_is_every_canonical_y_of_the_torsion_points() {
    let mut expected: Vec<[u8; 32]> = Vec::new();
    for torsion in EIGHT_TORSION {
        let bytes = torsion.compress().to_bytes();
        expected.push(bytes);
        // The sign bit names another point unless x is zero (y = 1 or y = -1), where it is a
        // second spelling of the same one.
        let mut signed = bytes;
        signed[31] |= 0x80;
        if CompressedEdwardsY(signed).decompress() == Some(torsion) {
            expected.push(signed);
        }
    }
    let mut table = SMALL_ORDER.to_vec();
    expected.sort_unstable();
    expected.dedup();
    table.sort_unstable();
    assert_eq!(table, expected);
    // Each is refused before the sum, and so is every encoding with y at or above the prime
    // (the identity as y = p + 1 among them); a signature's honest R is not.
    let refused = |r: [u8; 32]| {
        let mut bytes = [0u8; 64];
        bytes[..32].copy_from_slice(&r);
        r_point(&Signature::from_bytes(&bytes)).is_none()
    };
    assert!(SMALL_ORDER.iter().all(|r| refused(*r)));
    for low in 0xedu8..=0xff {
        let mut r = [0xffu8; 32];
        r[0] = low;
        r[31] = 0x7f;
        assert!(refused(r), "y = p + {}", low - 0xed);
    }
    let honest = SigningKey::from_bytes(&[3u8; 32]).sign(b"x");
    assert!(!refused(*honest.r_bytes()));
}

#[test]
fn a_point_outside_the_table_is_not_of_small_order() {
    // Every canonical y the curve takes, drawn at random, decompresses to a point of small
    // order exactly when the table holds its encoding.
    let mut state = 0x1234_5678_9abc_def0u64;
    for _ in 0..2_000 {
        let mut bytes = [0u8; 32];
        for byte in bytes.iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = state as u8;
        }
        if let Some(point) = CompressedEdwardsY(bytes).decompress() {
            assert_eq!(point.is_small_order(), SMALL_ORDER.contains(&bytes));
        }
    }
    for r in SMALL_ORDER {
        let point = CompressedEdwardsY(r).decompress();
        assert!(point.is_some_and(|p| p.is_small_order()));
    }
}

#[test]
fn the_coefficients_are_fixed_by_the_seed_and_differ_between_seeds() {
    let a = coefficients(b"one", 9);
    assert_eq!(a.len(), 9);
    assert_eq!(a, coefficients(b"one", 9));
    assert_eq!(&coefficients(b"one", 12)[..9], &a[..]);
    assert_ne!(a, coefficients(b"two", 9));
    assert!(a.iter().all(|z| z.as_bytes()[16..].iter().all(|b| *b == 0)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The batch holds exactly when every signature holds under `verify_strict`.
    #[test]
    fn the_batch_agrees_with_verify_strict(
        count in 1usize..24,
        signers in 1u8..4,
        flips in proptest::collection::vec((0usize..24, 0usize..64, 1u8..=255), 0..3),
    ) {
        let keys = signing_keys(signers);
        let table = accepted(&keys);
        let (messages, mut signatures, key_of) = signed(&keys, count);
        for (at, byte, mask) in flips {
            let at = at % count;
            let mut bytes = signatures[at].to_bytes();
            bytes[byte] ^= mask;
            signatures[at] = Signature::from_bytes(&bytes);
        }
        let strict = messages
            .iter()
            .zip(&signatures)
            .zip(&key_of)
            .all(|((m, s), k)| table[*k].key().verify_strict(m, s).is_ok());
        prop_assert_eq!(holds(&refs(&messages), &signatures, &key_of, &table), strict);
    }
}
