//! The verifier's integration tests: one test binary, a module per suite (one binary to link
//! instead of one per file keeps test builds short). `tests/resource_limits.rs` stays a binary of
//! its own: it measures the peak memory of its own process, which other tests would share here.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod array_shapes;
mod cli;
mod common;
mod contract;
mod contract_limits;
mod dense_values;
mod figures;
mod file_signatures;
mod forgeries;
mod gzip_input;
mod nemesis;
mod nemesis_checks;
mod nemesis_shards;
mod original_compat;
mod parser_fuzz;
mod pr_merge;
mod receipt_checks;
mod receipt_text;
mod results_tamper;
mod shared_cap_checks;
mod shared_cap_nemesis;
mod whole_read;
mod world_binding;
