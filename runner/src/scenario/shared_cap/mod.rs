//! `runner --scenario shared_cap` (DESIGN §4.7): two support bots refund one order under one
//! cap. The matrix is crash point of worker `a` × overlap × column (`verify::shared_cap::plan`);
//! each cell opens its own order on its own account, runs two real worker processes, SIGKILLs
//! `a` where the row says, restarts it, reads every refund back and judges with
//! `verify::shared_cap`. Writes `DIR/shared_cap.json`, signed with the run's key, and checks it.

pub mod cell;
pub mod error;
pub mod hosts;
pub mod nemesis;
pub mod worker;

use super::{RunKind, ScenarioOption, ScenarioRun};
use crate::backend::Backend;
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::{git_commit, install_signal_handler, Interrupted, RunOutcome, SetupError};
use crate::scenario::ScenarioError;
use cell::{run_cell, CapContext};
pub use error::SharedCapError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verify::shared_cap::check::{check, sign, FORMAT};
use verify::shared_cap::plan::{columns_for, every_step_plan, plan, PlannedCell, DATABASE_JOURNAL};
use verify::shared_cap::record::{CapEnvironment, CapResults, SCENARIO};
use verify::shared_cap::summary::{columns_of, summarize};

/// The shared_cap scenario.
pub struct SharedCap;

impl ScenarioRun for SharedCap {
    fn name(&self) -> &'static str {
        SCENARIO
    }

    fn takes(&self, option: ScenarioOption, kind: RunKind) -> bool {
        matches!(
            (option, kind),
            (ScenarioOption::TwoHosts, _) | (ScenarioOption::EveryStep, RunKind::Matrix)
        )
    }

    fn refusal(&self, option: ScenarioOption, _kind: RunKind) -> String {
        let flag = option.flag();
        match option {
            ScenarioOption::EveryStep => {
                "--every-step is the matrix's; a nemesis draws its own steps (drop --every-step)"
                    .into()
            }
            ScenarioOption::Shard => "--shard slices billing_credit's campaigns only; a \
                                      shared_cap campaign runs whole (drop --shard)"
                .into(),
            _ => format!(
                "{flag} is not available with --scenario shared_cap: its matrix is every crash \
                 point x overlap x column, decided by the policy (drop {flag})"
            ),
        }
    }

    fn matrix(&self, args: &RunArgs) -> Result<RunOutcome, ScenarioError> {
        Ok(run(args)?)
    }

    fn nemesis(&self, args: &RunArgs, list: &str) -> Result<Outcome, ScenarioError> {
        Ok(nemesis::run(args, list).map(Outcome::Cells)?)
    }
}

/// Where a run's journal is, in `environment.journal`'s words: its PostgreSQL database with
/// `--journal`, else one file per cell. `hand_pg_lock` runs only on the database.
pub(crate) fn journal_kind(args: &RunArgs) -> &'static str {
    if args.journal.is_some() {
        DATABASE_JOURNAL
    } else {
        "file"
    }
}

/// What a run checks before any cell runs: the plan, the number of jobs, the output
/// directories.
fn checked_plan(args: &RunArgs) -> Result<(Vec<PlannedCell>, usize), SharedCapError> {
    let columns = columns_for(journal_kind(args));
    let cells_plan = if args.every_step {
        every_step_plan(args.repeat, &columns)
    } else {
        plan(args.repeat, &columns)
    };
    if cells_plan.is_empty() {
        return Err(SharedCapError::NoRepeat);
    }
    let jobs = match args.jobs {
        Some(0) => return Err(SharedCapError::NoJobs),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    crate::results::check_writable(&args.out).map_err(|error| SharedCapError::Out {
        dir: args.out.clone(),
        error,
    })?;
    if !args.no_site {
        crate::results::check_writable(&args.site_out).map_err(|error| {
            SharedCapError::SiteOut {
                dir: args.site_out.clone(),
                error,
            }
        })?;
        site::check_folders(&args.site_out, &args.out).map_err(SharedCapError::SiteFolder)?;
    }
    let jobs = jobs.min(cells_plan.len());
    Ok((cells_plan, jobs))
}

/// What every shared_cap run sets up before its first cell: the seed, the journal's schema, the
/// run's directory and key, the backend, and the hosts with `--two-hosts`.
pub(crate) struct Setup {
    seed: u64,
    journal: Option<String>,
    run_dir: tempfile::TempDir,
    key: crate::keys::RunKey,
    cancel: Arc<AtomicBool>,
    backend: Backend,
    hosts: Option<hosts::Hosts>,
    exe: std::path::PathBuf,
}

impl Setup {
    pub(crate) fn new(args: &RunArgs) -> Result<Setup, SharedCapError> {
        let seed = args.seed.unwrap_or_else(|| rand::random::<u64>() >> 11);
        let run_id = format!("{:08x}", rand::random::<u32>());
        let journal = match &args.journal {
            Some(url) => Some(crate::run::journal_schema(url, &run_id)?),
            None => None,
        };
        let (run_dir, key) =
            crate::run::run_dir_and_key("interlock-shared-cap-", args.signing_key.as_deref())?;
        let cancel = Arc::new(AtomicBool::new(false));
        install_signal_handler(cancel.clone()).map_err(SetupError::from)?;
        let backend = Backend::start(args.backend, &run_id).map_err(SetupError::from)?;
        let hosts = match (&journal, args.two_hosts) {
            (Some(url), true) => Some(hosts::Hosts::make(backend.base_url(), url)?),
            _ => None,
        };
        let exe = std::env::current_exe().map_err(SetupError::OwnBinary)?;
        Ok(Setup {
            seed,
            journal,
            run_dir,
            key,
            cancel,
            backend,
            hosts,
            exe,
        })
    }

    pub(crate) fn context(&self) -> CapContext<'_> {
        let settings = self.backend.scenario_settings();
        CapContext {
            backend: &self.backend,
            exe: &self.exe,
            run_dir: self.run_dir.path(),
            key_file: self.key.path(),
            public_key: self.key.public(),
            seed: self.seed,
            cancel: &self.cancel,
            worker_timeout: settings.claim_ttl + settings.max_in_flight + Duration::from_secs(120),
            journal: self.journal.as_deref(),
            hosts: self.hosts.as_ref(),
        }
    }

    /// The line a run starts with.
    pub(crate) fn announce(&self, what: &str, jobs: usize) {
        let hosts = match &self.hosts {
            Some(h) => format!(
                ", workers on two hosts ({})",
                hosts::HOST_NAMES
                    .iter()
                    .filter_map(|n| h.view(n).map(|v| v.namespace.clone()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => String::new(),
        };
        eprintln!(
            "runner: shared_cap, {what}, {jobs} job(s), backend {} ({}), decider policy, seed {}{hosts}",
            self.backend.name(),
            self.backend.base_url(),
            self.seed,
        );
    }

    /// The run's record of where and how it ran; `options` are the re-run command's own
    /// options (`--every-step`, `--nemesis ...`).
    pub(crate) fn environment(&self, args: &RunArgs, options: &str) -> CapEnvironment {
        let settings = self.backend.scenario_settings();
        CapEnvironment {
            backend: self.backend.name().into(),
            stripe_api_version: stripe::API_VERSION.into(),
            decider: "policy".into(),
            runner_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: git_commit(),
            seed: self.seed,
            public_key: self.key.public_hex(),
            journal: journal_kind(args).into(),
            max_in_flight_ms: settings.max_in_flight.as_millis() as u64,
            command: format!(
                "runner --scenario shared_cap --seed {}{options}{}{}{}",
                self.seed,
                match args.jobs {
                    Some(n) => format!(" --jobs {n}"),
                    None => String::new(),
                },
                if self.hosts.is_some() {
                    " --two-hosts"
                } else {
                    ""
                },
                match &args.journal {
                    Some(url) => format!(" --journal {}", crate::run::without_password(url)),
                    None => String::new(),
                }
            ),
            hosts: self.hosts.as_ref().map(|_| hosts::HOST_NAMES.len() as u32),
        }
    }

    /// Removes the hosts, reads the run's private key back and deletes its file; returns the
    /// key and its public half.
    pub(crate) fn finish(
        self,
    ) -> Result<(ed25519_dalek::SigningKey, ed25519_dalek::VerifyingKey), SetupError> {
        drop(self.hosts);
        let signing_key = crate::keys::read_signing_key(self.key.path()).map_err(SetupError::from);
        let public = self.key.public();
        Ok((signing_key?, public))
    }
}

/// The results of a run's cells, in plan order; an error when one could not even open its
/// order, or the run was interrupted.
pub(crate) fn collect<T>(
    slots: Vec<Option<Result<T, crate::cell::CellAbort>>>,
) -> Result<Vec<T>, SharedCapError> {
    let mut out = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Some(Ok(c)) => out.push(c),
            Some(Err(crate::cell::CellAbort::Setup(e))) => {
                return Err(SharedCapError::CouldNotContinue(e))
            }
            Some(Err(crate::cell::CellAbort::Cancelled)) | None => return Err(Interrupted.into()),
        }
    }
    Ok(out)
}

/// Runs the shared_cap matrix.
pub fn run(args: &RunArgs) -> Result<RunOutcome, SharedCapError> {
    let (cells_plan, jobs) = checked_plan(args)?;
    let started = Instant::now();
    let setup = Setup::new(args)?;
    setup.announce(&format!("{} cell(s)", cells_plan.len()), jobs);
    let ctx = setup.context();
    let slots = run_parallel(&ctx, cells_plan.len(), jobs, |i| {
        let spec = cells_plan[i];
        let result = run_cell(&ctx, i, spec);
        let line = match &result {
            Ok(c) => cell_line(c),
            Err(cell_abort) => format!("{cell_abort:?}"),
        };
        let label = format!("{}:{}:{}", spec.crash_point, spec.overlap, spec.column);
        (result, label, line)
    });
    let environment = setup.environment(
        args,
        &format!(
            "{}{}",
            if args.every_step { " --every-step" } else { "" },
            if args.repeat == 1 {
                String::new()
            } else {
                format!(" --repeat {}", args.repeat)
            }
        ),
    );
    let (signing_key, public) = setup.finish()?;
    let cells = collect(slots)?;
    let file = write_signed(args, environment, cells, &signing_key)?;
    drop(signing_key);
    print_summary(&file, started.elapsed());
    let path = args.out.join(results_file(&file.environment));
    say!("results: {}", path.display());
    let verified = check_written(&file, &public);
    Ok(RunOutcome {
        harness_errors: file.cells.iter().filter(|c| !c.judged()).count(),
        results_path: path,
        site_failed: !crate::run::site_after(args, verified),
        verified,
    })
}

/// The file a run writes into `--out`: `shared_cap.json`, or `shared_cap_two_hosts.json`.
pub fn results_file(env: &CapEnvironment) -> String {
    format!("{}.json", verify::shared_cap::record::run_name(env))
}

/// Runs `n` cells (or trials) on `jobs` threads; `one(i)` runs the i-th and gives its result,
/// label and line, printed as it ends. A cell that cannot even open its order stops the run.
pub(crate) fn run_parallel<T: Send>(
    ctx: &CapContext<'_>,
    n: usize,
    jobs: usize,
    one: impl Fn(usize) -> (Result<T, crate::cell::CellAbort>, String, String) + Sync,
) -> Vec<Option<Result<T, crate::cell::CellAbort>>> {
    let slots = Mutex::new((0..n).map(|_| None).collect::<Vec<_>>());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if ctx.cancel.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let (result, label, line) = one(i);
                eprintln!("  [{}/{n}] {label} {line}", i + 1);
                if matches!(result, Err(crate::cell::CellAbort::Setup(_))) {
                    ctx.cancel.store(true, Ordering::SeqCst);
                }
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Summarizes, signs and writes `DIR/shared_cap.json`.
fn write_signed(
    args: &RunArgs,
    environment: CapEnvironment,
    cells: Vec<verify::shared_cap::record::CapCell>,
    key: &ed25519_dalek::SigningKey,
) -> Result<CapResults, SharedCapError> {
    let mut file = CapResults {
        format: FORMAT.to_owned(),
        scenario: SCENARIO.to_owned(),
        generated_at: crate::results::now_rfc3339(),
        environment,
        want: verify::shared_cap::WANT.to_owned(),
        summary: summarize(&cells, &columns_of(&cells)),
        cells,
        signature: None,
    };
    sign(&mut file, key).map_err(SharedCapError::SignResults)?;
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(SharedCapError::SerializeResults)?;
    bytes.push(b'\n');
    let path = args.out.join(results_file(&file.environment));
    crate::results::write_keeping(&path, &bytes).map_err(|error| SharedCapError::Write {
        path: path.clone(),
        error,
    })?;
    Ok(file)
}

/// Checks the written file with verify's rules against the run's key and prints the verdict.
fn check_written(file: &CapResults, key: &ed25519_dalek::VerifyingKey) -> bool {
    let report = check(file, &verify::receipt::KeyCheck::Pinned(*key));
    if report.ok {
        say!(
            "verify: ok ({} cells, signed by the run's key)",
            report.cells
        );
    } else {
        eprintln!("verify: the results file does NOT verify:");
        for f in report.findings.iter().take(10) {
            eprintln!("  {f}");
        }
    }
    report.ok
}

pub(crate) fn cell_line(c: &verify::shared_cap::record::CapCell) -> String {
    if let Some(e) = &c.harness_error {
        return format!("HARNESS_ERROR: {e}");
    }
    let statuses: Vec<String> = c
        .tickets
        .iter()
        .map(|t| format!("{}={}", t.name, t.status))
        .collect();
    format!(
        "{} refunded {} cents ({} refund(s)) {}",
        if c.invariant_held { "held" } else { "VIOLATED" },
        c.truth.refunded_cents(),
        c.truth.refunds.iter().filter(|r| r.counts()).count(),
        statuses.join(" ")
    )
}

fn print_summary(file: &CapResults, wall: Duration) {
    say!(
        "{} cells in {:.1} s (wall), backend {}, decider policy",
        file.cells.len(),
        wall.as_secs_f64(),
        file.environment.backend
    );
    for s in &file.summary {
        say!(
            "  {:<10} held {}/{}  a killed {}  over the cap {}  answers {}/{}  proof {}/{} tickets{}",
            s.column,
            s.held,
            s.cells,
            s.killed,
            s.over_cap,
            s.answers_matched,
            s.cells,
            s.proved,
            s.tickets,
            if s.harness_errors > 0 {
                format!("  HARNESS_ERROR {}", s.harness_errors)
            } else {
                String::new()
            }
        );
    }
}
