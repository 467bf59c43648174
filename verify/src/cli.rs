//! What the `verify` command does with each file, and how it prints the verdicts. The binary
//! (`src/main.rs`) only parses arguments, calls these, and maps the worst status to the exit code.

use crate::check::{verify_results, verify_results_text, Detail, ResultsReport};
use crate::display::{escape, json_safe, shorten};
use crate::load::{load_document, load_for_check, Document, Loaded};
use crate::original::{verify_original_results, OriginalReport};
use crate::receipt::{verify_bundle, KeyCheck, ReceiptReport};
use ed25519_dalek::VerifyingKey;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::path::Path;

/// The outcome of one file, ordered by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Every check holds (exit 0).
    Ok = 0,
    /// A check failed (exit 1).
    Failed = 1,
    /// The file could not be checked (exit 2).
    CouldNotCheck = 2,
}

/// The keys a person pinned, if any.
pub enum Pinned {
    /// Nothing pinned: each file is checked against the key it names (self-attested).
    None,
    /// `--key` (one key) or `--signers` (several): everything must be signed by one of them.
    Keys(Vec<VerifyingKey>),
}

/// One file's entry in the `--json` report: its name, kind and status, and its report as JSON
/// text (a large file's report is large: it is kept as text, not as a tree of values).
#[derive(Debug)]
pub struct FileJson {
    /// `file`, `kind`, `status`, `pinned_key` (or `error`), in this order.
    head: serde_json::Map<String, Value>,
    report: Option<Box<RawValue>>,
}

fn file_json(v: Value) -> FileJson {
    let head = match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    FileJson { head, report: None }
}

impl FileJson {
    /// The entry as JSON text.
    fn text(&self) -> String {
        let mut out = serde_json::to_string(&self.head).unwrap_or_else(|_| "{}".into());
        if let Some(report) = &self.report {
            out.pop();
            out.push_str(if self.head.is_empty() { "" } else { "," });
            out.push_str("\"report\":");
            out.push_str(report.get());
            out.push('}');
        }
        out
    }

    /// The entry as values, for cutting it to a budget. A report too deep to read back (it nests
    /// a value of the file one level deeper than the file did) is left out, and says so.
    fn value(self) -> Value {
        let mut entry = self.head;
        if let Some(report) = self.report {
            match serde_json::from_str::<Value>(report.get()) {
                Ok(v) => entry.insert("report".into(), v),
                Err(_) => entry.insert("report_left_out".into(), Value::Bool(true)),
            };
        }
        Value::Object(entry)
    }
}

/// Most problem or finding lines printed per file in text output (`--json` lists them all).
pub const MAX_LINES_PER_FILE: usize = 40;
/// The smallest budget of the `--json` report, in bytes (it may grow to the size of the input).
pub const JSON_BUDGET_MIN: usize = 512 * 1024;
/// Longest printed line, in characters (a longer one is cut and says its size).
pub const MAX_LINE_CHARS: usize = 1000;

fn verdict(ok: bool) -> &'static str {
    if ok {
        "OK"
    } else {
        "FAILED"
    }
}

/// How the signature was judged, for the first line of a file.
fn guarantee(key_kind: &str, signer: &str) -> String {
    match key_kind {
        "pinned" => format!("pinned key {signer}"),
        "self-attested" => format!(
            "self-attested: signed by {signer}, the key the file names itself; pin a key you got elsewhere with --key or --signers"
        ),
        _ => "unsigned".to_owned(),
    }
}

fn fingerprint_of_hex(hex: &str) -> String {
    crate::entry::decode_lower_hex::<32>(hex)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .map_or_else(|| "no valid key".to_owned(), |k| crate::fingerprint(&k))
}

fn receipt_lines(name: &str, r: &ReceiptReport) -> Vec<String> {
    let how = match r.signed {
        Some(true) => guarantee(
            &r.key,
            &fingerprint_of_hex(r.signer.as_deref().unwrap_or("")),
        ),
        Some(false) => format!("signature check failed, {}", r.key),
        None => "unsigned, SHA-256 chain only".to_owned(),
    };
    let mut lines = vec![format!(
        "{name}: receipt {} ({}, {how}), happened={}: {}",
        r.effect_id,
        r.format,
        r.happened,
        verdict(r.valid)
    )];
    lines.extend(r.problems.iter().map(|p| format!("  {p}")));
    lines
}

fn original_lines(name: &str, r: &OriginalReport) -> Vec<String> {
    let mut lines = vec![format!(
        "{name}: python-original results, {} receipts (unsigned, per-effect SHA-256 chains; consistency only): {}",
        r.receipts.len(),
        verdict(r.ok)
    )];
    lines.extend(r.findings.iter().map(|f| format!("  {f}")));
    lines
}

fn results_lines(name: &str, r: &ResultsReport) -> Vec<String> {
    let fp = r.fingerprint.as_deref().unwrap_or("no valid key");
    let how = if r.signed {
        format!("signed, {}", guarantee(&r.key, fp))
    } else {
        format!("signature check failed ({}, {fp})", r.key)
    };
    let mut lines = vec![format!(
        "{name}: {} cells, {} receipts, manifest ({how}): {}",
        r.cells,
        r.receipts,
        verdict(r.ok)
    )];
    lines.extend(r.first_findings().into_iter().map(|f| format!("  {f}")));
    lines
}

/// A lone receipt without a signed head verifies as what it holds, but cannot prove it holds
/// everything: said on every such verdict.
pub const UNSEALED_NOTE: &str = "  unsealed: no signed head says how many entries the receipt has, so it cannot prove it is complete (a receipt cut short reads as its prefix)";

/// Unsigned content cannot pass under a pinned key: the original format has no signatures.
fn unsigned_under_pin(lines: &mut Vec<String>) {
    lines.push(
        "  [unsigned_under_pinned_key] the original Python format carries no signatures, so nothing in this file is signed by the pinned key"
            .to_owned(),
    );
}

/// The signer a document names itself, if any.
fn named_signer(doc: &Document) -> Option<String> {
    match doc {
        Document::Results(f) => Some(f.environment.signer.clone()),
        Document::Receipt(b) => b
            .entries
            .first()
            .and_then(|e| e.get("signer"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        Document::OriginalResults(_) => None,
        Document::Nemesis(f) => Some(f.environment.signer.clone()),
    }
}

/// The key a document is checked against: the pinned key that signed it, or (several allowed
/// signers) the one the document names (`named`); `Err` when it names none of them. An original
/// results file names none and is checked (and fails) under the first.
fn key_for(
    named: Option<&str>,
    place: &str,
    original: bool,
    pinned: &Pinned,
) -> Result<KeyCheck, String> {
    let keys = match pinned {
        Pinned::None => return Ok(KeyCheck::SelfAttested),
        Pinned::Keys(k) if k.len() == 1 => return Ok(KeyCheck::Pinned(k[0])),
        Pinned::Keys(k) => k,
    };
    let named = named.and_then(crate::entry::decode_lower_hex::<32>);
    match keys.iter().find(|k| Some(k.to_bytes()) == named) {
        Some(k) => Ok(KeyCheck::Pinned(*k)),
        None if original => Ok(KeyCheck::Pinned(keys[0])),
        None => Err(format!(
            "{place} names signer {}, which is not in the allowed-signers file",
            named
                .and_then(|b| VerifyingKey::from_bytes(&b).ok())
                .map_or_else(|| "no valid key".to_owned(), |k| crate::fingerprint(&k))
        )),
    }
}

/// Where a document names its signer, for messages.
fn signer_place(doc: &Document) -> &'static str {
    match doc {
        Document::Receipt(_) => "entries[0].signer",
        _ => "environment.signer",
    }
}

fn could_not_check(name: &str, msg: &str) -> (Status, Vec<String>, FileJson) {
    (
        Status::CouldNotCheck,
        vec![format!("{name}: could not check: {msg}")],
        file_json(json!({"file": name, "status": "could_not_check", "error": msg})),
    )
}

fn not_allowed(name: &str, why: &str) -> (Status, Vec<String>, FileJson) {
    (
        Status::Failed,
        vec![format!("{name}: {why}: FAILED")],
        file_json(json!({"file": name, "status": "failed", "error": why})),
    )
}

/// Load and check one file: its status, its text lines (unescaped), and its JSON report.
pub fn check_file(path: &Path, pinned: &Pinned) -> (Status, Vec<String>, FileJson) {
    check_file_as(path, pinned, true)
}

/// [`check_file`]; the JSON report is built only when `json` is set (else it is `null`), since a
/// large file's report is large.
pub fn check_file_as(path: &Path, pinned: &Pinned, json: bool) -> (Status, Vec<String>, FileJson) {
    let name = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return could_not_check(&name, &format!("cannot read: {e}")),
    };
    let doc = match load_for_check(&bytes) {
        Ok(Loaded::Results(file)) => {
            let signer = Some(file.head.environment.signer.as_str());
            let detail = if json { Detail::Every } else { Detail::Failing };
            match key_for(signer, "environment.signer", false, pinned) {
                Ok(key) => {
                    if let Ok(r) = verify_results_text(&file, &key, detail) {
                        let is_pinned = matches!(key, KeyCheck::Pinned(_));
                        return finish(&name, is_pinned, results_outcome(&name, &r, json));
                    }
                }
                // As for every other document, a file that does not read is reported as such
                // first (exit 2), whatever key it names.
                Err(why) => {
                    if verify_results_text(&file, &KeyCheck::SelfAttested, Detail::Failing).is_ok()
                    {
                        return not_allowed(&name, &why);
                    }
                }
            }
            // A cell did not read cleanly: read the whole file strictly, which names the error.
            load_document(&bytes)
        }
        Ok(Loaded::Document(doc)) => Ok(doc),
        Err(e) => Err(e),
    };
    // The parsed document is all the checks need: give the file's bytes back before checking.
    drop(bytes);
    let doc = match doc {
        Ok(d) => d,
        Err(e) => return could_not_check(&name, &e.to_string()),
    };
    let original = matches!(doc, Document::OriginalResults(_));
    let key = match key_for(
        named_signer(&doc).as_deref(),
        signer_place(&doc),
        original,
        pinned,
    ) {
        Ok(k) => k,
        Err(why) => return not_allowed(&name, &why),
    };
    let is_pinned = matches!(key, KeyCheck::Pinned(_));
    let outcome = match doc {
        Document::Receipt(b) => {
            let r = verify_bundle(&b, &key);
            // An unsigned (original) receipt verifies its chain only; under a pin it fails.
            let ok = r.valid && (!is_pinned || r.signed == Some(true));
            let mut lines = receipt_lines(&name, &r);
            if is_pinned && r.signed.is_none() {
                unsigned_under_pin(&mut lines);
            }
            if b.head.is_none() && r.signed.is_some() {
                lines.push(UNSEALED_NOTE.to_owned());
            }
            let mut outcome = Outcome::new(ok, lines, "receipt", &r, json);
            outcome.sealed = Some(b.head.is_some());
            outcome
        }
        Document::OriginalResults(v) => {
            let r = verify_original_results(&v);
            let mut lines = original_lines(&name, &r);
            if is_pinned {
                unsigned_under_pin(&mut lines);
            }
            let ok = r.ok && !is_pinned;
            Outcome::new(ok, lines, "python-original-results", &r, json)
        }
        Document::Nemesis(f) => {
            let r = crate::nemesis::check::verify_nemesis(&f, &key);
            let mut lines = vec![format!(
                "{name}: nemesis, {} trials, {} receipts, {} violations, signature ({}): {}",
                r.trials,
                r.receipts,
                r.violations,
                r.key,
                verdict(r.ok)
            )];
            lines.extend(r.findings.iter().take(10).map(|f| format!("  {f}")));
            Outcome::new(r.ok, lines, "nemesis", &r, json)
        }
        Document::Results(f) => results_outcome(&name, &verify_results(&f, &key), json),
    };
    finish(&name, is_pinned, outcome)
}

/// A checked file: its verdict, its text lines, its kind, and its JSON report (as text) when one
/// is wanted.
struct Outcome {
    ok: bool,
    lines: Vec<String>,
    kind: &'static str,
    report: Option<Box<RawValue>>,
    /// For a lone receipt: whether it carries a signed head.
    sealed: Option<bool>,
}

impl Outcome {
    fn new<R: serde::Serialize>(
        ok: bool,
        lines: Vec<String>,
        kind: &'static str,
        report: &R,
        json: bool,
    ) -> Outcome {
        let report = json.then(|| {
            serde_json::value::to_raw_value(report).unwrap_or_else(|_| RawValue::NULL.to_owned())
        });
        Outcome {
            ok,
            lines,
            kind,
            report,
            sealed: None,
        }
    }
}

fn results_outcome(name: &str, r: &ResultsReport, json: bool) -> Outcome {
    Outcome::new(r.ok, results_lines(name, r), "results", r, json)
}

fn finish(name: &str, is_pinned: bool, o: Outcome) -> (Status, Vec<String>, FileJson) {
    let status = if o.ok { Status::Ok } else { Status::Failed };
    let mut head = json!({
        "file": name,
        "kind": o.kind,
        "status": if o.ok { "ok" } else { "failed" },
        "pinned_key": is_pinned,
    });
    if let Some(sealed) = o.sealed {
        head["sealed"] = Value::Bool(sealed);
    }
    let mut entry = file_json(head);
    entry.report = o.report;
    (status, o.lines, entry)
}

/// A file's lines as they are printed: each escaped and cut, at most [`MAX_LINES_PER_FILE`]
/// findings.
pub fn shown_lines(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .take(MAX_LINES_PER_FILE + 1)
        .map(|line| shorten(&escape(line), MAX_LINE_CHARS))
        .collect();
    if lines.len() > MAX_LINES_PER_FILE + 1 {
        out.push(format!(
            "  ... and {} more (--json lists every one)",
            lines.len() - MAX_LINES_PER_FILE - 1
        ));
    }
    out
}

/// The `--json` report of all files: compact (indentation would grow with nesting depth, not with
/// the file), every character a terminal could act on escaped, and at most the size of the input
/// (at least [`JSON_BUDGET_MIN`]): a small file full of problems never prints megabytes. A report
/// within the budget is written from the files' text as it is; only one past it is read back
/// into values and cut ([`crate::display::fit_json`]).
pub fn json_report(worst: Status, files: Vec<FileJson>, input_bytes: usize) -> String {
    let budget = JSON_BUDGET_MIN.max(input_bytes);
    let mut text = format!("{{\"exit_code\":{},\"files\":[", worst as u8);
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&f.text());
    }
    text.push_str("]}");
    if text.len() <= budget {
        return json_safe(&text);
    }
    drop(text);
    let files: Vec<Value> = files.into_iter().map(FileJson::value).collect();
    let mut out = json!({"exit_code": worst as u8, "files": files});
    if crate::display::fit_json(&mut out, budget) {
        out["truncated"] = Value::Bool(true);
    }
    json_safe(&serde_json::to_string(&out).unwrap_or_default())
}

/// The `--json` report when the arguments could not be used.
pub fn json_error(message: &str) -> String {
    json_safe(&json!({"exit_code": 2, "error": message, "files": []}).to_string())
}
