//! Stage 3, the cells: each group of cells read, its receipts verified (the trusted core), each
//! cell judged ([`super::cell`]). Its output ([`Checked`]) is every kept report and what the
//! file-level stages read of each cell ([`CellFacts`]).

use crate::load::ElementGroup;
use crate::manifest;
use crate::receipt::{self, SignerRule};
use crate::results::{Cell, ResultsFile};
use crate::view::BundleView;
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

use super::*;

/// A group of consecutive cells, typed, with their receipts as the checks read them
/// (`receipts[k]` is that of `cells[k]`), and the hashes of their JSON text when the file was
/// read as text (`hashes[k]` is that of `cells[k]`, [`manifest::text_hash`]; empty otherwise).
///
/// A cell read from the file's text has its receipt only in `receipts` (its `receipt` is `None`:
/// [`crate::load::read_cell_apart`]); a typed file's cell has it in both, `receipts[k]` a view of
/// `cells[k].receipt`.
pub(super) struct Group<'c> {
    pub(super) cells: Cow<'c, [Cell]>,
    pub(super) receipts: Vec<Option<BundleView<'c>>>,
    pub(super) hashes: Vec<Option<[u8; 32]>>,
}

impl Group<'_> {
    /// A group of typed cells: each receipt a view of the cell's own.
    pub(super) fn typed(cells: &[Cell]) -> Group<'_> {
        Group {
            receipts: cells
                .iter()
                .map(|c| c.receipt.as_ref().map(BundleView::of))
                .collect(),
            cells: Cow::Borrowed(cells),
            hashes: Vec::new(),
        }
    }
}

/// What the file-level checks read of one cell and its report, kept after both are dropped.
pub(super) struct CellFacts {
    pub(super) crash: String,
    pub(super) outage: String,
    pub(super) column: String,
    pub(super) repeat: u32,
    pub(super) case_id: String,
    pub(super) incident: String,
    pub(super) decider: Option<crate::results::DeciderInfo>,
    /// The decision, for the per-row replay check ([`crate::replayed`]).
    pub(super) decision: Option<crate::results::Decision>,
    /// The cell ran to a judgement ([`Cell::judged`]).
    pub(super) ran_to_judgement: bool,
    pub(super) timings: Option<crate::results::Timings>,
    /// Whether the cell's receipt is signed; `None` without one.
    pub(super) receipt: Option<bool>,
    /// The cell's report found nothing.
    pub(super) ok: bool,
    /// A finding of the cell's report says it is not the cell the run signed (kept here: a
    /// failing cell's report kept for the text output holds its first finding only).
    pub(super) manifest_mismatch: bool,
    /// The derived `invariant_held`, `answer_matches` and `proof`.
    pub(super) judged: (bool, bool, bool),
    /// When the case's clock started, as its first invoice (`subscription_create`) shows.
    pub(super) clock_started: Option<i64>,
}

impl crate::replayed::Row for CellFacts {
    fn labels(&self) -> (&str, &str, &str, u32) {
        (&self.crash, &self.outage, &self.column, self.repeat)
    }
    fn case_ids(&self) -> (&str, &str) {
        (&self.case_id, &self.incident)
    }
    fn decision(&self) -> Option<&crate::results::Decision> {
        self.decision.as_ref()
    }
}

impl CellFacts {
    fn of(cell: &Cell, report: &CellReport) -> CellFacts {
        CellFacts {
            crash: cell.crash.clone(),
            outage: cell.outage.clone(),
            column: cell.column.clone(),
            repeat: cell.repeat,
            case_id: cell.case.case_id.clone(),
            incident: cell.case.incident.clone(),
            decider: cell.decision.as_ref().map(|d| d.decider.clone()),
            decision: cell.decision.clone(),
            ran_to_judgement: cell.judged(),
            timings: cell.timings,
            receipt: report.receipt.as_ref().map(|r| r.signed == Some(true)),
            ok: report.ok,
            manifest_mismatch: report
                .findings
                .iter()
                .any(|f| f.code == fcode::MANIFEST_MISMATCH),
            judged: (report.invariant_held, report.answer_matches, report.proof),
            clock_started: cell
                .ground_truth
                .invoices
                .iter()
                .filter(|i| i.billing_reason.as_deref() == Some("subscription_create"))
                .map(|i| i.created)
                .min(),
        }
    }
}

/// Every cell's report and facts, in file order: its receipt verified, its claims checked, its
/// hash compared with the manifest; and how many cells' reports were cut ([`Detail::Within`]).
///
/// Cells go through in groups holding about one signature batch of receipts: each group is read,
/// its receipts verified and then its cells checked in the same task, while their data is still
/// in cache; groups are spread over threads. The first group that cannot be read is the error.
/// `signed` is what the first pass under a pin found of each group ([`hash_cells`]): then every
/// cell's hash is already known to be the signed one, and is not compared again.
///
/// Under [`Detail::Within`] the groups go through a few at a time (two per thread), so that the
/// reports kept past the budget are never more than those few groups' (a 1 MB gzip of cells
/// whose receipts list 62,000 bad entries each took 250 MB with `--json`); which cells' reports
/// are cut depends only on the file, never on the threads.
pub(super) fn check_cells<'c, E: Send>(
    head: &ResultsFile,
    groups: Vec<ElementGroup>,
    signed: Option<Vec<Vec<Signed>>>,
    read: &(impl Fn(Range<usize>, &[Signed]) -> Result<Group<'c>, E> + Sync),
    rule: &SignerRule,
    detail: Detail,
    count: usize,
) -> Result<(Vec<CellReport>, Vec<CellFacts>, usize), E> {
    let vetted = receipt::Vetted::default();
    let budget = match detail {
        Detail::Within(bytes) => Some(bytes.saturating_mul(4)),
        Detail::Every | Detail::Failing => None,
    };
    let window = match budget {
        Some(_) => 2 * rayon::current_num_threads().max(1),
        None => groups.len().max(1),
    };
    let groups: Vec<(usize, ElementGroup)> = groups.into_iter().enumerate().collect();
    let kept = if detail == Detail::Failing { 0 } else { count };
    let mut out = (Vec::with_capacity(kept), Vec::with_capacity(count));
    // The weight of the reports kept whole, and whether it has passed the budget.
    let (mut weight, mut over, mut cut) = (0usize, false, 0usize);
    for batch in groups.chunks(window) {
        let mode = match detail {
            Detail::Within(_) if over => Detail::Failing,
            Detail::Within(_) => Detail::Every,
            other => other,
        };
        let checked: Vec<Result<Checked, E>> = batch
            .par_iter()
            .map(|(g, group)| {
                let known = signed
                    .as_ref()
                    .map(|s| s.get(*g).map_or(&[][..], Vec::as_slice));
                check_group(head, group, known, read, (rule, &vetted), mode)
            })
            .collect();
        for group in checked {
            for (report, facts) in group? {
                let ok = facts.ok;
                out.1.push(facts);
                let Some(budget) = budget else {
                    out.0.extend(report.map(|r| *r));
                    continue;
                };
                if !over {
                    weight += report.as_ref().map_or(0, |r| r.weight());
                    over = weight > budget;
                }
                if !over {
                    out.0.extend(report.map(|r| *r));
                    continue;
                }
                // From the cell that passed the budget on: a failing cell's first finding only.
                cut += 1;
                if !ok {
                    out.0.extend(report.map(|r| first_finding_only(*r)));
                }
            }
        }
    }
    Ok((out.0, out.1, cut))
}

/// Each cell of a group with what `mode` keeps of its report (boxed: most cells keep none, and
/// an empty slot should cost a pointer).
type Checked = Vec<(Option<Box<CellReport>>, CellFacts)>;

/// The cells of `group` read, their receipts verified in one batch, each cell checked; `known`
/// is what the first pass under a pin found of the group ([`check_cells`]).
fn check_group<'c, E>(
    head: &ResultsFile,
    group: &ElementGroup,
    known: Option<&[Signed]>,
    read: &impl Fn(Range<usize>, &[Signed]) -> Result<Group<'c>, E>,
    (rule, vetted): (&SignerRule, &receipt::Vetted),
    mode: Detail,
) -> Result<Checked, E> {
    let start = group.elements.start;
    let Group {
        cells,
        receipts,
        hashes,
    } = read(group.elements.clone(), known.unwrap_or_default())?;
    let bundles: Vec<&BundleView<'_>> = receipts.iter().flatten().collect();
    let mut reports = receipt::verify_group_views(&bundles, rule, vetted).into_iter();
    let checked = cells.iter().enumerate().map(|(k, cell)| {
        let bundle = receipts.get(k).and_then(Option::as_ref);
        let report = bundle.and_then(|_| reports.next());
        let mut checked = check_cell(start + k, cell, bundle, report);
        let hash = hashes.get(k).copied().flatten();
        let differs = || signed_differs(head, start + k, cell, bundle, hash);
        if let Some(f) = known.is_none().then(differs).flatten() {
            checked.findings.push(f);
            checked.ok = false;
        }
        let facts = CellFacts::of(cell, &checked);
        let kept = match mode {
            Detail::Failing => (!checked.ok).then(|| first_finding_only(checked)),
            Detail::Every | Detail::Within(_) => Some(checked),
        };
        (kept.map(Box::new), facts)
    });
    Ok(checked.collect())
}

/// A failing cell's report as [`Detail::Failing`] keeps it: its first finding (what the text
/// output prints of it), without its receipt's report or its other findings. Kept whole, the
/// reports of a 1 MB gzip of cells whose receipts held 70 bad entries each (a finding, a problem
/// and a listed kind apiece) took some 64 KB a cell, 384 MB in all.
fn first_finding_only(mut report: CellReport) -> CellReport {
    report.findings.truncate(1);
    report.findings.shrink_to_fit();
    report.receipt = None;
    report
}

/// The manifest's finding when cell `i` is not the cell the run signed
/// ([`manifest::check_cell_apart`]): its text's hash decides when it is the signed one;
/// otherwise the typed cell's, with its receipt hashed from its view when it was read apart
/// (no copy of the cell or of its receipt is made).
fn signed_differs(
    head: &ResultsFile,
    i: usize,
    cell: &Cell,
    bundle: Option<&BundleView<'_>>,
    hash: Option<[u8; 32]>,
) -> Option<crate::finding::Finding> {
    let apart = bundle.filter(|_| cell.receipt.is_none());
    manifest::check_cell_apart(&head.manifest, i, cell, apart, hash)
}

/// Consecutive runs of cells, each holding at most [`receipt::RECEIPTS_PER_GROUP`] receipts and
/// at most [`CELLS_PER_GROUP`] cells; together they cover every cell once, in order.
pub(super) fn cell_groups(cells: &[Cell]) -> Vec<Range<usize>> {
    let mut groups = Vec::with_capacity(cells.len() / receipt::RECEIPTS_PER_GROUP + 1);
    let (mut start, mut receipts) = (0, 0);
    for (i, c) in cells.iter().enumerate() {
        receipts += usize::from(c.receipt.is_some());
        if receipts == receipt::RECEIPTS_PER_GROUP || i + 1 - start == CELLS_PER_GROUP {
            groups.push(start..i + 1);
            (start, receipts) = (i + 1, 0);
        }
    }
    if start < cells.len() {
        groups.push(start..cells.len());
    }
    groups
}

/// Most cells in one group of [`cell_groups`] (bounds the work of a group without receipts).
pub(super) const CELLS_PER_GROUP: usize = 4 * receipt::RECEIPTS_PER_GROUP;
