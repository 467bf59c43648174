//! `runner`: runs the Interlock experiment matrix with real SIGKILLs, writes the results file,
//! verifies it and renders the report. See `README.md` in this crate.
//!
//! The binary is a thin `main` over [`Job`]: clap parses the command line into [`cli::Cli`],
//! [`Job::try_from`] checks every option combination once, [`Job::run`] runs it, and
//! [`Outcome::exit_code`] says how it ended. The scenarios are the registry in [`scenario`].

/// `println!` for the runner's own output: a line on standard output, or nothing once it is
/// closed (`runner ... | head`) or cannot take more: the run goes on, writes its files and exits
/// as if everything had been printed (its lines are progress; its answer is the files). Workers
/// keep `println!`: their report line is their answer, and a worker that cannot give it must
/// fail; `runner keygen` fails the same way.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod backend;
mod cell;
mod cell_error;
pub mod cli;
mod clock;
mod decider;
mod janitor;
pub use janitor::disarm_cleaners;
pub mod job;
mod judge;
mod keys;
mod matrix;
mod nemesis;
mod parent_watch;
pub mod partial;
mod progress;
mod reconcile;
mod results;
mod row_decision;
mod run;
mod saved_decision;
pub mod scenario;
mod worker;
mod worker_error;

pub use job::{Job, JobError, Outcome, Refused};
pub use run::{interrupted_exit_code, Interrupted};

/// The exit code of a run stopped by a full disk, unlike a run that could not start (2): a
/// billing_credit campaign's finished trials are kept in its partial file; any other run waited
/// for space in vain (for `INTERLOCK_DISK_FULL_WAIT_S` seconds), its cells are lost, and the
/// message says so.
pub const DISK_FULL_EXIT: u8 = 3;
