//! A cell's worker processes: spawned in their own process group with stderr to a file, their
//! stdout read on a thread, killed and reaped, and how they ended described.

use super::{ms, CellContext};
use crate::cell_error::CellError;
use crate::matrix::CellSpec;
use crate::worker;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;

/// A line of a worker's stdout, or its end.
pub(crate) enum Line {
    /// A line, without its newline.
    Text(String),
    /// The worker closed its stdout.
    Eof,
}

/// Spawns a worker: own process group (a terminal's Ctrl-C reaches only the runner, which then
/// kills its workers itself), stdout piped, stderr to a file in the cell dir.
pub(super) fn spawn_worker(
    ctx: &CellContext<'_>,
    dir: &Path,
    api_key: &str,
    phase: &str,
    spec: CellSpec,
    stdin: Stdio,
    extra: &[std::ffi::OsString],
) -> Result<Child, CellError> {
    let stderr_path = dir.join(format!("{phase}.stderr"));
    let stderr = fs::File::create(&stderr_path).map_err(|source| CellError::CreateLog {
        path: stderr_path,
        source,
    })?;
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("worker")
        .arg(phase)
        .arg("--column")
        .arg(spec.column.as_str())
        .arg("--crash")
        .arg(spec.crash.as_str())
        .arg("--cell-dir")
        .arg(dir)
        .arg("--key-file")
        .arg(ctx.key_file)
        .arg("--base-url")
        .arg(ctx.backend.base_url())
        .arg("--request-timeout-ms")
        .arg(ms(ctx.backend.request_timeout()).to_string())
        .arg("--max-in-flight-ms")
        .arg(ms(ctx.backend.scenario_settings().max_in_flight).to_string())
        .arg("--claim-ttl-ms")
        .arg(ms(ctx.backend.scenario_settings().claim_ttl).to_string())
        .args(ctx.decider_args)
        .args(extra)
        .env(worker::STRIPE_KEY_ENV, api_key)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    cmd.spawn().map_err(|source| CellError::Spawn {
        name: phase.to_owned(),
        exe: ctx.exe.to_owned(),
        source,
    })
}

/// Reads a child's stdout lines on a thread; `Line::Eof` when it closes.
pub(crate) fn line_reader(child: &mut Child) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(Line::Text(l)).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = tx.send(Line::Eof);
        });
    } else {
        let _ = tx.send(Line::Eof);
    }
    rx
}

/// SIGKILLs the worker (if it still runs) and collects its exit status.
pub(crate) fn kill_and_reap(child: &mut Child) -> Option<ExitStatus> {
    let _ = child.kill();
    child.wait().ok()
}

/// How the worker ended, as the harness error says it.
pub(crate) fn describe_exit(status: &ExitStatus) -> String {
    match (status.signal(), status.code()) {
        (Some(sig), _) => format!("ended by signal {sig}"),
        (None, Some(code)) => format!("exited by itself with code {code}"),
        _ => "ended in an unknown way".into(),
    }
}
