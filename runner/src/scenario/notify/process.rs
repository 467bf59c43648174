//! One notify worker process: spawned in its own process group, watched to its end, SIGKILLed
//! when it announces its crash point.

use super::cell::NotifyContext;
use super::worker::NotifyPhase;
use crate::cell::{describe_exit, kill_and_reap, line_reader, ms, stderr_tail, CellAbort, Line};
use crate::worker::{CONTINUE_LINE, CRASH_LINE_PREFIX, NO_CRASH, PAUSE_LINE_PREFIX};
use scenarios::billing_credit::RestartReport;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How one worker process ended.
pub(crate) enum Ended {
    /// SIGKILLed by the runner at the point it announced.
    Killed { at: String },
    /// It finished by itself and reported.
    Finished(Box<RestartReport>),
    /// It exited by itself with an error, in words with its stderr's tail.
    Errored(String),
    /// Anything else: a harness error, in words.
    Failed(String),
}

/// What a worker is asked to do.
pub(crate) struct Job<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) api_key: &'a str,
    pub(crate) column: &'a str,
    pub(crate) phase: NotifyPhase,
    pub(crate) crash: Option<&'a str>,
    /// Pause at this step and run the change before letting the worker go on.
    pub(crate) pause: Option<Pause<'a>>,
}

/// A pause: the step, and what the runner does while the worker waits there.
#[derive(Clone, Copy)]
pub(crate) struct Pause<'a> {
    pub(crate) at: &'a str,
    pub(crate) change: &'a dyn Fn() -> Result<(), String>,
}

/// How one worker process ended, and the step it was paused at, if it was.
pub(crate) struct Watched {
    pub(crate) ended: Ended,
    pub(crate) paused_at: Option<String>,
}

/// Spawns the worker of `job` and watches it to its end.
pub(crate) fn run_worker(ctx: &NotifyContext<'_>, job: &Job<'_>) -> Result<Ended, CellAbort> {
    run_watched(ctx, job).map(|w| w.ended)
}

/// Spawns the worker of `job` and watches it to its end, pausing it where the job says.
pub(crate) fn run_watched(ctx: &NotifyContext<'_>, job: &Job<'_>) -> Result<Watched, CellAbort> {
    let stderr_path = job.dir.join(format!("{}.stderr", job.phase.as_str()));
    let stderr = match std::fs::File::create(&stderr_path) {
        Ok(f) => f,
        Err(e) => {
            return Ok(Watched {
                ended: Ended::Failed(format!("cannot create the worker's log: {e}")),
                paused_at: None,
            })
        }
    };
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("notify-worker")
        .arg(job.phase.as_str())
        .args(["--column", job.column])
        .args(["--crash", job.crash.unwrap_or(NO_CRASH)])
        .arg("--cell-dir")
        .arg(job.dir)
        .arg("--key-file")
        .arg(ctx.key_file)
        .args(["--stripe-url", &ctx.stripe_url])
        .args(["--smtp-port", &ctx.smtp_port.to_string()])
        .args(["--request-timeout-ms", &ms(ctx.request_timeout).to_string()])
        .args(["--claim-ttl-ms", &ms(ctx.settings.claim_ttl).to_string()])
        .args(job.pause.iter().flat_map(|p| ["--pause-at", p.at]))
        .env(crate::worker::STRIPE_KEY_ENV, job.api_key)
        // stdin is a pipe the runner never writes: a worker blocks on it at its crash point.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    match cmd.spawn() {
        Ok(mut child) => watch(ctx, &mut child, job, &stderr_path),
        Err(e) => Ok(Watched {
            ended: Ended::Failed(format!("cannot start {}: {e}", ctx.exe.display())),
            paused_at: None,
        }),
    }
}

/// Watches a worker: SIGKILLs it when it announces a crash point (confirming signal 9), makes
/// the change and lets it go on when it pauses where the job says, or collects its report when
/// it finishes by itself.
fn watch(
    ctx: &NotifyContext<'_>,
    child: &mut Child,
    job: &Job<'_>,
    stderr: &Path,
) -> Result<Watched, CellAbort> {
    let lines = line_reader(child);
    let deadline = Instant::now() + ctx.worker_timeout;
    let mut output = Vec::new();
    let mut paused_at = None;
    let failed = |child: &mut Child, why: String, paused_at: Option<String>| {
        kill_and_reap(child);
        Ok(Watched {
            ended: Ended::Failed(why),
            paused_at,
        })
    };
    let announced = loop {
        if ctx.cancel.load(Ordering::SeqCst) {
            kill_and_reap(child);
            return Err(CellAbort::Cancelled);
        }
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(Line::Text(l)) if l.starts_with(PAUSE_LINE_PREFIX) => {
                let step = l.trim_start_matches(PAUSE_LINE_PREFIX).trim().to_owned();
                let Some(pause) = job.pause.filter(|p| p.at == step && paused_at.is_none()) else {
                    return failed(child, format!("a worker paused at `{step}` unasked"), None);
                };
                if let Err(why) = (pause.change)() {
                    return failed(child, why, Some(step));
                }
                paused_at = Some(step);
                let went_on = child.stdin.as_mut().map(|stdin| {
                    stdin
                        .write_all(format!("{CONTINUE_LINE}\n").as_bytes())
                        .and_then(|()| stdin.flush())
                });
                if !matches!(went_on, Some(Ok(()))) {
                    return failed(child, "cannot let a paused worker go on".into(), paused_at);
                }
            }
            Ok(Line::Text(l)) => match l.strip_prefix(CRASH_LINE_PREFIX) {
                Some(point) => break Some(point.trim().to_owned()),
                None => output.push(l),
            },
            Ok(Line::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                let why = format!(
                    "a worker did not finish within {} s and was killed; stderr: {}",
                    ctx.worker_timeout.as_secs(),
                    stderr_tail(stderr)
                );
                return failed(child, why, paused_at);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    let ended = match announced {
        Some(point) => killed(child, &point, job.crash),
        None => finished(child, &output, stderr),
    };
    Ok(Watched { ended, paused_at })
}

/// The worker announced `point`: kill it and confirm the kill was at the expected point.
fn killed(child: &mut Child, point: &str, crash: Option<&str>) -> Ended {
    let status = kill_and_reap(child);
    drop(child.stdin.take());
    match status {
        _ if Some(point) != crash => Ended::Failed(format!(
            "a worker announced crash point `{point}`, expected `{}`",
            crash.unwrap_or(NO_CRASH)
        )),
        Some(s) if s.signal() == Some(libc::SIGKILL) => Ended::Killed {
            at: point.to_owned(),
        },
        Some(s) => Ended::Failed(format!(
            "a worker was sent SIGKILL but {}",
            describe_exit(&s)
        )),
        None => Ended::Failed("could not collect a killed worker's exit status".into()),
    }
}

/// The worker's stdout closed: collect its exit and its report (its last line).
fn finished(child: &mut Child, output: &[String], stderr: &Path) -> Ended {
    drop(child.stdin.take());
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => return Ended::Failed(format!("could not collect a worker's exit: {e}")),
    };
    if !status.success() {
        return Ended::Errored(format!(
            "a worker {}; stderr: {}",
            describe_exit(&status),
            stderr_tail(stderr)
        ));
    }
    let Some(last) = output.iter().rev().find(|l| !l.trim().is_empty()) else {
        return Ended::Failed("a worker printed no report".into());
    };
    match serde_json::from_str::<RestartReport>(last) {
        Ok(r) => Ended::Finished(Box::new(r)),
        Err(e) => Ended::Failed(format!("a worker's last line is not a report ({e})")),
    }
}
