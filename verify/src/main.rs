//! `verify`: checks receipt bundles and results files offline.
//!
//! Exit codes: 0 every check holds; 1 a check failed; 2 could not check (unreadable file, unknown
//! format, bad arguments).

use anyhow::{Context, Result};
use clap::Parser;
use ed25519_dalek::VerifyingKey;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use verify::check::{verify_results, ResultsReport};
use verify::display::{escape, json_safe, shorten};
use verify::load::{load_document, Document};
use verify::original::{verify_original_results, OriginalReport};
use verify::receipt::{verify_bundle, KeyCheck, ReceiptReport};

/// Check Interlock receipt bundles and results files offline: hash chains, signatures, replay
/// rules, and every judgement and summary number re-derived from the raw data.
#[derive(Parser, Debug)]
#[command(name = "verify", version)]
struct Args {
    /// The ed25519 public key that must have signed everything: 64 hex characters, or a file
    /// holding them (or the 32 raw bytes). Get it from somewhere other than the file you check
    /// (the project's allowed-signers file, the publisher). Without it (or --signers), a file is
    /// checked against the key it names itself and reported as self-attested.
    #[arg(long, value_name = "HEX|FILE", conflicts_with = "signers")]
    key: Option<String>,
    /// An allowed-signers file: one hex public key per line, then a comment; `#` lines ignored.
    /// Everything must be signed by one of these keys.
    #[arg(long, value_name = "FILE")]
    signers: Option<PathBuf>,
    /// Print one machine-readable JSON report for all files.
    #[arg(long)]
    json: bool,
    /// Print only files that fail or cannot be checked.
    #[arg(long)]
    quiet: bool,
    /// Receipt bundles (`interlock-receipt/1` or original), results files
    /// (`interlock-results/2` or original).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// The outcome of one file, ordered by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Ok = 0,
    Failed = 1,
    CouldNotCheck = 2,
}

/// The keys a person pinned, if any.
enum Pinned {
    None,
    Keys(Vec<VerifyingKey>),
}

/// Most problem or finding lines printed per file in text output (`--json` lists them all).
const MAX_LINES_PER_FILE: usize = 40;
/// The smallest budget of the `--json` report, in bytes (it may grow to the size of the input).
const JSON_BUDGET_MIN: usize = 512 * 1024;
/// Longest printed line, in characters (a longer one is cut and says its size).
const MAX_LINE_CHARS: usize = 1000;

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
    verify::entry::decode_lower_hex::<32>(hex)
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .map_or_else(|| "no valid key".to_owned(), |k| verify::fingerprint(&k))
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
    let named = named.and_then(|h| verify::entry::decode_lower_hex::<32>(&h));
    match keys.iter().find(|k| Some(k.to_bytes()) == named) {
        Some(k) => Ok(KeyCheck::Pinned(*k)),
        None if matches!(doc, Document::OriginalResults(_)) => Ok(KeyCheck::Pinned(keys[0])),
        None => Err("signed by a key that is not in the allowed-signers file".to_owned()),
    }
}

fn could_not_check(name: &str, msg: &str) -> (Status, Vec<String>, Value) {
    (
        Status::CouldNotCheck,
        vec![format!("{name}: could not check: {msg}")],
        json!({"file": name, "status": "could_not_check", "error": msg}),
    )
}

fn check_file(path: &Path, pinned: &Pinned) -> (Status, Vec<String>, Value) {
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
    let (ok, lines, kind, report) = match doc {
        Document::Receipt(b) => {
            let r = verify_bundle(&b, &key);
            // An unsigned (original) receipt verifies its chain only; under a pin it fails.
            let ok = r.valid && (!is_pinned || r.signed == Some(true));
            let mut lines = receipt_lines(&name, &r);
            if is_pinned && r.signed.is_none() {
                unsigned_under_pin(&mut lines);
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
            let r = verify::nemesis::check::verify_nemesis(&f, &key);
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
    let value = json!({
        "file": name,
        "kind": kind,
        "status": if ok { "ok" } else { "failed" },
        "pinned_key": is_pinned,
        "report": report.unwrap_or(Value::Null),
    });
    (status, lines, value)
}

/// Print a file's lines: each escaped and cut, at most [`MAX_LINES_PER_FILE`] of them.
fn print_lines(lines: &[String]) {
    for line in lines.iter().take(MAX_LINES_PER_FILE + 1) {
        println!("{}", shorten(&escape(line), MAX_LINE_CHARS));
    }
    if lines.len() > MAX_LINES_PER_FILE + 1 {
        println!(
            "  ... and {} more (--json lists every one)",
            lines.len() - MAX_LINES_PER_FILE - 1
        );
    }
}

fn pinned_keys(args: &Args) -> Result<Pinned> {
    if let Some(k) = &args.key {
        return Ok(Pinned::Keys(vec![verify::keys::parse_key(k)?]));
    }
    if let Some(path) = &args.signers {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "--signers {}: cannot read",
                escape(&path.display().to_string())
            )
        })?;
        return Ok(Pinned::Keys(verify::keys::parse_signers(&text)?));
    }
    Ok(Pinned::None)
}

fn run(args: &Args) -> Result<Status> {
    let pinned = pinned_keys(args)?;
    let mut worst = Status::Ok;
    let mut reports = Vec::new();
    let mut input_bytes = 0usize;
    for path in &args.files {
        input_bytes += std::fs::metadata(path).map_or(0, |m| m.len() as usize);
        let (status, lines, value) = check_file(path, &pinned);
        worst = worst.max(status);
        let silent = args.json || (args.quiet && status == Status::Ok);
        if !silent {
            print_lines(&lines);
        }
        reports.push(value);
    }
    if args.json {
        let mut out = json!({"exit_code": worst as u8, "files": reports});
        // At most the size of the input, and never more than 1 MiB for an input under 1 MiB:
        // a small file full of problems must not print megabytes.
        let budget = JSON_BUDGET_MIN.max(input_bytes);
        if verify::display::fit_json(&mut out, budget) {
            out["truncated"] = Value::Bool(true);
        }
        // Compact: indentation would grow with nesting depth, not with the file.
        println!("{}", json_safe(&serde_json::to_string(&out)?));
    }
    Ok(worst)
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            // --help and --version are not errors.
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(&args) {
        Ok(status) => ExitCode::from(status as u8),
        Err(e) => {
            let msg = escape(&format!("{e:#}"));
            if args.json {
                let out = json!({"exit_code": 2, "error": msg, "files": []});
                println!("{}", json_safe(&out.to_string()));
            }
            eprintln!("verify: {msg}");
            ExitCode::from(2)
        }
    }
}
