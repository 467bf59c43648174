//! The limits every document is read under before anything is built from it: UTF-8, value
//! density, syntax, no duplicate key, no long string, no integer beyond 2^53; and the one pass
//! that finds what kind of document the text is.

use super::*;

/// A document's `format` member: a string, or what other kind of value it is.
pub(super) enum FormatMember {
    /// A string, as it should be.
    Text(String),
    /// Another value, as JSON text (for the message that refuses it).
    Other(String),
}

/// What one pass over the whole document found at its top level.
#[derive(Default)]
pub(super) struct TopLevel {
    pub(super) is_object: bool,
    /// The document's `format` member, if it has one.
    pub(super) format: Option<FormatMember>,
    pub(super) scenario: bool,
    pub(super) cells: bool,
    pub(super) effect_id: bool,
    pub(super) entries: bool,
}

/// The longest string (value or object key) a document may hold, in bytes of its UTF-8 text.
/// Nothing the runner or the gate writes comes near it (the longest are a case text and a worker's
/// stderr tail); a longer string is refused (exit 2) before anything repeats it in a report.
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// Largest integer magnitude accepted anywhere in a document: 2^53 - 1, what every JSON reader
/// (JavaScript's included) holds exactly.
pub(super) const MAX_SAFE_INTEGER: i64 = crate::canonical::MAX_SAFE_INTEGER;

/// Marks a scan error as a limit (not a syntax or shape error).
pub(super) const LIMIT_PREFIX: &str = "limit: ";

pub(super) fn check_string_len<E: de::Error>(v: &str) -> Result<(), E> {
    if v.len() > MAX_STRING_BYTES {
        return Err(de::Error::custom(format!(
            "{LIMIT_PREFIX}a string of {} bytes is longer than the limit of {MAX_STRING_BYTES}",
            v.len()
        )));
    }
    Ok(())
}

/// Objects with more members than this are checked for duplicate keys with a hash set.
pub(super) const LINEAR_KEY_CHECK: usize = 32;

/// One pass over the document that refuses duplicate object keys anywhere (a hashed entry with
/// two `amount` keys would mean different things to different readers) and records the top-level
/// keys that tell formats apart. Only the top level (`top` is `Some`) records anything.
pub(super) struct Scan<'a> {
    /// What the document holds at its top level, filled in when this is the top-level value.
    pub(super) top: Option<&'a mut TopLevel>,
    /// Arrays and objects this value may still open (serde_json's own limit applies too).
    pub(super) depth: usize,
}

/// The scan of a value inside one that may still open `depth` levels.
pub(super) fn inner<E: de::Error>(depth: usize) -> Result<Scan<'static>, E> {
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
                    // Read without building anything of a value that is not a string: a large
                    // array here once held a whole tree in memory only to be refused.
                    t.format = Some(map.next_value_seed(FormatSeed)?);
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
pub(super) fn scan(text: &str) -> Result<TopLevel, LoadError> {
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
pub(super) fn scan_tracked(text: &str) -> Result<TopLevel, LoadError> {
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

/// The most values (counted as the density check counts them) one element of a file's `cells`
/// or `trials`, or one other top-level member, may hold; a file with more is refused (exit 2)
/// before anything is built from it.
///
/// Why this number: the density limit alone lets a 1 MB gzip put about two million values in one
/// cell, and a cell is built as a tree of values when it is checked (a receipt's view is 32 bytes
/// a value, its copies more): one such cell took 359 MB. The largest element of any committed
/// file holds 1,089 values (a nemesis trial), the largest other member 2,521 (a nemesis file's
/// summary of 60 nemesis-column pairs): 65,536 is 60 times the first and 26 times the second,
/// and a group of cells or trials at this size is a few MB on each thread
/// ([`VALUES_PER_GROUP`]).
pub const MAX_ELEMENT_VALUES: usize = 1 << 16;

/// The most values the consecutive cells or trials checked together as one group may hold
/// (one element alone may reach [`MAX_ELEMENT_VALUES`]): a thread holds a group at a time, typed
/// and as views. The committed results files' cells hold at most some 280 values each, so their
/// groups (at most [`crate::receipt::RECEIPTS_PER_GROUP`] receipts) stay under it and are cut
/// only by their counts of cells or trials ([`elements_per_group`]).
pub const VALUES_PER_GROUP: usize = MAX_ELEMENT_VALUES;

/// The most trials of a nemesis file checked together as one group.
pub const TRIALS_PER_GROUP: usize = 32;

/// The most elements of the array `array` (`cells` or `trials`) checked together as one group:
/// a results file's cells about one signature batch of receipts at a time
/// ([`crate::receipt::RECEIPTS_PER_GROUP`]), a nemesis file's trials [`TRIALS_PER_GROUP`].
pub(super) fn elements_per_group(array: &str) -> usize {
    match array {
        "trials" => TRIALS_PER_GROUP,
        _ => crate::receipt::RECEIPTS_PER_GROUP,
    }
}

/// The refusal of an element or member `path` holding `values` values, past
/// [`MAX_ELEMENT_VALUES`].
pub(super) fn too_many_values(path: String, values: usize) -> LoadError {
    LoadError::Limit {
        path,
        message: format!(
            "about {values} JSON values in one cell, trial or member, more than the limit of \
             {MAX_ELEMENT_VALUES} (the runner's largest hold a few thousand): the file was edited \
             or not written by the runner; check the file the run published"
        ),
    }
}

/// Refuses a document with more values than its size allows ([`MIN_BYTES_PER_VALUE`]), counted
/// in one pass over its text before anything is built: every value but the first follows a `,`,
/// a `[` or a `:` outside strings, so their count bounds the values.
///
/// The same pass refuses a string whose text alone shows it is past [`MAX_STRING_BYTES`]
/// ([`OVERLONG_STRING_TEXT`]), before any reader decodes it: serde_json copies a string holding
/// an escape to decode it, and the strict reading's path names a key by a copy of it, so a
/// 15 MB key with one escape took 110 MB of a 1 MB gzip.
pub(super) fn values_within_density(text: &str) -> Result<usize, LoadError> {
    let (values, overlong) = count_values_and_overlong(text);
    if let Some(at) = overlong {
        return Err(overlong_string(text, at));
    }
    within_density(values, text.len())?;
    Ok(values)
}

/// The most values (as the density check counts them) of an original results file (the Python
/// implementation's), which is read whole as a tree of `serde_json::Value`s (about 200 bytes a
/// value): the published one holds 4,293; a 1 MB gzip of 29 cells each just under the limit of
/// an element took 392 MB.
pub const ORIGINAL_MOST_VALUES: usize = 65_536;

/// Refuses a document holding `values` values (as the density check counts them) past `most`,
/// before it is read whole as `what`.
pub(super) fn whole_read_within(values: usize, most: usize, what: &str) -> Result<(), LoadError> {
    if values > most {
        return Err(LoadError::Limit {
            path: "$".into(),
            message: format!(
                "about {values} JSON values, more than the {most} {what} may hold (it is read \
                 whole): the file was edited or not written by the runner; check the file the \
                 run published"
            ),
        });
    }
    Ok(())
}

/// Bytes of text a results, nemesis or shared_cap file's members may hold together, its cells or
/// trials and its manifest apart. The runner's largest hold 28.5 KB (a campaign's summary of 60
/// nemesis and column pairs; a merged campaign's head holds each shard's too, some 27 KB a
/// shard, so this takes some 150 shards), a matrix's a few KB. A head is held as text, typed,
/// and hashed through a tree of values and a canonical copy, some seven times its text: 250
/// strings of 60,000 bytes in one results file's summary (within the limits of a string and of
/// values) took 95 MB of a 1 MB gzip, pinned too; a head at this limit takes 30 MB.
pub const HEAD_BYTES: usize = 4 << 20;

/// Bytes of text a results file's manifest may hold per cell, besides [`MANIFEST_BYTES`]: one
/// hash of 64 hex digits a cell, quoted and comma-separated, is 67.
pub const MANIFEST_BYTES_PER_CELL: usize = 72;

/// Bytes of text a results file's manifest may hold besides one hash per cell (its own hash, the
/// head's, the signer and the signature take some 300).
pub const MANIFEST_BYTES: usize = 4096;

/// Refuses a file whose members but its cells or trials (`elements` of them) and its manifest
/// hold more than [`HEAD_BYTES`] of text (`head`), or whose manifest more than
/// [`MANIFEST_BYTES`] and [`MANIFEST_BYTES_PER_CELL`] for each cell (`manifest`).
pub(super) fn head_within_budget(
    head: usize,
    manifest: usize,
    elements: usize,
) -> Result<(), LoadError> {
    let refused = |path: &str, what: String| LoadError::Limit {
        path: path.to_owned(),
        message: format!(
            "{what} (the runner's hold a few kilobytes): the file was edited or not written by \
             the runner; check the file the run published"
        ),
    };
    if head > HEAD_BYTES {
        let what = format!(
            "{head} bytes of text in the members besides the cells, trials and manifest, more \
             than the {HEAD_BYTES} they may hold"
        );
        return Err(refused("$", what));
    }
    let most = MANIFEST_BYTES.saturating_add(MANIFEST_BYTES_PER_CELL.saturating_mul(elements));
    if manifest > most {
        let what = format!(
            "{manifest} bytes of text in the manifest, more than the {most} a manifest of \
             {elements} cells may hold"
        );
        return Err(refused("manifest", what));
    }
    Ok(())
}

/// Bytes of text (quotes left out) past which a string holds more than [`MAX_STRING_BYTES`]
/// whatever its escapes: an escape's six bytes (`\u0041`) write one byte at the least.
pub(super) const OVERLONG_STRING_TEXT: usize = 6 * MAX_STRING_BYTES;

/// [`count_values`], and where the first string whose text is longer than
/// [`OVERLONG_STRING_TEXT`] opens (its quote), if one does.
pub(super) fn count_values_and_overlong(text: &str) -> (usize, Option<usize>) {
    let bytes = text.as_bytes();
    let (mut at, mut values, mut overlong) = (0, 1usize, None);
    while let Some(&b) = bytes.get(at) {
        at += 1;
        match b {
            b'"' => {
                let end = after_string(bytes, at);
                // `end` is past the closing quote (or at the text's end).
                if overlong.is_none() && end - at > OVERLONG_STRING_TEXT + 1 {
                    overlong = Some(at - 1);
                }
                at = end;
            }
            b',' | b'[' | b':' => values += 1,
            _ => {}
        }
    }
    (values, overlong)
}

/// The refusal of a string opening at byte `at` of `text` whose text is longer than
/// [`OVERLONG_STRING_TEXT`]: where it is, by line and column (as the reader's errors say).
pub(super) fn overlong_string(text: &str, at: usize) -> LoadError {
    let before = text.as_bytes().get(..at).unwrap_or_default();
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + before.iter().rev().take_while(|&&b| b != b'\n').count();
    LoadError::Limit {
        path: "$".into(),
        message: format!(
            "the string at line {line} column {column} is longer than the limit of \
             {MAX_STRING_BYTES} bytes (its text alone takes more than {OVERLONG_STRING_TEXT}): \
             the file was edited or not written by the runner; check the file the run published"
        ),
    }
}

/// Whether `raw`, the text of one string with its quotes, is longer than
/// [`OVERLONG_STRING_TEXT`] between them.
pub(super) fn overlong_text(raw: &str) -> bool {
    raw.len() > OVERLONG_STRING_TEXT + 2
}

/// The most values a document of `len` bytes may hold ([`MIN_BYTES_PER_VALUE`]).
pub(super) fn most_values(len: usize) -> usize {
    len / MIN_BYTES_PER_VALUE + VALUE_ALLOWANCE
}

/// [`values_within_density`] for a text of `len` bytes whose values were counted as `values`
/// (one more than its `,`, `[` and `:` outside strings).
pub(super) fn within_density(values: usize, len: usize) -> Result<(), LoadError> {
    let allowed = most_values(len);
    if values > allowed {
        return Err(LoadError::Limit {
            path: "$".into(),
            message: format!(
                "about {values} JSON values in {} bytes: more than one per {MIN_BYTES_PER_VALUE} bytes (at most {allowed})",
                len
            ),
        });
    }
    Ok(())
}

/// One more than the `,`, `[` and `:` outside strings: at least the number of values.
pub(super) fn count_values(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut at, mut values) = (0, 1usize);
    while let Some(&b) = bytes.get(at) {
        at += 1;
        match b {
            b'"' => at = after_string(bytes, at),
            b',' | b'[' | b':' => values += 1,
            _ => {}
        }
    }
    values
}

/// Where the string whose contents start at `at` ends: after its closing quote (a backslash
/// takes the byte after it with it), or the end of `bytes`. Plain runs are skipped eight bytes
/// at a time ([`verify_core::scan::plain_len`], which also stops at a control character: that
/// one is stepped over like any other byte of the string).
fn after_string(bytes: &[u8], mut at: usize) -> usize {
    loop {
        let rest = bytes.get(at..).unwrap_or_default();
        let p = verify_core::scan::plain_len(rest);
        match rest.get(p) {
            None => return bytes.len(),
            Some(b'"') => return at + p + 1,
            Some(b'\\') => at += p + 2,
            Some(_) => at += p + 1,
        }
    }
}

pub(super) fn text(bytes: &[u8]) -> Result<&str, LoadError> {
    std::str::from_utf8(bytes).map_err(|e| LoadError::Utf8 {
        offset: e.valid_up_to(),
    })
}

pub(super) fn syntax(e: &serde_json::Error) -> LoadError {
    // The parser's own text ends with the position, which the error already gives.
    let said = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    let said = said.strip_suffix(&at).unwrap_or(&said);
    let message = if e.is_eof() {
        format!("{said}: the file is empty or cut short; copy or download it again")
    } else {
        format!("{said}: the file is damaged or was edited; copy or download it again")
    };
    LoadError::Syntax {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Read the typed document. As in [`scan`], JSON paths are tracked only on a second pass after a
/// failure.
pub(super) fn typed<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, LoadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = T::deserialize(super::map_only::MapOnly(&mut de));
    if let Ok(value) = read.and_then(|v| de.end().map(|()| v)) {
        return Ok(value);
    }
    typed_tracked(text)
}

/// [`typed`] with JSON path tracking, for the error.
pub(super) fn typed_tracked<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, LoadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = serde_path_to_error::deserialize(super::map_only::MapOnly(&mut de));
    let value: T = read.map_err(|e| {
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

/// Reads the `format` member: its text when it is a string, else only what kind of value it is
/// (skipped without being built: its size costs nothing but the reading).
pub(super) struct FormatSeed;

impl<'de> DeserializeSeed<'de> for FormatSeed {
    type Value = FormatMember;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<FormatMember, D::Error> {
        d.deserialize_any(FormatVisitor)
    }
}

struct FormatVisitor;

impl<'de> Visitor<'de> for FormatVisitor {
    type Value = FormatMember;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the format member")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<FormatMember, E> {
        check_string_len(v)?;
        Ok(FormatMember::Text(v.to_owned()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<FormatMember, E> {
        Ok(FormatMember::Other("a boolean".into()))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<FormatMember, E> {
        Ok(FormatMember::Other("a number".into()))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<FormatMember, E> {
        Ok(FormatMember::Other("a number".into()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<FormatMember, E> {
        Ok(FormatMember::Other("a number".into()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<FormatMember, E> {
        Ok(FormatMember::Other("null".into()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FormatMember, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(FormatMember::Other("an array".into()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FormatMember, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(FormatMember::Other("an object".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count as one state machine over every byte (how it was first written).
    fn values_byte_by_byte(text: &str) -> usize {
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
        values
    }

    proptest::proptest! {
        /// Skipping strings whole counts what the byte-by-byte state machine counts, on any
        /// text (escapes at the end, unclosed strings, structure inside strings).
        #[test]
        fn skipping_strings_counts_as_the_state_machine(text in "[\"\\\\,\\[:a{} ]{0,40}|([,\\[:a ]{0,70}[\"\\\\]){0,6}") {
            proptest::prop_assert_eq!(count_values(&text), values_byte_by_byte(&text));
        }

        /// The same with control characters and non-ASCII text inside and outside strings, and
        /// plain runs long enough to be skipped a word at a time.
        #[test]
        fn skipping_plain_runs_counts_as_the_state_machine(text in "([\"\\\\,\\[:\\x00\\x1f\\n\\t\u{e9}]|[a-z0-9]{0,20}){0,30}") {
            proptest::prop_assert_eq!(count_values(&text), values_byte_by_byte(&text));
        }
    }

    #[test]
    fn the_committed_file_counts_the_same_both_ways() {
        let committed = include_str!("../../../results/billing_credit.json");
        assert_eq!(count_values(committed), values_byte_by_byte(committed));
        assert!(values_within_density(committed).is_ok());
    }
    /// A string whose text between its quotes is longer than [`OVERLONG_STRING_TEXT`] is refused
    /// by the density pass, as a key or a value, naming its line and column; one exactly that
    /// long is left to the strict reading (it may hold escapes that write less), and the count
    /// of values is the same with the check as without it.
    #[test]
    fn a_string_whose_text_alone_is_past_the_limit_is_refused_where_it_opens() {
        for len in [OVERLONG_STRING_TEXT, OVERLONG_STRING_TEXT + 1] {
            let long = "a".repeat(len);
            for text in [
                format!("{{\"a\":[1,2],\n  \"b\":\"{long}\"}}"),
                format!("{{\"a\":[1,2],\n  \"{long}\":0}}"),
            ] {
                let (values, overlong) = count_values_and_overlong(&text);
                assert_eq!(values, count_values(&text));
                if len == OVERLONG_STRING_TEXT {
                    assert_eq!(overlong, None);
                    assert!(values_within_density(&text).is_ok());
                    continue;
                }
                let quote = text.find(&long).unwrap_or_default() - 1;
                assert_eq!(overlong, Some(quote));
                let column = quote - text.find('\n').unwrap_or_default();
                let at = format!("line 2 column {column} ");
                let err = values_within_density(&text).err();
                assert!(
                    matches!(&err, Some(LoadError::Limit { message, .. })
                        if message.contains(&at) && message.contains("65536")),
                    "{err:?}"
                );
            }
        }
    }
}
