//! Which key a file is checked against: the signer it names, and whether a pin allows it.

use super::*;

/// The signer a document names itself, if any.
pub(super) fn named_signer(doc: &Document) -> Option<String> {
    match doc {
        Document::Results(f) => Some(f.environment.signer.clone()),
        Document::Receipt(b) => b
            .entries
            .first()
            .and_then(|e| e.get("signer"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        Document::OriginalResults(_) => None,
        Document::Nemesis(f) => Some(f.environment.signer.clone()),
        Document::SharedCap(f) => Some(f.environment.public_key.clone()),
        Document::SharedCapNemesis(f) => Some(f.environment.public_key.clone()),
    }
}

/// The key a document is checked against: the pinned key that signed it, or (several allowed
/// signers) the one the document names (`named`); `Err` when it names none of them. An original
/// results file names none and is checked (and fails) under the first.
pub(super) fn key_for(
    named: Option<&str>,
    place: &str,
    original: bool,
    pinned: &Pinned,
) -> Result<KeyCheck, SignerNotAllowed> {
    let keys = match pinned {
        Pinned::None => return Ok(KeyCheck::SelfAttested),
        Pinned::Keys(k) if k.len() == 1 => return Ok(KeyCheck::Pinned(k[0])),
        Pinned::Keys(k) => k,
    };
    let named = named.and_then(crate::entry::decode_lower_hex::<32>);
    match keys.iter().find(|k| Some(k.to_bytes()) == named) {
        Some(k) => Ok(KeyCheck::Pinned(*k)),
        None if original => Ok(KeyCheck::Pinned(keys[0])),
        None => Err(SignerNotAllowed {
            place: place.to_owned(),
            signer: named
                .and_then(|b| VerifyingKey::from_bytes(&b).ok())
                .map_or_else(|| "no valid key".to_owned(), |k| crate::fingerprint(&k)),
        }),
    }
}

/// A document names a signer the allowed-signers file does not list.
#[derive(Debug, thiserror::Error)]
#[error("{place} names signer {signer}, which is not in the allowed-signers file")]
pub(super) struct SignerNotAllowed {
    /// Where the document names it.
    place: String,
    /// Its fingerprint, or `no valid key`.
    signer: String,
}

/// Every pinned key (none when nothing is pinned).
pub(super) fn pinned_keys(pinned: &Pinned) -> &[VerifyingKey] {
    match pinned {
        Pinned::None => &[],
        Pinned::Keys(k) => k,
    }
}

/// Where a document names its signer, for messages.
pub(super) fn signer_place(doc: &Document) -> &'static str {
    match doc {
        Document::Receipt(_) => "entries[0].signer",
        Document::SharedCap(_) | Document::SharedCapNemesis(_) => "environment.public_key",
        _ => "environment.signer",
    }
}
