//! Stage 1: the file's signature, by the one key rule.

use super::codes::Signature as Code;
use super::file::{signing_message, FileSignature};
use crate::entry::decode_lower_hex;
use crate::finding::Finding;
use crate::receipt::KeyCheck;
use crate::trusted::signatures::key_is_acceptable;
use ed25519_dalek::{Signature, VerifyingKey};

/// A key named in a file, by the rule every whole-file signature follows: 64 lowercase hex
/// characters of a point on the curve that [`key_is_acceptable`] accepts (not of small order,
/// no torsion component).
pub fn accepted_key(hex: &str) -> Result<VerifyingKey, Code> {
    let bytes = decode_lower_hex::<32>(hex).ok_or(Code::Malformed)?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| Code::KeyRefused)?;
    if key_is_acceptable(&key) {
        Ok(key)
    } else {
        Err(Code::KeyRefused)
    }
}

/// Checks `signature` over a file whose hash, as it stands, is `hash`: the signer by
/// [`accepted_key`] (and, under a pin, equal to the pinned key), the stated hash equal to
/// `hash`, the signature 128 lowercase hex characters that verify with `verify_strict`. Returns
/// the key every receipt of the file must then be signed by.
pub fn check(
    signature: &FileSignature,
    hash: &str,
    key: &KeyCheck,
) -> Result<VerifyingKey, Box<Finding>> {
    let fail = |code: Code, field: &str, message: String| {
        Box::new(Finding::new(
            format!("signature.{field}"),
            code.as_str(),
            message,
        ))
    };
    let named = accepted_key(&signature.signer).map_err(|code| {
        fail(
            code,
            "signer",
            "the signer is not 64 lowercase hex characters of an acceptable ed25519 key (not of \
             small order, no torsion component)"
                .into(),
        )
    })?;
    if let KeyCheck::Pinned(pinned) = key {
        if *pinned != named {
            return Err(fail(
                Code::NotPinnedKey,
                "signer",
                format!(
                    "the file is signed by {}, not by the pinned key {}",
                    crate::fingerprint(&named),
                    crate::fingerprint(pinned)
                ),
            ));
        }
    }
    if signature.hash != hash {
        return Err(fail(
            Code::HashMismatch,
            "hash",
            "the file is not what its key signed: a member changed after the signature".into(),
        ));
    }
    let sig = decode_lower_hex::<64>(&signature.sig)
        .map(|b| Signature::from_bytes(&b))
        .ok_or_else(|| {
            fail(
                Code::Malformed,
                "sig",
                "not 128 lowercase hex characters".into(),
            )
        })?;
    named
        .verify_strict(&signing_message(hash), &sig)
        .map_err(|_| {
            fail(
                Code::BadSignature,
                "sig",
                "the signature does not verify under the signer's key".into(),
            )
        })?;
    Ok(named)
}
