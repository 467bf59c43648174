//! The trusted core: everything a reader must audit to believe a signed receipt, in one module
//! tree that depends on nothing else in this crate but leaves: the original format's hashing
//! ([`crate::pycompat`], only for unsigned original receipts, which never pass under a pinned key),
//! the data it fills in ([`crate::receipt::ReceiptReport`], [`crate::problem::Problem`] and its
//! codes) and [`crate::display::shorten`] (cuts long values in messages).
//! No clap, rayon or schemars here; no function longer than a screen.
//!
//! Read in this order:
//! 1. [`canonical`]: RFC 8785 canonical JSON (integers only), the bytes every hash covers;
//! 2. [`entry`]: an entry's hash and signed message, the entry kinds and `via` values, the bundle
//!    type;
//! 3. [`signatures`]: which keys may sign, and batch verification that still names the bad one;
//! 4. [`receipt`]: one receipt's checks: per entry ([`receipt`]'s `chain`), the protocol replay
//!    (`replay`), then its signatures;
//! 5. [`seal`]: the signed head that says how many entries a bundle holds.

pub mod canonical;
pub mod entry;
pub mod receipt;
pub mod seal;
pub mod signatures;
