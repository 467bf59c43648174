//! Results and nemesis files read a part at a time: the head strictly, each cell or trial kept
//! as text until it is checked.

use super::members::{ElementGroup, Elements, Members};
use super::*;

/// A results file read for checking a group of cells at a time
/// ([`crate::check::verify_results_text`]): never held as typed data all at once.
pub struct ResultsText<'a> {
    /// Every member of the file but its cells, read strictly (`head.cells` is empty).
    pub head: ResultsFile,
    /// Each cell's JSON text, in file order, read by [`read_cell`] when it is checked.
    pub cells: Vec<&'a RawValue>,
    /// The groups of cells checked together, covering `cells` once, in order.
    pub groups: Vec<ElementGroup>,
}

/// A nemesis file read for checking a group of trials at a time
/// ([`crate::nemesis::check::verify_nemesis_text`]): never held as typed data all at once.
pub struct NemesisText<'a> {
    /// Every member of the file but its trials, read strictly (`head.trials` is empty).
    pub head: crate::nemesis::NemesisFile,
    /// Each trial's JSON text, in file order, read by [`read_trial`] when it is needed.
    pub trials: Vec<&'a RawValue>,
    /// The groups of trials checked together, covering `trials` once, in order.
    pub groups: Vec<ElementGroup>,
}

/// A file read for checking.
pub enum Loaded<'a> {
    /// An `interlock-results/2` file whose cells are still text.
    Results(Box<ResultsText<'a>>),
    /// An `interlock-nemesis/3` file whose trials are still text.
    Nemesis(Box<NemesisText<'a>>),
    /// An `interlock-shared-cap/1` file whose cells are still text.
    SharedCap(Box<super::CapText<'a>>),
    /// An `interlock-shared-cap-nemesis/1` file whose trials are still text.
    SharedCapNemesis(Box<super::CapNemesisText<'a>>),
    /// Any other document, read whole by [`load_document`].
    Document(Document),
}

/// Read a file for checking: an `interlock-results/2` file as a [`ResultsText`], an
/// `interlock-nemesis/3` file as a [`NemesisText`], anything else (and any file that does not
/// read cleanly that way) through [`load_document`], which names the error.
pub fn load_for_check(bytes: &[u8]) -> Result<Loaded<'_>, LoadError> {
    let text = text(bytes)?;
    // The file as an object of members, its long arrays split on several threads. A text that
    // does not read so is read whole (a results or nemesis file without its cells or trials
    // held together); one with a cell, trial or member past its limit of values is refused
    // here, before any of it is built. The split counts the values as it goes (on several
    // threads), and lists half the text at most (a text of bare small values is not
    // split: a 1 MB gzip of 16 MB of `0,` once took 107 MB when it was), so the density check
    // follows it; the whole reading checks density first.
    let Some(split) = super::members::members(text, most_values(text.len())) else {
        return super::read_whole(bytes).map(Loaded::Document);
    };
    let mut split = split?;
    within_density(split.values, text.len())?;
    let stated = split.members.iter().find(|m| m.key == "format");
    let stated = stated.and_then(|m| serde_json::from_str::<String>(m.value).ok());
    if stated.as_deref().is_some_and(is_split_format) {
        let (head, manifest, elements) = super::members::head_spans_of(&split);
        head_within_budget(head, manifest, elements)?;
    }
    if let Some(file) = results_text(&mut split) {
        return Ok(Loaded::Results(Box::new(file)));
    }
    if let Some(file) = nemesis_text(&mut split) {
        return Ok(Loaded::Nemesis(Box::new(file)));
    }
    if let Some(file) = super::cap::cap_text(&mut split) {
        return Ok(Loaded::SharedCap(Box::new(file)));
    }
    if let Some(file) = super::cap::cap_nemesis_text(&mut split) {
        // A plan whose labels are not known: refused as the whole reading refuses it (a trial
        // that does not read is named first), without the trials held together.
        if super::cap::plan_shape(&file.head).is_err() {
            return super::read_whole(bytes).map(Loaded::Document);
        }
        return Ok(Loaded::SharedCapNemesis(Box::new(file)));
    }
    // A results or nemesis file whose head did not read is refused without its cells or trials
    // ever held together; any other document is read whole.
    if stated.as_deref().is_some_and(is_split_format) {
        return super::read_whole(bytes).map(Loaded::Document);
    }
    load_document(bytes).map(Loaded::Document)
}

/// The formats whose cells or trials are read apart from the rest of the file (its head).
pub(super) fn is_split_format(format: &str) -> bool {
    [
        RESULTS_FORMAT,
        crate::nemesis::NEMESIS_FORMAT,
        crate::shared_cap::check::FORMAT,
        crate::shared_cap::nemesis::FORMAT,
    ]
    .contains(&format)
}

/// Nesting a cell's text may hold before [`read_cell`] gives up (the whole file's reader then
/// applies the real limit, 128 levels counted from the top of the file).
pub(crate) const CELL_DEPTH: usize = 100;

/// One cell's text, read as [`load_document`] reads it inside the file: duplicate keys, limits,
/// the typed shape, the receipt's effect id; with the hash of its canonical JSON
/// ([`crate::manifest::text_hash`], `None` when it has none). The error is only a verdict; its
/// path is relative to the cell, so a caller re-reads the whole file with [`load_document`] to
/// name it.
pub fn read_cell(index: usize, raw: &RawValue) -> Result<(Cell, Option<[u8; 32]>), LoadError> {
    // The canonical writer refuses everything the scan refuses (and floats): when it gives a
    // hash, the scan would pass; otherwise the scan decides.
    let hash = crate::manifest::text_hash(raw.get());
    let cell = read_cell_scanned(index, raw, hash.is_some())?;
    Ok((cell, hash))
}

/// The strict scan of cell `index`'s text (depth, duplicate keys, what the typed read would not
/// refuse), failing as a shape error at `cells[index]`.
pub(super) fn scan_cell(index: usize, text: &str) -> Result<(), LoadError> {
    scan_element("cells", index, text)
}

/// The strict scan of element `index` of the file's array `array` (a cell or a trial), failing
/// as a shape error at `array[index]`.
pub(super) fn scan_element(array: &str, index: usize, text: &str) -> Result<(), LoadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    Scan {
        top: None,
        depth: CELL_DEPTH,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end())
    .map_err(|e| LoadError::Shape {
        path: format!("{array}[{index}]"),
        message: e.to_string(),
    })
}

/// [`read_cell`] without the hash: `scanned` says the text is already known to pass the strict
/// scan ([`crate::manifest::text_hash`] gave it a hash), which is then not run again.
pub fn read_cell_scanned(index: usize, raw: &RawValue, scanned: bool) -> Result<Cell, LoadError> {
    let text = raw.get();
    if !scanned {
        scan_cell(index, text)?;
    }
    let cell = typed::<Cell>(text)?;
    if let Some(b) = &cell.receipt {
        let path = format!("cells[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok(cell)
}

/// A file of `format` split into its head, read strictly (as [`load_document`] would) from a
/// copy of the file whose `array` is empty, and the elements of `array` (taken out of `split`);
/// `None` for any other document or any error.
pub(super) fn split_file<'t, T: serde::de::DeserializeOwned>(
    split: &mut Members<'t>,
    format: &str,
    array: &'static str,
) -> Option<(T, Elements<'t>)> {
    let stated = split.members.iter().find(|m| m.key == "format")?;
    if serde_json::from_str::<String>(stated.value).ok()? != format {
        return None;
    }
    // The same checks as the whole file's, over a small text.
    let mut head = format!("{{\"{array}\":[]");
    for member in split.members.iter().filter(|m| m.key != array) {
        head.push(',');
        head.push_str(&serde_json::to_string(&member.key).ok()?);
        head.push(':');
        head.push_str(member.value);
    }
    head.push('}');
    scan(&head).ok()?;
    let head = typed::<T>(&head).ok()?;
    let elements = split.members.iter_mut().find(|m| m.key == array)?;
    Some((head, elements.elements.take()?))
}

/// An `interlock-results/2` file split into its head and its cells' text.
pub(super) fn results_text<'t>(split: &mut Members<'t>) -> Option<ResultsText<'t>> {
    let (head, cells) = split_file::<ResultsFile>(split, RESULTS_FORMAT, "cells")?;
    Some(ResultsText {
        head,
        cells: cells.texts,
        groups: cells.groups,
    })
}

/// An `interlock-nemesis/3` file split into its head and its trials' text.
pub(super) fn nemesis_text<'t>(split: &mut Members<'t>) -> Option<NemesisText<'t>> {
    let format = crate::nemesis::NEMESIS_FORMAT;
    let (head, trials) = split_file::<crate::nemesis::NemesisFile>(split, format, "trials")?;
    Some(NemesisText {
        head,
        trials: trials.texts,
        groups: trials.groups,
    })
}

/// One trial's text, read as [`load_document`] reads it inside the file: duplicate keys, limits,
/// the typed shape, the receipt's effect id. The error is only a verdict; its path is relative
/// to the trial, so a caller re-reads the whole file with [`load_document`] to name it.
pub fn read_trial(index: usize, raw: &RawValue) -> Result<crate::nemesis::Trial, LoadError> {
    let text = raw.get();
    scan_element("trials", index, text)?;
    let trial = typed::<crate::nemesis::Trial>(text)?;
    if let Some(b) = &trial.receipt {
        let path = format!("trials[{index}].receipt.effect_id");
        effect_id_shape(&path, &b.effect_id, 64)?;
    }
    Ok(trial)
}
