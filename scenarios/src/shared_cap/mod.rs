//! The shared_cap scenario (DESIGN §4.7): two support bots each decide a $20 goodwill refund on
//! the same $100 payment, under one policy cap of $30 of refunds per order. Stripe enforces only
//! "refunds ≤ the charge": nothing at Stripe stops $40 going out.
//!
//! What lives here:
//! * opening an order: a $100 PaymentIntent confirmed with the test card, and two tickets, each
//!   approved for one $20 refund ([`open_order`], [`OrderFile`]);
//! * the five columns behind [`send`] and [`restart`], one ticket per worker: `no_check` (each
//!   ticket's own idempotency key), `hand_check` (lists the order's refunds, sends only if
//!   refunded + mine ≤ cap), `hand_lock` (the same under an `flock` around check-and-send:
//!   correct on one host only), `hand_pg_lock` (the same under a PostgreSQL advisory lock in the
//!   journal's database: both hosts share it) and `interlock` (the gate with one budget for the
//!   order);
//! * the ground truth: every refund of the payment ([`ground_truth`]).
//!
//! What does not: worker processes, SIGKILL, timing and the results file belong to the runner;
//! the invariant and the judgement belong to `verify::shared_cap`.

mod hand_check;
mod interlock;
mod no_check;
mod order;
mod pg_lock;
mod refund;

pub use hand_check::read_log;
pub use order::{open_order, Decision, OrderFile, Ticket};
pub use refund::{ground_truth, post_refund, RefundPosted, RefundTarget};

use crate::billing_credit::Crash;
use crate::billing_credit::{CrashPoint, RestartReport, ScenarioError, ScenarioSettings};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The agent name written into proposals and log lines.
pub const AGENT: &str = "shared-cap-refund-agent";
/// Who approves the goodwill refunds.
pub const APPROVER: &str = "support-lead";
/// File name of the order in a cell directory (shared by both workers).
pub const ORDER_FILE: &str = "order.json";
/// The lock file `hand_lock` takes around check-and-send, in the cell directory.
pub const LOCK_FILE: &str = "order.lock";
/// File name of the gate's journal in a cell directory (shared by both workers).
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// Optional file naming the journal store instead of [`JOURNAL_FILE`] (a `postgres://` URL).
pub const JOURNAL_LOCATION_FILE: &str = "journal.location";

/// The five ways of sending a ticket's refund that the experiment compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    /// Save the decision, POST under the ticket's own idempotency key; the restart re-sends it.
    NoCheck,
    /// Look the ticket's refund up, check the approval, list the order's refunds and send only
    /// if refunded + mine ≤ cap; a plain JSONL log before and after the POST.
    HandCheck,
    /// `hand_check` under an exclusive `flock` of one file, held from the lookup to the logged
    /// answer: what a careful engineer on one host writes.
    HandLock,
    /// `hand_check` under a session-level PostgreSQL advisory lock on the order, in the database
    /// the interlock column's journal is in, held from before the lookup to the logged answer:
    /// what a careful engineer on two hosts writes. Needs the run's PostgreSQL (`--journal`).
    HandPgLock,
    /// The Interlock gate, with one budget (the cap) for the order.
    Interlock,
}

impl Column {
    /// Every column, in display order.
    pub const ALL: [Column; 5] = [
        Column::NoCheck,
        Column::HandCheck,
        Column::HandLock,
        Column::HandPgLock,
        Column::Interlock,
    ];

    /// `no_check`, `hand_check`, `hand_lock`, `hand_pg_lock` or `interlock`: verify's names
    /// ([`verify::shared_cap::plan::COLUMNS`], in the same order).
    pub fn as_str(self) -> &'static str {
        let [no_check, hand_check, hand_lock, hand_pg_lock, interlock] =
            verify::shared_cap::plan::COLUMNS;
        match self {
            Column::NoCheck => no_check,
            Column::HandCheck => hand_check,
            Column::HandLock => hand_lock,
            Column::HandPgLock => hand_pg_lock,
            Column::Interlock => interlock,
        }
    }

    /// The lock a hand-written column holds around check-and-send.
    fn lock(self) -> hand_check::Lock {
        match self {
            Column::HandLock => hand_check::Lock::File,
            Column::HandPgLock => hand_check::Lock::Database,
            _ => hand_check::Lock::None,
        }
    }
}

/// How the two workers' lives overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Overlap {
    /// The first worker runs to its crash point and is killed; then the second runs to the end;
    /// then the first is restarted.
    Sequential,
    /// Both workers are started at the same instant; the first is killed at its crash point;
    /// when the second has finished, the first is restarted.
    Concurrent,
}

impl Overlap {
    /// Both overlaps, in display order.
    pub const ALL: [Overlap; 2] = [Overlap::Sequential, Overlap::Concurrent];

    /// `sequential` or `concurrent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Sequential => "sequential",
            Overlap::Concurrent => "concurrent",
        }
    }
}

fn parse_name<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    what: &'static str,
    s: &str,
) -> Result<T, ScenarioError> {
    all.iter()
        .copied()
        .find(|v| name(*v) == s)
        .ok_or_else(|| ScenarioError::UnknownName {
            what,
            got: s.to_owned(),
            expected: all.iter().map(|v| name(*v)).collect::<Vec<_>>().join(", "),
        })
}

impl FromStr for Column {
    type Err = ScenarioError;
    fn from_str(s: &str) -> Result<Column, ScenarioError> {
        parse_name(&Column::ALL, Column::as_str, "shared_cap column", s)
    }
}

impl FromStr for Overlap {
    type Err = ScenarioError;
    fn from_str(s: &str) -> Result<Overlap, ScenarioError> {
        parse_name(&Overlap::ALL, Overlap::as_str, "overlap", s)
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The crash points of the matrix: the first worker is killed right before or right after its
/// refund POST.
pub const CRASH_POINTS: [CrashPoint; 2] = [CrashPoint::BeforeSend, CrashPoint::AfterSend];

/// First phase of one ticket's worker: decide (the policy: the ticket's approved amount), save
/// the decision durably, and send through `column`. Returns the final status string.
pub fn send(
    column: Column,
    client: &stripe::Client,
    cell_dir: &Path,
    ticket: &str,
    crash: Option<Crash>,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<String, ScenarioError> {
    let order = OrderFile::load(cell_dir)?;
    let t = order.ticket(ticket)?;
    let decision = Decision::policy(t);
    decision.save(cell_dir, ticket)?;
    crate::billing_credit::fire(crash.as_ref(), CrashPoint::DecisionSaved);
    match column {
        Column::NoCheck => no_check::send(client, &order, t, &decision, crash.as_ref()),
        Column::HandCheck | Column::HandLock | Column::HandPgLock => hand_check::send(
            client,
            cell_dir,
            &order,
            t,
            &decision,
            hand_check::Phase::Decide,
            column.lock(),
            crash.as_ref(),
        ),
        Column::Interlock => interlock::submit(
            client, cell_dir, &order, t, &decision, crash, gate_key, settings,
        ),
    }
}

/// Second phase of a killed worker: finish the ticket's refund as the column does after a
/// crash. `crash` lets the nemesis kill the restart too.
pub fn restart(
    column: Column,
    client: &stripe::Client,
    cell_dir: &Path,
    ticket: &str,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
    crash: Option<Crash>,
) -> Result<RestartReport, ScenarioError> {
    let order = OrderFile::load(cell_dir)?;
    let t = order.ticket(ticket)?;
    let decision = Decision::load(cell_dir, ticket)?;
    match column {
        Column::NoCheck => {
            let status = no_check::send(client, &order, t, &decision, crash.as_ref())?;
            finished(column, client, cell_dir, ticket, status, gate_key, settings)
        }
        Column::HandCheck | Column::HandLock | Column::HandPgLock => {
            let status = hand_check::send(
                client,
                cell_dir,
                &order,
                t,
                &decision,
                hand_check::Phase::Restart,
                column.lock(),
                crash.as_ref(),
            )?;
            finished(column, client, cell_dir, ticket, status, gate_key, settings)
        }
        Column::Interlock => interlock::restart(
            client, cell_dir, &order, t, &decision, gate_key, settings, crash,
        ),
    }
}

/// The report of a worker whose first phase ended by itself with `status` (not killed): for
/// `interlock` the effect's journal kinds and receipt (also written as `receipt-<ticket>.json`),
/// for the hand-written columns the ticket's log.
pub fn finished(
    column: Column,
    client: &stripe::Client,
    cell_dir: &Path,
    ticket: &str,
    status: String,
    gate_key: &ed25519_dalek::SigningKey,
    settings: &ScenarioSettings,
) -> Result<RestartReport, ScenarioError> {
    let order = OrderFile::load(cell_dir)?;
    let t = order.ticket(ticket)?;
    match column {
        Column::Interlock => {
            let decision = Decision::load(cell_dir, ticket)?;
            interlock::finished(
                client, cell_dir, &order, t, &decision, status, gate_key, settings,
            )
        }
        _ => Ok(RestartReport::without_gate(
            status,
            match column {
                Column::NoCheck => None,
                _ => read_log(cell_dir, ticket).ok(),
            },
            serde_json::Value::Null,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_choices() {
        for c in Column::ALL {
            assert_eq!(c.as_str().parse::<Column>().unwrap(), c);
        }
        for o in Overlap::ALL {
            assert_eq!(o.as_str().parse::<Overlap>().unwrap(), o);
        }
        let e = "hand".parse::<Column>().unwrap_err().to_string();
        assert!(
            e.contains("no_check, hand_check, hand_lock, hand_pg_lock, interlock"),
            "{e}"
        );
    }
}
