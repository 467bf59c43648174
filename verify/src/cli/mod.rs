//! What the `verify` command does with each file, and how it prints the verdicts. The binary
//! (`src/main.rs`) only parses arguments, calls these, and maps the worst status to the exit code.

use crate::check::{verify_results, verify_results_text, Detail, ResultsReport};
use crate::display::{escape, json_safe, shorten};
use crate::entry::ReceiptBundle;
use crate::finding::Finding;
use crate::load::{load_for_check, refuse_unread_element, Document, Loaded};
use crate::nemesis::check::{
    code as nemesis_code, verify_nemesis_pinning, verify_nemesis_text_pinning, NemesisReport,
};
use crate::nemesis::NemesisFile;
use crate::original::verify_original_results;
use crate::provenance::{Made, Provenance, Signer};
use crate::receipt::{verify_bundle, KeyCheck};
use crate::results::ResultsFile;
use ed25519_dalek::VerifyingKey;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::path::Path;

mod outcomes;
mod signers;

pub use outcomes::UNSEALED_NOTE;
use outcomes::*;
use signers::*;

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
    /// `file`, `kind`, `status`, then who signed it and when it was made (`fingerprint`,
    /// `pinned_key`, `generated` or `sealed_at`, `commit`), `sealed` and the command's own
    /// `findings` where they apply (or `error`), in this order.
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

    /// Cut the entry's report to at most `limit` bytes of text right away (as
    /// [`crate::display::fit_json`] cuts it), so a run over many files keeps a small report per
    /// file, not each file's whole one until the end.
    pub fn cut_to(&mut self, limit: usize) {
        if self.report.as_ref().is_none_or(|r| r.get().len() <= limit) {
            return;
        }
        let Some(report) = self.report.take() else {
            return;
        };
        let mut v = match serde_json::from_str::<Value>(report.get()) {
            Ok(v) => v,
            Err(_) => {
                self.head
                    .insert("report_left_out".into(), Value::Bool(true));
                return;
            }
        };
        drop(report);
        if crate::display::fit_json(&mut v, limit) {
            v["truncated"] = Value::Bool(true);
        }
        match serde_json::to_string(&v)
            .ok()
            .and_then(|t| RawValue::from_string(t).ok())
        {
            Some(raw) if raw.get().len() <= limit => self.report = Some(raw),
            _ => {
                self.head
                    .insert("report_left_out".into(), Value::Bool(true));
            }
        }
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

/// Finding codes of the rules the command adds under a pinned key.
pub mod code {
    /// The file's format carries no signatures (the original Python format), so nothing in it is
    /// signed by the pinned key.
    pub const UNSIGNED_UNDER_PINNED_KEY: &str = "unsigned_under_pinned_key";
    pub use crate::finding::code::RECEIPT_UNSEALED;
    pub use crate::provenance::code::NOT_BEFORE;
}

/// What the person verifying asked for, beyond the files.
pub struct Options<'a> {
    /// The pinned keys, if any.
    pub pinned: &'a Pinned,
    /// Build each file's JSON report (`--json`); without it the report is `null`, since a large
    /// file's report is large.
    pub json: bool,
    /// `--not-before`: files made earlier fail.
    pub not_before: Option<NotBefore>,
}

/// `--not-before TIME`: the instant (nanoseconds since the Unix epoch) and how it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotBefore {
    /// The instant.
    pub at: i128,
    /// The argument as given (RFC 3339), for messages.
    pub shown: String,
}

impl NotBefore {
    /// Reads an RFC 3339 time; `None` for anything else.
    pub fn parse(arg: &str) -> Option<NotBefore> {
        crate::provenance::parse_rfc3339(arg).map(|at| NotBefore {
            at,
            shown: arg.to_owned(),
        })
    }
}

/// Characters a file's name may take, escaped, at the head of its lines: whatever the name, the
/// rest of a verdict line (the signer's fingerprint, the time, `OK` or `FAILED`) fits in
/// [`MAX_LINE_CHARS`].
pub const NAME_CHARS: usize = 200;

/// A file's name as its text lines begin with it ([`NAME_CHARS`]).
fn line_name(name: &str) -> String {
    crate::display::shorten_shown(name, NAME_CHARS)
}

fn could_not_check(name: &str, msg: &str) -> (Status, Vec<String>, FileJson) {
    (
        Status::CouldNotCheck,
        vec![format!("{}: could not check: {msg}", line_name(name))],
        file_json(json!({"file": name, "status": "could_not_check", "error": msg})),
    )
}

fn not_allowed(name: &str, why: &str) -> (Status, Vec<String>, FileJson) {
    (
        Status::Failed,
        vec![format!("{}: {why}: FAILED", line_name(name))],
        file_json(json!({"file": name, "status": "failed", "error": why})),
    )
}

/// Load and check one file: its status, its text lines (unescaped), and its JSON report.
pub fn check_file(path: &Path, pinned: &Pinned) -> (Status, Vec<String>, FileJson) {
    let options = Options {
        pinned,
        json: true,
        not_before: None,
    };
    check_file_with(path, &options)
}

/// [`check_file`] with every option of the command.
pub fn check_file_with(path: &Path, options: &Options<'_>) -> (Status, Vec<String>, FileJson) {
    let name = path.display().to_string();
    // A gzip file (by its first bytes, whatever its name) is decompressed within its limits.
    let raw = match crate::input::read_bytes(path) {
        Ok(b) => b,
        Err(e) => return could_not_check(&name, &format!("cannot read: {e}")),
    };
    let compressed = crate::input::is_gzip(&raw);
    let on_disk = raw.len();
    let bytes = match crate::input::decompressed(raw) {
        Ok(b) => b,
        Err(e) => return could_not_check(&name, &e.to_string()),
    };
    if let Some(head) = crate::contract::read_head(&bytes) {
        if compressed {
            return could_not_check(&name, crate::contract::COMPRESSED_REFUSED);
        }
        return registered_outcome(&name, &head, &bytes, options);
    }
    // A cell or trial that did not read cleanly: the whole file is read strictly, which names
    // the error (its cells or trials never held together, its list of them given back first).
    // It is never checked whole: a file whose every cell reads whole but not on its own is
    // refused (see `refuse_unread_element`).
    let doc = match load_for_check(&bytes) {
        Ok(Loaded::Results(file)) => {
            if let Some(checked) = results_read_per_cell(&name, &file, on_disk, options) {
                return checked;
            }
            drop(file);
            Err(refuse_unread_element(&bytes, "cells"))
        }
        Ok(Loaded::Nemesis(file)) => {
            if let Some(checked) = nemesis_read_per_trial(&name, &file, options) {
                return checked;
            }
            drop(file);
            Err(refuse_unread_element(&bytes, "trials"))
        }
        Ok(Loaded::SharedCap(file)) => {
            if let Some(checked) = shared_cap_read_per_cell(&name, &file, options) {
                return checked;
            }
            drop(file);
            Err(refuse_unread_element(&bytes, "cells"))
        }
        Ok(Loaded::SharedCapNemesis(file)) => {
            if let Some(checked) = shared_cap_nemesis_read_per_trial(&name, &file, options) {
                return checked;
            }
            drop(file);
            Err(refuse_unread_element(&bytes, "trials"))
        }
        Ok(Loaded::Document(doc)) => Ok(doc),
        Err(e) => Err(e),
    };
    // The parsed document is all the checks need: give the file's bytes back before checking.
    drop(bytes);
    match doc {
        Ok(doc) => document_outcome(&name, doc, options),
        Err(e) => could_not_check(&name, &e.to_string()),
    }
}

/// A results file (of `on_disk` bytes before any decompression) read cell by cell, checked;
/// `None` when a cell did not read cleanly. As for every other document, a file that does not
/// read is reported as such first (exit 2), whatever key it names.
fn results_read_per_cell(
    name: &str,
    file: &crate::load::ResultsText<'_>,
    on_disk: usize,
    options: &Options<'_>,
) -> Option<(Status, Vec<String>, FileJson)> {
    let json = options.json;
    let signer = Some(file.head.environment.signer.as_str());
    // With `--json`, the cells' reports are kept whole up to what the output may print of them.
    let detail = if json {
        Detail::Within(output_budget(on_disk))
    } else {
        Detail::Failing
    };
    match key_for(signer, "environment.signer", false, options.pinned) {
        Ok(key) => {
            let r = verify_results_text(file, &key, detail).ok()?;
            let outcome = results_outcome(&file.head, &key, &r, json);
            Some(finish(name, outcome, options))
        }
        Err(why) => verify_results_text(file, &KeyCheck::SelfAttested, Detail::Failing)
            .is_ok()
            .then(|| not_allowed(name, &why.to_string())),
    }
}

/// A nemesis file read trial by trial, checked; `None` when a trial did not read cleanly.
fn nemesis_read_per_trial(
    name: &str,
    file: &crate::load::NemesisText<'_>,
    options: &Options<'_>,
) -> Option<(Status, Vec<String>, FileJson)> {
    // A merged file's shards may be signed by any pinned key.
    let allowed = pinned_keys(options.pinned);
    read_per_element(
        name,
        (&file.head.environment.signer, "environment.signer"),
        options,
        |key| verify_nemesis_text_pinning(file, key, allowed).ok(),
        |key, r| nemesis_outcome(&file.head, key, r, options.json),
    )
}

/// A shared_cap results file read cell by cell, checked; `None` when a cell did not read
/// cleanly.
fn shared_cap_read_per_cell(
    name: &str,
    file: &crate::load::CapText<'_>,
    options: &Options<'_>,
) -> Option<(Status, Vec<String>, FileJson)> {
    read_per_element(
        name,
        (&file.head.environment.public_key, "environment.public_key"),
        options,
        |key| crate::shared_cap::check::check_text(file, key).ok(),
        |key, r| shared_cap_outcome(&file.head, key, r, options.json),
    )
}

/// A shared_cap nemesis file read trial by trial, checked; `None` when a trial did not read
/// cleanly.
fn shared_cap_nemesis_read_per_trial(
    name: &str,
    file: &crate::load::CapNemesisText<'_>,
    options: &Options<'_>,
) -> Option<(Status, Vec<String>, FileJson)> {
    read_per_element(
        name,
        (&file.head.environment.public_key, "environment.public_key"),
        options,
        |key| crate::shared_cap::nemesis::check::check_text(file, key).ok(),
        |key, r| shared_cap_nemesis_outcome(&file.head, key, r, options.json),
    )
}

/// A file read an element (a trial, a cell) at a time: checked by `check` under the key it is
/// allowed (the key it names, and where), its outcome made by `outcome`; `None` when an element
/// did not read cleanly. As for every other document, a file that does not read is reported as
/// such first (exit 2), whatever key it names.
fn read_per_element<R>(
    name: &str,
    (signer, place): (&str, &'static str),
    options: &Options<'_>,
    check: impl Fn(&KeyCheck) -> Option<R>,
    outcome: impl FnOnce(&KeyCheck, &R) -> Outcome,
) -> Option<(Status, Vec<String>, FileJson)> {
    match key_for(Some(signer), place, false, options.pinned) {
        Ok(key) => {
            let r = check(&key)?;
            Some(finish(name, outcome(&key, &r), options))
        }
        Err(why) => check(&KeyCheck::SelfAttested).map(|_| not_allowed(name, &why.to_string())),
    }
}

/// A document read whole, checked under the key it is allowed.
fn document_outcome(
    name: &str,
    doc: Document,
    options: &Options<'_>,
) -> (Status, Vec<String>, FileJson) {
    let json = options.json;
    let original = matches!(doc, Document::OriginalResults(_));
    let key = match key_for(
        named_signer(&doc).as_deref(),
        signer_place(&doc),
        original,
        options.pinned,
    ) {
        Ok(k) => k,
        Err(why) => return not_allowed(name, &why.to_string()),
    };
    let outcome = match doc {
        Document::Receipt(b) => receipt_outcome(&b, &key, json),
        Document::OriginalResults(v) => {
            let mut outcome = original_outcome(&v, json);
            if matches!(key, KeyCheck::Pinned(_)) {
                outcome.findings.push(unsigned_under_pin());
            }
            outcome
        }
        Document::Nemesis(f) => {
            let r = verify_nemesis_pinning(&f, &key, pinned_keys(options.pinned));
            nemesis_outcome(&f, &key, &r, json)
        }
        Document::Results(f) => {
            let r = verify_results(&f, &key);
            results_outcome(&f, &key, &r, json)
        }
        Document::SharedCap(f) => {
            let r = crate::shared_cap::check::check(&f, &key);
            shared_cap_outcome(&f, &key, &r, json)
        }
        Document::SharedCapNemesis(f) => {
            let r = crate::shared_cap::nemesis::check::check(&f, &key);
            shared_cap_nemesis_outcome(&f, &key, &r, json)
        }
    };
    finish(name, outcome, options)
}

/// A checked file: its verdict, what its verdict line says, its further lines, its kind, who
/// signed it and when it was made, and its JSON report (as text) when one is wanted.
struct Outcome {
    ok: bool,
    summary: String,
    details: Vec<String>,
    kind: &'static str,
    report: Option<Box<RawValue>>,
    /// For a lone receipt: whether it carries a signed head.
    sealed: Option<bool>,
    provenance: Provenance,
    /// What the command's own rules found (a pin, `--not-before`).
    findings: Vec<Finding>,
}

impl Outcome {
    fn new<R: serde::Serialize>(
        ok: bool,
        summary: String,
        details: Vec<String>,
        kind: &'static str,
        report: &R,
        json: bool,
    ) -> Outcome {
        let report = json.then(|| {
            serde_json::value::to_raw_value(report).unwrap_or_else(|_| RawValue::NULL.to_owned())
        });
        Outcome {
            ok,
            summary,
            details,
            kind,
            report,
            sealed: None,
            provenance: Provenance {
                signer: Signer::Unsigned,
                made: Made::Unstated,
                commit: None,
            },
            findings: Vec::new(),
        }
    }
}

/// The verdict line (`<file>: <what was checked>; <signer, time, commit>: OK`), the command's
/// findings, the report's lines, and the JSON entry.
fn finish(name: &str, mut o: Outcome, options: &Options<'_>) -> (Status, Vec<String>, FileJson) {
    if let Some(nb) = &options.not_before {
        o.findings
            .extend(o.provenance.check_not_before(nb.at, &nb.shown));
    }
    let ok = o.ok && o.findings.is_empty();
    let status = if ok { Status::Ok } else { Status::Failed };
    let mut lines = vec![format!(
        "{}: {}; {}: {}",
        line_name(name),
        o.summary,
        o.provenance.text(),
        verdict(ok)
    )];
    lines.extend(o.findings.iter().map(|f| format!("  {f}")));
    lines.append(&mut o.details);
    let mut head = serde_json::Map::new();
    head.insert("file".into(), json!(name));
    head.insert("kind".into(), json!(o.kind));
    head.insert("status".into(), json!(if ok { "ok" } else { "failed" }));
    for (k, v) in o.provenance.json() {
        head.insert(k.into(), v);
    }
    if let Some(sealed) = o.sealed {
        head.insert("sealed".into(), Value::Bool(sealed));
    }
    if !o.findings.is_empty() {
        head.insert("findings".into(), json!(o.findings));
    }
    let entry = FileJson {
        head,
        report: o.report,
    };
    (status, lines, entry)
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
    let budget = output_budget(input_bytes);
    let mut text = format!("{{\"exit_code\":{},\"files\":[", worst as u8);
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&f.text());
    }
    text.push_str("]}");
    // The budget holds for what is printed: measured after escaping (an escaped character can
    // take six bytes where the text had two).
    let safe = json_safe(&text);
    if safe.len() <= budget {
        return safe;
    }
    drop((text, safe));
    let files: Vec<Value> = files.into_iter().map(FileJson::value).collect();
    let whole = json!({"exit_code": worst as u8, "files": files});
    let mut target = budget;
    loop {
        let mut out = whole.clone();
        if crate::display::fit_json(&mut out, target) {
            out["truncated"] = Value::Bool(true);
        }
        let safe = json_safe(&serde_json::to_string(&out).unwrap_or_default());
        if safe.len() <= budget {
            return safe;
        }
        if target <= JSON_BUDGET_MIN / 8 {
            // What is left is the files' own heads (many files): list the first ones that fit,
            // and say how many were left out; the exit code still covers every file.
            return files_that_fit(out, budget);
        }
        // Escaping made it longer than the budget: cut to a smaller one, in proportion.
        target = (target / 2).max(target.saturating_mul(budget) / safe.len().max(1));
    }
}

/// The output budget of one run, text or `--json`, in bytes: the size of the input (every file
/// named, as often as it is named), at least [`JSON_BUDGET_MIN`].
pub fn output_budget(input_bytes: usize) -> usize {
    JSON_BUDGET_MIN.max(input_bytes)
}

/// The report `out` (already cut) with only the first files whose entries fit in `budget`
/// bytes after escaping, and `files_left_out` saying how many did not.
fn files_that_fit(mut out: Value, budget: usize) -> String {
    let files = match out.get_mut("files").map(Value::take) {
        Some(Value::Array(files)) => files,
        _ => Vec::new(),
    };
    let total = files.len();
    // Room for the rest of the object and the count of files left out.
    let mut used = 200usize;
    let mut kept = Vec::new();
    for f in files {
        let size = json_safe(&serde_json::to_string(&f).unwrap_or_default()).len() + 1;
        if used + size > budget {
            break;
        }
        used += size;
        kept.push(f);
    }
    let left_out = total - kept.len();
    out["files"] = Value::Array(kept);
    out["files_left_out"] = json!(left_out);
    out["truncated"] = Value::Bool(true);
    json_safe(&serde_json::to_string(&out).unwrap_or_default())
}

/// The `--json` report when the arguments could not be used.
pub fn json_error(message: &str) -> String {
    json_safe(&json!({"exit_code": 2, "error": message, "files": []}).to_string())
}

/// An error as the command-line tools (`verify`, `site`, `runner`) print it: one line on standard
/// error, `<tool>: error: <message>`, where the message says what failed, where, and how to fix
/// it. Each cause of the chain follows after `: ` unless the text before already holds it (an
/// error that prints its own source would otherwise show the OS error twice). Control characters
/// are escaped, newlines included, so the line stays one line.
pub fn error_line(tool: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    format!("{tool}: error: {}", escape(&text))
}

/// A usage error (as the argument parser renders it: a message, indented details, tips, a usage
/// block and a pointer to `--help`) as one [`error_line`]-style line: the message and its
/// details, the tips after `; `, then where to read more.
pub fn usage_error_line(tool: &str, rendered: &str) -> String {
    let mut text = String::new();
    for line in rendered.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if line.is_empty() {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        if !text.is_empty() {
            text.push_str(if line.starts_with("tip:") { "; " } else { " " });
        }
        text.push_str(line);
    }
    format!("{tool}: error: {}; see `{tool} --help`", escape(&text))
}

#[cfg(test)]
mod error_line_tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "writing out/x: {}", self.0)
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_source_the_message_already_prints_is_not_printed_again() {
        let e = Outer(std::io::Error::from_raw_os_error(2));
        let line = error_line("site", &e);
        assert_eq!(line.matches("os error 2").count(), 1, "{line}");
        assert!(line.starts_with("site: error: writing out/x: "), "{line}");
    }

    #[test]
    fn a_usage_error_becomes_one_line_with_its_details_and_tips() {
        let rendered = "error: the following required arguments were not provided:\n  --scenario <SCENARIO>\n\n  tip: try this\n\nUsage: runner --scenario <SCENARIO>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            usage_error_line("runner", rendered),
            "runner: error: the following required arguments were not provided: --scenario <SCENARIO>; tip: try this; see `runner --help`"
        );
    }
}
