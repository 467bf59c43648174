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
mod shared_cap;
mod worker;

use clap::Parser;
use std::fmt::Display;
use std::process::ExitCode;
use verify::cli::{error_line, usage_error_line};

/// An error as every tool prints it (one line on stderr), and exit code 2: the run could not
/// start or go on.
fn could_not_run(e: &anyhow::Error) -> ExitCode {
    eprintln!("{}", error_line("runner", e.as_ref()));
    ExitCode::from(2)
}

/// [`could_not_run`] for an error that is a message.
fn could_not_run_because(message: impl Display) -> ExitCode {
    could_not_run(&anyhow::anyhow!("{message}"))
}

/// An interrupted run: the message, and 130 after Ctrl-C, 143 after SIGTERM.
fn interrupted(e: &anyhow::Error) -> ExitCode {
    eprintln!("runner: {e}");
    ExitCode::from(run::interrupted_exit_code())
}

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        // --help and --version are not errors.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", usage_error_line("runner", &e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    match &cli.command {
        Some(cli::Internal::Worker(args)) => {
            return ExitCode::from(u8::try_from(worker::main(args)).unwrap_or(1));
        }
        Some(cli::Internal::CapWorker(args)) => {
            return ExitCode::from(u8::try_from(shared_cap::worker::main(args)).unwrap_or(1));
        }
        Some(cli::Internal::Reconcile(args)) => return ExitCode::from(reconcile::command(args)),
        Some(cli::Internal::Merge(args)) => {
            return match nemesis::merge_shards(args) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => could_not_run(&e),
            };
        }
        Some(cli::Internal::Keygen(args)) => {
            return match keys::keygen(&args.file) {
                Ok(public) => {
                    println!("{public} {}", args.comment);
                    ExitCode::SUCCESS
                }
                Err(e) => could_not_run_because(format!(
                    "{e}; pass the path of a new file in an existing directory"
                )),
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
            Err(e) => could_not_run(&e),
        };
    }
    if cli.run.two_hosts && cli.run.scenario.as_deref() != Some("shared_cap") {
        return could_not_run_because(
            "--two-hosts belongs to --scenario shared_cap (pass that, or drop --two-hosts)",
        );
    }
    if let Some(list) = &cli.run.nemesis {
        if cli.run.scenario.as_deref() == Some("shared_cap") {
            return exit_of(shared_cap::nemesis::run(&cli.run, list));
        }
        if cli.run.scenario.as_deref() != Some("billing_credit") {
            return could_not_run_because(
                "--nemesis runs one scenario's trials: pass --scenario billing_credit or \
                 --scenario shared_cap",
            );
        }
        return run_nemesis(&cli.run, list);
    }
    if cli.run.every_step && cli.run.scenario.as_deref() != Some("shared_cap") {
        return could_not_run_because(
            "--every-step belongs to --scenario shared_cap (pass that, or drop --every-step)",
        );
    }
    exit_of(match cli.run.scenario.as_deref() {
        Some("shared_cap") => shared_cap::run(&cli.run),
        Some("all") => run_all(&cli.run),
        _ => run::run(&cli.run),
    })
}

/// The exit code of a run: 0 when every cell was judged and the file verifies.
fn exit_of(outcome: anyhow::Result<run::RunOutcome>) -> ExitCode {
    match outcome {
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
        Err(e) if e.is::<run::Interrupted>() => interrupted(&e),
        Err(e) => could_not_run(&e),
    }
}

/// `--scenario all`: every scenario's matrix into one `--out`, then one site over all of them.
fn run_all(args: &cli::RunArgs) -> anyhow::Result<run::RunOutcome> {
    // What one scenario refuses is refused before any of them runs.
    shared_cap::refuse_foreign_options(args)?;
    let mut each = args.clone();
    each.no_site = true;
    each.scenario = Some("billing_credit".into());
    let first = run::run(&each)?;
    each.scenario = Some("shared_cap".into());
    let second = shared_cap::run(&each)?;
    let verified = first.verified && second.verified;
    if !args.no_site {
        if verified {
            run::render_site(&args.out, &args.site_out);
        } else {
            eprintln!("site: not rendered, because a results file does not verify");
        }
    }
    Ok(run::RunOutcome {
        results_path: args.out.clone(),
        harness_errors: first.harness_errors + second.harness_errors,
        verified,
    })
}

fn run_nemesis(args: &cli::RunArgs, list: &str) -> ExitCode {
    let nemeses = match nemesis::Nemesis::parse_list(list) {
        Ok(n) => n,
        Err(e) => return could_not_run_because(e),
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
        shard: args.shard,
        signing_key: args.signing_key.as_deref(),
    };
    match nemesis::run_nemesis(&run) {
        Err(e) if e.is::<run::Interrupted>() => interrupted(&e),
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
        Err(e) => could_not_run(&e),
    }
}
