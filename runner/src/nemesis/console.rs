//! What a nemesis run prints on the terminal: its progress bar, the campaign's summary table,
//! what verifying the file found, and a replayed trial's ground truth as one line.

use crate::clock::ClockStart;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use verify::nemesis::NemesisFile;

/// What Stripe held after a trial, without its ids: every amount, and every creation time as
/// seconds after the clock's start (the same on any day the trial is replayed).
pub(super) fn amounts_line(g: &verify::results::GroundTruth, clock_start: ClockStart) -> String {
    let since = |t: i64| t - clock_start.unix();
    let credits: Vec<String> = g
        .case_credits
        .iter()
        .map(|c| format!("{} at +{}s", c.amount, since(c.created)))
        .collect();
    let invoices: Vec<String> = g
        .invoices
        .iter()
        .map(|i| {
            format!(
                "{} {} total {} starting balance {} due {} at +{}s",
                i.billing_reason.as_deref().unwrap_or("-"),
                i.status.as_deref().unwrap_or("-"),
                i.total,
                i.starting_balance,
                i.amount_due,
                since(i.created)
            )
        })
        .collect();
    let transactions: Vec<String> = g
        .balance_transactions
        .iter()
        .map(|t| format!("{} {}", t.kind, t.amount))
        .collect();
    let notes: Vec<String> = g
        .credit_notes
        .iter()
        .map(|n| format!("{} {}", n.amount, n.status))
        .collect();
    format!(
        "ground truth: balance {}; case credits [{}]; invoices [{}]; balance transactions [{}]; credit notes [{}]",
        g.customer_balance,
        credits.join(", "),
        invoices.join(", "),
        transactions.join(", "),
        notes.join(", ")
    )
}

/// What verifying the written file found, on the terminal.
pub(super) fn print_verified(report: &verify::nemesis::check::NemesisReport, signed: &str) {
    if report.ok {
        say!(
            "verify: ok ({} trials, {} receipts, {signed})",
            report.trials.unwrap_or(0),
            report.receipts.unwrap_or(0)
        );
    } else {
        eprintln!("verify: the nemesis file does NOT verify:");
        for f in report.findings.iter().take(10) {
            eprintln!("  {f}");
        }
    }
}

/// The trials' progress bar on a terminal (hidden elsewhere).
pub(super) fn progress(total: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials")
    {
        bar.set_style(style);
    }
    bar
}

/// The campaign's summary table: per nemesis and column, its trials, violations, under-credits
/// and settle times.
pub(super) fn print_summary(file: &NemesisFile, wall_s: f64) {
    say!("{} trials in {wall_s:.1} s (wall)", file.trials.len());
    say!(
        "  {:<18} {:<10} {:>6} {:>10} {:>9} {:>6} {:>6} {:>9} {:>7} {:>7} {:>7}",
        "nemesis",
        "column",
        "trials",
        "violations",
        "upper95",
        "under",
        "wrong",
        "AMBIGUOUS",
        "p50ms",
        "p95ms",
        "maxms"
    );
    for s in &file.summary {
        // Under-credits are derived from each trial (no summary field holds them).
        let under = file
            .trials
            .iter()
            .filter(|t| t.nemesis == s.nemesis && t.column == s.column && t.under_credit())
            .count();
        let o = |v: Option<u64>| v.map_or("-".to_owned(), |x| x.to_string());
        say!(
            "  {:<18} {:<10} {:>6} {:>10} {:>8.2}% {:>6} {:>6} {:>9} {:>7} {:>7} {:>7}{}",
            s.nemesis,
            s.column,
            s.trials,
            format!(
                "{}({}/{})",
                s.violations, s.violations_within, s.within_assumptions
            ),
            f64::from(s.within_upper95_ppm) / 10_000.0,
            under,
            s.wrong_answers,
            s.ambiguous,
            o(s.settle_p50_ms),
            o(s.settle_p95_ms),
            o(s.settle_max_ms),
            if s.harness_errors > 0 {
                format!("  HARNESS_ERROR {}", s.harness_errors)
            } else {
                String::new()
            }
        );
    }
}
