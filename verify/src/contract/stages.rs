//! The pipeline: stages 2 to 4, after the signature, and the values they hand on.

use super::codes::{Cells, Plan, Summary as SummaryCode};
use super::evidence::{Exit, Ticket, SIGKILL};
use super::file::{file_hash, ScenarioFile};
use super::{judged, signature, Scenario};
use crate::check::outcomes_for_final;
use crate::finding::{Finding, SHOWN_CHARS};
use crate::receipt::{verify_bundle, KeyCheck, ReceiptReport};
use serde::Serialize;

/// Findings a report keeps at most; past that it counts the rest in one last finding, so a file
/// cannot make the report grow with it.
pub const MAX_FINDINGS: usize = 200;

/// What the pipeline found about a file of scenario `S`.
#[derive(Debug, Clone, Serialize)]
#[serde(bound = "")]
pub struct Report<S: Scenario> {
    /// [`Scenario::NAME`].
    pub scenario: &'static str,
    /// `pinned` or `self-attested`.
    pub key: &'static str,
    /// The key the file and its receipts were checked against (hex), once stage 1 accepted it.
    pub signer: Option<String>,
    /// [`crate::fingerprint`] of that key.
    pub fingerprint: Option<String>,
    /// The file's signature and every receipt's signatures verify under the key.
    pub signed: bool,
    /// The file was read past stage 1 (under a pin, a file whose signature fails is not).
    pub read: bool,
    /// Cells in the file.
    pub cells: usize,
    /// Cells judged ([`judged`]).
    pub judged: usize,
    /// Receipts verified.
    pub receipts: usize,
    /// No finding.
    pub ok: bool,
    /// Every finding, each naming its place in the file, at most [`MAX_FINDINGS`] of them.
    pub findings: Vec<Finding>,
    /// The summary derived from the verifier's own judgements (when the file was read).
    pub summary: Option<S::Summary>,
}

/// A file that passed every stage, with everything the verifier derived from it. Only
/// [`check`] builds one: a renderer that takes a `Verified` renders nothing `verify` did not
/// accept.
#[derive(Debug, Clone)]
pub struct Verified<S: Scenario> {
    file: ScenarioFile<S>,
    report: Report<S>,
    judgements: Vec<Option<S::Judgement>>,
    receipts: Vec<Vec<Option<ReceiptReport>>>,
    summary: S::Summary,
}

impl<S: Scenario> Verified<S> {
    /// The file as signed.
    pub fn file(&self) -> &ScenarioFile<S> {
        &self.file
    }
    /// The pipeline's report (no findings).
    pub fn report(&self) -> &Report<S> {
        &self.report
    }
    /// The derived judgement of cell `i` (`None`: not judged, or no such cell).
    pub fn judgement(&self, i: usize) -> Option<&S::Judgement> {
        self.judgements.get(i).and_then(Option::as_ref)
    }
    /// The verified receipt reports of cell `i`, one per ticket (`None`: the ticket carries no
    /// receipt).
    pub fn receipts(&self, i: usize) -> &[Option<ReceiptReport>] {
        self.receipts.get(i).map(Vec::as_slice).unwrap_or_default()
    }
    /// The derived summary.
    pub fn summary(&self) -> &S::Summary {
        &self.summary
    }
}

/// Findings, capped at [`MAX_FINDINGS`].
#[derive(Default)]
struct Findings {
    kept: Vec<Finding>,
    left_out: usize,
}

impl Findings {
    fn push(&mut self, f: Finding) {
        if self.kept.len() < MAX_FINDINGS {
            self.kept.push(f);
        } else {
            self.left_out += 1;
        }
    }
    fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
    fn into_vec(mut self) -> Vec<Finding> {
        if self.left_out > 0 {
            self.kept.push(Finding::new(
                "",
                "findings_left_out",
                format!("{} more findings are not listed", self.left_out),
            ));
        }
        self.kept
    }
}

/// JSON of a value, cut for a finding.
fn shown<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|e| format!("<{e}>"));
    crate::display::shorten(&text, SHOWN_CHARS)
}

/// Runs every stage over `file` under the key policy `key`: `Ok` with everything derived when
/// nothing was found, `Err` with the report otherwise. A file whose format or signature fails
/// (stage 1) is read no further, under either policy: nothing is derived from it.
pub fn check<S: Scenario>(
    file: ScenarioFile<S>,
    key: &KeyCheck,
) -> Result<Verified<S>, Box<Report<S>>> {
    let mut findings = Findings::default();
    let mut report = Report::<S> {
        scenario: S::NAME,
        key: match key {
            KeyCheck::Pinned(_) => "pinned",
            KeyCheck::SelfAttested => "self-attested",
        },
        signer: None,
        fingerprint: None,
        signed: false,
        read: false,
        cells: file.cells.len(),
        judged: 0,
        receipts: 0,
        ok: false,
        findings: Vec::new(),
        summary: None,
    };
    let Some(file_key) = signature_stage(&file, key, &mut findings) else {
        report.findings = findings.into_vec();
        return Err(Box::new(report));
    };
    report.signer = Some(crate::entry::lower_hex(file_key.as_bytes()));
    report.fingerprint = Some(crate::fingerprint(&file_key));
    report.read = true;
    // Stage 2: the plan.
    plan_stage::<S>(&file, &mut findings);
    // Stage 3: the cells.
    let checked = cells_stage::<S>(&file, &file_key, &mut findings);
    // Stage 4: the summary.
    let pairs: Vec<(&S::Cell, &S::Judgement)> = file
        .cells
        .iter()
        .zip(&checked.judgements)
        .filter_map(|(c, j)| j.as_ref().map(|j| (c, j)))
        .collect();
    let summary = summary_stage::<S>(&file, &pairs, &mut findings);
    report.judged = pairs.len();
    report.receipts = checked.receipts.iter().flatten().flatten().count();
    report.signed = checked.receipts_signed;
    report.ok = findings.is_empty();
    report.summary = Some(summary.clone());
    report.findings = findings.into_vec();
    if !report.ok {
        return Err(Box::new(report));
    }
    Ok(Verified {
        file,
        report,
        judgements: checked.judgements,
        receipts: checked.receipts,
        summary,
    })
}

/// Stage 1: the format and the signature. The key every receipt must be signed by, or `None`
/// (with the findings) when the file is read no further.
fn signature_stage<S: Scenario>(
    file: &ScenarioFile<S>,
    key: &KeyCheck,
    findings: &mut Findings,
) -> Option<ed25519_dalek::VerifyingKey> {
    if file.format != super::FORMAT || file.scenario != S::NAME {
        findings.push(Finding::mismatch(
            "format",
            Plan::BadParams.as_str(),
            "the file is not of this scenario's format",
            format!("{} {}", super::FORMAT, S::NAME),
            format!("{} {}", file.format, file.scenario),
        ));
    }
    let stated = match file_hash(file) {
        Ok(hash) => signature::check(&file.signature, &hash, key),
        Err(e) => Err(Box::new(Finding::new(
            "signature.hash",
            super::codes::Signature::HashMismatch.as_str(),
            e.to_string(),
        ))),
    };
    match stated {
        Ok(k) if findings.is_empty() => Some(k),
        Ok(_) => None,
        Err(f) => {
            findings.push(*f);
            None
        }
    }
}

/// Stage 2: the cells are the plan, in order.
fn plan_stage<S: Scenario>(file: &ScenarioFile<S>, findings: &mut Findings) {
    let plan = match S::plan(&file.params, file.cells.len()) {
        Ok(plan) => plan,
        Err(why) => {
            findings.push(Finding::new(
                "params",
                Plan::BadParams.as_str(),
                why.to_string(),
            ));
            return;
        }
    };
    if plan.len() != file.cells.len() {
        findings.push(Finding::mismatch(
            "cells",
            Plan::CellSetMismatch.as_str(),
            "the file holds another number of cells than its parameters plan",
            plan.len(),
            file.cells.len(),
        ));
    }
    let differing = plan
        .iter()
        .zip(&file.cells)
        .enumerate()
        .filter(|(_, (planned, cell))| S::planned(cell) != *planned);
    for (i, (planned, cell)) in differing {
        findings.push(Finding::mismatch(
            format!("cells[{i}]"),
            Plan::CellSetMismatch.as_str(),
            format!("cell {i} is not the cell the plan puts at this place"),
            shown(planned),
            shown(S::planned(cell)),
        ));
    }
}

/// What stage 3 derived: per cell its judgement and its tickets' receipt reports.
struct CheckedCells<J> {
    judgements: Vec<Option<J>>,
    receipts: Vec<Vec<Option<ReceiptReport>>>,
    receipts_signed: bool,
}

/// Stage 3: every cell's evidence bound, every judged cell re-judged.
fn cells_stage<S: Scenario>(
    file: &ScenarioFile<S>,
    file_key: &ed25519_dalek::VerifyingKey,
    findings: &mut Findings,
) -> CheckedCells<S::Judgement> {
    let mut out = CheckedCells {
        judgements: Vec::with_capacity(file.cells.len()),
        receipts: Vec::with_capacity(file.cells.len()),
        receipts_signed: true,
    };
    let pinned = KeyCheck::Pinned(*file_key);
    let signer = crate::entry::lower_hex(file_key.as_bytes());
    for (i, cell) in file.cells.iter().enumerate() {
        let evidence = S::evidence(cell);
        let harness = evidence.harness_error;
        if let Some(h) = harness {
            let blank = |s: &str| s.trim().is_empty();
            if blank(h.reason) || h.output.is_none_or(blank) {
                findings.push(Finding::new(
                    format!("cells[{i}].harness_error"),
                    Cells::HarnessErrorWithoutEvidence.as_str(),
                    format!(
                        "cell {i} is a harness error without its reason and the worker's output"
                    ),
                ));
            }
        }
        let mut reports = Vec::with_capacity(evidence.tickets.len());
        for relative in &evidence.tickets {
            let ticket = &Ticket {
                path: format!("cells[{i}].{}", relative.path),
                ..relative.clone()
            };
            // A receipt of no effect the gate could write is refused before it is checked: every
            // problem the check finds would quote its id.
            let shaped = ticket.receipt.filter(|b| {
                let ok = crate::entry::decode_lower_hex::<32>(&b.effect_id).is_some();
                if !ok {
                    out.receipts_signed = false;
                    findings.push(Finding::new(
                        format!("{}.receipt.effect_id", ticket.path),
                        Cells::ReceiptInvalid.as_str(),
                        format!(
                            "{}: the receipt's effect id is not 64 lowercase hex characters \
                             ({} bytes)",
                            ticket.path,
                            b.effect_id.len()
                        ),
                    ));
                }
                ok
            });
            let report = shaped.map(|b| verify_bundle(b, &pinned));
            let signed_by_file_key =
                |r: &ReceiptReport| r.signed == Some(true) && r.signer.as_ref() == Some(&signer);
            if report.as_ref().is_some_and(|r| !signed_by_file_key(r)) {
                out.receipts_signed = false;
            }
            bind_ticket(ticket, report.as_ref(), harness.is_some(), findings);
            bind_kill(ticket, findings);
            reports.push(report);
        }
        let judgement = if judged::<S>(cell) {
            rejudge::<S>(i, cell, &reports, findings)
        } else {
            if S::stated(cell).is_some() {
                findings.push(Finding::new(
                    format!("cells[{i}]"),
                    Cells::JudgementMismatch.as_str(),
                    format!("cell {i} is a harness error, yet states a judgement"),
                ));
            }
            None
        };
        out.judgements.push(judgement);
        out.receipts.push(reports);
    }
    out
}

/// A ticket's receipt verifies and is the ticket's: the same effect id and journal kinds, and
/// a status the receipt allows. A ticket of a gated column must carry one (unless the cell is a
/// harness error); a ticket that names a journal without a receipt is not bound.
fn bind_ticket(
    t: &Ticket<'_>,
    report: Option<&ReceiptReport>,
    harness_error: bool,
    findings: &mut Findings,
) {
    let not_bound = |what: String| {
        Finding::new(
            format!("{}.receipt", t.path),
            Cells::ReceiptNotBound.as_str(),
            what,
        )
    };
    let Some(report) = report else {
        if t.gated && !harness_error {
            findings.push(Finding::new(
                format!("{}.receipt", t.path),
                Cells::ReceiptMissing.as_str(),
                format!("{}: a ticket of a gated column carries no receipt", t.path),
            ));
        }
        if t.effect_id.is_some() || t.journal_kinds.is_some() {
            findings.push(not_bound(format!(
                "{}: names an effect or journal kinds, but carries no receipt to show them",
                t.path
            )));
        }
        return;
    };
    if !report.valid {
        findings.push(Finding::new(
            format!("{}.receipt", t.path),
            Cells::ReceiptInvalid.as_str(),
            format!(
                "{}: the receipt does not verify under the file's key",
                t.path
            ),
        ));
        for p in &report.problems {
            findings.push(Finding::from_problem(&format!("{}.receipt", t.path), p));
        }
    }
    if t.effect_id != Some(report.effect_id.as_str()) {
        findings.push(not_bound(format!(
            "{}: the ticket names another effect than its receipt",
            t.path
        )));
    }
    if t.journal_kinds != Some(report.journal_kinds.as_slice()) {
        findings.push(not_bound(format!(
            "{}: the ticket's journal kinds are not its receipt's",
            t.path
        )));
    }
    let code = report.refused.as_ref().and_then(|r| r.code.as_deref());
    let allowed = outcomes_for_final(report, code);
    if !allowed.iter().any(|s| s == t.status) {
        findings.push(Finding::mismatch(
            format!("{}.status", t.path),
            Cells::ReceiptNotBound.as_str(),
            format!("{}: the status is not one the receipt allows", t.path),
            allowed.join(" or "),
            t.status,
        ));
    }
}

/// A recorded kill is the worker's first exit, by SIGKILL, at the point it names; a first exit
/// by SIGKILL is a recorded kill.
fn bind_kill(t: &Ticket<'_>, findings: &mut Findings) {
    let sigkill_at = match t.first_exit {
        Some(Exit::Signal { signal, at }) if signal == SIGKILL => Some(at),
        _ => None,
    };
    let bound = match (t.killed_at, sigkill_at) {
        (Some(point), Some(at)) => at == Some(point),
        (None, None) => true,
        _ => false,
    };
    if !bound {
        findings.push(Finding::new(
            format!("{}.killed_at", t.path),
            Cells::KillNotBound.as_str(),
            format!(
                "{}: the recorded kill is not the worker's first exit by SIGKILL at that point",
                t.path
            ),
        ));
    }
}

/// The judgement the rules derive, compared with the stated one.
fn rejudge<S: Scenario>(
    i: usize,
    cell: &S::Cell,
    reports: &[Option<ReceiptReport>],
    findings: &mut Findings,
) -> Option<S::Judgement> {
    let refs: Vec<Option<&ReceiptReport>> = reports.iter().map(Option::as_ref).collect();
    let derived = match S::judge(cell, &refs) {
        Ok(j) => j,
        Err(problems) => {
            for mut f in problems {
                f.path = if f.path.is_empty() {
                    format!("cells[{i}]")
                } else {
                    format!("cells[{i}].{}", f.path)
                };
                f.code = Cells::GroundTruth.as_str().to_owned();
                findings.push(f);
            }
            return None;
        }
    };
    match S::stated(cell) {
        Some(stated) if *stated == derived => {}
        stated => findings.push(Finding::mismatch(
            format!("cells[{i}].judgement"),
            Cells::JudgementMismatch.as_str(),
            format!("cell {i}: the judgement is not what the rules derive"),
            shown(&derived),
            shown(&stated),
        )),
    }
    Some(derived)
}

/// Stage 4: the summary from the verifier's judgements, against the stated one.
fn summary_stage<S: Scenario>(
    file: &ScenarioFile<S>,
    judged: &[(&S::Cell, &S::Judgement)],
    findings: &mut Findings,
) -> S::Summary {
    let derived = S::summarize(judged);
    if derived != file.summary {
        findings.push(Finding::mismatch(
            "summary",
            SummaryCode::Mismatch.as_str(),
            "the summary is not what the verifier's own judgements give",
            shown(&derived),
            shown(&file.summary),
        ));
    }
    derived
}
