//! Stage 5, the summary: derived from the verifier's own judgements by the scenario's summary rule
//! and compared with the one the file states. Its output is the derived summary.

use crate::finding::{code as fcode, Finding};
use crate::results::{ColumnSummary, ResultsFile};
use crate::scenarios::billing_credit;
use std::collections::{BTreeMap, BTreeSet};

use super::*;

pub(super) fn check_summary(
    file: &ResultsFile,
    facts: &[CellFacts],
    findings: &mut Vec<Finding>,
) -> BTreeMap<String, ColumnSummary> {
    // The stated columns that are listed (a set no larger than the summary).
    let listed: BTreeSet<&str> = file
        .columns
        .iter()
        .filter(|c| file.summary.contains_key(*c))
        .map(String::as_str)
        .collect();
    for name in file.summary.keys() {
        if !listed.contains(name.as_str()) {
            findings.push(Finding::new(
                format!("summary.{name}"),
                fcode::FILE_INCONSISTENT,
                format!("the summary has column {name:?}, which the file's columns do not list"),
            ));
        }
    }
    // Derived from the verifier's own judgements, by the one summary rule (linear time).
    let tallies = facts.iter().map(|c| billing_credit::Tally {
        column: &c.column,
        judged: c.ran_to_judgement,
        timings: c.timings,
        held: c.judged.0,
        answer_matches: c.judged.1,
        proof: c.judged.2,
    });
    // A listed column the summary has no entry for is one finding for all of them; only the
    // columns the summary states are derived (so the derived summary is no larger than the
    // stated one, however many columns the file lists).
    let (stated_columns, unstated): (Vec<String>, Vec<&String>) = {
        let (with, without): (Vec<&String>, Vec<&String>) = file
            .columns
            .iter()
            .partition(|c| file.summary.contains_key(*c));
        (with.into_iter().cloned().collect(), without)
    };
    if let Some(first) = unstated.first() {
        findings.push(Finding::new(
            format!("summary.{first}"),
            fcode::SUMMARY_MISMATCH,
            format!(
                "the summary has no entry for column {first} ({} listed columns have none)",
                unstated.len()
            ),
        ));
    }
    let derived = billing_credit::summarize_tallies(&stated_columns, tallies);
    for (column, d) in &derived {
        let Some(stated) = file.summary.get(column) else {
            continue;
        };
        let opt = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |x| x.to_string());
        let pairs: [(&str, String, String); 7] = [
            ("cells", d.cells.to_string(), stated.cells.to_string()),
            (
                "harness_errors",
                d.harness_errors.to_string(),
                stated.harness_errors.to_string(),
            ),
            ("held", d.held.to_string(), stated.held.to_string()),
            (
                "answer_matches",
                d.answer_matches.to_string(),
                stated.answer_matches.to_string(),
            ),
            ("proof", d.proof.to_string(), stated.proof.to_string()),
            (
                "median_crash_to_settled_ms",
                opt(d.median_crash_to_settled_ms),
                opt(stated.median_crash_to_settled_ms),
            ),
            (
                "median_restart_to_settled_ms",
                opt(d.median_restart_to_settled_ms),
                opt(stated.median_restart_to_settled_ms),
            ),
        ];
        for (field, ours, theirs) in pairs {
            if ours != theirs {
                findings.push(Finding::mismatch(
                    format!("summary.{column}.{field}"),
                    fcode::SUMMARY_MISMATCH,
                    format!("the summary's {field} for column {column} is not what its cells give"),
                    ours,
                    theirs,
                ));
            }
        }
    }
    derived
}
