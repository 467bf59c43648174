//! A results or nemesis file read whole without its cells or trials held together: the refusal
//! [`load_document`] gives it, with the same path and message, found by one strict reading of
//! the text in which each cell or trial is read in its place and dropped.
//!
//! [`load_document`] builds every cell before it can refuse a file whose last cell (or a member
//! after the cells) does not read: a 1 MB gzip of large cells with one cell wrong took 165 MB
//! there. This reading is the whole file's, deserializer and position and all, but for the
//! array of cells or trials, which is read an element at a time (each refused as the whole
//! reading refuses it, and its receipt's effect id checked) and shown to the file's own type as
//! an empty array. Its error is the whole reading's; its JSON path inside an element is found by
//! reading that element's text alone (the reader applies the same rules there).

use super::*;
use serde::de::value::{CowStrDeserializer, SeqDeserializer};
use serde::de::DeserializeOwned;
use std::marker::PhantomData;

/// [`load_document`], except that a results or nemesis file that does not read is refused
/// without its cells or trials ever being held together (the refusal is the same).
pub fn read_whole(bytes: &[u8]) -> Result<Document, LoadError> {
    match refusal(bytes) {
        Some(refused) => Err(refused),
        None => load_document(bytes),
    }
}

/// Why a results or nemesis file, one of whose cells or trials did not read on its own, is
/// refused: the whole reading's refusal ([`read_whole`]); or, when the whole reading takes the
/// file, a limit error, never every cell built at once. Only nesting parts the two: a cell or
/// trial read on its own may nest [`CELL_DEPTH`] levels, the whole file 128 from its top, and no
/// cell or trial the runner writes nests more than a few. (Building every cell to check a file
/// whose last cell nests 110 levels took 246 MB for a 1 MB gzip.)
pub fn refuse_unread_element(bytes: &[u8], array: &str) -> LoadError {
    refusal(bytes).unwrap_or_else(|| LoadError::Limit {
        path: array.to_owned(),
        message: format!(
            "an element of {array} does not read on its own: it nests more than {CELL_DEPTH} \
             levels inside itself (the runner's nest a few): the file was edited or not written by \
             the runner; check the file the run published"
        ),
    })
}

/// Why [`load_document`] refuses `bytes` when they are a results or nemesis file, read as this
/// module says; `None` when it reads them, or they are another document.
fn refusal(bytes: &[u8]) -> Option<LoadError> {
    let checked = text(bytes).and_then(|text| {
        values_within_density(text)?;
        let top = scan(text)?;
        // As `load_document`: nothing is built past a member's limit of values.
        super::members::within_member_limits(text)?;
        Ok((text, top))
    });
    let (text, top) = match checked {
        Ok(found) => found,
        Err(refused) => return Some(refused),
    };
    match top.format {
        Some(FormatMember::Text(f)) if f == RESULTS_FORMAT => {
            apart::<ResultsFile, Cell>(text, "cells")
        }
        Some(FormatMember::Text(f)) if f == crate::nemesis::NEMESIS_FORMAT => {
            apart::<crate::nemesis::NemesisFile, crate::nemesis::Trial>(text, "trials")
        }
        Some(FormatMember::Text(f)) if f == crate::shared_cap::check::FORMAT => {
            use crate::shared_cap::record::{CapCell, CapResults};
            apart::<CapResults, CapCell>(text, "cells")
        }
        Some(FormatMember::Text(f)) if f == crate::shared_cap::nemesis::FORMAT => {
            use crate::shared_cap::nemesis::record::{CapNemesisFile, CapTrial};
            apart::<CapNemesisFile, CapTrial>(text, "trials")
        }
        _ => None,
    }
}

/// A file's head (the file with its cells or trials shown as an empty array): what
/// [`load_document`] checks of it after the whole file has read, before any element.
trait Head: DeserializeOwned {
    /// Nothing, but for a shared_cap nemesis file: its plan's labels are known.
    fn vet(&self) -> Result<(), LoadError> {
        Ok(())
    }
}

impl Head for ResultsFile {}

impl Head for crate::nemesis::NemesisFile {}

impl Head for crate::shared_cap::record::CapResults {}

impl Head for crate::shared_cap::nemesis::record::CapNemesisFile {
    fn vet(&self) -> Result<(), LoadError> {
        super::cap::plan_shape(self)
    }
}

/// A cell or a trial: what [`load_document`] checks of it after the whole file has read.
trait Element: DeserializeOwned {
    /// What the whole reading checks of it once the file has read (`array[index]` names it):
    /// its receipt's effect id has the right shape (a shared_cap cell's or trial's: its labels
    /// are known, and every receipt's effect id has the right shape).
    fn vet(&self, array: &str, index: usize) -> Result<(), LoadError>;
}

/// A receipt's effect id has the right shape (`array[index]` names its element).
fn vet_receipt(
    receipt: Option<&crate::entry::ReceiptBundle>,
    array: &str,
    index: usize,
) -> Result<(), LoadError> {
    let Some(b) = receipt else {
        return Ok(());
    };
    effect_id_shape(
        &format!("{array}[{index}].receipt.effect_id"),
        &b.effect_id,
        64,
    )
}

impl Element for Cell {
    fn vet(&self, array: &str, index: usize) -> Result<(), LoadError> {
        vet_receipt(self.receipt.as_ref(), array, index)
    }
}

impl Element for crate::nemesis::Trial {
    fn vet(&self, array: &str, index: usize) -> Result<(), LoadError> {
        vet_receipt(self.receipt.as_ref(), array, index)
    }
}

impl Element for crate::shared_cap::record::CapCell {
    fn vet(&self, array: &str, index: usize) -> Result<(), LoadError> {
        super::cap::cell_shape(&format!("{array}[{index}]"), self)
    }
}

impl Element for crate::shared_cap::nemesis::record::CapTrial {
    fn vet(&self, array: &str, index: usize) -> Result<(), LoadError> {
        super::cap::trial_shape(&format!("{array}[{index}]"), self)
    }
}

/// What the reading of the elements found.
#[derive(Default)]
struct Found {
    /// The array is being read (until it has read).
    in_array: bool,
    /// The element being read when the reading stopped (`None` once they all read).
    reading: Option<usize>,
    /// The first element whose effect id [`Element::vet`] refused.
    refused: Option<LoadError>,
}

/// The refusal of the file `text` of type `T` whose array `array` holds elements `E`, or `None`
/// when it reads.
fn apart<T: Head, E: Element>(text: &str, array: &'static str) -> Option<LoadError> {
    let mut found = Found::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let read = T::deserialize(Apart::<_, E> {
        de: MapOnly(&mut de),
        array,
        found: &mut found,
        element: PhantomData,
    })
    .and_then(|head| de.end().map(|()| head));
    let error = match read {
        // As `load_document`: the head, then the elements, are checked once the whole file
        // has read.
        Ok(head) => return head.vet().err().or(found.refused),
        Err(e) => e,
    };
    if error.is_syntax() || error.is_eof() {
        return Some(syntax(&error));
    }
    let path = match (found.reading, found.in_array) {
        (Some(index), _) => element_path::<E>(text, array, index),
        // The array's own value is not a list.
        (None, true) => array.to_owned(),
        (None, false) => head_path::<T, E>(text, array),
    };
    Some(LoadError::Shape {
        path,
        message: error.to_string(),
    })
}

/// The JSON path of what element `index` of `array` refused: its text read alone names it.
fn element_path<E: Element>(text: &str, array: &'static str, index: usize) -> String {
    let at = format!("{array}[{index}]");
    let mut de = serde_json::Deserializer::from_str(text);
    let element = de::Deserializer::deserialize_map(&mut de, Nth { array, index });
    let inner = element
        .ok()
        .flatten()
        .and_then(|raw| typed_tracked::<E>(raw.get()).err());
    match inner {
        Some(LoadError::Shape { path, .. }) if path != "." => format!("{at}.{path}"),
        _ => at,
    }
}

/// The text of element `index` of the file's array `array`, found by reading past the members
/// and elements around it without keeping them.
#[derive(Clone, Copy)]
struct Nth {
    array: &'static str,
    index: usize,
}

impl<'de> Visitor<'de> for Nth {
    type Value = Option<&'de RawValue>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }
    // The reader checks that what it was handed was read to its end: the rest is skipped.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if key == self.array && found.is_none() {
                found = map.next_value_seed(self)?;
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        for _ in 0..self.index {
            if seq.next_element::<de::IgnoredAny>()?.is_none() {
                return Ok(None);
            }
        }
        let found = seq.next_element::<&'de RawValue>()?;
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(found)
    }
}

impl<'de> DeserializeSeed<'de> for Nth {
    type Value = Option<&'de RawValue>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

/// The JSON path of what the file refused outside its array: the same reading, tracked.
fn head_path<T: DeserializeOwned, E: Element>(text: &str, array: &'static str) -> String {
    let mut found = Found::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let apart = Apart::<_, E> {
        de: MapOnly(&mut de),
        array,
        found: &mut found,
        element: PhantomData,
    };
    match serde_path_to_error::deserialize::<_, T>(apart) {
        Err(e) => e.path().to_string(),
        Ok(_) => ".".into(),
    }
}

/// The whole file's deserializer, but for its array `array`, whose elements are read one at a
/// time (as `E`) and dropped, the file's type shown an empty array instead.
struct Apart<'f, D, E> {
    de: D,
    array: &'static str,
    found: &'f mut Found,
    element: PhantomData<E>,
}

impl<'de, D: de::Deserializer<'de>, E: Element> de::Deserializer<'de> for Apart<'_, D, E> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let Apart {
            de, array, found, ..
        } = self;
        de.deserialize_any(Outer {
            visitor,
            array,
            found,
            element: PhantomData::<E>,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let Apart {
            de, array, found, ..
        } = self;
        let outer = Outer {
            visitor,
            array,
            found,
            element: PhantomData::<E>,
        };
        de.deserialize_struct(name, fields, outer)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The file's visitor, handed the file's members with the array read apart.
struct Outer<'f, V, E> {
    visitor: V,
    array: &'static str,
    found: &'f mut Found,
    element: PhantomData<E>,
}

impl<'de, V: Visitor<'de>, E: Element> Visitor<'de> for Outer<'_, V, E> {
    type Value = V::Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.visitor.expecting(f)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(ApartMembers {
            map,
            array: self.array,
            found: self.found,
            at_array: false,
            element: PhantomData::<E>,
        })
    }
}

/// The file's members, the array's value read apart when it comes.
struct ApartMembers<'f, A, E> {
    map: A,
    array: &'static str,
    found: &'f mut Found,
    /// The key just read is the array's.
    at_array: bool,
    element: PhantomData<E>,
}

impl<'de, A: MapAccess<'de>, E: Element> MapAccess<'de> for ApartMembers<'_, A, E> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(Key(key)) = self.map.next_key::<Key<'de>>()? else {
            return Ok(None);
        };
        self.at_array = key == self.array;
        seed.deserialize(CowStrDeserializer::<A::Error>::new(key))
            .map(Some)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        if !std::mem::take(&mut self.at_array) {
            return self.map.next_value_seed(seed);
        }
        self.found.in_array = true;
        let elements = Elements::<E> {
            array: self.array,
            found: &mut *self.found,
            element: PhantomData,
        };
        self.map.next_value_seed(elements)?;
        self.found.in_array = false;
        seed.deserialize(SeqDeserializer::<_, A::Error>::new(std::iter::empty::<()>()))
    }
}

/// The array's elements, each read as `E` where it stands and dropped.
struct Elements<'f, E> {
    array: &'static str,
    found: &'f mut Found,
    element: PhantomData<E>,
}

impl<'de, E: Element> DeserializeSeed<'de> for Elements<'_, E> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, E: Element> Visitor<'de> for Elements<'_, E> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // What a list of elements expects (`Vec`'s words), so that a refusal reads the same.
        f.write_str("a sequence")
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        for index in 0.. {
            self.found.reading = Some(index);
            let Some(element) = seq.next_element::<E>()? else {
                break;
            };
            if self.found.refused.is_none() {
                self.found.refused = element.vet(self.array, index).err();
            }
        }
        self.found.reading = None;
        Ok(())
    }
}
