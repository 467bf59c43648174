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

/// A document's `format` member: a string, or the JSON text of any other value.
enum FormatMember {
    /// A string, as it should be.
    Text(String),
    /// Another value, as JSON text (for the message that refuses it).
    Other(String),
}

/// What one pass over the whole document found at its top level.
#[derive(Default)]
struct TopLevel {
    is_object: bool,
    /// The document's `format` member, if it has one.
    format: Option<FormatMember>,
    scenario: bool,
    cells: bool,
    effect_id: bool,
    entries: bool,
}

/// The longest string (value or object key) a document may hold, in bytes of its UTF-8 text.
/// Nothing the runner or the gate writes comes near it (the longest are a case text and a worker's
/// stderr tail); a longer string is refused (exit 2) before anything repeats it in a report.
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// Largest integer magnitude accepted anywhere in a document: 2^53 - 1, what every JSON reader
/// (JavaScript's included) holds exactly.
const MAX_SAFE_INTEGER: i64 = crate::canonical::MAX_SAFE_INTEGER;

/// Marks a scan error as a limit (not a syntax or shape error).
const LIMIT_PREFIX: &str = "limit: ";

fn check_string_len<E: de::Error>(v: &str) -> Result<(), E> {
    if v.len() > MAX_STRING_BYTES {
        return Err(de::Error::custom(format!(
            "{LIMIT_PREFIX}a string of {} bytes is longer than the limit of {MAX_STRING_BYTES}",
            v.len()
        )));
    }
    Ok(())
}

/// Objects with more members than this are checked for duplicate keys with a hash set.
const LINEAR_KEY_CHECK: usize = 32;

/// One pass over the document that refuses duplicate object keys anywhere (a hashed entry with
/// two `amount` keys would mean different things to different readers) and records the top-level
/// keys that tell formats apart. Only the top level (`top` is `Some`) records anything.
struct Scan<'a> {
    top: Option<&'a mut TopLevel>,
    /// Arrays and objects this value may still open (serde_json's own limit applies too).
    depth: usize,
}

/// The scan of a value inside one that may still open `depth` levels.
fn inner<E: de::Error>(depth: usize) -> Result<Scan<'static>, E> {
    match depth.checked_sub(1) {
        Some(depth) => Ok(Scan { top: None, depth }),
        None => Err(E::custom("nested too deeply")),
    }
}

/// An object key, borrowed from the input when it has no escapes.
pub(crate) struct Key<'de>(pub(crate) std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER.unsigned_abs() {
            return Err(de::Error::custom(format!("{LIMIT_PREFIX}the integer {v} is outside +/-(2^53 - 1), which not every JSON reader holds exactly")));
        }
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        if v > MAX_SAFE_INTEGER.unsigned_abs() {
            return Err(de::Error::custom(format!("{LIMIT_PREFIX}the integer {v} is outside +/-(2^53 - 1), which not every JSON reader holds exactly")));
        }
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        check_string_len(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(inner(self.depth)?)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let depth = self.depth;
        let mut top = self.top;
        if let Some(t) = top.as_deref_mut() {
            t.is_object = true;
        }
        let mut few: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        let mut many: HashSet<std::borrow::Cow<'de, str>> = HashSet::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            check_string_len(&key)?;
            let seen = if few.len() < LINEAR_KEY_CHECK {
                few.contains(&key)
            } else {
                if many.is_empty() {
                    many.extend(few.iter().cloned());
                }
                many.contains(&key)
            };
            if seen {
                return Err(de::Error::custom(format!(
                    "duplicate key {key:?} in one object"
                )));
            }
            match top.as_deref_mut() {
                Some(t) if key == "format" => {
                    let v: Value = map.next_value()?;
                    t.format = Some(match v {
                        Value::String(s) => FormatMember::Text(s),
                        other => FormatMember::Other(other.to_string()),
                    });
                }
                Some(t) => {
                    match key.as_ref() {
                        "scenario" => t.scenario = true,
                        "cells" => t.cells = true,
                        "effect_id" => t.effect_id = true,
                        "entries" => t.entries = true,
                        _ => {}
                    }
                    map.next_value_seed(inner(depth)?)?;
                }
                None => map.next_value_seed(inner(depth)?)?,
            }
            if few.len() < LINEAR_KEY_CHECK {
                few.push(key);
            } else {
                many.insert(key);
            }
        }
        Ok(())
    }
}

/// Scan the whole document once: syntax, duplicate keys (with their JSON path), top-level keys.
///
/// The pass runs without tracking JSON paths; only when it fails is it run again with tracking, to
/// name where (the same input gives the same error either way).
fn scan(text: &str) -> Result<TopLevel, LoadError> {
    let mut top = TopLevel::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let fast = Scan {
        top: Some(&mut top),
        depth: usize::MAX,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if fast.is_ok() {
        return Ok(top);
    }
    scan_tracked(text)
}

/// [`scan`] with JSON path tracking, for the error.
fn scan_tracked(text: &str) -> Result<TopLevel, LoadError> {
    let mut top = TopLevel::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let mut track = serde_path_to_error::Track::new();
    let result = Scan {
        top: Some(&mut top),
        depth: usize::MAX,
    }
    .deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track));
    match result {
        Ok(()) => {}
        Err(e) if e.is_syntax() || e.is_eof() => return Err(syntax(&e)),
        Err(e) => {
            let message = e.to_string();
            let path = track.path().to_string();
            return Err(match message.strip_prefix(LIMIT_PREFIX) {
                Some(m) => LoadError::Limit {
                    path,
                    message: m.to_owned(),
                },
                None => LoadError::Shape { path, message },
            });
        }
    }
    de.end().map_err(|e| syntax(&e))?;
    Ok(top)
}

/// At most one JSON value per this many bytes of a document (plus [`VALUE_ALLOWANCE`]): the
/// files the runner and the gate write hold one per 20 to 40 bytes; a document of bare small
/// values (`[0,0,0,…]`, two bytes each) would make a tree many times its size in memory.
pub const MIN_BYTES_PER_VALUE: usize = 8;
/// Values any document may hold whatever its size.
pub const VALUE_ALLOWANCE: usize = 4096;

/// Refuses a document with more values than its size allows ([`MIN_BYTES_PER_VALUE`]), counted
/// in one pass over its text before anything is built: every value but the first follows a `,`,
/// a `[` or a `:` outside strings, so their count bounds the values.
fn values_within_density(text: &str) -> Result<(), LoadError> {
    let (mut in_string, mut escaped, mut values) = (false, false, 1usize);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b',' | b'[' | b':' => values += 1,
                _ => {}
            }
        }
    }
    let allowed = text.len() / MIN_BYTES_PER_VALUE + VALUE_ALLOWANCE;
    if values > allowed {
        return Err(LoadError::Limit {
            path: "$".into(),
            message: format!(
                "about {values} JSON values in {} bytes: more than one per {MIN_BYTES_PER_VALUE} bytes (at most {allowed})",
                text.len()
            ),
        });
    }
    Ok(())
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

/// Read the typed document. As in [`scan`], JSON paths are tracked only on a second pass after a
/// failure.
fn typed<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, LoadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    if let Ok(value) = T::deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        return Ok(value);
    }
    typed_tracked(text)
}

/// [`typed`] with JSON path tracking, for the error.
fn typed_tracked<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, LoadError> {
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

/// The checks every document passes before anything is built from it: UTF-8, at most one value
/// per [`MIN_BYTES_PER_VALUE`] bytes, syntax, no duplicate key, no string over
/// [`MAX_STRING_BYTES`], no integer beyond 2^53. Returns the text.
pub fn within_limits(bytes: &[u8]) -> Result<&str, LoadError> {
    let text = text(bytes)?;
    values_within_density(text)?;
    scan(text)?;
    Ok(text)
}

/// Detect what a file is and read it.
pub fn load_document(bytes: &[u8]) -> Result<Document, LoadError> {
    let text = text(bytes)?;
    values_within_density(text)?;
    let top = scan(text)?;
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
    match format.as_deref() {
        Some(RESULTS_FORMAT) => {
            let file = typed::<ResultsFile>(text)?;
            for (i, c) in file.cells.iter().enumerate() {
                if let Some(b) = &c.receipt {
                    effect_id_shape(&format!("cells[{i}].receipt.effect_id"), &b.effect_id, 64)?;
                }
            }
            Ok(Document::Results(Box::new(file)))
        }
        Some(crate::nemesis::NEMESIS_FORMAT) => {
            let file = typed::<crate::nemesis::NemesisFile>(text)?;
            for (i, t) in file.trials.iter().enumerate() {
                if let Some(b) = &t.receipt {
                    effect_id_shape(&format!("trials[{i}].receipt.effect_id"), &b.effect_id, 64)?;
                }
            }
            Ok(Document::Nemesis(Box::new(file)))
        }
        Some(crate::shared_cap::check::FORMAT) => {
            let file = typed::<crate::shared_cap::record::CapResults>(text)?;
            for (i, c) in file.cells.iter().enumerate() {
                crate::shared_cap::plan::labels_known(c).map_err(|(field, message)| {
                    LoadError::Shape {
                        path: format!("cells[{i}].{field}"),
                        message,
                    }
                })?;
                for (j, t) in c.tickets.iter().enumerate() {
                    if let Some(b) = &t.receipt {
                        effect_id_shape(
                            &format!("cells[{i}].tickets[{j}].receipt.effect_id"),
                            &b.effect_id,
                            64,
                        )?;
                    }
                }
            }
            Ok(Document::SharedCap(Box::new(file)))
        }
        Some(crate::shared_cap::nemesis::FORMAT) => {
            let file = typed::<crate::shared_cap::nemesis::record::CapNemesisFile>(text)?;
            crate::shared_cap::nemesis::check::plan_known(&file.plan).map_err(
                |(field, message)| LoadError::Shape {
                    path: format!("plan.{field}"),
                    message,
                },
            )?;
            for (i, t) in file.trials.iter().enumerate() {
                crate::shared_cap::nemesis::check::labels_known(t).map_err(|(field, message)| {
                    LoadError::Shape {
                        path: format!("trials[{i}].{field}"),
                        message,
                    }
                })?;
                for (j, ticket) in t.cell.tickets.iter().enumerate() {
                    if let Some(b) = &ticket.receipt {
                        effect_id_shape(
                            &format!("trials[{i}].cell.tickets[{j}].receipt.effect_id"),
                            &b.effect_id,
                            64,
                        )?;
                    }
                }
            }
            Ok(Document::SharedCapNemesis(Box::new(file)))
        }
        Some(RECEIPT_FORMAT) => {
            let bundle = typed::<ReceiptBundle>(text)?;
            effect_id_shape("effect_id", &bundle.effect_id, 64)?;
            Ok(Document::Receipt(bundle))
        }
        Some(other) => Err(LoadError::UnknownFormat {
            found: format!(
                "format {other:?} (known: {RESULTS_FORMAT}, {}, {}, {}, {RECEIPT_FORMAT})",
                crate::nemesis::NEMESIS_FORMAT,
                crate::shared_cap::check::FORMAT,
                crate::shared_cap::nemesis::FORMAT
            ),
        }),
        // No `format`: only the original Python implementation wrote such files. Read one only
        // when it matches the original's schema exactly; never as a fallback for anything else.
        None if top.scenario && top.cells => {
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

/// A results file read for checking a group of cells at a time
/// ([`crate::check::verify_results_text`]): never held as typed data all at once.
pub struct ResultsText<'a> {
    /// Every member of the file but its cells, read strictly (`head.cells` is empty).
    pub head: ResultsFile,
    /// Each cell's JSON text, in file order, read by [`read_cell`] when it is checked.
    pub cells: Vec<&'a RawValue>,
}

/// A nemesis file read for checking a group of trials at a time
/// ([`crate::nemesis::check::verify_nemesis_text`]): never held as typed data all at once.
pub struct NemesisText<'a> {
    /// Every member of the file but its trials, read strictly (`head.trials` is empty).
    pub head: crate::nemesis::NemesisFile,
    /// Each trial's JSON text, in file order, read by [`read_trial`] when it is needed.
    pub trials: Vec<&'a RawValue>,
}

/// A file read for checking.
pub enum Loaded<'a> {
    /// An `interlock-results/2` file whose cells are still text.
    Results(Box<ResultsText<'a>>),
    /// An `interlock-nemesis/3` file whose trials are still text.
    Nemesis(Box<NemesisText<'a>>),
    /// Any other document, read whole by [`load_document`].
    Document(Document),
}

/// Read a file for checking: an `interlock-results/2` file as a [`ResultsText`], an
/// `interlock-nemesis/3` file as a [`NemesisText`], anything else (and any file that does not
/// read cleanly that way) through [`load_document`], which names the error.
pub fn load_for_check(bytes: &[u8]) -> Result<Loaded<'_>, LoadError> {
    let text = text(bytes)?;
    values_within_density(text)?;
    if let Some(file) = results_text(text) {
        return Ok(Loaded::Results(Box::new(file)));
    }
    if let Some(file) = nemesis_text(text) {
        return Ok(Loaded::Nemesis(Box::new(file)));
    }
    load_document(bytes).map(Loaded::Document)
}

/// Nesting a cell's text may hold before [`read_cell`] gives up (the whole file's reader then
/// applies the real limit, 128 levels counted from the top of the file).
pub(crate) const CELL_DEPTH: usize = 100;

/// One cell's text, read as [`load_document`] reads it inside the file: duplicate keys, limits,
/// the typed shape, the receipt's effect id; with the hash of its canonical JSON
/// ([`crate::manifest::text_hash`], `None` when it has none). The error is only a verdict; its
/// path is relative to the cell, so a caller re-reads the whole file with [`load_document`] to
/// name it.
pub fn read_cell(index: usize, raw: &RawValue) -> Result<(Cell, Option<[u8; 32]>), LoadError> {
    // The canonical writer refuses everything the scan refuses (and floats): when it gives a
    // hash, the scan would pass; otherwise the scan decides.
    let hash = crate::manifest::text_hash(raw.get());
    let cell = read_cell_scanned(index, raw, hash.is_some())?;
    Ok((cell, hash))
}

/// [`read_cell`] without the hash: `scanned` says the text is already known to pass the strict
/// scan ([`crate::manifest::text_hash`] gave it a hash), which is then not run again.
pub fn read_cell_scanned(index: usize, raw: &RawValue, scanned: bool) -> Result<Cell, LoadError> {
    let text = raw.get();
    if !scanned {
        let mut de = serde_json::Deserializer::from_str(text);
        Scan {
            top: None,
            depth: CELL_DEPTH,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| LoadError::Shape {
            path: format!("cells[{index}]"),
            message: e.to_string(),
        })?;
    }
    let cell = typed::<Cell>(text)?;
    if let Some(b) = &cell.receipt {
        let path = format!("cells[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok(cell)
}

/// The top-level object's members as text, the array named `array` split into its elements.
struct Split<'de> {
    array: &'static str,
    members: Vec<(std::borrow::Cow<'de, str>, &'de RawValue)>,
    elements: Option<Vec<&'de RawValue>>,
}

impl<'de> Visitor<'de> for Split<'de> {
    type Value = Split<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Split<'de>, A::Error> {
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let seen = self.members.iter().any(|(k, _)| *k == key);
            if seen || (key == self.array && self.elements.is_some()) {
                return Err(de::Error::custom("duplicate key"));
            }
            if key == self.array {
                self.elements = Some(map.next_value()?);
            } else {
                self.members.push((key, map.next_value()?));
            }
        }
        Ok(self)
    }
}

/// A file of `format` split into its head, read strictly (as [`load_document`] would) from a
/// copy of the file whose `array` is empty, and the text of each element of `array`; `None` for
/// any other document or any error.
fn split_file<'t, T: serde::de::DeserializeOwned>(
    text: &'t str,
    format: &str,
    array: &'static str,
) -> Option<(T, Vec<&'t RawValue>)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let split = Split {
        array,
        members: Vec::new(),
        elements: None,
    };
    let split = serde::Deserializer::deserialize_map(&mut de, split).ok()?;
    de.end().ok()?;
    let stated = split.members.iter().find(|(k, _)| k == "format")?;
    if serde_json::from_str::<String>(stated.1.get()).ok()? != format {
        return None;
    }
    // The same checks as the whole file's, over a small text.
    let mut head = format!("{{\"{array}\":[]");
    for (key, value) in &split.members {
        head.push(',');
        head.push_str(&serde_json::to_string(key).ok()?);
        head.push(':');
        head.push_str(value.get());
    }
    head.push('}');
    scan(&head).ok()?;
    let head = typed::<T>(&head).ok()?;
    Some((head, split.elements?))
}

/// An `interlock-results/2` file split into its head and its cells' text.
fn results_text(text: &str) -> Option<ResultsText<'_>> {
    let (head, cells) = split_file::<ResultsFile>(text, RESULTS_FORMAT, "cells")?;
    Some(ResultsText { head, cells })
}

/// An `interlock-nemesis/3` file split into its head and its trials' text.
fn nemesis_text(text: &str) -> Option<NemesisText<'_>> {
    let format = crate::nemesis::NEMESIS_FORMAT;
    let (head, trials) = split_file::<crate::nemesis::NemesisFile>(text, format, "trials")?;
    Some(NemesisText { head, trials })
}

/// One trial's text, read as [`load_document`] reads it inside the file: duplicate keys, limits,
/// the typed shape, the receipt's effect id. The error is only a verdict; its path is relative
/// to the trial, so a caller re-reads the whole file with [`load_document`] to name it.
pub fn read_trial(index: usize, raw: &RawValue) -> Result<crate::nemesis::Trial, LoadError> {
    let text = raw.get();
    let mut de = serde_json::Deserializer::from_str(text);
    Scan {
        top: None,
        depth: CELL_DEPTH,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end())
    .map_err(|e| LoadError::Shape {
        path: format!("trials[{index}]"),
        message: e.to_string(),
    })?;
    let trial = typed::<crate::nemesis::Trial>(text)?;
    if let Some(b) = &trial.receipt {
        let path = format!("trials[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok(trial)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed read runs without path tracking first; a failure must still name its JSON path.
    #[test]
    fn shape_errors_name_their_path() {
        let committed = include_bytes!("../../results/billing_credit.json");
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
