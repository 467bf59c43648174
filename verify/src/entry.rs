//! Journal entries and receipt bundles: the format and its checks live in the trusted core (the
//! `verify-core` crate: `verify_core::entry`), and so does what only a writer needs (sealing an
//! entry with a key, the signed message as bytes, a bundle's constructor: `verify_core::writer`);
//! both are re-exported here, at the path the rest of the workspace uses.

pub use verify_core::entry::*;
pub use verify_core::writer::*;
