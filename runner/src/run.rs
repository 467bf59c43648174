//! A whole run: plan, key, backend, parallel cells, results, verification, site.

use crate::backend::Backend;
use crate::cell::{self, CellAbort, CellContext};
use crate::cli::RunArgs;
use crate::decider::{anthropic, DeciderKind};
use crate::keys::RunKey;
use crate::matrix;
use crate::progress::Progress;
use crate::results;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verify::results::{ClaimSettings, DeciderInfo, Environment, ResultsFile};

mod errors;
mod provenance;
mod signals;

pub use errors::{RunError, SetupError};
use provenance::reproduce_command;
pub(crate) use provenance::{git_commit, without_password};
pub(crate) use signals::install_signal_handler;
pub use signals::{interrupted_exit_code, Interrupted};
pub(crate) use signals::{note_kept, note_written, stopped_by_signal};

/// What a finished run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// Where the results were written.
    pub results_path: PathBuf,
    /// Cells that are HARNESS_ERROR.
    pub harness_errors: usize,
    /// The results file verified with `verify` (None: verification unavailable).
    pub verified: bool,
    /// The report site was asked for and could not be rendered (the results are written).
    pub site_failed: bool,
}

/// `environment.journal` of a run whose journal was in PostgreSQL.
pub const JOURNAL_POSTGRESQL: &str = "postgresql";

/// The run's own schema in the PostgreSQL database at `url`, created now; returns the URL that
/// puts the journal in it.
pub(crate) fn journal_schema(url: &str, run_id: &str) -> Result<String, SetupError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(SetupError::JournalNotPostgres(without_password(url)));
    }
    let schema = format!("interlock_run_{run_id}");
    let mut client = postgres::Client::connect(url, postgres::NoTls).map_err(|error| {
        SetupError::JournalConnect {
            url: without_password(url),
            error,
        }
    })?;
    client
        .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .map_err(|error| SetupError::JournalSchema {
            schema: schema.clone(),
            error,
        })?;
    let sep = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
}

/// The run's temporary directory (named with `prefix`) and its signing key, held in memory (never
/// in that directory): the stable key of `--signing-key` or the environment when one is given,
/// else a fresh per-run key.
pub(crate) fn run_dir_and_key(
    prefix: &str,
    signing_key: Option<&std::path::Path>,
) -> Result<(tempfile::TempDir, RunKey), SetupError> {
    let run_dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(SetupError::RunDir)?;
    crate::janitor::remove_when_gone(run_dir.path(), std::time::Duration::from_secs(1));
    let key = match crate::keys::stable_key(signing_key)? {
        Some(stable) => RunKey::hold_stable(stable),
        None => RunKey::generate(),
    }
    .map_err(SetupError::RunKey)?;
    Ok((run_dir, key))
}

/// Runs the matrix and writes the results. Returns an error for bad usage or a failed start;
/// [`Interrupted`] after Ctrl-C.
pub fn run(args: &RunArgs) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let (plan, jobs) = checked_plan(args)?;
    let run = Started::start(args)?;
    let rows = match crate::decider::DecideMode::resolve(args.decide, args.decider) {
        crate::decider::DecideMode::PerRow => {
            Some(crate::row_decision::RowDecisions::new(&plan.cells))
        }
        crate::decider::DecideMode::PerCell => None,
    };
    let decider_args = decider_args(args);
    let ctx = run.cell_context(args, rows.as_ref(), &decider_args);
    let cells = run_cells(&ctx, args, &plan, jobs);
    // The manifest is signed with the run's key, read back from where the workers read it.
    let signing_key = crate::keys::read_signing_key(run.key.path()).map_err(SetupError::from)?;
    let cells = collect_cells(cells, &run.cancel)?;
    let environment = run.environment(args, jobs);
    let harness_errors = cells.iter().filter(|c| c.is_harness_error()).count();
    let file =
        results::assemble(&plan, environment, cells, &signing_key).map_err(RunError::Manifest)?;
    drop(signing_key);
    let results_path = write_results(args, &file)?;
    print_summary(&file, started.elapsed());
    if let Some(note) = run.backend.rate_limit_note() {
        say!("{note}");
    }
    say!("results: {}", results_path.display());
    let verified = check_written(&results_path, &run.key.public());
    let site_failed = !publish(args, verified, &run, &results_path);
    Ok(RunOutcome {
        results_path,
        harness_errors,
        verified,
        site_failed,
    })
}

/// What a run checks before anything starts: the cells, the number of jobs, the decider's key,
/// the output directories.
fn checked_plan(args: &RunArgs) -> Result<(matrix::Plan, usize), RunError> {
    let triples = if args.cells.is_empty() {
        None
    } else {
        Some(matrix::parse_cells(&args.cells)?)
    };
    let plan = matrix::plan(triples, args.repeat)?;
    let jobs = match args.jobs {
        Some(0) => return Err(RunError::NoJobs),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    if args.decider == DeciderKind::Anthropic {
        anthropic::api_key_from_env()?;
    }
    results::check_writable(&args.out).map_err(|error| RunError::Out {
        dir: args.out.clone(),
        error,
    })?;
    if !args.no_site {
        results::check_writable(&args.site_out).map_err(|error| RunError::SiteOut {
            dir: args.site_out.clone(),
            error,
        })?;
        site::check_folders(&args.site_out, &args.out).map_err(RunError::SiteFolder)?;
    }
    if args.backend == crate::backend::BackendKind::Stripe && args.seed.is_some() {
        eprintln!(
            "warning: --seed with --backend stripe repeats case ids, and so idempotency keys; \
             do not reuse a seed within 24 h"
        );
    }
    Ok((plan, jobs))
}

/// What a matrix run sets up before its first cell: the seed, the journal's schema, the run's
/// directory and key, the signal handler, the backend.
struct Started {
    seed: u64,
    run_id: String,
    journal: Option<String>,
    run_dir: tempfile::TempDir,
    key: RunKey,
    cancel: Arc<AtomicBool>,
    backend: Backend,
    exe: PathBuf,
}

impl Started {
    fn start(args: &RunArgs) -> Result<Started, SetupError> {
        // 53 bits: the seed is published in the results file, and every integer there must be
        // one any JSON reader holds exactly.
        let seed = args.seed.unwrap_or_else(|| rand::random::<u64>() >> 11);
        let run_id = format!("{:08x}", rand::random::<u32>());
        let journal = match &args.journal {
            Some(url) => Some(journal_schema(url, &run_id)?),
            None => None,
        };
        let (run_dir, key) = run_dir_and_key("interlock-run-", args.signing_key.as_deref())?;
        let cancel = Arc::new(AtomicBool::new(false));
        install_signal_handler(cancel.clone())?;
        let backend = Backend::start(args.backend, &run_id)?;
        backend.prepare()?;
        let exe = std::env::current_exe().map_err(SetupError::OwnBinary)?;
        Ok(Started {
            seed,
            run_id,
            journal,
            run_dir,
            key,
            cancel,
            backend,
            exe,
        })
    }

    fn cell_context<'a>(
        &'a self,
        args: &RunArgs,
        rows: Option<&'a crate::row_decision::RowDecisions>,
        decider_args: &'a [String],
    ) -> CellContext<'a> {
        let settings = self.backend.scenario_settings();
        let decide_timeout = match args.decider {
            DeciderKind::Policy => Duration::from_secs(120),
            DeciderKind::Anthropic => Duration::from_secs(900),
        };
        CellContext {
            rows,
            backend: &self.backend,
            exe: &self.exe,
            run_dir: self.run_dir.path(),
            key_file: self.key.path(),
            public_key: self.key.public(),
            decider_args,
            seed: self.seed,
            clock_start: args.clock_start.unix(),
            outage_ms: args.outage_ms,
            cancel: &self.cancel,
            decide_timeout,
            restart_timeout: settings.claim_ttl + settings.max_in_flight + Duration::from_secs(120),
            journal: self.journal.as_deref(),
        }
    }

    /// The run's record of where and how it ran.
    fn environment(&self, args: &RunArgs, jobs: usize) -> Environment {
        let settings = self.backend.scenario_settings();
        Environment {
            backend: self.backend.name().into(),
            stripe_api_version: stripe::API_VERSION.into(),
            decider: DeciderInfo {
                kind: args.decider.as_str().into(),
                model: (args.decider == DeciderKind::Anthropic).then(|| args.model.clone()),
            },
            runner_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: git_commit(),
            seed: self.seed,
            claim: ClaimSettings {
                max_in_flight_ms: settings.max_in_flight.as_millis() as u64,
                claim_ttl_ms: settings.claim_ttl.as_millis() as u64,
                dedup_window_ms: scenarios::billing_credit::DEDUP_WINDOW.as_millis() as u64,
                dedup_margin_ms: interlock::GateConfig::default().dedup_margin.as_millis() as u64,
            },
            signer: self.key.public_hex(),
            command: reproduce_command(self.seed, args.seed.is_some(), args.clock_start),
            jobs: jobs as u32,
            journal: args.journal.as_ref().map(|_| JOURNAL_POSTGRESQL.to_owned()),
            clock_start: Some(args.clock_start.unix()),
            outage_ms: args.outage_ms,
        }
    }
}

/// The decider's options for the workers.
fn decider_args(args: &RunArgs) -> Vec<String> {
    vec![
        "--decider".to_string(),
        args.decider.as_str().to_string(),
        "--model".to_string(),
        args.model.clone(),
        "--anthropic-base-url".to_string(),
        args.anthropic_base_url.clone(),
    ]
}

/// A cell's result, in its place in the plan (`None`: it never ran).
type Slots = Vec<Option<Result<verify::results::Cell, CellAbort>>>;

/// Runs the plan's cells on `jobs` threads, with a progress line each; a cell that cannot even
/// open its case stops the run.
fn run_cells(ctx: &CellContext<'_>, args: &RunArgs, plan: &matrix::Plan, jobs: usize) -> Slots {
    let progress = Progress::new(plan.cells.len());
    progress.println(&format!(
        "runner: {} cell(s), {} job(s), backend {} ({}), decider {}, seed {}",
        plan.cells.len(),
        jobs.min(plan.cells.len()),
        ctx.backend.name(),
        ctx.backend.base_url(),
        args.decider.as_str(),
        ctx.seed
    ));
    let slots: Mutex<Slots> = Mutex::new((0..plan.cells.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.min(plan.cells.len()) {
            s.spawn(|| loop {
                if ctx.cancel.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(spec) = plan.cells.get(i).copied() else {
                    break;
                };
                let result = run_one(ctx, &progress, i, spec);
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    progress.finish();
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Runs cell `i` with its progress lines; a cell that could not run cancels the others.
fn run_one(
    ctx: &CellContext<'_>,
    progress: &Progress,
    i: usize,
    spec: matrix::CellSpec,
) -> Result<verify::results::Cell, CellAbort> {
    let label = spec.label();
    progress.cell_started(&label);
    let result = cell::run_cell(ctx, i, spec);
    match &result {
        Ok(c) => progress.cell_done(&label, c),
        Err(CellAbort::Setup(e)) => {
            progress.cell_ended(&label);
            progress.println(&format!("{label}: could not run: {e}"));
            ctx.cancel.store(true, Ordering::SeqCst);
        }
        Err(CellAbort::Cancelled) => progress.cell_ended(&label),
    }
    result
}

/// The cells in plan order; an error when one could not run, or the run was interrupted.
fn collect_cells(
    slots: Slots,
    cancel: &AtomicBool,
) -> Result<Vec<verify::results::Cell>, RunError> {
    let mut cells = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Some(Ok(c)) => cells.push(c),
            Some(Err(CellAbort::Setup(e))) => return Err(RunError::CouldNotContinue(e)),
            Some(Err(CellAbort::Cancelled)) | None => return Err(Interrupted.into()),
        }
    }
    if cancel.load(Ordering::SeqCst) {
        return Err(Interrupted.into());
    }
    Ok(cells)
}

/// Writes `DIR/billing_credit.json`; returns its path.
fn write_results(args: &RunArgs, file: &ResultsFile) -> Result<PathBuf, RunError> {
    let bytes = results::to_bytes(file).map_err(RunError::Serialize)?;
    let results_path = args.out.join("billing_credit.json");
    results::write_keeping(&results_path, &bytes).map_err(|error| RunError::Write {
        path: results_path.clone(),
        error,
    })?;
    Ok(results_path)
}

/// After a written run: the site when the file verifies (unless `--no-site`), and the emulator
/// kept serving with `--keep-emulator`. False when the site was to be rendered and could not be.
fn publish(args: &RunArgs, verified: bool, run: &Started, results_path: &Path) -> bool {
    let site_ok = site_after(args, verified);
    if args.keep_emulator {
        keep_serving(&run.backend, &run.run_id, results_path, &run.cancel);
    }
    site_ok
}

/// The site after a written run, unless `--no-site`: rendered when the results verify, else
/// not (and said so). False only when it was to be rendered and could not be.
pub(crate) fn site_after(args: &RunArgs, verified: bool) -> bool {
    if args.no_site {
        return true;
    }
    if !verified {
        eprintln!("site: not rendered, because the results do not verify");
        return true;
    }
    render_site(&args.out, &args.site_out)
}

/// `--keep-emulator`: say where the run's emulator serves and how to reconcile against it, then
/// keep it serving until Ctrl-C.
fn keep_serving(backend: &Backend, run_id: &str, results: &std::path::Path, cancel: &AtomicBool) {
    let url = backend.base_url();
    say!("emulator: serving the run's objects at {url} (emulator run {run_id}) until Ctrl-C");
    say!(
        "emulator: cell i's objects are read with the key {}",
        crate::keys::cell_read_key(run_id, 0).replace("cell000", "cellNNN")
    );
    say!(
        "emulator: runner reconcile {} --base-url {url} --emulator-run {run_id}",
        results.display()
    );
    while !cancel.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Ctrl-C is how serving ends, not an interruption of the run.
    signals::forget_stop();
}

fn print_summary(file: &ResultsFile, wall: Duration) {
    say!(
        "{} cells in {:.1} s (wall), backend {}, decider {}",
        file.cells.len(),
        wall.as_secs_f64(),
        file.environment.backend,
        file.environment.decider.kind
    );
    for column in &file.columns {
        if let Some(s) = file.summary.get(column) {
            let secs = |v: Option<u64>| {
                v.map(|ms| format!("{:.2}s", ms as f64 / 1000.0))
                    .unwrap_or_else(|| "-".into())
            };
            say!(
                "  {column:<10} held {}/{}  answers {}/{}  proof {}/{}  median {} crash->settled ({} after restart){}",
                s.held,
                s.cells,
                s.answer_matches,
                s.cells,
                s.proof,
                s.cells,
                secs(s.median_crash_to_settled_ms),
                secs(s.median_restart_to_settled_ms),
                if s.harness_errors > 0 {
                    format!("  HARNESS_ERROR {}", s.harness_errors)
                } else {
                    String::new()
                }
            );
        }
    }
}

/// Verifies the written file with the verify crate, pinned to the run's key. Prints the verdict.
fn check_written(path: &Path, key: &ed25519_dalek::VerifyingKey) -> bool {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("verify: cannot read {} back: {e}", path.display());
            return false;
        }
    };
    let file = match verify::load::load_results(&bytes) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("verify: {} does not load: {e}", path.display());
            return false;
        }
    };
    let report = verify::check::verify_results(&file, &verify::receipt::KeyCheck::Pinned(*key));
    if report.ok {
        say!(
            "verify: ok ({} cells, {} receipts, signed by the run's key)",
            report.cells,
            report.receipts
        );
        true
    } else {
        eprintln!("verify: the results file does NOT verify:");
        for f in report.first_findings().iter().take(10) {
            eprintln!("  {}", serde_json::to_string(f).unwrap_or_default());
        }
        false
    }
}

/// Renders the report site from the results directory and prints its index path; false (and
/// why, on stderr) when it could not.
pub(crate) fn render_site(results_dir: &Path, out: &Path) -> bool {
    signals::note_rendering(true);
    say!(
        "site: rendering the report of {} into {}",
        results_dir.display(),
        out.display()
    );
    // Built from this checkout: its pages name the commit the site was built from, as the
    // site binary's do.
    let options = site::BuildOptions {
        built_from: site::built_from::BuiltFrom::from_checkout(None),
        ..site::BuildOptions::default()
    };
    let built = site::build_with(results_dir, out, &options);
    signals::note_rendering(false);
    match built {
        Ok(report) => {
            say!("site: {}", report.index.display());
            signals::note_written(out);
            true
        }
        Err(e) => {
            eprintln!("site: could not render the report: {e}");
            false
        }
    }
}
