//! The want rule, the answer rule and the judgement of a notify cell, from what the mailbox
//! and the emulator hold.

use super::record::{Cell, MailTruth};
use crate::finding::Finding;
use crate::scenarios::pr_merge::TicketRecord;
use serde::{Deserialize, Serialize};

/// The hand-written columns' status for an email the server accepted.
pub const SENT: &str = "SENT";
/// `hand_check`'s status when its log shows a send begun and never ended: it cannot know
/// whether the email went out, and hands the case to a person instead of guessing.
pub const ESCALATED: &str = "ESCALATED";
/// A hand-written column's status when the refund no longer reads `succeeded`.
pub const REFUSED_REFUND: &str = "REFUSED:refund_not_succeeded";
/// A hand-written column's status when the approval no longer covers the email.
pub const REFUSED_APPROVAL: &str = "REFUSED:approval";
/// The statuses that say "this may have happened and nothing here can tell": the gate's
/// `AMBIGUOUS` and `hand_check`'s [`ESCALATED`]. Such an answer is never a wrong answer; it
/// hands the case to a person.
pub const HANDOFF_STATUSES: [&str; 2] = ["AMBIGUOUS", ESCALATED];

/// How a ticket's final answer stands against the mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// It says sent, and the case has an email; or it says not sent, and the case has none.
    Matches,
    /// It states an outcome the mailbox contradicts.
    Wrong,
    /// It says it cannot know ([`HANDOFF_STATUSES`]): handed to a person, never wrong.
    HandedOff,
    /// It gave no final answer ([`UNRESOLVED_STATUSES`]: the restart failed, or the gate left
    /// the effect in flight for a recovery that did not run): neither right nor wrong, counted
    /// unresolved, against the column.
    Unresolved,
}

/// The statuses that give no final answer: a restart that ended in an error, and the gate's
/// `IN_FLIGHT` ("run recovery"), which says nothing of whether the email went out.
pub const UNRESOLVED_STATUSES: [&str; 2] =
    [crate::scenarios::pr_merge::RESTART_FAILED, "IN_FLIGHT"];

/// What the rules derive for a judged cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgement {
    /// Emails this case may deliver: 1, or 0 when the refund failed or the approval was
    /// revoked before the case's first email was delivered.
    pub want: u32,
    /// Emails of the case in the Maildir.
    pub delivered: u32,
    /// `delivered == want`.
    pub invariant_held: bool,
    /// The final answer against the mailbox.
    pub answer: Answer,
}

/// Whether a status says the email went out: the hand-written columns' [`SENT`], and every
/// status of the gate that records a commit.
pub fn status_says_sent(status: &str) -> bool {
    status == SENT
        || crate::protocol::Status::parse(status).is_some_and(crate::protocol::Status::is_committed)
}

/// Whether a status hands the case to a person ([`HANDOFF_STATUSES`]).
pub fn status_hands_off(status: &str) -> bool {
    HANDOFF_STATUSES.contains(&status)
}

/// The `Message-ID` the gate's mail target gives an email: the hash of the DISPATCHED entry it
/// was sent under (the anchor, DESIGN §3.4) and the case, so a message in the mailbox names the
/// receipt entry it belongs to.
pub fn gate_message_id(dispatch: &str, case: &str) -> String {
    format!("<{dispatch}.{case}@{}>", MAIL_DOMAIN)
}

/// The domain every address and message id of the scenario is in.
pub const MAIL_DOMAIN: &str = "interlock.test";

/// The want rule: the case may deliver one email, unless the refund failed or the approval
/// was revoked before its first email was delivered (every change happens while the worker is
/// dead, so "before" means: the first worker had delivered nothing).
pub fn want(truth: &MailTruth) -> u32 {
    let blocked = truth.refund_status != "succeeded" || truth.approval_revoked;
    u32::from(!(blocked && truth.before_outage.is_empty()))
}

/// The answer rule, one for every column: no final answer is unresolved, a handoff is never
/// wrong; any other answer must agree with the mailbox (says sent ⇔ the case has an email).
pub fn answer(status: &str, delivered: u32) -> Answer {
    if UNRESOLVED_STATUSES.contains(&status) {
        Answer::Unresolved
    } else if status_hands_off(status) {
        Answer::HandedOff
    } else if status_says_sent(status) == (delivered > 0) {
        Answer::Matches
    } else {
        Answer::Wrong
    }
}

/// The judgement of a case from its ground truth and its ticket's final status, once the
/// truth is known to be consistent with the case's plan.
pub fn judgement(truth: &MailTruth, ticket: &TicketRecord) -> Judgement {
    let want = want(truth);
    let delivered = u32::try_from(truth.delivered.len()).unwrap_or(u32::MAX);
    Judgement {
        want,
        delivered,
        invariant_held: delivered == want,
        answer: answer(&ticket.status, delivered),
    }
}

fn inconsistent(path: &str, why: impl Into<String>) -> Finding {
    Finding::new(
        path,
        crate::finding::code::GROUND_TRUTH_INCONSISTENT,
        why.into(),
    )
}

/// The cell is what its plan says and its ground truth is read as recorded: the worker was
/// killed at the planned crash point; the refund reads `failed` exactly when the outage is
/// `refund_failed` and the approval is revoked exactly when it is `approval_revoked`; what the
/// mailbox held before the outage is still there at the end (a delivered message is never
/// taken back).
fn consistent(cell: &Cell) -> Vec<Finding> {
    let truth = &cell.truth;
    let mut out = Vec::new();
    if cell.ticket.killed_at.as_deref() != Some(cell.planned.crash_point.as_str()) {
        out.push(Finding::new(
            "ticket.killed_at",
            crate::finding::code::CRASH_NOT_PROVEN,
            "the worker was not killed at the cell's planned crash point",
        ));
    }
    if !["succeeded", "failed"].contains(&truth.refund_status.as_str()) {
        out.push(inconsistent(
            "truth.refund_status",
            "the refund's status is neither succeeded nor failed",
        ));
    }
    let planned = cell.planned.outage.as_str();
    let shows = [
        (truth.refund_status == "failed", "refund_failed"),
        (truth.approval_revoked, "approval_revoked"),
    ];
    for (shown, outage) in shows {
        if shown != (planned == outage) {
            out.push(inconsistent(
                "truth",
                format!("the case shows the {outage} outage exactly when it is planned"),
            ));
        }
    }
    for (i, m) in truth.before_outage.iter().enumerate() {
        if !truth.delivered.iter().any(|d| d.file == m.file) {
            out.push(inconsistent(
                &format!("truth.before_outage[{i}]"),
                "a message delivered before the outage is not in the mailbox at the end",
            ));
        }
    }
    out
}

/// What a gated ticket's receipt says, held to the case: every entry's effect names this case
/// and this refund, and every email of the case in the mailbox carries the `Message-ID` of a
/// DISPATCHED entry of the receipt ([`gate_message_id`]): the gate sent nothing that its
/// receipt does not account for.
pub fn receipt_findings(cell: &Cell) -> Vec<Finding> {
    case_receipt_findings(&cell.case, &cell.refund, &cell.truth, &cell.ticket)
}

/// [`receipt_findings`] of a case given by its parts (its name, its refund, its ground truth and
/// its ticket), for the campaign's trials too.
pub fn case_receipt_findings(
    case: &str,
    refund: &str,
    truth: &MailTruth,
    ticket: &TicketRecord,
) -> Vec<Finding> {
    let Some(bundle) = &ticket.receipt else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut anchors = Vec::new();
    for (i, e) in bundle.entries.iter().enumerate() {
        let kind = e.get("kind").and_then(serde_json::Value::as_str);
        if kind == Some("DISPATCHED") {
            if let Some(h) = e.get("hash").and_then(serde_json::Value::as_str) {
                anchors.push(gate_message_id(h, case));
            }
        }
        let Some(effect) = e.get("effect") else {
            continue;
        };
        let field = |k: &str| effect.get(k).and_then(serde_json::Value::as_str);
        for (key, want) in [("case", case), ("refund", refund)] {
            if field(key) != Some(want) {
                out.push(inconsistent(
                    &format!("ticket.receipt.entries[{i}].effect.{key}"),
                    format!(
                        "the receipt's {} names another {key} than the cell's",
                        kind.unwrap_or("entry")
                    ),
                ));
            }
        }
    }
    for (i, m) in truth.delivered.iter().enumerate() {
        if !m.message_id.as_ref().is_some_and(|id| anchors.contains(id)) {
            out.push(inconsistent(
                &format!("truth.delivered[{i}].message_id"),
                "an email of the case names no DISPATCHED entry of the gate's receipt",
            ));
        }
    }
    out
}

/// The judgement of a cell; findings when its ground truth does not add up.
pub fn judge(cell: &Cell) -> Result<Judgement, Vec<Finding>> {
    let mut problems = consistent(cell);
    problems.extend(receipt_findings(cell));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(judgement(&cell.truth, &cell.ticket))
}
