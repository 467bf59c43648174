//! View data derived from a verified results file: everything a page shows, already formatted.
//!
//! Nothing here reads a file or judges a receipt; it only arranges what [`crate::verification`]
//! accepted. Where the data would make a page say something untrue (a judged cell whose worker
//! was not SIGKILLed, a decider claimed as a model without a model name), building the model fails.

mod candidates;
mod environment;
mod error;
mod ids;
mod receipts;

pub use candidates::{candidate_rows, CandidateCell, CandidateRow, CANDIDATES};
pub use environment::{backend_words, clock_start_label, decider_words, ran_line, EnvView};
pub use error::ViewError;
pub use ids::IdsView;
pub use receipts::{EntryView, ReceiptView};

use crate::format::{dollars, ratio, seconds};
use crate::verification::Verified;
use environment::env_view;
use ids::ids_view;
use receipts::receipt_views;
use std::collections::BTreeSet;
use verify::figures::billing_credit::{CellAt, ResultsFigures};
use verify::results::{Cell, ResultsFile};
use verify::scenarios::Scenario;

/// Everything the pages of one scenario show.
#[derive(Debug, Clone)]
pub struct Report {
    /// Scenario name, e.g. `billing_credit`.
    pub scenario: String,
    /// Page title.
    pub title: String,
    /// File name of the published results JSON (beside the pages, under `data/`).
    pub json_name: String,
    /// Where and how the run happened.
    pub env: EnvView,
    /// The run's backend and decider in one line, shown under every page's header.
    pub ran: String,
    /// Columns in display order.
    pub columns: Vec<String>,
    /// The main table.
    pub rows: Vec<RowView>,
    /// Per-column summary.
    pub summaries: Vec<SummaryView>,
    /// Rows where hand_check and interlock differ on the invariant; `None` when a column is missing.
    pub differing: Option<Vec<String>>,
    /// Premise candidates table.
    pub candidates: Vec<CandidateRow>,
    /// Decisions, one per cell.
    pub decisions: Vec<DecisionView>,
    /// Ids, one per cell.
    pub ids: Vec<IdsView>,
    /// One page per receipt.
    pub receipts: Vec<ReceiptView>,
    /// Cells in the file (one row of the Ids page each).
    pub cell_count: u32,
    /// Cells that carry a receipt (one page each).
    pub receipt_count: u32,
    /// Cells whose worker was SIGKILLed (signal 9).
    pub sigkilled: usize,
    /// Cells judged (not HARNESS_ERROR).
    pub judged: usize,
    /// Cells that are HARNESS_ERROR.
    pub harness_errors: usize,
    /// Which checker verified the file.
    pub checker: String,
    /// Largest repeat count of any cell (1 when every cell ran once).
    pub repeats: u32,
    /// Whether the page comparing this run with real Stripe's answers exists.
    pub emulator_vs_stripe: bool,
    /// Whether a verified nemesis run of the scenario is published (the Nemesis page).
    pub nemesis: bool,
    /// The matrix's verdict in one sentence, from the facts ([`crate::overview::verdict_line`]).
    pub verdict_line: String,
    /// The nemesis run in one sentence, when one is published ([`crate::overview::nemesis_line`]).
    pub nemesis_line: Option<String>,
    /// The report's opening: what was tested and found, how to check it, the definitions and
    /// the outcomes figure ([`crate::opening`]).
    pub opening: crate::opening::Opening,
}

/// One row of the main table.
#[derive(Debug, Clone)]
pub struct RowView {
    /// `before_send / renewal`.
    pub label: String,
    /// Crash point.
    pub crash: String,
    /// Outage.
    pub outage: String,
    /// Per column (in [`Report::columns`] order), the cells of that column in this row (one per repeat).
    pub cells: Vec<Vec<CellView>>,
    /// The distinct wanted credit counts of the row's judged cells, as `verify` found them.
    pub wants: BTreeSet<u32>,
}

/// One cell of the main table.
#[derive(Debug, Clone)]
pub struct CellView {
    /// HTML id on the Ids page.
    pub anchor: String,
    /// `crash/outage/column` (plus `#repeat` when repeated).
    pub label: String,
    /// Column.
    pub column: String,
    /// Final status.
    pub outcome: String,
    /// Why the harness could not run the cell as designed.
    pub harness_error: Option<String>,
    /// The cell ran to a judgement (verify's [`Cell::judged`]).
    pub judged: bool,
    /// Interlock `via`.
    pub via: Option<String>,
    /// Case credits in Stripe.
    pub credits: u32,
    /// Their total.
    pub credits_dollars: String,
    /// Wanted count.
    pub want_count: u32,
    /// Wanted total.
    pub want_dollars: String,
    /// Invariant held.
    pub held: bool,
    /// Answer matches Stripe.
    pub answer: bool,
    /// The column's record proves what happened.
    pub proof: bool,
    /// Kind of record (`signed_chain`, `plain_log`, `none`).
    pub record: String,
    /// Crash to settled.
    pub crash_s: Option<String>,
    /// Restart to settled.
    pub restart_s: Option<String>,
    /// Link to the receipt page, relative to the scenario directory.
    pub receipt_href: Option<String>,
}

/// One column's summary line.
#[derive(Debug, Clone)]
pub struct SummaryView {
    /// Column.
    pub column: String,
    /// `k/n`.
    pub held: String,
    /// `k/n`.
    pub answers: String,
    /// `k/n`.
    pub proof: String,
    /// Median crash to settled.
    pub median_crash: String,
    /// Median restart to settled.
    pub median_restart: String,
    /// HARNESS_ERROR cells not counted.
    pub harness_errors: u32,
}

/// One decision.
#[derive(Debug, Clone)]
pub struct DecisionView {
    /// Cell label.
    pub label: String,
    /// Who decided.
    pub decider: String,
    /// Amount, e.g. `1000 cents ($10)`; `None` when no decision was saved.
    pub amount: Option<String>,
    /// The description the decider wrote.
    pub description: String,
}

/// Build the view of one verified results file. `json_name` is the file name it is published under.
pub fn build(verified: &Verified, json_name: &str) -> Result<Report, ViewError> {
    let f = verified.file();
    let figures = verified.figures();
    let env = env_view(f, figures.replayed())?;
    check_cells(f)?;
    let repeats = figures.repeats();
    let receipts = receipt_views(verified, repeats)?;
    let rows = row_views(f, figures);
    let summaries = summary_views(verified)?;
    let differing = figures.differ("hand_check", "interlock").map(|d| {
        d.cells()
            .iter()
            .map(|c| cell_row_label(c, repeats))
            .collect()
    });
    let decisions = decision_views(f, repeats, &env.decider_label);
    let ids = f
        .cells
        .iter()
        .map(|c| ids_view(verified, c, repeats))
        .collect();
    Ok(Report {
        scenario: f.scenario.clone(),
        title: title(&f.scenario),
        json_name: json_name.to_owned(),
        ran: ran_line(&f.environment)?,
        env,
        columns: f.columns.clone(),
        rows,
        summaries,
        differing,
        candidates: candidate_rows(figures.candidates()),
        decisions,
        ids,
        receipts,
        cell_count: figures.cells(),
        receipt_count: figures.receipts(),
        sigkilled: figures.sigkilled() as usize,
        judged: figures.judged() as usize,
        harness_errors: figures.harness_errors() as usize,
        checker: verified.checker().to_owned(),
        repeats,
        emulator_vs_stripe: false,
        nemesis: false,
        verdict_line: String::new(),
        nemesis_line: None,
        opening: crate::opening::Opening::default(),
    })
}

/// Refuse cells a page would misstate: a judged cell whose worker did not end by SIGKILL, a
/// cell outside the file's columns or rows.
fn check_cells(f: &ResultsFile) -> Result<(), ViewError> {
    if let Some(c) = f
        .cells
        .iter()
        .find(|c| c.judged() && c.worker_exit_signal != Some(9))
    {
        return Err(ViewError::NotSigkilled {
            cell: label(c, 2),
            signal: c.worker_exit_signal,
            code: c.worker_exit_code,
        });
    }
    for c in &f.cells {
        if !f.columns.contains(&c.column) {
            return Err(ViewError::UnknownColumn {
                cell: label(c, 2),
                column: c.column.clone(),
            });
        }
        if !f
            .rows
            .iter()
            .any(|r| r.crash == c.crash && r.outage == c.outage)
        {
            return Err(ViewError::NotInRows { cell: label(c, 2) });
        }
    }
    Ok(())
}

/// Link to a cell's receipt page, relative to the scenario directory.
fn receipt_href(c: &Cell) -> Option<String> {
    c.receipt
        .as_ref()
        .map(|b| format!("receipts/{}.html", b.effect_id))
}

/// The main table: per row, per column, the row's cells of that column.
fn row_views(f: &ResultsFile, figures: &ResultsFigures) -> Vec<RowView> {
    let repeats = figures.repeats();
    f.rows
        .iter()
        .zip(figures.row_wants())
        .map(|(r, wants)| RowView {
            wants: wants.clone(),
            label: format!("{} / {}", r.crash, r.outage),
            crash: r.crash.clone(),
            outage: r.outage.clone(),
            cells: f
                .columns
                .iter()
                .map(|col| {
                    f.cells
                        .iter()
                        .filter(|c| c.crash == r.crash && c.outage == r.outage && &c.column == col)
                        .map(|c| cell_view(c, repeats, receipt_href(c)))
                        .collect()
                })
                .collect(),
        })
        .collect()
}

/// Each column's summary line, from the summary `verify` derived.
fn summary_views(verified: &Verified) -> Result<Vec<SummaryView>, ViewError> {
    let columns = verified.figures().columns();
    verified
        .file()
        .columns
        .iter()
        .map(|col| {
            let s = columns
                .get(col)
                .map(|c| c.summary())
                .ok_or_else(|| ViewError::NoSummary(col.clone()))?;
            Ok(SummaryView {
                column: col.clone(),
                held: ratio(s.held, s.cells),
                answers: ratio(s.answer_matches, s.cells),
                proof: ratio(s.proof, s.cells),
                median_crash: s.median_crash_to_settled_ms.map_or("n/a".into(), seconds),
                median_restart: s.median_restart_to_settled_ms.map_or("n/a".into(), seconds),
                harness_errors: s.harness_errors,
            })
        })
        .collect()
}

/// One decision per cell; a cell without a saved decision names the run's decider.
fn decision_views(f: &ResultsFile, repeats: u32, run_decider: &str) -> Vec<DecisionView> {
    f.cells
        .iter()
        .map(|c| match &c.decision {
            Some(d) => DecisionView {
                label: label(c, repeats),
                decider: decider_words(&d.decider.kind, d.decider.model.as_deref()),
                amount: Some(format!("{} cents ({})", d.amount, dollars(d.amount))),
                description: d.description.clone(),
            },
            None => DecisionView {
                label: label(c, repeats),
                decider: run_decider.to_owned(),
                amount: None,
                description: "no decision was saved".into(),
            },
        })
        .collect()
}

/// The page title of a scenario.
pub fn title(scenario: &str) -> String {
    match Scenario::named(scenario) {
        Some(Scenario::BillingCredit) => {
            format!("Scenario {scenario}: goodwill credit vs a billing run")
        }
        _ => format!("Scenario {scenario}"),
    }
}

/// `crash/outage/column`, plus `#repeat` when cells were repeated.
pub fn label(c: &Cell, repeats: u32) -> String {
    if repeats > 1 {
        format!("{}/{}/{}#{}", c.crash, c.outage, c.column, c.repeat)
    } else {
        format!("{}/{}/{}", c.crash, c.outage, c.column)
    }
}

/// Row label of a cell, `crash / outage` (plus `#repeat` when repeated).
pub fn row_label(c: &Cell, repeats: u32) -> String {
    if repeats > 1 {
        format!("{} / {} #{}", c.crash, c.outage, c.repeat)
    } else {
        format!("{} / {}", c.crash, c.outage)
    }
}

/// The HTML id of a cell on the Ids page.
pub fn anchor(c: &Cell) -> String {
    format!("cell-{}-{}-{}-{}", c.crash, c.outage, c.column, c.repeat)
}

fn cell_view(c: &Cell, repeats: u32, receipt_href: Option<String>) -> CellView {
    let t = c.timings;
    CellView {
        anchor: anchor(c),
        label: label(c, repeats),
        column: c.column.clone(),
        outcome: c.outcome.clone(),
        judged: c.judged(),
        harness_error: c.harness_error.clone().or_else(|| {
            c.is_harness_error()
                .then(|| "no detail recorded".to_owned())
        }),
        via: c.via.clone(),
        credits: c.ground_truth.case_credit_count,
        credits_dollars: dollars(c.ground_truth.case_credit_cents),
        want_count: c.want.count,
        want_dollars: dollars(c.want.cents),
        held: c.invariant_held,
        answer: c.answer_matches,
        proof: c.proof,
        record: c.record.clone(),
        crash_s: t.map(|t| seconds(t.crash_to_settled_ms)),
        restart_s: t.map(|t| seconds(t.restart_to_settled_ms)),
        receipt_href,
    }
}

/// Row label of a differing cell `verify` named, as [`row_label`] writes it.
fn cell_row_label(c: &CellAt, repeats: u32) -> String {
    if repeats > 1 {
        format!("{} / {} #{}", c.row.crash, c.row.outage, c.repeat)
    } else {
        format!("{} / {}", c.row.crash, c.row.outage)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn verified(f: ResultsFile) -> Verified {
        Verified::checked_for_test(f, "test")
    }

    fn synthetic() -> ResultsFile {
        synthetic::generate(&synthetic::Spec::default())
    }

    #[test]
    fn the_main_table_has_every_row_and_column() {
        let r = build(&verified(synthetic()), "billing_credit.json").unwrap();
        assert_eq!(r.rows.len(), 6);
        assert!(r
            .rows
            .iter()
            .all(|row| row.cells.len() == 3 && row.cells.iter().all(|c| c.len() == 1)));
        assert_eq!((r.judged, r.sigkilled, r.harness_errors), (18, 18, 0));
        assert_eq!(r.receipts.len(), 6);
        assert_eq!(r.differing, Some(vec![]));
        assert!(
            r.env.backend_label.contains("emulator") && !r.env.backend_label.starts_with("Stripe")
        );
        assert!(r.env.decider_label.contains("no model"));
    }

    #[test]
    fn candidates_follow_the_original_rule() {
        let mut f = synthetic();
        // after_send: our own credit moves the balance at the crash instant in one cell.
        let cell = f
            .cells
            .iter_mut()
            .find(|c| c.crash == "after_send" && c.outage == "renewal")
            .unwrap();
        cell.observations.crash.as_mut().unwrap().customer_balance = -1000;
        let rows = candidate_rows(verified(f).figures().candidates());
        let row = rows
            .iter()
            .find(|r| r.label == "after_send / renewal")
            .unwrap();
        let balance = &row.cells[0];
        assert_eq!(balance.refuses_at_crash.as_deref(), Some("1/3"));
        assert_eq!(balance.refuses_at_restart, "0/3");
        assert!(
            balance.right,
            "not refusing at restart is right when credit is wanted"
        );
        assert!(balance.values.contains("0 -> -1000 -> 0") && balance.values.contains(" / "));
        let billing = rows
            .iter()
            .find(|r| r.label == "before_send / billing_credit")
            .unwrap();
        assert_eq!(billing.want, "0");
        let incident = &billing.cells[2];
        assert_eq!(incident.refuses_at_restart, "3/3");
        assert!(incident.right);
        assert!(incident.refuses_at_crash.is_none());
    }

    #[test]
    fn a_harness_error_is_shown_not_judged() {
        let mut f = synthetic();
        let c = &mut f.cells[0];
        c.outcome = verify::scenarios::billing_credit::HARNESS_ERROR.into();
        c.harness_error = Some("worker exited with code 1: boom".into());
        c.worker_exit_signal = None;
        c.worker_exit_code = Some(1);
        let r = build(&verified(f), "x.json").unwrap();
        assert_eq!((r.judged, r.harness_errors, r.sigkilled), (17, 1, 17));
        let cell = &r.rows[0].cells[0][0];
        assert_eq!(
            cell.harness_error.as_deref(),
            Some("worker exited with code 1: boom")
        );
        assert_eq!(r.ids[0].worker_exit, "exit code 1");
    }

    #[test]
    fn the_page_cannot_claim_a_crash_or_a_model_that_did_not_happen() {
        let mut f = synthetic();
        f.cells[3].worker_exit_signal = Some(15);
        let e = build(&verified(f), "x.json").unwrap_err().to_string();
        assert!(e.contains("did not end by SIGKILL"), "{e}");

        let mut f = synthetic();
        f.environment.decider.kind = "anthropic".into();
        f.environment.decider.model = None;
        assert!(build(&verified(f), "x.json")
            .unwrap_err()
            .to_string()
            .contains("names no model"));

        let mut f = synthetic();
        f.environment.decider.kind = "anthropic".into();
        f.environment.decider.model = Some("claude-haiku-4-5-20251001".into());
        let r = build(&verified(f), "x.json").unwrap();
        assert!(r.env.decider_label.contains("claude-haiku-4-5-20251001"));

        let mut f = synthetic();
        f.environment.decider.model = Some("some-model".into());
        let r = build(&verified(f), "x.json").unwrap();
        assert!(
            !r.env.decider_label.contains("some-model"),
            "the policy ran: no model is named"
        );

        let mut f = synthetic();
        f.environment.backend = "stripe_live".into();
        assert!(build(&verified(f), "x.json").is_err());

        let mut f = synthetic();
        f.environment.backend = "stripe_test_mode".into();
        assert!(build(&verified(f), "x.json")
            .unwrap()
            .env
            .backend_label
            .starts_with("Stripe test mode"));
    }

    #[test]
    fn a_refusal_names_the_value_the_page_cannot_show() {
        let mut f = synthetic();
        f.environment.backend = "stripe_live".into();
        assert_eq!(
            build(&verified(f), "x.json").unwrap_err().to_string(),
            "environment.backend \"stripe_live\" is neither `emulator` nor `stripe_test_mode`"
        );
        let mut f = synthetic();
        f.environment.journal = Some("sqlite".into());
        assert_eq!(
            build(&verified(f), "x.json").unwrap_err().to_string(),
            "environment.journal \"sqlite\" is not `postgresql` (absent means JSONL files)"
        );
    }
}
