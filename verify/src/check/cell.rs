//! One cell: its judgement re-derived by the scenario's rules
//! ([`crate::scenarios::billing_credit`]) and compared with what the cell states, the evidence
//! that its worker was killed, its restart output, and its ground truth's consistency.

use crate::finding::{code as fcode, Finding};
use crate::receipt::ReceiptReport;
use crate::results::Cell;
use crate::scenarios::billing_credit;
use crate::view::BundleView;
use serde_json::Value;
use std::collections::BTreeSet;

use super::*;

/// Every check of cell `i`. `bundle` is the cell's receipt as read (beside the typed cell when it
/// was read from text, [`super::cells::Group`]) and `receipt` its report.
pub(super) fn check_cell(
    i: usize,
    cell: &Cell,
    bundle: Option<&BundleView<'_>>,
    receipt: Option<ReceiptReport>,
) -> CellReport {
    let base = format!("cells[{i}]");
    let mut f: Vec<Finding> = Vec::new();
    let harness_error = cell.is_harness_error();

    check_ground_truth(&base, cell, &mut f);

    let judged = billing_credit::judge::judge_carrying(cell, bundle.is_some(), receipt.as_ref());
    let want = judged.want;
    if want != cell.want {
        f.push(Finding::mismatch(
            format!("{base}.want"),
            fcode::WANT_MISMATCH,
            format!("cell {i}: want is not what the want rule derives from the ground truth"),
            format!("count {} cents {}", want.count, want.cents),
            format!("count {} cents {}", cell.want.count, cell.want.cents),
        ));
    }
    let invariant_held = judged.invariant_held;
    if invariant_held != cell.invariant_held {
        f.push(Finding::mismatch(
            format!("{base}.invariant_held"),
            fcode::INVARIANT_MISMATCH,
            format!("cell {i}: invariant_held is not what the case's credits and want give"),
            invariant_held,
            cell.invariant_held,
        ));
    }
    let answer_matches = judged.answer_matches;
    if answer_matches != cell.answer_matches {
        f.push(Finding::mismatch(
            format!("{base}.answer_matches"),
            fcode::ANSWER_MISMATCH,
            format!(
                "cell {i}: answer_matches is not what outcome {:?} and the case's credits give",
                cell.outcome
            ),
            answer_matches,
            cell.answer_matches,
        ));
    }
    if !cell.harness_error_consistent() {
        f.push(Finding::new(
            format!("{base}.harness_error"),
            fcode::FILE_INCONSISTENT,
            format!(
                "cell {i}: harness_error must be set exactly when the outcome is HARNESS_ERROR"
            ),
        ));
    }
    let expected_record = billing_credit::proof::record_kind(&cell.column);
    if cell.record != expected_record {
        f.push(Finding::mismatch(
            format!("{base}.record"),
            fcode::FILE_INCONSISTENT,
            format!(
                "cell {i}: the record kind does not fit column {}",
                cell.column
            ),
            expected_record,
            &cell.record,
        ));
    }

    check_crash_evidence(i, &base, cell, harness_error, &mut f);
    check_restart_output(i, &base, cell, receipt.as_ref(), harness_error, &mut f);
    match cell.column.as_str() {
        "interlock" => {
            let read = bundle.zip(receipt.as_ref());
            check_interlock(i, &base, cell, read, harness_error, &mut f);
        }
        "hand_check" => {
            no_receipt(i, &base, cell, bundle.is_some(), &mut f);
            check_hand_check(i, &base, cell, harness_error, &mut f);
        }
        _ => {
            no_receipt(i, &base, cell, bundle.is_some(), &mut f);
            let allowed = billing_credit::proof::NO_CHECK_OUTCOMES;
            if !harness_error && !allowed.contains(&cell.outcome.as_str()) {
                f.push(Finding::mismatch(
                    format!("{base}.outcome"),
                    fcode::OUTCOME_MISMATCH,
                    format!("cell {i}: a no_check worker only ever sends, so its outcome cannot be {:?}", cell.outcome),
                    allowed.join(" or "),
                    &cell.outcome,
                ));
            }
        }
    }
    let proof = judged.proof.is_ok();
    let why_not = judged
        .proof
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    if proof != cell.proof {
        f.push(Finding::mismatch(
            format!("{base}.proof"),
            fcode::PROOF_MISMATCH,
            if proof {
                format!("cell {i}: proof is false, but its record proves what happened")
            } else {
                format!("cell {i}: proof is true, but {why_not}")
            },
            proof,
            cell.proof,
        ));
    }

    let mut findings: Vec<Finding> = receipt
        .iter()
        .flat_map(|r| {
            r.problems
                .iter()
                .map(|p| Finding::from_problem(&format!("{base}.receipt"), p))
        })
        .collect();
    findings.append(&mut f);
    CellReport {
        index: i,
        column: cell.column.clone(),
        crash: cell.crash.clone(),
        outage: cell.outage.clone(),
        repeat: cell.repeat,
        ok: findings.is_empty(),
        want,
        invariant_held,
        answer_matches,
        proof,
        receipt,
        findings,
    }
}

/// A judged cell is one whose worker the runner killed: ended by signal 9 and by nothing else.
/// A HARNESS_ERROR cell (counted apart) must say why, so it cannot silently drop a cell.
pub(super) fn check_crash_evidence(
    i: usize,
    base: &str,
    cell: &Cell,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    if !harness_error {
        if let Some(why) =
            billing_credit::outage_misfit(&cell.outage, &cell.outage_record, &cell.case.incident)
        {
            f.push(Finding::new(
                format!("{base}.outage_record"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i}: the outage record does not fit outage {:?}: {why}",
                    cell.outage
                ),
            ));
        }
    }
    if harness_error {
        if cell
            .harness_error
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
        {
            f.push(Finding::new(
                format!("{base}.harness_error"),
                fcode::CRASH_NOT_PROVEN,
                format!("cell {i} is a HARNESS_ERROR without the reason and stderr tail that explain it"),
            ));
        }
        return;
    }
    // A decision the approval never covered may be refused before the crash point: the decide
    // worker then exits by itself (code 3) instead of being killed.
    let refused_uncovered = cell.worker_exit_signal.is_none()
        && cell.worker_exit_code == Some(3)
        && cell
            .decision
            .as_ref()
            .is_some_and(|d| !billing_credit::approval_covers(&cell.case.approval, d.amount));
    if !refused_uncovered
        && (cell.worker_exit_signal != Some(SIGKILL) || cell.worker_exit_code.is_some())
    {
        let found = match (cell.worker_exit_signal, cell.worker_exit_code) {
            (Some(s), None) => format!("signal {s}"),
            (None, Some(c)) => format!("exit code {c}"),
            (Some(s), Some(c)) => format!("signal {s} and exit code {c}"),
            (None, None) => "no exit status".to_owned(),
        };
        f.push(Finding::mismatch(
            format!("{base}.worker_exit_signal"),
            fcode::CRASH_NOT_PROVEN,
            format!("cell {i} is judged, but its worker was not ended by the runner's SIGKILL; only a HARNESS_ERROR may end otherwise"),
            "signal 9",
            found,
        ));
    }
}

/// The signal the runner kills a worker with.
pub(super) const SIGKILL: i32 = 9;

/// The restart worker's own output line must say what the cell says (where it says it).
pub(super) fn check_restart_output(
    i: usize,
    base: &str,
    cell: &Cell,
    receipt: Option<&ReceiptReport>,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    // One cell's restart line at a time, at most `FREE_FORM_MAX_BYTES` of text.
    let Some(restart) = cell
        .restart
        .as_ref()
        .map(crate::results::FreeForm::to_value)
    else {
        return;
    };
    if let Some(status) = restart.get("status").and_then(Value::as_str) {
        if !harness_error && status != cell.outcome {
            f.push(Finding::mismatch(
                format!("{base}.restart.status"),
                fcode::OUTCOME_MISMATCH,
                format!(
                    "cell {i}: the restart worker reported another status than the cell's outcome"
                ),
                &cell.outcome,
                status,
            ));
        }
    }
    if let Some(eid) = restart.get("effect_id").filter(|e| !e.is_null()) {
        if eid.as_str() != cell.effect_id.as_deref() {
            f.push(Finding::mismatch(
                format!("{base}.restart.effect_id"),
                fcode::RECEIPT_CLAIM_MISMATCH,
                format!("cell {i}: the restart worker reported another effect than the cell's"),
                cell.effect_id.as_deref().unwrap_or("null"),
                eid,
            ));
        }
    }
    let Some(report) = receipt else {
        return;
    };
    if let Some(stated) = restart.pointer("/detail/verify") {
        let ours = [
            ("valid", Value::Bool(report.valid)),
            (
                "happened",
                serde_json::to_value(report.happened).unwrap_or(Value::Null),
            ),
        ];
        for (field, derived) in ours {
            if let Some(theirs) = stated.get(field) {
                if theirs != &derived {
                    f.push(Finding::mismatch(
                        format!("{base}.restart.detail.verify.{field}"),
                        fcode::RECEIPT_CLAIM_MISMATCH,
                        format!("cell {i}: the restart worker's verify output disagrees with the receipt on {field}"),
                        &derived,
                        theirs,
                    ));
                }
            }
        }
    }
}

/// A cell of a column without a gate carries no receipt (`carries_receipt`), effect id or kinds.
pub(super) fn no_receipt(
    i: usize,
    base: &str,
    cell: &Cell,
    carries_receipt: bool,
    f: &mut Vec<Finding>,
) {
    if carries_receipt || cell.effect_id.is_some() || !cell.journal_kinds.is_empty() {
        f.push(Finding::new(
            format!("{base}.receipt"),
            fcode::RECEIPT_MISSING,
            format!(
                "cell {i} is a {} cell but carries a receipt, effect id or journal kinds",
                cell.column
            ),
        ));
    }
}

pub(super) fn check_ground_truth(base: &str, cell: &Cell, f: &mut Vec<Finding>) {
    let gt = &cell.ground_truth;
    let case_id = cell.case.case_id.as_str();
    let path = format!("{base}.ground_truth");
    let credits = billing_credit::case_credits(gt);
    if !credits.listed_are_judged {
        f.push(Finding::mismatch(
            format!("{path}.case_credits"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: case_credits are not the credits billing did not make"),
            ids(credits.judged.iter().map(|t| t.0)),
            ids(gt.case_credits.iter().map(|c| c.id.as_str())),
        ));
    }
    if !credits.count_matches {
        f.push(Finding::mismatch(
            format!("{path}.case_credit_count"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: case_credit_count is not the number of case credits"),
            gt.case_credits.len(),
            gt.case_credit_count,
        ));
    }
    if !credits.cents_match {
        f.push(Finding::mismatch(
            format!("{path}.case_credit_cents"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: case_credit_cents is not the sum of the case credits"),
            credits.cents,
            gt.case_credit_cents,
        ));
    }
    let by_others = billing_credit::compensation_by_others_exact(
        &gt.credit_notes,
        &gt.balance_transactions,
        case_id,
        None,
    );
    if i128::from(gt.compensation_by_others) != by_others {
        f.push(Finding::mismatch(
            format!("{path}.compensation_by_others"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: compensation_by_others is not what the credit notes and balance transactions give"),
            by_others,
            gt.compensation_by_others,
        ));
    }
    let incident = billing_credit::compensation_by_others_exact(
        &gt.credit_notes,
        &gt.balance_transactions,
        case_id,
        Some(&cell.case.incident),
    );
    if i128::from(gt.incident_compensation) != incident {
        f.push(Finding::mismatch(
            format!("{path}.incident_compensation"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: incident_compensation is not what the credit notes and balance transactions give"),
            incident,
            gt.incident_compensation,
        ));
    }
    let listed: BTreeSet<&str> = cell
        .stripe_ids
        .case_credits
        .iter()
        .map(String::as_str)
        .collect();
    let held: BTreeSet<&str> = gt.case_credits.iter().map(|c| c.id.as_str()).collect();
    if listed != held {
        f.push(Finding::mismatch(
            format!("{base}.stripe_ids.case_credits"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: the listed case credit ids are not the ground truth's"),
            ids(held.iter().copied()),
            ids(listed.iter().copied()),
        ));
    }
}

pub(super) fn ids<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    format!("[{}]", v.join(", "))
}

/// hand_check: the final status must be one its log's last restart step allows.
pub(super) fn check_hand_check(
    i: usize,
    base: &str,
    cell: &Cell,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    let log = billing_credit::proof::read_hand_check_log(
        cell.hand_check_log.as_deref(),
        &cell.ground_truth,
    );
    if !harness_error {
        let allowed = billing_credit::proof::hand_check_outcomes(&log);
        if log.step.is_some() && !allowed.contains(&cell.outcome.as_str()) {
            f.push(Finding::mismatch(
                format!("{base}.outcome"),
                fcode::OUTCOME_MISMATCH,
                format!(
                    "cell {i}: the outcome disagrees with the hand_check log's last restart step"
                ),
                if allowed.is_empty() {
                    "no status fits".to_owned()
                } else {
                    allowed.join(" or ")
                },
                &cell.outcome,
            ));
        }
    }
}
