//! `runner`: runs the Interlock experiment matrix with real SIGKILLs, writes the results file,
//! verifies it and renders the report. See `README.md` in this crate.

mod backend;
mod cell;
mod cli;
mod decider;
mod judge;
mod keys;
mod matrix;
mod progress;
mod results;
mod run;
mod worker;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if let Some(cli::Internal::Worker(args)) = &cli.command {
        return ExitCode::from(u8::try_from(worker::main(args)).unwrap_or(1));
    }
    match run::run(&cli.run) {
        Ok(outcome) => {
            if outcome.harness_errors > 0 {
                eprintln!(
                    "{} cell(s) are HARNESS_ERROR: see harness_error in {}",
                    outcome.harness_errors,
                    outcome.results_path.display()
                );
                ExitCode::from(1)
            } else if !outcome.verified {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) if e.is::<run::Interrupted>() => {
            eprintln!("{e}");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
