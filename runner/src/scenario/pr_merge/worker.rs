//! The hidden `runner merge-worker send|restart` subcommand: a pr_merge case's worker, the
//! process the runner kills.
//!
//! `send` decides and merges the column's way; `restart` finishes a killed worker's job. With
//! `--crash POINT` it announces `INTERLOCK-CRASH-POINT <point>` at that point and blocks until
//! SIGKILLed. When it finishes by itself it prints its report (the restart report's shape) as its
//! last line and exits 0.

use crate::keys::read_signing_key;
use crate::worker::{crash_hook, pause_hook, NO_CRASH};
use scenarios::billing_credit as bc;
use scenarios::pr_merge::{self as pm, Column};
use std::path::PathBuf;
use std::time::Duration;

/// Which phase a case's worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MergePhase {
    /// Decide and merge; killed at the crash point, if one is given.
    Send,
    /// Finish the job after the kill.
    Restart,
}

impl MergePhase {
    /// The subcommand's word for the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            MergePhase::Send => "send",
            MergePhase::Restart => "restart",
        }
    }
}

/// Arguments of the hidden `merge-worker` subcommand (set by the runner).
#[derive(Debug, Clone, clap::Args)]
pub struct MergeWorkerArgs {
    /// send or restart.
    #[arg(value_enum)]
    pub phase: MergePhase,
    /// Column: no_check, native, hand_check or interlock.
    #[arg(long)]
    pub column: String,
    /// Crash point: before_send, after_send (or another step the phase passes), or none.
    #[arg(long, default_value = NO_CRASH)]
    pub crash: String,
    /// Pause at this step (print `INTERLOCK-PAUSED <step>`, wait for a line on stdin, go on):
    /// the runner changes the world meanwhile. With a --crash point, the crash point wins.
    #[arg(long)]
    pub pause_at: Option<String>,
    /// The cell directory holding case.json.
    #[arg(long)]
    pub cell_dir: PathBuf,
    /// The run's private signing key file.
    #[arg(long)]
    pub key_file: PathBuf,
    /// The forge's base URL.
    #[arg(long)]
    pub forge_url: String,
    /// The case's repository at the forge.
    #[arg(long)]
    pub repo: String,
    /// The forge client's request timeout.
    #[arg(long)]
    pub request_timeout_ms: u64,
    /// The merge target's max_in_flight.
    #[arg(long)]
    pub max_in_flight_ms: u64,
    /// The gate's claim TTL.
    #[arg(long)]
    pub claim_ttl_ms: u64,
}

/// Why a merge worker failed.
#[derive(Debug, thiserror::Error)]
enum MergeWorkerError {
    #[error(transparent)]
    Merge(#[from] pm::MergeError),
    #[error(transparent)]
    Scenario(#[from] bc::ScenarioError),
    #[error("cannot make the forge client: {0}")]
    Client(#[source] forge::client::ClientError),
    #[error("cannot read the run's key: {0}")]
    Key(String),
    #[error("cannot render the report: {0}")]
    Report(#[source] serde_json::Error),
}

/// Runs a case's worker; returns the process exit code.
pub fn main(args: &MergeWorkerArgs) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("runner merge-worker {} failed: {e}", args.phase.as_str());
            1
        }
    }
}

fn run(args: &MergeWorkerArgs) -> Result<(), MergeWorkerError> {
    let column: Column = args.column.parse()?;
    let client = forge::client::Client::new(
        &args.forge_url,
        &args.repo,
        Duration::from_millis(args.request_timeout_ms),
    )
    .map_err(MergeWorkerError::Client)?;
    let key = read_signing_key(&args.key_file).map_err(|e| MergeWorkerError::Key(e.to_string()))?;
    let settings = bc::ScenarioSettings {
        max_in_flight: Duration::from_millis(args.max_in_flight_ms),
        claim_ttl: Duration::from_millis(args.claim_ttl_ms),
    };
    let crash = match (args.crash.as_str(), &args.pause_at) {
        (NO_CRASH, None) => None,
        (NO_CRASH, Some(step)) => Some((bc::CrashPoint::step(step)?, pause_hook())),
        (name, _) => Some((bc::CrashPoint::step(name)?, crash_hook())),
    };
    let report = match args.phase {
        MergePhase::Send => {
            let status = pm::send(column, &client, &args.cell_dir, crash, &key, &settings)?;
            pm::finished(column, &client, &args.cell_dir, status, &key, &settings)?
        }
        MergePhase::Restart => {
            pm::restart(column, &client, &args.cell_dir, &key, &settings, crash)?
        }
    };
    let line = serde_json::to_string(&report).map_err(MergeWorkerError::Report)?;
    println!("{line}");
    Ok(())
}
