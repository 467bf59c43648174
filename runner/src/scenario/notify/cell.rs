//! One notify cell: open the case (a $20 payment and its refund in the case's own emulator
//! account, the approval), run the worker until it is SIGKILLed at the row's crash point, read
//! the mailbox once the queue is empty, make the outage while the worker is dead, restart it,
//! read the mailbox, the refund and the approval back, and judge with
//! `verify::scenarios::notify`.

use super::process::{run_worker, Ended, Job};
use super::worker::NotifyPhase;
use crate::cell::CellAbort;
use scenarios::billing_credit::ScenarioSettings;
use scenarios::notify::{Approval, CaseFile, APPROVER};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use stripe::{Client, ClientConfig, Params};
use verify::scenarios::notify::{judge, Cell, MailTruth, Message, Planned, MAIL_DOMAIN};
use verify::scenarios::pr_merge::{TicketRecord, WorkerExit, RESTART_FAILED};

/// How long an approval holds after the runner opens its case: far longer than any cell runs.
const APPROVAL_HOLDS_MS: u64 = 3_600_000;
/// The refund the email announces, cents ($20), of a payment of the same amount.
pub const REFUND_CENTS: i64 = 2_000;
/// The test card the payment is made with: Stripe's refund-failure card, whose refunds read
/// `succeeded` until they fail (the `refund_failed` outage makes this one fail).
pub const CARD: &str = "pm_card_refundFail";
/// Longest wait for the mail server's queue to empty before the mailbox is read.
const QUEUE_LIMIT: Duration = Duration::from_secs(20);

/// Why a cell did not run to its end: its harness error, in words.
#[derive(Debug, thiserror::Error)]
pub(super) enum Problem {
    #[error("the worker finished ({status}) before its crash point {point}")]
    FinishedEarly { status: String, point: String },
    #[error("{0}")]
    Worker(String),
    #[error("the restart announced a crash point ({0}) it was not given")]
    RestartAnnounced(String),
    #[error("the mail queue did not empty: {0}")]
    Queue(#[source] mailhost::MailError),
    #[error("cannot read the mailbox: {0}")]
    Mailbox(#[source] mailhost::MailError),
    #[error("the refund could not be made to fail: {0}")]
    FailRefund(#[source] stripe::emulator::RefundCannotFail),
    #[error("the approval could not be revoked: {0}")]
    Revoke(#[source] scenarios::billing_credit::ScenarioError),
    #[error("cannot read the refund back: {0}")]
    Refund(#[source] scenarios::notify::NotifyError),
    #[error("cannot read the approval back: {0}")]
    Approval(#[source] scenarios::billing_credit::ScenarioError),
    #[error("the case does not show the cell as planned: {0}")]
    NotAsPlanned(String),
}

/// What every cell of a run shares.
pub(crate) struct NotifyContext<'a> {
    pub(crate) services: &'a super::services::Services,
    pub(crate) exe: &'a Path,
    pub(crate) run_dir: &'a Path,
    pub(crate) key_file: &'a Path,
    pub(crate) cancel: &'a AtomicBool,
    pub(crate) stripe_url: String,
    pub(crate) smtp_port: u16,
    pub(crate) settings: ScenarioSettings,
    pub(crate) request_timeout: Duration,
    pub(crate) worker_timeout: Duration,
}

/// A case as the runner opened it.
pub(super) struct Opened {
    pub(super) case: CaseFile,
    pub(super) dir: PathBuf,
    pub(super) api_key: String,
    stripe: Client,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, crate::cell::ms)
}

/// Opens case `index`: its own emulator account, a $20 payment with [`CARD`] refunded in full
/// (the refund the agent made), its directory and `case.json` with the approval.
pub(super) fn open_case(
    ctx: &NotifyContext<'_>,
    index: usize,
    label: &str,
) -> Result<Opened, CellAbort> {
    let name = format!("notify-{index:04}");
    let api_key = format!("sk_test_{}", name.replace('-', "_"));
    let setup = |what: &str, e: String| CellAbort::Setup(format!("cell {label} ({what}): {e}"));
    let stripe = Client::new(
        ClientConfig::new(ctx.stripe_url.clone(), api_key.clone())
            .with_timeout(ctx.request_timeout),
    )
    .map_err(|e| setup("make its Stripe client", e.to_string()))?;
    let intent = stripe
        .post(
            "/v1/payment_intents",
            &Params::new()
                .set("amount", REFUND_CENTS)
                .set("currency", "usd")
                .set("payment_method", CARD)
                .set("confirm", "true")
                .set("automatic_payment_methods[enabled]", "true")
                .set("automatic_payment_methods[allow_redirects]", "never")
                .set("metadata[case]", name.as_str()),
            None,
        )
        .map_err(|e| setup("pay", e.to_string()))?;
    let intent_id = intent.body["id"].as_str().unwrap_or_default().to_owned();
    let refund = stripe
        .post(
            "/v1/refunds",
            &Params::new()
                .set("payment_intent", intent_id.as_str())
                .set("amount", REFUND_CENTS)
                .set("reason", "requested_by_customer")
                .set("metadata[case]", name.as_str()),
            None,
        )
        .map_err(|e| setup("refund", e.to_string()))?;
    let Some(refund) = refund.body["id"].as_str().map(str::to_owned) else {
        return Err(setup("refund", "the answer names no refund".into()));
    };
    let dir = ctx.run_dir.join(&name);
    std::fs::create_dir_all(&dir).map_err(|e| setup("make its directory", e.to_string()))?;
    let case = CaseFile {
        case: name.clone(),
        refund,
        amount_cents: REFUND_CENTS,
        customer: format!("customer-{index:04}@{MAIL_DOMAIN}"),
        approval: Approval {
            id: format!("ap_{name}"),
            approver: APPROVER.to_owned(),
            case: name,
            expires_at_ms: now_ms() + APPROVAL_HOLDS_MS,
            revoked: None,
        },
    };
    case.save(&dir)
        .map_err(|e| setup("write case.json", e.to_string()))?;
    Ok(Opened {
        case,
        dir,
        api_key,
        stripe,
    })
}

/// Runs cell `index` of the plan.
pub(crate) fn run_cell(
    ctx: &NotifyContext<'_>,
    index: usize,
    planned: &Planned,
) -> Result<Cell, CellAbort> {
    let label = format!(
        "{}:{}:{}",
        planned.crash_point, planned.outage, planned.column
    );
    let opened = open_case(ctx, index, &label)?;
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
        harness_error: None,
        worker_output: None,
        judgement: None,
    };
    let job = |phase, crash| Job {
        dir: &opened.dir,
        api_key: &opened.api_key,
        column: &planned.column,
        phase,
        crash,
        pause: None,
    };
    let first = run_worker(ctx, &job(NotifyPhase::Send, Some(&planned.crash_point)))?;
    if let Err(why) = record_kill(&mut cell, first) {
        return Ok(harness_error(cell, why));
    }
    match read_mailbox(ctx, &opened.case.case) {
        Ok(m) => cell.truth.before_outage = m,
        Err(why) => return Ok(harness_error(cell, why)),
    }
    if let Err(why) = outage(ctx, &opened, &planned.outage) {
        return Ok(harness_error(cell, why));
    }
    let restart = run_worker(ctx, &job(NotifyPhase::Restart, None))?;
    if let Err(why) = record_restart(&mut cell, restart) {
        return Ok(harness_error(cell, why));
    }
    if let Err(why) = read_truth(ctx, &opened, &mut cell.truth) {
        return Ok(harness_error(cell, why));
    }
    match judge(&cell) {
        Ok(j) => cell.judgement = Some(j),
        Err(findings) => {
            let why: Vec<String> = findings.iter().map(ToString::to_string).collect();
            return Ok(harness_error(cell, Problem::NotAsPlanned(why.join("; "))));
        }
    }
    Ok(cell)
}

/// The first worker's end: it must be the kill at the planned crash point.
fn record_kill(cell: &mut Cell, first: Ended) -> Result<(), Problem> {
    let at = match first {
        Ended::Killed { at } => at,
        Ended::Finished(r) => {
            return Err(Problem::FinishedEarly {
                status: r.status,
                point: cell.planned.crash_point.clone(),
            })
        }
        Ended::Errored(why) | Ended::Failed(why) => return Err(Problem::Worker(why)),
    };
    cell.ticket.killed_at = Some(at.clone());
    cell.ticket.first_exit = Some(WorkerExit {
        code: None,
        signal: Some(libc::SIGKILL),
        at: Some(at),
    });
    Ok(())
}

/// The restarted worker's end: its report, or an unresolved case when the column failed.
fn record_restart(cell: &mut Cell, restart: Ended) -> Result<(), Problem> {
    match restart {
        Ended::Finished(report) => {
            cell.ticket.status = report.status;
            if cell.planned.column == "interlock" {
                cell.ticket.effect_id = report.effect_id;
                cell.ticket.journal_kinds = Some(report.journal_kinds);
                cell.ticket.receipt = report.receipt;
            }
            Ok(())
        }
        // The column's own failure after the crash: its case is unresolved.
        Ended::Errored(why) => {
            cell.ticket.status = RESTART_FAILED.into();
            cell.worker_output = Some(why);
            Ok(())
        }
        Ended::Killed { at } => Err(Problem::RestartAnnounced(at)),
        Ended::Failed(why) => Err(Problem::Worker(why)),
    }
}

/// The case's messages in the Maildir, read once the queue is empty.
pub(super) fn read_mailbox(ctx: &NotifyContext<'_>, case: &str) -> Result<Vec<Message>, Problem> {
    let mail = &ctx.services.mail;
    mail.wait_queue_empty(QUEUE_LIMIT).map_err(Problem::Queue)?;
    let messages = mail.messages(case).map_err(Problem::Mailbox)?;
    Ok(messages
        .into_iter()
        .map(|m| Message {
            file: m.file,
            message_id: m.message_id,
        })
        .collect())
}

/// Makes the row's outage while the worker is dead.
pub(super) fn outage(
    ctx: &NotifyContext<'_>,
    opened: &Opened,
    outage: &str,
) -> Result<(), Problem> {
    match outage {
        "refund_failed" => ctx
            .services
            .emulator
            .fail_refund(&opened.api_key, &opened.case.refund)
            .map_err(Problem::FailRefund),
        "approval_revoked" => {
            CaseFile::revoke(&opened.dir, "revoked by support-lead").map_err(Problem::Revoke)
        }
        _ => Ok(()),
    }
}

/// After the restart: the mailbox, the refund's status and the approval, read back.
pub(super) fn read_truth(
    ctx: &NotifyContext<'_>,
    opened: &Opened,
    truth: &mut MailTruth,
) -> Result<(), Problem> {
    truth.delivered = read_mailbox(ctx, &opened.case.case)?;
    truth.refund_status = scenarios::notify::refund_status(&opened.stripe, &opened.case.refund)
        .map_err(Problem::Refund)?;
    truth.approval_revoked = CaseFile::load(&opened.dir)
        .map_err(Problem::Approval)?
        .approval
        .revoked
        .is_some();
    Ok(())
}

/// Marks `cell` a harness error with `why` and the worker output that shows it (verify refuses
/// a harness error without both).
fn harness_error(mut cell: Cell, why: Problem) -> Cell {
    cell.harness_error = Some(why.to_string());
    cell.worker_output = cell
        .worker_output
        .filter(|o| !o.trim().is_empty())
        .or_else(|| Some("(no worker output: the harness failed outside a worker)".into()));
    cell.judgement = None;
    cell
}
