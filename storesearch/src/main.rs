//! `storesearch`: searches the gate's journal stores for safety breaks by method rather than by review
//! (DESIGN §2.5, §2.7):
//!
//! - [`crash_states`]: records every file operation the file store makes while a workload runs,
//!   builds every crash state the POSIX contract allows from the recording, and runs recovery
//!   and `status` on each;
//! - [`pg_faults`]: runs workloads of two gates against PostgreSQL through a proxy on loopback
//!   that faults a drawn round trip of a drawn session.
//!
//! The crash-state engine is the library (`storesearch::crash`), shared with the schedule search.
//! Both check the same things: no effect lands twice, no answer a caller was given is
//! contradicted by what recovery decides, no journal the gate opens loses an acknowledged line.
//! The thread-schedule search is this crate's test target `schedules` (feature `shuttle`): it
//! has to build the store with a controlled scheduler.

mod crash_states;
mod pg_faults;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Search the gate's journal stores for safety breaks: every crash state of the file store,
/// every PostgreSQL round trip faulted. Exits 1 on a failure and prints what replays it.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record the file store's operations under workloads and check every crash state.
    CrashStates(crash_states::Args),
    /// Run workloads of two gates against PostgreSQL through a proxy that faults round trips.
    PgFaults(pg_faults::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::CrashStates(args) => crash_states::main(&args),
        Command::PgFaults(args) => pg_faults::main(&args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("storesearch: {e:#}");
            ExitCode::from(2)
        }
    }
}
