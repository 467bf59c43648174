//! An interlock cell's receipt bound to the cell: its effect, its proposal, its grants, its
//! evidence and the claims the cell makes about it.

use crate::finding::{code as fcode, Finding};
use crate::receipt::ReceiptReport;
use crate::results::Cell;
use crate::scenarios::billing_credit::{billing_credit_effect_id, request_id};
use crate::view::{BundleView, View};
use serde_json::Value;

use super::*;

/// Interlock: the receipt bound to the cell (its proof is the scenario's rule). `receipt` is the
/// cell's receipt as read and its report.
pub(super) fn check_interlock(
    i: usize,
    base: &str,
    cell: &Cell,
    receipt: Option<(&BundleView<'_>, &ReceiptReport)>,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    let gt = &cell.ground_truth;
    let Some((bundle, report)) = receipt else {
        if !harness_error {
            f.push(Finding::new(
                format!("{base}.receipt"),
                fcode::RECEIPT_MISSING,
                format!("cell {i} is an interlock cell without a receipt"),
            ));
        }
        return;
    };
    let rpath = format!("{base}.receipt");
    let eid = billing_credit_effect_id(&cell.case.case_id);
    if report.effect_id != eid {
        f.push(Finding::mismatch(
            format!("{rpath}.effect_id"),
            fcode::RECEIPT_NOT_BOUND,
            format!(
                "cell {i}: the receipt is for another effect than case {}'s request",
                cell.case.case_id
            ),
            &eid,
            &report.effect_id,
        ));
    }
    if cell.effect_id.as_deref() != Some(report.effect_id.as_str()) {
        f.push(Finding::mismatch(
            format!("{base}.effect_id"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("cell {i}: effect_id is not the receipt's"),
            &report.effect_id,
            cell.effect_id.as_deref().unwrap_or("null"),
        ));
    }
    check_credit_effects(i, base, gt, report, f);
    crate::binding::check_cell_view(i, base, cell, bundle, f);
    check_proposal(i, &rpath, cell, bundle.entries.first(), harness_error, f);
    check_grants(i, &rpath, cell, &bundle.entries, f);
    check_evidence_amount(i, base, cell, report, f);
    if cell.journal_kinds != report.journal_kinds {
        f.push(Finding::mismatch(
            format!("{base}.journal_kinds"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("cell {i}: journal_kinds are not the receipt's entry kinds"),
            report.journal_kinds.join(" "),
            cell.journal_kinds.join(" "),
        ));
    }
    if cell.via != report.via {
        f.push(Finding::mismatch(
            format!("{base}.via"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("cell {i}: via is not the COMMITTED entry's"),
            report.via.as_deref().unwrap_or("null"),
            cell.via.as_deref().unwrap_or("null"),
        ));
    }
    if !harness_error {
        let final_code = bundle
            .entries
            .last()
            .and_then(|e| e.get("code"))
            .and_then(View::as_str);
        let allowed = outcomes_for_final(report, final_code);
        if !allowed.contains(&cell.outcome) {
            f.push(Finding::mismatch(
                format!("{base}.outcome"),
                fcode::OUTCOME_MISMATCH,
                format!(
                    "cell {i}: the outcome disagrees with the receipt's final entry ({})",
                    report.final_kind.as_deref().unwrap_or("none")
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

/// Every credit the ground truth ties to an effect is tied to the receipt's (at most
/// [`crate::problem::LISTED_PER_CODE`] listed per cell, the rest counted).
fn check_credit_effects(
    i: usize,
    base: &str,
    gt: &crate::results::GroundTruth,
    report: &ReceiptReport,
    f: &mut Vec<Finding>,
) {
    let mut capped = crate::finding::Capped::default();
    for (k, credit) in gt.case_credits.iter().enumerate() {
        if let Some(e) = &credit.effect_id {
            if e != &report.effect_id {
                capped.push(f, || {
                    Finding::mismatch(
                        format!("{base}.ground_truth.case_credits[{k}].effect_id"),
                        fcode::RECEIPT_NOT_BOUND,
                        format!(
                            "cell {i}: credit {} was sent for another effect than the receipt's",
                            crate::display::shorten(&credit.id, 80)
                        ),
                        &report.effect_id,
                        e,
                    )
                });
            }
        }
    }
    capped.finish(
        f,
        format!("{base}.ground_truth.case_credits"),
        fcode::RECEIPT_NOT_BOUND,
        &format!("cell {i}: credits sent for another effect than the receipt's"),
    );
}

/// The receipt's first PROPOSED must be this cell's request, approval and decision.
pub(super) fn check_proposal(
    i: usize,
    rpath: &str,
    cell: &Cell,
    first: Option<&View<'_>>,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    let Some(p) = first.filter(|e| e.get("kind").and_then(View::as_str) == Some("PROPOSED")) else {
        return; // reported by the receipt check (first_not_proposed / empty_receipt)
    };
    let epath = format!("{rpath}.entries[0]");
    let mut expect = |field: &str, found: Option<&View<'_>>, want: Value| {
        if found != Some(&View::of(&want)) {
            f.push(Finding {
                entry: Some(0),
                ..Finding::mismatch(
                    format!("{epath}.{field}"),
                    fcode::PROPOSAL_MISMATCH,
                    format!("cell {i}: the receipt's PROPOSED {field} is not this cell's"),
                    &want,
                    found.map_or_else(|| "(missing)".to_owned(), View::to_string),
                )
            });
        }
    };
    expect(
        "request_id",
        p.get("request_id"),
        Value::String(request_id(&cell.case.case_id)),
    );
    expect(
        "lease",
        p.get("lease"),
        Value::String(cell.case.approval.id.clone()),
    );
    let effect = p.get("effect");
    expect(
        "effect.customer",
        effect.and_then(|e| e.get("customer")),
        Value::String(cell.stripe_ids.customer.clone()),
    );
    match &cell.decision {
        Some(d) => {
            expect(
                "effect.amount",
                effect.and_then(|e| e.get("amount")),
                Value::from(d.amount),
            );
            expect(
                "effect.description",
                effect.and_then(|e| e.get("description")),
                Value::String(d.description.clone()),
            );
            expect(
                "premises",
                p.get("premises"),
                serde_json::to_value(&d.premises).unwrap_or(Value::Null),
            );
        }
        None if !harness_error => f.push(Finding::new(
            format!("{}.decision", rpath.trim_end_matches(".receipt")),
            fcode::PROPOSAL_MISMATCH,
            format!("cell {i}: the receipt proposes an effect, but the cell records no decision"),
        )),
        None => {}
    }
}

/// Every grant the receipt recorded (`checks.grant`, `rechecked.grant`) is the cell's approval:
/// same id, approver and cap. (`revoked` may change during a run: a revocation is a fact of the
/// world the gate records when it sees it.)
pub(super) fn check_grants(
    i: usize,
    rpath: &str,
    cell: &Cell,
    entries: &[View<'_>],
    f: &mut Vec<Finding>,
) {
    let a = &cell.case.approval;
    for (k, e) in entries.iter().enumerate() {
        for field in ["checks", "rechecked"] {
            let Some(grant) = e
                .get(field)
                .and_then(|c| c.get("grant"))
                .and_then(View::as_object)
            else {
                continue;
            };
            let same = grant.get("id").and_then(View::as_str) == Some(a.id.as_str())
                && grant.get("approver").and_then(View::as_str) == Some(a.approver.as_str())
                && grant.get("max_cents").and_then(View::as_i64) == Some(a.max_cents);
            if !same {
                f.push(Finding {
                    entry: Some(k),
                    ..Finding::mismatch(
                        format!("{rpath}.entries[{k}].{field}.grant"),
                        fcode::SIGNED_FACT_MISMATCH,
                        format!("cell {i}: the grant the receipt signed is not the cell's case.approval"),
                        format!("id {} approver {} max_cents {}", a.id, a.approver, a.max_cents),
                        Value::Object(grant.to_map()),
                    )
                });
                return;
            }
        }
    }
}

/// The credit the COMMITTED evidence names must have, in the ground truth, the amount the
/// evidence signed.
pub(super) fn check_evidence_amount(
    i: usize,
    base: &str,
    cell: &Cell,
    report: &ReceiptReport,
    f: &mut Vec<Finding>,
) {
    let Some(evidence) = report.evidence.as_ref() else {
        return;
    };
    let (Some(credit), Some(amount)) = (
        evidence.get("credit").and_then(Value::as_str),
        evidence.get("amount").and_then(Value::as_i64),
    ) else {
        return;
    };
    let gt = &cell.ground_truth;
    let mut capped = crate::finding::Capped::default();
    for (k, c) in gt.case_credits.iter().enumerate() {
        if c.id == credit && c.amount.checked_neg() != Some(amount) {
            capped.push(f, || Finding::mismatch(
                format!("{base}.ground_truth.case_credits[{k}].amount"),
                fcode::SIGNED_FACT_MISMATCH,
                format!("cell {i}: credit {} has another amount than the receipt's COMMITTED evidence signed", crate::display::shorten(&c.id, 80)),
                amount.saturating_neg(),
                c.amount,
            ));
        }
    }
    capped.finish(
        f,
        format!("{base}.ground_truth.case_credits"),
        fcode::SIGNED_FACT_MISMATCH,
        &format!("cell {i}: credits with another amount than the COMMITTED evidence signed"),
    );
}
