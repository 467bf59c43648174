//! The gate's integration tests: one test binary, a module per suite (one binary to link instead
//! of one per file keeps test builds short). They run against the JSONL file store, or against
//! PostgreSQL with `INTERLOCK_TEST_STORE=postgres` (see `common`); the tests that need root,
//! PostgreSQL or another service are ignored with the reason.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod adversary;
mod budgets;
mod claims;
mod common;
mod concurrency;
mod crash;
mod faults;
mod gate;
mod group_commit_answers;
mod in_use;
mod in_use_attacks;
mod journal;
mod lock_waits;
mod model_findings;
mod mutants;
mod rollback;
mod sequences;
// What only the PostgreSQL store has to show, and gates on several hosts sharing one database:
// built with the `postgres` feature only (the other suites run against PostgreSQL when asked to,
// see `common`).
#[cfg(feature = "postgres")]
mod hosts;
#[cfg(feature = "postgres")]
mod postgres;
