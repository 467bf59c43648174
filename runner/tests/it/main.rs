//! The runner's integration tests: one test binary, a module per suite (one binary to link instead
//! of one per file keeps test builds short). They drive the `runner` binary as a process; the tests
//! that look for leftover processes look only for those naming their own temporary directory, so
//! tests running beside them in this process do not count.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod any_date;
mod cli;
mod emulator_conformance;
mod end_to_end;
mod killed_runner;
mod nemesis;
mod nemesis_shards;
mod notify;
mod postgres_journal;
mod pr_merge;
mod rate_limited;
mod reconcile;
mod resume;
mod shared_cap;
mod signing_key;
