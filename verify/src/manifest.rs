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
use crate::view::{BundleView, View};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::ops::Range;

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

/// The hash of everything in the file but `cells` and `manifest`: of the canonical JSON of
/// `{format, scenario, generated, environment, rows, columns, repeats, selected, summary}`.
///
/// `columns` is written straight into the canonical text rather than through a tree of values
/// (a file may list many of them, and a value per string costs many times its text): its key
/// sorts first (RFC 8785 orders keys by UTF-16 code units), so the text is `{"columns":[...],`
/// followed by the canonical text of the other members without its opening brace.
pub fn head_hash(file: &ResultsFile) -> Result<String, ManifestError> {
    let rest = json!({
        "format": file.format,
        "scenario": file.scenario,
        "generated": file.generated,
        "environment": to_json("environment", &file.environment)?,
        "rows": to_json("rows", &file.rows)?,
        "repeats": file.repeats,
        "selected": to_json("selected", &file.selected)?,
        "summary": to_json("summary", &file.summary)?,
    });
    let rest = canonical::to_string(&rest).map_err(|source| ManifestError::Canonical {
        what: "head".to_owned(),
        source,
    })?;
    let mut text = String::with_capacity(rest.len() + 16 * file.columns.len() + 16);
    text.push_str("{\"columns\":[");
    for (i, c) in file.columns.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        canonical::write_string(&mut text, c);
    }
    text.push_str("],");
    text.push_str(rest.get(1..).unwrap_or_default());
    Ok(entry::lower_hex(&Sha256::digest(text.as_bytes())))
}

/// The hash of one cell (`index` only names it in an error): of the canonical JSON of the typed
/// cell as it serializes.
pub fn cell_hash(index: usize, cell: &Cell) -> Result<String, ManifestError> {
    typed_cell_hash(index, cell, None)
}

/// [`cell_hash`] of `cell` with `receipt` as its receipt, the cell's own `receipt` set aside: the
/// hash of a cell read with its receipt apart ([`crate::load::read_cell_apart`]).
pub fn cell_hash_apart(
    index: usize,
    cell: &Cell,
    receipt: &BundleView<'_>,
) -> Result<String, ManifestError> {
    typed_cell_hash(index, cell, Some(receipt))
}

/// [`cell_hash`], with `receipt`, when given, in place of the cell's own. No tree of
/// `serde_json::Value`s is built of the cell or of its receipt (a cell whose text was not the
/// signed one once held three of them here): the cell is written as JSON text and read back as
/// views (strings borrowed from that text), which mean what `Value`s read from it would (the same
/// numbers, so the same canonical form or the same error); the receipt's entries are written
/// from their views. A text nested past what the reader takes is read as `Value`s instead.
fn typed_cell_hash(
    index: usize,
    cell: &Cell,
    receipt: Option<&BundleView<'_>>,
) -> Result<String, ManifestError> {
    let out = canonical_apart(&format!("cells[{index}]"), cell, receipt)?;
    Ok(entry::lower_hex(&Sha256::digest(out.as_bytes())))
}

/// The canonical JSON text of the typed object `value` (named `what` in errors), with
/// `receipt`, when given, as its member `receipt` in place of its own: written as in
/// [`typed_cell_hash`], with no tree of `serde_json::Value`s of the object or of its receipt
/// (a cell's or a nemesis trial's).
pub(crate) fn canonical_apart<T: serde::Serialize>(
    what: &str,
    value: &T,
    receipt: Option<&BundleView<'_>>,
) -> Result<String, ManifestError> {
    let text = serde_json::to_string(value).map_err(|e| ManifestError::Serialize {
        what: what.to_owned(),
        message: e.to_string(),
    })?;
    let mut out = String::with_capacity(text.len());
    let written = match (serde_json::from_str::<View<'_>>(&text), receipt) {
        (Ok(node), None) => canonical::write_node(&mut out, &node),
        (Ok(node), Some(r)) => write_with_receipt(&mut out, &node, what, r)?,
        (Err(_), None) => canonical::write_node(&mut out, &to_json(what, value)?),
        (Err(_), Some(r)) => write_with_receipt(&mut out, &to_json(what, value)?, what, r)?,
    };
    written.map_err(|source| ManifestError::Canonical {
        what: what.to_owned(),
        source,
    })?;
    Ok(out)
}

/// Append the canonical text of the object `cell` with `receipt` as its member `receipt` (the
/// bundle as the typed cell writes it, its entries from their views); the outer error when the
/// bundle cannot be serialized, the inner one when something has no canonical form.
fn write_with_receipt<N: canonical::Node>(
    out: &mut String,
    cell: &N,
    what: &str,
    receipt: &BundleView<'_>,
) -> Result<Result<(), CanonicalError>, ManifestError> {
    let bundle = crate::entry::ReceiptBundle {
        format: receipt.format.as_ref().to_owned(),
        effect_id: receipt.effect_id.as_ref().to_owned(),
        entries: Vec::new(),
        head: receipt.head.clone(),
    };
    let bundle = to_json(what, &bundle)?;
    Ok(write_object_with(out, cell, "receipt", |out| {
        write_object_with(out, &bundle, "entries", |out| {
            out.push('[');
            for (i, entry) in receipt.entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical::write_node(out, entry)?;
            }
            out.push(']');
            Ok(())
        })
    }))
}

/// Append the canonical text of the object `value` with its member `key` (added if it has none)
/// written by `member` instead of from `value`.
fn write_object_with<N: canonical::Node>(
    out: &mut String,
    value: &N,
    key: &str,
    member: impl FnOnce(&mut String) -> Result<(), CanonicalError>,
) -> Result<(), CanonicalError> {
    let mut members: Vec<(&str, Option<&N>)> = value
        .members()
        .filter(|(k, _)| *k != key)
        .map(|(k, v)| (k, Some(v)))
        .collect();
    members.push((key, None));
    members.sort_unstable_by(|a, b| canonical::cmp_utf16(a.0, b.0));
    let mut member = Some(member);
    out.push('{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        canonical::write_string(out, k);
        out.push(':');
        match v {
            Some(v) => canonical::write_node(out, v)?,
            None => {
                if let Some(write) = member.take() {
                    write(out)?;
                }
            }
        }
    }
    out.push('}');
    Ok(())
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
    let verified = crate::signatures::check_file_signature(key, &signing_message(&m.hash), &m.sig);
    if verified.is_err() {
        bad(
            "sig",
            "the manifest's signature does not verify for the key".into(),
        );
    }
}

/// The cell's hash must be the one the run signed (in `manifest`) at its index. The hash of the
/// cell's JSON text (`from_text`, by [`text_hash`]: the same bytes, without building a tree of the
/// typed cell) is tried first; the typed cell's hash ([`cell_hash`]) decides otherwise.
pub fn check_cell(
    manifest: &Manifest,
    index: usize,
    cell: &Cell,
    from_text: Option<[u8; 32]>,
) -> Option<Finding> {
    check_cell_apart(manifest, index, cell, None, from_text)
}

/// [`check_cell`] of a cell read with its receipt apart: `receipt`, when given, is the cell's
/// receipt (its own set aside), hashed from its view ([`cell_hash_apart`]).
pub fn check_cell_apart(
    manifest: &Manifest,
    index: usize,
    cell: &Cell,
    receipt: Option<&BundleView<'_>>,
    from_text: Option<[u8; 32]>,
) -> Option<Finding> {
    let signed = manifest.cells.get(index);
    if let (Some(h), Some(signed)) = (from_text, signed) {
        if entry::is_lower_hex_of(signed, &h) {
            return None;
        }
    }
    let path = format!("cells[{index}]");
    let typed = match receipt {
        Some(r) => cell_hash_apart(index, cell, r),
        None => cell_hash(index, cell),
    };
    match (typed, signed) {
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

/// The SHA-256 of the canonical JSON of a value given as JSON text, written straight from the
/// text; `None` when it has no canonical form (a float, an integer beyond 2^53 - 1), is not JSON,
/// or breaks a limit of [`crate::load`] (an object with a key twice, a string longer than
/// [`crate::load::MAX_STRING_BYTES`], nesting deeper than a cell may hold). So a hash means the
/// text also passes the strict reader's scan. For a cell the runner wrote, this is [`cell_hash`]
/// of the typed cell: the runner writes every field, and the canonical form does not depend on
/// member order or spelling.
///
/// Most texts go the trusted core's byte-level path ([`verify_core::canonical_text`]: copies
/// what is already canonical, orders keys); the text it declines (an escape in a string, a
/// number that is not a plain safe integer, a key twice, nesting past its limit, anything not
/// JSON) is parsed and re-serialised by [`text_hash_parsed`], which decides. The byte-level path
/// stops one level short of a cell's depth limit, so that the parsed path decides at the limit.
pub fn text_hash(text: &str) -> Option<[u8; 32]> {
    use verify_core::canonical_text::{write, Limits, Scratch};
    thread_local! {
        static BUFFERS: std::cell::RefCell<(Scratch, Vec<u8>)> = std::cell::RefCell::default();
    }
    const LIMITS: Limits = Limits {
        max_string_bytes: crate::load::MAX_STRING_BYTES,
        max_depth: crate::load::CELL_DEPTH - 1,
    };
    let fast = BUFFERS.with(|buffers| {
        let mut buffers = buffers.borrow_mut();
        let (scratch, out) = &mut *buffers;
        out.clear();
        let digest = write(text, LIMITS, scratch, out).map(|()| Sha256::digest(&out[..]).into());
        // Keep no more than about a megabyte between texts.
        if out.capacity() > 1 << 20 {
            *buffers = Default::default();
        }
        digest
    });
    fast.or_else(|| text_hash_parsed(text))
}

/// [`text_hash`] through a full parse (serde_json's reader), re-serialised in canonical form:
/// the path that decides every text the byte-level path declines.
pub fn text_hash_parsed(text: &str) -> Option<[u8; 32]> {
    let (mut out, mut scratch) = (String::with_capacity(text.len()), String::new());
    let mut members = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let canon = Canon {
        out: &mut out,
        scratch: &mut scratch,
        members: &mut members,
        depth: crate::load::CELL_DEPTH,
    };
    serde::de::DeserializeSeed::deserialize(canon, &mut de).ok()?;
    de.end().ok()?;
    Some(Sha256::digest(out.as_bytes()).into())
}

/// Writes the canonical text of the value it reads (RFC 8785, integers only) to `out`. The
/// members of the objects being read wait in `members` (each object's after its parent's), and
/// an object's values are moved through `scratch` to put them in key order.
struct Canon<'s, 'de> {
    out: &'s mut String,
    scratch: &'s mut String,
    members: &'s mut Vec<(Cow<'de, str>, Range<usize>)>,
    /// Arrays and objects this value may still open.
    depth: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Canon<'_, 'de> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Canon<'_, 'de> {
    /// The same writer, for a value inside this one (an array or object opened one level).
    fn inner<E: serde::de::Error>(&mut self) -> Result<Canon<'_, 'de>, E> {
        let depth = self
            .depth
            .checked_sub(1)
            .ok_or_else(|| E::custom("too deep"))?;
        Ok(Canon {
            out: self.out,
            scratch: self.scratch,
            members: self.members,
            depth,
        })
    }

    fn string<E: serde::de::Error>(out: &mut String, v: &str) -> Result<(), E> {
        if v.len() > crate::load::MAX_STRING_BYTES {
            return Err(E::custom("a string past the limit"));
        }
        canonical::write_string(out, v);
        Ok(())
    }

    fn int<E: serde::de::Error>(self, magnitude: u64, negative: bool) -> Result<(), E> {
        if magnitude > canonical::MAX_SAFE_INTEGER.unsigned_abs() {
            return Err(E::custom("an integer beyond 2^53 - 1"));
        }
        if negative && magnitude > 0 {
            self.out.push('-');
        }
        use std::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = write!(self.out, "{magnitude}");
        Ok(())
    }
}

impl<'de> serde::de::Visitor<'de> for Canon<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value without floats")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.int(v.unsigned_abs(), v < 0)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.int(v, false)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom("a float"))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        Canon::string(self.out, v)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.out.push('[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            if seq.next_element_seed(self.inner()?)?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        // Each member's value is written after what is there, then the members are put in key
        // order (UTF-16, as RFC 8785 sorts them).
        let (start, base) = (self.out.len(), self.members.len());
        while let Some(crate::load::Key(key)) = map.next_key()? {
            let from = self.out.len();
            map.next_value_seed(self.inner()?)?;
            self.members.push((key, from..self.out.len()));
        }
        let mine = self.members.get_mut(base..).unwrap_or_default();
        mine.sort_unstable_by(|a, b| canonical::cmp_utf16(&a.0, &b.0));
        if mine.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(serde::de::Error::custom("a key twice in one object"));
        }
        self.scratch.clear();
        self.scratch
            .push_str(self.out.get(start..).unwrap_or_default());
        self.out.truncate(start);
        self.out.push('{');
        for (i, (key, range)) in mine.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            Canon::string(self.out, key)?;
            self.out.push(':');
            let value = self.scratch.get(range.start - start..range.end - start);
            self.out.push_str(value.unwrap_or_default());
        }
        self.out.push('}');
        self.members.truncate(base);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head's hash is the canonical hash of the whole head as one value, whatever the columns
    /// hold (characters to escape, none at all).
    #[test]
    fn head_hash_is_the_canonical_hash_of_the_head_as_a_value() {
        let committed = include_str!("../../results/billing_credit.json");
        let mut file =
            crate::load::load_results(committed.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let as_value = |f: &ResultsFile| {
            let mut v = serde_json::to_value(f).unwrap_or_default();
            if let Some(m) = v.as_object_mut() {
                m.remove("cells");
                m.remove("manifest");
            }
            digest_of("head", &v).unwrap_or_default()
        };
        assert_eq!(head_hash(&file).ok(), Some(file.manifest.head.clone()));
        assert_eq!(head_hash(&file).ok(), Some(as_value(&file)));
        for columns in [
            vec![],
            vec![
                "q\"u\\o\u{7}t\u{e9}\u{1F600}".to_owned(),
                "\u{ffff}".to_owned(),
            ],
        ] {
            file.columns = columns;
            assert_eq!(head_hash(&file).ok(), Some(as_value(&file)));
        }
    }

    /// The hash written straight from a cell's text is the typed cell's hash, for every cell of
    /// the committed run.
    #[test]
    fn text_hash_is_the_typed_cell_hash() {
        let committed = include_str!("../../results/billing_credit.json");
        #[derive(serde::Deserialize)]
        struct Cells<'a> {
            #[serde(borrow)]
            cells: Vec<&'a serde_json::value::RawValue>,
        }
        let raw: Cells<'_> = serde_json::from_str(committed).unwrap_or_else(|e| panic!("{e}"));
        let file =
            crate::load::load_results(committed.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(raw.cells.len(), file.cells.len());
        for (i, (text, cell)) in raw.cells.iter().zip(&file.cells).enumerate() {
            let typed = cell_hash(i, cell).unwrap_or_else(|e| panic!("{e}"));
            let ours = text_hash(text.get()).map(|h| entry::lower_hex(&h));
            assert_eq!(ours.as_deref(), Some(typed.as_str()), "cell {i}");
        }
    }

    /// A cell read with its receipt apart hashes as the whole typed cell, with its receipt read
    /// from the text or viewed from the typed bundle, sealed or not; and a changed entry changes
    /// the hash.
    #[test]
    fn a_cell_hashed_with_its_receipt_apart_hashes_as_the_typed_cell() {
        let committed = include_str!("../../results/billing_credit.json");
        let file =
            crate::load::load_results(committed.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let texts = committed_cell_texts();
        let mut apart = 0;
        for (i, (cell, text)) in file.cells.iter().zip(&texts).enumerate() {
            let typed = cell_hash(i, cell).unwrap_or_else(|e| panic!("{e}"));
            let raw: &serde_json::value::RawValue =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            let (read, view) =
                crate::load::read_cell_apart(i, raw, false).unwrap_or_else(|e| panic!("{e}"));
            let Some(view) = view else {
                assert!(cell.receipt.is_none(), "cell {i}");
                continue;
            };
            apart += 1;
            let from_text = cell_hash_apart(i, &read, &view).ok();
            assert_eq!(from_text.as_deref(), Some(typed.as_str()), "cell {i}");
            let Some(bundle) = &cell.receipt else {
                panic!("cell {i} has a receipt in its text");
            };
            let viewed = cell_hash_apart(i, &read, &BundleView::of(bundle)).ok();
            assert_eq!(viewed.as_deref(), Some(typed.as_str()), "cell {i}");
            let mut unsealed = bundle.clone();
            unsealed.head = None;
            let whole = Cell {
                receipt: Some(unsealed.clone()),
                ..read.clone()
            };
            let expected = cell_hash(i, &whole).ok();
            let ours = cell_hash_apart(i, &read, &BundleView::of(&unsealed)).ok();
            assert_eq!(ours, expected, "cell {i} unsealed");
            let mut changed = bundle.clone();
            if let Some(e) = changed.entries.first_mut().and_then(Value::as_object_mut) {
                e.insert("ts_ms".into(), Value::from(1));
            }
            let ours = cell_hash_apart(i, &read, &BundleView::of(&changed)).ok();
            assert!(
                ours.is_some() && ours.as_deref() != Some(typed.as_str()),
                "cell {i}"
            );
        }
        assert!(apart > 0);
    }

    /// The hash through the cell's text read back as views is the hash of the cell as `Value`s
    /// (how it was first computed), or the same error: on the committed cells, and on a cell
    /// whose free-form member holds a float, an integer past 2^53, or nesting as deep as the
    /// reader takes and past it.
    #[test]
    fn the_typed_cell_hash_is_that_of_the_cell_as_values() {
        let as_values = |i: usize, cell: &Cell| {
            let what = format!("cells[{i}]");
            digest_of(&what, &to_json(&what, cell)?)
        };
        let committed = include_str!("../../results/billing_credit.json");
        let file =
            crate::load::load_results(committed.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        for (i, cell) in file.cells.iter().enumerate() {
            assert_eq!(cell_hash(i, cell), as_values(i, cell), "cell {i}");
        }
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let restarts = [
            r#"{"a": 1.5, "b": [0.1, 1e300]}"#.to_owned(),
            r#"{"z": 9007199254740993}"#.to_owned(),
            r#"{"a": -0}"#.to_owned(),
            r#"{"b": "\u00e9\n", "a": {"d": null, "c": true}}"#.to_owned(),
            deep(120),
            deep(126),
            deep(127),
        ];
        let mut cell = file
            .cells
            .first()
            .cloned()
            .unwrap_or_else(|| panic!("no cell"));
        let mut tried = 0;
        for restart in restarts {
            let Ok(free) = serde_json::from_str(&restart) else {
                continue;
            };
            cell.restart = Some(free);
            assert_eq!(cell_hash(0, &cell), as_values(0, &cell), "{restart}");
            tried += 1;
        }
        assert!(tried >= 6, "{tried}");
    }

    /// The committed run's cells as text.
    fn committed_cell_texts() -> Vec<String> {
        let committed = include_str!("../../results/billing_credit.json");
        #[derive(serde::Deserialize)]
        struct Cells<'a> {
            #[serde(borrow)]
            cells: Vec<&'a serde_json::value::RawValue>,
        }
        let raw: Cells<'_> = serde_json::from_str(committed).unwrap_or_else(|e| panic!("{e}"));
        raw.cells.iter().map(|c| c.get().to_owned()).collect()
    }

    /// Every committed cell goes the byte-level path, and it gives the parsed path's hash.
    #[test]
    fn committed_cells_hash_by_the_byte_level_path_as_by_the_parse() {
        use verify_core::canonical_text::{write, Limits, Scratch};
        let limits = Limits {
            max_string_bytes: crate::load::MAX_STRING_BYTES,
            max_depth: crate::load::CELL_DEPTH - 1,
        };
        let mut scratch = Scratch::default();
        for (i, text) in committed_cell_texts().iter().enumerate() {
            let mut out = Vec::new();
            assert!(
                write(text, limits, &mut scratch, &mut out).is_some(),
                "cell {i}"
            );
            assert!(text_hash_parsed(text).is_some(), "cell {i}");
            assert_eq!(text_hash(text), text_hash_parsed(text), "cell {i}");
        }
    }

    /// Edits that leave the byte-level path (or not) on the committed cells: the hash is the
    /// parsed path's whatever the text becomes, including its `None`.
    #[test]
    fn text_hash_equals_the_parsed_hash_on_edited_cells() {
        let cells = committed_cell_texts();
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let deep_objects = |n: usize| format!("{}1{}", "{\"k\":".repeat(n), "}".repeat(n));
        type Edit = Box<dyn Fn(&str) -> String>;
        let edits: Vec<Edit> = vec![
            Box::new(|t| t.to_owned()),
            Box::new(|t| t.replacen("\"a", "\"\\u0061", 3)),
            Box::new(|t| t.replacen(':', " :\n\t", 5)),
            Box::new(|t| t.replacen(",\"", " , \"", 5)),
            Box::new(|t| t.replacen("1000", "1000.0", 1)),
            Box::new(|t| t.replacen("1000", "1e3", 1)),
            Box::new(|t| t.replacen(":0", ":-0", 1)),
            Box::new(|t| t.replacen(":1", ":01", 1)),
            Box::new(|t| t.replacen(":1", ":9007199254740992", 1)),
            Box::new(|t| t.replacen(":1", ":-9007199254740991", 1)),
            Box::new(|t| t.replacen('{', "{\"crash\":\"x\",", 1)),
            Box::new(|t| t.replacen('{', "{\"\u{1f600}\":1,\"\u{fb01}\":2,", 1)),
            Box::new(|t| t.replacen("\"crash\"", "\"cr\\u0061sh\"", 1)),
            Box::new(|t| t.replacen('/', "\\/", 2)),
            Box::new(|t| t.replacen('{', "{\"d\":[\"\u{7f}\\n\\u001f\u{2028}\"],", 1)),
            Box::new(move |t| t.replacen('{', &format!("{{\"deep\":{},", deep(97)), 1)),
            Box::new(move |t| t.replacen('{', &format!("{{\"deep\":{},", deep(98)), 1)),
            Box::new(move |t| t.replacen('{', &format!("{{\"deep\":{},", deep(99)), 1)),
            Box::new(move |t| t.replacen('{', &format!("{{\"deep\":{},", deep_objects(98)), 1)),
            Box::new(move |t| t.replacen('{', &format!("{{\"deep\":{},", deep_objects(99)), 1)),
            Box::new(|t| t.replacen('}', "", 1)),
            Box::new(|t| format!("{t} x")),
        ];
        for (i, text) in cells.iter().enumerate().step_by(7) {
            for (e, edit) in edits.iter().enumerate() {
                let edited = edit(text);
                assert_eq!(
                    text_hash(&edited),
                    text_hash_parsed(&edited),
                    "cell {i}, edit {e}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// A byte of a committed cell changed anywhere: the hash is the parsed path's (and never
        /// the unchanged cell's, unless the change is only whitespace or the parse agrees).
        #[test]
        fn a_changed_byte_hashes_as_the_parse_decides(
            cell in proptest::prelude::any::<proptest::sample::Index>(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prelude::any::<u8>(),
        ) {
            let cells = committed_cell_texts();
            let text = &cells[cell.index(cells.len())];
            let mut bytes = text.clone().into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            if let Ok(changed) = String::from_utf8(bytes) {
                let ours = text_hash(&changed);
                proptest::prop_assert_eq!(ours, text_hash_parsed(&changed));
                let whitespace = |b: u8| matches!(b, b' ' | b'\n' | b'\t' | b'\r');
                if ours.is_some() && ours == text_hash(text) {
                    proptest::prop_assert!(
                        text.as_bytes()[i] == byte || (whitespace(byte) && whitespace(text.as_bytes()[i])),
                        "a changed byte hashed as the original"
                    );
                }
            }
        }
    }

    #[test]
    fn text_hash_is_the_canonical_hash_of_the_value() {
        let text = r#"{"b": [1, -2, null, true, "\u00e9\n\"x\""], "a": {"\ud83d\ude00": 0, "\uffff": -0, "z": {}}, "": []}"#;
        let value: Value = serde_json::from_str(text).unwrap_or_default();
        assert!(
            canonical::to_vec(&value).is_err(),
            "-0 reads as a float, which has no canonical form"
        );
        assert_eq!(text_hash(text), None);
        let text = text.replace("-0", "-7");
        let value: Value = serde_json::from_str(&text).unwrap_or_default();
        let expected: Option<[u8; 32]> = canonical::to_vec(&value)
            .map(|b| Sha256::digest(b).into())
            .ok();
        assert!(expected.is_some());
        assert_eq!(text_hash(&text), expected);
        let nested =
            r#"[{"y": 1, "x": {"d": [{"q": 1, "p": 2}], "c": 2}}, {"b": 0, "a": {"e": 1}}, {}]"#;
        let value: Value = serde_json::from_str(nested).unwrap_or_default();
        let expected: Option<[u8; 32]> = canonical::to_vec(&value)
            .map(|b| Sha256::digest(b).into())
            .ok();
        assert_eq!(text_hash(nested), expected);
        assert_eq!(text_hash(r#"{"a": 1.5}"#), None);
        assert_eq!(text_hash("9007199254740992"), None);
        assert!(text_hash("-9007199254740991").is_some());
        // What the strict reader refuses has no hash either (it then decides).
        assert_eq!(text_hash(r#"{"a": 1, "b": 2, "a": 1}"#), None);
        let long = "x".repeat(crate::load::MAX_STRING_BYTES + 1);
        assert_eq!(text_hash(&format!("[\"{long}\"]")), None);
        assert_eq!(text_hash(&format!("{{\"{long}\": 1}}")), None);
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(text_hash(&deep(crate::load::CELL_DEPTH)).is_some());
        assert_eq!(text_hash(&deep(crate::load::CELL_DEPTH + 1)), None);
    }
}
