//! Reading input files strictly: what kind of document a file is, and the typed document, or an
//! error that names where the file went wrong (byte, line and column, or JSON path).
//!
//! Nothing here panics on any input: invalid UTF-8, truncated JSON, nesting deeper than 128,
//! numbers out of range and wrong types all come back as a [`LoadError`].

use crate::entry::{ReceiptBundle, RECEIPT_FORMAT};
use crate::receipt::PYTHON_ORIGINAL_FORMAT;
use crate::results::{ResultsFile, RESULTS_FORMAT};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

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
    /// [`PYTHON_ORIGINAL_FORMAT`]).
    Receipt(ReceiptBundle),
    /// A results file of the original Python implementation (kept as raw JSON).
    OriginalResults(Value),
    /// An `interlock-results/1` file.
    Results(Box<ResultsFile>),
}

/// The top-level keys that tell formats apart, read without building the document.
#[derive(Deserialize)]
struct Probe {
    format: Option<String>,
    scenario: Option<IgnoredAny>,
    cells: Option<IgnoredAny>,
    effect_id: Option<IgnoredAny>,
    entries: Option<IgnoredAny>,
}

fn text(bytes: &[u8]) -> Result<&str, LoadError> {
    std::str::from_utf8(bytes).map_err(|e| LoadError::Utf8 {
        offset: e.valid_up_to(),
    })
}

fn syntax(e: &serde_json::Error) -> LoadError {
    LoadError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    }
}

fn typed<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, LoadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            syntax(&inner)
        } else {
            LoadError::Shape {
                path,
                message: inner.to_string(),
            }
        }
    })?;
    de.end().map_err(|e| syntax(&e))?;
    Ok(value)
}

/// Detect what a file is and read it.
pub fn load_document(bytes: &[u8]) -> Result<Document, LoadError> {
    let text = text(bytes)?;
    let probe: Probe = match serde_json::from_str(text) {
        Ok(p) => p,
        Err(e) if e.is_data() => {
            // Valid JSON, but not an object or `format` is not a string: name it.
            let value: Value = serde_json::from_str(text).map_err(|e| syntax(&e))?;
            return Err(match value.get("format") {
                Some(f) => LoadError::Shape {
                    path: "format".into(),
                    message: format!("expected a string, found {f}"),
                },
                None => LoadError::UnknownFormat {
                    found: "a JSON value that is not an object".into(),
                },
            });
        }
        Err(e) => return Err(syntax(&e)),
    };
    match probe.format.as_deref() {
        Some(RESULTS_FORMAT) => typed::<ResultsFile>(text).map(|f| Document::Results(Box::new(f))),
        Some(RECEIPT_FORMAT) => typed::<ReceiptBundle>(text).map(Document::Receipt),
        Some(other) => Err(LoadError::UnknownFormat {
            found: format!("format {other:?} (known: {RESULTS_FORMAT}, {RECEIPT_FORMAT})"),
        }),
        None if probe.scenario.is_some() && probe.cells.is_some() => {
            serde_json::from_str(text).map(Document::OriginalResults).map_err(|e| syntax(&e))
        }
        None if probe.effect_id.is_some() && probe.entries.is_some() => {
            let value: Value = serde_json::from_str(text).map_err(|e| syntax(&e))?;
            original_bundle(&value).map(Document::Receipt).ok_or(LoadError::Shape {
                path: "entries".into(),
                message: "an original bundle needs a string effect_id and an array of entries".into(),
            })
        }
        None => Err(LoadError::UnknownFormat {
            found: "an object with no `format` that is neither a receipt bundle nor an original results file".into(),
        }),
    }
}

/// Read an `interlock-results/1` file strictly; any other document is an error.
pub fn load_results(bytes: &[u8]) -> Result<ResultsFile, LoadError> {
    match load_document(bytes)? {
        Document::Results(f) => Ok(*f),
        Document::Receipt(b) => Err(LoadError::UnknownFormat {
            found: format!("a receipt bundle ({}), not a results file", b.format),
        }),
        Document::OriginalResults(_) => Err(LoadError::UnknownFormat {
            found: "a results file of the original Python implementation, not interlock-results/1"
                .into(),
        }),
    }
}

/// Turn an original bundle (a JSON value with `effect_id` and `entries`, no `format`) into a
/// [`ReceiptBundle`] of format [`PYTHON_ORIGINAL_FORMAT`]; `None` when it does not have that shape.
pub fn original_bundle(value: &Value) -> Option<ReceiptBundle> {
    let effect_id = value.get("effect_id")?.as_str()?;
    let entries = value.get("entries")?.as_array()?;
    Some(ReceiptBundle {
        format: PYTHON_ORIGINAL_FORMAT.to_owned(),
        effect_id: effect_id.to_owned(),
        entries: entries.clone(),
    })
}
