//! Stage 1: the file's signature, by the one key rule.

use super::codes::Signature as Code;
use super::file::{signing_message, FileSignature};
use crate::entry::decode_lower_hex;
use crate::finding::Finding;
use crate::receipt::KeyCheck;
use crate::trusted::signatures::{check_file_signature, published_key, FileSignatureError};
use ed25519_dalek::VerifyingKey;

/// A key named in a file, by the rule every whole-file signature follows
/// ([`published_key`]: 64 lowercase hex characters of a key that
/// [`crate::trusted::signatures::key_is_acceptable`] allows).
pub fn accepted_key(hex: &str) -> Result<VerifyingKey, Code> {
    match published_key(hex) {
        Some(key) => Ok(key),
        None if decode_lower_hex::<32>(hex).is_none() => Err(Code::Malformed),
        None => Err(Code::KeyRefused),
    }
}

/// Checks `signature` over a file whose hash, as it stands, is `hash`: the signer by
/// [`accepted_key`] (and, under a pin, equal to the pinned key), the stated hash equal to
/// `hash`, the signature by the trusted core's one rule for whole files
/// ([`check_file_signature`]). Returns the key every receipt of the file must then be signed by.
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
             small order, no torsion component, canonically encoded)"
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
    check_file_signature(&named, &signing_message(hash), &signature.sig).map_err(|e| {
        let code = match e {
            FileSignatureError::Key => Code::KeyRefused,
            FileSignatureError::Malformed => Code::Malformed,
            FileSignatureError::Invalid => Code::BadSignature,
        };
        fail(code, "sig", e.to_string())
    })?;
    Ok(named)
}
