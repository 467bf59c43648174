//! The facts a shared_cap run's prose may use (`held.C` over the cells whose kill of worker `a`
//! landed, `apart.C` the others, `weakest.C` the row it held least in), and its verdict in one line: every number from
//! the summary and the figures `verify` derived.

use super::SummaryRow;
use crate::facts::{Fact, Facts};
use verify::figures::shared_cap::{CapFigures, CapRow, RowHeld};
use verify::shared_cap::record::CapResults;
use verify::shared_cap::{CAP_CENTS, PAYMENT_CENTS, REFUND_CENTS};

/// Each column's held count over the cells whose kill landed, and the cells counted apart, in
/// one sentence.
pub(super) fn verdict_line(summary: &[SummaryRow]) -> String {
    let held: Vec<String> = summary
        .iter()
        .map(|r| format!("{} {}/{}", r.s.column, r.held_landed, r.landed))
        .collect();
    let apart: Vec<String> = summary
        .iter()
        .map(|r| format!("{} {}", r.s.column, r.apart))
        .collect();
    format!(
        "The cap held, over the cells whose kill of worker a landed: {}. Cells where a ended \
         before its crash point, counted apart: {}.",
        held.join(", "),
        apart.join(", ")
    )
}

/// The fact table of a run: the amounts, and per column its ratios and the rows it went over.
pub(super) fn facts(file: &CapResults, figures: &CapFigures) -> Facts {
    let mut f = Facts::new();
    f.insert("payment".into(), Fact::Cents(PAYMENT_CENTS));
    f.insert("cap".into(), Fact::Cents(CAP_CENTS));
    f.insert("refund".into(), Fact::Cents(REFUND_CENTS));
    f.insert("cells".into(), Fact::Int(i64::from(figures.cells())));
    f.insert(
        "stripe_api_version".into(),
        Fact::Text(file.environment.stripe_api_version.clone()),
    );
    for c in figures.columns() {
        let (s, judged) = (c.summary(), c.judged());
        f.insert(
            format!("held.{}", s.column),
            Fact::Ratio(c.held_landed(), c.landed()),
        );
        f.insert(
            format!("apart.{}", s.column),
            Fact::Int(i64::from(judged.saturating_sub(c.landed()))),
        );
        f.insert(format!("weakest.{}", s.column), weakest(c.weakest_row()));
        f.insert(
            format!("killed.{}", s.column),
            Fact::Ratio(s.killed, judged),
        );
        f.insert(
            format!("over_cap.{}", s.column),
            Fact::Int(i64::from(s.over_cap)),
        );
        f.insert(
            format!("answers.{}", s.column),
            Fact::Ratio(s.answers_matched, judged),
        );
        f.insert(
            format!("proof.{}", s.column),
            Fact::Ratio(s.proved, s.tickets),
        );
        f.insert(format!("over_rows.{}", s.column), over_rows(c.over_rows()));
    }
    f
}

/// The rows (crash point, overlap) in which a column went over the cap, as `verify` found
/// them in file order, or `none`.
fn over_rows(rows: &[CapRow]) -> Fact {
    let rows: Vec<String> = rows
        .iter()
        .map(|r| format!("{}, {}", r.crash_point, r.overlap))
        .collect();
    Fact::Text(if rows.is_empty() {
        "none".into()
    } else {
        rows.join("; ")
    })
}

/// A column's weakest row in words: the row, its held cells over its landed ones and the 95%
/// interval over its repeats; `n/a` where no kill landed.
pub(super) fn weakest(row: Option<&RowHeld>) -> Fact {
    Fact::Text(row.map_or("n/a".into(), |r| {
        let (lower, upper) = r.interval95_ppm;
        format!(
            "{}, {}: {}/{} ({})",
            r.row.crash_point,
            r.row.overlap,
            r.held,
            r.landed,
            crate::format::interval(lower, upper, r.landed)
        )
    }))
}
