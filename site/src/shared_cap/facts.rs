//! The facts a shared_cap run's prose may use, and its verdict in one line: every number from
//! the summary `verify` derived and the verified cells.

use super::SummaryRow;
use crate::facts::{Fact, Facts};
use verify::shared_cap::record::CapResults;
use verify::shared_cap::{CAP_CENTS, PAYMENT_CENTS, REFUND_CENTS};

/// Each column's held count, in one sentence.
pub(super) fn verdict_line(summary: &[SummaryRow]) -> String {
    let parts: Vec<String> = summary
        .iter()
        .map(|SummaryRow { s, judged }| {
            format!(
                "{} held the cap in {}/{judged} (worker a killed in {} of them)",
                s.column, s.held, s.killed
            )
        })
        .collect();
    format!("{}.", parts.join("; "))
}

/// The fact table of a run: the amounts, and per column its ratios and the rows it went over.
pub(super) fn facts(summary: &[SummaryRow], file: &CapResults) -> Facts {
    let mut f = Facts::new();
    f.insert("payment".into(), Fact::Cents(PAYMENT_CENTS));
    f.insert("cap".into(), Fact::Cents(CAP_CENTS));
    f.insert("refund".into(), Fact::Cents(REFUND_CENTS));
    f.insert("cells".into(), Fact::Int(file.cells.len() as i64));
    f.insert(
        "stripe_api_version".into(),
        Fact::Text(file.environment.stripe_api_version.clone()),
    );
    for SummaryRow { s, judged } in summary {
        let judged = *judged;
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
        f.insert(
            format!("over_rows.{}", s.column),
            over_rows(file, &s.column),
        );
    }
    f
}

/// The rows (crash point, overlap) in which `column` went over the cap, in file order, or `none`.
pub(super) fn over_rows(file: &CapResults, column: &str) -> Fact {
    let mut rows: Vec<String> = Vec::new();
    for c in file
        .cells
        .iter()
        .filter(|c| c.column == column && c.judged() && c.truth.refunded_cents() > CAP_CENTS)
    {
        let row = format!("{}, {}", c.crash_point, c.overlap);
        if !rows.contains(&row) {
            rows.push(row);
        }
    }
    Fact::Text(if rows.is_empty() {
        "none".into()
    } else {
        rows.join("; ")
    })
}
