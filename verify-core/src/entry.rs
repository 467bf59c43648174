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

/// How a COMMITTED entry came to be written: its `via` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// The sender's own apply returned.
    Send,
    /// Recovery resent under the same idempotency key (tier 1) and the service answered.
    RetryIdempotent,
    /// Recovery looked the effect up and found it.
    RecoveryQuery,
    /// Recovery looked the effect up, did not find it, and resent it (tier 2 or demoted tier 1).
    RecoveryReapply,
    /// The target rejected a send but a lookup found the effect anyway.
    FailedButLanded,
}

impl Via {
    /// Every via, in the order the protocol lists them.
    pub const ALL: [Via; 5] = [
        Via::Send,
        Via::RetryIdempotent,
        Via::RecoveryQuery,
        Via::RecoveryReapply,
        Via::FailedButLanded,
    ];

    /// The string stored in a COMMITTED entry's `via` field.
    pub const fn as_str(self) -> &'static str {
        match self {
            Via::Send => "send",
            Via::RetryIdempotent => "retry-idempotent",
            Via::RecoveryQuery => "recovery-query",
            Via::RecoveryReapply => "recovery-reapply",
            Via::FailedButLanded => "failed-but-landed",
        }
    }

    /// Parse a stored `via` string; `None` for an unknown via.
    pub fn parse(s: &str) -> Option<Via> {
        Via::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether this COMMITTED sent the effect again (a second firing with its own checks).
    pub const fn is_resend(self) -> bool {
        matches!(self, Via::RetryIdempotent | Via::RecoveryReapply)
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The SHA-256 of the canonical JSON of `entry` without its `hash` and `sig` fields.
pub fn compute_digest(entry: &Map<String, Value>) -> Result<[u8; 32], CanonicalError> {
    with_buffer(|text| canonical::write_object_without(text, entry, &UNHASHED_FIELDS))
}

/// [`compute_digest`] of an entry read as a [`crate::view::Object`]: the same bytes are hashed
/// (one canonical writer walks both, [`canonical::Node`]).
pub fn compute_view_digest(entry: &crate::view::Object<'_>) -> Result<[u8; 32], CanonicalError> {
    with_buffer(|text| {
        canonical::write_members_without(text, entry.iter(), entry.len(), &UNHASHED_FIELDS)
    })
}

/// SHA-256 of what `write` puts in this thread's text buffer.
fn with_buffer(
    write: impl FnOnce(&mut String) -> Result<(), CanonicalError>,
) -> Result<[u8; 32], CanonicalError> {
    thread_local! {
        static BUFFER: std::cell::RefCell<String> = std::cell::RefCell::new(String::with_capacity(4096));
    }
    BUFFER.with(|buffer| {
        let mut text = buffer.borrow_mut();
        text.clear();
        write(&mut text)?;
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
    /// A lowercase hex digit's value; 16 for any other byte.
    const fn nibble(b: u8) -> u8 {
        match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => 16,
        }
    }
    let hex = hex.as_bytes();
    if hex.len() != 2 * N {
        return None;
    }
    // One pass, without early exit: every byte is looked at, and any non-digit fails the whole.
    let mut out = [0u8; N];
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let (high, low) = (nibble(pair[0]), nibble(pair[1]));
        bad |= (high | low) & 0x10;
        *o = ((high & 0x0f) << 4) | (low & 0x0f);
    }
    (bad == 0).then_some(out)
}

/// Whether `text` holds only lowercase hex digits.
pub fn is_lower_hex(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
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

/// A receipt bundle: every entry of one effect, in journal order, exactly as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptBundle {
    /// Always [`RECEIPT_FORMAT`].
    pub format: String,
    /// The effect every entry belongs to (64 lowercase hex characters).
    pub effect_id: String,
    /// The entries as raw JSON objects.
    /// (Read by [`crate::compact::entries`]: the same values, stored without spare capacity.)
    #[serde(deserialize_with = "crate::compact::entries")]
    pub entries: Vec<Value>,
    /// The signed head ([`crate::seal`]); `None` for an unsealed bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<crate::seal::Head>,
}

#[cfg(test)]
#[path = "trusted_tests/entry.rs"]
mod tests;
