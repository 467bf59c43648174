//! The hidden `runner cap-worker send|restart` subcommand: one ticket's bot, the process the
//! runner kills.
//!
//! `send` decides and sends the ticket's refund the column's way; `restart` finishes a killed
//! ticket's job. Either, with `--wait-go`, first reads one line from stdin (so two workers start
//! together), and with `--crash POINT` announces `INTERLOCK-CRASH-POINT <point>` at that point
//! and blocks until SIGKILLed. When it finishes by itself it prints its report (the restart
//! report's shape) as its last line and exits 0.

use crate::keys::read_signing_key;
use crate::worker::{crash_hook, stripe_client, NO_CRASH};
use crate::worker_error::WorkerError;
use scenarios::billing_credit as bc;
use scenarios::shared_cap::{self as cap, Column};
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

/// Which phase a ticket's worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CapPhase {
    /// Decide and send; killed at the crash point, if one is given.
    Send,
    /// Finish the job after the kill.
    Restart,
}

impl CapPhase {
    /// The subcommand's word for the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            CapPhase::Send => "send",
            CapPhase::Restart => "restart",
        }
    }
}

/// Arguments of the hidden `cap-worker` subcommand (set by the runner).
#[derive(Debug, Clone, clap::Args)]
pub struct CapWorkerArgs {
    /// send or restart.
    #[arg(value_enum)]
    pub phase: CapPhase,
    /// Column: no_check, hand_check, hand_lock or interlock.
    #[arg(long)]
    pub column: String,
    /// The ticket: a or b.
    #[arg(long)]
    pub ticket: String,
    /// Crash point: a step the phase passes (before_send, after_send, lookup, ...) or none.
    #[arg(long, default_value = NO_CRASH)]
    pub crash: String,
    /// Read one line from stdin before starting (the runner's start signal).
    #[arg(long)]
    pub wait_go: bool,
    /// The cell directory holding order.json.
    #[arg(long)]
    pub cell_dir: PathBuf,
    /// The run's private signing key file.
    #[arg(long)]
    pub key_file: PathBuf,
    /// Stripe or emulator base URL.
    #[arg(long)]
    pub base_url: String,
    /// Stripe client request timeout.
    #[arg(long)]
    pub request_timeout_ms: u64,
    /// The refund target's max_in_flight.
    #[arg(long)]
    pub max_in_flight_ms: u64,
    /// The gate's claim TTL.
    #[arg(long)]
    pub claim_ttl_ms: u64,
}

/// Runs a ticket's worker; returns the process exit code.
pub fn main(args: &CapWorkerArgs) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("runner cap-worker {:?} failed: {e}", args.phase);
            1
        }
    }
}

fn run(args: &CapWorkerArgs) -> Result<(), WorkerError> {
    let column: Column = args.column.parse()?;
    let client = stripe_client(
        &args.base_url,
        args.request_timeout_ms,
        column != Column::Interlock,
    )?;
    let key = read_signing_key(&args.key_file)?;
    let settings = bc::ScenarioSettings {
        max_in_flight: Duration::from_millis(args.max_in_flight_ms),
        claim_ttl: Duration::from_millis(args.claim_ttl_ms),
    };
    let crash = match args.crash.as_str() {
        NO_CRASH => None,
        name => Some((bc::CrashPoint::step(name)?, crash_hook())),
    };
    if args.wait_go {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(WorkerError::StartSignal)?;
    }
    let report = match args.phase {
        CapPhase::Send => {
            let status = cap::send(
                column,
                &client,
                &args.cell_dir,
                &args.ticket,
                crash,
                &key,
                &settings,
            )?;
            cap::finished(
                column,
                &client,
                &args.cell_dir,
                &args.ticket,
                status,
                &key,
                &settings,
            )?
        }
        CapPhase::Restart => cap::restart(
            column,
            &client,
            &args.cell_dir,
            &args.ticket,
            &key,
            &settings,
            crash,
        )?,
    };
    let line = serde_json::to_string(&report).map_err(WorkerError::Report)?;
    println!("{line}");
    Ok(())
}
