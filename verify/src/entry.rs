//! Journal entries and receipt bundles: the signed record format (DESIGN §3.2).
//!
//! An entry is a JSON object with `v` (1), `ts_ms`, `kind`, `effect_id`, the kind's own fields,
//! `prev` (hash of the previous entry of the same effect, `null` for the first), `signer` (hex
//! ed25519 public key), `hash` (hex SHA-256 of the canonical JSON of the entry without `hash` and
//! `sig`) and `sig` (hex ed25519 signature over `"interlock-entry-v1:" + hash`).
//!
//! Entries are kept as raw JSON objects so that the hash is always recomputed over exactly what was
//! stored, including fields a reader does not know.

use crate::canonical::{self, CanonicalError};
use ed25519_dalek::{Signer, SigningKey};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Version of the entry format, stored in every entry as `v`.
pub const ENTRY_VERSION: u64 = 1;

/// Domain-separation prefix of the signed message: the signature covers `SIGNING_CONTEXT + hash`.
pub const SIGNING_CONTEXT: &str = "interlock-entry-v1:";

/// The `format` value of a receipt bundle file.
pub const RECEIPT_FORMAT: &str = "interlock-receipt/1";

/// Fields that are not covered by the entry hash.
pub const UNHASHED_FIELDS: [&str; 2] = ["hash", "sig"];

/// The kinds of journal entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Kind {
    /// An agent proposed the effect (agent, lease, premises, effect).
    Proposed,
    /// The lease was live and covered the effect when proposed.
    Authorized,
    /// Durably recorded right before the target is called (effect, lease, premises, checks).
    Dispatched,
    /// The effect is known to have happened at the target (via, evidence).
    Committed,
    /// The effect was refused (code, reason); with `resolves: true` it closes an open dispatch.
    Refused,
    /// Nobody can know whether an open dispatch landed (code, reason).
    Ambiguous,
}

impl Kind {
    /// Every kind, in lifecycle order.
    pub const ALL: [Kind; 6] = [
        Kind::Proposed,
        Kind::Authorized,
        Kind::Dispatched,
        Kind::Committed,
        Kind::Refused,
        Kind::Ambiguous,
    ];

    /// The string stored in an entry's `kind` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Proposed => "PROPOSED",
            Kind::Authorized => "AUTHORIZED",
            Kind::Dispatched => "DISPATCHED",
            Kind::Committed => "COMMITTED",
            Kind::Refused => "REFUSED",
            Kind::Ambiguous => "AMBIGUOUS",
        }
    }

    /// Parse a stored `kind` string; `None` for an unknown kind.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The hex SHA-256 of the canonical JSON of `entry` without its `hash` and `sig` fields.
pub fn compute_hash(entry: &Map<String, Value>) -> Result<String, CanonicalError> {
    compute_digest(entry).map(|d| lower_hex(&d))
}

/// The SHA-256 of the canonical JSON of `entry` without its `hash` and `sig` fields
/// ([`compute_hash`] before hex encoding).
pub fn compute_digest(entry: &Map<String, Value>) -> Result<[u8; 32], CanonicalError> {
    thread_local! {
        static BUFFER: std::cell::RefCell<String> = std::cell::RefCell::new(String::with_capacity(4096));
    }
    BUFFER.with(|buffer| {
        let mut text = buffer.borrow_mut();
        text.clear();
        canonical::write_object_without(&mut text, entry, &UNHASHED_FIELDS)?;
        Ok(Sha256::digest(text.as_bytes()).into())
    })
}

/// Whether `hex` is exactly the lowercase hex spelling of `bytes` (what [`lower_hex`] writes).
pub fn is_lower_hex_of(hex: &str, bytes: &[u8]) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let hex = hex.as_bytes();
    hex.len() == bytes.len() * 2
        && bytes
            .iter()
            .zip(hex.chunks_exact(2))
            .all(|(b, pair)| pair == [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0x0f)]])
}

/// Decode exactly `2 * N` lowercase hex characters into `N` bytes; `None` for any other text
/// (uppercase included: the same bytes must have exactly one accepted spelling).
pub fn decode_lower_hex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    /// The value of each lowercase hex digit; 0xff for every other byte.
    const NIBBLE: [u8; 256] = {
        let mut t = [0xffu8; 256];
        let mut c = 0;
        while c < 10 {
            t[b'0' as usize + c] = c as u8;
            c += 1;
        }
        let mut c = 0;
        while c < 6 {
            t[b'a' as usize + c] = 10 + c as u8;
            c += 1;
        }
        t
    };
    let hex = hex.as_bytes();
    if hex.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    // No branch per digit (hex digits are random, so branches would mispredict): invalid digits
    // are collected in `bad` and refused once at the end.
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let (hi, lo) = (NIBBLE[usize::from(pair[0])], NIBBLE[usize::from(pair[1])]);
        bad |= hi | lo;
        *o = (hi << 4) | (lo & 0x0f);
    }
    (bad & 0xf0 == 0).then_some(out)
}

/// Lowercase hex of `bytes` (the same as `hex::encode`, without per-character iteration).
pub fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// The exact bytes an entry signature covers: `"interlock-entry-v1:" + hash` (hash as lowercase hex).
pub fn signing_message(hash_hex: &str) -> Vec<u8> {
    let mut msg = Vec::with_capacity(SIGNING_CONTEXT.len() + hash_hex.len());
    msg.extend_from_slice(SIGNING_CONTEXT.as_bytes());
    msg.extend_from_slice(hash_hex.as_bytes());
    msg
}

/// Complete an entry in place: set `signer` to the key's public half, then `hash`, then `sig`.
///
/// The entry must already hold `v`, `ts_ms`, `kind`, `effect_id`, its kind fields and `prev`.
/// Any existing `signer`, `hash` and `sig` are replaced.
pub fn seal(entry: &mut Map<String, Value>, key: &SigningKey) -> Result<(), CanonicalError> {
    entry.remove("hash");
    entry.remove("sig");
    entry.insert(
        "signer".to_owned(),
        Value::String(hex::encode(key.verifying_key().as_bytes())),
    );
    let hash = compute_hash(entry)?;
    let sig = key.sign(&signing_message(&hash));
    entry.insert("hash".to_owned(), Value::String(hash));
    entry.insert("sig".to_owned(), Value::String(hex::encode(sig.to_bytes())));
    Ok(())
}

/// A receipt bundle: every entry of one effect, in journal order, exactly as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiptBundle {
    /// Always [`RECEIPT_FORMAT`].
    pub format: String,
    /// The effect every entry belongs to (64 lowercase hex characters).
    pub effect_id: String,
    /// The entries as raw JSON objects.
    #[serde(deserialize_with = "compact::entries")]
    #[schemars(with = "Vec<Value>")]
    pub entries: Vec<Value>,
}

/// Reading entries into JSON values that hold no spare capacity.
///
/// `serde_json` builds an object by inserting its members one at a time, so its storage grows by
/// doubling and keeps the slack; a results file holds hundreds of thousands of entries. Here each
/// object's members are gathered first and the map is built at its exact size. The values are
/// the same as `serde_json::Value`'s own reading gives (same numbers, strings, member order; a
/// repeated key keeps its first place and its last value, though [`crate::load`] refuses those
/// before this runs).
mod compact {
    use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde::Deserialize;
    use serde_json::{Map, Number, Value};
    use std::fmt;

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
            let mut members: Vec<(String, Value)> = Vec::new();
            while let Some((k, Compact(v))) = access.next_entry::<String, Compact>()? {
                members.push((k, v));
            }
            let mut map = Map::with_capacity(members.len());
            for (k, v) in members {
                map.insert(k, v);
            }
            Ok(Value::Object(map))
        }
    }

    /// `deserialize_with` for [`super::ReceiptBundle::entries`].
    pub(super) fn entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
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
}

impl ReceiptBundle {
    /// A bundle in the current format.
    pub fn new(effect_id: impl Into<String>, entries: Vec<Value>) -> ReceiptBundle {
        ReceiptBundle {
            format: RECEIPT_FORMAT.to_owned(),
            effect_id: effect_id.into(),
            entries,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Verifier};
    use serde_json::json;

    #[test]
    fn compact_entries_read_as_serde_json_values_do() {
        let text = r#"{"format": "interlock-receipt/1", "effect_id": "ab", "entries": [
            {"v": 1, "ts_ms": 1789007000000, "z": null, "a": [1, -2, 3.5, 1e300, 18446744073709551615,
             "\u00e9\n\"x\"", true, false, [], {}], "nested": {"k": {"deep": [{"x": 0.1}]}},
             "neg": -9223372036854775808, "f": 1717171717.123456},
            [], 7, "s", null
        ]}"#;
        let ours: ReceiptBundle = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let theirs: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            Some(&Value::Array(ours.entries.clone())),
            theirs.get("entries")
        );
        // Member order is kept (it is what a reader sees), and so are the exact numbers.
        let first = ours.entries.first().and_then(Value::as_object);
        let keys: Vec<&str> = first
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, ["v", "ts_ms", "z", "a", "nested", "neg", "f"]);
        assert_eq!(
            serde_json::to_string(&ours.entries).ok(),
            theirs.get("entries").map(Value::to_string)
        );
        let bad: Result<ReceiptBundle, _> =
            serde_json::from_str(r#"{"format": "x", "effect_id": "ab", "entries": 5}"#);
        let err = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("expected a sequence"), "{err}");
    }

    #[test]
    fn seal_sets_signer_hash_and_a_verifiable_signature() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let mut e =
            json!({"v": 1, "ts_ms": 1, "kind": "PROPOSED", "effect_id": "ab", "prev": null})
                .as_object()
                .cloned()
                .unwrap();
        seal(&mut e, &key).unwrap();
        let hash = e["hash"].as_str().unwrap().to_owned();
        assert_eq!(hash, compute_hash(&e).unwrap());
        let sig_bytes: [u8; 64] = hex::decode(e["sig"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        key.verifying_key()
            .verify(&signing_message(&hash), &Signature::from_bytes(&sig_bytes))
            .unwrap();
        // Changing any covered field changes the hash.
        e.insert("ts_ms".into(), json!(2));
        assert_ne!(compute_hash(&e).unwrap(), hash);
    }

    #[test]
    fn hex_helpers_agree_with_the_hex_crate() {
        let bytes: Vec<u8> = (0..=255u8).collect();
        let spelled = hex::encode(&bytes);
        assert_eq!(lower_hex(&bytes), spelled);
        assert!(is_lower_hex_of(&spelled, &bytes));
        assert!(!is_lower_hex_of(&spelled.to_uppercase(), &bytes));
        assert!(!is_lower_hex_of(&spelled[2..], &bytes));
        let four = &spelled[..8];
        assert_eq!(decode_lower_hex::<4>(four), Some([0, 1, 2, 3]));
        assert_eq!(decode_lower_hex::<4>("0001020F"), None);
        assert_eq!(decode_lower_hex::<4>("000102"), None);
        assert_eq!(decode_lower_hex::<4>("0001020g"), None);
        assert_eq!(decode_lower_hex::<4>("000102030"), None);
        let all: [u8; 256] = decode_lower_hex(&spelled).unwrap();
        assert_eq!(all.to_vec(), bytes);
    }

    #[test]
    fn kinds_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        assert_eq!(Kind::parse("COMMITED"), None);
    }
}
