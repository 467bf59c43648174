//! `runner --scenario notify` (DESIGN §4.11): after a $20 refund, an agent emails the customer
//! that the money is on the way. The matrix is crash point × outage × column
//! (`verify::scenarios::notify::plan`). One Postfix instance (the `mailhost` crate, on
//! loopback, delivering into a Maildir) and one Stripe emulator serve the run; each cell opens
//! its own case (its own emulator account, payment and refund), runs a real worker process,
//! SIGKILLs it right before the SMTP transaction or right after the server's `250`, makes the
//! outage while it is dead, restarts it, waits until the mail queue is empty, reads the
//! mailbox, the refund and the approval back and judges with `verify::scenarios::notify`.
//! Writes `DIR/notify.json`, signed with the run's key, and checks it.

mod cell;
mod error;
mod file;
mod process;
mod services;
pub mod worker;

use super::{RunKind, ScenarioError, ScenarioOption, ScenarioRun};
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::{install_signal_handler, Interrupted, RunOutcome, SetupError};
use cell::{run_cell, NotifyContext};
pub use error::{NotifyRunError, POSTFIX_HINT};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verify::contract::Scenario;
use verify::scenarios::notify::{plan, Cell, Notify as Rules, Params, Planned};

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

    fn nemesis(&self, _args: &RunArgs, _list: &str) -> Result<Outcome, ScenarioError> {
        Err(ScenarioError::NotBuilt {
            name: Rules::NAME,
            why: "its nemesis is not built yet (run its matrix without --nemesis)",
        })
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
        site::check_out_dir(&args.site_out).map_err(NotifyRunError::SiteFolder)?;
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
        "runner: notify, {} cell(s), {jobs} job(s), mail server 127.0.0.1:{} (Postfix), Stripe \
         emulator {}, decider policy",
        cells_plan.len(),
        ctx.smtp_port,
        ctx.stripe_url
    );
    let cells = run_cells(&ctx, &cells_plan, jobs)?;
    drop(services);
    file::finish(args, &key, params, cells, started)
}

/// Runs every planned cell on `jobs` threads, in plan order in the result.
fn run_cells(
    ctx: &NotifyContext<'_>,
    cells_plan: &[Planned],
    jobs: usize,
) -> Result<Vec<Cell>, NotifyRunError> {
    let n = cells_plan.len();
    let slots = Mutex::new((0..n).map(|_| None).collect::<Vec<_>>());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if ctx.cancel.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(p) = cells_plan.get(i) else { break };
                let result = run_cell(ctx, i, p);
                let shown = match &result {
                    Ok(c) => file::cell_line(c),
                    Err(abort) => format!("{abort:?}"),
                };
                eprintln!(
                    "  [{}/{n}] {}:{}:{} {shown}",
                    i + 1,
                    p.crash_point,
                    p.outage,
                    p.column
                );
                if matches!(result, Err(crate::cell::CellAbort::Setup(_))) {
                    ctx.cancel.store(true, Ordering::SeqCst);
                }
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut cells = Vec::with_capacity(n);
    for slot in slots {
        match slot {
            Some(Ok(c)) => cells.push(c),
            Some(Err(crate::cell::CellAbort::Setup(e))) => {
                return Err(NotifyRunError::CouldNotContinue(e))
            }
            Some(Err(crate::cell::CellAbort::Cancelled)) | None => return Err(Interrupted.into()),
        }
    }
    Ok(cells)
}
