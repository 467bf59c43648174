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
use verify::results::{median_ms, ColumnSummary, ResultsFile};

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
    let mut put = |k: String, v: Fact| {
        m.insert(k, v);
    };
    let e = &report.env;
    put("scenario".into(), Fact::Text(f.scenario.clone()));
    put("backend".into(), Fact::Text(e.backend_label.clone()));
    put("decider".into(), Fact::Text(e.decider_label.clone()));
    put(
        "stripe_api_version".into(),
        Fact::Text(e.stripe_api_version.clone()),
    );
    put("run_date".into(), Fact::Text(e.generated.clone()));
    put("git_commit".into(), Fact::Text(e.git_commit.clone()));
    put("signer".into(), Fact::Text(e.signer.clone()));
    put(
        "clock_start".into(),
        Fact::Text(e.clock_start_label.clone()),
    );
    put("rows".into(), Fact::Int(f.rows.len() as i64));
    put("columns".into(), Fact::Int(f.columns.len() as i64));
    put("cells".into(), Fact::Int(f.cells.len() as i64));
    put("judged".into(), Fact::Int(report.judged as i64));
    put(
        "harness_errors".into(),
        Fact::Int(report.harness_errors as i64),
    );
    put("repeats".into(), Fact::Int(i64::from(report.repeats)));
    put("sigkills".into(), Fact::Int(report.sigkilled as i64));
    put("receipts".into(), Fact::Int(report.receipts.len() as i64));
    put(
        "receipts_verified".into(),
        Fact::Int(report.receipts.iter().filter(|r| r.summary.ok()).count() as i64),
    );
    let claim = &f.environment.claim;
    put("max_in_flight".into(), Fact::Ms(claim.max_in_flight_ms));
    put("claim_ttl".into(), Fact::Ms(claim.claim_ttl_ms));
    let caps: BTreeSet<i64> = f.cells.iter().map(|c| c.case.approval.max_cents).collect();
    if caps.len() == 1 {
        if let Some(cap) = caps.first() {
            put("approved".into(), Fact::Cents(*cap));
        }
    }

    let by_col = judged_by_column(f);
    for (col, cells) in &by_col {
        let Some(s) = summary.get(*col) else {
            continue;
        };
        let count = |p: &dyn Fn(&&verify::results::Cell) -> bool| {
            cells.iter().filter(|c| p(c)).count() as u32
        };
        put(format!("held.{col}"), Fact::Ratio(s.held, s.cells));
        put(
            format!("answers.{col}"),
            Fact::Ratio(s.answer_matches, s.cells),
        );
        put(format!("proof.{col}"), Fact::Ratio(s.proof, s.cells));
        put(format!("held_count.{col}"), Fact::Int(i64::from(s.held)));
        put(format!("proof_count.{col}"), Fact::Int(i64::from(s.proof)));
        put(format!("cells.{col}"), Fact::Int(i64::from(s.cells)));
        put(
            format!("violated.{col}"),
            Fact::Int(i64::from(s.cells.saturating_sub(s.held))),
        );
        let violated: Vec<String> = distinct(
            cells
                .iter()
                .filter(|c| !c.invariant_held)
                .map(|c| row_label(c, 1)),
        );
        put(format!("violated_rows.{col}"), list_or_none(&violated));
        put(
            format!("harness_errors.{col}"),
            Fact::Int(i64::from(s.harness_errors)),
        );
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
            format!("median_crash.{col}"),
            ms_or_na(s.median_crash_to_settled_ms),
        );
        put(
            format!("median_restart.{col}"),
            ms_or_na(s.median_restart_to_settled_ms),
        );
        put(format!("median_outage.{col}"), ms_or_na(median_ms(&outage)));
        put(
            format!("min_crash.{col}"),
            ms_or_na(crash.iter().copied().min()),
        );
        put(
            format!("max_crash.{col}"),
            ms_or_na(crash.iter().copied().max()),
        );
        put(
            format!("min_restart.{col}"),
            ms_or_na(restart.iter().copied().min()),
        );
        put(
            format!("max_restart.{col}"),
            ms_or_na(restart.iter().copied().max()),
        );
        put(
            format!("outcomes.{col}"),
            counted(cells.iter().map(|c| c.outcome.clone())),
        );
        put(
            format!("vias.{col}"),
            counted(cells.iter().filter_map(|c| c.via.clone())),
        );
        put(
            format!("sent.{col}"),
            Fact::Int(i64::from(count(&|c| crate::report_view::sent(&c.outcome)))),
        );
        put(
            format!("refused.{col}"),
            Fact::Int(i64::from(count(&|c| c.outcome.starts_with("REFUSED")))),
        );
        put(
            format!("ambiguous.{col}"),
            Fact::Int(i64::from(count(&|c| c.outcome == "AMBIGUOUS"))),
        );
        let records: BTreeSet<&str> = cells.iter().map(|c| c.record.as_str()).collect();
        put(
            format!("record.{col}"),
            Fact::Text(records.into_iter().collect::<Vec<_>>().join(", ")),
        );
    }
    for a in &f.columns {
        for b in &f.columns {
            if a == b {
                continue;
            }
            if let Some(rows) = differing_rows(f, a, b, 1) {
                put(format!("differ.{a}.{b}"), Fact::Int(rows.len() as i64));
                put(
                    format!("differ_rows.{a}.{b}"),
                    list_or_none(&distinct(rows.into_iter())),
                );
            }
        }
    }
    // Per row and column: `credited.<crash>.<outage>.<column>` (case credits Stripe holds, summed
    // over repeats) and `outcome.<crash>.<outage>.<column>` (final statuses with counts).
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
            put(format!("credited.{key}"), Fact::Int(credited));
            let outcome = if cells.len() == 1 {
                Fact::Text(cells.iter().map(|c| c.outcome.clone()).collect())
            } else {
                counted(cells.iter().map(|c| c.outcome.clone()))
            };
            put(format!("outcome.{key}"), outcome);
        }
    }
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
            format!("candidate_right.{name}"),
            Fact::Ratio(right, cand.len() as u32),
        );
        put(format!("candidate_wrong_rows.{name}"), list_or_none(&wrong));
    }
    m
}
