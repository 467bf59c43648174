//! Checking an `interlock-results/1` file (DESIGN §3.3, §4.6): every receipt, every cell's
//! judgement and the summary, re-derived from the raw data in the file and compared with what the
//! file states. No stored judgement or summary is trusted.

use crate::billing_credit::{self, billing_credit_effect_id, request_id};
use crate::entry;
use crate::finding::{code as fcode, Finding};
use crate::load::{LoadError, ResultsText};
use crate::manifest;
use crate::receipt::{self, Happened, KeyCheck, ReceiptReport, SignerRule};
use crate::results::{Cell, GroundTruth, ResultsFile, Want, RESULTS_FORMAT};
use ed25519_dalek::VerifyingKey;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};
use std::convert::Infallible;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// Findings about the file as a whole (environment, rows, columns, summary).
    pub findings: Vec<Finding>,
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
            findings: &'r [Finding],
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

/// The status strings a column may end in, for the receipt's final entry (a matrix cell's and a
/// nemesis trial's outcome alike).
pub(crate) fn outcomes_for_final(
    report: &ReceiptReport,
    final_refused_code: Option<&str>,
) -> Vec<String> {
    // A later submit of an effect already committed (a second worker, or a worker that decided
    // again with another payload) writes its PROPOSED and AUTHORIZED, finds the COMMITTED at
    // dispatch and stops, or is refused as a conflicting payload: the chain then ends in them,
    // and the effect's status is still the commit's (as `interlock::status_of` derives it: no
    // dispatch opens after a COMMITTED, so nothing after it can settle the effect again).
    let trailing_submit = matches!(
        report.final_kind.as_deref(),
        Some("PROPOSED" | "AUTHORIZED" | "REFUSED")
    ) && report.journal_kinds.iter().any(|k| k == "COMMITTED");
    let final_kind = if trailing_submit {
        Some("COMMITTED")
    } else {
        report.final_kind.as_deref()
    };
    match final_kind {
        Some("COMMITTED") => {
            let by_via = match report.via.as_deref() {
                Some("send") => "COMMITTED",
                Some("retry-idempotent") => "COMMITTED_BY_RETRY",
                Some("recovery-query") | Some("failed-but-landed") => "COMMITTED_ON_QUERY",
                Some("recovery-reapply") => "REAPPLIED_AFTER_QUERY",
                _ => return vec![],
            };
            // A later submit of an already committed effect answers DUPLICATE_IGNORED.
            vec![by_via.into(), "DUPLICATE_IGNORED".into()]
        }
        Some("REFUSED") => final_refused_code
            .map(|c| vec![format!("REFUSED:{c}")])
            .unwrap_or_default(),
        Some("AMBIGUOUS") => vec!["AMBIGUOUS".into()],
        Some("DISPATCHED") => vec!["IN_FLIGHT".into()],
        _ => vec![],
    }
}

/// Which cells' reports a [`ResultsReport`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every cell's report (for the JSON report, the site).
    Every,
    /// Only the failing cells' reports: what the text output shows, in far less memory. The
    /// verdict and every count are the same.
    Failing,
}

/// Verify a results file. `key` is the pinned key (`--key`), or [`KeyCheck::SelfAttested`] to
/// check every entry and the manifest against the key the file publishes in `environment.signer`.
pub fn verify_results(file: &ResultsFile, key: &KeyCheck) -> ResultsReport {
    let groups = cell_groups(&file.cells);
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
        let cells = Cow::Borrowed(file.cells.get(range).unwrap_or_default());
        Ok(Group {
            cells,
            hashes: Vec::new(),
        })
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
    let groups = (0..n)
        .step_by(receipt::RECEIPTS_PER_GROUP)
        .map(|start| start..(start + receipt::RECEIPTS_PER_GROUP).min(n))
        .collect();
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
            // The text's hash differs (or it has none): the typed cell's hash decides.
            let cell = crate::load::read_cell_scanned(i, text, from_text.is_some())?;
            match manifest::check_cell(&file.head.manifest, i, &cell, None) {
                None => signed.push(Signed::Typed),
                Some(f) => return Ok(Hashed::Differs(f)),
            }
        }
        Ok(Hashed::Signed(signed))
    };
    let read = |range: Range<usize>, signed: &[Signed]| -> Result<Group<'_>, LoadError> {
        let start = range.start;
        let texts = file.cells.get(range).unwrap_or_default();
        let read: Vec<(Cell, Option<[u8; 32]>)> = texts
            .iter()
            .enumerate()
            .map(|(k, text)| match signed.get(k) {
                // Hashed by the first pass: a text hash there also passed the scan.
                Some(s) => crate::load::read_cell_scanned(start + k, text, *s == Signed::Text)
                    .map(|cell| (cell, None)),
                None => crate::load::read_cell(start + k, text),
            })
            .collect::<Result<_, LoadError>>()?;
        let (cells, hashes): (Vec<Cell>, Vec<_>) = read.into_iter().unzip();
        Ok(Group {
            cells: Cow::Owned(cells),
            hashes,
        })
    };
    verify_parts(
        &file.head,
        n,
        groups,
        CellSource { hash, read },
        key,
        detail,
    )
}

/// The key the file is checked against, and how the report names it; a published key that is not
/// acceptable, or not the pinned one, is a finding.
fn signer_rule(
    file: &ResultsFile,
    key: &KeyCheck,
    findings: &mut Vec<Finding>,
) -> (SignerRule, &'static str) {
    // One spelling per key: the published key must be 64 lowercase hex characters.
    let published = entry::decode_lower_hex::<32>(&file.environment.signer)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .filter(crate::signatures::key_is_acceptable);
    match (key, published) {
        (KeyCheck::Pinned(k), p) => {
            if p != Some(*k) {
                findings.push(Finding::mismatch(
                    "environment.signer",
                    fcode::FILE_INCONSISTENT,
                    "the key the file publishes is not the pinned key",
                    hex::encode(k.as_bytes()),
                    &file.environment.signer,
                ));
            }
            (SignerRule::Pinned(*k), "pinned")
        }
        (KeyCheck::SelfAttested, Some(p)) => (SignerRule::Published(p), "self-attested"),
        (KeyCheck::SelfAttested, None) => {
            findings.push(Finding::new(
                "environment.signer",
                fcode::FILE_INCONSISTENT,
                "the file publishes no acceptable ed25519 public key (64 lowercase hex characters of a key of prime order), so no signature can be bound to it",
            ));
            (SignerRule::FromRecord, "self-attested")
        }
    }
}

/// What the first pass under a pin established about one cell: its hash is the one the run
/// signed at its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signed {
    /// By the canonical hash of its text (so its text also passes the strict scan).
    Text,
    /// By the typed cell's hash (its text's differs or has none, e.g. a field written as `null`
    /// that the typed cell leaves out).
    Typed,
}

/// How a group of cells compares with the manifest.
enum Hashed {
    /// Every cell is the one the run signed, each as [`Signed`] says.
    Signed(Vec<Signed>),
    /// The first cell that is not (its finding).
    Differs(Finding),
}

/// Where the cells of a file come from, a group at a time: `hash` compares each cell of a range
/// with the manifest (the first pass under a pin); `read` gives the range's cells typed, told
/// what the first pass found of them (nothing, `&[]`, when it did not run).
struct CellSource<H, R> {
    hash: H,
    read: R,
}

/// Every check of a results file. `head` gives everything but the cells (its `cells` are not
/// read); the file holds `count` cells, which `cells` gives a group (`groups`, in order, covering
/// `0..count`) at a time. First the signer and the manifest's own record; under a pin, a file
/// whose manifest fails stops there, and so does one whose cells do not all hash as the
/// manifest says (a first pass over every cell's hash, stopping at the first that differs).
fn verify_parts<'c, E: Send, H, R>(
    head: &ResultsFile,
    count: usize,
    groups: Vec<Range<usize>>,
    cells: CellSource<H, R>,
    key: &KeyCheck,
    detail: Detail,
) -> Result<ResultsReport, E>
where
    H: Fn(Range<usize>) -> Result<Hashed, E> + Sync,
    R: Fn(Range<usize>, &[Signed]) -> Result<Group<'c>, E> + Sync,
{
    let mut findings = Vec::new();
    if head.format != RESULTS_FORMAT {
        findings.push(Finding::mismatch(
            "format",
            fcode::FILE_INCONSISTENT,
            "the file is not an interlock-results file of this version",
            RESULTS_FORMAT,
            &head.format,
        ));
    }
    let (rule, key_label) = signer_rule(head, key, &mut findings);
    let (signer, fingerprint) = match rule {
        SignerRule::Pinned(k) | SignerRule::Published(k) => {
            manifest::check(head, count, &k, &mut findings);
            (hex::encode(k.as_bytes()), Some(crate::fingerprint(&k)))
        }
        SignerRule::FromRecord => (String::new(), None),
    };
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
        findings,
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
    let (cell_reports, facts) = check_cells(
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
    check_summary(head, &facts, &mut findings);

    let receipts_signed = facts.iter().all(|c| c.receipt != Some(false));
    let manifest_ok = fingerprint.is_some()
        && !findings
            .iter()
            .chain(cell_reports.iter().flat_map(|c| c.findings.iter()))
            .any(|f| f.code == fcode::MANIFEST_MISMATCH);
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
        findings,
    })
}

/// The first pass under a pin: every cell's hash compared with the manifest, in file order,
/// stopping at the first cell that differs (`Ok(Err(finding))`); otherwise what each group's
/// cells were found to be. Groups are hashed on several threads; one after a group where a cell
/// already differed (or did not read) is skipped. A cell that does not read is the error.
fn hash_cells<E: Send>(
    groups: &[Range<usize>],
    hash: &(impl Fn(Range<usize>) -> Result<Hashed, E> + Sync),
) -> Result<Result<Vec<Vec<Signed>>, Finding>, E> {
    let stop = AtomicUsize::new(usize::MAX);
    let hashed: Vec<Result<Hashed, E>> = groups
        .par_iter()
        .map(|range| {
            // Never reached by the walk below: it ends at or before the group that set `stop`.
            if range.start > stop.load(Ordering::Relaxed) {
                return Ok(Hashed::Signed(Vec::new()));
            }
            let hashed = hash(range.clone());
            if !matches!(hashed, Ok(Hashed::Signed(_))) {
                stop.fetch_min(range.start, Ordering::Relaxed);
            }
            hashed
        })
        .collect();
    let mut signed = Vec::with_capacity(groups.len());
    for group in hashed {
        match group? {
            Hashed::Signed(s) => signed.push(s),
            Hashed::Differs(f) => return Ok(Err(f)),
        }
    }
    Ok(Ok(signed))
}

/// A group of consecutive cells, typed, with the hashes of their JSON text when the file was
/// read as text (`hashes[k]` is that of `cells[k]`, [`manifest::text_hash`]; empty otherwise).
struct Group<'c> {
    cells: Cow<'c, [Cell]>,
    hashes: Vec<Option<[u8; 32]>>,
}

/// What the file-level checks read of one cell and its report, kept after both are dropped.
struct CellFacts {
    crash: String,
    outage: String,
    column: String,
    repeat: u32,
    case_id: String,
    incident: String,
    decider: Option<crate::results::DeciderInfo>,
    /// The decision, for the per-row replay check ([`crate::replayed`]).
    decision: Option<crate::results::Decision>,
    outcome: String,
    timings: Option<crate::results::Timings>,
    /// Whether the cell's receipt is signed; `None` without one.
    receipt: Option<bool>,
    /// The cell's report found nothing.
    ok: bool,
    /// The derived `invariant_held`, `answer_matches` and `proof`.
    judged: (bool, bool, bool),
    /// When the case's clock started, as its first invoice (`subscription_create`) shows.
    clock_started: Option<i64>,
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
            outcome: cell.outcome.clone(),
            timings: cell.timings,
            receipt: report.receipt.as_ref().map(|r| r.signed == Some(true)),
            ok: report.ok,
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
/// hash compared with the manifest.
///
/// Cells go through in groups holding about one signature batch of receipts: each group is read,
/// its receipts verified and then its cells checked in the same task, while their data is still
/// in cache; groups are spread over threads. The first group that cannot be read is the error.
/// `signed` is what the first pass under a pin found of each group ([`hash_cells`]): then every
/// cell's hash is already known to be the signed one, and is not compared again.
fn check_cells<'c, E: Send>(
    head: &ResultsFile,
    groups: Vec<Range<usize>>,
    signed: Option<Vec<Vec<Signed>>>,
    read: &(impl Fn(Range<usize>, &[Signed]) -> Result<Group<'c>, E> + Sync),
    rule: &SignerRule,
    detail: Detail,
    count: usize,
) -> Result<(Vec<CellReport>, Vec<CellFacts>), E> {
    let vetted = receipt::Vetted::default();
    type Checked = Vec<(Option<Box<CellReport>>, CellFacts)>;
    let checked: Vec<Result<Checked, E>> = groups
        .into_par_iter()
        .enumerate()
        .map(|(g, range)| {
            let start = range.start;
            let known = signed
                .as_ref()
                .map(|s| s.get(g).map_or(&[][..], Vec::as_slice));
            let Group { cells, hashes } = read(range, known.unwrap_or_default())?;
            let bundles: Vec<&crate::entry::ReceiptBundle> =
                cells.iter().filter_map(|c| c.receipt.as_ref()).collect();
            let mut reports = receipt::verify_group(&bundles, rule, &vetted).into_iter();
            let checked = cells.iter().enumerate().map(|(k, cell)| {
                let report = cell.receipt.as_ref().and_then(|_| reports.next());
                let mut checked = check_cell(start + k, cell, report);
                let hash = hashes.get(k).copied().flatten();
                let compared = known.is_some();
                let differs = || manifest::check_cell(&head.manifest, start + k, cell, hash);
                if let Some(f) = (!compared).then(differs).flatten() {
                    checked.findings.push(f);
                    checked.ok = false;
                }
                let facts = CellFacts::of(cell, &checked);
                let keep = detail == Detail::Every || !checked.ok;
                // Boxed: most cells keep no report, and an empty slot should cost a pointer.
                (keep.then(|| Box::new(checked)), facts)
            });
            Ok(checked.collect())
        })
        .collect();
    let kept = if detail == Detail::Every { count } else { 0 };
    let mut out = (Vec::with_capacity(kept), Vec::with_capacity(count));
    for group in checked {
        for (report, facts) in group? {
            out.0.extend(report.map(|r| *r));
            out.1.push(facts);
        }
    }
    Ok(out)
}

/// Consecutive runs of cells, each holding at most [`receipt::RECEIPTS_PER_GROUP`] receipts and
/// at most [`CELLS_PER_GROUP`] cells; together they cover every cell once, in order.
fn cell_groups(cells: &[Cell]) -> Vec<Range<usize>> {
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
const CELLS_PER_GROUP: usize = 4 * receipt::RECEIPTS_PER_GROUP;

fn check_structure(file: &ResultsFile, cells: &[CellFacts], findings: &mut Vec<Finding>) {
    check_environment(file, findings);
    check_clock_start(file, cells, findings);
    let (rows, columns) = check_cell_set(file, cells, findings);
    let mut seen = HashSet::new();
    let mut cases = HashSet::new();
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
fn check_cell_set<'f>(
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
    let mut present = HashSet::new();
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
const BACKENDS: [&str; 2] = ["emulator", "stripe_test_mode"];

fn describe_decider(d: &crate::results::DeciderInfo) -> String {
    match &d.model {
        Some(model) => format!("{} ({model})", d.kind),
        None => d.kind.clone(),
    }
}

/// A recorded clock start is where every case's clock started: each case's first invoice was
/// created at that instant of its clock.
fn check_clock_start(file: &ResultsFile, cells: &[CellFacts], findings: &mut Vec<Finding>) {
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

fn check_environment(file: &ResultsFile, findings: &mut Vec<Finding>) {
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

fn check_cell(i: usize, cell: &Cell, receipt: Option<ReceiptReport>) -> CellReport {
    let base = format!("cells[{i}]");
    let mut f: Vec<Finding> = Vec::new();
    let case_id = cell.case.case_id.as_str();
    let gt = &cell.ground_truth;
    let harness_error = cell.outcome == billing_credit::HARNESS_ERROR;

    check_ground_truth(&base, cell, &mut f);

    let want = billing_credit::want_for_decision(
        gt,
        case_id,
        &cell.case.incident,
        &cell.case.approval,
        cell.decision.as_ref().map(|d| d.amount),
    );
    if want != cell.want {
        f.push(Finding::mismatch(
            format!("{base}.want"),
            fcode::WANT_MISMATCH,
            format!("cell {i}: want is not what the want rule derives from the ground truth"),
            format!("count {} cents {}", want.count, want.cents),
            format!("count {} cents {}", cell.want.count, cell.want.cents),
        ));
    }
    let invariant_held = billing_credit::invariant_held(gt, want);
    if invariant_held != cell.invariant_held {
        f.push(Finding::mismatch(
            format!("{base}.invariant_held"),
            fcode::INVARIANT_MISMATCH,
            format!("cell {i}: invariant_held is not what the case's credits and want give"),
            invariant_held,
            cell.invariant_held,
        ));
    }
    let answer_matches = billing_credit::answer_matches(&cell.outcome, gt);
    if answer_matches != cell.answer_matches {
        f.push(Finding::mismatch(
            format!("{base}.answer_matches"),
            fcode::ANSWER_MISMATCH,
            format!(
                "cell {i}: answer_matches is not what outcome {:?} and the case's credits give",
                cell.outcome
            ),
            answer_matches,
            cell.answer_matches,
        ));
    }
    if harness_error != cell.harness_error.is_some() {
        f.push(Finding::new(
            format!("{base}.harness_error"),
            fcode::FILE_INCONSISTENT,
            format!(
                "cell {i}: harness_error must be set exactly when the outcome is HARNESS_ERROR"
            ),
        ));
    }
    let expected_record = match cell.column.as_str() {
        "interlock" => "signed_chain",
        "hand_check" => "plain_log",
        _ => "none",
    };
    if cell.record != expected_record {
        f.push(Finding::mismatch(
            format!("{base}.record"),
            fcode::FILE_INCONSISTENT,
            format!(
                "cell {i}: the record kind does not fit column {}",
                cell.column
            ),
            expected_record,
            &cell.record,
        ));
    }

    check_crash_evidence(i, &base, cell, harness_error, &mut f);
    check_restart_output(i, &base, cell, receipt.as_ref(), harness_error, &mut f);
    let (proof, why_not) = match cell.column.as_str() {
        "interlock" => check_interlock(i, &base, cell, receipt.as_ref(), harness_error, &mut f),
        "hand_check" => {
            no_receipt(i, &base, cell, &mut f);
            check_hand_check(i, &base, cell, harness_error, &mut f)
        }
        _ => {
            no_receipt(i, &base, cell, &mut f);
            let allowed = ["CREDITED", "REPLAYED_BY_STRIPE"];
            if !harness_error && !allowed.contains(&cell.outcome.as_str()) {
                f.push(Finding::mismatch(
                    format!("{base}.outcome"),
                    fcode::OUTCOME_MISMATCH,
                    format!("cell {i}: a no_check worker only ever sends, so its outcome cannot be {:?}", cell.outcome),
                    allowed.join(" or "),
                    &cell.outcome,
                ));
            }
            (false, "a column without a record proves nothing".to_owned())
        }
    };
    if proof != cell.proof {
        f.push(Finding::mismatch(
            format!("{base}.proof"),
            fcode::PROOF_MISMATCH,
            if proof {
                format!("cell {i}: proof is false, but its record proves what happened")
            } else {
                format!("cell {i}: proof is true, but {why_not}")
            },
            proof,
            cell.proof,
        ));
    }

    let mut findings: Vec<Finding> = receipt
        .iter()
        .flat_map(|r| {
            r.problems
                .iter()
                .map(|p| Finding::from_problem(&format!("{base}.receipt"), p))
        })
        .collect();
    findings.append(&mut f);
    CellReport {
        index: i,
        column: cell.column.clone(),
        crash: cell.crash.clone(),
        outage: cell.outage.clone(),
        repeat: cell.repeat,
        ok: findings.is_empty(),
        want,
        invariant_held,
        answer_matches,
        proof,
        receipt,
        findings,
    }
}

/// A judged cell is one whose worker the runner killed: ended by signal 9 and by nothing else.
/// A HARNESS_ERROR cell (counted apart) must say why, so it cannot silently drop a cell.
fn check_crash_evidence(
    i: usize,
    base: &str,
    cell: &Cell,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    if !harness_error {
        if let Some(why) =
            billing_credit::outage_misfit(&cell.outage, &cell.outage_record, &cell.case.incident)
        {
            f.push(Finding::new(
                format!("{base}.outage_record"),
                fcode::FILE_INCONSISTENT,
                format!(
                    "cell {i}: the outage record does not fit outage {:?}: {why}",
                    cell.outage
                ),
            ));
        }
    }
    if harness_error {
        if cell
            .harness_error
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
        {
            f.push(Finding::new(
                format!("{base}.harness_error"),
                fcode::CRASH_NOT_PROVEN,
                format!("cell {i} is a HARNESS_ERROR without the reason and stderr tail that explain it"),
            ));
        }
        return;
    }
    // A decision the approval never covered may be refused before the crash point: the decide
    // worker then exits by itself (code 3) instead of being killed.
    let refused_uncovered = cell.worker_exit_signal.is_none()
        && cell.worker_exit_code == Some(3)
        && cell
            .decision
            .as_ref()
            .is_some_and(|d| !billing_credit::approval_covers(&cell.case.approval, d.amount));
    if !refused_uncovered
        && (cell.worker_exit_signal != Some(SIGKILL) || cell.worker_exit_code.is_some())
    {
        let found = match (cell.worker_exit_signal, cell.worker_exit_code) {
            (Some(s), None) => format!("signal {s}"),
            (None, Some(c)) => format!("exit code {c}"),
            (Some(s), Some(c)) => format!("signal {s} and exit code {c}"),
            (None, None) => "no exit status".to_owned(),
        };
        f.push(Finding::mismatch(
            format!("{base}.worker_exit_signal"),
            fcode::CRASH_NOT_PROVEN,
            format!("cell {i} is judged, but its worker was not ended by the runner's SIGKILL; only a HARNESS_ERROR may end otherwise"),
            "signal 9",
            found,
        ));
    }
}

/// The signal the runner kills a worker with.
const SIGKILL: i32 = 9;

/// The restart worker's own output line must say what the cell says (where it says it).
fn check_restart_output(
    i: usize,
    base: &str,
    cell: &Cell,
    receipt: Option<&ReceiptReport>,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    // One cell's restart line at a time, at most `FREE_FORM_MAX_BYTES` of text.
    let Some(restart) = cell
        .restart
        .as_ref()
        .map(crate::results::FreeForm::to_value)
    else {
        return;
    };
    if let Some(status) = restart.get("status").and_then(Value::as_str) {
        if !harness_error && status != cell.outcome {
            f.push(Finding::mismatch(
                format!("{base}.restart.status"),
                fcode::OUTCOME_MISMATCH,
                format!(
                    "cell {i}: the restart worker reported another status than the cell's outcome"
                ),
                &cell.outcome,
                status,
            ));
        }
    }
    if let Some(eid) = restart.get("effect_id").filter(|e| !e.is_null()) {
        if eid.as_str() != cell.effect_id.as_deref() {
            f.push(Finding::mismatch(
                format!("{base}.restart.effect_id"),
                fcode::RECEIPT_CLAIM_MISMATCH,
                format!("cell {i}: the restart worker reported another effect than the cell's"),
                cell.effect_id.as_deref().unwrap_or("null"),
                eid,
            ));
        }
    }
    let Some(report) = receipt else {
        return;
    };
    if let Some(stated) = restart.pointer("/detail/verify") {
        let ours = [
            ("valid", Value::Bool(report.valid)),
            (
                "happened",
                serde_json::to_value(report.happened).unwrap_or(Value::Null),
            ),
        ];
        for (field, derived) in ours {
            if let Some(theirs) = stated.get(field) {
                if theirs != &derived {
                    f.push(Finding::mismatch(
                        format!("{base}.restart.detail.verify.{field}"),
                        fcode::RECEIPT_CLAIM_MISMATCH,
                        format!("cell {i}: the restart worker's verify output disagrees with the receipt on {field}"),
                        &derived,
                        theirs,
                    ));
                }
            }
        }
    }
}

fn no_receipt(i: usize, base: &str, cell: &Cell, f: &mut Vec<Finding>) {
    if cell.receipt.is_some() || cell.effect_id.is_some() || !cell.journal_kinds.is_empty() {
        f.push(Finding::new(
            format!("{base}.receipt"),
            fcode::RECEIPT_MISSING,
            format!(
                "cell {i} is a {} cell but carries a receipt, effect id or journal kinds",
                cell.column
            ),
        ));
    }
}

fn check_ground_truth(base: &str, cell: &Cell, f: &mut Vec<Finding>) {
    let gt = &cell.ground_truth;
    let case_id = cell.case.case_id.as_str();
    let path = format!("{base}.ground_truth");
    let from_txns: BTreeSet<(&str, i64, i64)> = gt
        .balance_transactions
        .iter()
        .filter(|t| billing_credit::is_judged_credit(t))
        .map(|t| (t.id.as_str(), t.amount, t.created))
        .collect();
    let stated: BTreeSet<(&str, i64, i64)> = gt
        .case_credits
        .iter()
        .map(|c| (c.id.as_str(), c.amount, c.created))
        .collect();
    if from_txns != stated || stated.len() != gt.case_credits.len() {
        f.push(Finding::mismatch(
            format!("{path}.case_credits"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: case_credits are not the credits billing did not make"),
            ids(from_txns.iter().map(|t| t.0)),
            ids(gt.case_credits.iter().map(|c| c.id.as_str())),
        ));
    }
    if gt.case_credit_count as usize != gt.case_credits.len() {
        f.push(Finding::mismatch(
            format!("{path}.case_credit_count"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: case_credit_count is not the number of case credits"),
            gt.case_credits.len(),
            gt.case_credit_count,
        ));
    }
    let cents: i128 = gt.case_credits.iter().map(|c| -i128::from(c.amount)).sum();
    if i128::from(gt.case_credit_cents) != cents {
        f.push(Finding::mismatch(
            format!("{path}.case_credit_cents"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: case_credit_cents is not the sum of the case credits"),
            cents,
            gt.case_credit_cents,
        ));
    }
    let by_others = billing_credit::compensation_by_others_exact(
        &gt.credit_notes,
        &gt.balance_transactions,
        case_id,
        None,
    );
    if i128::from(gt.compensation_by_others) != by_others {
        f.push(Finding::mismatch(
            format!("{path}.compensation_by_others"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: compensation_by_others is not what the credit notes and balance transactions give"),
            by_others,
            gt.compensation_by_others,
        ));
    }
    let incident = billing_credit::compensation_by_others_exact(
        &gt.credit_notes,
        &gt.balance_transactions,
        case_id,
        Some(&cell.case.incident),
    );
    if i128::from(gt.incident_compensation) != incident {
        f.push(Finding::mismatch(
            format!("{path}.incident_compensation"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: incident_compensation is not what the credit notes and balance transactions give"),
            incident,
            gt.incident_compensation,
        ));
    }
    let listed: BTreeSet<&str> = cell
        .stripe_ids
        .case_credits
        .iter()
        .map(String::as_str)
        .collect();
    let held: BTreeSet<&str> = gt.case_credits.iter().map(|c| c.id.as_str()).collect();
    if listed != held {
        f.push(Finding::mismatch(
            format!("{base}.stripe_ids.case_credits"),
            fcode::GROUND_TRUTH_INCONSISTENT,
            format!("case {case_id}: the listed case credit ids are not the ground truth's"),
            ids(held.iter().copied()),
            ids(listed.iter().copied()),
        ));
    }
}

fn ids<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    format!("[{}]", v.join(", "))
}

fn credit_held(gt: &GroundTruth, id: &str) -> bool {
    gt.case_credits.iter().any(|c| c.id == id)
}

/// Interlock: the receipt bound to the cell, and the proof rule. Returns (proof, why not).
fn check_interlock(
    i: usize,
    base: &str,
    cell: &Cell,
    receipt: Option<&ReceiptReport>,
    harness_error: bool,
    f: &mut Vec<Finding>,
) -> (bool, String) {
    let gt = &cell.ground_truth;
    let exists = gt.case_credit_count > 0;
    let (Some(bundle), Some(report)) = (cell.receipt.as_ref(), receipt) else {
        if !harness_error {
            f.push(Finding::new(
                format!("{base}.receipt"),
                fcode::RECEIPT_MISSING,
                format!("cell {i} is an interlock cell without a receipt"),
            ));
        }
        return (false, "the cell has no receipt".into());
    };
    let rpath = format!("{base}.receipt");
    let eid = billing_credit_effect_id(&cell.case.case_id);
    if report.effect_id != eid {
        f.push(Finding::mismatch(
            format!("{rpath}.effect_id"),
            fcode::RECEIPT_NOT_BOUND,
            format!(
                "cell {i}: the receipt is for another effect than case {}'s request",
                cell.case.case_id
            ),
            &eid,
            &report.effect_id,
        ));
    }
    if cell.effect_id.as_deref() != Some(report.effect_id.as_str()) {
        f.push(Finding::mismatch(
            format!("{base}.effect_id"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("cell {i}: effect_id is not the receipt's"),
            &report.effect_id,
            cell.effect_id.as_deref().unwrap_or("null"),
        ));
    }
    for (k, credit) in gt.case_credits.iter().enumerate() {
        if let Some(e) = &credit.effect_id {
            if e != &report.effect_id {
                f.push(Finding::mismatch(
                    format!("{base}.ground_truth.case_credits[{k}].effect_id"),
                    fcode::RECEIPT_NOT_BOUND,
                    format!(
                        "cell {i}: credit {} was sent for another effect than the receipt's",
                        credit.id
                    ),
                    &report.effect_id,
                    e,
                ));
            }
        }
    }
    crate::binding::check_cell(i, base, cell, bundle, f);
    check_proposal(i, &rpath, cell, bundle.entries.first(), harness_error, f);
    check_grants(i, &rpath, cell, &bundle.entries, f);
    check_evidence_amount(i, base, cell, report, f);
    if cell.journal_kinds != report.journal_kinds {
        f.push(Finding::mismatch(
            format!("{base}.journal_kinds"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("cell {i}: journal_kinds are not the receipt's entry kinds"),
            report.journal_kinds.join(" "),
            cell.journal_kinds.join(" "),
        ));
    }
    if cell.via != report.via {
        f.push(Finding::mismatch(
            format!("{base}.via"),
            fcode::RECEIPT_CLAIM_MISMATCH,
            format!("cell {i}: via is not the COMMITTED entry's"),
            report.via.as_deref().unwrap_or("null"),
            cell.via.as_deref().unwrap_or("null"),
        ));
    }
    if !harness_error {
        let final_code = bundle
            .entries
            .last()
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str);
        let allowed = outcomes_for_final(report, final_code);
        if !allowed.contains(&cell.outcome) {
            f.push(Finding::mismatch(
                format!("{base}.outcome"),
                fcode::OUTCOME_MISMATCH,
                format!(
                    "cell {i}: the outcome disagrees with the receipt's final entry ({})",
                    report.final_kind.as_deref().unwrap_or("none")
                ),
                if allowed.is_empty() {
                    "no status fits".to_owned()
                } else {
                    allowed.join(" or ")
                },
                &cell.outcome,
            ));
        }
    }
    // The proof rule: the receipt verifies, says what Stripe holds, and names Stripe's credit.
    let credit = report
        .evidence
        .as_ref()
        .and_then(|e| e.get("credit"))
        .and_then(Value::as_str);
    if !report.valid {
        return (false, "its receipt does not verify".into());
    }
    if !report.happened.agrees_with(exists) {
        return (
            false,
            format!(
                "the receipt says happened = {} while Stripe holds {} case credit(s)",
                report.happened, gt.case_credit_count
            ),
        );
    }
    if report.happened == Happened::Yes && gt.case_credit_count != 1 {
        return (
            false,
            format!(
                "the receipt proves one credit while Stripe holds {} case credits",
                gt.case_credit_count
            ),
        );
    }
    if report.happened == Happened::Yes && !credit.is_some_and(|c| credit_held(gt, c)) {
        return (
            false,
            format!(
                "the COMMITTED evidence names credit {:?}, which the ground truth does not hold",
                credit.unwrap_or("(none)")
            ),
        );
    }
    (true, String::new())
}

/// The receipt's first PROPOSED must be this cell's request, approval and decision.
fn check_proposal(
    i: usize,
    rpath: &str,
    cell: &Cell,
    first: Option<&Value>,
    harness_error: bool,
    f: &mut Vec<Finding>,
) {
    let Some(p) = first.filter(|e| e.get("kind").and_then(Value::as_str) == Some("PROPOSED"))
    else {
        return; // reported by the receipt check (first_not_proposed / empty_receipt)
    };
    let epath = format!("{rpath}.entries[0]");
    let mut expect = |field: &str, found: Option<&Value>, want: Value| {
        if found != Some(&want) {
            f.push(Finding {
                entry: Some(0),
                ..Finding::mismatch(
                    format!("{epath}.{field}"),
                    fcode::PROPOSAL_MISMATCH,
                    format!("cell {i}: the receipt's PROPOSED {field} is not this cell's"),
                    &want,
                    found.map_or_else(|| "(missing)".to_owned(), Value::to_string),
                )
            });
        }
    };
    expect(
        "request_id",
        p.get("request_id"),
        Value::String(request_id(&cell.case.case_id)),
    );
    expect(
        "lease",
        p.get("lease"),
        Value::String(cell.case.approval.id.clone()),
    );
    let effect = p.get("effect");
    expect(
        "effect.customer",
        effect.and_then(|e| e.get("customer")),
        Value::String(cell.stripe_ids.customer.clone()),
    );
    match &cell.decision {
        Some(d) => {
            expect(
                "effect.amount",
                effect.and_then(|e| e.get("amount")),
                Value::from(d.amount),
            );
            expect(
                "effect.description",
                effect.and_then(|e| e.get("description")),
                Value::String(d.description.clone()),
            );
            expect(
                "premises",
                p.get("premises"),
                serde_json::to_value(&d.premises).unwrap_or(Value::Null),
            );
        }
        None if !harness_error => f.push(Finding::new(
            format!("{}.decision", rpath.trim_end_matches(".receipt")),
            fcode::PROPOSAL_MISMATCH,
            format!("cell {i}: the receipt proposes an effect, but the cell records no decision"),
        )),
        None => {}
    }
}

/// Every grant the receipt recorded (`checks.grant`, `rechecked.grant`) is the cell's approval:
/// same id, approver and cap. (`revoked` may change during a run: a revocation is a fact of the
/// world the gate records when it sees it.)
fn check_grants(i: usize, rpath: &str, cell: &Cell, entries: &[Value], f: &mut Vec<Finding>) {
    let a = &cell.case.approval;
    for (k, e) in entries.iter().enumerate() {
        for field in ["checks", "rechecked"] {
            let Some(grant) = e
                .get(field)
                .and_then(|c| c.get("grant"))
                .and_then(Value::as_object)
            else {
                continue;
            };
            let same = grant.get("id").and_then(Value::as_str) == Some(a.id.as_str())
                && grant.get("approver").and_then(Value::as_str) == Some(a.approver.as_str())
                && grant.get("max_cents").and_then(Value::as_i64) == Some(a.max_cents);
            if !same {
                f.push(Finding {
                    entry: Some(k),
                    ..Finding::mismatch(
                        format!("{rpath}.entries[{k}].{field}.grant"),
                        fcode::SIGNED_FACT_MISMATCH,
                        format!("cell {i}: the grant the receipt signed is not the cell's case.approval"),
                        format!("id {} approver {} max_cents {}", a.id, a.approver, a.max_cents),
                        Value::Object(grant.clone()),
                    )
                });
                return;
            }
        }
    }
}

/// The credit the COMMITTED evidence names must have, in the ground truth, the amount the
/// evidence signed.
fn check_evidence_amount(
    i: usize,
    base: &str,
    cell: &Cell,
    report: &ReceiptReport,
    f: &mut Vec<Finding>,
) {
    let Some(evidence) = report.evidence.as_ref() else {
        return;
    };
    let (Some(credit), Some(amount)) = (
        evidence.get("credit").and_then(Value::as_str),
        evidence.get("amount").and_then(Value::as_i64),
    ) else {
        return;
    };
    let gt = &cell.ground_truth;
    for (k, c) in gt.case_credits.iter().enumerate() {
        if c.id == credit && c.amount.checked_neg() != Some(amount) {
            f.push(Finding::mismatch(
                format!("{base}.ground_truth.case_credits[{k}].amount"),
                fcode::SIGNED_FACT_MISMATCH,
                format!("cell {i}: credit {} has another amount than the receipt's COMMITTED evidence signed", c.id),
                amount.saturating_neg(),
                c.amount,
            ));
        }
    }
}

/// What the last restart-phase step of a hand_check log says.
enum LogSays {
    Sent,
    NotSent,
    Unclear(String),
}

/// The parts of a hand_check log line the checks read (other members are skipped unread).
#[derive(serde::Deserialize)]
struct LogLine {
    #[serde(default)]
    phase: Value,
    #[serde(default)]
    step: Value,
    #[serde(default)]
    credit: Value,
    #[serde(default)]
    found: Value,
    #[serde(default)]
    replayed: Value,
}

impl LogLine {
    fn get(&self, field: &str) -> Option<&Value> {
        match field {
            "step" => Some(&self.step),
            "credit" => Some(&self.credit),
            "found" => Some(&self.found),
            "replayed" => Some(&self.replayed),
            _ => None,
        }
    }
}

/// The last line of the log's restart phase (a line that is not an object is no step).
fn last_restart_line(cell: &Cell) -> Option<LogLine> {
    cell.hand_check_log.as_ref()?.iter().rev().find_map(|l| {
        l.read::<LogLine>()
            .filter(|line| line.phase.as_str() == Some("restart"))
    })
}

fn hand_check_says(cell: &Cell) -> (LogSays, Option<String>) {
    let gt = &cell.ground_truth;
    if cell.hand_check_log.is_none() {
        return (
            LogSays::Unclear("the cell has no hand_check log".into()),
            None,
        );
    }
    let Some(last) = last_restart_line(cell) else {
        return (LogSays::Unclear("the log has no restart step".into()), None);
    };
    let step = last.get("step").and_then(Value::as_str).map(str::to_owned);
    let says = match step.as_deref() {
        Some("sent") => match last.get("credit").and_then(Value::as_str) {
            Some(c) if credit_held(gt, c) => LogSays::Sent,
            other => LogSays::Unclear(format!(
                "the log's last step says it sent credit {:?}, which the ground truth does not hold",
                other.unwrap_or("(none)")
            )),
        },
        Some("lookup") => match last.get("found").and_then(Value::as_str) {
            Some(c) if credit_held(gt, c) => LogSays::Sent,
            other => LogSays::Unclear(format!(
                "the log's last step is a lookup that found {:?}, which the ground truth does not hold",
                other.unwrap_or("(nothing)")
            )),
        },
        Some("approval") | Some("premises") => LogSays::NotSent,
        other => LogSays::Unclear(format!(
            "the log's last restart step is {:?}, which says neither sent nor refused",
            other.unwrap_or("(none)")
        )),
    };
    (says, step)
}

fn check_hand_check(
    i: usize,
    base: &str,
    cell: &Cell,
    harness_error: bool,
    f: &mut Vec<Finding>,
) -> (bool, String) {
    let exists = cell.ground_truth.case_credit_count > 0;
    let (says, step) = hand_check_says(cell);
    let replayed = last_restart_line(cell).and_then(|l| l.replayed.as_bool());
    if !harness_error {
        let allowed: &[&str] = match step.as_deref() {
            Some("sent") => match replayed {
                Some(true) => &["REPLAYED_BY_STRIPE"],
                Some(false) => &["CREDITED"],
                None => &["CREDITED", "REPLAYED_BY_STRIPE"],
            },
            Some("lookup") => &["FOUND_BY_LOOKUP"],
            Some("approval") => &["REFUSED:approval"],
            Some("premises") => &["REFUSED:stale_premise"],
            _ => &[],
        };
        if step.is_some() && !allowed.contains(&cell.outcome.as_str()) {
            f.push(Finding::mismatch(
                format!("{base}.outcome"),
                fcode::OUTCOME_MISMATCH,
                format!(
                    "cell {i}: the outcome disagrees with the hand_check log's last restart step"
                ),
                if allowed.is_empty() {
                    "no status fits".to_owned()
                } else {
                    allowed.join(" or ")
                },
                &cell.outcome,
            ));
        }
    }
    match says {
        LogSays::Sent if exists => (true, String::new()),
        LogSays::NotSent if !exists => (true, String::new()),
        LogSays::Sent => (
            false,
            "the log says sent while Stripe holds no case credit".into(),
        ),
        LogSays::NotSent => (
            false,
            "the log says not sent while Stripe holds a case credit".into(),
        ),
        LogSays::Unclear(why) => (false, why),
    }
}

fn check_summary(file: &ResultsFile, facts: &[CellFacts], findings: &mut Vec<Finding>) {
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
    let tallies = facts.iter().map(|c| crate::results::Tally {
        column: &c.column,
        outcome: &c.outcome,
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
    let derived = crate::results::summarize_tallies(&stated_columns, tallies);
    for (column, d) in derived {
        let Some(stated) = file.summary.get(&column) else {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed run's cells, each column's repeated `times` times.
    fn cells(columns: &[&str], times: usize) -> Vec<Cell> {
        let bytes = include_bytes!("../../results/billing_credit.json");
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
                assert!(receipts <= receipt::RECEIPTS_PER_GROUP);
                next = g.end;
            }
            assert_eq!(next, cells.len());
        }
        assert!(cell_groups(&[]).is_empty());
    }
}
