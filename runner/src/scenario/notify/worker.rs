//! The hidden `runner notify-worker send|restart` subcommand: a notify case's worker, the
//! process the runner kills.
//!
//! `send` decides and sends the email the column's way; `restart` finishes a killed worker's
//! job. With `--crash POINT` it announces `INTERLOCK-CRASH-POINT <point>` at that point and
//! blocks until SIGKILLed. When it finishes by itself it prints its report (the restart
//! report's shape) as its last line and exits 0.

use crate::keys::read_signing_key;
use crate::worker::{block_at, crash_hook, pause_hook, NO_CRASH, STRIPE_KEY_ENV};
use scenarios::billing_credit as bc;
use scenarios::notify::{self as nt, Column, MailServer, Worker};
use std::path::PathBuf;
use std::time::Duration;
use verify::scenarios::notify_nemesis::MID_DATA;

/// Which phase a case's worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NotifyPhase {
    /// Decide and send; killed at the crash point, if one is given.
    Send,
    /// Finish the job after the kill.
    Restart,
}

impl NotifyPhase {
    /// The subcommand's word for the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyPhase::Send => "send",
            NotifyPhase::Restart => "restart",
        }
    }
}

/// Arguments of the hidden `notify-worker` subcommand (set by the runner; the case's Stripe
/// key comes in the environment, as for the other workers).
#[derive(Debug, Clone, clap::Args)]
pub struct NotifyWorkerArgs {
    /// send or restart.
    #[arg(value_enum)]
    pub phase: NotifyPhase,
    /// Column: no_check, hand_check, hand_resend or interlock.
    #[arg(long)]
    pub column: String,
    /// Crash point: before_send, after_send, mid_data (inside the SMTP DATA, half of the
    /// message at the server) or another step the phase passes, or none.
    #[arg(long, default_value = NO_CRASH)]
    pub crash: String,
    /// Pause at this step (print `INTERLOCK-PAUSED <step>`, wait for `continue` on stdin, go
    /// on): where a nemesis changes the case under a live worker.
    #[arg(long)]
    pub pause_at: Option<String>,
    /// The cell directory holding case.json.
    #[arg(long)]
    pub cell_dir: PathBuf,
    /// The run's private signing key file.
    #[arg(long)]
    pub key_file: PathBuf,
    /// The Stripe emulator's base URL.
    #[arg(long)]
    pub stripe_url: String,
    /// The mail server's SMTP port on 127.0.0.1.
    #[arg(long)]
    pub smtp_port: u16,
    /// The Stripe and SMTP clients' timeout.
    #[arg(long)]
    pub request_timeout_ms: u64,
    /// The gate's claim TTL.
    #[arg(long)]
    pub claim_ttl_ms: u64,
}

/// Why a notify worker failed.
#[derive(Debug, thiserror::Error)]
enum NotifyWorkerError {
    #[error(transparent)]
    Notify(#[from] nt::NotifyError),
    #[error(transparent)]
    Scenario(#[from] bc::ScenarioError),
    #[error("no Stripe key in {STRIPE_KEY_ENV}")]
    NoStripeKey,
    #[error("cannot make the Stripe client: {0}")]
    Client(#[source] stripe::StripeError),
    #[error("cannot read the run's key: {0}")]
    Key(String),
    #[error("cannot render the report: {0}")]
    Report(#[source] serde_json::Error),
}

/// Runs a case's worker; returns the process exit code.
pub fn main(args: &NotifyWorkerArgs) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("runner notify-worker {} failed: {e}", args.phase.as_str());
            1
        }
    }
}

fn run(args: &NotifyWorkerArgs) -> Result<(), NotifyWorkerError> {
    let column: Column = args.column.parse()?;
    let timeout = Duration::from_millis(args.request_timeout_ms);
    let api_key = std::env::var(STRIPE_KEY_ENV).map_err(|_| NotifyWorkerError::NoStripeKey)?;
    let stripe = stripe::Client::new(
        stripe::ClientConfig::new(args.stripe_url.clone(), api_key).with_timeout(timeout),
    )
    .map_err(NotifyWorkerError::Client)?;
    let server = MailServer {
        host: "127.0.0.1".into(),
        port: args.smtp_port,
        timeout,
    };
    let key =
        read_signing_key(&args.key_file).map_err(|e| NotifyWorkerError::Key(e.to_string()))?;
    let settings = bc::ScenarioSettings {
        // A tier-3 target states no in-flight bound; this one is not read.
        max_in_flight: Duration::ZERO,
        claim_ttl: Duration::from_millis(args.claim_ttl_ms),
    };
    let mid_data =
        (args.crash == MID_DATA).then(|| std::sync::Arc::new(|| block_at(MID_DATA)) as nt::MidData);
    let worker = Worker {
        stripe: &stripe,
        server: &server,
        cell_dir: &args.cell_dir,
        gate_key: &key,
        settings: &settings,
        mid_data,
    };
    let crash = match (args.crash.as_str(), &args.pause_at) {
        (_, Some(step)) => Some((bc::CrashPoint::step(step)?, pause_hook())),
        (NO_CRASH | MID_DATA, None) => None,
        (name, None) => Some((bc::CrashPoint::step(name)?, crash_hook())),
    };
    let report = match args.phase {
        NotifyPhase::Send => {
            let status = nt::send(&worker, column, crash)?;
            nt::finished(&worker, column, status)?
        }
        NotifyPhase::Restart => nt::restart(&worker, column, crash)?,
    };
    let line = serde_json::to_string(&report).map_err(NotifyWorkerError::Report)?;
    println!("{line}");
    Ok(())
}
