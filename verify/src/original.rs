//! Re-verifying a results file of the original Python implementation: every interlock cell's
//! receipt, bound to its cell, and compared with what the original's own verifier said.
//!
//! These receipts are unsigned: a valid one shows internal consistency (hash chain, replay rules),
//! not who wrote it.

use crate::finding::{code as fcode, Finding};
use crate::load::original_bundle;
use crate::pycompat;
use crate::receipt::{verify_bundles, KeyCheck, ReceiptReport};
use serde::Serialize;
use serde_json::Value;

/// The report on one original results file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OriginalReport {
    /// The file's `scenario`.
    pub scenario: String,
    /// Number of cells.
    pub cells: usize,
    /// One report per interlock cell with a receipt, with the cell index.
    pub receipts: Vec<OriginalReceipt>,
    /// Every finding, receipt problems included.
    pub findings: Vec<Finding>,
    /// No finding at all.
    pub ok: bool,
}

/// One re-verified original receipt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OriginalReceipt {
    /// Index of the cell in `cells`.
    pub cell: usize,
    /// The receipt's report.
    pub report: ReceiptReport,
}

fn happened_value(r: &ReceiptReport) -> Value {
    serde_json::to_value(r.happened).unwrap_or(Value::Null)
}

/// Verify every interlock receipt of an original results file.
pub fn verify_original_results(file: &Value) -> OriginalReport {
    let scenario = file
        .get("scenario")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let empty = Vec::new();
    let cells = file
        .get("cells")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut findings = Vec::new();
    let mut picked = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if cell.get("system").and_then(Value::as_str) != Some("interlock") {
            continue;
        }
        match cell.get("receipt").and_then(original_bundle) {
            Some(b) => picked.push((i, b)),
            None => findings.push(Finding::new(
                format!("cells[{i}].receipt"),
                fcode::RECEIPT_MISSING,
                format!("cell {i} is an interlock cell without a receipt bundle"),
            )),
        }
    }
    let bundles: Vec<_> = picked.iter().map(|(_, b)| b.clone()).collect();
    let reports = verify_bundles(&bundles, &KeyCheck::SelfAttested);
    let mut receipts = Vec::new();
    for ((i, _), report) in picked.into_iter().zip(reports) {
        let cell = &cells[i];
        let base = format!("cells[{i}]");
        let rpath = format!("{base}.receipt");
        findings.extend(
            report
                .problems
                .iter()
                .map(|p| Finding::from_problem(&rpath, p)),
        );
        if let Some(case_id) = cell.pointer("/case/case_id").and_then(Value::as_str) {
            let want = pycompat::effect_id_for_request(&format!("goodwill-credit:{case_id}"));
            if want != report.effect_id {
                findings.push(Finding::mismatch(
                    format!("{rpath}.effect_id"),
                    fcode::RECEIPT_NOT_BOUND,
                    format!(
                        "cell {i}: the receipt's effect is not the one derived from case {case_id}"
                    ),
                    &want,
                    &report.effect_id,
                ));
            }
        }
        // What the original's verifier stated at restart must be what we derive.
        if let Some(stated) = cell.pointer("/restart/verify") {
            let ours_refused = report
                .refused
                .as_ref()
                .map_or(Value::Null, |r| Value::String(r.reason.clone()));
            let checks = [
                ("valid", Value::Bool(report.valid)),
                ("happened", happened_value(&report)),
                ("refused", ours_refused),
                ("happened_once", Value::Bool(report.happened_once)),
            ];
            for (field, ours) in checks {
                let theirs = stated.get(field).cloned().unwrap_or(Value::Null);
                if theirs != ours {
                    findings.push(Finding::mismatch(
                        format!("{base}.restart.verify.{field}"),
                        fcode::RECEIPT_CLAIM_MISMATCH,
                        format!(
                            "cell {i}, effect {}: the stated {field} is not what the receipt gives",
                            report.effect_id
                        ),
                        &ours,
                        &theirs,
                    ));
                }
            }
        }
        if let Some(stated) = cell.pointer("/restart/journal") {
            let ours = Value::from(report.journal_kinds.clone());
            if stated != &ours {
                findings.push(Finding::mismatch(
                    format!("{base}.restart.journal"),
                    fcode::RECEIPT_CLAIM_MISMATCH,
                    format!(
                        "cell {i}, effect {}: the stated journal kinds are not the receipt's",
                        report.effect_id
                    ),
                    &ours,
                    stated,
                ));
            }
        }
        receipts.push(OriginalReceipt { cell: i, report });
    }
    let ok = findings.is_empty();
    OriginalReport {
        scenario,
        cells: cells.len(),
        receipts,
        findings,
        ok,
    }
}
