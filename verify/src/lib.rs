//! The Interlock record format and its checker.
//!
//! This crate owns every format the project writes: canonical JSON ([`canonical`]), journal
//! entries and receipt bundles ([`entry`]), and results files. It re-derives what a record
//! claims, offline, and names the smallest witness when a claim does not hold.

pub mod billing_credit;
pub mod canonical;
pub mod entry;
pub mod results;
