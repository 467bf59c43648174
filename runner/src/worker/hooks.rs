//! The hooks a worker runs its column's send with: the crash hook that announces its crash
//! point and blocks until SIGKILLed, and the nemesis's step hook that announces every step and
//! blocks or pauses at the drawn one.

use super::{CONTINUE_LINE, CRASH_LINE_PREFIX, PAUSE_LINE_PREFIX, STEP_LINE_PREFIX};
use crate::matrix::CrashPoint;
use crate::worker_error::WorkerError;
use scenarios::billing_credit as bc;
use std::io::{BufRead, Read, Write};
use std::sync::Arc;

/// The hook of `--pause-at`: announce the step, wait for the runner's `continue` on stdin, go on.
/// If stdin closes instead (the runner died), exit without going on.
pub(crate) fn pause_hook() -> bc::CrashHook {
    Arc::new(|point: bc::CrashPoint| {
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{PAUSE_LINE_PREFIX}{}", point.as_str());
            let _ = out.flush();
        }
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        if !matches!(read, Ok(n) if n > 0 && line.trim() == CONTINUE_LINE) {
            eprintln!(
                "worker: stdin closed while paused at {}; exiting without going on",
                point.as_str()
            );
            std::process::exit(70);
        }
    })
}

/// Announces `name` as the crash point on stdout, then blocks on stdin until SIGKILLed; if
/// stdin closes instead (the runner died), exits without going on.
pub(crate) fn block_at(name: &str) {
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{CRASH_LINE_PREFIX}{name}");
        let _ = out.flush();
    }
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    eprintln!("worker: stdin closed while waiting to be killed at {name}; exiting without sending");
    std::process::exit(70);
}

/// The crash hook: announce on stdout, flush, block on stdin until SIGKILLed.
pub(crate) fn crash_hook() -> bc::CrashHook {
    Arc::new(|point: bc::CrashPoint| block_at(point.as_str()))
}

/// The nemesis hook, called at every step: print `INTERLOCK-STEP <step>` (after the step is
/// durable), then block at `kill_at` until SIGKILLed, or pause at `pause_at` until the runner
/// writes `continue`. If stdin closes (the runner died), exit without going on.
pub(super) fn step_hook(
    kill_at: Option<CrashPoint>,
    pause_at: Option<CrashPoint>,
) -> bc::CrashHook {
    let announce = |prefix: &str, point: bc::CrashPoint| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{prefix}{}", point.as_str());
        let _ = out.flush();
    };
    let kill = crash_hook();
    Arc::new(move |point: bc::CrashPoint| {
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{STEP_LINE_PREFIX}{}{}", point.as_str(), bc::stamp());
            let _ = out.flush();
        }
        if Some(point) == kill_at {
            kill(point);
        }
        if Some(point) == pause_at {
            announce(PAUSE_LINE_PREFIX, point);
            let mut line = String::new();
            let read = std::io::stdin().read_line(&mut line);
            if !matches!(read, Ok(n) if n > 0) || line.trim() != CONTINUE_LINE {
                eprintln!(
                    "worker: no `{CONTINUE_LINE}` while paused at {}; exiting without going on",
                    point.as_str()
                );
                std::process::exit(70);
            }
        }
    })
}

/// The step named by `--kill-at` or `--pause-at`, if one is.
pub(super) fn step_arg(name: Option<&str>) -> Result<Option<CrashPoint>, WorkerError> {
    Ok(name.map(CrashPoint::step).transpose()?)
}
