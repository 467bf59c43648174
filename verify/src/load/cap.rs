//! shared_cap results and nemesis files read a part at a time, as results and nemesis files are
//! ([`super::parts`]): the head strictly, each cell or trial kept as text until it is checked,
//! then read on its own, checked and dropped. Read whole, their receipts' entries were built as
//! trees of values for every cell at once (a 1 MB gzip of 26 cells whose receipts held 31,000
//! one-member objects each took 242 MB, under a pin too).

use super::members::Members;
use super::parts::{scan_element, split_file};
use super::*;
use crate::shared_cap::nemesis::record::{CapNemesisFile, CapTrial};
use crate::shared_cap::record::{CapCell, CapResults};

/// A shared_cap results file read for checking a cell at a time
/// ([`crate::shared_cap::check::check_text`]).
pub struct CapText<'a> {
    /// Every member of the file but its cells, read strictly (`head.cells` is empty).
    pub head: CapResults,
    /// Each cell's JSON text, in file order, read by [`read_cap_cell`] when it is checked.
    pub cells: Vec<&'a RawValue>,
}

/// A shared_cap nemesis file read for checking a trial at a time
/// ([`crate::shared_cap::nemesis::check::check_text`]).
pub struct CapNemesisText<'a> {
    /// Every member of the file but its trials, read strictly (`head.trials` is empty).
    pub head: CapNemesisFile,
    /// Each trial's JSON text, in file order, read by [`read_cap_trial`] when it is checked.
    pub trials: Vec<&'a RawValue>,
}

/// A shared_cap results file split into its head and its cells' text.
pub(super) fn cap_text<'t>(split: &mut Members<'t>) -> Option<CapText<'t>> {
    let format = crate::shared_cap::check::FORMAT;
    let (head, cells) = split_file::<CapResults>(split, format, "cells")?;
    Some(CapText {
        head,
        cells: cells.texts,
    })
}

/// A shared_cap nemesis file split into its head and its trials' text (its plan's labels are
/// not checked here).
pub(super) fn cap_nemesis_text<'t>(split: &mut Members<'t>) -> Option<CapNemesisText<'t>> {
    let format = crate::shared_cap::nemesis::FORMAT;
    let (head, trials) = split_file::<CapNemesisFile>(split, format, "trials")?;
    Some(CapNemesisText {
        head,
        trials: trials.texts,
    })
}

/// One cell's text, read as [`load_document`] reads it inside the file: duplicate keys, limits,
/// the typed shape, its labels, its receipts' effect ids. The error is only a verdict: a caller
/// reads the whole file again to name it.
pub fn read_cap_cell(index: usize, raw: &RawValue) -> Result<CapCell, LoadError> {
    let text = raw.get();
    scan_element("cells", index, text)?;
    let cell = typed::<CapCell>(text)?;
    cell_shape(&format!("cells[{index}]"), &cell)?;
    Ok(cell)
}

/// One trial's text, read as [`read_cap_cell`] reads a cell.
pub fn read_cap_trial(index: usize, raw: &RawValue) -> Result<CapTrial, LoadError> {
    let text = raw.get();
    scan_element("trials", index, text)?;
    let trial = typed::<CapTrial>(text)?;
    trial_shape(&format!("trials[{index}]"), &trial)?;
    Ok(trial)
}

/// A shared_cap cell at `at`: its labels known, every receipt's effect id of the right shape.
pub(super) fn cell_shape(at: &str, c: &CapCell) -> Result<(), LoadError> {
    crate::shared_cap::plan::labels_known(c).map_err(|(field, message)| LoadError::Shape {
        path: format!("{at}.{field}"),
        message,
    })?;
    tickets_shape(at, c)
}

/// A shared_cap nemesis trial at `at`: its labels known, every receipt's effect id of the right
/// shape.
pub(super) fn trial_shape(at: &str, t: &CapTrial) -> Result<(), LoadError> {
    crate::shared_cap::nemesis::check::labels_known(t).map_err(|(field, message)| {
        LoadError::Shape {
            path: format!("{at}.{field}"),
            message,
        }
    })?;
    tickets_shape(&format!("{at}.cell"), &t.cell)
}

/// A shared_cap nemesis file's plan: its labels known.
pub(super) fn plan_shape(file: &CapNemesisFile) -> Result<(), LoadError> {
    crate::shared_cap::nemesis::check::plan_known(&file.plan).map_err(|(field, message)| {
        LoadError::Shape {
            path: format!("plan.{field}"),
            message,
        }
    })
}

/// Every receipt of cell `c` (at `at`) has an effect id of the right shape.
fn tickets_shape(at: &str, c: &CapCell) -> Result<(), LoadError> {
    for (j, t) in c.tickets.iter().enumerate() {
        if let Some(b) = &t.receipt {
            let path = format!("{at}.tickets[{j}].receipt.effect_id");
            effect_id_shape(&path, &b.effect_id, 64)?;
        }
    }
    Ok(())
}
