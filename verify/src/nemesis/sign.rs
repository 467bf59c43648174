//! The run's signature over a nemesis results file: `hash` = hex SHA-256 of the canonical JSON
//! (RFC 8785) of the whole file without its `signature` member; `sig` = ed25519 by `signer` over
//! `"interlock-nemesis-v1:" + hash`. No member can change, appear or disappear without breaking it.

use super::{FileSignature, NemesisFile};
use crate::canonical;
use crate::entry;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Domain-separation prefix of the signature (never valid as an entry or manifest signature).
pub const NEMESIS_CONTEXT: &str = "interlock-nemesis-v1:";

/// Why a file could not be hashed or its signature does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The file has a value with no canonical form.
    #[error("the file has no canonical form: {0}")]
    Canonical(String),
    /// `hash` is not the hash of the file.
    #[error("signature.hash is not the hash of the file")]
    HashMismatch,
    /// `signer` or `sig` is not valid hex of the right length, or the key is not usable.
    #[error("signature.{0} is malformed")]
    Malformed(&'static str),
    /// The signature does not verify under the signer.
    #[error("signature.sig does not verify under signature.signer")]
    BadSignature,
}

/// Hex SHA-256 of the canonical JSON of `file` without `signature`.
pub fn file_hash(file: &NemesisFile) -> Result<String, SignError> {
    let mut value = serde_json::to_value(file).map_err(|e| SignError::Canonical(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        map.remove("signature");
    }
    let bytes = canonical::to_vec(&value).map_err(|e| SignError::Canonical(e.to_string()))?;
    Ok(entry::lower_hex(&Sha256::digest(&bytes)))
}

/// Signs `file` with `key` (sets `signature`).
pub fn sign(file: &mut NemesisFile, key: &SigningKey) -> Result<(), SignError> {
    let hash = file_hash(file)?;
    let sig = key.sign(format!("{NEMESIS_CONTEXT}{hash}").as_bytes());
    file.signature = FileSignature {
        signer: entry::lower_hex(key.verifying_key().as_bytes()),
        hash,
        sig: entry::lower_hex(&sig.to_bytes()),
    };
    Ok(())
}

/// Checks the signature; returns the key that signed.
pub fn check(file: &NemesisFile) -> Result<VerifyingKey, SignError> {
    if file_hash(file)? != file.signature.hash {
        return Err(SignError::HashMismatch);
    }
    let signer: [u8; 32] = hex::decode(&file.signature.signer)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SignError::Malformed("signer"))?;
    let key = VerifyingKey::from_bytes(&signer).map_err(|_| SignError::Malformed("signer"))?;
    if key.is_weak() {
        return Err(SignError::Malformed("signer"));
    }
    let sig: [u8; 64] = hex::decode(&file.signature.sig)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SignError::Malformed("sig"))?;
    key.verify_strict(
        format!("{NEMESIS_CONTEXT}{}", file.signature.hash).as_bytes(),
        &Signature::from_bytes(&sig),
    )
    .map_err(|_| SignError::BadSignature)?;
    Ok(key)
}
