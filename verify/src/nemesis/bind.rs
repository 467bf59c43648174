//! A trial bound to its record, as a matrix cell is ([`crate::check`]): an interlock trial that
//! ended in a column's status carries the receipt of its own case's effect, its `journal_kinds`
//! are the receipt's, and its outcome is the status the receipt's last entry gives; no other
//! column's trial carries a receipt; a `HARNESS_ERROR` trial carries its reason, and no other
//! trial does. So a trial cannot borrow another trial's receipt, nor state an outcome its record
//! does not give.

use super::rules::{NOT_DECIDED, RESTART_FAILED};
use super::Trial;
use crate::finding::{code as fcode, Finding};
use crate::receipt::ReceiptReport;
use crate::scenarios::billing_credit::{billing_credit_effect_id, HARNESS_ERROR};
use crate::view::{BundleView, View};

/// Every check binding trial `t` (at JSON path `base`) to its record; `receipt` is its receipt
/// (read apart from the trial, whose own is then `None`) and `report` that receipt's report,
/// when it carries one.
pub(super) fn check_trial_record(
    base: &str,
    t: &Trial,
    receipt: Option<&BundleView<'_>>,
    report: Option<&ReceiptReport>,
    f: &mut Vec<Finding>,
) {
    check_harness_error(base, t, f);
    if t.column != "interlock" {
        check_column_without_journal(base, t, receipt, f);
        return;
    }
    let (Some(bundle), Some(report)) = (receipt, report) else {
        check_without_receipt(base, t, f);
        return;
    };
    check_bound(base, t, report, f);
    // A harness error or a failed restart gave no status of the column's to agree with.
    if t.is_harness_error() || t.outcome == RESTART_FAILED {
        return;
    }
    check_outcome(base, t, bundle, report, f);
}

/// A trial of a column without a journal carries neither a receipt nor journal kinds.
fn check_column_without_journal(
    base: &str,
    t: &Trial,
    receipt: Option<&BundleView<'_>>,
    f: &mut Vec<Finding>,
) {
    if receipt.is_some() || !t.journal_kinds.is_empty() {
        f.push(Finding::new(
            format!("{base}.receipt"),
            fcode::RECEIPT_MISSING,
            format!(
                "trial {}: a {} trial carries a receipt or journal kinds",
                t.id, t.column
            ),
        ));
    }
}

/// An interlock trial without a receipt (or whose receipt gave no report): only one whose column
/// gave no status may lack it, and then it states no journal kinds.
fn check_without_receipt(base: &str, t: &Trial, f: &mut Vec<Finding>) {
    // Killed before any decision, a restart that failed, a harness error: the column gave
    // no status, so there is no receipt to bind (and no kinds to state).
    let no_status = [NOT_DECIDED, RESTART_FAILED, HARNESS_ERROR].contains(&t.outcome.as_str());
    if !no_status {
        f.push(Finding::new(
            format!("{base}.receipt"),
            fcode::RECEIPT_MISSING,
            format!(
                "trial {}: an interlock trial that ended {:?} carries no receipt",
                t.id, t.outcome
            ),
        ));
    } else if !t.journal_kinds.is_empty() {
        f.push(Finding::new(
            format!("{base}.journal_kinds"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("trial {}: journal_kinds are stated without a receipt", t.id),
        ));
    }
}

/// The receipt is the effect of the trial's case, and the trial states its entry kinds.
fn check_bound(base: &str, t: &Trial, report: &ReceiptReport, f: &mut Vec<Finding>) {
    let eid = billing_credit_effect_id(&t.case.case_id);
    if report.effect_id != eid {
        f.push(Finding::mismatch(
            format!("{base}.receipt.effect_id"),
            fcode::RECEIPT_NOT_BOUND,
            format!(
                "trial {}: the receipt is for another effect than case {}'s request",
                t.id, t.case.case_id
            ),
            &eid,
            &report.effect_id,
        ));
    }
    if t.journal_kinds != report.journal_kinds {
        f.push(Finding::mismatch(
            format!("{base}.journal_kinds"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!(
                "trial {}: journal_kinds are not the receipt's entry kinds",
                t.id
            ),
            report.journal_kinds.join(" "),
            t.journal_kinds.join(" "),
        ));
    }
}

/// The trial's outcome is one the receipt's final entry allows.
fn check_outcome(
    base: &str,
    t: &Trial,
    bundle: &BundleView<'_>,
    report: &ReceiptReport,
    f: &mut Vec<Finding>,
) {
    let final_code = bundle
        .entries
        .last()
        .and_then(|e| e.get("code"))
        .and_then(View::as_str);
    let allowed = crate::check::outcomes_for_final(report, final_code);
    if !allowed.contains(&t.outcome) {
        f.push(Finding::mismatch(
            format!("{base}.outcome"),
            fcode::OUTCOME_MISMATCH,
            format!(
                "trial {}: the outcome disagrees with the receipt's final entry ({})",
                t.id,
                report.final_kind.as_deref().unwrap_or("none")
            ),
            if allowed.is_empty() {
                "no status fits".to_owned()
            } else {
                allowed.join(" or ")
            },
            &t.outcome,
        ));
    }
}

/// `harness_error` is set exactly on `HARNESS_ERROR` trials, and says why.
fn check_harness_error(base: &str, t: &Trial, f: &mut Vec<Finding>) {
    let path = format!("{base}.harness_error");
    match (t.is_harness_error(), t.harness_error.as_deref()) {
        (true, reason) if reason.is_none_or(|r| r.trim().is_empty()) => f.push(Finding::new(
            path,
            fcode::CRASH_NOT_PROVEN,
            format!(
                "trial {} is a HARNESS_ERROR without the reason and stderr tail that explain it",
                t.id
            ),
        )),
        (false, Some(_)) => f.push(Finding::new(
            path,
            fcode::FILE_INCONSISTENT,
            format!(
                "trial {}: harness_error must be set exactly when the outcome is HARNESS_ERROR",
                t.id
            ),
        )),
        _ => {}
    }
}
