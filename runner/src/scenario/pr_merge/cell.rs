//! One pr_merge cell: open the case (its own repository at the forge), run the worker until it
//! is SIGKILLed at the row's crash point, make the outage while it is dead, restart it, read the
//! repository back with git and judge with `verify::scenarios::pr_merge`.

use super::worker::MergePhase;
use crate::cell::{describe_exit, kill_and_reap, line_reader, ms, stderr_tail, CellAbort, Line};
use crate::worker::{CONTINUE_LINE, CRASH_LINE_PREFIX, NO_CRASH, PAUSE_LINE_PREFIX};
use scenarios::billing_credit::{RestartReport, ScenarioSettings};
use scenarios::pr_merge::{Approval, CaseFile, APPROVER};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use verify::scenarios::pr_merge::{judge, Cell, Planned, TicketRecord, WorkerExit};
use verify::scenarios::pr_merge_nemesis::HELD_STEP;

/// How long an approval holds after the runner opens its case: far longer than any cell runs.
const APPROVAL_HOLDS_MS: u64 = 3_600_000;

/// What every cell of a run shares.
pub(crate) struct MergeContext<'a> {
    pub(crate) forge: &'a forge::Forge,
    pub(crate) exe: &'a Path,
    pub(crate) run_dir: &'a Path,
    pub(crate) key_file: &'a Path,
    pub(crate) cancel: &'a AtomicBool,
    pub(crate) settings: ScenarioSettings,
    pub(crate) request_timeout: Duration,
    pub(crate) worker_timeout: Duration,
}

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

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, ms)
}

/// Opens case `index`: its own repository at the forge, its directory, its `case.json` with an
/// approval to merge the pull request at its head. `label` names the cell in errors.
pub(crate) fn open_case(
    ctx: &MergeContext<'_>,
    index: usize,
    label: &str,
) -> Result<(CaseFile, std::path::PathBuf), CellAbort> {
    let repo = format!("case-{index:04}");
    let setup = |what: &str, e: String| CellAbort::Setup(format!("cell {label} ({what}): {e}"));
    let pull = ctx
        .forge
        .create_case(&repo)
        .map_err(|e| setup("open its repository", e.to_string()))?;
    let dir = ctx.run_dir.join(&repo);
    std::fs::create_dir_all(&dir).map_err(|e| setup("make its directory", e.to_string()))?;
    let case = CaseFile {
        repo: repo.clone(),
        pull: pull.number,
        reviewed_head: pull.head.clone(),
        approval: Approval {
            id: format!("ap_{repo}"),
            approver: APPROVER.to_owned(),
            pull: pull.number,
            expires_at_ms: now_ms() + APPROVAL_HOLDS_MS,
            revoked: None,
        },
    };
    case.save(&dir)
        .map_err(|e| setup("write case.json", e.to_string()))?;
    Ok((case, dir))
}

/// Runs cell `index` of the plan.
pub(crate) fn run_cell(
    ctx: &MergeContext<'_>,
    index: usize,
    planned: &Planned,
) -> Result<Cell, CellAbort> {
    let label = format!(
        "{}:{}:{}",
        planned.crash_point, planned.outage, planned.column
    );
    let (case, dir) = open_case(ctx, index, &label)?;
    let repo = case.repo.clone();
    let mut cell = Cell {
        planned: planned.clone(),
        pull: case.pull,
        truth: verify::scenarios::pr_merge::RepoTruth {
            reviewed_head: case.reviewed_head.clone(),
            updates: Vec::new(),
            outage_merge: None,
        },
        ticket: TicketRecord::blank(),
        harness_error: None,
        worker_output: None,
        judgement: None,
    };
    let first = run_worker(
        ctx,
        &dir,
        &case,
        &planned.column,
        MergePhase::Send,
        Some(&planned.crash_point),
    )?;
    let at = match first {
        Ended::Killed { at } => at,
        Ended::Finished(r) => {
            return Ok(harness_error(
                cell,
                format!(
                    "the worker finished ({}) before its crash point {}",
                    r.status, planned.crash_point
                ),
                None,
            ))
        }
        Ended::Errored(why) | Ended::Failed(why) => return Ok(harness_error(cell, why, None)),
    };
    cell.ticket.killed_at = Some(at.clone());
    cell.ticket.first_exit = Some(WorkerExit {
        code: None,
        signal: Some(libc::SIGKILL),
        at: Some(at),
    });
    match outage(ctx.forge, &case, &planned.outage) {
        Ok(merge) => cell.truth.outage_merge = merge,
        Err(e) => return Ok(harness_error(cell, format!("the outage failed: {e}"), None)),
    }
    match run_worker(ctx, &dir, &case, &planned.column, MergePhase::Restart, None)? {
        Ended::Finished(report) => {
            cell.ticket.status = report.status;
            if planned.column == "interlock" {
                cell.ticket.effect_id = report.effect_id;
                cell.ticket.journal_kinds = Some(report.journal_kinds);
                cell.ticket.receipt = report.receipt;
            }
        }
        // The column's own failure after the crash: its case is unresolved.
        Ended::Errored(why) => {
            cell.ticket.status = verify::scenarios::pr_merge::RESTART_FAILED.into();
            cell.worker_output = Some(why);
        }
        Ended::Killed { at } => {
            return Ok(harness_error(
                cell,
                format!("the restart announced a crash point ({at}) it was not given"),
                None,
            ))
        }
        Ended::Failed(why) => return Ok(harness_error(cell, why, None)),
    }
    match ctx.forge.truth(
        &repo,
        case.pull,
        &case.reviewed_head,
        cell.truth.outage_merge.clone(),
    ) {
        Ok(truth) => cell.truth = truth,
        Err(e) => {
            return Ok(harness_error(
                cell,
                format!("cannot read the repository back: {e}"),
                None,
            ))
        }
    }
    match judge(&cell) {
        Ok(j) => cell.judgement = Some(j),
        Err(findings) => {
            let why: Vec<String> = findings.iter().map(ToString::to_string).collect();
            return Ok(harness_error(
                cell,
                format!(
                    "the repository does not show the cell as planned: {}",
                    why.join("; ")
                ),
                None,
            ));
        }
    }
    Ok(cell)
}

/// Marks `cell` a harness error with `why` and the worker output that shows it (verify refuses
/// a harness error without both): `output`, else what the cell kept, else a line saying no
/// worker was running.
fn harness_error(mut cell: Cell, why: String, output: Option<String>) -> Cell {
    cell.harness_error = Some(why);
    cell.worker_output = output
        .or(cell.worker_output)
        .filter(|o| !o.trim().is_empty())
        .or_else(|| Some("(no worker output: the harness failed outside a worker)".into()));
    cell.judgement = None;
    cell
}

/// Makes the row's outage while the worker is dead; the merge commit when someone else merged.
/// Someone else cannot merge a pull request the worker's merge already closed: that outage then
/// changes nothing (as at GitHub, whose merge endpoint refuses an already merged pull request).
pub(crate) fn outage(
    forge: &forge::Forge,
    case: &CaseFile,
    outage: &str,
) -> Result<Option<String>, forge::ForgeError> {
    match outage {
        "unreviewed_push" => forge.push_unreviewed(&case.repo, case.pull).map(|_| None),
        "merged_by_other" => match forge.merge_as_other(&case.repo, case.pull) {
            Ok(merge) => Ok(Some(merge)),
            Err(e) if e.already_merged() => Ok(None),
            Err(e) => Err(e),
        },
        "base_moved" => forge.commit_on_base(&case.repo).map(|_| None),
        _ => Ok(None),
    }
}

/// What the runner does to a worker while it runs, besides watching it to its end.
#[derive(Default)]
pub(crate) struct Watch<'w> {
    /// SIGKILL it when it announces this step.
    pub(crate) crash: Option<&'w str>,
    /// Pause it at this step, call `on_pause` (the world changes), then let it go on.
    pub(crate) pause_at: Option<&'w str>,
    /// What the runner does while the worker is paused.
    pub(crate) on_pause: Option<&'w dyn Fn() -> Result<(), String>>,
    /// SIGKILL it once the forge has taken its merge request for this repository and pull
    /// request (the request is then held at the service).
    pub(crate) held: Option<(&'w str, u64)>,
}

/// How a watched worker ended, and the step it was paused at, if it was.
pub(crate) struct Watched {
    pub(crate) ended: Ended,
    pub(crate) paused_at: Option<String>,
}

/// Spawns a worker of `phase` and watches it to its end.
pub(crate) fn run_worker(
    ctx: &MergeContext<'_>,
    dir: &Path,
    case: &CaseFile,
    column: &str,
    phase: MergePhase,
    crash: Option<&str>,
) -> Result<Ended, CellAbort> {
    let watch = Watch {
        crash,
        ..Watch::default()
    };
    run_watched(ctx, dir, case, column, phase, &watch).map(|w| w.ended)
}

/// Spawns a worker of `phase` and watches it to its end as `watch` says.
pub(crate) fn run_watched(
    ctx: &MergeContext<'_>,
    dir: &Path,
    case: &CaseFile,
    column: &str,
    phase: MergePhase,
    watch: &Watch<'_>,
) -> Result<Watched, CellAbort> {
    let crash = watch.crash;
    let stderr_path = dir.join(format!("{}.stderr", phase.as_str()));
    let failed = |why: String| {
        Ok(Watched {
            ended: Ended::Failed(why),
            paused_at: None,
        })
    };
    let stderr = match std::fs::File::create(&stderr_path) {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot create the worker's log: {e}")),
    };
    let mut cmd = Command::new(ctx.exe);
    cmd.arg("merge-worker")
        .arg(phase.as_str())
        .args(["--column", column])
        .args(["--crash", crash.unwrap_or(NO_CRASH)])
        .arg("--cell-dir")
        .arg(dir)
        .arg("--key-file")
        .arg(ctx.key_file)
        .args(["--forge-url", &ctx.forge.url()])
        .args(["--repo", &case.repo])
        .args(["--request-timeout-ms", &ms(ctx.request_timeout).to_string()])
        .args([
            "--max-in-flight-ms",
            &ms(ctx.settings.max_in_flight).to_string(),
        ])
        .args(["--claim-ttl-ms", &ms(ctx.settings.claim_ttl).to_string()])
        // stdin is a pipe the runner never writes: a worker blocks on it at its crash point.
        .args(
            watch
                .pause_at
                .map(|p| ["--pause-at", p])
                .into_iter()
                .flatten(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start {}: {e}", ctx.exe.display())),
    };
    watch_to_end(ctx, child, watch, &stderr_path)
}

/// Watches a worker to its end as `watch` says: SIGKILLs it when it announces its crash point
/// (confirming signal 9) or once its held request was taken, pauses it, or collects its report
/// when it finishes by itself.
fn watch_to_end(
    ctx: &MergeContext<'_>,
    mut child: Child,
    watch: &Watch<'_>,
    stderr: &Path,
) -> Result<Watched, CellAbort> {
    let mut paused_at = None;
    let ended = watch_loop(ctx, &mut child, watch, stderr, &mut paused_at)?;
    Ok(Watched { ended, paused_at })
}

fn watch_loop(
    ctx: &MergeContext<'_>,
    child: &mut Child,
    watch: &Watch<'_>,
    stderr: &Path,
    paused_at: &mut Option<String>,
) -> Result<Ended, CellAbort> {
    let crash = watch.crash;
    let lines = line_reader(child);
    let deadline = Instant::now() + ctx.worker_timeout;
    let mut output = Vec::new();
    let announced = loop {
        if ctx.cancel.load(Ordering::SeqCst) {
            kill_and_reap(child);
            return Err(CellAbort::Cancelled);
        }
        if let Some((repo, pull)) = watch.held {
            if !ctx.forge.fault_waiting(repo, pull) {
                break Some(HELD_STEP.to_owned());
            }
        }
        let poll = if watch.held.is_some() { 2 } else { 20 };
        match lines.recv_timeout(Duration::from_millis(poll)) {
            Ok(Line::Text(l)) => {
                if let Some(point) = l.strip_prefix(CRASH_LINE_PREFIX) {
                    break Some(point.trim().to_owned());
                }
                if let Some(point) = l.strip_prefix(PAUSE_LINE_PREFIX) {
                    let point = point.trim().to_owned();
                    if let Err(why) = pause(child, watch, &point) {
                        kill_and_reap(child);
                        return Ok(Ended::Failed(why));
                    }
                    *paused_at = Some(point);
                    continue;
                }
                output.push(l);
            }
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
    if let Some(point) = announced {
        let status = kill_and_reap(child);
        drop(child.stdin.take());
        let expected = if watch.held.is_some() {
            Some(HELD_STEP)
        } else {
            crash
        };
        return Ok(match status {
            _ if Some(point.as_str()) != expected => Ended::Failed(format!(
                "a worker announced crash point `{point}`, expected `{}`",
                expected.unwrap_or(NO_CRASH)
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

/// A worker announced it is paused at `point`: if it is the step to pause at, let the world
/// change, then tell it to go on.
fn pause(child: &mut Child, watch: &Watch<'_>, point: &str) -> Result<(), String> {
    if watch.pause_at != Some(point) {
        return Err(format!(
            "a worker paused at `{point}`, expected `{}`",
            watch.pause_at.unwrap_or("none")
        ));
    }
    if let Some(change) = watch.on_pause {
        change()?;
    }
    let Some(stdin) = child.stdin.as_mut() else {
        return Err("the paused worker has no stdin".into());
    };
    stdin
        .write_all(format!("{CONTINUE_LINE}\n").as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|e| format!("cannot tell the paused worker to go on: {e}"))
}
