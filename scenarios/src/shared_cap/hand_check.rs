//! The `hand_check` and `hand_lock` columns: the careful version written by hand.
//!
//! Before every send, first run and restart alike:
//! 1. look this ticket's refund up (the order's refunds tagged with the ticket) →
//!    `FOUND_BY_LOOKUP`;
//! 2. the approval is unrevoked and covers the amount → else `REFUSED:approval`;
//! 3. list the order's refunds: refunded + mine ≤ cap → else `REFUSED:over_cap`;
//! 4. log `send`, POST under `goodwill-refund-<ticket>`, log `sent` → `REFUNDED` or
//!    `REPLAYED_BY_STRIPE`.
//!
//! Every step is appended to `hand_check-<ticket>.log` (JSONL, fsync per line), as
//! billing_credit's hand_check logs. `hand_lock` does the same while holding an exclusive
//! `flock` on `order.lock` in the cell directory, from before the lookup until the `sent` line
//! is durable: two workers on one host then check-and-send one at a time (a SIGKILL releases the
//! lock with the process). Two hosts do not share the lock. `hand_pg_lock` holds a PostgreSQL
//! advisory lock on the order instead ([`super::pg_lock`]), in the database the interlock
//! column's journal is in, over the same span: both hosts reach it, and a SIGKILL ends the
//! holder's session and so releases it.

use super::order::{Decision, OrderFile, Ticket};
use super::refund::{post_refund, refunds};
use super::{AGENT, LOCK_FILE};
use crate::billing_credit::hand_check::PlainLog;
use crate::billing_credit::{fire, Crash, CrashPoint, ScenarioError};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use verify::billing_credit::{FOUND_BY_LOOKUP, REFUSED_APPROVAL, REPLAYED_BY_STRIPE};
use verify::shared_cap::{REFUNDED, REFUSED_OVER_CAP};

pub(crate) use crate::billing_credit::hand_check::Phase;

fn log_path(cell_dir: &Path, ticket: &str) -> PathBuf {
    cell_dir.join(format!("hand_check-{ticket}.log"))
}

/// Which lock, if any, the column holds around check-and-send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// `hand_check`: none.
    None,
    /// `hand_lock`: an `flock` of the cell's lock file (one host).
    File,
    /// `hand_pg_lock`: a PostgreSQL advisory lock on the order, in the journal's database.
    Database,
}

/// A lock the column holds, released after the `sent` line is durable.
enum Held {
    None,
    File(OrderLock),
    Database(Box<super::pg_lock::PgOrderLock>),
}

impl Held {
    fn take(lock: Lock, cell_dir: &Path, order: &OrderFile) -> Result<Held, ScenarioError> {
        Ok(match lock {
            Lock::None => Held::None,
            Lock::File => Held::File(OrderLock::take(cell_dir)?),
            Lock::Database => Held::Database(Box::new(super::pg_lock::PgOrderLock::take(
                cell_dir,
                &order.order_id,
            )?)),
        })
    }

    fn release(self) -> Result<(), ScenarioError> {
        match self {
            Held::None => Ok(()),
            Held::File(lock) => {
                drop(lock);
                Ok(())
            }
            Held::Database(lock) => lock.release(),
        }
    }
}

/// An exclusive `flock` on the cell's lock file, released when dropped (or when the process
/// dies).
struct OrderLock {
    _file: std::fs::File,
}

impl OrderLock {
    fn take(cell_dir: &Path) -> Result<OrderLock, ScenarioError> {
        let path = cell_dir.join(LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(ScenarioError::io("open the lock file", &path))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| ScenarioError::io("lock", &path)(e.into()))?;
        Ok(OrderLock { _file: file })
    }
}

/// One pass of the column for `ticket`; `lock` makes it `hand_lock` or `hand_pg_lock` (the lock
/// is held from before the lookup until the `sent` line is durable, and released once the pass
/// has ended, whatever its answer). Each step's log line is durable before its crash point
/// fires.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send(
    client: &stripe::Client,
    cell_dir: &Path,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    phase: Phase,
    lock: Lock,
    crash: Option<&Crash>,
) -> Result<String, ScenarioError> {
    let held = Held::take(lock, cell_dir, order)?;
    let answer = checked_send(client, cell_dir, order, ticket, decision, phase, crash);
    let released = held.release();
    let answer = answer?;
    released?;
    Ok(answer)
}

/// The checks and the send, in order, under whatever lock [`send`] holds.
fn checked_send(
    client: &stripe::Client,
    cell_dir: &Path,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    phase: Phase,
    crash: Option<&Crash>,
) -> Result<String, ScenarioError> {
    let log = PlainLog {
        path: log_path(cell_dir, &ticket.name),
        agent: AGENT,
        subject: ("ticket", &ticket.id),
        phase,
    };
    if let ControlFlow::Break(found) = lookup(client, order, ticket, &log)? {
        return Ok(found.into());
    }
    fire(crash, CrashPoint::Lookup);
    if let ControlFlow::Break(refused) = check_approval(ticket, decision, &log)? {
        return Ok(refused.into());
    }
    fire(crash, CrashPoint::Approval);
    if let ControlFlow::Break(refused) = check_cap(client, order, decision, &log)? {
        return Ok(refused.into());
    }
    fire(crash, CrashPoint::Premises);
    send_logged(client, order, ticket, decision, &log, crash)
}

/// 1. Lookup: has this ticket's refund already landed? Stops with `FOUND_BY_LOOKUP` if so.
fn lookup(
    client: &stripe::Client,
    order: &OrderFile,
    ticket: &Ticket,
    log: &PlainLog<'_>,
) -> Result<ControlFlow<&'static str>, ScenarioError> {
    let before = refunds(client, order)?;
    if let Some(found) = before
        .iter()
        .find(|r| r.counts() && r.ticket.as_deref() == Some(ticket.id.as_str()))
    {
        log.step("lookup", json!({ "found": found.id }))?;
        return Ok(ControlFlow::Break(FOUND_BY_LOOKUP));
    }
    log.step("lookup", json!({ "found": null }))?;
    Ok(ControlFlow::Continue(()))
}

/// 2. Approval: stops with `REFUSED:approval` unless it is unrevoked and covers the amount.
fn check_approval(
    ticket: &Ticket,
    decision: &Decision,
    log: &PlainLog<'_>,
) -> Result<ControlFlow<&'static str>, ScenarioError> {
    let approval = &ticket.approval;
    if approval.revoked.is_some() || decision.amount <= 0 || decision.amount > approval.max_cents {
        log.step("approval", json!({ "refused": approval }))?;
        return Ok(ControlFlow::Break(REFUSED_APPROVAL));
    }
    log.step("approval", json!({ "approval": approval }))?;
    Ok(ControlFlow::Continue(()))
}

/// 3. The cap, from the order's refunds read afresh at this step: stops with
///    `REFUSED:over_cap` when refunded + mine would pass it.
fn check_cap(
    client: &stripe::Client,
    order: &OrderFile,
    decision: &Decision,
    log: &PlainLog<'_>,
) -> Result<ControlFlow<&'static str>, ScenarioError> {
    let now = refunds(client, order)?;
    let refunded: i64 = now
        .iter()
        .filter(|r| r.counts())
        .fold(0i64, |sum, r| sum.saturating_add(r.amount));
    if refunded.saturating_add(decision.amount) > order.cap_cents {
        log.step(
            "cap",
            json!({ "refused": { "refunded": refunded, "mine": decision.amount, "cap": order.cap_cents } }),
        )?;
        return Ok(ControlFlow::Break(REFUSED_OVER_CAP));
    }
    log.step(
        "cap",
        json!({ "refunded": refunded, "mine": decision.amount, "cap": order.cap_cents }),
    )?;
    Ok(ControlFlow::Continue(()))
}

/// 4. Send, logged before and after: `REFUNDED` or `REPLAYED_BY_STRIPE`.
fn send_logged(
    client: &stripe::Client,
    order: &OrderFile,
    ticket: &Ticket,
    decision: &Decision,
    log: &PlainLog<'_>,
    crash: Option<&Crash>,
) -> Result<String, ScenarioError> {
    let key = super::no_check::key(ticket);
    log.step("send", json!({ "key": key, "amount": decision.amount }))?;
    fire(crash, CrashPoint::SendLogged);
    let posted = post_refund(
        client,
        order,
        &ticket.id,
        decision.amount,
        &key,
        None,
        crash,
    )?;
    log.step(
        "sent",
        json!({ "refund": posted.id, "amount": posted.amount, "replayed": posted.replayed }),
    )?;
    fire(crash, CrashPoint::SentLogged);
    Ok(if posted.replayed {
        REPLAYED_BY_STRIPE
    } else {
        REFUNDED
    }
    .into())
}

/// The log of ticket `ticket` (`a` or `b`); a torn last line is left out.
pub fn read_log(cell_dir: &Path, ticket: &str) -> Result<Vec<Value>, ScenarioError> {
    crate::billing_credit::hand_check::read_jsonl(&log_path(cell_dir, ticket))
}
