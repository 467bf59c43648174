//! The proof rule of each column (DESIGN §4.6): whether the column's own record proves what
//! Stripe holds. interlock: its receipt verifies, its `happened` agrees with Stripe, and when it
//! proves a credit, Stripe holds exactly that one. hand_check: the last restart-phase step of its
//! plain log says sent (naming a credit Stripe holds) or refused, and Stripe agrees. no_check:
//! never (it keeps no record).
//!
//! Also what each column's record allows its final status to be.

use super::answer::{CREDITED, FOUND_BY_LOOKUP, REFUSED_APPROVAL, REPLAYED_BY_STRIPE};
use crate::protocol::{RefusalCode, Status};
use crate::receipt::ReceiptReport;
use crate::results::{Cell, FreeForm, GroundTruth};
use serde_json::Value;

pub use crate::scenarios::receipt_proof::{Proof, Unproven};

/// The proof rule for one cell, by its column. `receipt` is the report of the cell's receipt
/// (interlock cells), checked against the key the run is judged by.
pub fn proof(cell: &Cell, receipt: Option<&ReceiptReport>) -> Proof {
    proof_carrying(cell, cell.receipt.is_some(), receipt)
}

/// [`proof`] of a cell whose receipt was read apart from it: `carries_receipt` says whether the
/// cell has one (`cell.receipt` is not looked at).
pub fn proof_carrying(
    cell: &Cell,
    carries_receipt: bool,
    receipt: Option<&ReceiptReport>,
) -> Proof {
    match cell.column.as_str() {
        "interlock" => match (carries_receipt, receipt) {
            (true, Some(report)) => interlock_proof(&cell.ground_truth, report),
            _ => Err(Unproven::NoReceipt),
        },
        "hand_check" => {
            let log = read_hand_check_log(cell.hand_check_log.as_deref(), &cell.ground_truth);
            hand_check_proof(&cell.ground_truth, &log)
        }
        _ => Err(Unproven::NoRecord),
    }
}

/// The interlock proof rule: the receipt verifies, says what Stripe holds, and names Stripe's
/// credit.
pub fn interlock_proof(gt: &GroundTruth, report: &ReceiptReport) -> Proof {
    crate::scenarios::receipt_proof::receipt_proof(
        report,
        gt.case_credit_count as usize,
        |id| credit_held(gt, id),
        "credit",
        "credit",
    )
}

/// Whether the ground truth holds case credit `id`.
pub fn credit_held(gt: &GroundTruth, id: &str) -> bool {
    gt.case_credits.iter().any(|c| c.id == id)
}

/// What the last restart-phase step of a hand_check log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSays {
    /// It sent, or its lookup found, a credit the ground truth holds.
    Sent,
    /// It refused (approval or premises).
    NotSent,
    /// Neither, and why.
    Unclear(String),
}

/// What a hand_check log's restart phase says, as the rules read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandCheckLog {
    /// What its last restart step says.
    pub says: LogSays,
    /// That step's name (`sent`, `lookup`, `approval`, `premises`, ...), if there is one.
    pub step: Option<String>,
    /// That step's `replayed` flag, if it has one.
    pub replayed: Option<bool>,
}

/// The parts of a hand_check log line the rules read (other members are skipped unread).
#[derive(serde::Deserialize)]
struct LogLine {
    #[serde(default)]
    phase: Value,
    #[serde(default)]
    step: Value,
    #[serde(default)]
    credit: Value,
    #[serde(default)]
    found: Value,
    #[serde(default)]
    replayed: Value,
}

/// Reads the last line of a hand_check log's restart phase (a line that is not an object is no
/// step) against the case's ground truth.
pub fn read_hand_check_log(log: Option<&[FreeForm]>, gt: &GroundTruth) -> HandCheckLog {
    let unclear = |why: &str| HandCheckLog {
        says: LogSays::Unclear(why.into()),
        step: None,
        replayed: None,
    };
    let Some(log) = log else {
        return unclear("the cell has no hand_check log");
    };
    let last = log.iter().rev().find_map(|l| {
        l.read::<LogLine>()
            .filter(|line| line.phase.as_str() == Some("restart"))
    });
    let Some(last) = last else {
        return unclear("the log has no restart step");
    };
    let step = last.step.as_str().map(str::to_owned);
    let says = match step.as_deref() {
        Some("sent") => match last.credit.as_str() {
            Some(c) if credit_held(gt, c) => LogSays::Sent,
            other => LogSays::Unclear(format!(
                "the log's last step says it sent credit {:?}, which the ground truth does not hold",
                other.unwrap_or("(none)")
            )),
        },
        Some("lookup") => match last.found.as_str() {
            Some(c) if credit_held(gt, c) => LogSays::Sent,
            other => LogSays::Unclear(format!(
                "the log's last step is a lookup that found {:?}, which the ground truth does not hold",
                other.unwrap_or("(nothing)")
            )),
        },
        Some("approval") | Some("premises") => LogSays::NotSent,
        other => LogSays::Unclear(format!(
            "the log's last restart step is {:?}, which says neither sent nor refused",
            other.unwrap_or("(none)")
        )),
    };
    HandCheckLog {
        says,
        step,
        replayed: last.replayed.as_bool(),
    }
}

/// The hand_check proof rule: its log's last restart step agrees with Stripe.
pub fn hand_check_proof(gt: &GroundTruth, log: &HandCheckLog) -> Proof {
    let exists = gt.case_credit_count > 0;
    match &log.says {
        LogSays::Sent if exists => Ok(()),
        LogSays::NotSent if !exists => Ok(()),
        LogSays::Sent => Err(Unproven::LogSaysSent),
        LogSays::NotSent => Err(Unproven::LogSaysNotSent),
        LogSays::Unclear(why) => Err(Unproven::LogUnclear(why.clone())),
    }
}

/// The final statuses a hand_check log's last restart step allows (none for an unknown step).
pub fn hand_check_outcomes(log: &HandCheckLog) -> Vec<&'static str> {
    match log.step.as_deref() {
        Some("sent") => match log.replayed {
            Some(true) => vec![REPLAYED_BY_STRIPE],
            Some(false) => vec![CREDITED],
            None => vec![CREDITED, REPLAYED_BY_STRIPE],
        },
        Some("lookup") => vec![FOUND_BY_LOOKUP],
        Some("approval") => vec![REFUSED_APPROVAL],
        Some("premises") => vec![Status::Refused(RefusalCode::StalePremise).as_str()],
        _ => vec![],
    }
}

/// The final statuses a no_check worker can end in: it only ever sends.
pub const NO_CHECK_OUTCOMES: [&str; 2] = [CREDITED, REPLAYED_BY_STRIPE];

/// The record each column keeps: `signed_chain` (interlock), `plain_log` (hand_check), `none`.
pub fn record_kind(column: &str) -> &'static str {
    match column {
        "interlock" => "signed_chain",
        "hand_check" => "plain_log",
        _ => "none",
    }
}
