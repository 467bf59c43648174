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
use crate::report_view::{Report, CANDIDATES};
use std::collections::BTreeMap;
use std::fmt;
use verify::figures::billing_credit::{ColumnFigures, ResultsFigures, Row};
use verify::results::ResultsFile;
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

/// Rows as the facts name them, `crash / outage`.
fn row_labels(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|r| format!("{} / {}", r.crash, r.outage))
        .collect()
}

/// Items with their counts, `item (n)`, or `none`.
fn counted(items: &BTreeMap<String, u32>) -> Fact {
    let v: Vec<String> = items.iter().map(|(k, n)| format!("{k} ({n})")).collect();
    list_or_none(&v)
}

fn ms_or_na(v: Option<u64>) -> Fact {
    v.map_or(Fact::Text("n/a".into()), Fact::Ms)
}

/// Compute every fact of a report: the figures `verify` derived from the verified file
/// (`figures`), formatted; the environment as the pages label it (`report`).
pub fn compute(f: &ResultsFile, figures: &ResultsFigures, report: &Report) -> Facts {
    let mut m = Facts::new();
    environment_facts(&mut m, f, report);
    matrix_facts(&mut m, f, figures);
    for (col, c) in figures.columns() {
        column_count_facts(&mut m, col, c);
        column_timing_facts(&mut m, col, c);
        column_outcome_facts(&mut m, col, c);
    }
    differ_facts(&mut m, f, figures);
    row_column_facts(&mut m, figures);
    candidate_facts(&mut m, figures);
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
fn matrix_facts(m: &mut Facts, f: &ResultsFile, figures: &ResultsFigures) {
    put(m, "rows", Fact::Int(f.rows.len() as i64));
    put(m, "columns", Fact::Int(f.columns.len() as i64));
    put(m, "cells", Fact::Int(f.cells.len() as i64));
    put(m, "judged", Fact::Int(i64::from(figures.judged())));
    put(
        m,
        "harness_errors",
        Fact::Int(i64::from(figures.harness_errors())),
    );
    put(m, "repeats", Fact::Int(i64::from(figures.repeats())));
    put(m, "sigkills", Fact::Int(i64::from(figures.sigkilled())));
    put(m, "receipts", Fact::Int(i64::from(figures.receipts())));
    put(
        m,
        "receipts_verified",
        Fact::Int(i64::from(figures.receipts_verified())),
    );
    let claim = &f.environment.claim;
    put(m, "max_in_flight", Fact::Ms(claim.max_in_flight_ms));
    put(m, "claim_ttl", Fact::Ms(claim.claim_ttl_ms));
    if let Some(cap) = figures.approved() {
        put(m, "approved", Fact::Cents(cap));
    }
}

/// A column's ratios and counts (from `verify`'s summary) and the rows where it broke the
/// invariant.
fn column_count_facts(m: &mut Facts, col: &str, c: &ColumnFigures) {
    let s = c.summary();
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
        Fact::Int(i64::from(c.violated())),
    );
    put(
        m,
        format!("violated_rows.{col}"),
        list_or_none(&row_labels(c.violated_rows())),
    );
    put(
        m,
        format!("harness_errors.{col}"),
        Fact::Int(i64::from(s.harness_errors)),
    );
}

/// A column's timings over its judged cells: the medians `verify` derived, the outage's median,
/// and the extremes.
fn column_timing_facts(m: &mut Facts, col: &str, c: &ColumnFigures) {
    let s = c.summary();
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
        ms_or_na(c.median_outage_ms()),
    );
    put(m, format!("min_crash.{col}"), ms_or_na(c.min_crash_ms()));
    put(m, format!("max_crash.{col}"), ms_or_na(c.max_crash_ms()));
    put(
        m,
        format!("min_restart.{col}"),
        ms_or_na(c.min_restart_ms()),
    );
    put(
        m,
        format!("max_restart.{col}"),
        ms_or_na(c.max_restart_ms()),
    );
}

/// A column's final statuses, vias and record kinds, and how many cells were sent, refused or
/// ambiguous.
fn column_outcome_facts(m: &mut Facts, col: &str, c: &ColumnFigures) {
    put(m, format!("outcomes.{col}"), counted(c.outcomes()));
    put(m, format!("vias.{col}"), counted(c.vias()));
    put(m, format!("sent.{col}"), Fact::Int(i64::from(c.sent())));
    put(
        m,
        format!("refused.{col}"),
        Fact::Int(i64::from(c.refused())),
    );
    put(
        m,
        format!("ambiguous.{col}"),
        Fact::Int(i64::from(c.ambiguous())),
    );
    let records: Vec<&str> = c.records().iter().map(String::as_str).collect();
    put(m, format!("record.{col}"), Fact::Text(records.join(", ")));
}

/// For every ordered pair of columns, the paired cells where they differ on the invariant.
fn differ_facts(m: &mut Facts, f: &ResultsFile, figures: &ResultsFigures) {
    for a in &f.columns {
        for b in &f.columns {
            let Some(d) = figures.differ(a, b) else {
                continue;
            };
            put(m, format!("differ.{a}.{b}"), Fact::Int(d.count() as i64));
            put(
                m,
                format!("differ_rows.{a}.{b}"),
                list_or_none(&row_labels(d.rows())),
            );
        }
    }
}

/// Per row and column: `credited.<crash>.<outage>.<column>` (case credits Stripe holds, summed
/// over repeats) and `outcome.<crash>.<outage>.<column>` (final statuses with counts; the
/// status alone for one cell).
fn row_column_facts(m: &mut Facts, figures: &ResultsFigures) {
    for rc in figures.row_columns() {
        let key = format!("{}.{}.{}", rc.row.crash, rc.row.outage, rc.column);
        put(m, format!("credited.{key}"), Fact::Int(rc.credited));
        let outcome = match (rc.cells, rc.outcomes.keys().next()) {
            (1, Some(only)) => Fact::Text(only.clone()),
            _ => counted(&rc.outcomes),
        };
        put(m, format!("outcome.{key}"), outcome);
    }
}

/// Per premise candidate, the rows where it was right and those where it was wrong.
fn candidate_facts(m: &mut Facts, figures: &ResultsFigures) {
    for (name, t) in CANDIDATES.iter().zip(figures.candidate_totals()) {
        put(
            m,
            format!("candidate_right.{name}"),
            Fact::Ratio(t.right, t.rows),
        );
        put(
            m,
            format!("candidate_wrong_rows.{name}"),
            list_or_none(&row_labels(&t.wrong_rows)),
        );
    }
}
