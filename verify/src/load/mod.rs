//! Reading input files strictly: what kind of document a file is, and the typed document, or an
//! error that names where the file went wrong (byte, line and column, or JSON path).
//!
//! Nothing here panics on any input: invalid UTF-8, truncated JSON, nesting deeper than 128,
//! numbers out of range and wrong types all come back as a [`LoadError`].

use crate::entry::{ReceiptBundle, RECEIPT_FORMAT};
use crate::original::{OriginalBundle, OriginalResultsFile};
use crate::results::{Cell, ResultsFile, RESULTS_FORMAT};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashSet;

mod apart;
mod cap;
mod limits;
mod map_only;
pub(crate) use map_only::MapOnly;
mod members;
mod parts;
mod unkept;

pub use apart::{read_cell_apart, read_cell_apart_hashed, read_trial_apart, CellApart};
pub use cap::{read_cap_cell, read_cap_trial, CapNemesisText, CapText};
pub(crate) use limits::Key;
use limits::*;
pub use limits::{
    within_limits, HEAD_BYTES, MANIFEST_BYTES, MANIFEST_BYTES_PER_CELL, MAX_ELEMENT_VALUES,
    MAX_STRING_BYTES, MIN_BYTES_PER_VALUE, ORIGINAL_MOST_VALUES, TRIALS_PER_GROUP,
    VALUES_PER_GROUP, VALUE_ALLOWANCE,
};
pub use members::ElementGroup;
pub(crate) use parts::CELL_DEPTH;
pub use parts::{
    load_for_check, read_cell, read_cell_scanned, read_trial, Loaded, NemesisText, ResultsText,
};
pub use unkept::{read_whole, refuse_unread_element};

/// Why a file could not be read as a document this verifier knows (exit code 2: could not check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not UTF-8.
    #[error("not UTF-8: invalid byte at offset {offset}")]
    Utf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The text is not JSON (includes truncated files, nesting deeper than 128, numbers out of range).
    #[error("not valid JSON at line {line} column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The JSON does not have the shape of its format (missing key, wrong type, unknown key).
    #[error("at {path}: {message}")]
    Shape {
        /// JSON path of the offending value, e.g. `cells[3].ground_truth.case_credit_count`.
        path: String,
        /// What was wrong there.
        message: String,
    },
    /// A value is past a stated limit (a string longer than [`MAX_STRING_BYTES`], an integer
    /// outside +/-(2^53 - 1)).
    #[error("at {path}: {message}")]
    Limit {
        /// JSON path of the value.
        path: String,
        /// Which limit, and the value's size.
        message: String,
    },
    /// The document names a format (or has a shape) this verifier does not know.
    #[error("unknown format: {found}")]
    UnknownFormat {
        /// What was found instead.
        found: String,
    },
}

/// A document this verifier can check.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// A receipt bundle: `interlock-receipt/1`, or an original Python bundle (its `format` is set to
    /// [`crate::receipt::PYTHON_ORIGINAL_FORMAT`]).
    Receipt(ReceiptBundle),
    /// A results file of the original Python implementation (kept as raw JSON).
    OriginalResults(Value),
    /// An `interlock-results/2` file.
    Results(Box<ResultsFile>),
    /// An `interlock-nemesis/3` file ([`crate::nemesis`]).
    Nemesis(Box<crate::nemesis::NemesisFile>),
    /// An `interlock-shared-cap/1` file ([`crate::shared_cap`]).
    SharedCap(Box<crate::shared_cap::record::CapResults>),
    /// An `interlock-shared-cap-nemesis/1` file ([`crate::shared_cap::nemesis`]).
    SharedCapNemesis(Box<crate::shared_cap::nemesis::record::CapNemesisFile>),
}

/// Detect what a file is and read it.
pub fn load_document(bytes: &[u8]) -> Result<Document, LoadError> {
    let text = text(bytes)?;
    let values = values_within_density(text)?;
    let top = scan(text)?;
    // The limits the split sets on each member (and each cell or trial), for a text that did
    // not split (`load_for_check`) or was never offered to it.
    members::within_member_limits(text)?;
    if !top.is_object {
        return Err(LoadError::UnknownFormat {
            found: "a JSON value that is not an object".into(),
        });
    }
    let format = match top.format {
        None => None,
        Some(FormatMember::Text(f)) => Some(f),
        Some(FormatMember::Other(found)) => {
            return Err(LoadError::Shape {
                path: "format".into(),
                message: format!("expected a string, found {found}"),
            })
        }
    };
    if format.as_deref().is_some_and(parts::is_split_format) {
        if let Some((head, manifest, elements)) = members::head_spans(text) {
            head_within_budget(head, manifest, elements)?;
        }
    }
    match format.as_deref() {
        Some(RESULTS_FORMAT) => results_document(text),
        Some(crate::nemesis::NEMESIS_FORMAT) => nemesis_document(text),
        Some(crate::shared_cap::check::FORMAT) => shared_cap_document(text),
        Some(crate::shared_cap::nemesis::FORMAT) => shared_cap_nemesis_document(text),
        Some(RECEIPT_FORMAT) => {
            let bundle = typed::<ReceiptBundle>(text)?;
            effect_id_shape("effect_id", &bundle.effect_id, 64)?;
            Ok(Document::Receipt(bundle))
        }
        Some(other) => Err(LoadError::UnknownFormat {
            found: format!(
                "format {other:?} (known: {RESULTS_FORMAT}, {}, {}, {}, {RECEIPT_FORMAT}, {})",
                crate::nemesis::NEMESIS_FORMAT,
                crate::shared_cap::check::FORMAT,
                crate::shared_cap::nemesis::FORMAT,
                crate::contract::FORMAT
            ),
        }),
        // No `format`: only the original Python implementation wrote such files. Read one only
        // when it matches the original's schema exactly; never as a fallback for anything else.
        None if top.scenario && top.cells => {
            whole_read_within(values, ORIGINAL_MOST_VALUES, "an original results file")?;
            typed::<OriginalResultsFile>(text).map_err(not_original)?;
            serde_json::from_str(text)
                .map(Document::OriginalResults)
                .map_err(|e| syntax(&e))
        }
        None if top.effect_id && top.entries => {
            let b = typed::<OriginalBundle>(text).map_err(not_original)?;
            effect_id_shape(
                "effect_id",
                &b.effect_id,
                crate::pycompat::ORIGINAL_EFFECT_ID_LEN,
            )?;
            Ok(Document::Receipt(b.into_bundle()))
        }
        None => Err(LoadError::UnknownFormat {
            found: "an object with no `format` that is neither a receipt bundle nor an original results file".into(),
        }),
    }
}

/// An `interlock-results/2` file, every receipt's effect id of the right shape.
fn results_document(text: &str) -> Result<Document, LoadError> {
    let file = typed::<ResultsFile>(text)?;
    for (i, c) in file.cells.iter().enumerate() {
        if let Some(b) = &c.receipt {
            effect_id_shape(&format!("cells[{i}].receipt.effect_id"), &b.effect_id, 64)?;
        }
    }
    Ok(Document::Results(Box::new(file)))
}

/// An `interlock-nemesis/3` file, every receipt's effect id of the right shape.
fn nemesis_document(text: &str) -> Result<Document, LoadError> {
    let file = typed::<crate::nemesis::NemesisFile>(text)?;
    for (i, t) in file.trials.iter().enumerate() {
        if let Some(b) = &t.receipt {
            effect_id_shape(&format!("trials[{i}].receipt.effect_id"), &b.effect_id, 64)?;
        }
    }
    Ok(Document::Nemesis(Box::new(file)))
}

/// A shared_cap results file: every cell's labels known, every receipt's effect id of the
/// right shape.
fn shared_cap_document(text: &str) -> Result<Document, LoadError> {
    let file = typed::<crate::shared_cap::record::CapResults>(text)?;
    for (i, c) in file.cells.iter().enumerate() {
        cap::cell_shape(&format!("cells[{i}]"), c)?;
    }
    Ok(Document::SharedCap(Box::new(file)))
}

/// A shared_cap nemesis file: its plan's and every trial's labels known, every receipt's effect
/// id of the right shape.
fn shared_cap_nemesis_document(text: &str) -> Result<Document, LoadError> {
    let file = typed::<crate::shared_cap::nemesis::record::CapNemesisFile>(text)?;
    cap::plan_shape(&file)?;
    for (i, t) in file.trials.iter().enumerate() {
        cap::trial_shape(&format!("trials[{i}]"), t)?;
    }
    Ok(Document::SharedCapNemesis(Box::new(file)))
}

/// A bundle's effect id is its name in every report line: it must have its format's exact shape
/// (lowercase hex of `len` characters) before anything repeats it.
fn effect_id_shape(path: &str, id: &str, len: usize) -> Result<(), LoadError> {
    let hex = id
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if id.len() == len && hex {
        return Ok(());
    }
    Err(LoadError::Shape {
        path: path.to_owned(),
        message: format!(
            "an effect id must be {len} lowercase hex characters (found {} bytes)",
            id.len()
        ),
    })
}

/// A file without `format` that does not match the original's schema is of no format we know.
fn not_original(e: LoadError) -> LoadError {
    match e {
        LoadError::Shape { path, message } => LoadError::UnknownFormat {
            found: format!(
                "no `format`, and not the original Python format either (at {path}: {message})"
            ),
        },
        other => other,
    }
}

/// Read an `interlock-results` file of the current version strictly; any other document is an error.
pub fn load_results(bytes: &[u8]) -> Result<ResultsFile, LoadError> {
    match load_document(bytes)? {
        Document::Results(f) => Ok(*f),
        Document::Receipt(b) => Err(LoadError::UnknownFormat {
            found: format!("a receipt bundle ({}), not a results file", b.format),
        }),
        Document::OriginalResults(_) => Err(LoadError::UnknownFormat {
            found: format!(
                "a results file of the original Python implementation, not {RESULTS_FORMAT}"
            ),
        }),
        Document::Nemesis(_) => Err(LoadError::UnknownFormat {
            found: format!(
                "a nemesis results file ({}), not {RESULTS_FORMAT}",
                crate::nemesis::NEMESIS_FORMAT
            ),
        }),
        Document::SharedCap(_) => Err(LoadError::UnknownFormat {
            found: format!(
                "a shared_cap results file ({}), not {RESULTS_FORMAT}",
                crate::shared_cap::check::FORMAT
            ),
        }),
        Document::SharedCapNemesis(_) => Err(LoadError::UnknownFormat {
            found: format!(
                "a shared_cap nemesis file ({}), not {RESULTS_FORMAT}",
                crate::shared_cap::nemesis::FORMAT
            ),
        }),
    }
}

/// Read an `interlock-nemesis/3` file strictly; any other document is an error.
pub fn load_nemesis(bytes: &[u8]) -> Result<crate::nemesis::NemesisFile, LoadError> {
    match load_document(bytes)? {
        Document::Nemesis(f) => Ok(*f),
        _ => Err(LoadError::UnknownFormat {
            found: format!(
                "not a nemesis results file ({})",
                crate::nemesis::NEMESIS_FORMAT
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed read runs without path tracking first; a failure must still name its JSON path.
    #[test]
    fn shape_errors_name_their_path() {
        let committed = include_bytes!("../../../results/billing_credit.json");
        let mut value: Value = serde_json::from_slice(committed).unwrap_or_default();
        if let Some(gt) = value.pointer_mut("/cells/0/ground_truth/case_credit_count") {
            *gt = Value::String("three".into());
        }
        let bytes = serde_json::to_vec(&value).unwrap_or_default();
        let err = load_results(&bytes).err();
        assert!(
            matches!(&err, Some(LoadError::Shape { path, .. }) if path == "cells[0].ground_truth.case_credit_count"),
            "{err:?}"
        );
        let err =
            load_document(br#"{"format": "interlock-receipt/1", "effect_id": "ab", "entries": 5}"#)
                .err();
        assert!(
            matches!(&err, Some(LoadError::Shape { path, message }) if path == "entries" && message.contains("expected a sequence")),
            "{err:?}"
        );
        let err = load_document(br#"{"format": "interlock-receipt/1", "effect_id": "ab", "entries": [{"a": 1}, {"a": [1, }]}"#).err();
        assert!(
            matches!(&err, Some(LoadError::Syntax { line: 1, .. })),
            "{err:?}"
        );
    }
}
