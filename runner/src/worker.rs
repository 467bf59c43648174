//! The hidden `runner worker decide|restart` subcommand: the processes the runner kills.
//!
//! `decide` reads the case, reads the account (premises and candidates at one instant), asks the
//! decider, then runs the column's send with a crash hook. At the crash point the hook prints
//! `INTERLOCK-CRASH-POINT <point>` on stdout (a pipe to the runner), flushes, and blocks reading
//! stdin, which the runner never writes: the runner SIGKILLs it there. If stdin closes (the runner
//! died), the worker exits without sending. If the send returns instead of reaching the crash
//! point, the worker prints `INTERLOCK-WORKER-STATUS <status>` and exits with code 3, which the
//! runner records as a HARNESS_ERROR.
//!
//! `restart` finishes the column's job with no hook and prints the restart report as one JSON line.

use crate::decider::{self, DeciderKind};
use crate::keys::read_signing_key;
use crate::matrix::{Column, CrashPoint};
use crate::worker_error::WorkerError;
use scenarios::billing_credit as bc;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod decision;
mod hooks;

use decision::{ask_decider, replayed_decision};
pub(crate) use hooks::{block_at, crash_hook, pause_hook};
use hooks::{step_arg, step_hook};

/// Prefix of the line announcing the crash point.
pub const CRASH_LINE_PREFIX: &str = "INTERLOCK-CRASH-POINT ";
/// Prefix of the line a `--crash every` worker prints after each step it passed:
/// `INTERLOCK-STEP <step> <monotonic µs>`.
pub const STEP_LINE_PREFIX: &str = "INTERLOCK-STEP ";
/// Prefix of the line a worker prints when it pauses at its `--pause-at` step.
pub const PAUSE_LINE_PREFIX: &str = "INTERLOCK-PAUSED ";
/// What the runner writes to a paused worker's stdin to let it go on.
pub const CONTINUE_LINE: &str = "continue";
/// `--crash every`: the hook is called at every step (see [`step_hook`]).
pub const EVERY_STEP: &str = "every";
/// Prefix of the line a decide worker prints when its send returned instead of crashing.
pub const STATUS_LINE_PREFIX: &str = "INTERLOCK-WORKER-STATUS ";
/// The environment variable carrying the cell's Stripe key to workers (never on the command line).
pub const STRIPE_KEY_ENV: &str = "INTERLOCK_WORKER_STRIPE_KEY";
/// Test hook: `exit` makes a decide worker exit with code 4 before deciding, `abort` makes it
/// abort (SIGABRT). Used to exercise the runner's HARNESS_ERROR path; never set in real runs.
pub const FAULT_ENV: &str = "INTERLOCK_WORKER_FAULT";
/// The file (in the cell dir) with the premise candidates read at decision time.
pub const OBSERVED_FILE: &str = "decision_observed.json";

/// Which phase a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Decide and send; killed at the crash point.
    Decide,
    /// Finish the job after the kill.
    Restart,
    /// Nemesis trials: finish whatever the killed worker left (see [`resume`]).
    Resume,
}

/// `--crash none`: the decide worker runs with no crash hook (a nemesis kills it unannounced).
pub const NO_CRASH: &str = "none";

/// Arguments of the hidden worker subcommand (set by the runner).
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// decide or restart.
    #[arg(value_enum)]
    pub phase: Phase,
    /// Column.
    #[arg(long)]
    pub column: String,
    /// Crash point (decide only): `before_send`, `after_send`, `none`, or `every` (the nemesis:
    /// print `INTERLOCK-STEP <step>` at every step; kill or pause at `--kill-at`/`--pause-at`).
    #[arg(long)]
    pub crash: String,
    /// With `--crash every`: announce this step and block until SIGKILLed.
    #[arg(long)]
    pub kill_at: Option<String>,
    /// With `--crash every`: announce this step with `INTERLOCK-PAUSED <step>` and wait for a
    /// `continue` line on stdin (the runner changes the world meanwhile).
    #[arg(long)]
    pub pause_at: Option<String>,
    /// The cell directory holding case.json.
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
    /// The credit target's max_in_flight.
    #[arg(long)]
    pub max_in_flight_ms: u64,
    /// The gate's claim TTL.
    #[arg(long)]
    pub claim_ttl_ms: u64,
    /// Per-row decisions: replay the decision saved at this path (another cell's
    /// `decision.json`, its `case.json` beside it) instead of asking the decider.
    #[arg(long)]
    pub decision_from: Option<PathBuf>,
    /// With --decision-from: the label of the cell that decided (recorded as `replayed_from`).
    #[arg(long, requires = "decision_from")]
    pub replayed_from: Option<String>,
    /// Decider kind.
    #[arg(long, value_enum, default_value = "policy")]
    pub decider: DeciderKind,
    /// Model for the anthropic decider.
    #[arg(long, default_value = decider::anthropic::DEFAULT_MODEL)]
    pub model: String,
    /// Messages API base URL.
    #[arg(long, default_value = decider::anthropic::DEFAULT_BASE_URL)]
    pub anthropic_base_url: String,
    /// Announce every read of a fact the column checks or decides on and every credit POST on
    /// stdout (`INTERLOCK-EVENT ...`), for the nemesis's timeline.
    #[arg(long)]
    pub announce_events: bool,
    /// resume only (the `decides_again` nemesis): decide again before finishing, with the
    /// account read afresh and this percentage of the saved decision's amount, as an agent that
    /// lost its memory of the first decision would.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub decide_again_pct: Option<u8>,
}

/// Runs a worker; returns the process exit code.
pub fn main(args: &WorkerArgs) -> i32 {
    bc::announce_events(args.announce_events);
    let result = match args.phase {
        Phase::Decide => decide(args),
        Phase::Restart => restart(args),
        Phase::Resume => resume(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("runner worker {:?} failed: {e}", args.phase);
            1
        }
    }
}

/// The worker's Stripe client. no_check and hand_check are code a careful engineer writes with
/// Stripe's SDK, so their client retries as the official SDKs do by default (a 409 while the
/// first request under the key is still running, a 429, a 5xx, a timeout: two retries with
/// backoff);
/// interlock's gate settles every unknown answer itself, by lookup or resend, so its client
/// retries only what the service invites.
fn client(args: &WorkerArgs) -> Result<stripe::Client, WorkerError> {
    let sdk_retries = column(args)? != Column::Interlock;
    stripe_client(&args.base_url, args.request_timeout_ms, sdk_retries)
}

/// A worker's Stripe client, with the key from [`STRIPE_KEY_ENV`]; `sdk_retries` for the
/// hand-written columns (see [`client`]).
pub(crate) fn stripe_client(
    base_url: &str,
    request_timeout_ms: u64,
    sdk_retries: bool,
) -> Result<stripe::Client, WorkerError> {
    let key = std::env::var(STRIPE_KEY_ENV).map_err(|_| WorkerError::NoStripeKey)?;
    let mut config = stripe::ClientConfig::new(base_url, key)
        .with_timeout(Duration::from_millis(request_timeout_ms));
    if sdk_retries {
        config = config.with_retry(stripe::RetryPolicy::stripe_sdk());
    }
    Ok(stripe::Client::new(config)?)
}

fn settings(args: &WorkerArgs) -> bc::ScenarioSettings {
    bc::ScenarioSettings {
        max_in_flight: Duration::from_millis(args.max_in_flight_ms),
        claim_ttl: Duration::from_millis(args.claim_ttl_ms),
    }
}

fn column(args: &WorkerArgs) -> Result<bc::Column, WorkerError> {
    Ok(Column::parse(&args.column)?)
}

fn decide(args: &WorkerArgs) -> Result<i32, WorkerError> {
    let dir = args.cell_dir.as_path();
    let column = column(args)?;
    let every = args.crash == EVERY_STEP;
    if !every && (args.kill_at.is_some() || args.pause_at.is_some()) {
        return Err(WorkerError::StepsNeedEvery);
    }
    let crash = match args.crash.as_str() {
        NO_CRASH => None,
        EVERY_STEP => Some((
            CrashPoint::Every,
            step_hook(
                step_arg(args.kill_at.as_deref())?,
                step_arg(args.pause_at.as_deref())?,
            ),
        )),
        other => Some((CrashPoint::parse(other)?, crash_hook())),
    };
    if let Some((_, hook)) = crash.as_ref().filter(|_| every) {
        hook(CrashPoint::Started);
    }
    let key = read_signing_key(&args.key_file)?;
    let client = client(args)?;
    let started = bc::monotonic_us();
    let case = bc::CaseFile::load(dir)?;
    // The decision is made under the approval as read now (its cap bounds the amount).
    bc::announce_read("approval", started);
    match std::env::var(FAULT_ENV).as_deref() {
        Ok("exit") => {
            eprintln!("worker: injected fault ({FAULT_ENV}=exit): exiting before deciding");
            return Ok(4);
        }
        Ok("abort") => {
            eprintln!("worker: injected fault ({FAULT_ENV}=abort): aborting");
            std::process::abort();
        }
        _ => {}
    }
    let account = bc::read_account(&client, &case)?;
    write_small_json(&dir.join(OBSERVED_FILE), &account.observed)?;

    let decision = match &args.decision_from {
        Some(path) => replayed_decision(path, args.replayed_from.as_deref(), &case, &account)?,
        None => ask_decider(args, &case, &account)?,
    };
    let status = bc::decide_and_send(
        column,
        &client,
        dir,
        &case,
        &decision,
        crash.clone(),
        &key,
        &settings(args),
    )?;
    println!("{STATUS_LINE_PREFIX}{status}");
    let Some((crash, _)) = crash.filter(|_| !every) else {
        return Ok(0);
    };
    eprintln!(
        "worker: the {} send returned {status} without reaching the {} crash point",
        column.as_str(),
        crash.as_str()
    );
    Ok(3)
}

/// The restart of a nemesis trial: whatever the killed worker left, finish it as the column
/// would after a crash. No decision saved: nothing can have been sent, report `NOT_DECIDED`.
/// Interlock with a decision but no dispatch the gate can recover (killed before DISPATCHED):
/// submit the saved decision again (the gate re-checks lease and premises), then recover. Every
/// other case: the column's own restart.
fn resume(args: &WorkerArgs) -> Result<i32, WorkerError> {
    let column = column(args)?;
    let crash = match args.crash.as_str() {
        NO_CRASH => None,
        EVERY_STEP => {
            let hook = step_hook(step_arg(args.kill_at.as_deref())?, None);
            hook(CrashPoint::Started);
            Some((CrashPoint::Every, hook))
        }
        other => return Err(WorkerError::ResumeCrash(other.to_owned())),
    };
    let key = read_signing_key(&args.key_file)?;
    let client = client(args)?;
    let dir = args.cell_dir.as_path();
    let restart = |crash: Option<bc::Crash>| {
        bc::restart_with(column, &client, dir, &key, &settings(args), crash)
    };
    if let Some(pct) = args
        .decide_again_pct
        .filter(|_| dir.join(bc::DECISION_FILE).exists())
    {
        decide_again(args, &client, dir, pct, crash.clone())?;
    }
    let report = if !dir.join(bc::DECISION_FILE).exists() {
        bc::RestartReport::without_gate(
            NOT_DECIDED.into(),
            None,
            json!({"note": "killed before any decision was saved: nothing to resume"}),
        )
    } else {
        match restart(crash.clone()) {
            Ok(r) => r,
            Err(first) if column == bc::Column::Interlock => {
                let case = bc::CaseFile::load(dir)?;
                let decision = bc::load_decision(dir)?;
                eprintln!("worker: recovery found nothing to recover ({first}); submitting the saved decision");
                bc::decide_and_send(
                    column,
                    &client,
                    dir,
                    &case,
                    &decision,
                    crash.clone(),
                    &key,
                    &settings(args),
                )?;
                restart(crash)?
            }
            Err(e) => return Err(e.into()),
        }
    };
    let line = serde_json::to_string(&report)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(0)
}

/// `decides_again`: the restarted worker reads the account afresh and decides again, proposing
/// `pct` % of the saved decision's amount (at least one cent), and saves that decision in place
/// of the first. interlock submits the new proposal through the gate (which compares it with
/// whatever the journal already holds for the request); no_check and hand_check send it from
/// their restart, as they would any saved decision.
fn decide_again(
    args: &WorkerArgs,
    client: &stripe::Client,
    dir: &Path,
    pct: u8,
    crash: Option<bc::Crash>,
) -> Result<(), WorkerError> {
    let column = column(args)?;
    let case = bc::CaseFile::load(dir)?;
    let first = bc::load_decision(dir)?;
    bc::announce_read("approval", bc::monotonic_us());
    let account = bc::read_account(client, &case)?;
    let amount = (first.amount * i64::from(pct) / 100).max(1);
    let again = verify::results::Decision {
        amount,
        description: format!("{} (decided again after a restart)", first.description),
        decider: first.decider.clone(),
        premises: account.premises.clone(),
        replayed_from: None,
    };
    eprintln!(
        "worker: deciding again: {amount} cents ({pct} % of the first decision's {})",
        first.amount
    );
    if column == bc::Column::Interlock {
        let key = read_signing_key(&args.key_file)?;
        let status = bc::decide_and_send(
            column,
            client,
            dir,
            &case,
            &again,
            crash,
            &key,
            &settings(args),
        )?;
        eprintln!("worker: the gate answered the second decision with {status}");
        return Ok(());
    }
    Ok(bc::save_decision(dir, &again)?)
}

/// The status of a trial whose worker was killed before any decision was saved.
pub const NOT_DECIDED: &str = "NOT_DECIDED";

fn restart(args: &WorkerArgs) -> Result<i32, WorkerError> {
    let column = column(args)?;
    let key = read_signing_key(&args.key_file)?;
    let client = client(args)?;
    let report = bc::restart(column, &client, &args.cell_dir, &key, &settings(args))?;
    let line = serde_json::to_string(&report)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(0)
}

fn write_small_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), WorkerError> {
    let bytes = serde_json::to_vec(value)?;
    let mut f = std::fs::File::create(path).map_err(|source| WorkerError::Create {
        path: path.to_owned(),
        source,
    })?;
    f.write_all(&bytes)
        .and_then(|_| f.sync_all())
        .map_err(|source| WorkerError::Write {
            path: path.to_owned(),
            source,
        })
}
