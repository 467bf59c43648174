//! The Stripe client's and emulator's integration tests: one test binary, a module per suite (one
//! binary to link instead of one per file keeps test builds short). They share one emulator
//! (`common::emulator`), each test under a key of its own.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod behaviours;
mod common;
mod idempotency;
mod money_paths;
mod protocol;
mod refunds;
mod requests;
mod retries;
mod sdk_probe;
mod shape;
mod slow_advance;
