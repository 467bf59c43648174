//! Re-verifying a results file of the original Python implementation: every interlock cell's
//! receipt, bound to its cell, and compared with what the original's own verifier said; and every
//! cell's judgement re-derived from the cell's own data.
//!
//! A file without `format` is read as the original only when it matches the original's schema
//! exactly ([`OriginalResultsFile`], [`OriginalBundle`]: every key known, every type right);
//! anything else is an unknown format. These receipts are unsigned: a valid one shows internal
//! consistency (hash chain, replay rules), not who wrote it, so no original file can pass under a
//! pinned key.

use crate::entry::ReceiptBundle;
use crate::finding::{code as fcode, Finding};
use crate::pycompat;
use crate::receipt::{verify_bundles, Happened, KeyCheck, ReceiptReport, PYTHON_ORIGINAL_FORMAT};
use crate::scenarios::billing_credit::status_says_sent;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A results file of the original Python implementation, exactly as it wrote them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalResultsFile {
    /// Scenario name.
    pub scenario: String,
    /// When the run finished.
    pub generated: String,
    /// The model that decided.
    pub model: String,
    /// Every cell.
    pub cells: Vec<OriginalCell>,
}

/// One cell of an original results file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalCell {
    /// `no_check`, `hand_check` or `interlock`.
    pub system: String,
    /// Crash point.
    pub crash: String,
    /// Outage.
    pub outage: String,
    /// The case.
    pub case: OriginalCase,
    /// The decide worker's exit code (-9: killed).
    pub worker_exit_code: i64,
    /// The decision (free form in the original).
    pub decision: Map<String, Value>,
    /// Premise candidates after the kill.
    pub observed_at_crash: Map<String, Value>,
    /// What the outage did.
    pub outage_record: Map<String, Value>,
    /// Premise candidates before the restart.
    pub observed_at_restart: Map<String, Value>,
    /// Outage duration, seconds.
    pub outage_s: f64,
    /// The column's final status.
    pub outcome: String,
    /// The restart worker's output.
    pub restart: Map<String, Value>,
    /// hand_check's log.
    pub hand_check_log: Vec<Value>,
    /// What Stripe held.
    pub ground_truth: OriginalGroundTruth,
    /// What the invariant allowed.
    pub want: OriginalWant,
    /// Stated judgement.
    pub invariant_held: bool,
    /// Stated judgement.
    pub answer_matches_stripe: bool,
    /// Stated judgement.
    pub can_prove_what_happened: bool,
    /// Why the cell can or cannot prove it.
    pub proof_note: String,
    /// Crash to settled, seconds.
    pub seconds_to_settle: f64,
    /// Restart to settled, seconds.
    pub restart_to_settle_s: f64,
    /// What was emulated.
    pub emulated: String,
    /// The interlock receipt.
    #[serde(default)]
    pub receipt: Option<OriginalBundle>,
    /// The original's own offline re-check.
    #[serde(default)]
    pub reverified_offline_matches_restart: Option<bool>,
}

/// The case of an original cell.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalCase {
    /// `case-<10 hex>`.
    pub case_id: String,
    /// `INC-<6 hex>`.
    pub incident: String,
    /// Test clock id.
    pub clock: String,
    /// Customer id.
    pub customer: String,
    /// Subscription id.
    pub subscription: String,
    /// The approval.
    pub approval: OriginalApproval,
    /// Case text.
    pub text: String,
}

/// The approval of an original case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalApproval {
    /// Approval id.
    pub id: String,
    /// Who approved.
    pub approver: String,
    /// Cap in cents.
    pub max_cents: i64,
    /// Revocation, if any.
    pub revoked: Option<Value>,
}

/// What Stripe held, as the original recorded it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalGroundTruth {
    /// This case's credits.
    pub case_credits: Vec<OriginalCredit>,
    /// Their number.
    pub case_credit_count: u32,
    /// Their total, positive cents.
    pub case_credit_cents: i64,
    /// Credit notes (free form).
    pub credit_notes: Vec<Value>,
    /// Unscoped compensation by others.
    pub compensation_by_others: i64,
    /// Compensation for this incident by others.
    pub incident_compensation: i64,
    /// The customer's balance.
    pub customer_balance: i64,
    /// Balance transactions (free form).
    pub balance_transactions: Vec<Value>,
    /// Invoices (free form).
    pub invoices: Vec<Value>,
}

/// One case credit in an original file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalCredit {
    /// Balance transaction id.
    pub id: String,
    /// Negative cents.
    pub amount: i64,
    /// Creation time.
    pub created: i64,
}

/// The original's want.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalWant {
    /// Credits allowed.
    pub case_credit_count: u32,
    /// Their total.
    pub case_credit_cents: i64,
}

/// A receipt bundle of the original implementation: `{effect_id, entries}` (and, inside a results
/// file, the original's own `summary`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginalBundle {
    /// 12 lowercase hex characters.
    pub effect_id: String,
    /// Every entry, each a JSON object.
    pub entries: Vec<Map<String, Value>>,
    /// What the original's verifier said (not trusted, not used).
    #[serde(default)]
    pub summary: Option<Value>,
}

impl OriginalBundle {
    /// The bundle in this crate's receipt type, of format [`PYTHON_ORIGINAL_FORMAT`].
    pub fn into_bundle(self) -> ReceiptBundle {
        ReceiptBundle {
            format: PYTHON_ORIGINAL_FORMAT.to_owned(),
            effect_id: self.effect_id,
            entries: self.entries.into_iter().map(Value::Object).collect(),
            head: None,
        }
    }
}

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

/// What the original's own rules give for `happened`. The original had no seal, so its verifier
/// read a receipt as its entries say ([`ReceiptReport::entries_say`]); the file is checked for
/// consistency with that rule, which proves no more than the entries hold.
fn happened_value(r: &ReceiptReport) -> Value {
    serde_json::to_value(r.entries_say).unwrap_or(Value::Null)
}

/// One cell per crash point, outage and column, as the original ran them: a finding for each
/// cell that repeats an earlier one's (a cell repeated, or one column dropped while another
/// repeats, is not the run).
fn repeated_cells(cells: &[OriginalCell]) -> Vec<Finding> {
    let mut seen = std::collections::HashMap::new();
    let mut findings = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if let Some(first) = seen.insert((&cell.crash, &cell.outage, &cell.system), i) {
            findings.push(Finding::new(
                format!("cells[{i}]"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i} repeats the crash point, outage and column of cell {first}: the \
                     original ran each once"
                ),
            ));
        }
    }
    findings
}

/// Verify an original results file: its strict schema, every interlock receipt, and every cell's
/// judgement.
pub fn verify_original_results(file: &Value) -> OriginalReport {
    let scenario = file
        .get("scenario")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let typed = match OriginalResultsFile::deserialize(file) {
        Ok(t) => t,
        Err(e) => {
            let finding = Finding::new(
                "",
                fcode::FILE_INCONSISTENT,
                format!("the file does not match the original format's schema: {e}"),
            );
            return OriginalReport {
                scenario,
                cells: 0,
                receipts: Vec::new(),
                findings: vec![finding],
                ok: false,
            };
        }
    };
    let mut findings = repeated_cells(&typed.cells);
    let mut picked = Vec::new();
    for (i, cell) in typed.cells.iter().enumerate() {
        if cell.system != "interlock" {
            continue;
        }
        match &cell.receipt {
            Some(b) => picked.push((i, b.clone().into_bundle())),
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
    let mut by_cell: Vec<Option<usize>> = vec![None; typed.cells.len()];
    for ((i, _), report) in picked.into_iter().zip(reports) {
        let Some(cell) = file.get("cells").and_then(|c| c.get(i)) else {
            continue;
        };
        check_receipt_claims(i, cell, &report, &mut findings);
        if let Some(slot) = by_cell.get_mut(i) {
            *slot = Some(receipts.len());
        }
        receipts.push(OriginalReceipt { cell: i, report });
    }
    for (i, cell) in typed.cells.iter().enumerate() {
        let report = by_cell
            .get(i)
            .copied()
            .flatten()
            .and_then(|k| receipts.get(k))
            .map(|r| &r.report);
        check_judgement(i, cell, report, &mut findings);
    }
    let ok = findings.is_empty();
    OriginalReport {
        scenario,
        cells: typed.cells.len(),
        receipts,
        findings,
        ok,
    }
}

/// Every judgement of an original cell, re-derived from the cell's own data: counts and sums of
/// the case credits, `want` (0, or one credit of the approved cap), `invariant_held`,
/// `answer_matches_stripe`, and `can_prove_what_happened` (no_check: never; interlock: its
/// receipt verifies and agrees with Stripe; hand_check: its log's answer agrees with Stripe).
fn check_judgement(
    i: usize,
    cell: &OriginalCell,
    receipt: Option<&ReceiptReport>,
    findings: &mut Vec<Finding>,
) {
    let mut judged = Judged {
        i,
        base: format!("cells[{i}]"),
        findings,
    };
    judged.check_ground_truth(cell);
    judged.check_want(cell);
    let gt = &cell.ground_truth;
    let held = gt.case_credit_count == cell.want.case_credit_count
        && gt.case_credit_cents == cell.want.case_credit_cents;
    judged.differs(
        "invariant_held",
        held.to_string(),
        cell.invariant_held.to_string(),
    );
    let exists = gt.case_credit_count > 0;
    let answer = status_says_sent(&cell.outcome) == exists;
    judged.differs(
        "answer_matches_stripe",
        answer.to_string(),
        cell.answer_matches_stripe.to_string(),
    );
    let proof = match cell.system.as_str() {
        "interlock" => receipt.is_some_and(|r| r.valid && r.entries_say.agrees_with(exists)),
        "hand_check" => answer,
        _ => false,
    };
    judged.differs(
        "can_prove_what_happened",
        proof.to_string(),
        cell.can_prove_what_happened.to_string(),
    );
    if let Some(r) = receipt {
        judged.check_outcome(cell, r);
    }
}

/// The findings of one original cell's judgements: each a field whose stated value is not the
/// one the cell's own data gives.
struct Judged<'f> {
    i: usize,
    base: String,
    findings: &'f mut Vec<Finding>,
}

impl Judged<'_> {
    /// A finding at `field` if `theirs` (the cell's) is not `ours` (derived).
    fn differs(&mut self, field: &str, ours: String, theirs: String) {
        if ours != theirs {
            self.findings.push(Finding::mismatch(
                format!("{}.{field}", self.base),
                fcode::GROUND_TRUTH_INCONSISTENT,
                format!(
                    "cell {}: {field} is not what the cell's own data gives",
                    self.i
                ),
                ours,
                theirs,
            ));
        }
    }

    /// The ground truth's count and sum are those of its case credits.
    fn check_ground_truth(&mut self, cell: &OriginalCell) {
        let gt = &cell.ground_truth;
        let cents: i128 = gt.case_credits.iter().map(|c| -i128::from(c.amount)).sum();
        self.differs(
            "ground_truth.case_credit_count",
            gt.case_credits.len().to_string(),
            gt.case_credit_count.to_string(),
        );
        self.differs(
            "ground_truth.case_credit_cents",
            cents.to_string(),
            gt.case_credit_cents.to_string(),
        );
    }

    /// `want` is no credit, or one credit of the approved cap.
    fn check_want(&mut self, cell: &OriginalCell) {
        let want_cents = i128::from(cell.want.case_credit_count)
            .saturating_mul(i128::from(cell.case.approval.max_cents));
        let want_ok = cell.want.case_credit_count <= 1
            && i128::from(cell.want.case_credit_cents) == want_cents;
        self.differs(
            "want",
            "0 credits, or 1 credit of the approved cap".into(),
            if want_ok {
                "0 credits, or 1 credit of the approved cap".into()
            } else {
                format!(
                    "{} credits of {} cents",
                    cell.want.case_credit_count, cell.want.case_credit_cents
                )
            },
        );
    }

    /// The outcome is the status the restart gave, and one the receipt's entries allow.
    fn check_outcome(&mut self, cell: &OriginalCell, r: &ReceiptReport) {
        let Some(status) = cell.restart.get("status").and_then(Value::as_str) else {
            return;
        };
        let refused = cell.outcome.starts_with("REFUSED");
        let fits = match r.entries_say {
            Happened::Yes => status_says_sent(status),
            Happened::No => refused,
            Happened::Unknown => status == "AMBIGUOUS",
        };
        if status != cell.outcome || !fits {
            self.differs(
                "outcome",
                format!("a status that says happened = {}", r.entries_say),
                cell.outcome.clone(),
            );
        }
    }
}

/// The receipt is bound to its cell and says what the original's verifier said at restart.
fn check_receipt_claims(
    i: usize,
    cell: &Value,
    report: &ReceiptReport,
    findings: &mut Vec<Finding>,
) {
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
            ("happened", happened_value(report)),
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
}
