//! One notify worker process: spawned in its own process group, watched to its end, SIGKILLed
//! when it announces its crash point.

use super::cell::NotifyContext;
use super::worker::NotifyPhase;
use crate::cell::{describe_exit, kill_and_reap, line_reader, ms, stderr_tail, CellAbort, Line};
use crate::worker::{CRASH_LINE_PREFIX, NO_CRASH};
use scenarios::billing_credit::RestartReport;
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
}

/// Spawns the worker of `job` and watches it to its end.
pub(crate) fn run_worker(ctx: &NotifyContext<'_>, job: &Job<'_>) -> Result<Ended, CellAbort> {
    let stderr_path = job.dir.join(format!("{}.stderr", job.phase.as_str()));
    let stderr = match std::fs::File::create(&stderr_path) {
        Ok(f) => f,
        Err(e) => {
            return Ok(Ended::Failed(format!(
                "cannot create the worker's log: {e}"
            )))
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
        .env(crate::worker::STRIPE_KEY_ENV, job.api_key)
        // stdin is a pipe the runner never writes: a worker blocks on it at its crash point.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    match cmd.spawn() {
        Ok(mut child) => watch(ctx, &mut child, job.crash, &stderr_path),
        Err(e) => Ok(Ended::Failed(format!(
            "cannot start {}: {e}",
            ctx.exe.display()
        ))),
    }
}

/// Watches a worker: SIGKILLs it when it announces a crash point (confirming signal 9), or
/// collects its report when it finishes by itself.
fn watch(
    ctx: &NotifyContext<'_>,
    child: &mut Child,
    crash: Option<&str>,
    stderr: &Path,
) -> Result<Ended, CellAbort> {
    let lines = line_reader(child);
    let deadline = Instant::now() + ctx.worker_timeout;
    let mut output = Vec::new();
    let announced = loop {
        if ctx.cancel.load(Ordering::SeqCst) {
            kill_and_reap(child);
            return Err(CellAbort::Cancelled);
        }
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(Line::Text(l)) => match l.strip_prefix(CRASH_LINE_PREFIX) {
                Some(point) => break Some(point.trim().to_owned()),
                None => output.push(l),
            },
            Ok(Line::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                kill_and_reap(child);
                return Ok(Ended::Failed(format!(
                    "a worker did not finish within {} s and was killed; stderr: {}",
                    ctx.worker_timeout.as_secs(),
                    stderr_tail(stderr)
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    Ok(match announced {
        Some(point) => killed(child, &point, crash),
        None => finished(child, &output, stderr),
    })
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
