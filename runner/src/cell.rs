//! Running one cell: open the case, start the decide worker, SIGKILL it at its crash point, run
//! the outage while it is dead, start the restart worker, read ground truth and judge.
//!
//! Every way the harness can fail to run the cell as designed (the worker exits by itself, dies
//! of another signal, announces the wrong point, times out, a read fails, the restart fails)
//! becomes a `HARNESS_ERROR` cell with the reason and the worker's stderr tail. Only failures
//! before the case exists (the backend is unusable) abort the run.

use crate::backend::Backend;
use crate::cell_error::CellError;
use crate::judge;
use crate::matrix::{CellSpec, Column};
use crate::row_decision::RowDecisions;
use crate::worker::OBSERVED_FILE;
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit as bc;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use verify::results::{
    Candidates, Cell, FreeForm, GroundTruth, Observations, OutageRecord, Timings,
};
use verify::scenarios::billing_credit::HARNESS_ERROR;

mod decide;
mod process;
mod restart;

use decide::run_decide;
pub(crate) use process::{describe_exit, kill_and_reap, line_reader, Line};
use restart::run_restart;

/// How much of a worker's stderr a HARNESS_ERROR keeps.
pub const STDERR_TAIL_CHARS: usize = 1500;

/// Everything a cell needs from the run.
pub struct CellContext<'a> {
    /// Where Stripe (or the emulator) is and the cell's key.
    pub backend: &'a Backend,
    /// The runner binary (workers are its hidden subcommand).
    pub exe: &'a Path,
    /// The run's temporary directory (cell dirs go inside).
    pub run_dir: &'a Path,
    /// The private signing key file handed to workers.
    pub key_file: &'a Path,
    /// The public key receipts must be signed with.
    pub public_key: ed25519_dalek::VerifyingKey,
    /// Worker arguments for the decider.
    pub decider_args: &'a [String],
    /// The run's seed (case ids and outage ids derive from it).
    pub seed: u64,
    /// Where every case's test clock starts, Unix seconds (`--clock-start`).
    pub clock_start: i64,
    /// How long the outage's clock advance takes on the emulator (`--outage-ms`).
    pub outage_ms: Option<u64>,
    /// Set on Ctrl-C: stop workers and give up.
    pub cancel: &'a AtomicBool,
    /// Longest a decide worker may take to reach its crash point.
    pub decide_timeout: Duration,
    /// Longest a restart worker may take.
    pub restart_timeout: Duration,
    /// The PostgreSQL journal (URL with the run's schema) for the interlock column, if any.
    pub journal: Option<&'a str>,
    /// Per-row decisions (`--decide per-row`): which cell decides for each row.
    pub rows: Option<&'a RowDecisions>,
}

/// Why a cell produced no cell at all.
#[derive(Debug)]
pub enum CellAbort {
    /// The run was interrupted; workers were killed.
    Cancelled,
    /// The case could not even be opened (the backend is unusable).
    Setup(String),
}

/// The emulator rule that makes the next test-clock advance of `api_key`'s account take `ms`.
pub fn slow_advance_rule(api_key: &str, ms: u64) -> stripe::emulator::FaultRule {
    stripe::emulator::FaultRule::new(
        "POST",
        "/v1/test_helpers/test_clocks/*/advance",
        stripe::emulator::FaultAction::SlowAdvance { ms },
    )
    .for_key(api_key)
    .times(1)
}

/// The seed of one cell's random choices.
pub fn cell_seed(seed: u64, index: usize) -> u64 {
    seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Why a cell stopped before its end: a HARNESS_ERROR (the cell is still recorded, with why and
/// the timings measured so far) or an abort of the run.
enum Stop {
    /// The cell could not run as designed.
    Harness(String, Option<Timings>),
    /// The run was interrupted, or the cell could not even be set up.
    Abort(CellAbort),
}

impl From<CellAbort> for Stop {
    fn from(a: CellAbort) -> Stop {
        Stop::Abort(a)
    }
}

impl Stop {
    /// A HARNESS_ERROR before the restart ran (no timings yet).
    fn harness(why: impl std::fmt::Display) -> Stop {
        Stop::Harness(why.to_string(), None)
    }
}

/// A cell's case, opened at the service.
struct OpenCell {
    dir: PathBuf,
    api_key: String,
    client: stripe::Client,
    case: bc::CaseFile,
}

/// Runs one cell to a judged (or HARNESS_ERROR) results cell.
pub fn run_cell(ctx: &CellContext<'_>, index: usize, spec: CellSpec) -> Result<Cell, CellAbort> {
    let (o, outage_rng) = open_cell(ctx, index, spec)?;
    let mut cell = blank_cell(spec, &o.case);
    match cell_steps(ctx, index, spec, outage_rng, (&o, &mut cell)) {
        Ok(()) => Ok(cell),
        Err(Stop::Harness(why, timings)) => Ok(harness_error(
            ctx, cell, &o.client, &o.case, &o.dir, why, timings,
        )),
        Err(Stop::Abort(a)) => Err(a),
    }
}

/// The cell's directory (naming the journal store, if any) and its case, opened at the
/// service, with the cell's random source after the case took what it needed (the outage
/// draws on it). `Err`: the backend is unusable.
fn open_cell(
    ctx: &CellContext<'_>,
    index: usize,
    spec: CellSpec,
) -> Result<(OpenCell, StdRng), CellAbort> {
    let dir = ctx.run_dir.join(format!(
        "cell{index:03}-{}-{}-{}-r{}",
        spec.crash, spec.outage, spec.column, spec.repeat
    ));
    let setup = |what: &str, e: &dyn std::fmt::Display| {
        CellAbort::Setup(format!("cell {} ({what}): {e}", spec.label()))
    };
    fs::create_dir_all(&dir).map_err(|e| setup("create the cell directory", &e))?;
    if let Some(url) = ctx.journal {
        fs::write(dir.join(bc::JOURNAL_LOCATION_FILE), url)
            .map_err(|e| setup("name the journal store", &e))?;
    }
    let api_key = ctx.backend.api_key(index);
    let client = ctx
        .backend
        .client(&api_key)
        .map_err(|e| setup("build the Stripe client", &e))?;
    let prices = ctx
        .backend
        .prices(&client)
        .map_err(|e| setup("ensure the plan prices", &e))?;
    let mut rng = StdRng::seed_from_u64(cell_seed(ctx.seed, index));
    let label = format!("billing_credit {}", spec.label());
    let case = bc::open_case(&client, &prices, &label, ctx.clock_start, &mut rng)
        .map_err(|e| setup("open the case", &e))?;
    case.save(&dir).map_err(|e| setup("save case.json", &e))?;
    let opened = OpenCell {
        dir,
        api_key,
        client,
        case,
    };
    Ok((opened, rng))
}

/// The cell from its decide worker to its judgement.
fn cell_steps(
    ctx: &CellContext<'_>,
    index: usize,
    spec: CellSpec,
    mut outage_rng: StdRng,
    (o, cell): (&OpenCell, &mut Cell),
) -> Result<(), Stop> {
    let replay = row_decision(ctx, index)?;
    let killed_at = decide_step(ctx, index, spec, o, replay.as_ref(), cell)?;

    // The worker is dead: observe, run the outage, observe again.
    let (at_crash, record, at_restart) = while_dead(ctx, spec, o, &mut outage_rng)
        .map_err(|e| Stop::harness(CellError::WhileDead(e)))?;
    cell.observations.crash = Some(at_crash);
    cell.observations.restart = Some(at_restart);
    cell.outage_record = record;
    let outage_ms = ms(killed_at.elapsed());

    let restart_at = Instant::now();
    let restart = run_restart(ctx, &o.dir, &o.api_key, spec)?;
    let settled_at = Instant::now();
    let timings = Timings {
        crash_to_settled_ms: ms(settled_at - killed_at),
        restart_to_settled_ms: ms(settled_at - restart_at),
        outage_ms,
    };
    let (report, raw) = restart.map_err(|why| Stop::Harness(why.to_string(), Some(timings)))?;
    let truth = bc::ground_truth(&o.client, &o.case).map_err(|e| {
        let why = format!("reading the ground truth after the restart failed: {e}");
        Stop::Harness(why, Some(timings))
    })?;
    cell.timings = Some(timings);
    record_restart(cell, spec, &o.dir, &report, &raw);
    cell.stripe_ids = bc::stripe_ids(&o.case, &truth);
    cell.ground_truth = truth;
    judge::judge(cell, &ctx.public_key);
    Ok(())
}

/// Per-row decisions: the row's decision this cell replays (waited for), if it replays one.
fn row_decision(ctx: &CellContext<'_>, index: usize) -> Result<Option<(PathBuf, String)>, Stop> {
    match ctx
        .rows
        .map(|r| r.for_cell(index, ctx.cancel))
        .transpose()?
    {
        Some(Some(Err(why))) => Err(Stop::harness(format!(
            "the row's decision could not be made: {why}"
        ))),
        Some(Some(Ok(found))) => Ok(Some(found)),
        _ => Ok(None),
    }
}

/// The decide worker, killed at its crash point; records how it ended and what it decided.
/// Returns when the runner saw it gone. The row's deciding cell publishes its decision (or why
/// it has none) whatever happens to it.
fn decide_step(
    ctx: &CellContext<'_>,
    index: usize,
    spec: CellSpec,
    o: &OpenCell,
    replay: Option<&(PathBuf, String)>,
    cell: &mut Cell,
) -> Result<Instant, Stop> {
    let decide = run_decide(ctx, &o.dir, &o.api_key, spec, replay);
    if let Some(rows) = ctx.rows {
        let problem = decide.as_ref().map(|d| d.problem.as_deref());
        rows.publish_saved(
            index,
            &o.dir.join(bc::DECISION_FILE),
            &spec.label(),
            problem,
        );
    }
    let decide = decide?;
    cell.worker_exit_signal = decide.signal;
    cell.worker_exit_code = decide.code;
    cell.decision = crate::saved_decision::saved_decision(&o.dir).map_err(Stop::harness)?;
    cell.observations.decision = read_observed(&o.dir);
    decide.killed_at.ok_or_else(|| {
        Stop::harness(
            decide
                .problem
                .unwrap_or_else(|| "the decide worker was not killed".into()),
        )
    })
}

/// While the worker is dead: the premises as it left them, the outage (slowed by
/// `--outage-ms`), and the premises the restart will find.
fn while_dead(
    ctx: &CellContext<'_>,
    spec: CellSpec,
    o: &OpenCell,
    outage_rng: &mut StdRng,
) -> Result<(Candidates, OutageRecord, Candidates), bc::ScenarioError> {
    let at_crash = bc::observations(&o.client, &o.case)?;
    if let (Some(ms), Some(faults)) = (ctx.outage_ms, ctx.backend.faults()) {
        faults.add(slow_advance_rule(&o.api_key, ms));
    }
    let record = bc::run_outage(&o.client, &o.case, spec.outage, outage_rng)?;
    let at_restart = bc::observations(&o.client, &o.case)?;
    Ok((at_crash, record, at_restart))
}

/// What the restart reported, into the cell.
fn record_restart(
    cell: &mut Cell,
    spec: CellSpec,
    dir: &Path,
    report: &bc::RestartReport,
    raw: &Value,
) {
    cell.outcome = report.status.clone();
    cell.via = report.via.clone();
    cell.effect_id = report.effect_id.clone();
    cell.journal_kinds = report.journal_kinds.clone();
    cell.receipt = report.receipt.clone();
    cell.hand_check_log = match spec.column {
        Column::HandCheck => Some(free_form_lines(match &report.hand_check_log {
            Some(log) => log.clone(),
            None => bc::read_hand_check_log(dir).unwrap_or_default(),
        })),
        _ => None,
    };
    cell.restart = Some(FreeForm::from_value(raw));
}

/// A cell with every field set to "nothing happened yet".
fn blank_cell(spec: CellSpec, case: &bc::CaseFile) -> Cell {
    let truth = empty_truth();
    Cell {
        crash: spec.crash.as_str().into(),
        outage: spec.outage.as_str().into(),
        column: spec.column.as_str().into(),
        repeat: spec.repeat,
        case: case.to_results_case(),
        outcome: HARNESS_ERROR.into(),
        via: None,
        worker_exit_signal: None,
        worker_exit_code: None,
        harness_error: None,
        want: verify::results::Want { count: 0, cents: 0 },
        stripe_ids: bc::stripe_ids(case, &truth),
        ground_truth: truth,
        invariant_held: false,
        answer_matches: false,
        proof: false,
        record: spec.column.record().into(),
        timings: None,
        decision: None,
        observations: Observations {
            decision: None,
            crash: None,
            restart: None,
        },
        outage_record: OutageRecord {
            renewal_invoice: None,
            credit_note: None,
            credit_note_incident: None,
            downgraded_to_price: None,
            clock_time: None,
        },
        effect_id: None,
        journal_kinds: Vec::new(),
        receipt: None,
        hand_check_log: None,
        restart: None,
    }
}

/// A ground truth with nothing in it (a cell or trial whose case could not be read).
pub(crate) fn empty_truth() -> GroundTruth {
    GroundTruth {
        case_credits: Vec::new(),
        case_credit_count: 0,
        case_credit_cents: 0,
        credit_notes: Vec::new(),
        balance_transactions: Vec::new(),
        invoices: Vec::new(),
        customer_balance: 0,
        compensation_by_others: 0,
        incident_compensation: 0,
    }
}

/// Finishes a HARNESS_ERROR cell: records why (with stderr tails), still reads what Stripe holds
/// so the page can show it, and judges the data with outcome `HARNESS_ERROR`.
fn harness_error(
    ctx: &CellContext<'_>,
    mut cell: Cell,
    client: &stripe::Client,
    case: &bc::CaseFile,
    dir: &Path,
    why: String,
    timings: Option<Timings>,
) -> Cell {
    let mut text = why;
    for (name, file) in [("decide", "decide.stderr"), ("restart", "restart.stderr")] {
        let tail = stderr_tail(&dir.join(file));
        if !tail.trim().is_empty() {
            text.push_str(&format!("\n--- {name} worker stderr (tail) ---\n{tail}"));
        }
    }
    cell.outcome = HARNESS_ERROR.into();
    cell.harness_error = Some(text);
    if cell.column == Column::HandCheck.as_str() {
        cell.hand_check_log = Some(free_form_lines(
            bc::read_hand_check_log(dir).unwrap_or_default(),
        ));
    }
    cell.timings = timings;
    match bc::ground_truth(client, case) {
        Ok(truth) => {
            cell.stripe_ids = bc::stripe_ids(case, &truth);
            cell.ground_truth = truth;
        }
        Err(e) => {
            if let Some(h) = cell.harness_error.as_mut() {
                h.push_str(&format!("\n(ground truth could not be read either: {e})"));
            }
        }
    }
    judge::judge(&mut cell, &ctx.public_key);
    cell
}

/// Log lines as the results file keeps them (each as its JSON text).
fn free_form_lines(lines: Vec<Value>) -> Vec<FreeForm> {
    lines.iter().map(FreeForm::from_value).collect()
}

fn read_observed(dir: &Path) -> Option<Candidates> {
    let bytes = fs::read(dir.join(OBSERVED_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The last [`STDERR_TAIL_CHARS`] characters of a file (lossy UTF-8).
pub fn stderr_tail(path: &Path) -> String {
    let Ok(bytes) = fs::read(path) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let chars: Vec<char> = text.chars().collect();
    let start = chars.len().saturating_sub(STDERR_TAIL_CHARS);
    chars[start..].iter().collect()
}

pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
