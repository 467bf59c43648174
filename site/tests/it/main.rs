//! The site's integration tests: one test binary, a module per suite (one binary to link instead
//! of one per file keeps test builds short). Snapshots are named explicitly (`support`), so they
//! do not depend on the module a test is in.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod built_from;
mod cli;
mod contract_scenarios;
mod emulator_vs_stripe;
mod entry_marks;
mod first_screen;
mod fixture_gen;
mod key_advice;
mod links;
mod nemesis_page;
mod prose_claims;
mod shared_cap_pages;
mod shared_cap_runs;
mod snapshots;
mod support;
mod templates_compute_nothing;
mod verification;
mod whole_builds;
mod workflows;
