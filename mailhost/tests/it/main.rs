//! The mail host's tests. Those against a running Postfix instance are ignored unless asked for
//! (`cargo test -p mailhost -- --include-ignored`): they need root and Postfix. The client's
//! tests against a scripted server on loopback run always. Every wait polls until a deadline.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
mod delivery;
mod faults;
mod fixture;
mod lifecycle;
mod scripted;
