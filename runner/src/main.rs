//! `runner`: runs the Interlock experiment matrix with real SIGKILLs, writes the results file,
//! verifies it and renders the report. See `README.md` in this crate.

use clap::Parser;
use runner::cli::Cli;
use runner::{Job, JobError};
use std::process::ExitCode;
use verify::cli::{error_line, usage_error_line};

/// A command line clap could not parse: its message, as one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

fn main() -> ExitCode {
    let code = match run() {
        Ok(code) => code,
        Err(e) => exit_code_of(&e),
    };
    // A normal end: the run folders are removed by their owners; no cleaner is left waiting.
    runner::disarm_cleaners();
    code
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version are not errors.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(Usage(e.render().to_string()).into()),
    };
    let outcome = Job::try_from(cli)?.run()?;
    Ok(outcome.exit_code())
}

/// The one place an error becomes an exit code (cli.rs's "Exit status"): one line on stderr,
/// and 2 (bad usage, or the run could not start or go on), 3 (the disk filled; the finished
/// work is kept) or, after an interruption, 130 or 143.
fn exit_code_of(e: &anyhow::Error) -> ExitCode {
    if let Some(Usage(rendered)) = e.downcast_ref::<Usage>() {
        eprintln!("{}", usage_error_line("runner", rendered));
        return ExitCode::from(2);
    }
    if let Some(job) = e.downcast_ref::<JobError>().filter(|j| j.is_disk_full()) {
        eprintln!("{}", error_line("runner", e.as_ref()));
        if job.lost_to_full_disk() {
            eprintln!(
                "runner: the disk is full, and this run keeps no partial file: its cells are \
                 lost; free space where the results go and run it again"
            );
        }
        return ExitCode::from(runner::DISK_FULL_EXIT);
    }
    if e.downcast_ref::<JobError>()
        .is_some_and(JobError::is_interrupted)
    {
        eprintln!("runner: {e}");
        return ExitCode::from(runner::interrupted_exit_code());
    }
    eprintln!("{}", error_line("runner", e.as_ref()));
    ExitCode::from(2)
}
