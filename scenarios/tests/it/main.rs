//! The scenarios' integration tests: one test binary, a module per suite (one binary to link
//! instead of one per file keeps test builds short).

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod billing_credit;
mod common;
mod faults;
mod shared_cap_pg;
