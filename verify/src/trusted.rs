//! The trusted core: everything a reader must audit to believe a signed receipt. It is the
//! workspace crate `verify-core` (`verify_core`), fenced by the compiler: its only dependencies
//! are format and crypto crates (serde, serde_json, sha2, ed25519-dalek and its curve25519-dalek,
//! hex, thiserror), so nothing of this crate (results files, scenarios, threads, the command line)
//! can reach into it.
//! Its modules are re-exported here and at the crate root (`verify::canonical`, `verify::entry`,
//! `verify::receipt`, …), so every older path keeps working. Read the crate's own documentation
//! (`verify-core/src/lib.rs`, `verify-core/README.md`) for what it holds and the order to read
//! it in.

pub use verify_core::{batch, canonical, entry, receipt, seal, signatures, view};
