//! Progress: an indicatif bar when stderr is a terminal, one plain line per cell otherwise.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use verify::results::Cell;

/// Reports cells as they finish; the bar's message names the cells still running.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: AtomicUsize,
    /// Cells started and not yet ended (labels, in start order), and how many have started.
    running: Mutex<(Vec<String>, usize)>,
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
            running: Mutex::new((Vec::new(), 0)),
        }
    }

    /// A cell started.
    pub fn cell_started(&self, label: &str) {
        if let Ok(mut running) = self.running.lock() {
            running.0.push(label.to_owned());
            running.1 += 1;
            self.show_running(&running.0, running.1);
        }
    }

    /// A cell ended without a judgement (it could not run, or the run was interrupted).
    pub fn cell_ended(&self, label: &str) {
        if let Ok(mut running) = self.running.lock() {
            if let Some(i) = running.0.iter().position(|l| l == label) {
                running.0.remove(i);
            }
            self.show_running(&running.0, running.1);
        }
    }

    fn show_running(&self, running: &[String], started: usize) {
        if let Some(bar) = &self.bar {
            bar.set_message(running_message(
                running,
                self.total - started.min(self.total),
            ));
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
                bar.println(line);
            }
            None => eprintln!("{line}"),
        }
        self.cell_ended(label);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The bar's message: the cells still running, and how many wait for a free job. Once none waits
/// (the long wait at the end of a run), it says the run waits for those cells.
pub fn running_message(running: &[String], queued: usize) -> String {
    let names = match running {
        [] => String::new(),
        [one] => one.clone(),
        [first, second] => format!("{first}, {second}"),
        [first, second, rest @ ..] => format!("{first}, {second} and {} more", rest.len()),
    };
    match (running.len(), queued) {
        (0, _) => String::new(),
        (n, 0) => format!(
            "waiting for {n} cell{}: {names}",
            if n == 1 { "" } else { "s" }
        ),
        (_, q) => format!("running {names}; {q} to start"),
    }
}

/// One-line description of a judged cell.
pub fn describe(cell: &Cell) -> String {
    if cell.is_harness_error() {
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

#[cfg(test)]
mod tests {
    use super::running_message;

    fn labels(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_long_wait_names_the_cells_still_running_not_the_last_finished() {
        assert_eq!(
            running_message(&labels(&["a/b/interlock", "c/d/no_check"]), 0),
            "waiting for 2 cells: a/b/interlock, c/d/no_check"
        );
        assert_eq!(
            running_message(&labels(&["a/b/interlock"]), 0),
            "waiting for 1 cell: a/b/interlock"
        );
        assert_eq!(
            running_message(&labels(&["a", "b", "c", "d"]), 3),
            "running a, b and 2 more; 3 to start"
        );
        assert_eq!(running_message(&[], 0), "");
    }
}
