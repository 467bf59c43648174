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
//! strings: over the spans between the values it reads and over each element on its own, each
//! starting and ending outside any string, so the sum is the whole text's count. An element
//! holding more than [`MAX_ELEMENT_VALUES`] values is refused here, before anything is built
//! from it, and so is another member holding more than that (the `manifest`, which lists a hash
//! per cell, may hold two more for each element), and the elements are gathered into the groups the checks read at
//! once, bounded by the values they hold ([`VALUES_PER_GROUP`]).

use super::limits::{
    count_values, count_values_and_overlong, elements_per_group, overlong_text, too_many_values,
    MAX_ELEMENT_VALUES, VALUES_PER_GROUP,
};
use super::{Key, LoadError};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::ops::Range;

/// The arrays whose elements are read apart.
pub(super) const ARRAYS: [&str; 2] = ["cells", "trials"];

/// Arrays shorter than this many bytes are read on one thread.
const PARALLEL_FROM_BYTES: usize = 4 * 1024 * 1024;

/// The elements of an array are listed only while they take at least this many bytes of text
/// each on average. No cell or trial the runner writes takes under 500 bytes (the members a
/// cell must hold alone take more), so an array of smaller ones is no run's: it is not split, and
/// the whole file's reading refuses it at its first element that does not read, without a list
/// of them (16 bytes each: a 1 MB gzip of 1.85 million bare values listed them in 30 MB, twice
/// its text).
const MIN_ELEMENT_BYTES: usize = 64;

/// A text of more top-level members than this is not split: no format has more than a few dozen,
/// and a list of members takes many times their text (`{"a":0,"b":0,…}`). It is read whole,
/// whose density check comes first.
const MOST_MEMBERS: usize = 1024;

/// One top-level member: its key, its value's text, and, for an array named in [`ARRAYS`], its
/// elements.
pub(super) struct Member<'t> {
    pub(super) key: Cow<'t, str>,
    pub(super) value: &'t str,
    pub(super) elements: Option<Elements<'t>>,
}

/// A file read as an object of members.
pub(super) struct Members<'t> {
    /// The members, in file order; no key twice.
    pub(super) members: Vec<Member<'t>>,
    /// One more than the `,`, `[` and `:` outside strings (the density check's count).
    pub(super) values: usize,
}

/// Consecutive elements of a file's `cells` or `trials` checked together: at most the array's
/// [`elements_per_group`], holding at most [`VALUES_PER_GROUP`] values (or a single element of
/// at most [`MAX_ELEMENT_VALUES`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementGroup {
    /// The elements' indices.
    pub elements: Range<usize>,
    /// The values they hold, as the density check counts them.
    pub values: usize,
}

/// The elements of an array read apart, in groups.
#[derive(Clone, Default)]
pub(super) struct Elements<'t> {
    /// Each element's text, in order.
    pub(super) texts: Vec<&'t RawValue>,
    /// The groups, together covering `texts` once, in order.
    pub(super) groups: Vec<ElementGroup>,
}

impl<'t> Elements<'t> {
    /// Add `more` after these elements.
    fn append(&mut self, more: Elements<'t>) {
        let offset = self.texts.len();
        self.groups
            .extend(more.groups.into_iter().map(|g| ElementGroup {
                elements: g.elements.start + offset..g.elements.end + offset,
                values: g.values,
            }));
        if self.texts.is_empty() {
            self.texts = more.texts;
        } else {
            self.texts.extend(more.texts);
        }
    }
}

/// `text` as an object of members; `None` when it is not one (any error), or when an array
/// holds more than `most` elements (then the density check refuses the text); a limit error when
/// an element of an array holds more than [`MAX_ELEMENT_VALUES`] values, or another member more
/// than that (the `manifest` more than that and two for each element: [`member_values_allowed`]).
/// `None` too when an array's elements take under [`MIN_ELEMENT_BYTES`] each, or there are more
/// than [`MOST_MEMBERS`] members. What it lists takes half the text at most (16 bytes an element), so
/// it needs no density check first.
pub(super) fn members(text: &str, most: usize) -> Option<Result<Members<'_>, LoadError>> {
    split(text, (most, MIN_ELEMENT_BYTES), None)
}

/// [`members`] with no least size of an element, its long arrays read in `parts` parts when
/// given (at any length).
#[cfg(test)]
fn members_in(
    text: &str,
    most: usize,
    parts: Option<usize>,
) -> Option<Result<Members<'_>, LoadError>> {
    split(text, (most, 1), parts)
}

/// [`members`] with arrays read in `parts` parts when given (at any length).
#[cfg(test)]
fn members_parts(text: &str, parts: Option<usize>) -> Option<Result<Members<'_>, LoadError>> {
    split(text, (usize::MAX, MIN_ELEMENT_BYTES), parts)
}

/// [`members`], an array's elements taking `element_bytes` bytes at least on average, its long
/// arrays read in `parts` parts when given (at any length), otherwise in as many as there are
/// threads when they are long.
fn split(
    text: &str,
    (most, element_bytes): (usize, usize),
    parts: Option<usize>,
) -> Option<Result<Members<'_>, LoadError>> {
    let mut at = open(text, skip_space(text, 0), b'{')?;
    let mut members: Vec<Member<'_>> = Vec::new();
    // Keys seen, for the duplicate check: a file of many members must not make it quadratic.
    let mut seen: std::collections::HashSet<Cow<'_, str>> = std::collections::HashSet::new();
    let mut values = 1 + separators(text.get(..at)?);
    // Members other than the arrays past the element limit, checked once the arrays' lengths
    // are known (the manifest lists a hash per cell).
    let mut large: Vec<(Cow<'_, str>, usize)> = Vec::new();
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
                let most = most.min((text.len() - start) / element_bytes.max(1) + 1);
                let bounds = (most, element_bytes);
                let (elements, end, counted) = match elements(text, &key, start, bounds, parts)? {
                    Ok(found) => found,
                    Err(refused) => return Some(Err(refused)),
                };
                values += counted;
                (text.get(start..end)?, Some(elements), end)
            } else {
                let (raw, end) = raw_at(text, start)?;
                let inner = counted_without_overlong(raw.get())? - 1;
                if inner >= MAX_ELEMENT_VALUES {
                    large.push((key.clone(), inner + 1));
                }
                values += inner;
                (raw.get(), None, end)
            };
            if !seen.insert(key.clone()) || seen.len() > MOST_MEMBERS {
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
    if skip_space(text, at) != text.len() {
        return None;
    }
    let elements: usize = members
        .iter()
        .filter_map(|m| m.elements.as_ref())
        .map(|e| e.texts.len())
        .sum();
    if let Some(refused) = past_member_limit(large, elements) {
        return Some(Err(refused));
    }
    Some(Ok(Members { members, values }))
}

/// The refusal of the first of the `large` members (each with the values it holds) past what
/// it may hold in a file whose arrays hold `elements` elements ([`member_values_allowed`]).
fn past_member_limit(large: Vec<(Cow<'_, str>, usize)>, elements: usize) -> Option<LoadError> {
    let allowed = |key: &str| match key {
        "manifest" => member_values_allowed(elements),
        _ => MAX_ELEMENT_VALUES,
    };
    let (key, held) = large.into_iter().find(|(key, held)| *held > allowed(key))?;
    Some(too_many_values(key.into_owned(), held))
}

/// The limits [`members`] sets on the values of each element of an array named in [`ARRAYS`]
/// and of each other member, for a file that is read whole (it did not split: more than
/// [`MOST_MEMBERS`] members, elements under [`MIN_ELEMENT_BYTES`] each, …): without it such a
/// file was built whole past them (a 1 MB gzip of a results file with 1.9 million short strings
/// in `columns` and a few tiny cells took 126 MB). Nothing is listed: an array's elements are
/// counted one at a time. A text that is not an object of members passes (the strict reading
/// names what is wrong with it). Run after the density check and the strict scan, whose limits
/// (no string past [`super::MAX_STRING_BYTES`], no key twice) it relies on.
pub(super) fn within_member_limits(text: &str) -> Result<(), LoadError> {
    member_limits(text).unwrap_or(Ok(()))
}

/// Of a document that is an object of members: the bytes of text of its members but its cells
/// or trials and its manifest, the manifest's, and how many cells or trials it lists (as
/// [`super::head_within_budget`] takes them); `None` when `text` is not such an object.
pub(super) fn head_spans(text: &str) -> Option<(usize, usize, usize)> {
    let mut at = open(text, skip_space(text, 0), b'{')?;
    let (mut head, mut manifest, mut elements) = (0usize, 0usize, 0usize);
    if byte(text, skip_space(text, at)) == Some(b'}') {
        return Some((0, 0, 0));
    }
    loop {
        let (key, after_key) = key_at(text, skip_space(text, at))?;
        let colon = open(text, skip_space(text, after_key), b':')?;
        let start = skip_space(text, colon);
        let end = if ARRAYS.contains(&key.as_ref()) && byte(text, start) == Some(b'[') {
            let (counted, end) = count_elements(text, &key, start)?.ok()?;
            elements += counted;
            end
        } else {
            let (_, end) = raw_at(text, start)?;
            let bytes = end.saturating_sub(start);
            if key == "manifest" {
                manifest += bytes;
            } else {
                head += bytes;
            }
            end
        };
        at = skip_space(text, end);
        match byte(text, at)? {
            b',' => at += 1,
            b'}' => break,
            _ => return None,
        }
    }
    Some((head, manifest, elements))
}

/// The same of a document the split took ([`members`]).
pub(super) fn head_spans_of(split: &Members<'_>) -> (usize, usize, usize) {
    let (mut head, mut manifest, mut elements) = (0usize, 0usize, 0usize);
    for m in &split.members {
        if let Some(e) = &m.elements {
            elements += e.texts.len();
        } else if m.key == "manifest" {
            manifest += m.value.len();
        } else if !ARRAYS.contains(&m.key.as_ref()) {
            head += m.value.len();
        }
    }
    (head, manifest, elements)
}

/// [`within_member_limits`]; `None` when `text` is not an object of members.
fn member_limits(text: &str) -> Option<Result<(), LoadError>> {
    let mut at = open(text, skip_space(text, 0), b'{')?;
    let (mut elements, mut large) = (0usize, Vec::new());
    if byte(text, skip_space(text, at)) == Some(b'}') {
        return Some(Ok(()));
    }
    loop {
        let (key, after_key) = key_at(text, skip_space(text, at))?;
        let colon = open(text, skip_space(text, after_key), b':')?;
        let start = skip_space(text, colon);
        let end = if ARRAYS.contains(&key.as_ref()) && byte(text, start) == Some(b'[') {
            match count_elements(text, &key, start)? {
                Ok((counted, end)) => {
                    elements += counted;
                    end
                }
                Err(refused) => return Some(Err(refused)),
            }
        } else {
            let (raw, end) = raw_at(text, start)?;
            let held = count_values(raw.get());
            if held > MAX_ELEMENT_VALUES {
                large.push((key, held));
            }
            end
        };
        at = skip_space(text, end);
        match byte(text, at)? {
            b',' => at += 1,
            b'}' => break,
            _ => return None,
        }
    }
    Some(past_member_limit(large, elements).map_or(Ok(()), Err))
}

/// How many elements the array `array` whose `[` is at `open` holds, and the position after its
/// `]`; a limit error for the first element holding more than [`MAX_ELEMENT_VALUES`] values;
/// `None` when it does not read as an array of values.
fn count_elements(
    text: &str,
    array: &str,
    open: usize,
) -> Option<Result<(usize, usize), LoadError>> {
    let mut at = skip_space(text, open + 1);
    if byte(text, at) == Some(b']') {
        return Some(Ok((0, at + 1)));
    }
    let mut counted = 0;
    loop {
        let (raw, end) = raw_at(text, skip_space(text, at))?;
        let values = count_values(raw.get());
        if values > MAX_ELEMENT_VALUES {
            return Some(Err(too_many_values(format!("{array}[{counted}]"), values)));
        }
        counted += 1;
        at = skip_space(text, end);
        match byte(text, at)? {
            b']' => return Some(Ok((counted, at + 1))),
            b',' => at += 1,
            _ => return None,
        }
    }
}

/// Values the top-level `manifest` may hold in a file whose arrays hold `elements` elements:
/// [`MAX_ELEMENT_VALUES`], and [`MEMBER_VALUES_PER_ELEMENT`] more for each element (a results
/// file's manifest names every cell's hash). Every other member may hold [`MAX_ELEMENT_VALUES`]:
/// an array of cells does not pay for a receipt's entries.
fn member_values_allowed(elements: usize) -> usize {
    MAX_ELEMENT_VALUES.saturating_add(elements.saturating_mul(MEMBER_VALUES_PER_ELEMENT))
}

/// The values the manifest may hold for each cell or trial: it holds one per cell (its hash); two
/// leave room for its separators.
const MEMBER_VALUES_PER_ELEMENT: usize = 2;

/// How a part of an array's elements ended.
enum Ended {
    /// At the array's `]`: the position after it.
    Closed(usize),
    /// Just after a comma, at the position the next part starts at.
    Landed,
    /// Just after a comma past the position the next part starts at (that part started inside
    /// an element): here.
    Passed(usize),
    /// At an element holding this many values, past [`MAX_ELEMENT_VALUES`] (not among the part's
    /// elements: it would be the next).
    TooMany(usize),
}

/// A run of an array's elements: the elements, how it ended, and the `,` and `[` it holds outside
/// strings (its elements' own included).
struct Part<'t> {
    elements: Elements<'t>,
    ended: Ended,
    separators: usize,
}

/// The groups of [`Elements::groups`] as a part's elements are found.
struct Groups {
    done: Vec<ElementGroup>,
    /// The most elements in a group.
    most: usize,
    /// Where the open group starts, and the values it holds.
    start: usize,
    values: usize,
}

impl Groups {
    fn new(most: usize) -> Groups {
        Groups {
            done: Vec::new(),
            most: most.max(1),
            start: 0,
            values: 0,
        }
    }

    /// Element `index`, holding `values` values, joins the open group, or starts the next when
    /// the open one is full or would pass [`VALUES_PER_GROUP`].
    fn add(&mut self, index: usize, values: usize) {
        let full = index - self.start == self.most;
        if index > self.start && (full || self.values + values > VALUES_PER_GROUP) {
            self.close(index);
        }
        self.values += values;
    }

    fn close(&mut self, end: usize) {
        self.done.push(ElementGroup {
            elements: self.start..end,
            values: self.values,
        });
        (self.start, self.values) = (end, 0);
    }

    /// The part of `texts`, ended as `ended`.
    fn part<'t>(mut self, texts: Vec<&'t RawValue>, ended: Ended, separators: usize) -> Part<'t> {
        if texts.len() > self.start {
            self.close(texts.len());
        }
        let groups = self.done;
        Part {
            elements: Elements { texts, groups },
            ended,
            separators,
        }
    }
}

/// The elements of the array `array` whose `[` is at `open`, the position after its `]`, and the
/// `,` and `[` it holds outside strings (its elements' own included); a limit error for an
/// element holding more than [`MAX_ELEMENT_VALUES`] values. `None` past `most` elements, or
/// when a part read at once lists more than one per `element_bytes` of its own span (and two):
/// what the parts list together is then bounded by the text, whatever the number of threads.
fn elements<'t>(
    text: &'t str,
    array: &str,
    open: usize,
    (most, element_bytes): (usize, usize),
    parts: Option<usize>,
) -> Option<Result<(Elements<'t>, usize, usize), LoadError>> {
    let first = open + 1;
    let per_group = elements_per_group(array);
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
    let found: Vec<Option<Part<'_>>> = {
        use rayon::prelude::*;
        (0..starts.len())
            .into_par_iter()
            .map(|k| {
                let (start, stop) = (*starts.get(k)?, starts.get(k + 1).copied());
                // A part ends at the first comma past its stop (the last at the array's end):
                // one element more than its span.
                let span = stop.unwrap_or(text.len()) - start;
                let own = span / element_bytes.max(1) + 2;
                run(text, start, k == 0, stop, (most.min(own), per_group))
            })
            .collect()
    };
    let mut found = found.into_iter();
    let (mut all, mut counted) = (Elements::default(), 1);
    // Each part is taken only when the one before it ended where it starts.
    let mut part = found.next()??;
    loop {
        counted += part.separators;
        all.append(part.elements);
        if all.texts.len() > most {
            return None;
        }
        part = match part.ended {
            Ended::Closed(end) => return Some(Ok((all, end, counted))),
            Ended::TooMany(values) => {
                let path = format!("{array}[{}]", all.texts.len());
                return Some(Err(too_many_values(path, values)));
            }
            Ended::Landed => found.next()??,
            // The next part started inside an element: read on from here, on this thread.
            Ended::Passed(at) => run(text, at, false, None, (most, per_group))?,
        };
    }
}

/// The elements from `at` on (`first`: just after the `[`, where `]` may close an empty array;
/// otherwise just after a comma), until the array closes, an element holds more than
/// [`MAX_ELEMENT_VALUES`] values, or, past `stop`, a comma is passed; `None` past `most`
/// elements. They are grouped `per_group` elements at most.
fn run(
    text: &str,
    mut at: usize,
    first: bool,
    stop: Option<usize>,
    (most, per_group): (usize, usize),
) -> Option<Part<'_>> {
    let (mut found, mut groups, mut separators) = (Vec::new(), Groups::new(per_group), 0);
    if first && byte(text, skip_space(text, at)) == Some(b']') {
        let end = skip_space(text, at) + 1;
        return Some(groups.part(found, Ended::Closed(end), separators));
    }
    loop {
        let (raw, end) = raw_at(text, skip_space(text, at))?;
        // Counted on its own (the same count as over the whole span, element by element).
        let values = counted_without_overlong(raw.get())?;
        if values > MAX_ELEMENT_VALUES {
            return Some(groups.part(found, Ended::TooMany(values), separators));
        }
        groups.add(found.len(), values);
        separators += values - 1;
        found.push(raw);
        if found.len() > most {
            return None;
        }
        at = skip_space(text, end);
        match byte(text, at)? {
            b']' => return Some(groups.part(found, Ended::Closed(at + 1), separators)),
            b',' => (at, separators) = (at + 1, separators + 1),
            _ => return None,
        }
        if let Some(stop) = stop.filter(|&s| at >= s) {
            let ended = if at == stop {
                Ended::Landed
            } else {
                Ended::Passed(at)
            };
            return Some(groups.part(found, ended, separators));
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
    // A key whose text alone is past the limit is not decoded (a copy of it, as long as its
    // text when it holds an escape): the text is then read whole, whose density check refuses
    // it first.
    if overlong_text(raw.get()) {
        return None;
    }
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

/// The values of `raw` as [`count_values`] counts them; `None` when it holds a string whose text
/// alone is past the limit ([`super::limits::OVERLONG_STRING_TEXT`]): nothing with one is handed
/// on to be read (a reader decoding it copies it whole), and the text is read whole, whose
/// density check refuses it first.
fn counted_without_overlong(raw: &str) -> Option<usize> {
    match count_values_and_overlong(raw) {
        (values, None) => Some(values),
        (_, Some(_)) => None,
    }
}

/// The `,`, `[` and `:` outside strings in `span`, which starts outside any string.
fn separators(span: &str) -> usize {
    count_values(span) - 1
}

#[cfg(test)]
#[path = "members_tests.rs"]
mod tests;
