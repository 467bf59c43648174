//! The whole-file check of a shared_cap results file: the run's signature over the file, every
//! receipt against the run's key, and every judgement and count re-derived from the ground truth
//! by this module's rules.

use super::plan::COLUMNS;
use super::record::{CapCell, CapResults, SCENARIO};
use super::summary::{ColumnSummary, Tally};
use crate::canonical::{self, CanonicalError};
use crate::load::{read_cap_cell, CapText, LoadError};
use crate::receipt::KeyCheck;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::Serialize;
use sha2::Digest as _;
use std::borrow::Cow;
use std::collections::HashSet;
use std::convert::Infallible;

/// The `format` of a shared_cap results file.
pub const FORMAT: &str = "interlock-shared-cap/1";
/// Domain separation of the file's signature (never valid as an entry's or a manifest's).
pub const SIGNATURE_CONTEXT: &str = "interlock-shared-cap-v1:";

/// What the check found.
#[derive(Debug, Clone, Serialize)]
pub struct CapReport {
    /// Nothing was found wrong.
    pub ok: bool,
    /// `pinned` or `self-attested`.
    pub key: String,
    /// The key the file and its receipts were checked against (hex).
    pub signer: String,
    /// Cells in the file.
    pub cells: usize,
    /// Cells judged (not harness errors).
    pub judged: usize,
    /// The file's signature verifies under the key.
    pub signed: bool,
    /// The summary as re-derived.
    pub summary: Vec<ColumnSummary>,
    /// Every problem, each naming its place in the file.
    pub findings: Vec<String>,
}

/// Why a file could not be signed or its signed bytes computed.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// A value has no canonical form.
    #[error("the results file has no canonical form: {0}")]
    Canonical(#[from] CanonicalError),
    /// The file could not be turned into JSON.
    #[error("the results file cannot be serialized: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The bytes the run's key signs: the context, then the canonical JSON of
/// `{"v": 1, "head": H, "cells": [C0, C1, ...]}`, where `H` is the hex SHA-256 of the canonical
/// JSON of every top-level member but `cells` and `signature`, and `Ci` that of `cells[i]`
/// ([`element_digest`]). Each cell is hashed on its own, so checking holds one cell at a time.
pub fn signing_message(file: &CapResults) -> Result<Vec<u8>, SigningError> {
    let mut cells = Vec::with_capacity(file.cells.len());
    for (i, c) in file.cells.iter().enumerate() {
        cells.push(element_digest(&format!("cells[{i}]"), c)?);
    }
    message_of(file, cells)
}

/// [`signing_message`] of a file whose cells' digests are `cells` (`file.cells` is not read).
fn message_of(file: &CapResults, cells: Vec<String>) -> Result<Vec<u8>, SigningError> {
    let head = serde_json::json!({
        "format": file.format,
        "scenario": file.scenario,
        "generated_at": file.generated_at,
        "environment": file.environment,
        "want": file.want,
        "summary": file.summary,
    });
    let body = serde_json::json!({"v": 1, "head": digest(&head)?, "cells": cells});
    let mut out = SIGNATURE_CONTEXT.as_bytes().to_vec();
    out.extend(canonical::to_vec(&body)?);
    Ok(out)
}

/// The hex SHA-256 of a value's canonical JSON.
pub(crate) fn digest(value: &serde_json::Value) -> Result<String, SigningError> {
    Ok(hex::encode(sha2::Sha256::digest(canonical::to_vec(value)?)))
}

/// The hex SHA-256 of the canonical JSON of a cell or a trial (`what` in errors), written
/// without a tree of values of it ([`crate::manifest::canonical_apart`]: a receipt's entries as
/// trees of values took some 300 bytes per one-member object).
pub(crate) fn element_digest<T: Serialize>(what: &str, v: &T) -> Result<String, SigningError> {
    let text = crate::manifest::canonical_apart(what, v, None).map_err(|e| match e {
        crate::manifest::ManifestError::Canonical { source, .. } => SigningError::Canonical(source),
        crate::manifest::ManifestError::Serialize { message, .. } => {
            SigningError::Serialize(<serde_json::Error as serde::ser::Error>::custom(message))
        }
    })?;
    Ok(hex::encode(sha2::Sha256::digest(text.as_bytes())))
}

/// Signs the file with the run's key (sets `signature`, hex).
pub fn sign(file: &mut CapResults, key: &SigningKey) -> Result<(), SigningError> {
    let message = signing_message(file)?;
    file.signature = Some(hex::encode(key.sign(&message).to_bytes()));
    Ok(())
}

/// The key a file is checked against: the pinned one (a finding when the file names another),
/// or the one the file names (`public_key`: 64 lowercase hex characters of a key that may sign,
/// the rule of every whole-file format, [`crate::signatures::published_key`]).
pub(crate) fn file_key(
    public_key: &str,
    key: &KeyCheck,
    findings: &mut Vec<String>,
) -> Option<VerifyingKey> {
    let named = crate::signatures::published_key(public_key);
    match (key, named) {
        (KeyCheck::Pinned(k), Some(n)) if *k == n => Some(*k),
        (KeyCheck::Pinned(k), _) => {
            findings.push(format!(
                "environment.public_key: the file names {}, not the pinned key {}",
                crate::display::shorten(public_key, 80),
                hex::encode(k.as_bytes())
            ));
            Some(*k)
        }
        (KeyCheck::SelfAttested, Some(n)) => Some(n),
        (KeyCheck::SelfAttested, None) => {
            findings.push(
                "environment.public_key: not an acceptable ed25519 public key (64 lowercase hex \
                 characters of a key of prime order); nothing can be checked against it"
                    .into(),
            );
            None
        }
    }
}

/// Whether `signature` verifies over `message` under `key` by the one rule of every whole-file
/// signature ([`crate::signatures::check_file_signature`]: lowercase hex, strict); a finding
/// when not.
pub(crate) fn check_signature(
    signature: Option<&str>,
    message: Result<Vec<u8>, SigningError>,
    key: &VerifyingKey,
    findings: &mut Vec<String>,
) -> bool {
    use crate::signatures::{check_file_signature, FileSignatureError};
    let Some(sig) = signature else {
        findings.push("signature: missing; the file as a whole is not signed".into());
        return false;
    };
    let message = match message {
        Ok(m) => m,
        Err(e) => {
            findings.push(format!("signature: {e}"));
            return false;
        }
    };
    match check_file_signature(key, &message, sig) {
        Ok(()) => return true,
        Err(FileSignatureError::Malformed) => {
            findings.push("signature: not 128 lowercase hex characters".into())
        }
        Err(FileSignatureError::Key) => {
            findings.push(format!("signature: {}", FileSignatureError::Key))
        }
        Err(FileSignatureError::Invalid) => findings.push(
            "signature: does not verify under the key: a member of the file changed after it \
             was signed, or another key signed it"
                .into(),
        ),
    }
    false
}

/// How many characters of an id from the file (an order id, a trial id) a finding quotes.
pub(crate) const ID_CHARS: usize = 80;

/// At most this many budget problems are listed per cell; the rest are counted.
pub(crate) const LISTED_PER_CELL: usize = 16;

/// At most this many findings are listed per file, each at most
/// [`crate::finding::MESSAGE_CHARS`] characters; the rest are counted in one last finding. So a
/// small file full of problems never costs megabytes of findings, in text or in `--json`.
pub const LISTED_FINDINGS: usize = 200;

/// What a list of findings keeps as it grows: [`keep_listed`] after each cell or trial.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Findings cut from the list so far.
    left_out: usize,
}

impl Listing {
    /// Cuts `findings` to [`LISTED_FINDINGS`], each to its length, counting what is cut.
    pub(crate) fn keep_listed(&mut self, findings: &mut Vec<String>) {
        if findings.len() > LISTED_FINDINGS {
            self.left_out += findings.len() - LISTED_FINDINGS;
            findings.truncate(LISTED_FINDINGS);
        }
        for f in findings.iter_mut() {
            if f.len() > crate::finding::MESSAGE_CHARS {
                *f = crate::display::shorten(f, crate::finding::MESSAGE_CHARS);
            }
        }
    }

    /// Cuts the list a last time and says how many findings were left out.
    pub(crate) fn finish(mut self, findings: &mut Vec<String>) {
        self.keep_listed(findings);
        if self.left_out > 0 {
            findings.push(format!(
                "{} more findings are not listed (the first {LISTED_FINDINGS} are)",
                self.left_out
            ));
        }
    }
}

/// How a file was checked, in the report's words: `pinned` or `self-attested`.
pub(crate) fn key_name(key: &KeyCheck) -> &'static str {
    match key {
        KeyCheck::Pinned(_) => "pinned",
        KeyCheck::SelfAttested => "self-attested",
    }
}

/// A run on several hosts is a run of two (worker `a` on one, `b` on the other) whose journal
/// both reach over the network: a file journal would be one host's disk.
pub(crate) fn hosts_problem(env: &super::record::CapEnvironment) -> Option<String> {
    match env.hosts {
        None => None,
        Some(2) if env.journal == "postgresql" => None,
        Some(2) => Some(format!(
            "two hosts with a {:?} journal; two hosts share only a database journal",
            crate::display::shorten(&env.journal, ID_CHARS)
        )),
        Some(n) => Some(format!("{n} hosts; a run has one host (absent) or two")),
    }
}

fn label(i: usize, c: &CapCell) -> String {
    format!(
        "cells[{i}] ({}:{}:{} #{})",
        c.crash_point, c.overlap, c.column, c.repeat
    )
}

fn check_cell(i: usize, c: &CapCell, key: &VerifyingKey, findings: &mut Vec<String>) {
    let at = label(i, c);
    check_judgement(&at, c, key, findings);
    // Only worker a is ever killed, and only at its row's crash point.
    for (j, t) in c.tickets.iter().enumerate() {
        let allowed = j == 0 && t.killed_at.as_deref() == Some(c.crash_point.as_str());
        if t.killed_at.is_some() && !allowed {
            findings.push(format!(
                "{at}: tickets[{j}] records a kill at {:?}, but only worker a is killed, at the \
                 row's crash point",
                t.killed_at.as_deref().unwrap_or_default()
            ));
        }
    }
}

/// Everything about a judged cell but where its workers were killed: the judgement and every
/// ticket's answer and proof re-derived, receipts of the tickets' own effects, the ground truth
/// adding up, and (interlock) every budget admission re-derived from the receipts.
pub(crate) fn check_judgement(
    at: &str,
    c: &CapCell,
    key: &VerifyingKey,
    findings: &mut Vec<String>,
) {
    let differs = |findings: &mut Vec<String>, what: &str, recorded: bool, derived: bool| {
        if recorded != derived {
            findings.push(format!(
                "{at}: {what} is recorded as {recorded}, the rule gives {derived}"
            ));
        }
    };
    let judged = super::judge::judgement(c, key);
    differs(
        findings,
        "invariant_held",
        c.invariant_held,
        judged.invariant_held,
    );
    differs(
        findings,
        "answers_match",
        c.answers_match,
        judged.answers_match,
    );
    for (j, (t, d)) in c.tickets.iter().zip(&judged.tickets).enumerate() {
        let what = |field: &str| format!("tickets[{j}].{field}");
        differs(
            findings,
            &what("answer_matches"),
            t.answer_matches,
            d.answer_matches,
        );
        differs(findings, &what("proof"), t.proof, d.proof);
    }
    if !c.truth.consistent() {
        findings.push(format!(
            "{at}: the ground truth does not add up: the charge reports {} cents refunded, its \
             succeeded refunds {}",
            c.truth.amount_refunded,
            c.truth.succeeded_cents()
        ));
    }
    if c.column == "interlock" {
        let chains: Vec<&crate::entry::ReceiptBundle> = c
            .tickets
            .iter()
            .filter_map(|t| t.receipt.as_ref())
            .collect();
        let problems = super::admissions::check_budget_of(&c.order.order_id, &chains);
        let order = crate::display::shorten(&c.order.order_id, ID_CHARS);
        for problem in problems.iter().take(LISTED_PER_CELL) {
            let problem = crate::display::shorten(problem, 400);
            findings.push(format!("{at}: budget {order}: {problem}"));
        }
        if let Some(more) = problems
            .len()
            .checked_sub(LISTED_PER_CELL)
            .filter(|m| *m > 0)
        {
            findings.push(format!(
                "{at}: budget {order}: {more} more problems not listed (the first {LISTED_PER_CELL} are)"
            ));
        }
    }
}

/// The cells seen so far, by their labels.
type Seen = HashSet<(String, String, String, u32)>;

/// Cell `i`'s labels: no other cell has them, its column is known and passes its crash point,
/// and it has two tickets.
fn check_labels(i: usize, c: &CapCell, seen: &mut Seen, findings: &mut Vec<String>) {
    let labels = (
        c.crash_point.clone(),
        c.overlap.clone(),
        c.column.clone(),
        c.repeat,
    );
    if !seen.insert(labels) {
        findings.push(format!(
            "{}: a second cell with the same labels",
            label(i, c)
        ));
    }
    if !COLUMNS.contains(&c.column.as_str()) {
        findings.push(format!("{}: unknown column", label(i, c)));
    } else if !super::plan::is_kill_step(&c.column, &c.crash_point) {
        findings.push(format!(
            "{}: {} is not a step this column passes",
            label(i, c),
            c.crash_point
        ));
    }
    if c.tickets.len() != 2 {
        findings.push(format!(
            "{}: {} tickets, expected 2",
            label(i, c),
            c.tickets.len()
        ));
    }
}

/// Checks a shared_cap results file against `key`.
pub fn check(file: &CapResults, key: &KeyCheck) -> CapReport {
    let read = |i: usize| Ok::<_, Infallible>(file.cells.get(i).map(Cow::Borrowed));
    match check_cells(file, file.cells.len(), read, key) {
        Ok(report) => report,
        Err(never) => match never {},
    }
}

/// [`check`] of a file whose cells are still text ([`crate::load::load_for_check`]): a cell is
/// read, checked and dropped at a time, and nothing of it is kept but its counts in the summary
/// (a forger's review: cells kept without their receipts still held every ticket's lists, 104 MB
/// of a 1 MB gzip). The checks and the report are those of [`check`]. `Err` when a cell cannot
/// be read; the caller then reads the whole file strictly to name where.
pub fn check_text(file: &CapText<'_>, key: &KeyCheck) -> Result<CapReport, LoadError> {
    let read = |i: usize| {
        let raw = file.cells.get(i);
        raw.map(|raw| read_cap_cell(i, raw).map(Cow::Owned))
            .transpose()
    };
    check_cells(&file.head, file.cells.len(), read, key)
}

/// Every check of a shared_cap results file whose `count` cells `read` gives one at a time
/// (`head`'s own `cells` are not read): a first pass hashes each cell for the signature and
/// counts it in the summary; under a pin, a file whose signature fails stops there; a second
/// pass checks each cell.
fn check_cells<'c, E>(
    head: &CapResults,
    count: usize,
    read: impl Fn(usize) -> Result<Option<Cow<'c, CapCell>>, E>,
    key: &KeyCheck,
) -> Result<CapReport, E> {
    let found = (head.format.as_str(), head.scenario.as_str());
    let mut findings = head_findings(found, FORMAT, &head.environment);
    let resolved = file_key(&head.environment.public_key, key, &mut findings);
    let mut tally = Tally::default();
    let digests = digest_each("cells", count, &read, |_, c| tally.add(c))?;
    let message = digests.and_then(|d| message_of(head, d));
    let signed = resolved
        .as_ref()
        .is_some_and(|k| check_signature(head.signature.as_deref(), message, k, &mut findings));
    let mut report = CapReport {
        ok: false,
        key: key_name(key).into(),
        signer: resolved
            .map(|k| hex::encode(k.as_bytes()))
            .unwrap_or_default(),
        cells: count,
        judged: 0,
        signed,
        summary: Vec::new(),
        findings: Vec::new(),
    };
    // Under a pin, a file that is not what the key signed is not read further: nothing is
    // derived or counted from it.
    if matches!(key, KeyCheck::Pinned(_)) && !signed {
        report.findings = findings;
        return Ok(report);
    }
    let mut listing = Listing::default();
    report.judged = check_each_cell(
        head,
        count,
        &read,
        resolved.as_ref(),
        |f| {
            listing.keep_listed(f);
        },
        &mut findings,
    )?;
    report.summary = tally.finish();
    if report.summary != head.summary {
        findings
            .push("summary: differs from the summary the cells give (re-derived by verify)".into());
    }
    listing.finish(&mut findings);
    report.ok = findings.is_empty();
    report.findings = findings;
    Ok(report)
}

/// The second pass of [`check_cells`]: every cell read again and checked with its receipts
/// (`listed` cuts the findings before each); returns how many were judged.
fn check_each_cell<'c, E>(
    head: &CapResults,
    count: usize,
    read: &impl Fn(usize) -> Result<Option<Cow<'c, CapCell>>, E>,
    key: Option<&VerifyingKey>,
    mut listed: impl FnMut(&mut Vec<String>),
    findings: &mut Vec<String>,
) -> Result<usize, E> {
    let (mut seen, mut judged) = (HashSet::new(), 0);
    for i in 0..count {
        let Some(c) = read(i)? else { continue };
        listed(findings);
        check_labels(i, &c, &mut seen, findings);
        if let Some(why) = super::plan::database_problem(&c.column, &head.environment.journal) {
            findings.push(format!("{}: {why}", label(i, &c)));
        }
        super::bind::check_tickets(&label(i, &c), &c, key, findings);
        if !c.judged() {
            continue;
        }
        judged += 1;
        if let Some(k) = key {
            check_cell(i, &c, k, findings);
        }
    }
    Ok(judged)
}

/// What a shared_cap file's head says wrong about itself: its format and scenario (`found`,
/// against `format` and [`SCENARIO`]) and its hosts.
pub(crate) fn head_findings(
    (found_format, found_scenario): (&str, &str),
    format: &str,
    environment: &super::record::CapEnvironment,
) -> Vec<String> {
    let mut findings = Vec::new();
    if found_format != format || found_scenario != SCENARIO {
        findings.push(format!(
            "format {:?}, scenario {:?}: expected {format:?} and {SCENARIO:?}",
            crate::display::shorten(found_format, ID_CHARS),
            crate::display::shorten(found_scenario, ID_CHARS)
        ));
    }
    if let Some(why) = hosts_problem(environment) {
        findings.push(format!("environment.hosts: {why}"));
    }
    findings
}

/// The first pass over a shared_cap file's `count` cells or trials (`array`): each read by
/// `read`, hashed for the signature ([`element_digest`]), shown to `each` and dropped. The
/// digests, or the first element that has none.
pub(crate) fn digest_each<'c, T: Serialize + Clone + 'c, E>(
    array: &str,
    count: usize,
    read: &impl Fn(usize) -> Result<Option<Cow<'c, T>>, E>,
    mut each: impl FnMut(usize, &T),
) -> Result<Result<Vec<String>, SigningError>, E> {
    let mut digests = Ok(Vec::with_capacity(count));
    for i in 0..count {
        let Some(element) = read(i)? else { continue };
        if let Ok(d) = digests.as_mut() {
            match element_digest(&format!("{array}[{i}]"), &*element) {
                Ok(digest) => d.push(digest),
                Err(e) => digests = Err(e),
            }
        }
        each(i, &element);
    }
    Ok(digests)
}
