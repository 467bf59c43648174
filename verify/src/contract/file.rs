//! The one whole-file format of every scenario on the contract, and what its key signs.

use super::Scenario;
use crate::canonical::{self, CanonicalError};
use crate::entry::lower_hex;
use ed25519_dalek::{Signer as _, SigningKey};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::Digest as _;
use std::collections::BTreeMap;

/// The `format` of a scenario results file on the contract.
pub const FORMAT: &str = "interlock-scenario/1";

/// Domain separation of the file's signature (never valid as an entry's, a manifest's or
/// another format's).
pub const SIGNATURE_CONTEXT: &str = "interlock-scenario-v1:";

/// A scenario's results file: the run's parameters, every cell, the summary, and the run key's
/// signature over all of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound = "")]
pub struct ScenarioFile<S: Scenario> {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`Scenario::NAME`].
    pub scenario: String,
    /// When the run ended (RFC 3339, UTC).
    pub generated_at: String,
    /// Where and how the run ran (backend, decider, versions, commit): names to text, one level
    /// (a nested value is refused as the file is read, so it costs its text and no tree);
    /// signed, shown as stated.
    pub environment: BTreeMap<String, String>,
    /// What decides the plan.
    pub params: S::Params,
    /// Every cell, in plan order.
    pub cells: Vec<S::Cell>,
    /// The summary as the runner derived it.
    pub summary: S::Summary,
    /// The run key's signature.
    pub signature: FileSignature,
}

/// A signature over a whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSignature {
    /// The signing key, 64 lowercase hex characters.
    pub signer: String,
    /// [`file_hash`] of the file, lowercase hex.
    pub hash: String,
    /// The ed25519 signature over [`SIGNATURE_CONTEXT`] + `hash`, 128 lowercase hex characters.
    pub sig: String,
}

/// Why a file's hash could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// A value has no canonical form (a float, an integer beyond 2^53).
    #[error("the results file has no canonical form: {0}")]
    Canonical(#[from] CanonicalError),
    /// The file could not be turned into JSON.
    #[error("the results file cannot be serialized: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The hex SHA-256 of a value's canonical JSON.
fn digest(value: &Value) -> Result<String, SigningError> {
    Ok(lower_hex(&sha2::Sha256::digest(canonical::to_vec(value)?)))
}

/// The file's hash: the hex SHA-256 of the canonical JSON of `{"v": 1, "head": H, "cells":
/// [C0, C1, ...]}`, where `H` is the digest of every member but `cells` and `signature`, and `Ci`
/// that of `cells[i]` (each cell turned into JSON on its own).
pub fn file_hash<S: Scenario>(file: &ScenarioFile<S>) -> Result<String, SigningError> {
    let head = json!({
        "format": file.format,
        "scenario": file.scenario,
        "generated_at": file.generated_at,
        "environment": file.environment,
        "params": serde_json::to_value(&file.params)?,
        "summary": serde_json::to_value(&file.summary)?,
    });
    let mut cells = Vec::with_capacity(file.cells.len());
    for cell in &file.cells {
        cells.push(digest(&serde_json::to_value(cell)?)?);
    }
    digest(&json!({"v": 1, "head": digest(&head)?, "cells": cells}))
}

/// The bytes a file's key signs for a file of hash `hash`.
pub fn signing_message(hash: &str) -> Vec<u8> {
    format!("{SIGNATURE_CONTEXT}{hash}").into_bytes()
}

/// Signs the file with the run's key (sets `signature`).
pub fn sign<S: Scenario>(file: &mut ScenarioFile<S>, key: &SigningKey) -> Result<(), SigningError> {
    let hash = file_hash(file)?;
    let sig = key.sign(&signing_message(&hash));
    file.signature = FileSignature {
        signer: lower_hex(key.verifying_key().as_bytes()),
        hash,
        sig: lower_hex(&sig.to_bytes()),
    };
    Ok(())
}
