//! A cell read with its receipt apart: the cell typed without its receipt, the receipt as a
//! [`BundleView`] whose strings borrow from the file's text. A results file's receipts are most
//! of its text; read this way their entries are never built as trees of `serde_json::Value`s
//! (a map, a string per key and per string), which costs more than checking them.
//!
//! The text reads, or fails to read, exactly as [`read_cell_scanned`] reads it: the same strict
//! scan first (unless the caller already knows the text passes it), each member of the cell
//! parsed by the same typed rules from its own text, the receipt by [`BundleView`]'s (the
//! members of a [`crate::entry::ReceiptBundle`], unknown ones refused) and its effect id's shape.
//! A failure is only a verdict, as there: the caller reads the whole file again to name it.

use super::*;
use crate::view::BundleView;
use serde::de::value::MapDeserializer;
use std::borrow::Cow;

/// The name of a cell's receipt member.
const RECEIPT: &str = "receipt";

/// An object's members as text, each key once.
struct Members<'de>(Vec<(Cow<'de, str>, &'de RawValue)>);

impl<'de> Visitor<'de> for Members<'de> {
    type Value = Members<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Members<'de>, A::Error> {
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if self.0.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom("duplicate key"));
            }
            self.0.push((key, map.next_value()?));
        }
        Ok(self)
    }
}

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
        let mut de = serde_json::Deserializer::from_str(text);
        Scan {
            top: None,
            depth: CELL_DEPTH,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(shape)?;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let members = serde::Deserializer::deserialize_map(&mut de, Members(Vec::new()))
        .and_then(|m| de.end().map(|()| m.0))
        .map_err(shape)?;
    let rest = members
        .iter()
        .filter(|(k, _)| k != RECEIPT)
        .map(|(k, v)| (k.as_ref(), *v));
    // Every member is consumed (an unknown one is refused by the typed rules; the deserializer
    // also refuses members left over).
    let map = MapDeserializer::<_, serde_json::Error>::new(rest);
    let cell = Cell::deserialize(map).map_err(shape)?;
    let receipt = match members.iter().find(|(k, _)| k == RECEIPT) {
        Some((_, text)) => Option::<BundleView<'_>>::deserialize(*text).map_err(shape)?,
        None => None,
    };
    if let Some(b) = &receipt {
        let path = format!("cells[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok((cell, receipt))
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
