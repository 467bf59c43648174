//! Running one shared_cap cell: open the order, start the two tickets' workers (one after the
//! other, or together), SIGKILL worker `a` at its crash point, let `b` finish, restart `a`, read
//! what Stripe holds and judge with `verify::shared_cap`.

use super::worker::CapPhase;
use crate::backend::Backend;
use crate::cell::{
    cell_seed, describe_exit, kill_and_reap, line_reader, ms, stderr_tail, CellAbort, Line,
};
use crate::worker::{CRASH_LINE_PREFIX, STRIPE_KEY_ENV};
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit::RestartReport;
use scenarios::shared_cap as cap;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use verify::results::FreeForm;
use verify::shared_cap::plan::PlannedCell;
use verify::shared_cap::record::{CapCell, OrderRecord, TicketRecord};

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
}

/// How one worker process ended.
enum Ended {
    /// SIGKILLed by the runner at the point it announced.
    Killed { at: String },
    /// It finished by itself and reported.
    Finished(Box<RestartReport>),
    /// Anything else: a harness error, in words.
    Failed(String),
}

/// One worker process to start.
struct Worker<'a> {
    column: &'a str,
    ticket: &'a str,
    phase: CapPhase,
    crash: Option<&'a str>,
    wait_go: bool,
}

fn spawn(ctx: &CapContext<'_>, dir: &Path, api_key: &str, w: &Worker<'_>) -> Result<Child, String> {
    let Worker {
        column,
        ticket,
        phase,
        crash,
        wait_go,
    } = *w;
    let name = match phase {
        CapPhase::Send => format!("send-{ticket}"),
        CapPhase::Restart => format!("restart-{ticket}"),
    };
    let stderr_path = dir.join(format!("{name}.stderr"));
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;
    let settings = ctx.backend.scenario_settings();
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("cap-worker")
        .arg(match phase {
            CapPhase::Send => "send",
            CapPhase::Restart => "restart",
        })
        .args(["--column", column, "--ticket", ticket])
        .args(["--crash", crash.unwrap_or(crate::worker::NO_CRASH)])
        .arg("--cell-dir")
        .arg(dir)
        .arg("--key-file")
        .arg(ctx.key_file)
        .args(["--base-url", ctx.backend.base_url()])
        .args([
            "--request-timeout-ms",
            &ms(ctx.backend.request_timeout()).to_string(),
        ])
        .args([
            "--max-in-flight-ms",
            &ms(settings.max_in_flight).to_string(),
        ])
        .args(["--claim-ttl-ms", &ms(settings.claim_ttl).to_string()])
        .env(STRIPE_KEY_ENV, api_key)
        // stdin is a pipe the runner writes `go` to (with --wait-go) and otherwise never: a
        // worker blocks on it at its crash point.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    if wait_go {
        cmd.arg("--wait-go");
    }
    cmd.spawn()
        .map_err(|e| format!("cannot start the {name} worker {}: {e}", ctx.exe.display()))
}

/// Watches a worker to its end: SIGKILLs it when it announces `crash` (confirming signal 9),
/// or collects its report when it finishes by itself.
fn watch(
    ctx: &CapContext<'_>,
    mut child: Child,
    crash: Option<&str>,
    stderr: &Path,
) -> Result<Ended, CellAbort> {
    let lines = line_reader(&mut child);
    let deadline = Instant::now() + ctx.worker_timeout;
    let mut output = Vec::new();
    let announced = loop {
        if ctx.cancel.load(Ordering::SeqCst) {
            kill_and_reap(&mut child);
            return Err(CellAbort::Cancelled);
        }
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(Line::Text(l)) => match l.strip_prefix(CRASH_LINE_PREFIX) {
                Some(point) => break Some(point.trim().to_owned()),
                None => output.push(l),
            },
            Ok(Line::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                kill_and_reap(&mut child);
                return Ok(Ended::Failed(format!(
                    "a worker did not finish within {} s and was killed; stderr: {}",
                    ctx.worker_timeout.as_secs(),
                    stderr_tail(stderr)
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    if let Some(point) = announced {
        // Child::kill is SIGKILL on Unix; confirm it is what ended the worker.
        let status = kill_and_reap(&mut child);
        drop(child.stdin.take());
        return Ok(match status {
            _ if Some(point.as_str()) != crash => Ended::Failed(format!(
                "a worker announced crash point `{point}`, expected `{}`",
                crash.unwrap_or("none")
            )),
            Some(s) if s.signal() == Some(libc::SIGKILL) => Ended::Killed { at: point },
            Some(s) => Ended::Failed(format!(
                "a worker was sent SIGKILL but {}",
                describe_exit(&s)
            )),
            None => Ended::Failed("could not collect a killed worker's exit status".into()),
        });
    }
    drop(child.stdin.take());
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            return Ok(Ended::Failed(format!(
                "could not collect a worker's exit: {e}"
            )))
        }
    };
    if !status.success() {
        return Ok(Ended::Failed(format!(
            "a worker {}; stderr: {}",
            describe_exit(&status),
            stderr_tail(stderr)
        )));
    }
    let Some(last) = output.iter().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(Ended::Failed("a worker printed no report".into()));
    };
    Ok(match serde_json::from_str::<RestartReport>(last) {
        Ok(r) => Ended::Finished(Box::new(r)),
        Err(e) => Ended::Failed(format!("a worker's last line is not a report ({e})")),
    })
}

fn go(child: &mut Child, keep_open: bool) -> Result<(), String> {
    let Some(stdin) = child.stdin.as_mut() else {
        return Err("a worker has no stdin to start it with".into());
    };
    stdin
        .write_all(b"go\n")
        .and_then(|()| stdin.flush())
        .map_err(|e| format!("cannot start a worker: {e}"))?;
    if !keep_open {
        drop(child.stdin.take());
    }
    Ok(())
}

fn ticket_record(
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
        Ended::Failed(why) => why.clone(),
    };
    let amount = cap::Decision::load(dir, &t.name).ok().map(|d| d.amount);
    TicketRecord {
        name: t.name.clone(),
        ticket_id: t.id.clone(),
        approval: t.approval.clone(),
        amount,
        killed_at,
        first_exit,
        status: report.map(|r| r.status.clone()).unwrap_or_default(),
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

/// Runs the two tickets' first phases as `spec.overlap` says; returns how each ended.
fn first_phases(
    ctx: &CapContext<'_>,
    dir: &Path,
    api_key: &str,
    spec: &PlannedCell,
) -> Result<Result<(Ended, Ended), String>, CellAbort> {
    let crash = Some(spec.crash_point);
    let (err_a, err_b) = (dir.join("send-a.stderr"), dir.join("send-b.stderr"));
    let send = |ticket, crash, wait_go| {
        let w = Worker {
            column: spec.column,
            ticket,
            phase: CapPhase::Send,
            crash,
            wait_go,
        };
        spawn(ctx, dir, api_key, &w)
    };
    if spec.overlap == "sequential" {
        let a = match send("a", crash, false) {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let ended_a = watch(ctx, a, crash, &err_a)?;
        let b = match send("b", None, false) {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let ended_b = watch(ctx, b, None, &err_b)?;
        return Ok(Ok((ended_a, ended_b)));
    }
    let (mut a, mut b) = match (send("a", crash, true), send("b", None, true)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), Ok(mut other)) | (Ok(mut other), Err(e)) => {
            kill_and_reap(&mut other);
            return Ok(Err(e));
        }
        (Err(e), Err(_)) => return Ok(Err(e)),
    };
    // Both are up and blocked on their start signal: release them together.
    if let Err(e) = go(&mut a, true).and_then(|()| go(&mut b, false)) {
        kill_and_reap(&mut a);
        kill_and_reap(&mut b);
        return Ok(Err(e));
    }
    let (ended_a, ended_b) = std::thread::scope(|s| {
        let wa = s.spawn(|| watch(ctx, a, crash, &err_a));
        let wb = s.spawn(|| watch(ctx, b, None, &err_b));
        (wa.join(), wb.join())
    });
    match (ended_a, ended_b) {
        (Ok(a), Ok(b)) => Ok(Ok((a?, b?))),
        _ => Ok(Err("a worker's watcher panicked".into())),
    }
}

/// The cell's directory, account and order, written where both workers read it.
fn open_cell(
    ctx: &CapContext<'_>,
    index: usize,
    spec: &PlannedCell,
) -> Result<(PathBuf, String, stripe::Client, cap::OrderFile), CellAbort> {
    let dir = ctx.run_dir.join(format!(
        "cell-{index:03}-{}-{}-{}-{}",
        spec.crash_point, spec.overlap, spec.column, spec.repeat
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CellAbort::Setup(format!("cannot create {}: {e}", dir.display())))?;
    let api_key = ctx.backend.api_key(index);
    let client = ctx.backend.client(&api_key).map_err(CellAbort::Setup)?;
    let mut rng = StdRng::seed_from_u64(cell_seed(ctx.seed, index));
    let order = cap::open_order(&client, &mut rng).map_err(|e| CellAbort::Setup(e.to_string()))?;
    order
        .save(&dir)
        .map_err(|e| CellAbort::Setup(e.to_string()))?;
    if let Some(url) = ctx.journal {
        std::fs::write(dir.join(cap::JOURNAL_LOCATION_FILE), url)
            .map_err(|e| CellAbort::Setup(format!("cannot name the journal: {e}")))?;
    }
    Ok((dir, api_key, client, order))
}

/// Worker `a`'s report: its own when it finished by itself, else its restart's (run here).
/// Whatever kept the cell from running as designed goes into `harness`.
fn report_of_a(
    ctx: &CapContext<'_>,
    (dir, api_key): (&Path, &str),
    spec: &PlannedCell,
    ended_a: &Ended,
    harness: &mut Option<String>,
) -> Result<Option<RestartReport>, CellAbort> {
    let restart = Worker {
        column: spec.column,
        ticket: "a",
        phase: CapPhase::Restart,
        crash: None,
        wait_go: false,
    };
    Ok(match ended_a {
        Ended::Finished(r) => Some((**r).clone()),
        Ended::Killed { .. } => match spawn(ctx, dir, api_key, &restart) {
            Ok(child) => match watch(ctx, child, None, &dir.join("restart-a.stderr"))? {
                Ended::Finished(r) => Some(*r),
                Ended::Failed(why) | Ended::Killed { at: why } => {
                    harness.get_or_insert(format!("the restart of worker a: {why}"));
                    None
                }
            },
            Err(e) => {
                harness.get_or_insert(e);
                None
            }
        },
        Ended::Failed(why) => {
            harness.get_or_insert(format!("worker a: {why}"));
            None
        }
    })
}

/// Runs one cell to a judged (or harness-error) cell.
pub fn run_cell(
    ctx: &CapContext<'_>,
    index: usize,
    spec: PlannedCell,
) -> Result<CapCell, CellAbort> {
    let (dir, api_key, client, order) = open_cell(ctx, index, &spec)?;
    let started = Instant::now();
    let (ended_a, ended_b) = match first_phases(ctx, &dir, &api_key, &spec)? {
        Ok(pair) => pair,
        Err(e) => (Ended::Failed(e.clone()), Ended::Failed(e)),
    };
    let mut harness = None;
    let report_b = match &ended_b {
        Ended::Finished(r) => Some((**r).clone()),
        Ended::Killed { .. } => {
            harness = Some("worker b was killed, though it has no crash point".to_owned());
            None
        }
        Ended::Failed(why) => {
            harness = Some(format!("worker b: {why}"));
            None
        }
    };
    let report_a = report_of_a(ctx, (&dir, &api_key), &spec, &ended_a, &mut harness)?;
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
        ticket_record(ticket("a")?, &dir, &ended_a, report_a.as_ref()),
        ticket_record(ticket("b")?, &dir, &ended_b, report_b.as_ref()),
    ];
    let mut cell = CapCell {
        crash_point: spec.crash_point.to_owned(),
        overlap: spec.overlap.to_owned(),
        column: spec.column.to_owned(),
        repeat: spec.repeat,
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
    if cell.harness_error.is_none() {
        verify::shared_cap::judge::judge(&mut cell, &ctx.public_key);
    }
    Ok(cell)
}
