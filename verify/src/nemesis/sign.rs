//! The run's signature over a nemesis results file: `hash` = hex SHA-256 of the canonical JSON
//! (RFC 8785) of the whole file without its `signature` member; `sig` = ed25519 by `signer` over
//! `"interlock-nemesis-v1:" + hash`. No member can change, appear or disappear without breaking it.

use super::{FileSignature, NemesisFile, Trial};
use crate::canonical;
use crate::entry;
use crate::signatures::FileSignatureError;
use crate::view::BundleView;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};
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
    /// `signer` or `sig` is not lowercase hex of the right length, or the key may not sign
    /// ([`crate::signatures::key_is_acceptable`]).
    #[error("signature.{0} is malformed")]
    Malformed(&'static str),
    /// The signature does not verify under the signer.
    #[error("signature.sig does not verify under signature.signer")]
    BadSignature,
}

/// The SHA-256 of the canonical JSON of a file without `signature`, written one trial at a time,
/// never as one tree of values for the whole file (a tree of values costs many times the file's
/// text): `trials` sorts last among the members (RFC 8785 orders keys by UTF-16 code units), so
/// the canonical text is that of every other member, then `,"trials":[`, each trial's canonical
/// text, and `]}`.
pub struct FileHasher {
    hasher: Sha256,
    trials: usize,
}

impl FileHasher {
    /// Starts with every member of `head` but `trials` (not read) and `signature`.
    pub fn new(head: &NemesisFile) -> Result<FileHasher, SignError> {
        // Every member named (no `..`): a member added to the file cannot be left out of the hash.
        let NemesisFile {
            format,
            scenario,
            generated,
            environment,
            plan,
            trials: _,
            summary,
            signature: _,
        } = head;
        let rest = json!({
            "format": format,
            "scenario": scenario,
            "generated": generated,
            "environment": value(environment)?,
            "plan": value(plan)?,
            "summary": value(summary)?,
        });
        let rest = canon(&rest)?;
        let mut hasher = Sha256::new();
        hasher.update(rest.get(..rest.len().saturating_sub(1)).unwrap_or_default());
        hasher.update(b",\"trials\":[");
        Ok(FileHasher { hasher, trials: 0 })
    }

    /// Adds the next trial.
    pub fn trial(&mut self, t: &Trial) -> Result<(), SignError> {
        self.add(&trial_canonical(t, None)?);
        Ok(())
    }

    /// Adds the next trial, given its canonical text ([`trial_canonical`]).
    pub fn add(&mut self, canonical: &str) {
        if self.trials > 0 {
            self.hasher.update(b",");
        }
        self.hasher.update(canonical.as_bytes());
        self.trials += 1;
    }

    /// The hash, in lowercase hex.
    pub fn finish(mut self) -> String {
        self.hasher.update(b"]}");
        entry::lower_hex(&self.hasher.finalize())
    }
}

/// Hex SHA-256 of the canonical JSON of `file` without `signature`.
pub fn file_hash(file: &NemesisFile) -> Result<String, SignError> {
    let mut h = FileHasher::new(file)?;
    for t in &file.trials {
        h.trial(t)?;
    }
    Ok(h.finish())
}

/// The canonical text of trial `t` as the file's hash covers it, with `receipt`, when given, as
/// its receipt in place of its own (a trial read with its receipt apart as a view of the file's
/// text, [`crate::load::read_trial_apart`]): written without a tree of values of the trial or
/// of its receipt (a receipt's entries as trees of values took some 300 bytes per one-member
/// object; a 1 MB gzip of 26 trials of 31,000 such entries, 75 MB).
pub fn trial_canonical(t: &Trial, receipt: Option<&BundleView<'_>>) -> Result<String, SignError> {
    crate::manifest::canonical_apart("a trial", t, receipt).map_err(|e| match e {
        crate::manifest::ManifestError::Canonical { source, .. } => {
            SignError::Canonical(source.to_string())
        }
        crate::manifest::ManifestError::Serialize { message, .. } => SignError::Canonical(message),
    })
}

fn canon(v: &Value) -> Result<String, SignError> {
    canonical::to_string(v).map_err(|e| SignError::Canonical(e.to_string()))
}

fn value<T: serde::Serialize>(v: &T) -> Result<Value, SignError> {
    serde_json::to_value(v).map_err(|e| SignError::Canonical(e.to_string()))
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
    check_hash(file, &file_hash(file)?)
}

/// Checks the signature of a file whose hash ([`FileHasher`]) is `hash`; returns the key that
/// signed. Only `file.signature` is read.
pub fn check_hash(file: &NemesisFile, hash: &str) -> Result<VerifyingKey, SignError> {
    check_signature(&file.signature, hash)
}

/// Checks `signature` over a file whose hash ([`FileHasher`]) is `hash` (a whole file's, or a
/// shard's rebuilt from a merged file); returns the key that signed.
pub fn check_signature(signature: &FileSignature, hash: &str) -> Result<VerifyingKey, SignError> {
    if hash != signature.hash {
        return Err(SignError::HashMismatch);
    }
    // The one rule of every whole-file signature: a published key in lowercase hex that may
    // sign, and a strict signature in lowercase hex.
    let key = crate::signatures::published_key(&signature.signer)
        .ok_or(SignError::Malformed("signer"))?;
    let message = format!("{NEMESIS_CONTEXT}{}", signature.hash);
    crate::signatures::check_file_signature(&key, message.as_bytes(), &signature.sig).map_err(
        |e| match e {
            FileSignatureError::Malformed => SignError::Malformed("sig"),
            FileSignatureError::Key => SignError::Malformed("signer"),
            FileSignatureError::Invalid => SignError::BadSignature,
        },
    )?;
    Ok(key)
}
