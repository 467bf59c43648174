//! Reading entries into JSON values that hold no spare capacity.
//!
//! `serde_json` builds an object by inserting its members one at a time, so its storage grows by
//! doubling and keeps the slack; a results file holds hundreds of thousands of entries. Here each
//! object's members are gathered first and the map is built at its exact size. The values are
//! the same as `serde_json::Value`'s own reading gives (same numbers, strings, member order; a
//! repeated key keeps its first place and its last value, though `verify::load` refuses those
//! before this runs).

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};
use std::fmt;

thread_local! {
    /// The members of the objects being read on this thread ([`CompactVisitor::visit_map`]).
    static MEMBERS: std::cell::RefCell<Vec<(String, Value)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Members whose storage [`MEMBERS`] keeps between objects (more is freed once read).
const MEMBERS_KEPT: usize = 1024;

/// A JSON value read without spare capacity.
struct Compact(Value);

impl<'de> Deserialize<'de> for Compact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CompactVisitor).map(Compact)
    }
}

struct CompactVisitor;

impl<'de> Visitor<'de> for CompactVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Compact::deserialize(d).map(|c| c.0)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Compact(v)) = seq.next_element()? {
            items.push(v);
        }
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        // The members wait on this thread's stack of members (an object's above those of the
        // objects it is inside), which keeps its storage from one object to the next.
        let base = MEMBERS.with(|m| m.borrow().len());
        let read = std::iter::from_fn(|| access.next_entry::<String, Compact>().transpose())
            .try_for_each(|member| {
                let (k, Compact(v)) = member?;
                MEMBERS.with(|m| m.borrow_mut().push((k, v)));
                Ok(())
            });
        MEMBERS.with(|m| {
            let mut members = m.borrow_mut();
            let start = base.min(members.len());
            let mut map = Map::with_capacity(members.len() - start);
            for (k, v) in members.drain(start..) {
                map.insert(k, v);
            }
            // Only once the outermost object is read: shrinking inside a nested one would drop
            // the members its parents still have waiting on the stack.
            if base == 0 && members.capacity() > MEMBERS_KEPT {
                *members = Vec::new();
            }
            read.map(|()| Value::Object(map))
        })
    }
}

/// `deserialize_with` for [`crate::entry::ReceiptBundle::entries`].
pub fn entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<Value>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
            let mut items = Vec::new();
            while let Some(Compact(v)) = seq.next_element()? {
                items.push(v);
            }
            items.shrink_to_fit();
            Ok(items)
        }
    }
    d.deserialize_seq(Entries)
}
