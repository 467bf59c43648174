//! The facts a shared_cap run's prose may use, and its verdict in one line: every number from
//! the summary and the figures `verify` derived.

use super::SummaryRow;
use crate::facts::{Fact, Facts};
use verify::figures::shared_cap::{CapFigures, CapRow};
use verify::shared_cap::record::CapResults;
use verify::shared_cap::{CAP_CENTS, PAYMENT_CENTS, REFUND_CENTS};

/// Each column's held count, in one sentence.
pub(super) fn verdict_line(summary: &[SummaryRow]) -> String {
    let parts: Vec<String> = summary
        .iter()
        .map(|SummaryRow { s, judged, .. }| {
            format!(
                "{} held the cap in {}/{judged} (worker a killed in {} of them)",
                s.column, s.held, s.killed
            )
        })
        .collect();
    format!("{}.", parts.join("; "))
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
        f.insert(format!("held.{}", s.column), Fact::Ratio(s.held, judged));
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
