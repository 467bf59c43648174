//! Per-row decisions (`runner --decide per-row`): a decision that says it replays another cell's
//! (`replayed_from`) must be that cell's decision — same row, same amount, same decider, the
//! description with the deciding case's id and incident replaced by this case's — and the cell
//! it names must have decided itself. Linear in the cells.

use crate::finding::{code, Finding};
use crate::results::{Cell, Decision};
use std::collections::HashMap;

/// What the check needs of a cell (a whole [`Cell`], or the facts a streaming check keeps).
pub trait Row {
    /// Crash point, outage, column, repeat.
    fn labels(&self) -> (&str, &str, &str, u32);
    /// The case id and incident.
    fn case_ids(&self) -> (&str, &str);
    /// The decision, if one was saved.
    fn decision(&self) -> Option<&Decision>;
}

impl Row for Cell {
    fn labels(&self) -> (&str, &str, &str, u32) {
        (&self.crash, &self.outage, &self.column, self.repeat)
    }
    fn case_ids(&self) -> (&str, &str) {
        (&self.case.case_id, &self.case.incident)
    }
    fn decision(&self) -> Option<&Decision> {
        self.decision.as_ref()
    }
}

/// The label a `replayed_from` names: `crash/outage/column`, `#repeat` when above 0.
pub fn cell_label(c: &impl Row) -> String {
    let (crash, outage, column, repeat) = c.labels();
    let base = format!("{crash}/{outage}/{column}");
    if repeat > 0 {
        format!("{base}#{repeat}")
    } else {
        base
    }
}

/// Checks every replayed decision against the decision it names.
pub fn check<C: Row>(cells: &[C], findings: &mut Vec<Finding>) {
    // Most runs replay nothing: no label is built for them.
    let replays = |c: &C| c.decision().is_some_and(|d| d.replayed_from.is_some());
    if !cells.iter().any(replays) {
        return;
    }
    let by_label: HashMap<String, usize> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| (cell_label(c), i))
        .collect();
    for (i, cell) in cells.iter().enumerate() {
        let Some(d) = cell.decision() else { continue };
        let Some(from) = &d.replayed_from else {
            continue;
        };
        let path = format!("cells[{i}].decision.replayed_from");
        let mut fail = |message: String| {
            findings.push(Finding::new(path.clone(), code::FILE_INCONSISTENT, message));
        };
        let Some(source) = by_label.get(from).map(|&j| &cells[j]) else {
            fail(format!(
                "the decision replays cell {from:?}, which is not in the file"
            ));
            continue;
        };
        let Some(sd) = source.decision() else {
            fail(format!(
                "the decision replays cell {from:?}, which has no decision"
            ));
            continue;
        };
        let (sc, so, _, sr) = source.labels();
        let (cc, co, _, cr) = cell.labels();
        let same_row = (sc, so, sr) == (cc, co, cr);
        let (from_case, from_incident) = source.case_ids();
        let (to_case, to_incident) = cell.case_ids();
        let expected = sd
            .description
            .replace(from_case, to_case)
            .replace(from_incident, to_incident);
        if sd.replayed_from.is_some() {
            fail(format!("cell {from:?} replays a decision itself"));
        } else if !same_row {
            fail(format!("cell {from:?} is in another row"));
        } else if sd.amount != d.amount || sd.decider != d.decider {
            fail(format!(
                "the amount or decider differs from cell {from:?}'s decision"
            ));
        } else if expected != d.description {
            fail(format!(
                "the description is not cell {from:?}'s with this case's ids"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn committed_cells() -> Vec<Cell> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../results/billing_credit.json"
        );
        let bytes = std::fs::read(path).unwrap();
        crate::load::load_results(&bytes).unwrap().cells
    }

    /// Makes cell 1 a replay of cell 0 (same row in the committed run).
    fn replayed() -> Vec<Cell> {
        let mut cells = committed_cells();
        let (a, b) = (cells[0].clone(), &mut cells[1]);
        assert_eq!((&a.crash, &a.outage), (&b.crash, &b.outage));
        let source = a.decision.clone().unwrap();
        let d = b.decision.as_mut().unwrap();
        d.amount = source.amount;
        d.decider = source.decider.clone();
        d.description = source
            .description
            .replace(&a.case.case_id, &b.case.case_id)
            .replace(&a.case.incident, &b.case.incident);
        d.replayed_from = Some(cell_label(&a));
        cells
    }

    fn findings(cells: &[Cell]) -> Vec<Finding> {
        let mut f = Vec::new();
        check(cells, &mut f);
        f
    }

    #[test]
    fn a_faithful_replay_passes_and_every_unfaithful_one_is_named() {
        assert!(findings(&committed_cells()).is_empty());
        assert!(findings(&replayed()).is_empty());

        let mut cells = replayed();
        cells[1].decision.as_mut().unwrap().amount += 1;
        assert_eq!(findings(&cells)[0].path, "cells[1].decision.replayed_from");

        let mut cells = replayed();
        cells[1].decision.as_mut().unwrap().description.push('!');
        assert_eq!(findings(&cells).len(), 1);

        let mut cells = replayed();
        cells[1].decision.as_mut().unwrap().replayed_from =
            Some("before_send/nowhere/no_check".into());
        assert!(findings(&cells)[0].message.contains("not in the file"));

        // A cell of another row cannot be the source.
        let mut cells = replayed();
        let other = cells
            .iter()
            .position(|c| c.outage != cells[1].outage || c.crash != cells[1].crash)
            .unwrap();
        let label = cell_label(&cells[other]);
        cells[1].decision.as_mut().unwrap().replayed_from = Some(label);
        assert!(!findings(&cells).is_empty());
    }
}
