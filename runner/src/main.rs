//! `runner`: runs the Interlock experiment matrix with real SIGKILLs, writes the results file,
//! verifies it and renders the report. See `README.md` in this crate.

mod backend;
mod cell;
mod cli;
mod clock;
mod decider;
mod judge;
mod keys;
mod matrix;
mod nemesis;
mod progress;
mod reconcile;
mod results;
mod row_decision;
mod run;
mod worker;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match &cli.command {
        Some(cli::Internal::Worker(args)) => {
            return ExitCode::from(u8::try_from(worker::main(args)).unwrap_or(1));
        }
        Some(cli::Internal::Reconcile(args)) => return ExitCode::from(reconcile::command(args)),
        Some(cli::Internal::Keygen(args)) => {
            return match keys::keygen(&args.file) {
                Ok(public) => {
                    println!("{public} {}", args.comment);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            };
        }
        None => {}
    }
    if let Some(id) = &cli.run.replay {
        return match nemesis::replay(
            id,
            cli.run.at.as_deref(),
            cli.run.clock_start,
            cli.run.outage_ms,
        ) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(list) = &cli.run.nemesis {
        return run_nemesis(&cli.run, list);
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

fn run_nemesis(args: &cli::RunArgs, list: &str) -> ExitCode {
    let nemeses = match nemesis::Nemesis::parse_list(list) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let run = nemesis::NemesisArgs {
        nemeses,
        trials: args.trials,
        seed: args.seed,
        // Trials mostly wait (on the in-flight bound, on held requests), so more than the cores.
        jobs: args.jobs.unwrap_or(32),
        out: &args.out,
        journal: args.journal.as_deref(),
        clock_start: args.clock_start,
        outage_ms: args.outage_ms,
    };
    match nemesis::run_nemesis(&run) {
        Err(e) if e.is::<run::Interrupted>() => {
            eprintln!("{e}");
            ExitCode::from(130)
        }
        Ok(o) if o.verified && o.harness_errors == 0 => ExitCode::SUCCESS,
        Ok(o) => {
            if o.harness_errors > 0 {
                eprintln!(
                    "{} trial(s) are HARNESS_ERROR: see {}",
                    o.harness_errors,
                    o.path.display()
                );
            }
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
