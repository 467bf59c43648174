//! The decide worker of a cell: run to its crash point and SIGKILLed there, and why the cell
//! cannot be judged when it did not end so.

use super::process::{describe_exit, kill_and_reap, line_reader, spawn_worker, Line};
use super::{CellAbort, CellContext};
use crate::cell_error::CellError;
use crate::matrix::CellSpec;
use crate::worker::{CRASH_LINE_PREFIX, STATUS_LINE_PREFIX};
use scenarios::billing_credit as bc;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What happened to the decide worker.
pub(super) struct DecideOutcome {
    /// When the runner saw the SIGKILLed worker gone (None if it was not killed as designed).
    pub(super) killed_at: Option<Instant>,
    /// The signal that ended it, if one did.
    pub(super) signal: Option<i32>,
    /// Its exit code, if it exited.
    pub(super) code: Option<i32>,
    /// Why the cell cannot be judged, if it cannot.
    pub(super) problem: Option<String>,
}

/// Whether the decide worker returned a refusal of a decision its approval does not cover.
fn refused_uncovered(dir: &Path, returned: Option<&str>) -> bool {
    let refused = returned.is_some_and(|s| s.starts_with("REFUSED:"));
    let uncovered = match (bc::CaseFile::load(dir), bc::load_decision(dir)) {
        (Ok(case), Ok(decision)) => {
            !verify::scenarios::billing_credit::approval_covers(&case.approval, decision.amount)
        }
        _ => false,
    };
    refused && uncovered
}

/// The decide worker, run to its crash point and SIGKILLed there; what ended it, and why the
/// cell cannot be judged if it cannot.
pub(super) fn run_decide(
    ctx: &CellContext<'_>,
    dir: &Path,
    api_key: &str,
    spec: CellSpec,
    replay: Option<&(PathBuf, String)>,
) -> Result<DecideOutcome, CellAbort> {
    let failed = |problem: String| DecideOutcome {
        killed_at: None,
        signal: None,
        code: None,
        problem: Some(problem),
    };
    // stdin is a pipe the runner never writes: the worker blocks on it at the crash point.
    let extra = replay_args(replay);
    let mut child = match spawn_worker(ctx, dir, api_key, "decide", spec, Stdio::piped(), &extra) {
        Ok(c) => c,
        Err(e) => return Ok(failed(e.to_string())),
    };
    let (announced, other_output) = await_crash_point(ctx, &mut child)?;
    let status = end_decide(&mut child, announced.is_ok());
    let killed_at = Instant::now();
    drop(child.stdin.take());
    let Some(status) = status else {
        return Ok(failed(
            "could not collect the decide worker's exit status".into(),
        ));
    };
    let problem = decide_problem(dir, spec, announced, &status, &other_output);
    Ok(DecideOutcome {
        killed_at: problem.is_none().then_some(killed_at),
        signal: status.signal(),
        code: status.code(),
        problem,
    })
}

/// Per-row decisions: the arguments that make a decide worker replay the row's decision.
fn replay_args(replay: Option<&(PathBuf, String)>) -> Vec<std::ffi::OsString> {
    match replay {
        Some((path, label)) => vec![
            "--decision-from".into(),
            path.into(),
            "--replayed-from".into(),
            label.into(),
        ],
        None => Vec::new(),
    }
}

/// Reads the decide worker's stdout until it announces its crash point (the point), closes it
/// or runs past `--decide-timeout` (why not); with every other line it printed.
fn await_crash_point(
    ctx: &CellContext<'_>,
    child: &mut Child,
) -> Result<(Result<String, CellError>, Vec<String>), CellAbort> {
    let lines = line_reader(child);
    let deadline = Instant::now() + ctx.decide_timeout;
    let mut other_output = Vec::new();
    let announced = loop {
        if ctx.cancel.load(Ordering::SeqCst) {
            kill_and_reap(child);
            return Err(CellAbort::Cancelled);
        }
        match lines.recv_timeout(Duration::from_millis(50)) {
            Ok(Line::Text(l)) => match l.strip_prefix(CRASH_LINE_PREFIX) {
                Some(point) => break Ok(point.trim().to_string()),
                None => other_output.push(l),
            },
            Ok(Line::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(CellError::NoCrashPoint)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() > deadline {
                    break Err(CellError::CrashPointTimeout {
                        secs: ctx.decide_timeout.as_secs(),
                    });
                }
            }
        }
    };
    Ok((announced, other_output))
}

/// SIGKILLs a worker that announced its crash point (Child::kill sends SIGKILL on Unix); gives
/// one that did not a moment to exit by itself, so its real exit status is recorded rather than
/// our kill. The status that ended it, if it could be collected.
fn end_decide(child: &mut Child, announced: bool) -> Option<ExitStatus> {
    if announced {
        let _ = child.kill();
        return child.wait().ok();
    }
    let grace = Instant::now() + Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < grace => std::thread::sleep(Duration::from_millis(10)),
            _ => return kill_and_reap(child),
        }
    }
}

/// Why the decide worker did not end as designed (SIGKILLed at `spec`'s crash point), if it
/// did not.
fn decide_problem(
    dir: &Path,
    spec: CellSpec,
    announced: Result<String, CellError>,
    status: &ExitStatus,
    other_output: &[String],
) -> Option<String> {
    let returned = other_output
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix(STATUS_LINE_PREFIX))
        .map(str::trim);
    let status_line = returned
        .map(|s| format!(" (it returned status {s})"))
        .unwrap_or_default();
    match announced {
        // A careful column refused a decision the approval never covered before it reached the
        // send: a judged outcome (DESIGN §4.6), not a harness failure.
        Err(_) if status.code() == Some(3) && refused_uncovered(dir, returned) => None,
        Ok(point) if point != spec.crash.as_str() => Some(format!(
            "the decide worker announced crash point `{point}`, expected `{}`",
            spec.crash
        )),
        Ok(_) if status.signal() == Some(libc::SIGKILL) => None,
        Ok(_) => Some(format!(
            "the decide worker was sent SIGKILL but {}",
            describe_exit(status)
        )),
        Err(why) => Some(format!("{why}; it {}{status_line}", describe_exit(status))),
    }
}
