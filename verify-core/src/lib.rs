//! The trusted core of Interlock's verifier: everything a reader must audit to believe a signed
//! receipt, in a crate of its own so that the compiler, not a comment, holds it to its few
//! dependencies (serde, serde_json, sha2, ed25519-dalek and its curve25519-dalek, hex, thiserror) and keeps every other
//! part of the verifier (results files, scenarios, threads, the command line) out of it. The
//! `verify` crate re-exports each module at its old path (`verify::canonical`, `verify::entry`,
//! `verify::receipt`, …).
//!
//! Read in this order:
//! 1. [`canonical`]: RFC 8785 canonical JSON (integers only), the bytes every hash covers;
//!    [`canonical_text`] writes the same bytes straight from JSON text where that text needs
//!    no more than dropping whitespace and ordering keys, and declines everything else;
//! 2. [`entry`]: an entry's hash and signed message, the entry kinds and `via` values, the bundle
//!    type;
//! 3. [`signatures`]: which keys may sign, and batch verification that still names the bad one,
//!    each batch one equation with each signer's key multiplied once ([`batch`]);
//! 4. [`receipt`]: one receipt's checks: per entry ([`receipt`]'s `chain`), the protocol replay
//!    (`replay`), then its signatures;
//! 5. [`seal`]: the signed head that says how many entries a bundle holds.
//!
//! The leaves they use, none of which decides anything:
//! - [`report`]: what a receipt proves ([`report::ReceiptReport`], [`report::Happened`],
//!   [`report::Refusal`]), the data the checks fill in;
//! - [`problem`]: [`problem::Problem`] and every receipt problem code;
//! - [`pycompat`]: the original Python implementation's hashing, used only for unsigned original
//!   receipts, which never pass under a pinned key;
//! - `compact` (private): reads a bundle's entries as JSON values without spare capacity;
//! - [`text`]: cuts long values in messages ([`text::shorten`]);
//! - [`scan`]: where a string's plain bytes end, eight bytes at a time ([`scan::plain_len`]);
//! - [`view`]: JSON values whose strings borrow from the text ([`view::View`], [`view::BundleView`]),
//!   what the receipt checks read.
//!
//! And one the checks never call: [`writer`], sealing an entry with a key (for writers and tests).
//! No function here is longer than a screen.

pub mod batch;
pub mod canonical;
pub mod canonical_text;
mod compact;
pub mod entry;
pub mod problem;
pub mod pycompat;
pub mod receipt;
pub mod report;
pub mod scan;
pub mod seal;
pub mod signatures;
pub mod text;
pub mod view;
pub mod writer;
