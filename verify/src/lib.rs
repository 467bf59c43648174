//! The Interlock record format and its checker.
//!
//! This crate owns every format the project writes: canonical JSON ([`canonical`]), journal
//! entries and receipt bundles ([`entry`]), and results files ([`results`]). It re-derives what a
//! record claims, offline, and names the smallest witness when a claim does not hold:
//! [`receipt::verify_bundle`] for one receipt, [`check::verify_results`] for a results file,
//! [`original::verify_original_results`] for the original Python implementation's results, and
//! [`load::load_document`] / [`load::load_results`] to read any of them strictly.

pub mod billing_credit;
pub mod canonical;
pub mod check;
pub mod entry;
pub mod finding;
pub mod load;
pub mod original;
pub mod problem;
pub mod pycompat;
pub mod receipt;
pub mod results;
pub mod signatures;
pub mod synthetic;
