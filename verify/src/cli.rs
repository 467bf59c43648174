//! What the `verify` command does with each file, and how it prints the verdicts. The binary
//! (`src/main.rs`) only parses arguments, calls these, and maps the worst status to the exit code.

use crate::check::{verify_results, ResultsReport};
use crate::display::{escape, json_safe, shorten};
use crate::load::{load_document, Document};
use crate::original::{verify_original_results, OriginalReport};
use crate::receipt::{verify_bundle, KeyCheck, ReceiptReport};
use ed25519_dalek::VerifyingKey;
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

/// The key a document is checked against: the pinned key that signed it, or (several allowed
/// signers) the one the document names; `Err` when the document names none of them.
fn key_for(doc: &Document, pinned: &Pinned) -> Result<KeyCheck, String> {
    let keys = match pinned {
        Pinned::None => return Ok(KeyCheck::SelfAttested),
        Pinned::Keys(k) if k.len() == 1 => return Ok(KeyCheck::Pinned(k[0])),
        Pinned::Keys(k) => k,
    };
    let named = match doc {
        Document::Results(f) => Some(f.environment.signer.clone()),
        Document::Receipt(b) => b
            .entries
            .first()
            .and_then(|e| e.get("signer"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        Document::OriginalResults(_) => None,
        Document::Nemesis(f) => Some(f.environment.signer.clone()),
    };
    let named = named.and_then(|h| crate::entry::decode_lower_hex::<32>(&h));
    match keys.iter().find(|k| Some(k.to_bytes()) == named) {
        Some(k) => Ok(KeyCheck::Pinned(*k)),
        None if matches!(doc, Document::OriginalResults(_)) => Ok(KeyCheck::Pinned(keys[0])),
        None => Err(format!(
            "{} names signer {}, which is not in the allowed-signers file",
            signer_place(doc),
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

fn could_not_check(name: &str, msg: &str) -> (Status, Vec<String>, Value) {
    (
        Status::CouldNotCheck,
        vec![format!("{name}: could not check: {msg}")],
        json!({"file": name, "status": "could_not_check", "error": msg}),
    )
}

/// Load and check one file: its status, its text lines (unescaped), and its JSON report.
pub fn check_file(path: &Path, pinned: &Pinned) -> (Status, Vec<String>, Value) {
    let name = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return could_not_check(&name, &format!("cannot read: {e}")),
    };
    let loaded = load_document(&bytes);
    // The parsed document is all the checks need: give the file's bytes back before checking.
    drop(bytes);
    let doc = match loaded {
        Ok(d) => d,
        Err(e) => return could_not_check(&name, &e.to_string()),
    };
    let key = match key_for(&doc, pinned) {
        Ok(k) => k,
        Err(why) => {
            return (
                Status::Failed,
                vec![format!("{name}: {why}: FAILED")],
                json!({"file": name, "status": "failed", "error": why}),
            )
        }
    };
    let is_pinned = matches!(key, KeyCheck::Pinned(_));
    let sealed = match &doc {
        Document::Receipt(b) => Some(b.head.is_some()),
        _ => None,
    };
    let (ok, lines, kind, report) = match doc {
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
            (ok, lines, "receipt", serde_json::to_value(&r))
        }
        Document::OriginalResults(v) => {
            let r = verify_original_results(&v);
            let mut lines = original_lines(&name, &r);
            if is_pinned {
                unsigned_under_pin(&mut lines);
            }
            let ok = r.ok && !is_pinned;
            (
                ok,
                lines,
                "python-original-results",
                serde_json::to_value(&r),
            )
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
            (r.ok, lines, "nemesis", serde_json::to_value(&r))
        }
        Document::Results(f) => {
            let r = verify_results(&f, &key);
            (
                r.ok,
                results_lines(&name, &r),
                "results",
                serde_json::to_value(&r),
            )
        }
    };
    let status = if ok { Status::Ok } else { Status::Failed };
    let mut value = json!({
        "file": name,
        "kind": kind,
        "status": if ok { "ok" } else { "failed" },
        "pinned_key": is_pinned,
        "report": report.unwrap_or(Value::Null),
    });
    if let Some(sealed) = sealed {
        value["sealed"] = Value::Bool(sealed);
    }
    (status, lines, value)
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
/// (at least [`JSON_BUDGET_MIN`]): a small file full of problems never prints megabytes.
pub fn json_report(worst: Status, files: Vec<Value>, input_bytes: usize) -> String {
    let mut out = json!({"exit_code": worst as u8, "files": files});
    if crate::display::fit_json(&mut out, JSON_BUDGET_MIN.max(input_bytes)) {
        out["truncated"] = Value::Bool(true);
    }
    json_safe(&serde_json::to_string(&out).unwrap_or_default())
}

/// The `--json` report when the arguments could not be used.
pub fn json_error(message: &str) -> String {
    json_safe(&json!({"exit_code": 2, "error": message, "files": []}).to_string())
}
