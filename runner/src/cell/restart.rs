//! The restart worker of a cell: run to its end, its report read from its last line.

use super::process::{describe_exit, kill_and_reap, line_reader, spawn_worker, Line};
use super::{CellAbort, CellContext};
use crate::cell_error::CellError;
use crate::matrix::CellSpec;
use scenarios::billing_credit as bc;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The restart's report and its output as the cell keeps it, or why the harness could not get it.
pub(super) type RestartResult = Result<(bc::RestartReport, Value), CellError>;

/// The restart worker, run to its end; `Err` only when the run was interrupted.
pub(super) fn run_restart(
    ctx: &CellContext<'_>,
    dir: &Path,
    api_key: &str,
    spec: CellSpec,
) -> Result<RestartResult, CellAbort> {
    let mut child = match spawn_worker(ctx, dir, api_key, "restart", spec, Stdio::null(), &[]) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let lines = line_reader(&mut child);
    let deadline = Instant::now() + ctx.restart_timeout;
    let mut output = Vec::new();
    loop {
        if ctx.cancel.load(Ordering::SeqCst) {
            kill_and_reap(&mut child);
            return Err(CellAbort::Cancelled);
        }
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(Line::Text(l)) => output.push(l),
            Ok(Line::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() > deadline {
                    kill_and_reap(&mut child);
                    return Ok(Err(CellError::RestartTimeout {
                        secs: ctx.restart_timeout.as_secs(),
                    }));
                }
            }
        }
    }
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => return Ok(Err(CellError::RestartWait(e))),
    };
    if !status.success() {
        return Ok(Err(CellError::RestartExit(describe_exit(&status))));
    }
    let Some(last) = output.iter().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(Err(CellError::RestartSilent));
    };
    let report: bc::RestartReport = match serde_json::from_str(last) {
        Ok(r) => r,
        Err(source) => {
            return Ok(Err(CellError::RestartReport {
                source,
                line: last.chars().take(300).collect(),
            }))
        }
    };
    let mut raw: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    // The receipt and the hand_check log have their own fields in the cell; keep the restart
    // output small by not repeating them.
    if let Value::Object(map) = &mut raw {
        map.remove("receipt");
        map.remove("hand_check_log");
    }
    Ok(Ok((report, raw)))
}
