//! `runner --scenario notify --nemesis LIST`: randomized trials on the notify case
//! (`verify::scenarios::notify_nemesis`). Each trial opens its own case, runs the worker
//! (SIGKILLed at its drawn step, mid-`DATA` included, or paused while the refund fails or the
//! approval is revoked), makes the drawn change while it is dead, restarts it (its restart killed
//! where drawn, then restarted again), reads the mailbox once the queue is empty, the refund and
//! the approval back, and is judged by the same rules. Writes `DIR/notify_nemesis.json`, signed,
//! and checks it.

use super::cell::{open_case, outage, read_mailbox, read_truth, NotifyContext, Opened, Problem};
use super::process::{run_watched, Ended, Job, Pause};
use super::worker::NotifyPhase;
use super::{run_plan, NotifyRunError};
use crate::cell::CellAbort;
use crate::cli::RunArgs;
use crate::run::RunOutcome;
use scenarios::billing_credit::RestartReport;
use std::cell::RefCell;
use verify::scenarios::notify::{Answer, MailTruth, Message};
use verify::scenarios::notify_nemesis::{
    judge, plan, Cell, NotifyNemesis, Params, Planned, NEMESES, RESTART_FAILED,
};
use verify::scenarios::pr_merge::{TicketRecord, WorkerExit};

/// The nemeses `list` names (`all`, or comma-separated names of [`NEMESES`]).
fn nemeses(list: &str) -> Result<Vec<String>, NotifyRunError> {
    crate::scenario::cells::nemesis_names(list, &NEMESES).map_err(|got| {
        NotifyRunError::UnknownNemesis {
            got,
            known: NEMESES.join(", "),
        }
    })
}

/// Runs a notify campaign of the nemeses in `list`, `--trials` per nemesis and column.
pub fn run(args: &RunArgs, list: &str) -> Result<RunOutcome, NotifyRunError> {
    if args.trials == 0 {
        return Err(NotifyRunError::NoRepeat);
    }
    let params = Params {
        seed: args.seed.unwrap_or_else(|| rand::random::<u64>() >> 11),
        trials: args.trials,
        nemeses: nemeses(list)?,
        columns: verify::scenarios::notify::COLUMNS
            .map(String::from)
            .to_vec(),
    };
    let trials =
        plan(&params, usize::MAX).map_err(|e| NotifyRunError::CouldNotContinue(e.to_string()))?;
    let command = format!(
        "runner --scenario notify --nemesis {} --trials {} --seed {}",
        params.nemeses.join(","),
        params.trials,
        params.seed
    );
    run_plan::<NotifyNemesis>(
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
            "{}{} {} email(s), want {}; {}{}{}",
            if j.mail.invariant_held {
                "held"
            } else {
                "VIOLATED"
            },
            if j.fired { "" } else { " (fault did not fire)" },
            j.mail.delivered,
            j.mail.want,
            c.ticket.status,
            match j.mail.answer {
                Answer::Matches => "",
                Answer::Wrong => " (wrong answer)",
                Answer::HandedOff => " (handed to a person)",
                Answer::Unresolved => " (no final answer)",
            },
            if j.beyond.is_some() { " (beyond)" } else { "" }
        ),
        None => "not judged".into(),
    }
}

/// The exit record of a first worker that ended as `ended`.
fn first_exit(ended: &Ended) -> Option<WorkerExit> {
    let exit = |code, signal, at| Some(WorkerExit { code, signal, at });
    match ended {
        Ended::Killed { at } => exit(None, Some(libc::SIGKILL), Some(at.clone())),
        Ended::Finished(_) => exit(Some(0), None, None),
        Ended::Errored(_) => exit(Some(1), None, None),
        Ended::Failed(_) => None,
    }
}

/// Runs trial `index` of the campaign.
fn run_trial(ctx: &NotifyContext<'_>, index: usize, planned: &Planned) -> Result<Cell, CellAbort> {
    let label = format!("{}:{}", planned.nemesis, planned.column);
    let opened = open_case(ctx, index, &label)?;
    let d = &planned.draw;
    let mut cell = Cell {
        planned: planned.clone(),
        case: opened.case.case.clone(),
        refund: opened.case.refund.clone(),
        truth: MailTruth {
            before_outage: Vec::new(),
            delivered: Vec::new(),
            refund_status: String::new(),
            approval_revoked: false,
        },
        ticket: TicketRecord::blank(),
        restart_killed_at: None,
        after_restart_kill: None,
        paused_at: None,
        harness_error: None,
        worker_output: None,
        judgement: None,
    };
    // The change under a paused worker: the mailbox as it stood, then the change.
    let before: RefCell<Vec<Message>> = RefCell::new(Vec::new());
    let change = || -> Result<(), String> {
        before.replace(read_mailbox(ctx, &opened.case.case).map_err(|e| e.to_string())?);
        outage(ctx, &opened, &d.outage).map_err(|e| e.to_string())
    };
    let first = run_watched(
        ctx,
        &Job {
            pause: d.pause_at.as_deref().map(|at| Pause {
                at,
                change: &change,
            }),
            ..job(
                &opened,
                &planned.column,
                NotifyPhase::Send,
                d.kill_at.as_deref(),
            )
        },
    )?;
    cell.paused_at = first.paused_at;
    cell.ticket.first_exit = first_exit(&first.ended);
    let mut restart = true;
    match first.ended {
        Ended::Killed { at } => cell.ticket.killed_at = Some(at),
        // A first worker that ended by itself answered; only an effect the gate left in
        // flight (its send's outcome unknown) is settled by a restart, as recovery would.
        Ended::Finished(report) => {
            restart = report.status == "IN_FLIGHT";
            if !restart {
                record(&mut cell, *report);
            }
        }
        // The column's own failure: a restart finishes its job.
        Ended::Errored(why) => cell.worker_output = Some(why),
        Ended::Failed(why) => return Ok(harness_error(cell, why)),
    }
    if cell.paused_at.is_some() {
        cell.truth.before_outage = before.take();
    } else if let Err(why) = change_while_dead(ctx, &opened, &d.outage, &mut cell) {
        return Ok(harness_error(cell, why.to_string()));
    }
    if restart {
        let mut crash = d.restart_kill_at.as_deref();
        loop {
            match run_watched(
                ctx,
                &job(&opened, &planned.column, NotifyPhase::Restart, crash),
            )?
            .ended
            {
                Ended::Killed { at } if crash.is_some() => {
                    cell.restart_killed_at = Some(at);
                    crash = None;
                    match read_mailbox(ctx, &opened.case.case) {
                        Ok(m) => cell.after_restart_kill = Some(m),
                        Err(why) => return Ok(harness_error(cell, why.to_string())),
                    }
                }
                Ended::Finished(report) => {
                    record(&mut cell, *report);
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
    if let Err(why) = read_truth(ctx, &opened, &mut cell.truth) {
        return Ok(harness_error(cell, why.to_string()));
    }
    match judge(&cell) {
        Ok(j) => cell.judgement = Some(j),
        Err(findings) => {
            let why: Vec<String> = findings.iter().map(ToString::to_string).collect();
            let why = format!(
                "the case does not show the trial as planned: {}",
                why.join("; ")
            );
            return Ok(harness_error(cell, why));
        }
    }
    Ok(cell)
}

/// A worker's job on the opened case, without a pause.
fn job<'a>(
    opened: &'a Opened,
    column: &'a str,
    phase: NotifyPhase,
    crash: Option<&'a str>,
) -> Job<'a> {
    Job {
        dir: &opened.dir,
        api_key: &opened.api_key,
        column,
        phase,
        crash,
        pause: None,
    }
}

/// After a first worker that was not paused: the mailbox as it stood, then the drawn change.
fn change_while_dead(
    ctx: &NotifyContext<'_>,
    opened: &Opened,
    change: &str,
    cell: &mut Cell,
) -> Result<(), Problem> {
    cell.truth.before_outage = read_mailbox(ctx, &opened.case.case)?;
    outage(ctx, opened, change)
}

/// The final report's status, and for `interlock` its record.
fn record(cell: &mut Cell, report: RestartReport) {
    cell.ticket.status = report.status;
    if cell.planned.column == "interlock" {
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
