//! `runner --scenario notify` (DESIGN §4.11): after a $20 refund, an agent emails the customer
//! that the money is on the way. The matrix is crash point × outage × column
//! (`verify::scenarios::notify::plan`). One Postfix instance (the `mailhost` crate, on
//! loopback, delivering into a Maildir) and one Stripe emulator serve the run; each cell opens
//! its own case (its own emulator account, payment and refund), runs a real worker process,
//! SIGKILLs it right before the SMTP transaction or right after the server's `250`, makes the
//! outage while it is dead, restarts it, waits until the mail queue is empty, reads the
//! mailbox, the refund and the approval back and judges with `verify::scenarios::notify`.
//! Writes `DIR/notify.json`, signed with the run's key, and checks it. `--nemesis` runs the
//! campaign of [`nemesis`] on the same services.

mod cell;
mod error;
mod file;
mod nemesis;
mod process;
mod services;
pub mod worker;

use super::{RunKind, ScenarioError, ScenarioOption, ScenarioRun};
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::{install_signal_handler, Interrupted, RunOutcome, SetupError};
use cell::{run_cell, NotifyContext};
pub use error::{NotifyRunError, POSTFIX_HINT};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use verify::contract::Scenario;
use verify::scenarios::notify::{plan, Notify as Rules, Params};

/// The Stripe and SMTP clients' timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The gate's claim TTL (a backstop for a hung but live sender).
pub const CLAIM_TTL: Duration = Duration::from_secs(11);

/// The notify scenario.
pub struct Notify;

impl ScenarioRun for Notify {
    fn name(&self) -> &'static str {
        Rules::NAME
    }

    fn takes(&self, _option: ScenarioOption, _kind: RunKind) -> bool {
        false
    }

    fn refusal(&self, option: ScenarioOption, _kind: RunKind) -> String {
        let flag = option.flag();
        format!(
            "{flag} is not available with --scenario notify: its matrix is every crash point x \
             outage x column, decided by the policy, against the run's own mail server and \
             Stripe emulator (drop {flag})"
        )
    }

    fn matrix(&self, args: &RunArgs) -> Result<RunOutcome, ScenarioError> {
        Ok(run(args)?)
    }

    fn nemesis(&self, args: &RunArgs, list: &str) -> Result<Outcome, ScenarioError> {
        Ok(nemesis::run(args, list).map(Outcome::Cells)?)
    }
}

/// Runs the notify matrix.
pub fn run(args: &RunArgs) -> Result<RunOutcome, NotifyRunError> {
    if args.repeat == 0 {
        return Err(NotifyRunError::NoRepeat);
    }
    let params = Params {
        repeats: args.repeat,
        ..Params::default()
    };
    let cells_plan =
        plan(&params, usize::MAX).map_err(|e| NotifyRunError::CouldNotContinue(e.to_string()))?;
    let command = if args.repeat == 1 {
        "runner --scenario notify".to_owned()
    } else {
        format!("runner --scenario notify --repeat {}", args.repeat)
    };
    run_plan::<Rules>(
        args,
        params,
        &cells_plan,
        &command,
        |p| format!("{}:{}:{}", p.crash_point, p.outage, p.column),
        run_cell,
        file::cell_line,
    )
}

/// Runs `cells_plan` of scenario `S` on the run's mail server and emulator, `one` cell at a
/// time on `--jobs` threads, then signs, writes (`DIR/<S::NAME>.json`) and checks the file.
fn run_plan<S: Scenario>(
    args: &RunArgs,
    params: S::Params,
    cells_plan: &[S::Planned],
    command: &str,
    label: impl Fn(&S::Planned) -> String + Sync,
    one: impl Fn(&NotifyContext<'_>, usize, &S::Planned) -> Result<S::Cell, crate::cell::CellAbort>
        + Sync,
    line: impl Fn(&S::Cell) -> String + Sync,
) -> Result<RunOutcome, NotifyRunError> {
    let jobs = match args.jobs {
        Some(0) => return Err(NotifyRunError::NoJobs),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    }
    .min(cells_plan.len().max(1));
    crate::results::check_writable(&args.out).map_err(|error| NotifyRunError::Out {
        dir: args.out.clone(),
        error,
    })?;
    if !args.no_site {
        site::check_folders(&args.site_out, &args.out).map_err(NotifyRunError::SiteFolder)?;
    }
    let started = Instant::now();
    let (run_dir, key) =
        crate::run::run_dir_and_key("interlock-notify-", args.signing_key.as_deref())?;
    let cancel = Arc::new(AtomicBool::new(false));
    install_signal_handler(cancel.clone()).map_err(SetupError::from)?;
    let services = services::Services::start()?;
    let exe = std::env::current_exe().map_err(SetupError::OwnBinary)?;
    let ctx = NotifyContext {
        services: &services,
        exe: &exe,
        run_dir: run_dir.path(),
        key_file: key.path(),
        cancel: &cancel,
        stripe_url: services.emulator.base_url(),
        smtp_port: services.mail.port(),
        settings: scenarios::billing_credit::ScenarioSettings {
            max_in_flight: Duration::ZERO,
            claim_ttl: CLAIM_TTL,
        },
        request_timeout: REQUEST_TIMEOUT,
        worker_timeout: CLAIM_TTL + Duration::from_secs(60),
    };
    eprintln!(
        "runner: {}, {} cell(s), {jobs} job(s), mail server 127.0.0.1:{} (Postfix), Stripe \
         emulator {}, decider policy",
        S::NAME,
        cells_plan.len(),
        ctx.smtp_port,
        ctx.stripe_url
    );
    let cells = super::cells::run_cells(
        cells_plan,
        jobs,
        ctx.cancel,
        &label,
        &|i, p| one(&ctx, i, p),
        &line,
    )
    .map_err(|stopped| match stopped {
        super::cells::CellsStopped::CouldNotContinue(e) => NotifyRunError::CouldNotContinue(e),
        super::cells::CellsStopped::Interrupted => Interrupted.into(),
    })?;
    drop(services);
    file::finish::<S>(args, &key, params, command, cells, started)
}
