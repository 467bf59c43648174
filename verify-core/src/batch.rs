//! One equation for a batch of ed25519 signatures, each signer's key multiplied once.
//!
//! A signature `(R, s)` by key `A` over message `M` holds (the non-cofactored equation
//! `verify_strict` checks) when `R = s·B − h·A`, with `h = SHA-512(R ‖ A ‖ M) mod ℓ`. For a batch,
//! pick a 128-bit `z_i` per signature and check the one sum
//!
//! ```text
//! (−Σ z_i·s_i)·B + Σ z_i·R_i + Σ_k (Σ_{i signed by k} z_i·h_i)·A_k = 0
//! ```
//!
//! It holds when every signature does. With a bad signature among them it holds only if the
//! `z_i` happen to cancel its error: about 2⁻¹²⁸ for an error in the prime-order part.
//!
//! `ed25519_dalek::verify_batch` checks the same sum with one point per signature for the key
//! (`2n + 1` points for `n` signatures). Here the coefficients of one key are added before the
//! multiplication, so a batch by one signer is `n + 2` points, and the work per signature is
//! about half.
//!
//! The `z_i` are drawn from SHA-512 over every `h_i` and `s_i` of the batch (as ed25519-dalek
//! draws them from a transcript of the same values). They are fixed by the batch's content, so a
//! result can be reproduced, and nobody can choose them apart from that content.
//!
//! Before the sum, each signature must pass the checks `verify_strict` makes on its own parts
//! (any failure answers `false`, and the caller re-checks one by one):
//! - `s` below ℓ;
//! - `R` a point written in its one canonical encoding;
//! - `R` not of small order.
//!
//! The keys are [`AcceptedKey`]s: they have passed [`crate::signatures::key_is_acceptable`] (no
//! small order, no torsion component, one encoding), which the sum relies on.
//!
//! **What the sum cannot tell from `verify_strict`:** an `R` with a torsion component of order 2,
//! 4 or 8 added to a correct one. Only the key's holder can make such a signature, since the
//! prime-order part must still be right. The sum then holds when the `z_i` of those signatures
//! cancel it modulo 8: at least one chance in eight, and one in two at best. `verify_strict`
//! rejects it. ed25519-dalek's `verify_batch` has the same limit. A forger without the key gains
//! nothing from it.

use crate::signatures::AcceptedKey;
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use ed25519_dalek::Signature;
use sha2::{Digest, Sha512};
use std::collections::HashMap;
use std::iter::once;

/// Separates this use of SHA-512 (drawing the `z_i`) from every other.
const Z_DOMAIN: &[u8] = b"interlock verify: ed25519 batch coefficients, version 1";

/// Whether every signature `signatures[i]` over `messages[i]` by `keys[key_of[i]]` holds, by one
/// equation (see the module docs). `false` when any of them fails, when a part is malformed, when a
/// key index is out of range, or when the slices differ in length. An empty batch holds.
pub fn holds(
    messages: &[&[u8]],
    signatures: &[Signature],
    key_of: &[usize],
    keys: &[AcceptedKey],
) -> bool {
    let n = signatures.len();
    if messages.len() != n || key_of.len() != n {
        return false;
    }
    let mut rs = Vec::with_capacity(n);
    let mut ss = Vec::with_capacity(n);
    let mut hs = Vec::with_capacity(n);
    let mut seed = Sha512::new();
    seed.update(Z_DOMAIN);
    seed.update((n as u64).to_le_bytes());
    for ((message, signature), k) in messages.iter().zip(signatures).zip(key_of) {
        let Some(key) = keys.get(*k) else {
            return false;
        };
        let (Some(r), Some(s)) = (r_point(signature), s_scalar(signature)) else {
            return false;
        };
        let mut hram = [0u8; 64];
        hram.copy_from_slice(
            &Sha512::new()
                .chain_update(signature.r_bytes())
                .chain_update(key.key().as_bytes())
                .chain_update(message)
                .finalize(),
        );
        seed.update(hram);
        seed.update(signature.s_bytes());
        rs.push(r);
        ss.push(s);
        hs.push(Scalar::from_bytes_mod_order_wide(&hram));
    }
    let zs = coefficients(&seed.finalize(), n);
    let mut b = Scalar::ZERO;
    // Each distinct key once: its point and the sum of its z_i·h_i; `slot` finds a key's place
    // (nearly always the one of the signature before).
    let mut signers: Vec<(EdwardsPoint, Scalar)> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    let mut last: Option<(usize, usize)> = None;
    for (((z, s), h), k) in zs.iter().zip(&ss).zip(&hs).zip(key_of) {
        b -= z * s;
        let at = match last {
            Some((key, at)) if key == *k => at,
            _ => match slot.get(k) {
                Some(at) => *at,
                None => {
                    let Some(key) = keys.get(*k) else {
                        return false;
                    };
                    signers.push((key.key().to_edwards(), Scalar::ZERO));
                    slot.insert(*k, signers.len() - 1);
                    signers.len() - 1
                }
            },
        };
        last = Some((*k, at));
        if let Some((_, sum)) = signers.get_mut(at) {
            *sum += z * h;
        }
    }
    let scalars = once(b).chain(zs).chain(signers.iter().map(|(_, sum)| *sum));
    let points = once(ED25519_BASEPOINT_POINT)
        .chain(rs)
        .chain(signers.iter().map(|(point, _)| *point));
    EdwardsPoint::vartime_multiscalar_mul(scalars, points).is_identity()
}

/// `s` of a signature, if it is below ℓ (its one canonical form).
fn s_scalar(signature: &Signature) -> Option<Scalar> {
    Scalar::from_canonical_bytes(*signature.s_bytes()).into()
}

/// `R` of a signature as a point, if it is written canonically and is not of small order.
fn r_point(signature: &Signature) -> Option<EdwardsPoint> {
    let bytes = signature.r_bytes();
    if !y_is_canonical(bytes) || SMALL_ORDER.contains(bytes) {
        return None;
    }
    CompressedEdwardsY(*bytes).decompress()
}

/// Every encoding with `y` below the prime of a point of small order: the eight points of the
/// curve's torsion subgroup, and the sign bit set on the two whose `x` is zero (the identity and
/// the point of order 2). Comparing bytes costs less than multiplying each `R` by the cofactor.
pub(crate) const SMALL_ORDER: [[u8; 32]; 10] = [
    from_hex("0100000000000000000000000000000000000000000000000000000000000000"),
    from_hex("0100000000000000000000000000000000000000000000000000000000000080"),
    from_hex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    from_hex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
    from_hex("0000000000000000000000000000000000000000000000000000000000000000"),
    from_hex("0000000000000000000000000000000000000000000000000000000000000080"),
    from_hex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    from_hex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"),
    from_hex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    from_hex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
];

/// 64 lowercase hex characters as 32 bytes, at compile time.
const fn from_hex(hex: &str) -> [u8; 32] {
    const fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lowercase hex digit"),
        }
    }
    let text = hex.as_bytes();
    assert!(text.len() == 64, "not 64 hex characters");
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = digit(text[2 * i]) << 4 | digit(text[2 * i + 1]);
        i += 1;
    }
    out
}

/// Whether the `y` of an encoded point (its low 255 bits) is below the field's prime
/// `p = 2²⁵⁵ − 19`. Only `y` in `p ..= p + 18` fits in 255 bits and is not.
pub(crate) fn y_is_canonical(bytes: &[u8; 32]) -> bool {
    let top_is_max = bytes[31] & 0x7f == 0x7f;
    let middle_is_max = bytes[1..31].iter().all(|b| *b == 0xff);
    !(top_is_max && middle_is_max && bytes[0] >= 0xed)
}

/// `n` coefficients of 128 bits from `seed`, four from each SHA-512 of `seed ‖ counter`.
fn coefficients(seed: &[u8], n: usize) -> Vec<Scalar> {
    let mut zs = Vec::with_capacity(n);
    let mut counter = 0u64;
    while zs.len() < n {
        let block = Sha512::new()
            .chain_update(seed)
            .chain_update(counter.to_le_bytes())
            .finalize();
        for quarter in block.chunks_exact(16) {
            let mut z = [0u8; 16];
            z.copy_from_slice(quarter);
            if zs.len() < n {
                zs.push(Scalar::from(u128::from_le_bytes(z)));
            }
        }
        counter += 1;
    }
    zs
}

#[cfg(test)]
#[path = "trusted_tests/batch.rs"]
mod tests;
