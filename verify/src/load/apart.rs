//! A cell read with its receipt apart: the cell typed without its receipt, the receipt as a
//! [`BundleView`] whose strings borrow from the file's text. A results file's receipts are most
//! of its text; read this way their entries are never built as trees of `serde_json::Value`s
//! (a map, a string per key and per string), which costs more than checking them.
//!
//! The text reads, or fails to read, exactly as [`read_cell_scanned`] reads it: the same strict
//! scan first (unless the caller already knows the text passes it), the cell's members in one
//! pass by the same typed rules but for `receipt`, which is read by [`BundleView`]'s (the
//! members of a [`crate::entry::ReceiptBundle`], unknown ones refused), and its effect id's
//! shape.
//! A failure is only a verdict, as there: the caller reads the whole file again to name it.

use super::map_only::{MapOnly, Seed};
use super::*;
use crate::view::BundleView;

/// The name of a cell's receipt member.
const RECEIPT: &str = "receipt";

/// [`read_cell_scanned`] with the receipt apart: the typed cell (its `receipt` always `None`) and
/// the cell's receipt, if it has one, as a view of the text.
pub fn read_cell_apart(
    index: usize,
    raw: &RawValue,
    scanned: bool,
) -> Result<(Cell, Option<BundleView<'_>>), LoadError> {
    let text = raw.get();
    let shape = |e: serde_json::Error| LoadError::Shape {
        path: format!("cells[{index}]"),
        message: e.to_string(),
    };
    if !scanned {
        super::parts::scan_cell(index, text)?;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let mut receipt = None;
    let cell = Cell::deserialize(MapOnly(WithoutReceipt {
        de: &mut de,
        receipt: &mut receipt,
    }))
    .and_then(|c| de.end().map(|()| c))
    .map_err(shape)?;
    let receipt = receipt.flatten();
    if let Some(b) = &receipt {
        let path = format!("cells[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok((cell, receipt))
}

/// [`read_trial`] with the receipt apart, as [`read_cell_apart`] reads a cell: the typed trial
/// (its `receipt` always `None`) and the trial's receipt, if it has one, as a view of the text.
/// The text reads, or fails to read, exactly as [`read_trial`] reads it.
pub fn read_trial_apart(
    index: usize,
    raw: &RawValue,
) -> Result<(crate::nemesis::Trial, Option<BundleView<'_>>), LoadError> {
    let text = raw.get();
    super::parts::scan_element("trials", index, text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let mut receipt = None;
    let trial = crate::nemesis::Trial::deserialize(MapOnly(WithoutReceipt {
        de: &mut de,
        receipt: &mut receipt,
    }))
    .and_then(|t| de.end().map(|()| t))
    .map_err(|e| LoadError::Shape {
        path: format!("trials[{index}]"),
        message: e.to_string(),
    })?;
    let receipt = receipt.flatten();
    if let Some(b) = &receipt {
        let path = format!("trials[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok((trial, receipt))
}

/// The JSON text of a cell as the typed cell reads it, but for its `receipt` member, which is
/// read into `receipt` instead (`Some(None)` for `"receipt": null`) and never shown to the cell:
/// every other member goes to the cell's own rules as it stands in the text.
struct WithoutReceipt<'s, 'de> {
    de: &'s mut serde_json::Deserializer<serde_json::de::StrRead<'de>>,
    receipt: &'s mut Option<Option<BundleView<'de>>>,
}

impl<'de> de::Deserializer<'de> for WithoutReceipt<'_, 'de> {
    type Error = serde_json::Error;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let receipt = self.receipt;
        de::Deserializer::deserialize_map(self.de, Outer { visitor, receipt })
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// The cell's visitor, handed the cell's members without its receipt.
struct Outer<'s, 'de, V> {
    visitor: V,
    receipt: &'s mut Option<Option<BundleView<'de>>>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Outer<'_, 'de, V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.visitor.expecting(f)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let members = Members {
            map,
            receipt: self.receipt,
        };
        self.visitor.visit_map(members)
    }
}

/// The members of a cell, its `receipt` taken out as it is met.
struct Members<'s, 'de, A> {
    map: A,
    receipt: &'s mut Option<Option<BundleView<'de>>>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Members<'_, 'de, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        loop {
            let Some(Key(key)) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            if key != RECEIPT {
                let key = de::value::CowStrDeserializer::<Self::Error>::new(key);
                return seed.deserialize(key).map(Some);
            }
            if self.receipt.is_some() {
                return Err(de::Error::custom("duplicate key"));
            }
            let receipt = Seed(std::marker::PhantomData::<Option<BundleView<'de>>>);
            *self.receipt = Some(self.map.next_value_seed(receipt)?);
        }
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A cell read with its receipt apart, and the hash of the cell's canonical JSON.
pub type CellApart<'t> = (Cell, Option<BundleView<'t>>, Option<[u8; 32]>);

/// [`read_cell`] with the receipt apart ([`read_cell_apart`]): the typed cell, its receipt, and
/// the hash of the cell's canonical JSON (`None` when it has none).
pub fn read_cell_apart_hashed(index: usize, raw: &RawValue) -> Result<CellApart<'_>, LoadError> {
    // As in `read_cell`: a hash means the text passes the strict scan.
    let hash = crate::manifest::text_hash(raw.get());
    let (cell, receipt) = read_cell_apart(index, raw, hash.is_some())?;
    Ok((cell, receipt, hash))
}
