//! Stage 4, the file's structure from the cells' facts: the environment, the clock start, and
//! the cell set against the run's plan.

use crate::finding::{code as fcode, Finding};
use crate::results::ResultsFile;
use std::collections::HashSet;

use super::*;

pub(super) fn check_structure(
    file: &ResultsFile,
    cells: &[CellFacts],
    findings: &mut Vec<Finding>,
) {
    check_environment(file, findings);
    check_clock_start(file, cells, findings);
    let (rows, columns) = check_cell_set(file, cells, findings);
    // Sized once: rehashing a set of every cell as it grows took a third of this check.
    let mut seen = HashSet::with_capacity(cells.len());
    let mut cases = HashSet::with_capacity(cells.len());
    for (i, c) in cells.iter().enumerate() {
        if let Some(decider) = &c.decider {
            if *decider != file.environment.decider {
                findings.push(Finding::mismatch(
                    format!("cells[{i}].decision.decider"),
                    fcode::FILE_INCONSISTENT,
                    format!(
                        "cell {i}'s decision names another decider than the file's environment"
                    ),
                    describe_decider(&file.environment.decider),
                    describe_decider(decider),
                ));
            }
        }
        if !columns.contains(c.column.as_str()) {
            findings.push(Finding::new(
                format!("cells[{i}].column"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i} is in column {:?}, which the file's columns do not list",
                    c.column
                ),
            ));
        }
        if !rows.contains(&(c.crash.as_str(), c.outage.as_str())) {
            findings.push(Finding::new(
                format!("cells[{i}].crash"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i} is in row {}/{}, which the file's rows do not list",
                    c.crash, c.outage
                ),
            ));
        }
        if !seen.insert((
            c.crash.as_str(),
            c.outage.as_str(),
            c.column.as_str(),
            c.repeat,
        )) {
            findings.push(Finding::new(
                format!("cells[{i}]"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i} repeats row {}/{} column {} repeat {}",
                    c.crash, c.outage, c.column, c.repeat
                ),
            ));
        }
        if !cases.insert(c.case_id.as_str()) {
            findings.push(Finding::new(
                format!("cells[{i}].case.case_id"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i} reuses case {}, which another cell opened",
                    c.case_id
                ),
            ));
        }
    }
}

/// The cells must be exactly the run's plan: every planned (row, column) pair (the selection, or
/// rows x columns) with every repeat index in `0..repeats`, each once (duplicates are reported by
/// [`check_structure`]). Linear in the file, whatever the plan says: rows x columns is never
/// built (a cell is in it when its row and its column are listed), and the first missing cell
/// is searched for only as far as the cells present, so a plan larger than its cells could fill
/// is reported, not enumerated.
/// Returns the listed rows and columns, as sets.
pub(super) fn check_cell_set<'f>(
    file: &'f ResultsFile,
    cells: &[CellFacts],
    findings: &mut Vec<Finding>,
) -> (HashSet<(&'f str, &'f str)>, HashSet<&'f str>) {
    let mut bad = |path: String, message: String| {
        findings.push(Finding::new(path, fcode::CELL_SET_MISMATCH, message));
    };
    // Each listed row and column once, in plan order. A second listing is a finding: one for
    // all of them, naming the first (a finding per listing would be many times its text).
    let (mut rows, mut rows_once, mut again) = (HashSet::new(), Vec::new(), Vec::new());
    for (i, r) in file.rows.iter().enumerate() {
        if rows.insert((r.crash.as_str(), r.outage.as_str())) {
            rows_once.push((r.crash.as_str(), r.outage.as_str()));
        } else {
            again.push(i);
        }
    }
    if let Some(&i) = again.first() {
        let r = &file.rows[i];
        bad(
            format!("rows[{i}]"),
            format!(
                "row {}/{} is listed twice ({} listings repeat a row)",
                r.crash,
                r.outage,
                again.len()
            ),
        );
    }
    let (mut columns, mut columns_once, mut again) = (HashSet::new(), Vec::new(), Vec::new());
    for (i, c) in file.columns.iter().enumerate() {
        if columns.insert(c.as_str()) {
            columns_once.push(c.as_str());
        } else {
            again.push(i);
        }
    }
    if let Some(&i) = again.first() {
        bad(
            format!("columns[{i}]"),
            format!(
                "column {:?} is listed twice ({} listings repeat a column)",
                file.columns[i],
                again.len()
            ),
        );
    }
    if file.repeats == 0 {
        bad(
            "repeats".into(),
            "the run planned 0 repeats, so no cell can belong to it".into(),
        );
    }
    // The selected (crash, outage, column) triples, in plan order (empty: rows x columns).
    let mut selected = HashSet::new();
    for (i, s) in file.selected.iter().enumerate() {
        let t = (s.crash.as_str(), s.outage.as_str(), s.column.as_str());
        if !rows.contains(&(t.0, t.1)) || !columns.contains(t.2) {
            bad(
                format!("selected[{i}]"),
                format!(
                    "the selected cell {}/{}/{} is not in the file's rows and columns",
                    t.0, t.1, t.2
                ),
            );
        }
        if !selected.insert(t) {
            bad(
                format!("selected[{i}]"),
                format!("{}/{}/{} is selected twice", t.0, t.1, t.2),
            );
        }
    }
    let planned = |t: &(&str, &str, &str)| {
        if file.selected.is_empty() {
            rows.contains(&(t.0, t.1)) && columns.contains(t.2)
        } else {
            selected.contains(t)
        }
    };
    let mut present = HashSet::with_capacity(cells.len());
    for (i, c) in cells.iter().enumerate() {
        let t = (c.crash.as_str(), c.outage.as_str(), c.column.as_str());
        if !planned(&t) || c.repeat >= file.repeats {
            bad(
                format!("cells[{i}]"),
                format!(
                    "cell {i} ({}/{}/{} repeat {}) is not in the run's plan",
                    t.0, t.1, t.2, c.repeat
                ),
            );
        } else {
            present.insert((t, c.repeat));
        }
    }
    let pairs = if file.selected.is_empty() {
        rows.len() as u128 * columns.len() as u128
    } else {
        selected.len() as u128
    };
    let expected = pairs.saturating_mul(u128::from(file.repeats));
    if (present.len() as u128) < expected {
        // In plan order, each triple once; every step is a present cell until the first missing
        // one, so this stops within present.len() + 1 steps.
        let columns_once = &columns_once;
        let mut plan: Box<dyn Iterator<Item = (&str, &str, &str)>> =
            if file.selected.is_empty() {
                Box::new(rows_once.iter().flat_map(|&(crash, outage)| {
                    columns_once.iter().map(move |&c| (crash, outage, c))
                }))
            } else {
                // A triple selected twice is visited once.
                let mut visited = HashSet::new();
                Box::new(
                    file.selected
                        .iter()
                        .map(|s| (s.crash.as_str(), s.outage.as_str(), s.column.as_str()))
                        .filter(move |t| visited.insert(*t)),
                )
            };
        let missing = plan.find_map(|t| {
            (0..file.repeats)
                .find(|r| !present.contains(&(t, *r)))
                .map(|r| (t, r))
        });
        let named = missing.map_or_else(String::new, |(t, r)| {
            format!("; the first missing is {}/{}/{} repeat {r}", t.0, t.1, t.2)
        });
        bad(
            "cells".into(),
            format!(
                "the run planned {expected} cells, the file holds {} of them{named}",
                present.len()
            ),
        );
    }
    (rows, columns)
}

/// Backends and deciders a results file may name, so that a page can never be rendered from a
/// file that states something the runner cannot have run.
pub(super) const BACKENDS: [&str; 2] = ["emulator", "stripe_test_mode"];

pub(super) fn describe_decider(d: &crate::results::DeciderInfo) -> String {
    match &d.model {
        Some(model) => format!("{} ({model})", d.kind),
        None => d.kind.clone(),
    }
}

/// A recorded clock start is where every case's clock started: each case's first invoice was
/// created at that instant of its clock.
pub(super) fn check_clock_start(
    file: &ResultsFile,
    cells: &[CellFacts],
    findings: &mut Vec<Finding>,
) {
    let Some(start) = file.environment.clock_start else {
        return;
    };
    if let Some((i, c)) = cells
        .iter()
        .enumerate()
        .find(|(_, c)| c.clock_started.is_some_and(|t| t != start))
    {
        findings.push(Finding::mismatch(
            format!("cells[{i}].ground_truth.invoices"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!(
                "case {}: its first invoice was not created at the recorded clock start (environment.clock_start)",
                c.case_id
            ),
            start,
            c.clock_started.unwrap_or_default(),
        ));
    }
}

pub(super) fn check_environment(file: &ResultsFile, findings: &mut Vec<Finding>) {
    let env = &file.environment;
    if !BACKENDS.contains(&env.backend.as_str()) {
        findings.push(Finding::new(
            "environment.backend",
            fcode::FILE_INCONSISTENT,
            format!(
                "the backend {:?} is none of {}",
                env.backend,
                BACKENDS.join(", ")
            ),
        ));
    }
    let decider_ok = match (env.decider.kind.as_str(), &env.decider.model) {
        ("policy", None) => true,
        ("anthropic", Some(model)) => !model.trim().is_empty(),
        _ => false,
    };
    if !decider_ok {
        findings.push(Finding::new(
            "environment.decider",
            fcode::FILE_INCONSISTENT,
            format!(
                "the decider {} is neither the policy (no model) nor anthropic with a model",
                describe_decider(&env.decider)
            ),
        ));
    }
}
