//! JSON values read without a tree of owned values: strings are borrowed from the text they were
//! read from (owned only where the text spelled them with an escape), objects are lists of
//! members (no hash table), numbers are serde_json's [`Number`].
//!
//! The receipt checks ([`crate::receipt`]) run on these, whether a bundle was read from a file's
//! text ([`BundleView`]'s `Deserialize`) or is a [`ReceiptBundle`] of `serde_json::Value`s a writer
//! holds ([`BundleView::of`], which borrows every string). A [`View`] means exactly what the
//! `Value` read from the same text means: the same numbers, strings and members in the same
//! order, and [`View`]'s equality is `Value`'s (objects equal as maps, whatever their order).
//! Reading refuses an object with a key twice (a `Value` would keep one of them; the loader
//! refuses such text before anything is checked, so nothing here has to choose).

use crate::entry::ReceiptBundle;
use crate::seal::Head;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};
use std::borrow::Cow;
use std::fmt;

/// A JSON value whose strings borrow from the text (or from the `Value` it views).
#[derive(Debug, Clone)]
pub enum View<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(Number),
    /// A string.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<View<'a>>),
    /// An object.
    Object(Object<'a>),
}

/// An object's members in the order they were written; keys are distinct.
#[derive(Debug, Clone, Default)]
pub struct Object<'a>(Vec<(Cow<'a, str>, View<'a>)>);

impl<'a> Object<'a> {
    /// The value of member `key`.
    pub fn get(&self, key: &str) -> Option<&View<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether the object has a member `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The members, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &View<'a>)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// How many members the object has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the object has no member.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The object as a `serde_json` map (a copy).
    pub fn to_map(&self) -> serde_json::Map<String, Value> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_value()))
            .collect()
    }
}

impl PartialEq for Object<'_> {
    /// Equal as maps, as `serde_json::Map` compares: the same keys, each with an equal value.
    /// (Keys are distinct; objects of many members are compared in key order, so that the
    /// comparison stays within n log n of their size.)
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        if self.len() <= LINEAR_KEY_CHECK {
            return self.iter().all(|(k, v)| other.get(k) == Some(v));
        }
        self.in_key_order() == other.in_key_order()
    }
}

impl<'a> Object<'a> {
    /// The members sorted by key.
    fn in_key_order(&self) -> Vec<(&str, &View<'a>)> {
        let mut members: Vec<(&str, &View<'a>)> = self.iter().collect();
        members.sort_unstable_by(|a, b| a.0.cmp(b.0));
        members
    }
}

impl PartialEq for View<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (View::Null, View::Null) => true,
            (View::Bool(a), View::Bool(b)) => a == b,
            (View::Number(a), View::Number(b)) => a == b,
            (View::String(a), View::String(b)) => a == b,
            (View::Array(a), View::Array(b)) => a == b,
            (View::Object(a), View::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl<'a> View<'a> {
    /// The value of member `key` when this is an object.
    pub fn get(&self, key: &str) -> Option<&View<'a>> {
        self.as_object().and_then(|o| o.get(key))
    }

    /// The object, when this is one.
    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            View::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The items, when this is an array.
    pub fn as_array(&self) -> Option<&[View<'a>]> {
        match self {
            View::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The string, when this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            View::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number as a `u64`, when it is a non-negative integer (as `Value::as_u64`).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            View::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The number as an `i64`, when it is an integer in its range (as `Value::as_i64`).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            View::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// Whether this is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, View::String(_))
    }

    /// Whether this is a number.
    pub fn is_number(&self) -> bool {
        matches!(self, View::Number(_))
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, View::Null)
    }

    /// Whether this is an integer that fits a `u64` or an `i64` (as `Value::is_u64 || is_i64`).
    pub fn is_integer(&self) -> bool {
        matches!(self, View::Number(n) if n.is_u64() || n.is_i64())
    }

    /// The same value as a `serde_json::Value` (a copy).
    pub fn to_value(&self) -> Value {
        match self {
            View::Null => Value::Null,
            View::Bool(b) => Value::Bool(*b),
            View::Number(n) => Value::Number(n.clone()),
            View::String(s) => Value::String(s.as_ref().to_owned()),
            View::Array(items) => Value::Array(items.iter().map(View::to_value).collect()),
            View::Object(o) => Value::Object(o.to_map()),
        }
    }

    /// A view of `value`, borrowing every string of it.
    pub fn of(value: &'a Value) -> View<'a> {
        match value {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Number(n) => View::Number(n.clone()),
            Value::String(s) => View::String(Cow::Borrowed(s)),
            Value::Array(items) => View::Array(items.iter().map(View::of).collect()),
            Value::Object(map) => View::Object(Object(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), View::of(v)))
                    .collect(),
            )),
        }
    }
}

impl fmt::Display for View<'_> {
    /// The compact JSON text `Value`'s `Display` writes (for messages).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_value(), f)
    }
}

impl crate::canonical::Node for View<'_> {
    fn shape(&self) -> crate::canonical::Shape<'_, Self> {
        use crate::canonical::Shape;
        match self {
            View::Null => Shape::Null,
            View::Bool(b) => Shape::Bool(*b),
            View::Number(n) => Shape::Number(n),
            View::String(s) => Shape::String(s),
            View::Array(items) => Shape::Array(items),
            View::Object(o) => Shape::Object(o.len()),
        }
    }
    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        self.as_object().into_iter().flat_map(Object::iter)
    }
}

/// Objects with more members than this are checked for a repeated key by sorting their keys.
const LINEAR_KEY_CHECK: usize = 16;

/// Whether some key of `members` is there twice.
fn repeats_a_key(members: &[(Cow<'_, str>, View<'_>)]) -> bool {
    if members.len() <= LINEAR_KEY_CHECK {
        return members
            .iter()
            .enumerate()
            .any(|(i, (k, _))| members.iter().take(i).any(|(j, _)| j == k));
    }
    let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1])
}

/// The members and items of the objects and arrays being read, each container's after its
/// parent's: a container is moved out into a list of its exact size when it closes, so that
/// reading one allocates once for it instead of growing a list of its own.
#[derive(Default)]
struct Scratch<'a> {
    members: Vec<(Cow<'a, str>, View<'a>)>,
    items: Vec<View<'a>>,
}

/// Reads one [`View`], its containers' contents gathered in a shared [`Scratch`].
struct ViewSeed<'s, 'a>(&'s mut Scratch<'a>);

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for ViewSeed<'_, 'a> {
    type Value = View<'a>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<View<'a>, D::Error> {
        d.deserialize_any(ViewVisitor(self.0))
    }
}

struct ViewVisitor<'s, 'a>(&'s mut Scratch<'a>);

impl<'de: 'a, 'a> Visitor<'de> for ViewVisitor<'_, 'a> {
    type Value = View<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<View<'a>, E> {
        Ok(View::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<View<'a>, E> {
        Ok(View::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<View<'a>, E> {
        Ok(View::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<View<'a>, E> {
        // As `Value` reads it: a number that is not finite would be null (JSON text has none).
        Ok(Number::from_f64(v).map_or(View::Null, View::Number))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<View<'a>, E> {
        Ok(View::String(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<View<'a>, E> {
        Ok(View::String(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<View<'a>, E> {
        Ok(View::String(Cow::Owned(v)))
    }
    fn visit_none<E: de::Error>(self) -> Result<View<'a>, E> {
        Ok(View::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<View<'a>, D::Error> {
        de::DeserializeSeed::deserialize(ViewSeed(self.0), d)
    }
    fn visit_unit<E: de::Error>(self) -> Result<View<'a>, E> {
        Ok(View::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<View<'a>, A::Error> {
        let scratch = self.0;
        let base = scratch.items.len();
        while let Some(v) = seq.next_element_seed(ViewSeed(&mut *scratch))? {
            scratch.items.push(v);
        }
        let items: Vec<View<'a>> = scratch.items.drain(base..).collect();
        Ok(View::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<View<'a>, A::Error> {
        let scratch = self.0;
        let base = scratch.members.len();
        while let Some(Key(k)) = access.next_key::<Key<'a>>()? {
            let v = access.next_value_seed(ViewSeed(&mut *scratch))?;
            scratch.members.push((k, v));
        }
        let members: Vec<(Cow<'a, str>, View<'a>)> = scratch.members.drain(base..).collect();
        if repeats_a_key(&members) {
            return Err(de::Error::custom("an object has the same key twice"));
        }
        Ok(View::Object(Object(members)))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for View<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::DeserializeSeed::deserialize(ViewSeed(&mut Scratch::default()), d)
    }
}

/// A list of views read with one [`Scratch`] for all of them (a bundle's entries).
fn views<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Vec<View<'a>>, D::Error> {
    struct Views<'a>(std::marker::PhantomData<View<'a>>);
    impl<'de: 'a, 'a> Visitor<'de> for Views<'a> {
        type Value = Vec<View<'a>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<View<'a>>, A::Error> {
            let mut scratch = Scratch::default();
            let mut items = Vec::new();
            while let Some(v) = seq.next_element_seed(ViewSeed(&mut scratch))? {
                items.push(v);
            }
            Ok(items)
        }
    }
    d.deserialize_seq(Views(std::marker::PhantomData))
}

/// An object key, borrowed from the text where it has no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'a>(std::marker::PhantomData<Key<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for KeyVisitor<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}

/// A receipt bundle whose entries are [`View`]s: what the receipt checks read. Read from a
/// bundle's JSON text with the same rules as [`ReceiptBundle`] (the same members, unknown ones
/// refused), or made from a [`ReceiptBundle`] with [`BundleView::of`].
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleView<'a> {
    /// The bundle's `format`.
    #[serde(borrow)]
    pub format: Cow<'a, str>,
    /// The effect every entry belongs to.
    #[serde(borrow)]
    pub effect_id: Cow<'a, str>,
    /// The entries, in journal order.
    #[serde(borrow, deserialize_with = "views")]
    pub entries: Vec<View<'a>>,
    /// The signed head ([`crate::seal`]); `None` for an unsealed bundle.
    #[serde(default)]
    pub head: Option<Head>,
}

impl<'a> BundleView<'a> {
    /// A view of `bundle`, borrowing its strings (its head is copied).
    pub fn of(bundle: &'a ReceiptBundle) -> BundleView<'a> {
        BundleView {
            format: Cow::Borrowed(&bundle.format),
            effect_id: Cow::Borrowed(&bundle.effect_id),
            entries: bundle.entries.iter().map(View::of).collect(),
            head: bundle.head.clone(),
        }
    }

    /// The same bundle with its entries as `serde_json::Value`s (a copy).
    pub fn to_bundle(&self) -> ReceiptBundle {
        ReceiptBundle {
            format: self.format.as_ref().to_owned(),
            effect_id: self.effect_id.as_ref().to_owned(),
            entries: self.entries.iter().map(View::to_value).collect(),
            head: self.head.clone(),
        }
    }
}

#[cfg(test)]
#[path = "trusted_tests/view.rs"]
mod tests;
