//! The Interlock record format and its checker.
//!
//! This crate owns every format the project writes: canonical JSON ([`canonical`]), journal
//! entries and receipt bundles ([`entry`]), and results files ([`results`]). It re-derives what a
//! record claims, offline, and names the smallest witness when a claim does not hold:
//! [`receipt::verify_bundle`] for one receipt, [`check::verify_results`] for a results file,
//! [`original::verify_original_results`] for the original Python implementation's results, and
//! [`load::load_document`] / [`load::load_results`] to read any of them strictly.
//!
//! The trusted core (canonical JSON, entries, receipt chains and replay, seals, signatures) is the
//! crate `verify_core`, fenced by the compiler; its modules are re-exported at their older paths
//! ([`trusted`], [`canonical`], [`entry`], [`receipt`], [`seal`], [`signatures`], [`batch`],
//! [`problem`], [`pycompat`]).

pub mod trusted;

pub use trusted::{batch, canonical, seal, signatures};

pub mod binding;
pub mod budget;
pub mod check;
pub mod cli;
pub mod contract;
pub mod display;
pub mod entry;
pub mod figures;
pub mod finding;
mod in_flight;
pub mod input;
pub mod keys;
pub mod load;
pub mod manifest;
pub mod nemesis;
pub mod original;
/// `Problem` and every receipt problem code, from the trusted core (`verify_core::problem`).
pub use verify_core::problem;
pub mod protocol;
pub mod provenance;
/// The original Python implementation's hashing, from the trusted core (`verify_core::pycompat`).
pub use verify_core::pycompat;

/// JSON values whose strings borrow from the text, what the receipt checks read, from the trusted
/// core (`verify_core::view`).
pub use verify_core::view;
pub mod receipt;
pub mod replayed;
pub mod results;
pub mod scenarios;

/// The billing_credit scenario's rules, by their older path ([`scenarios::billing_credit`]).
pub use scenarios::billing_credit;

/// The shared_cap scenario's rules, by their short path ([`scenarios::shared_cap`]).
pub use scenarios::shared_cap;

/// A short, stable name of an ed25519 public key for people to compare: `SHA256:` and the first
/// 16 bytes of the SHA-256 of the key's 32 bytes, in lowercase hex.
pub fn fingerprint(key: &ed25519_dalek::VerifyingKey) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(key.as_bytes());
    format!(
        "SHA256:{}",
        entry::lower_hex(digest.get(..16).unwrap_or_default())
    )
}
