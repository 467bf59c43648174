//! The signed manifest of a results file: the run's signature over the file as a whole.
//!
//! Receipts sign what the gate did; nothing in them covers the cells that carry no receipt
//! (no_check, hand_check), the labels of a cell, the ground truth, the timings or the summary. The
//! runner therefore signs one more record when it writes the file:
//!
//! - `head` = hex SHA-256 of the canonical JSON (RFC 8785) of every top-level member except
//!   `cells` and `manifest` (format, scenario, generated, environment, rows, columns, repeats,
//!   selected, summary);
//! - `cells[i]` = hex SHA-256 of the canonical JSON of `cells[i]`, in file order;
//! - `hash` = hex SHA-256 of the canonical JSON of `{"v": 1, "head", "cells", "signer"}`;
//! - `sig` = ed25519 signature by `signer` over `"interlock-manifest-v1:" + hash`.
//!
//! Under a pinned key, no member of the file can change, appear or disappear without breaking
//! `sig`. Under a self-attested key, it shows only that the file is what its own signer signed.

use crate::canonical::{self, CanonicalError};
use crate::entry;
use crate::finding::{code as fcode, Finding};
use crate::results::{Cell, Manifest, ResultsFile};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Version of the manifest body, stored as `v` in what is hashed.
pub const MANIFEST_VERSION: u64 = 1;

/// Domain-separation prefix of the manifest signature (never valid as an entry signature).
pub const MANIFEST_CONTEXT: &str = "interlock-manifest-v1:";

/// Why a manifest could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// A value in the file has no canonical form (a float, or an integer beyond 2^53 - 1).
    #[error("{what} has no canonical form: {source}")]
    Canonical {
        /// Which part of the file (`head` or `cells[i]`).
        what: String,
        /// The canonical-form error.
        source: CanonicalError,
    },
    /// The file's data could not be turned into JSON.
    #[error("{what} cannot be serialized: {message}")]
    Serialize {
        /// Which part of the file.
        what: String,
        /// What serde said.
        message: String,
    },
}

fn digest_of(what: &str, value: &Value) -> Result<String, ManifestError> {
    let bytes = canonical::to_vec(value).map_err(|source| ManifestError::Canonical {
        what: what.to_owned(),
        source,
    })?;
    Ok(entry::lower_hex(&Sha256::digest(&bytes)))
}

fn to_json<T: serde::Serialize>(what: &str, v: &T) -> Result<Value, ManifestError> {
    serde_json::to_value(v).map_err(|e| ManifestError::Serialize {
        what: what.to_owned(),
        message: e.to_string(),
    })
}

/// The hash of everything in the file but `cells` and `manifest`.
pub fn head_hash(file: &ResultsFile) -> Result<String, ManifestError> {
    let head = json!({
        "format": file.format,
        "scenario": file.scenario,
        "generated": file.generated,
        "environment": to_json("environment", &file.environment)?,
        "rows": to_json("rows", &file.rows)?,
        "columns": file.columns,
        "repeats": file.repeats,
        "selected": to_json("selected", &file.selected)?,
        "summary": to_json("summary", &file.summary)?,
    });
    digest_of("head", &head)
}

/// The hash of one cell (`index` only names it in an error).
pub fn cell_hash(index: usize, cell: &Cell) -> Result<String, ManifestError> {
    let what = format!("cells[{index}]");
    digest_of(&what, &to_json(&what, cell)?)
}

/// The hash the signature covers.
pub fn body_hash(head: &str, cells: &[String], signer: &str) -> Result<String, ManifestError> {
    let body = json!({"v": MANIFEST_VERSION, "head": head, "cells": cells, "signer": signer});
    digest_of("manifest", &body)
}

/// The exact bytes the manifest signature covers.
pub fn signing_message(hash: &str) -> Vec<u8> {
    let mut m = Vec::with_capacity(MANIFEST_CONTEXT.len() + hash.len());
    m.extend_from_slice(MANIFEST_CONTEXT.as_bytes());
    m.extend_from_slice(hash.as_bytes());
    m
}

/// Sign `file` with the run's key: compute every hash and replace `file.manifest`.
pub fn sign(file: &mut ResultsFile, key: &SigningKey) -> Result<(), ManifestError> {
    let head = head_hash(file)?;
    let cells = file
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| cell_hash(i, c))
        .collect::<Result<Vec<_>, _>>()?;
    let signer = entry::lower_hex(key.verifying_key().as_bytes());
    let hash = body_hash(&head, &cells, &signer)?;
    let sig = entry::lower_hex(&key.sign(&signing_message(&hash)).to_bytes());
    file.manifest = Manifest {
        head,
        cells,
        signer,
        hash,
        sig,
    };
    Ok(())
}

/// Check the manifest's own record against `key`: signer, head, the list's length (the file holds
/// `cells` cells; `file.cells` itself is not read), the hash over the list and the signature. Each
/// cell's own hash is compared by [`check_cell`].
pub fn check(file: &ResultsFile, cells: usize, key: &VerifyingKey, findings: &mut Vec<Finding>) {
    let m = &file.manifest;
    let mut bad = |field: &str, message: String| {
        findings.push(Finding::new(
            format!("manifest.{field}"),
            fcode::MANIFEST_MISMATCH,
            message,
        ))
    };
    if entry::decode_lower_hex::<32>(&m.signer) != Some(key.to_bytes()) {
        bad(
            "signer",
            format!(
                "the manifest is not signed by the key the file is checked against ({})",
                crate::fingerprint(key)
            ),
        );
    }
    match head_hash(file) {
        Ok(h) if h == m.head => {}
        Ok(_) => bad(
            "head",
            "the file's environment, rows, columns, plan or summary are not what the run signed"
                .into(),
        ),
        Err(e) => bad("head", e.to_string()),
    }
    if m.cells.len() != cells {
        bad(
            "cells",
            format!(
                "the run signed {} cells, the file holds {cells}",
                m.cells.len()
            ),
        );
    }
    match body_hash(&m.head, &m.cells, &m.signer) {
        Ok(h) if h == m.hash => {}
        Ok(_) => bad(
            "hash",
            "the manifest's hash does not recompute over its own fields".into(),
        ),
        Err(e) => bad("hash", e.to_string()),
    }
    let sig = entry::decode_lower_hex::<64>(&m.sig).map(|b| Signature::from_bytes(&b));
    let verified = sig.is_some_and(|s| key.verify_strict(&signing_message(&m.hash), &s).is_ok());
    if !verified {
        bad(
            "sig",
            "the manifest's signature does not verify for the key".into(),
        );
    }
}

/// The cell's hash must be the one the run signed (in `manifest`) at its index.
pub fn check_cell(manifest: &Manifest, index: usize, cell: &Cell) -> Option<Finding> {
    let path = format!("cells[{index}]");
    let signed = manifest.cells.get(index);
    match (cell_hash(index, cell), signed) {
        (Ok(h), Some(s)) if &h == s => None,
        (Ok(_), Some(_)) => Some(Finding::new(
            path,
            fcode::MANIFEST_MISMATCH,
            format!("cell {index} is not the cell the run signed at this place"),
        )),
        (Ok(_), None) => Some(Finding::new(
            path,
            fcode::MANIFEST_MISMATCH,
            format!("cell {index} is not in the run's signed manifest"),
        )),
        (Err(e), _) => Some(Finding::new(path, fcode::MANIFEST_MISMATCH, e.to_string())),
    }
}
