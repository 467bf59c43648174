//! Progress: an indicatif bar when stderr is a terminal, one plain line per cell otherwise.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use verify::results::Cell;

/// Reports cells as they finish.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: AtomicUsize,
}

impl Progress {
    /// A progress reporter for `total` cells; a bar only if stderr is a terminal.
    pub fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells  {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress {
            bar,
            total,
            done: AtomicUsize::new(0),
        }
    }

    /// A line above the bar (or on stderr).
    pub fn println(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// A cell finished.
    pub fn cell_done(&self, label: &str, cell: &Cell) {
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let line = format!(
            "[{n:>width$}/{}] {label}: {}",
            self.total,
            describe(cell),
            width = self.total.to_string().len()
        );
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.set_message(label.to_string());
                bar.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// One-line description of a judged cell.
pub fn describe(cell: &Cell) -> String {
    if cell.outcome == verify::billing_credit::HARNESS_ERROR {
        let why = cell
            .harness_error
            .as_deref()
            .and_then(|h| h.lines().next())
            .unwrap_or("");
        return format!("HARNESS_ERROR: {why}");
    }
    let via = cell
        .via
        .as_deref()
        .map(|v| format!(" via {v}"))
        .unwrap_or_default();
    let timing = cell
        .timings
        .map(|t| {
            format!(
                "; {:.2}s crash to settled ({:.2}s after restart)",
                t.crash_to_settled_ms as f64 / 1000.0,
                t.restart_to_settled_ms as f64 / 1000.0
            )
        })
        .unwrap_or_default();
    format!(
        "{}{via}; {} case credit(s) (want {}); {}; answer {}; proof {}; worker signal {}{timing}",
        cell.outcome,
        cell.ground_truth.case_credit_count,
        cell.want.count,
        if cell.invariant_held {
            "held"
        } else {
            "VIOLATED"
        },
        if cell.answer_matches {
            "matches"
        } else {
            "CONTRADICTS Stripe"
        },
        if cell.proof { "yes" } else { "no" },
        cell.worker_exit_signal
            .map(|s| s.to_string())
            .unwrap_or_else(|| "none".into()),
    )
}
