//! A shared_cap cell's worker processes: spawned (on their own host with `--two-hosts`),
//! released together, and watched to their end: SIGKILLed at their crash point, or their report
//! read.

use super::held::HeldRule;
use super::{ticket_dir, CapContext};
use crate::cell::{describe_exit, kill_and_reap, line_reader, ms, stderr_tail, CellAbort, Line};
use crate::cell_error::CellError;
use crate::scenario::shared_cap::worker::CapPhase;
use crate::worker::{CRASH_LINE_PREFIX, STRIPE_KEY_ENV};
use scenarios::billing_credit::RestartReport;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use verify::shared_cap::nemesis::HELD_STEP;

/// How one worker process ended.
pub(super) enum Ended {
    /// SIGKILLed by the runner at the point it announced.
    Killed { at: String },
    /// It finished by itself and reported.
    Finished(Box<RestartReport>),
    /// It exited by itself with an error (the column's own failure: after a restart, the
    /// ticket is unresolved, as billing_credit counts it), in words with its stderr's tail.
    Errored(String),
    /// Anything else: a harness error, in words.
    Failed(String),
}

/// One worker process to start.
pub(super) struct Worker<'a> {
    /// The column it runs.
    pub(super) column: &'a str,
    /// Its ticket (`a` or `b`).
    pub(super) ticket: &'a str,
    /// Its phase.
    pub(super) phase: CapPhase,
    /// Where it is SIGKILLed, if it is.
    pub(super) crash: Option<&'a str>,
    /// Whether it waits for `go` on stdin before it starts.
    pub(super) wait_go: bool,
    /// `kill_while_held`: SIGKILLed once the service has taken its refund POST and holds it.
    pub(super) held: Option<&'a HeldRule>,
}

/// Spawns a worker: own process group, stdout piped, stderr to a file in the cell dir.
fn spawn(
    ctx: &CapContext<'_>,
    dir: &Path,
    api_key: &str,
    w: &Worker<'_>,
) -> Result<Child, CellError> {
    let Worker {
        column,
        ticket,
        phase,
        crash,
        wait_go,
        held: _,
    } = *w;
    let name = format!("{}-{ticket}", phase.as_str());
    let stderr_path = dir.join(format!("{name}.stderr"));
    let stderr = std::fs::File::create(&stderr_path).map_err(|source| CellError::CreateLog {
        path: stderr_path,
        source,
    })?;
    let settings = ctx.backend.scenario_settings();
    // Worker `a` runs on host `a`, `b` on host `b` (restarts included).
    let host = ctx.hosts.and_then(|h| h.view(ticket));
    let (mut cmd, base_url) = match host {
        Some(view) => (
            crate::scenario::shared_cap::hosts::Hosts::command(view, ctx.exe),
            view.base_url.as_str(),
        ),
        None => (Command::new(ctx.exe), ctx.backend.base_url()),
    };
    cmd.arg("cap-worker")
        .arg(phase.as_str())
        .args(["--column", column, "--ticket", ticket])
        .args(["--crash", crash.unwrap_or(crate::worker::NO_CRASH)])
        .arg("--cell-dir")
        .arg(ticket_dir(ctx, dir, ticket))
        .arg("--key-file")
        .arg(ctx.key_file)
        .args(["--base-url", base_url])
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
    cmd.spawn().map_err(|source| CellError::Spawn {
        name,
        exe: ctx.exe.to_owned(),
        source,
    })
}

/// SIGKILLs a worker whose refund POST the service holds (confirming signal 9 and that the
/// request is still held when the worker is gone).
fn kill_held(mut child: Child, held: &HeldRule, taken: Instant) -> Ended {
    let status = kill_and_reap(&mut child);
    let after = taken.elapsed();
    drop(child.stdin.take());
    match status {
        _ if held.landed() => {
            Ended::Failed("the held refund landed before the worker was SIGKILLed".into())
        }
        Some(s) if s.signal() == Some(libc::SIGKILL) => {
            held.killed(after);
            Ended::Killed {
                at: HELD_STEP.to_owned(),
            }
        }
        Some(s) => Ended::Failed(format!(
            "a worker was sent SIGKILL but {}",
            describe_exit(&s)
        )),
        None => Ended::Failed("could not collect a killed worker's exit status".into()),
    }
}

/// Watches a worker to its end: SIGKILLs it when it announces `crash` (confirming signal 9), or
/// when the service has taken its held POST (`held`), or collects its report when it finishes by
/// itself.
fn watch(
    ctx: &CapContext<'_>,
    mut child: Child,
    (crash, held): (Option<&str>, Option<&HeldRule>),
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
        if let Some(h) = held.filter(|h| h.taken()) {
            return Ok(kill_held(child, h, Instant::now()));
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
        return Ok(Ended::Errored(format!(
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

/// Tells a worker blocked on its start pipe to go.
fn go(child: &mut Child) -> Result<(), CellError> {
    let Some(stdin) = child.stdin.as_mut() else {
        return Err(CellError::NoStdin);
    };
    stdin
        .write_all(b"go\n")
        .and_then(|()| stdin.flush())
        .map_err(CellError::Go)
}

/// watches each to its end. With one entry, it just runs.
pub(super) fn together(
    ctx: &CapContext<'_>,
    dir: &Path,
    api_key: &str,
    workers: &[Worker<'_>],
) -> Result<Result<Vec<Ended>, CellError>, CellAbort> {
    let mut children = Vec::new();
    for w in workers {
        match spawn(ctx, dir, api_key, w) {
            Ok(c) => children.push(c),
            Err(e) => {
                for c in &mut children {
                    kill_and_reap(c);
                }
                return Ok(Err(e));
            }
        }
    }
    // Every worker is up and blocked on its start signal: release them together. Their stdin
    // stays open: a worker blocked at its crash point waits on it until the SIGKILL.
    for i in 0..children.len() {
        let started = if workers[i].wait_go {
            go(&mut children[i])
        } else {
            Ok(())
        };
        if let Err(e) = started {
            for c in &mut children {
                kill_and_reap(c);
            }
            return Ok(Err(e));
        }
    }
    let ended: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = children
            .into_iter()
            .zip(workers)
            .map(|(child, w)| {
                let stderr = dir.join(format!("{}-{}.stderr", w.phase.as_str(), w.ticket));
                s.spawn(move || watch(ctx, child, (w.crash, w.held), &stderr))
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut out = Vec::new();
    for e in ended {
        match e {
            Ok(r) => out.push(r?),
            Err(_) => return Ok(Err(CellError::WatcherPanicked)),
        }
    }
    Ok(Ok(out))
}
