//! The forge's tests against a running server, real `git` repositories and loopback HTTP only.
//! Every test here needs the `git` command line. Each is bounded in time: clients have short
//! timeouts, and every wait polls git until a deadline.

// Test code: a failed step is the failure of the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cases;
mod commits;
mod faults;
mod fixture;
mod http;
mod merge;
