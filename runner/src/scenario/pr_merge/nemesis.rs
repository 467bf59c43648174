//! `runner --scenario pr_merge --nemesis LIST`: randomized trials on the pr_merge case
//! (`verify::scenarios::pr_merge_nemesis`). Each trial opens its own repository, sets the
//! service fault it drew, runs the worker (SIGKILLed at its drawn step, or while its request is
//! held, or paused while a person pushes or the approval is revoked), makes the drawn outage, restarts it (its restart
//! killed where drawn, then restarted again), reads the repository back with git and is judged
//! by the same rules. Writes `DIR/pr_merge_nemesis.json`, signed, and checks it.

use super::cell::{open_case, run_watched, Ended, MergeContext, Watch};
use super::worker::MergePhase;
use super::{run_plan, PrMergeError};
use crate::cell::CellAbort;
use crate::cli::RunArgs;
use crate::run::RunOutcome;
use scenarios::pr_merge::CaseFile;
use verify::scenarios::pr_merge::{TicketRecord, WorkerExit};
use verify::scenarios::pr_merge_nemesis::{
    judge, plan, Cell, Params, Planned, PrMergeNemesis, HELD_STEP, NEMESES, RESTART_FAILED,
};

/// The nemeses `list` names (`all`, or comma-separated names of
/// [`verify::scenarios::pr_merge_nemesis::NEMESES`]).
fn nemeses(list: &str) -> Result<Vec<String>, PrMergeError> {
    crate::scenario::cells::nemesis_names(list, &NEMESES).map_err(|got| {
        PrMergeError::UnknownNemesis {
            got,
            known: NEMESES.join(", "),
        }
    })
}

/// Runs a pr_merge campaign of the nemeses in `list`, `--trials` per nemesis and column.
pub fn run(args: &RunArgs, list: &str) -> Result<RunOutcome, PrMergeError> {
    if args.trials == 0 {
        return Err(PrMergeError::NoRepeat);
    }
    let params = Params {
        seed: args.seed.unwrap_or_else(|| rand::random::<u64>() >> 11),
        trials: args.trials,
        nemeses: nemeses(list)?,
        columns: verify::scenarios::pr_merge::COLUMNS
            .map(String::from)
            .to_vec(),
    };
    let trials =
        plan(&params, usize::MAX).map_err(|e| PrMergeError::CouldNotContinue(e.to_string()))?;
    let command = format!(
        "runner --scenario pr_merge --nemesis {} --trials {} --seed {}",
        params.nemeses.join(","),
        params.trials,
        params.seed
    );
    run_plan::<PrMergeNemesis>(
        args,
        params,
        &trials,
        &command,
        |p| format!("{}:{}#{}", p.nemesis, p.column, p.index),
        run_trial,
        trial_line,
    )
}

fn trial_line(c: &Cell) -> String {
    if let Some(e) = &c.harness_error {
        return format!("HARNESS_ERROR: {e}");
    }
    match &c.judgement {
        Some(j) => format!(
            "{}{} {} merge(s), want {}; {}{}",
            if j.merge.invariant_held {
                "held"
            } else {
                "VIOLATED"
            },
            if j.fired { "" } else { " (fault did not fire)" },
            j.merge.merges,
            j.merge.want,
            c.ticket.status,
            if j.beyond.is_some() { " (beyond)" } else { "" }
        ),
        None => "not judged".into(),
    }
}

/// The exit record of a first worker that ended as `ended`.
fn first_exit(ended: &Ended) -> Option<WorkerExit> {
    match ended {
        Ended::Killed { at } => Some(WorkerExit {
            code: None,
            signal: Some(libc::SIGKILL),
            at: Some(at.clone()),
        }),
        Ended::Finished(_) => Some(WorkerExit {
            code: Some(0),
            signal: None,
            at: None,
        }),
        Ended::Errored(_) => Some(WorkerExit {
            code: Some(1),
            signal: None,
            at: None,
        }),
        Ended::Failed(_) => None,
    }
}

/// Runs trial `index` of the campaign.
fn run_trial(ctx: &MergeContext<'_>, index: usize, planned: &Planned) -> Result<Cell, CellAbort> {
    let (case, dir) = open_case(
        ctx,
        index,
        &format!("{}:{}", planned.nemesis, planned.column),
    )?;
    let d = &planned.draw;
    let mut cell = Cell {
        planned: planned.clone(),
        pull: case.pull,
        truth: verify::scenarios::pr_merge::RepoTruth {
            reviewed_head: case.reviewed_head.clone(),
            updates: Vec::new(),
            outage_merge: None,
        },
        ticket: TicketRecord::blank(),
        restart_killed_at: None,
        paused_at: None,
        released_at: None,
        held_ms: None,
        fault_taken: None,
        harness_error: None,
        worker_output: None,
        judgement: None,
    };
    let fault = match (d.hold_ms, d.answer.as_deref()) {
        _ if d.release_at.is_some() => Some(forge::Fault::HoldUntilReleased),
        (Some(ms), _) => Some(forge::Fault::Hold { ms }),
        (None, Some("drop")) => Some(forge::Fault::DropAfterCommit),
        (None, Some(_)) => Some(forge::Fault::FailAfterCommit),
        (None, None) => None,
    };
    if let Some(f) = fault {
        ctx.forge.set_fault(&case.repo, case.pull, f);
    }
    let change = || match planned.nemesis.as_str() {
        "revoke_mid_check" => {
            let mut revoked = CaseFile::load(&dir)
                .map_err(|e| format!("cannot read the case to revoke its approval: {e}"))?;
            revoked.approval.revoked = Some("revoked while the worker was mid-check".into());
            revoked
                .save(&dir)
                .map_err(|e| format!("cannot revoke the approval: {e}"))
        }
        _ => ctx
            .forge
            .push_unreviewed(&case.repo, case.pull)
            .map(|_| ())
            .map_err(|e| format!("the push while the worker was paused failed: {e}")),
    };
    let held = d.kill_at.as_deref() == Some(HELD_STEP);
    let watch = Watch {
        crash: d.kill_at.as_deref().filter(|_| !held),
        pause_at: d.pause_at.as_deref(),
        on_pause: d
            .pause_at
            .as_ref()
            .map(|_| &change as &dyn Fn() -> Result<(), String>),
        held: held.then_some((case.repo.as_str(), case.pull)),
    };
    let first = run_watched(ctx, &dir, &case, &planned.column, MergePhase::Send, &watch)?;
    if fault.is_some() {
        cell.fault_taken = Some(!ctx.forge.fault_waiting(&case.repo, case.pull));
    }
    cell.paused_at = first.paused_at;
    cell.ticket.first_exit = first_exit(&first.ended);
    let mut restart = true;
    match first.ended {
        Ended::Killed { at } => cell.ticket.killed_at = Some(at),
        Ended::Finished(report) => {
            // A first worker that ended by itself answered; only an answer the gate left open
            // is settled by a restart.
            restart = report.status == "IN_FLIGHT";
            if !restart {
                record(&mut cell, &planned.column, *report);
            }
        }
        // The column's own failure (an answer it could not read): a restart finishes its job.
        Ended::Errored(why) => cell.worker_output = Some(why),
        Ended::Failed(why) => return Ok(harness_error(cell, why)),
    }
    match outage(ctx, &case, &d.outage) {
        Ok(merge) => cell.truth.outage_merge = merge,
        Err(e) => return Ok(harness_error(cell, format!("the outage failed: {e}"))),
    }
    // release_mid_restart: the held merge lands when the restart pauses at the drawn step,
    // and the runner learns how long it was held once it has landed.
    let held_for = std::cell::Cell::new(None);
    // A restart may announce the step again (the gate looks up once at once, and again once
    // the in-flight bound has passed): the merge is released at the first announcement only.
    let release = || match (held_for.get(), ctx.forge.release(&case.repo, case.pull)) {
        (Some(_), _) => Ok(()),
        (None, Some(held)) => {
            held_for.set(Some(crate::cell::ms(held)));
            Ok(())
        }
        (None, None) => Err("no merge request was held to release".to_owned()),
    };
    let mut release_at = d.release_at.as_deref();
    if restart {
        let mut crash = d.restart_kill_at.as_deref();
        loop {
            let watch = Watch {
                crash,
                pause_at: release_at,
                on_pause: release_at.map(|_| &release as &dyn Fn() -> Result<(), String>),
                ..Watch::default()
            };
            let watched = run_watched(
                ctx,
                &dir,
                &case,
                &planned.column,
                MergePhase::Restart,
                &watch,
            )?;
            if watched.paused_at.is_some() {
                cell.released_at = watched.paused_at;
                cell.held_ms = held_for.get();
                release_at = None;
            }
            match watched.ended {
                Ended::Killed { at } if crash.is_some() => {
                    cell.restart_killed_at = Some(at);
                    crash = None;
                }
                Ended::Finished(report) => {
                    record(&mut cell, &planned.column, *report);
                    break;
                }
                // One rule for every column, the gate's included: unresolved.
                Ended::Errored(why) => {
                    cell.ticket.status = RESTART_FAILED.into();
                    cell.worker_output = Some(why);
                    break;
                }
                Ended::Killed { at } => {
                    return Ok(harness_error(
                        cell,
                        format!("a restart announced a crash point ({at}) it was not given"),
                    ))
                }
                Ended::Failed(why) => return Ok(harness_error(cell, why)),
            }
        }
    }
    if release_at.is_some() {
        // The restart never reached the drawn step: land the held merge now, before the
        // repository is read (the trial did not fire).
        let _ = ctx.forge.release(&case.repo, case.pull);
    }
    match ctx.forge.truth(
        &case.repo,
        case.pull,
        &case.reviewed_head,
        cell.truth.outage_merge.clone(),
    ) {
        Ok(truth) => cell.truth = truth,
        Err(e) => {
            return Ok(harness_error(
                cell,
                format!("cannot read the repository back: {e}"),
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
                    "the repository does not show the trial as planned: {}",
                    why.join("; ")
                ),
            ));
        }
    }
    Ok(cell)
}

/// The final report's status, and for `interlock` its record.
fn record(cell: &mut Cell, column: &str, report: scenarios::billing_credit::RestartReport) {
    cell.ticket.status = report.status;
    if column == "interlock" {
        cell.ticket.effect_id = report.effect_id;
        cell.ticket.journal_kinds = Some(report.journal_kinds);
        cell.ticket.receipt = report.receipt;
    }
}

fn harness_error(mut cell: Cell, why: String) -> Cell {
    cell.worker_output = cell
        .worker_output
        .filter(|o| !o.trim().is_empty())
        .or_else(|| Some(why.clone()));
    cell.harness_error = Some(why);
    cell.judgement = None;
    cell
}

fn outage(
    ctx: &MergeContext<'_>,
    case: &CaseFile,
    outage: &str,
) -> Result<Option<String>, forge::ForgeError> {
    super::cell::outage(ctx.forge, case, outage)
}
