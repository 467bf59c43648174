//! Canonical JSON as in RFC 8785 (JSON Canonicalization Scheme), restricted to what the record
//! format allows: no floating-point numbers, integers within the exactly representable range of an
//! IEEE double (|n| <= 2^53 - 1).
//!
//! Rules implemented here:
//! - no whitespace between tokens;
//! - object members sorted by their keys compared as UTF-16 code units;
//! - strings escape only `"`, `\` and the control characters U+0000..U+001F (`\b \t \n \f \r` as
//!   two-character escapes, the rest as `\u00xx` with lowercase hex); everything else, including
//!   non-ASCII text and `/`, is written as UTF-8;
//! - integers in plain decimal form.

use serde_json::Value;
use std::cmp::Ordering;
use std::fmt::Write as _;

/// Why a value cannot be put into canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// The value holds a floating-point number; hashed records use integers only.
    #[error("a floating-point number ({0}) is not allowed in hashed data; use integers (cents, milliseconds)")]
    Float(String),
    /// An integer is outside the range a JSON number can carry exactly (|n| <= 2^53 - 1).
    #[error("the integer {0} is outside the exactly representable range +/-(2^53 - 1)")]
    IntegerRange(String),
}

/// Largest integer that an IEEE double (and so every JSON reader) represents exactly.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The canonical text of `value`.
pub fn to_string<N: Node>(value: &N) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(256);
    write_node(&mut out, value)?;
    Ok(out)
}

/// The canonical bytes of `value` (UTF-8 of [`to_string`]).
pub fn to_vec<N: Node>(value: &N) -> Result<Vec<u8>, CanonicalError> {
    to_string(value).map(String::into_bytes)
}

/// Append the canonical text of the object `map` without the top-level members named in `skip`
/// to `out` (the same as [`to_string`] of a copy without those members, without copying).
pub fn write_object_without(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    skip: &[&str],
) -> Result<(), CanonicalError> {
    write_members_without(
        out,
        map.iter().map(|(k, v)| (k.as_str(), v)),
        map.len(),
        skip,
    )
}

/// A JSON value the canonical writer walks: `serde_json::Value`, and the borrowed
/// [`crate::view::View`] the receipt checks read. Both are written by the one writer below.
pub trait Node: Sized {
    /// What kind of value this is, with its scalar or its items.
    fn shape(&self) -> Shape<'_, Self>;
    /// The members of an object, in any order (nothing when this is not an object).
    fn members(&self) -> impl Iterator<Item = (&str, &Self)>;
}

/// One JSON value as the canonical writer sees it.
pub enum Shape<'n, N> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(&'n serde_json::Number),
    /// A string.
    String(&'n str),
    /// An array's items.
    Array(&'n [N]),
    /// An object with this many members ([`Node::members`]).
    Object(usize),
}

impl Node for Value {
    fn shape(&self) -> Shape<'_, Value> {
        match self {
            Value::Null => Shape::Null,
            Value::Bool(b) => Shape::Bool(*b),
            Value::Number(n) => Shape::Number(n),
            Value::String(s) => Shape::String(s),
            Value::Array(items) => Shape::Array(items),
            Value::Object(map) => Shape::Object(map.len()),
        }
    }
    fn members(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.as_object()
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }
}

/// Append the canonical text of `value` to `out`.
pub fn write_node<N: Node>(out: &mut String, value: &N) -> Result<(), CanonicalError> {
    match value.shape() {
        Shape::Null => out.push_str("null"),
        Shape::Bool(true) => out.push_str("true"),
        Shape::Bool(false) => out.push_str("false"),
        Shape::Number(n) => {
            if let Some(i) = n.as_i64() {
                if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
                    return Err(CanonicalError::IntegerRange(i.to_string()));
                }
                // Writing to a String cannot fail.
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                // Only reached for values above i64::MAX, which are always out of range.
                return Err(CanonicalError::IntegerRange(u.to_string()));
            } else {
                return Err(CanonicalError::Float(n.to_string()));
            }
        }
        Shape::String(s) => write_string(out, s),
        Shape::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_node(out, item)?;
            }
            out.push(']');
        }
        Shape::Object(len) => write_members_without(out, value.members(), len, &[])?,
    }
    Ok(())
}

/// Append the canonical text of the object whose `len` members are `members`, without those
/// whose key is named in `skip`.
pub fn write_members_without<'n, N: Node + 'n>(
    out: &mut String,
    members: impl Iterator<Item = (&'n str, &'n N)>,
    len: usize,
    skip: &[&str],
) -> Result<(), CanonicalError> {
    let mut kept = members.filter(|(k, _)| !skip.contains(k));
    if len <= STACK_MEMBERS {
        let mut members: [(&str, Option<&N>); STACK_MEMBERS] = [("", None); STACK_MEMBERS];
        let mut n = 0;
        for (slot, (k, v)) in members.iter_mut().zip(kept.by_ref()) {
            *slot = (k, Some(v));
            n += 1;
        }
        // `len` is the object's size, so nothing is left; were anything left, it is not lost.
        if let Some(more) = kept.next() {
            let mut all: Vec<(&str, Option<&N>)> = members.to_vec();
            all.push((more.0, Some(more.1)));
            all.extend(kept.map(|(k, v)| (k, Some(v))));
            return write_members(out, &mut all);
        }
        write_members(out, &mut members[..n])
    } else {
        let mut members: Vec<(&str, Option<&N>)> = Vec::with_capacity(len);
        members.extend(kept.map(|(k, v)| (k, Some(v))));
        write_members(out, &mut members)
    }
}

/// Objects with at most this many members are sorted in a stack array (no allocation).
const STACK_MEMBERS: usize = 24;

/// Sort `members` by key (UTF-16 order) and write them as an object (every value is `Some`).
fn write_members<N: Node>(
    out: &mut String,
    members: &mut [(&str, Option<&N>)],
) -> Result<(), CanonicalError> {
    // Keys of a JSON object are distinct, so an unstable sort is deterministic.
    members.sort_unstable_by(|a, b| cmp_utf16(a.0, b.0));
    out.push('{');
    for (i, (key, item)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        if let Some(item) = item {
            write_node(out, *item)?;
        }
    }
    out.push('}');
    Ok(())
}

/// Compare two strings by their UTF-16 code units, as RFC 8785 §3.2.3 requires.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    // UTF-8 byte order is code point order. It differs from UTF-16 order only where one string
    // has a character above U+FFFF (lead byte >= 0xF0) and the other one in U+E000..=U+FFFF (lead
    // byte 0xEE or 0xEF) at the first difference: surrogates (D800-DFFF) sort below E000.
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(i) => {
            let (p, q) = (x[i], y[i]);
            let astral_vs_high_bmp = |s: u8, t: u8| s >= 0xF0 && (0xEE..=0xEF).contains(&t);
            if astral_vs_high_bmp(p, q) || astral_vs_high_bmp(q, p) {
                a.encode_utf16().cmp(b.encode_utf16())
            } else {
                p.cmp(&q)
            }
        }
    }
}

/// Append the canonical text of the string `s` to `out`.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    // Without early exit, so the compiler can check many bytes at once.
    let plain = s
        .bytes()
        .fold(true, |ok, b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if plain {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0C}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
#[path = "trusted_tests/canonical.rs"]
mod tests;
