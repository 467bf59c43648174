//! Running one shared_cap cell: open the order, start the two tickets' workers (one after the
//! other, or together), SIGKILL worker `a` at its crash point, let `b` finish, restart `a`, read
//! what Stripe holds and judge with `verify::shared_cap`.

use super::worker::CapPhase;
use crate::backend::Backend;
use crate::cell::{cell_seed, CellAbort};
use crate::cell_error::CellError;
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit::RestartReport;
use scenarios::shared_cap as cap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use verify::results::FreeForm;
use verify::shared_cap::plan::PlannedCell;
use verify::shared_cap::record::{CapCell, OrderRecord, TicketRecord};

mod held;
mod processes;

use held::HeldRule;
use processes::{together, Ended, Worker};

/// Everything a cell needs from the run.
pub struct CapContext<'a> {
    /// Where Stripe (or the emulator) is.
    pub backend: &'a Backend,
    /// The runner binary (workers are its hidden subcommand).
    pub exe: &'a Path,
    /// The run's temporary directory.
    pub run_dir: &'a Path,
    /// The private signing key file handed to workers.
    pub key_file: &'a Path,
    /// The public key receipts must be signed with.
    pub public_key: ed25519_dalek::VerifyingKey,
    /// The run's seed.
    pub seed: u64,
    /// Set on Ctrl-C.
    pub cancel: &'a AtomicBool,
    /// Longest any one worker may take.
    pub worker_timeout: Duration,
    /// The PostgreSQL journal of the run, if any.
    pub journal: Option<&'a str>,
    /// `--two-hosts`: worker `a` on the first host, `b` on the second.
    pub hosts: Option<&'a super::hosts::Hosts>,
}

/// The directory ticket `ticket`'s worker keeps its files in: the cell directory when both
/// workers share a host, else the host's own directory in it (`host-a`, `host-b`).
pub(super) fn ticket_dir(ctx: &CapContext<'_>, dir: &Path, ticket: &str) -> PathBuf {
    match ctx.hosts {
        Some(_) => dir.join(format!("host-{ticket}")),
        None => dir.to_path_buf(),
    }
}

/// The record of ticket `t`: how its first worker ended and what its final report says.
fn ticket_record(
    ctx: &CapContext<'_>,
    t: &cap::Ticket,
    dir: &Path,
    first: &Ended,
    report: Option<&RestartReport>,
) -> TicketRecord {
    let killed_at = match first {
        Ended::Killed { at } => Some(at.clone()),
        _ => None,
    };
    let first_exit = match first {
        Ended::Killed { at } => format!("SIGKILLed by the runner at {at}"),
        Ended::Finished(_) => "finished by itself".to_owned(),
        Ended::Failed(why) | Ended::Errored(why) => why.clone(),
    };
    let amount = cap::Decision::load(&ticket_dir(ctx, dir, &t.name), &t.name)
        .ok()
        .map(|d| d.amount);
    TicketRecord {
        name: t.name.clone(),
        ticket_id: t.id.clone(),
        approval: t.approval.clone(),
        amount,
        killed_at,
        first_exit,
        status: report.map(|r| r.status.clone()).unwrap_or_default(),
        restart_error: report
            .and_then(|r| r.detail.get("restart_error"))
            .and_then(|e| e.as_str())
            .map(str::to_owned),
        effect_id: report.and_then(|r| r.effect_id.clone()),
        journal_kinds: report.map(|r| r.journal_kinds.clone()).unwrap_or_default(),
        receipt: report.and_then(|r| r.receipt.clone()),
        log: report
            .and_then(|r| r.hand_check_log.as_ref())
            .map(|lines| lines.iter().map(FreeForm::from_value).collect()),
        answer_matches: false,
        proof: false,
    }
}

/// What one matrix cell or nemesis trial runs: the column, how the two workers overlap, and
/// where each is SIGKILLed (a step its column passes), worker `a`'s restart included.
#[derive(Debug, Clone, Copy)]
pub struct CellSpec<'s> {
    /// The column.
    pub column: &'s str,
    /// `sequential` or `concurrent`.
    pub overlap: &'s str,
    /// Where worker `a` is killed in its first phase, if it is.
    pub kill_a: Option<&'s str>,
    /// Where worker `b` is killed in its first phase, if it is.
    pub kill_b: Option<&'s str>,
    /// Where worker `a`'s restart is killed, if it is (a final restart then finishes).
    pub kill_restart: Option<&'s str>,
    /// `kill_while_held`: the service holds worker `a`'s refund POST this long, ms, and `a` is
    /// SIGKILLed while it is held.
    pub hold_a_ms: Option<u64>,
}

/// Starts one worker per entry, blocked on its start pipe, then releases them together and
/// Runs the two tickets' first phases as `spec.overlap` says; returns how each ended.
fn first_phases(
    ctx: &CapContext<'_>,
    dir: &Path,
    api_key: &str,
    spec: &CellSpec<'_>,
    held: Option<&HeldRule>,
) -> Result<Result<(Ended, Ended), CellError>, CellAbort> {
    let concurrent = spec.overlap != "sequential";
    let send = |ticket, crash| Worker {
        column: spec.column,
        ticket,
        phase: CapPhase::Send,
        crash,
        wait_go: concurrent,
        held: None,
    };
    // A held trial's worker `a` announces no step where it is killed: the service holds it.
    let a = match held {
        Some(h) => Worker {
            held: Some(h),
            ..send("a", None)
        },
        None => send("a", spec.kill_a),
    };
    let b = send("b", spec.kill_b);
    let ended = if concurrent {
        together(ctx, dir, api_key, &[a, b])?
    } else {
        match together(ctx, dir, api_key, &[a])? {
            Ok(mut first) => together(ctx, dir, api_key, &[b])?.map(|second| {
                first.extend(second);
                first
            }),
            Err(e) => Err(e),
        }
    };
    Ok(ended.and_then(|v| {
        let mut v = v.into_iter();
        match (v.next(), v.next()) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(CellError::Unrecorded),
        }
    }))
}

/// The cell's directory, account and order, written where both workers read it.
fn open_cell(
    ctx: &CapContext<'_>,
    index: usize,
    name: &str,
) -> Result<(PathBuf, String, stripe::Client, cap::OrderFile), CellAbort> {
    let dir = ctx.run_dir.join(format!("cell-{index:03}-{name}"));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CellAbort::Setup(format!("cannot create {}: {e}", dir.display())))?;
    let api_key = ctx.backend.api_key(index);
    let client = ctx
        .backend
        .client(&api_key)
        .map_err(|e| CellAbort::Setup(e.to_string()))?;
    let mut rng = StdRng::seed_from_u64(cell_seed(ctx.seed, index));
    let order = cap::open_order(&client, &mut rng).map_err(|e| CellAbort::Setup(e.to_string()))?;
    for ticket in ["a", "b"] {
        // On two hosts each gets its own copy of the order and names the journal as it
        // reaches it; on one they share the cell directory.
        let own = ticket_dir(ctx, &dir, ticket);
        std::fs::create_dir_all(&own)
            .map_err(|e| CellAbort::Setup(format!("cannot create {}: {e}", own.display())))?;
        order
            .save(&own)
            .map_err(|e| CellAbort::Setup(e.to_string()))?;
        let journal = match ctx.hosts.and_then(|h| h.view(ticket)) {
            Some(view) => Some(view.journal.as_str()),
            None => ctx.journal,
        };
        if let Some(url) = journal {
            std::fs::write(own.join(cap::JOURNAL_LOCATION_FILE), url)
                .map_err(|e| CellAbort::Setup(format!("cannot name the journal: {e}")))?;
        }
    }
    Ok((dir, api_key, client, order))
}

/// The report of a final restart that ended in an error: status
/// [`RESTART_FAILED`](verify::nemesis::rules::RESTART_FAILED), its error in `detail`.
fn unresolved(why: String) -> RestartReport {
    RestartReport::without_gate(
        verify::nemesis::rules::RESTART_FAILED.to_owned(),
        None,
        serde_json::json!({ "restart_error": why }),
    )
}

/// Both tickets' final reports: a worker that finished by itself reports its own; a killed one
/// is restarted (both together when both were killed), worker `a`'s restart killed where the
/// spec says and restarted once more. Returns the reports and where `a`'s restart was killed;
/// whatever kept the cell from running as designed goes into `harness`.
fn final_reports(
    ctx: &CapContext<'_>,
    (dir, api_key): (&Path, &str),
    spec: &CellSpec<'_>,
    first: [&Ended; 2],
    harness: &mut Option<String>,
) -> Result<([Option<RestartReport>; 2], Option<String>), CellAbort> {
    let mut reports: [Option<RestartReport>; 2] = [None, None];
    let mut restarts = Vec::new();
    for (i, (ticket, ended)) in ["a", "b"].into_iter().zip(first).enumerate() {
        match ended {
            Ended::Finished(r) => reports[i] = Some((**r).clone()),
            Ended::Killed { .. } => restarts.push((i, ticket)),
            Ended::Failed(why) | Ended::Errored(why) => {
                harness.get_or_insert(format!("worker {ticket}: {why}"));
            }
        }
    }
    let both = restarts.len() > 1;
    let restart = |ticket, crash| Worker {
        column: spec.column,
        ticket,
        phase: CapPhase::Restart,
        crash,
        wait_go: both,
        held: None,
    };
    let workers: Vec<Worker<'_>> = restarts
        .iter()
        .map(|&(_, t)| restart(t, if t == "a" { spec.kill_restart } else { None }))
        .collect();
    let mut restart_killed_at = None;
    let ended = match together(ctx, dir, api_key, &workers)? {
        Ok(e) => e,
        Err(e) => {
            harness.get_or_insert(e.to_string());
            return Ok((reports, None));
        }
    };
    for ((i, ticket), ended) in restarts.into_iter().zip(ended) {
        let ended = match ended {
            Ended::Killed { at } if ticket == "a" && spec.kill_restart == Some(at.as_str()) => {
                restart_killed_at = Some(at);
                let last = Worker {
                    wait_go: false,
                    ..restart("a", None)
                };
                match together(ctx, dir, api_key, &[last])? {
                    Ok(mut e) => e.pop().unwrap_or(Ended::Failed("no final restart".into())),
                    Err(e) => Ended::Failed(e.to_string()),
                }
            }
            other => other,
        };
        match ended {
            Ended::Finished(r) => reports[i] = Some(*r),
            // The final restart's own error: the ticket is unresolved, and judged.
            Ended::Errored(why) => reports[i] = Some(unresolved(why)),
            Ended::Failed(why) | Ended::Killed { at: why } => {
                harness.get_or_insert(format!("the restart of worker {ticket}: {why}"));
            }
        }
    }
    Ok((reports, restart_killed_at))
}

/// A run cell or trial before its labels: the matrix and the nemesis fill those.
pub struct Outcome {
    /// The judged cell (or its harness error), labelled with the spec's column and overlap,
    /// crash point `none` and repeat 0.
    pub cell: CapCell,
    /// Where worker `a`'s restart was SIGKILLed, if it was.
    pub restart_killed_at: Option<String>,
    /// `kill_while_held`: what became of worker `a`'s held refund POST.
    pub held: Option<verify::shared_cap::nemesis::record::HeldRefund>,
}

/// Runs one cell or trial to a judged (or harness-error) cell; `name` names its directory.
pub fn run_spec(
    ctx: &CapContext<'_>,
    index: usize,
    name: &str,
    spec: &CellSpec<'_>,
) -> Result<Outcome, CellAbort> {
    let (dir, api_key, client, order) = open_cell(ctx, index, name)?;
    let held = match spec.hold_a_ms {
        Some(ms) => Some(HeldRule::install(ctx.backend.faults(), &api_key, ms)?),
        None => None,
    };
    let started = Instant::now();
    let (ended_a, ended_b) = match first_phases(ctx, &dir, &api_key, spec, held.as_ref())? {
        Ok(pair) => pair,
        Err(e) => (Ended::Failed(e.to_string()), Ended::Failed(e.to_string())),
    };
    let mut harness = None;
    let ([report_a, report_b], restart_killed_at) = final_reports(
        ctx,
        (&dir, &api_key),
        spec,
        [&ended_a, &ended_b],
        &mut harness,
    )?;
    // The held refund lands when its hold ends, whoever is left to read the answer: the ground
    // truth is read once it has.
    let held = held.map(|h| h.settle(ctx.worker_timeout));
    if held.as_ref().is_some_and(|h| h.taken && !h.landed) {
        harness.get_or_insert("the held refund had not landed when its hold was long over".into());
    }
    let truth = cap::ground_truth(&client, &order).unwrap_or_else(|e| {
        harness.get_or_insert(format!("reading the ground truth: {e}"));
        verify::shared_cap::OrderTruth {
            payment_intent: order.payment_intent.clone(),
            charge: order.charge.clone(),
            charge_amount: order.amount,
            amount_refunded: 0,
            refunds: Vec::new(),
        }
    });
    let wall_ms = started.elapsed().as_millis() as u64;
    let ticket = |name| {
        order
            .ticket(name)
            .map_err(|e| CellAbort::Setup(e.to_string()))
    };
    let tickets = vec![
        ticket_record(ctx, ticket("a")?, &dir, &ended_a, report_a.as_ref()),
        ticket_record(ctx, ticket("b")?, &dir, &ended_b, report_b.as_ref()),
    ];
    let mut cell = CapCell {
        crash_point: verify::shared_cap::nemesis::check::NO_KILL.to_owned(),
        overlap: spec.overlap.to_owned(),
        column: spec.column.to_owned(),
        repeat: 0,
        order: OrderRecord {
            order_id: order.order_id.clone(),
            payment_intent: order.payment_intent.clone(),
            charge: order.charge.clone(),
            amount: order.amount,
            cap_cents: order.cap_cents,
        },
        tickets,
        truth,
        invariant_held: false,
        answers_match: false,
        harness_error: harness,
        wall_ms,
    };
    if cell.judged() {
        verify::shared_cap::judge::judge(&mut cell, &ctx.public_key);
    }
    Ok(Outcome {
        cell,
        restart_killed_at,
        held,
    })
}

/// Runs one matrix cell: worker `a` killed at the row's crash point, `b` never.
pub fn run_cell(
    ctx: &CapContext<'_>,
    index: usize,
    spec: PlannedCell,
) -> Result<CapCell, CellAbort> {
    let name = format!(
        "{}-{}-{}-{}",
        spec.crash_point, spec.overlap, spec.column, spec.repeat
    );
    let cell_spec = CellSpec {
        column: spec.column,
        overlap: spec.overlap,
        kill_a: Some(spec.crash_point),
        kill_b: None,
        kill_restart: None,
        hold_a_ms: None,
    };
    let mut cell = run_spec(ctx, index, &name, &cell_spec)?.cell;
    cell.crash_point = spec.crash_point.to_owned();
    cell.repeat = spec.repeat;
    Ok(cell)
}
