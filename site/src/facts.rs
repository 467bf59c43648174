//! The named facts prose may use: every number a Markdown file states comes from this table,
//! computed from the verified results file. Every build writes the full table, with values, to
//! `data/<scenario>.facts.json` beside the pages.
//!
//! Names are dotted; `C` is a column, `A.B` two different columns, `R` a row as
//! `<crash>.<outage>`, `K` a premise candidate:
//!
//! | fact | type | meaning |
//! |---|---|---|
//! | `scenario`, `backend`, `decider`, `stripe_api_version`, `run_date`, `git_commit`, `signer`, `clock_start` | text | the environment, labelled as on the pages |
//! | `rows`, `columns`, `cells`, `judged`, `harness_errors`, `repeats`, `sigkills` | integer | matrix size; `sigkills` = judged cells whose worker ended by signal 9 |
//! | `receipts`, `receipts_verified` | integer | receipts in the file / that verified at build time |
//! | `max_in_flight`, `claim_ttl` | duration | the gate's settings |
//! | `approved` | money | the approval cap (only when every case has the same) |
//! | `held.C`, `answers.C`, `proof.C` | ratio | judged cells of the column that held / matched Stripe / could prove |
//! | `held_count.C`, `proof_count.C`, `cells.C`, `violated.C`, `harness_errors.C` | integer | the same as counts |
//! | `violated_rows.C` | text | distinct rows where the column broke the invariant, or `none` |
//! | `median_crash.C`, `median_restart.C`, `median_outage.C`, `min_crash.C`, `max_crash.C`, `min_restart.C`, `max_restart.C` | duration | timings over judged cells |
//! | `outcomes.C`, `vias.C`, `record.C` | text | distinct final statuses / vias (with counts) / record kinds |
//! | `sent.C`, `refused.C`, `ambiguous.C` | integer | cells whose status says sent / starts with REFUSED / is AMBIGUOUS |
//! | `differ.A.B`, `differ_rows.A.B` | integer, text | paired cells where A and B differ on the invariant, and their rows |
//! | `credited.R.C`, `outcome.R.C` | integer, text | case credits Stripe holds for that row and column (over repeats), its final status(es) |
//! | `candidate_right.K`, `candidate_wrong_rows.K` | ratio, text | rows where candidate K was right, and the rows where it was wrong |

use crate::format::{dollars, seconds};
use crate::report_view::{
    candidate_rows, differing_rows, judged_by_column, row_label, Report, CANDIDATES,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use verify::results::{median_ms, Cell, ColumnSummary, ResultsFile};

/// A fact's value. Comparisons are only defined between values of the same type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// A count or other integer.
    Int(i64),
    /// `k/n`.
    Ratio(u32, u32),
    /// A duration in milliseconds, shown in seconds.
    Ms(u64),
    /// Money in cents, shown in dollars.
    Cents(i64),
    /// Text (labels, lists).
    Text(String),
}

impl Fact {
    /// The type's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Fact::Int(_) => "integer",
            Fact::Ratio(..) => "ratio",
            Fact::Ms(_) => "duration",
            Fact::Cents(_) => "money",
            Fact::Text(_) => "text",
        }
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fact::Int(n) => write!(f, "{n}"),
            Fact::Ratio(k, n) => write!(f, "{k}/{n}"),
            Fact::Ms(ms) => f.write_str(&seconds(*ms)),
            Fact::Cents(c) => f.write_str(&dollars(*c)),
            Fact::Text(t) => f.write_str(t),
        }
    }
}

/// The fact table of one report.
pub type Facts = BTreeMap<String, Fact>;

fn list_or_none(items: &[String]) -> Fact {
    Fact::Text(if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    })
}

/// Distinct items, in first-seen order.
fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn counted(items: impl Iterator<Item = String>) -> Fact {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for i in items {
        *m.entry(i).or_default() += 1;
    }
    let v: Vec<String> = m.into_iter().map(|(k, n)| format!("{k} ({n})")).collect();
    list_or_none(&v)
}

fn ms_or_na(v: Option<u64>) -> Fact {
    v.map_or(Fact::Text("n/a".into()), Fact::Ms)
}

/// Compute every fact of a report. The per-column counts and medians are the summary `verify`
/// derived (`summary`); the rest are views of the verified cells that `verify` does not state.
pub fn compute(
    f: &ResultsFile,
    summary: &BTreeMap<String, ColumnSummary>,
    report: &Report,
) -> Facts {
    let mut m = Facts::new();
    environment_facts(&mut m, f, report);
    matrix_facts(&mut m, f, report);
    for (col, cells) in &judged_by_column(f) {
        let Some(s) = summary.get(*col) else {
            continue;
        };
        column_count_facts(&mut m, col, s, cells);
        column_timing_facts(&mut m, col, s, cells);
        column_outcome_facts(&mut m, col, cells);
    }
    differ_facts(&mut m, f);
    row_column_facts(&mut m, f);
    candidate_facts(&mut m, f);
    m
}

fn put(m: &mut Facts, k: impl Into<String>, v: Fact) {
    m.insert(k.into(), v);
}

/// The environment, labelled as on the pages.
fn environment_facts(m: &mut Facts, f: &ResultsFile, report: &Report) {
    let e = &report.env;
    put(m, "scenario", Fact::Text(f.scenario.clone()));
    put(m, "backend", Fact::Text(e.backend_label.clone()));
    put(m, "decider", Fact::Text(e.decider_label.clone()));
    put(
        m,
        "stripe_api_version",
        Fact::Text(e.stripe_api_version.clone()),
    );
    put(m, "run_date", Fact::Text(e.generated.clone()));
    put(m, "git_commit", Fact::Text(e.git_commit.clone()));
    put(m, "signer", Fact::Text(e.signer.clone()));
    put(m, "clock_start", Fact::Text(e.clock_start_label.clone()));
}

/// The matrix's size, its receipts, the gate's settings and the approval cap.
fn matrix_facts(m: &mut Facts, f: &ResultsFile, report: &Report) {
    put(m, "rows", Fact::Int(f.rows.len() as i64));
    put(m, "columns", Fact::Int(f.columns.len() as i64));
    put(m, "cells", Fact::Int(f.cells.len() as i64));
    put(m, "judged", Fact::Int(report.judged as i64));
    put(m, "harness_errors", Fact::Int(report.harness_errors as i64));
    put(m, "repeats", Fact::Int(i64::from(report.repeats)));
    put(m, "sigkills", Fact::Int(report.sigkilled as i64));
    put(m, "receipts", Fact::Int(report.receipts.len() as i64));
    put(
        m,
        "receipts_verified",
        Fact::Int(report.receipts.iter().filter(|r| r.summary.ok()).count() as i64),
    );
    let claim = &f.environment.claim;
    put(m, "max_in_flight", Fact::Ms(claim.max_in_flight_ms));
    put(m, "claim_ttl", Fact::Ms(claim.claim_ttl_ms));
    let caps: BTreeSet<i64> = f.cells.iter().map(|c| c.case.approval.max_cents).collect();
    if caps.len() == 1 {
        if let Some(cap) = caps.first() {
            put(m, "approved", Fact::Cents(*cap));
        }
    }
}

/// A column's ratios and counts (from `verify`'s summary) and the rows where it broke the
/// invariant.
fn column_count_facts(m: &mut Facts, col: &str, s: &ColumnSummary, cells: &[&Cell]) {
    put(m, format!("held.{col}"), Fact::Ratio(s.held, s.cells));
    put(
        m,
        format!("answers.{col}"),
        Fact::Ratio(s.answer_matches, s.cells),
    );
    put(m, format!("proof.{col}"), Fact::Ratio(s.proof, s.cells));
    put(m, format!("held_count.{col}"), Fact::Int(i64::from(s.held)));
    put(
        m,
        format!("proof_count.{col}"),
        Fact::Int(i64::from(s.proof)),
    );
    put(m, format!("cells.{col}"), Fact::Int(i64::from(s.cells)));
    put(
        m,
        format!("violated.{col}"),
        Fact::Int(i64::from(s.cells.saturating_sub(s.held))),
    );
    let violated: Vec<String> = distinct(
        cells
            .iter()
            .filter(|c| !c.invariant_held)
            .map(|c| row_label(c, 1)),
    );
    put(m, format!("violated_rows.{col}"), list_or_none(&violated));
    put(
        m,
        format!("harness_errors.{col}"),
        Fact::Int(i64::from(s.harness_errors)),
    );
}

/// A column's timings over its judged cells: the medians `verify` derived, the outage's median,
/// and the extremes.
fn column_timing_facts(m: &mut Facts, col: &str, s: &ColumnSummary, cells: &[&Cell]) {
    let crash: Vec<u64> = cells
        .iter()
        .filter_map(|c| c.timings.map(|t| t.crash_to_settled_ms))
        .collect();
    let restart: Vec<u64> = cells
        .iter()
        .filter_map(|c| c.timings.map(|t| t.restart_to_settled_ms))
        .collect();
    let outage: Vec<u64> = cells
        .iter()
        .filter_map(|c| c.timings.map(|t| t.outage_ms))
        .collect();
    put(
        m,
        format!("median_crash.{col}"),
        ms_or_na(s.median_crash_to_settled_ms),
    );
    put(
        m,
        format!("median_restart.{col}"),
        ms_or_na(s.median_restart_to_settled_ms),
    );
    put(
        m,
        format!("median_outage.{col}"),
        ms_or_na(median_ms(&outage)),
    );
    put(
        m,
        format!("min_crash.{col}"),
        ms_or_na(crash.iter().copied().min()),
    );
    put(
        m,
        format!("max_crash.{col}"),
        ms_or_na(crash.iter().copied().max()),
    );
    put(
        m,
        format!("min_restart.{col}"),
        ms_or_na(restart.iter().copied().min()),
    );
    put(
        m,
        format!("max_restart.{col}"),
        ms_or_na(restart.iter().copied().max()),
    );
}

/// A column's final statuses, vias and record kinds, and how many cells were sent, refused or
/// ambiguous.
fn column_outcome_facts(m: &mut Facts, col: &str, cells: &[&Cell]) {
    let count = |p: &dyn Fn(&&Cell) -> bool| cells.iter().filter(|c| p(c)).count() as u32;
    put(
        m,
        format!("outcomes.{col}"),
        counted(cells.iter().map(|c| c.outcome.clone())),
    );
    put(
        m,
        format!("vias.{col}"),
        counted(cells.iter().filter_map(|c| c.via.clone())),
    );
    put(
        m,
        format!("sent.{col}"),
        Fact::Int(i64::from(count(&|c| crate::report_view::sent(&c.outcome)))),
    );
    put(
        m,
        format!("refused.{col}"),
        Fact::Int(i64::from(count(&|c| c.outcome.starts_with("REFUSED")))),
    );
    put(
        m,
        format!("ambiguous.{col}"),
        Fact::Int(i64::from(count(&|c| c.outcome == "AMBIGUOUS"))),
    );
    let records: BTreeSet<&str> = cells.iter().map(|c| c.record.as_str()).collect();
    put(
        m,
        format!("record.{col}"),
        Fact::Text(records.into_iter().collect::<Vec<_>>().join(", ")),
    );
}

/// For every ordered pair of columns, the paired cells where they differ on the invariant.
fn differ_facts(m: &mut Facts, f: &ResultsFile) {
    for a in &f.columns {
        for b in &f.columns {
            if a == b {
                continue;
            }
            if let Some(rows) = differing_rows(f, a, b, 1) {
                put(m, format!("differ.{a}.{b}"), Fact::Int(rows.len() as i64));
                put(
                    m,
                    format!("differ_rows.{a}.{b}"),
                    list_or_none(&distinct(rows.into_iter())),
                );
            }
        }
    }
}

/// Per row and column: `credited.<crash>.<outage>.<column>` (case credits Stripe holds, summed
/// over repeats) and `outcome.<crash>.<outage>.<column>` (final statuses with counts).
fn row_column_facts(m: &mut Facts, f: &ResultsFile) {
    for row in &f.rows {
        for col in &f.columns {
            let cells: Vec<_> = f
                .cells
                .iter()
                .filter(|c| c.crash == row.crash && c.outage == row.outage && &c.column == col)
                .filter(|c| c.judged())
                .collect();
            if cells.is_empty() {
                continue;
            }
            let key = format!("{}.{}.{col}", row.crash, row.outage);
            let credited: i64 = cells
                .iter()
                .map(|c| i64::from(c.ground_truth.case_credit_count))
                .sum();
            put(m, format!("credited.{key}"), Fact::Int(credited));
            let outcome = if cells.len() == 1 {
                Fact::Text(cells.iter().map(|c| c.outcome.clone()).collect())
            } else {
                counted(cells.iter().map(|c| c.outcome.clone()))
            };
            put(m, format!("outcome.{key}"), outcome);
        }
    }
}

/// Per premise candidate, the rows where it was right and those where it was wrong.
fn candidate_facts(m: &mut Facts, f: &ResultsFile) {
    let cand = candidate_rows(f);
    for (i, name) in CANDIDATES.iter().enumerate() {
        let right = cand
            .iter()
            .filter(|r| r.cells.get(i).is_some_and(|c| c.right))
            .count() as u32;
        let wrong: Vec<String> = cand
            .iter()
            .filter(|r| r.cells.get(i).is_some_and(|c| !c.right))
            .map(|r| r.label.clone())
            .collect();
        put(
            m,
            format!("candidate_right.{name}"),
            Fact::Ratio(right, cand.len() as u32),
        );
        put(
            m,
            format!("candidate_wrong_rows.{name}"),
            list_or_none(&wrong),
        );
    }
}
