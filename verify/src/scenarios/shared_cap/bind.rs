//! A shared_cap ticket bound to its record, as a billing_credit cell or trial is
//! ([`crate::check`], [`crate::nemesis`]), in a matrix cell and a nemesis trial alike:
//!
//! - an interlock ticket of a judged cell carries its receipt, verified under the run's key; the
//!   receipt is of the ticket's own effect (the effect id of its request,
//!   `goodwill-refund:<ticket id>`), its `effect_id` and `journal_kinds` are the receipt's, and its
//!   status is one the receipt's final entry gives;
//! - a ticket of any other column carries no receipt, effect id or journal kinds: nothing there
//!   is verified, so nothing may be presented as a receipt;
//! - a worker recorded as killed at a step was ended by the runner's SIGKILL at that step
//!   (`first_exit`), and a worker of a judged cell that was not killed finished by itself;
//! - a harness-error cell says why.

use super::record::{CapCell, TicketRecord};
use crate::nemesis::rules::RESTART_FAILED;
use crate::receipt::{verify_bundle, KeyCheck, ReceiptReport};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;
use sha2::Digest as _;

/// How the runner records a worker that ended by itself and reported (`first_exit`).
pub const FINISHED: &str = "finished by itself";

/// How the runner records a worker it SIGKILLed at `step` (`first_exit`).
pub fn killed_exit(step: &str) -> String {
    format!("SIGKILLed by the runner at {step}")
}

/// The request id of a ticket's refund: `goodwill-refund:<ticket id>`.
pub fn request_id(ticket_id: &str) -> String {
    format!("goodwill-refund:{ticket_id}")
}

/// The effect id of a ticket's refund: lowercase hex SHA-256 of the canonical JSON of its
/// [`request_id`].
pub fn effect_id(ticket_id: &str) -> String {
    let request = Value::String(request_id(ticket_id));
    let bytes = crate::canonical::to_vec(&request).unwrap_or_default();
    hex::encode(sha2::Sha256::digest(&bytes))
}

/// Every binding of cell `c` (named `at` in findings) to its tickets' records; `key` is the key
/// its receipts must be signed by (`None`: no key to check them against, already a finding).
pub(crate) fn check_tickets(
    at: &str,
    c: &CapCell,
    key: Option<&VerifyingKey>,
    findings: &mut Vec<String>,
) {
    let judged = c.judged();
    if c.harness_error
        .as_deref()
        .is_some_and(|r| r.trim().is_empty())
    {
        findings.push(format!(
            "{at}: a harness error without the reason that explains it"
        ));
    }
    for (j, t) in c.tickets.iter().enumerate() {
        let at = format!("{at}: tickets[{j}]");
        check_exit(&at, t, judged, findings);
        check_unresolved(&at, t, findings);
        // An unresolved ticket's restart ended in an error: it has no final record to bind.
        if t.status == RESTART_FAILED {
            continue;
        }
        if c.column != "interlock" {
            if t.receipt.is_some() || t.effect_id.is_some() || !t.journal_kinds.is_empty() {
                findings.push(format!(
                    "{at}: a {} ticket carries a receipt, effect id or journal kinds; only the \
                     interlock column's are verified",
                    crate::display::shorten(&c.column, 40)
                ));
            }
            continue;
        }
        match (&t.receipt, key) {
            (Some(bundle), Some(key)) => {
                let report = verify_bundle(bundle, &KeyCheck::Pinned(*key));
                check_receipt(&at, t, bundle, &report, judged, findings);
            }
            (None, _) if judged => findings.push(format!(
                "{at}: an interlock ticket of a judged cell carries no receipt"
            )),
            _ => {}
        }
    }
}

/// An unresolved ticket (status [`RESTART_FAILED`]) was killed, so it had a final restart, and
/// says how that restart ended; a ticket that is not unresolved carries no restart error.
fn check_unresolved(at: &str, t: &TicketRecord, findings: &mut Vec<String>) {
    let unresolved = t.status == RESTART_FAILED;
    let explained = t
        .restart_error
        .as_deref()
        .is_some_and(|e| !e.trim().is_empty());
    if unresolved && (t.killed_at.is_none() || !explained) {
        findings.push(format!(
            "{at}: status {RESTART_FAILED} needs a killed worker and its restart's error"
        ));
    }
    if !unresolved && t.restart_error.is_some() {
        findings.push(format!(
            "{at}: a restart error on a ticket whose status is not {RESTART_FAILED}"
        ));
    }
}

/// `killed_at` is what `first_exit` says: a SIGKILL by the runner at that step; a worker of a
/// judged cell that was not killed finished by itself.
fn check_exit(at: &str, t: &TicketRecord, judged: bool, findings: &mut Vec<String>) {
    let fits = match &t.killed_at {
        Some(step) => t.first_exit == killed_exit(step),
        None if judged => t.first_exit == FINISHED,
        None => !t.first_exit.starts_with(&killed_exit("")),
    };
    if !fits {
        findings.push(format!(
            "{at}: killed_at {} does not fit its first exit ({})",
            t.killed_at
                .as_deref()
                .map_or_else(|| "none".to_owned(), |s| crate::display::shorten(s, 40)),
            crate::display::shorten(&t.first_exit, 80)
        ));
    }
}

/// An interlock ticket's receipt: verified, of the ticket's own effect, and saying what the
/// ticket says (its effect id, its journal kinds and, in a judged cell, its status).
fn check_receipt(
    at: &str,
    t: &TicketRecord,
    bundle: &crate::entry::ReceiptBundle,
    report: &ReceiptReport,
    judged: bool,
    findings: &mut Vec<String>,
) {
    if !report.valid {
        let first = report.problems.first().map_or("", |p| p.message.as_str());
        findings.push(format!(
            "{at}: the receipt does not verify under the run's key ({} problems; the first: {})",
            report.problems.len(),
            crate::display::shorten(first, 200)
        ));
    }
    let own = effect_id(&t.ticket_id);
    if report.effect_id != own {
        findings.push(format!(
            "{at}: the receipt is of effect {}, not of the ticket's request ({own})",
            crate::display::shorten(&report.effect_id, 80)
        ));
    }
    if t.effect_id.as_deref() != Some(report.effect_id.as_str()) {
        findings.push(format!("{at}: effect_id is not the receipt's"));
    }
    if t.journal_kinds != report.journal_kinds {
        findings.push(format!(
            "{at}: journal_kinds are not the receipt's entry kinds ({})",
            crate::display::shorten(&report.journal_kinds.join(" "), 200)
        ));
    }
    if !judged {
        return;
    }
    let final_code = bundle
        .entries
        .last()
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str);
    let allowed = crate::check::outcomes_for_final(report, final_code);
    if !allowed.contains(&t.status) {
        findings.push(format!(
            "{at}: status {} is not what the receipt's final entry ({}) gives: {}",
            crate::display::shorten(&t.status, 40),
            report.final_kind.as_deref().unwrap_or("none"),
            if allowed.is_empty() {
                "no status fits".to_owned()
            } else {
                allowed.join(" or ")
            }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(status: &str, killed: bool, error: Option<&str>) -> TicketRecord {
        serde_json::from_value(serde_json::json!({
            "name": "a",
            "ticket_id": "TCK-00000001",
            "approval": {"id": "approval-TCK-00000001", "approver": "support-lead",
                         "max_cents": 2000, "revoked": null},
            "amount": 2000,
            "killed_at": if killed { Some("request_held") } else { None },
            "first_exit": "",
            "status": status,
            "restart_error": error,
            "effect_id": null,
            "journal_kinds": [],
            "receipt": null,
            "log": null,
            "answer_matches": false,
            "proof": false
        }))
        .unwrap()
    }

    /// An unresolved ticket is a killed one whose restart's error is recorded; a restart error
    /// belongs to an unresolved ticket only.
    #[test]
    fn an_unresolved_ticket_says_how_its_restart_ended() {
        let found = |t: &TicketRecord| {
            let mut f = Vec::new();
            check_unresolved("t", t, &mut f);
            f.len()
        };
        assert_eq!(
            found(&ticket(RESTART_FAILED, true, Some("gave up: 409"))),
            0
        );
        assert_eq!(found(&ticket(RESTART_FAILED, true, None)), 1);
        assert_eq!(found(&ticket(RESTART_FAILED, true, Some(" "))), 1);
        assert_eq!(found(&ticket(RESTART_FAILED, false, Some("x"))), 1);
        assert_eq!(found(&ticket("REFUNDED", true, Some("x"))), 1);
        assert_eq!(found(&ticket("REFUNDED", true, None)), 0);
    }
}
