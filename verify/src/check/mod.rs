//! Checking an `interlock-results/1` file (DESIGN §3.3, §4.6): every receipt, every cell's
//! judgement and the summary, re-derived from the raw data in the file and compared with what the
//! file states. No stored judgement or summary is trusted.
//!
//! In stages, one file each, each taking what the one before established
//! ([`verify_parts`] runs them in order):
//! 1. [`signer`]: the format, the key every signature is checked by, the manifest's own record
//!    ([`signer::Signer`]);
//! 2. [`manifest_pass`], under a pin only: every cell's hash against the manifest, stopping at
//!    the first that differs (per group, how each cell was found signed);
//! 3. [`cells`]: each group of cells read, its receipts verified by the trusted core, each cell
//!    checked ([`cell`], and [`interlock`] for a receipt's binding to its cell) and judged by the
//!    scenario's rules ([`crate::scenarios::billing_credit`]); its output is every kept report and
//!    what the file-level stages read of each cell ([`cells::CellFacts`]);
//! 4. [`structure`]: the environment, the clock start and the cell set against the run's plan;
//! 5. [`summary`]: the summary derived from the verifier's own judgements, compared with the
//!    stated one; the derived summary is the report's.

mod cell;
mod cells;
mod interlock;
mod manifest_pass;
mod signer;
mod status;
mod structure;
mod summary;

use cell::*;
use cells::*;
use interlock::*;
use manifest_pass::*;
use signer::Signer;
pub(crate) use status::outcomes_for_final;
use structure::*;
use summary::*;

use crate::entry;
use crate::finding::{code as fcode, Finding};
use crate::load::{ElementGroup, LoadError, ResultsText};
use crate::manifest;
use crate::receipt::{KeyCheck, ReceiptReport};
use crate::results::{ColumnSummary, ResultsFile, Want};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::ops::Range;

/// The report on one results file.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultsReport {
    /// The file's format (always `interlock-results/1` for a file that loaded).
    pub format: String,
    /// The scenario.
    pub scenario: String,
    /// Whether the file was read past its signature. Under a pin, a file whose manifest does not
    /// hold (its own record, or any cell's hash) is not: nothing is derived from it, `cells` and
    /// `receipts` are 0 and mean nothing (the JSON report states them as `null`), and the
    /// findings name only the manifest.
    pub read: bool,
    /// Number of cells.
    pub cells: usize,
    /// Number of receipts checked.
    pub receipts: usize,
    /// The manifest and every receipt carry valid signatures by the key.
    pub signed: bool,
    /// `pinned` (`--key` or `--signers`: a key obtained apart from the file) or `self-attested`
    /// (the key the file publishes: proves only that the file was not changed after its own
    /// signer signed it).
    pub key: String,
    /// The key the manifest and the entries had to be signed by (hex; empty when the file
    /// publishes none).
    pub signer: String,
    /// [`crate::fingerprint`] of that key.
    pub fingerprint: Option<String>,
    /// No finding anywhere.
    pub ok: bool,
    /// One report per cell, in file order ([`Detail::Every`]), or only those of the cells that
    /// failed ([`Detail::Failing`]).
    pub cell_reports: Vec<CellReport>,
    /// Cells whose report is not kept whole ([`Detail::Within`]): a failing one's holds its first
    /// finding only, a passing one's is left out. Zero otherwise.
    pub cell_reports_cut: usize,
    /// Findings about the file as a whole (environment, rows, columns, summary).
    pub findings: Vec<Finding>,
    /// The per-column summary derived from the verifier's own judgements (of the columns the
    /// file states a summary for; empty for a file not read). Not printed: the site renders it.
    pub summary: BTreeMap<String, ColumnSummary>,
}

/// What the verifier derived for one cell, and what did not agree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellReport {
    /// Index in `cells`.
    pub index: usize,
    /// The cell's column.
    pub column: String,
    /// The cell's crash point.
    pub crash: String,
    /// The cell's outage.
    pub outage: String,
    /// The cell's repeat index.
    pub repeat: u32,
    /// No finding in this cell (its receipt included).
    pub ok: bool,
    /// `want` by the want rule.
    pub want: Want,
    /// Derived `invariant_held`.
    pub invariant_held: bool,
    /// Derived `answer_matches`.
    pub answer_matches: bool,
    /// Derived `proof`.
    pub proof: bool,
    /// The receipt's report (interlock cells).
    pub receipt: Option<ReceiptReport>,
    /// Every finding of the cell, receipt problems first.
    pub findings: Vec<Finding>,
}

impl Serialize for ResultsReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The report as printed: a file not read further states no counts.
        #[derive(Serialize)]
        struct Printed<'r> {
            format: &'r str,
            scenario: &'r str,
            read: bool,
            cells: Option<usize>,
            receipts: Option<usize>,
            signed: bool,
            key: &'r str,
            signer: &'r str,
            fingerprint: &'r Option<String>,
            ok: bool,
            cell_reports: &'r [CellReport],
            #[serde(skip_serializing_if = "is_zero")]
            cell_reports_cut: usize,
            findings: &'r [Finding],
        }
        fn is_zero(n: &usize) -> bool {
            *n == 0
        }
        Printed {
            format: &self.format,
            scenario: &self.scenario,
            read: self.read,
            cells: self.read.then_some(self.cells),
            receipts: self.read.then_some(self.receipts),
            signed: self.signed,
            key: &self.key,
            signer: &self.signer,
            fingerprint: &self.fingerprint,
            ok: self.ok,
            cell_reports: &self.cell_reports,
            cell_reports_cut: self.cell_reports_cut,
            findings: &self.findings,
        }
        .serialize(s)
    }
}

impl ResultsReport {
    /// The first finding of each failing cell, then the file-level findings.
    pub fn first_findings(&self) -> Vec<&Finding> {
        self.cell_reports
            .iter()
            .filter_map(|c| c.findings.first())
            .chain(self.findings.iter())
            .collect()
    }
}

/// Which cells' reports a [`ResultsReport`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every cell's report (for the JSON report, the site).
    Every,
    /// Only the failing cells' reports, each with its first finding only (no receipt report):
    /// what the text output shows, in far less memory. The verdict and every count are the
    /// same.
    Failing,
    /// Every cell's report while the reports kept take about four times this many bytes in
    /// memory (the `--json` output's budget, past which a report is cut anyway; a report's JSON
    /// takes less than it does in memory); from the cell that passes that on, as
    /// [`Detail::Failing`], and the report counts those cells
    /// ([`ResultsReport::cell_reports_cut`]). The verdict and every count are the same.
    Within(usize),
}

impl CellReport {
    /// About the bytes the report takes in memory (its JSON takes less, a listed kind some
    /// fourteen times less): each string's text and allocation, each finding's and problem's
    /// fields ([`Detail::Within`]).
    pub(super) fn weight(&self) -> usize {
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let finding = |f: &Finding| {
            256 + f.path.len() + f.code.len() + f.message.len() + text(&f.expected) + text(&f.found)
        };
        let receipt = self.receipt.as_ref().map_or(0, |r| {
            let kinds: usize = r.journal_kinds.iter().map(|k| 56 + k.len()).sum();
            let problems: usize = r
                .problems
                .iter()
                .map(|p| 192 + p.code.len() + p.message.len() + text(&p.kind))
                .sum();
            1024 + r.effect_id.len() + kinds + problems
        });
        let labels = self.column.len() + self.crash.len() + self.outage.len();
        256 + labels + self.findings.iter().map(finding).sum::<usize>() + receipt
    }
}

/// Verify a results file. `key` is the pinned key (`--key`), or [`KeyCheck::SelfAttested`] to
/// check every entry and the manifest against the key the file publishes in `environment.signer`.
pub fn verify_results(file: &ResultsFile, key: &KeyCheck) -> ResultsReport {
    // The file is held whole already: its groups' values are not counted.
    let groups = cell_groups(&file.cells)
        .into_iter()
        .map(|elements| ElementGroup {
            elements,
            values: 0,
        })
        .collect();
    let hash = |range: Range<usize>| -> Result<Hashed, Infallible> {
        let start = range.start;
        let cells = file.cells.get(range).unwrap_or_default();
        for (k, cell) in cells.iter().enumerate() {
            if let Some(f) = manifest::check_cell(&file.manifest, start + k, cell, None) {
                return Ok(Hashed::Differs(f));
            }
        }
        Ok(Hashed::Signed(vec![Signed::Typed; cells.len()]))
    };
    let read = |range: Range<usize>, _: &[Signed]| -> Result<Group<'_>, Infallible> {
        Ok(Group::typed(file.cells.get(range).unwrap_or_default()))
    };
    let cells = CellSource { hash, read };
    let Ok(report) = verify_parts(file, file.cells.len(), groups, cells, key, Detail::Every);
    report
}

/// Verify a results file whose cells are still text ([`crate::load::load_for_check`]): each group
/// of cells is read, checked and dropped, so the file is never held as typed data all at once.
/// The checks are those of [`verify_results`]. `Err` when a cell cannot be read; the caller then
/// reads the whole file strictly ([`crate::load::load_document`]) to name where it went wrong.
pub fn verify_results_text(
    file: &ResultsText<'_>,
    key: &KeyCheck,
    detail: Detail,
) -> Result<ResultsReport, LoadError> {
    let n = file.cells.len();
    // The groups found as the file was read: about one signature batch of receipts each, and
    // no more values than a thread should hold at once; on no more threads than the file's
    // budget holds such groups.
    let groups = file.groups.clone();
    let bytes = file.cells.iter().map(|c| c.get().len()).sum();
    let threads = crate::in_flight::threads_for(&groups, bytes);
    let signed_hashes = &file.head.manifest.cells;
    let hash = |range: Range<usize>| -> Result<Hashed, LoadError> {
        let start = range.start;
        let texts = file.cells.get(range).unwrap_or_default();
        let mut signed = Vec::with_capacity(texts.len());
        for (k, text) in texts.iter().enumerate() {
            let i = start + k;
            let from_text = manifest::text_hash(text.get());
            let is_signed = |h: &[u8; 32]| {
                signed_hashes
                    .get(i)
                    .is_some_and(|s| entry::is_lower_hex_of(s, h))
            };
            if from_text.as_ref().is_some_and(is_signed) {
                signed.push(Signed::Text);
                continue;
            }
            // The text's hash differs (or it has none): the typed cell's hash decides, its
            // receipt hashed from its view.
            let scanned = from_text.is_some();
            let (cell, receipt) = crate::load::read_cell_apart(i, text, scanned)?;
            let manifest = &file.head.manifest;
            match manifest::check_cell_apart(manifest, i, &cell, receipt.as_ref(), None) {
                None => signed.push(Signed::Typed),
                Some(f) => return Ok(Hashed::Differs(f)),
            }
        }
        Ok(Hashed::Signed(signed))
    };
    let read = |range: Range<usize>, signed: &[Signed]| -> Result<Group<'_>, LoadError> {
        let start = range.start;
        let texts = file.cells.get(range).unwrap_or_default();
        // Read straight into the three lists (a list of triples would copy every cell once more).
        // Each receipt is read apart from its cell, as a view of the file's text.
        let (mut cells, mut receipts, mut hashes) = (
            Vec::with_capacity(texts.len()),
            Vec::with_capacity(texts.len()),
            Vec::with_capacity(texts.len()),
        );
        for (k, text) in texts.iter().enumerate() {
            let (cell, receipt, hash) = match signed.get(k) {
                // Hashed by the first pass: a text hash there also passed the scan.
                Some(s) => {
                    let scanned = *s == Signed::Text;
                    let (cell, receipt) = crate::load::read_cell_apart(start + k, text, scanned)?;
                    (cell, receipt, None)
                }
                None => crate::load::read_cell_apart_hashed(start + k, text)?,
            };
            cells.push(cell);
            receipts.push(receipt);
            hashes.push(hash);
        }
        Ok(Group {
            cells: Cow::Owned(cells),
            receipts,
            hashes,
        })
    };
    let cells = CellSource { hash, read };
    crate::in_flight::on_threads(threads, || {
        verify_parts(&file.head, n, groups, cells, key, detail)
    })
}

/// Every check of a results file. `head` gives everything but the cells (its `cells` are not
/// read); the file holds `count` cells, which `cells` gives a group (`groups`, in order, covering
/// `0..count`) at a time. First the signer and the manifest's own record; under a pin, a file
/// whose manifest fails stops there, and so does one whose cells do not all hash as the manifest
/// says (a first pass over every cell's hash, stopping at the first that differs).
fn verify_parts<'c, E: Send, H, R>(
    head: &ResultsFile,
    count: usize,
    groups: Vec<ElementGroup>,
    cells: CellSource<H, R>,
    key: &KeyCheck,
    detail: Detail,
) -> Result<ResultsReport, E>
where
    H: Fn(Range<usize>) -> Result<Hashed, E> + Sync,
    R: Fn(Range<usize>, &[Signed]) -> Result<Group<'c>, E> + Sync,
{
    let mut findings = Vec::new();
    let Signer {
        rule,
        key_label,
        signer,
        fingerprint,
    } = signer::stage(head, count, key, &mut findings);
    let unread = |findings| ResultsReport {
        format: head.format.clone(),
        scenario: head.scenario.clone(),
        read: false,
        cells: 0,
        receipts: 0,
        signed: false,
        key: key_label.to_owned(),
        signer: signer.clone(),
        fingerprint: fingerprint.clone(),
        ok: false,
        cell_reports: Vec::new(),
        cell_reports_cut: 0,
        findings,
        summary: BTreeMap::new(),
    };
    // Under a pin, a file that is not what the key signed is not read further: nothing is
    // derived from it. Its cells are hashed first, and a cell that differs stops there.
    let signed_cells = if matches!(key, KeyCheck::Pinned(_)) {
        if !findings.is_empty() {
            return Ok(unread(findings));
        }
        match hash_cells(&groups, &cells.hash)? {
            Ok(signed) => Some(signed),
            Err(f) => return Ok(unread(vec![f])),
        }
    } else {
        None
    };
    let (cell_reports, facts, cell_reports_cut) = check_cells(
        head,
        groups,
        signed_cells,
        &cells.read,
        &rule,
        detail,
        count,
    )?;
    check_structure(head, &facts, &mut findings);
    crate::replayed::check(&facts, &mut findings);
    let receipts = facts.iter().filter(|c| c.receipt.is_some()).count();
    let summary = check_summary(head, &facts, &mut findings);

    let receipts_signed = facts.iter().all(|c| c.receipt != Some(false));
    let manifest_ok = fingerprint.is_some()
        && !findings.iter().any(|f| f.code == fcode::MANIFEST_MISMATCH)
        && !facts.iter().any(|c| c.manifest_mismatch);
    let signed = manifest_ok && receipts_signed;
    let ok = findings.is_empty() && facts.iter().all(|c| c.ok);
    Ok(ResultsReport {
        format: head.format.clone(),
        scenario: head.scenario.clone(),
        cells: count,
        receipts,
        read: true,
        signed,
        key: key_label.to_owned(),
        signer,
        fingerprint,
        ok,
        cell_reports,
        cell_reports_cut,
        findings,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Cell;

    /// The committed run's cells, each column's repeated `times` times.
    fn cells(columns: &[&str], times: usize) -> Vec<Cell> {
        let bytes = include_bytes!("../../../results/billing_credit.json");
        let file = crate::load::load_results(bytes).unwrap_or_else(|e| panic!("{e}"));
        let picked: Vec<Cell> = file
            .cells
            .into_iter()
            .filter(|c| columns.contains(&c.column.as_str()))
            .collect();
        (0..times).flat_map(|_| picked.iter().cloned()).collect()
    }

    #[test]
    fn a_refused_second_payload_after_the_commit_leaves_the_commits_status() {
        let bundle = crate::entry::ReceiptBundle {
            format: "interlock.receipt/v1".into(),
            effect_id: "e".into(),
            entries: Vec::new(),
            head: None,
        };
        let mut report = ReceiptReport::empty(&bundle, "k");
        report.journal_kinds = ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
            .map(str::to_owned)
            .to_vec();
        report.via = Some("retry-idempotent".into());
        report.final_kind = Some("COMMITTED".into());
        assert_eq!(outcomes_for_final(&report, None)[0], "COMMITTED_BY_RETRY");
        report
            .journal_kinds
            .extend(["PROPOSED".into(), "REFUSED".into()]);
        report.final_kind = Some("REFUSED".into());
        let allowed = outcomes_for_final(&report, Some("conflicting_payload"));
        assert_eq!(allowed[0], "COMMITTED_BY_RETRY");
        assert!(!allowed.contains(&"REFUSED:conflicting_payload".to_owned()));
        // Without a commit before it, the refusal is the effect's status.
        report.journal_kinds = ["PROPOSED", "REFUSED"].map(str::to_owned).to_vec();
        assert_eq!(
            outcomes_for_final(&report, Some("conflicting_payload")),
            vec!["REFUSED:conflicting_payload".to_owned()]
        );
    }

    #[test]
    fn cell_groups_cover_every_cell_once_in_order_within_the_limits() {
        for columns in [
            vec!["interlock"],
            vec!["no_check"],
            vec!["no_check", "hand_check", "interlock"],
        ] {
            let cells = cells(&columns, 60);
            let groups = cell_groups(&cells);
            let mut next = 0;
            for g in &groups {
                assert_eq!(g.start, next);
                assert!(g.end > g.start && g.end - g.start <= CELLS_PER_GROUP);
                let receipts = cells[g.clone()]
                    .iter()
                    .filter(|c| c.receipt.is_some())
                    .count();
                assert!(receipts <= crate::receipt::RECEIPTS_PER_GROUP);
                next = g.end;
            }
            assert_eq!(next, cells.len());
        }
        assert!(cell_groups(&[]).is_empty());
    }
}
