//! A file's top-level members as text, and the elements of its long arrays (a results file's
//! `cells`, a nemesis file's `trials`) found on several threads at once.
//!
//! It reads what serde_json reads when the file is taken as an object of raw values with those
//! arrays as lists of raw values (the reader it replaced, kept in its tests): every key and every
//! value is read by serde_json itself, at its place in the text; only the characters between
//! them (whitespace, `{`, `:`, `,`, `[`, `]`, `}`) are read here. So a text reads here exactly
//! when it reads there, with the same members and elements.
//!
//! The elements of a long array are read in parts at once. Each part but the first starts just
//! after a comma that looks as if it separated two elements (`}` `,` `{` and the first element's
//! first key, whitespace allowed); a part is only taken when the part before it, read from a
//! place known to be right, ends exactly there. When it does not (the comma was inside a string,
//! or inside an element), the elements are read on from where that part stands, one at a time:
//! the answer never depends on a guess.
//!
//! It also counts, as [`super::limits`]' density check does, the `,`, `[` and `:` outside
//! strings: over the spans between the values it reads, each starting and ending outside any
//! string, so the sum is the whole text's count.

use super::Key;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The arrays whose elements are read apart.
pub(super) const ARRAYS: [&str; 2] = ["cells", "trials"];

/// Arrays shorter than this many bytes are read on one thread.
const PARALLEL_FROM_BYTES: usize = 4 * 1024 * 1024;

/// One top-level member: its key, its value's text, and, for an array named in [`ARRAYS`], the
/// text of each of its elements.
pub(super) struct Member<'t> {
    pub(super) key: Cow<'t, str>,
    pub(super) value: &'t str,
    pub(super) elements: Option<Vec<&'t RawValue>>,
}

/// A file read as an object of members.
pub(super) struct Members<'t> {
    /// The members, in file order; no key twice.
    pub(super) members: Vec<Member<'t>>,
    /// One more than the `,`, `[` and `:` outside strings (the density check's count).
    pub(super) values: usize,
}

/// `text` as an object of members; `None` when it is not one (any error), or when an array
/// holds more than `most` elements (then the density check refuses the text).
pub(super) fn members(text: &str, most: usize) -> Option<Members<'_>> {
    members_in(text, most, None)
}

/// [`members`], its long arrays read in `parts` parts when given (at any length), otherwise in
/// as many as there are threads when they are long.
fn members_in(text: &str, most: usize, parts: Option<usize>) -> Option<Members<'_>> {
    let mut at = open(text, skip_space(text, 0), b'{')?;
    let mut members: Vec<Member<'_>> = Vec::new();
    // Keys seen, for the duplicate check: a file of many members must not make it quadratic.
    let mut seen: std::collections::HashSet<Cow<'_, str>> = std::collections::HashSet::new();
    let mut values = 1 + separators(text.get(..at)?);
    if byte(text, skip_space(text, at)) == Some(b'}') {
        at = skip_space(text, at) + 1;
    } else {
        loop {
            let (key, after_key) = key_at(text, skip_space(text, at))?;
            let colon = open(text, skip_space(text, after_key), b':')?;
            values += 1;
            let start = skip_space(text, colon);
            let array = ARRAYS.contains(&key.as_ref()) && byte(text, start) == Some(b'[');
            let (value, elements, end) = if array {
                let (elements, end, counted) = elements(text, start, most, parts)?;
                values += counted;
                (text.get(start..end)?, Some(elements), end)
            } else {
                let (raw, end) = raw_at(text, start)?;
                values += separators(raw.get());
                (raw.get(), None, end)
            };
            if !seen.insert(key.clone()) {
                return None;
            }
            members.push(Member {
                key,
                value,
                elements,
            });
            at = skip_space(text, end);
            match byte(text, at)? {
                b',' => values += 1,
                b'}' => break,
                _ => return None,
            }
            at += 1;
        }
        at += 1;
    }
    (skip_space(text, at) == text.len()).then_some(Members { members, values })
}

/// How a part of an array's elements ended.
enum Ended {
    /// At the array's `]`: the position after it.
    Closed(usize),
    /// Just after a comma, at the position the next part starts at.
    Landed,
    /// Just after a comma past the position the next part starts at (that part started inside
    /// an element): here.
    Passed(usize),
}

/// A run of an array's elements: their texts, how it ended, and the separators it holds.
type Part<'t> = (Vec<&'t RawValue>, Ended, usize);

/// The elements of the array whose `[` is at `open`: their texts, the position after its `]`,
/// and the `,` and `[` it holds outside strings (its elements' own included).
fn elements(
    text: &str,
    open: usize,
    most: usize,
    parts: Option<usize>,
) -> Option<(Vec<&RawValue>, usize, usize)> {
    let first = open + 1;
    let long = text.len().saturating_sub(open) >= PARALLEL_FROM_BYTES;
    let parts = parts.unwrap_or(if long {
        rayon::current_num_threads()
    } else {
        1
    });
    let mut starts = vec![first];
    // Parts start where an element seems to start as the first one does: a comma between a `}`
    // and a `{` whose first key is the first element's (the cells' `"crash"`), so that a guess is
    // seldom inside an element (whose own arrays of objects hold commas between `}` and `{`).
    let key = first_key(text, first);
    if let (true, Some(key)) = (parts > 1, key) {
        let span = (text.len() - open) / parts;
        for k in 1..parts {
            let guess = comma_between_objects(text, open + k * span, key)?;
            if guess > *starts.last()? {
                starts.push(guess);
            }
        }
    }
    let runs: Vec<Option<Part<'_>>> = {
        use rayon::prelude::*;
        (0..starts.len())
            .into_par_iter()
            .map(|k| {
                run(
                    text,
                    *starts.get(k)?,
                    k == 0,
                    starts.get(k + 1).copied(),
                    most,
                )
            })
            .collect()
    };
    let (mut all, mut counted) = (Vec::new(), 1);
    for run_k in runs {
        let (found, ended, separators) = run_k?;
        all.extend(found);
        counted += separators;
        if all.len() > most {
            return None;
        }
        match ended {
            Ended::Landed => continue,
            Ended::Closed(end) => return Some((all, end, counted)),
            Ended::Passed(at) => {
                let (found, ended, separators) = run(text, at, false, None, most)?;
                all.extend(found);
                counted += separators;
                let Ended::Closed(end) = ended else {
                    return None;
                };
                return (all.len() <= most).then_some((all, end, counted));
            }
        }
    }
    None
}

/// The elements from `at` on (`first`: just after the `[`, where `]` may close an empty array;
/// otherwise just after a comma), until the array closes or, past `stop`, a comma is passed.
fn run(
    text: &str,
    mut at: usize,
    first: bool,
    stop: Option<usize>,
    most: usize,
) -> Option<Part<'_>> {
    let (mut found, from) = (Vec::new(), at);
    if first && byte(text, skip_space(text, at)) == Some(b']') {
        let end = skip_space(text, at) + 1;
        return Some((found, Ended::Closed(end), separators(text.get(from..end)?)));
    }
    loop {
        let (raw, end) = raw_at(text, skip_space(text, at))?;
        found.push(raw);
        if found.len() > most {
            return None;
        }
        at = skip_space(text, end);
        match byte(text, at)? {
            b']' => {
                let end = at + 1;
                return Some((found, Ended::Closed(end), separators(text.get(from..end)?)));
            }
            b',' => at += 1,
            _ => return None,
        }
        if let Some(stop) = stop.filter(|&s| at >= s) {
            let ended = if at == stop {
                Ended::Landed
            } else {
                Ended::Passed(at)
            };
            return Some((found, ended, separators(text.get(from..at)?)));
        }
    }
}

/// The text of the first key of the object starting at `at` (after whitespace), quotes included,
/// when it has no backslash; `None` otherwise.
fn first_key(text: &str, at: usize) -> Option<&str> {
    let open = open(text, skip_space(text, at), b'{')?;
    let quote = skip_space(text, open);
    let rest = text.as_bytes().get(quote + 1..)?;
    let len = verify_core::scan::plain_len(rest);
    (byte(text, quote) == Some(b'"') && rest.get(len) == Some(&b'"'))
        .then(|| text.get(quote..quote + len + 2))
        .flatten()
}

/// The first position from `from` on that follows a comma between a `}` and a `{` whose first
/// key is spelled `key` (whitespace allowed around each); the end of the text when there is none.
fn comma_between_objects(text: &str, from: usize, key: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(offset) = bytes.get(at..)?.iter().position(|&b| b == b',') {
        let comma = at + offset;
        let before = bytes.get(..comma)?;
        let closes = before.iter().rev().find(|b| !is_space(**b)) == Some(&b'}');
        let brace = skip_space(text, comma + 1);
        let keyed = || {
            let at = skip_space(text, brace + 1);
            text.get(at..).is_some_and(|t| t.starts_with(key))
        };
        if closes && byte(text, brace) == Some(b'{') && keyed() {
            return Some(comma + 1);
        }
        at = comma + 1;
    }
    Some(text.len())
}

/// The raw value starting at `at` (no whitespace before it), and the position after it.
fn raw_at(text: &str, at: usize) -> Option<(&RawValue, usize)> {
    let rest = text.get(at..)?;
    let mut de = serde_json::Deserializer::from_str(rest);
    let raw = <&RawValue>::deserialize(&mut de).ok()?;
    // Borrowed from `rest`, where the reader stood: its offset is where it starts.
    let offset = (raw.get().as_ptr() as usize).checked_sub(rest.as_ptr() as usize)?;
    let end = offset.checked_add(raw.get().len())?;
    (offset == 0 && end <= rest.len()).then_some((raw, at + end))
}

/// The object key starting at `at`, read as serde_json reads a key, and the position after it.
fn key_at(text: &str, at: usize) -> Option<(Cow<'_, str>, usize)> {
    if byte(text, at) != Some(b'"') {
        return None;
    }
    let (raw, end) = raw_at(text, at)?;
    let Key(key) = serde_json::from_str::<Key<'_>>(raw.get()).ok()?;
    Some((key, end))
}

/// The position after `want`, which must stand at `at`.
fn open(text: &str, at: usize, want: u8) -> Option<usize> {
    (byte(text, at) == Some(want)).then_some(at + 1)
}

fn byte(text: &str, at: usize) -> Option<u8> {
    text.as_bytes().get(at).copied()
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first position from `at` on that is not JSON whitespace.
fn skip_space(text: &str, mut at: usize) -> usize {
    while byte(text, at).is_some_and(is_space) {
        at += 1;
    }
    at
}

/// The `,`, `[` and `:` outside strings in `span`, which starts outside any string.
fn separators(span: &str) -> usize {
    super::limits::count_values(span) - 1
}

#[cfg(test)]
#[path = "members_tests.rs"]
mod tests;
