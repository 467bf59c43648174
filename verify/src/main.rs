//! `verify`: checks receipt bundles and results files offline.
//!
//! Exit codes: 0 every check holds; 1 a check failed; 2 could not check (unreadable file, unknown
//! format, bad arguments).

use anyhow::{bail, Context, Result};
use clap::Parser;
use ed25519_dalek::VerifyingKey;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use verify::check::{verify_results, ResultsReport};
use verify::load::{load_document, Document};
use verify::original::{verify_original_results, OriginalReport};
use verify::receipt::{verify_bundle, KeyCheck, ReceiptReport};
use verify::signatures::key_is_acceptable;

/// Check Interlock receipt bundles and results files offline: hash chains, signatures, replay
/// rules, and every judgement and summary number re-derived from the raw data.
#[derive(Parser, Debug)]
#[command(name = "verify", version)]
struct Args {
    /// The ed25519 public key that must have signed every entry: 64 hex characters, or a file
    /// holding them (or the 32 raw bytes). Without it, a results file is checked against the key
    /// it publishes and a receipt against the key it names (reported as self-attested).
    #[arg(long, value_name = "HEX|FILE")]
    key: Option<String>,
    /// Print one machine-readable JSON report for all files.
    #[arg(long)]
    json: bool,
    /// Print only files that fail or cannot be checked.
    #[arg(long)]
    quiet: bool,
    /// Receipt bundles (`interlock-receipt/1` or original), results files
    /// (`interlock-results/1` or original).
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

fn parse_key(arg: &str) -> Result<VerifyingKey> {
    let bytes: Vec<u8> = if arg.len() == 64 && arg.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(arg)?
    } else {
        let raw = std::fs::read(arg).with_context(|| {
            format!("--key {arg}: not 64 hex characters and not a readable file")
        })?;
        match std::str::from_utf8(&raw).map(str::trim) {
            Ok(t) if t.len() == 64 => {
                hex::decode(t).with_context(|| format!("--key file {arg}: not hex"))?
            }
            _ if raw.len() == 32 => raw,
            _ => bail!("--key file {arg} holds neither 64 hex characters nor 32 raw bytes"),
        }
    };
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("--key must be 32 bytes"))?;
    let key = VerifyingKey::from_bytes(&arr).context("--key is not a valid ed25519 public key")?;
    if !key_is_acceptable(&key) {
        bail!("--key is a weak ed25519 key (small order or torsion); no signature by it can be trusted");
    }
    Ok(key)
}

fn receipt_line(name: &str, r: &ReceiptReport) -> Vec<String> {
    let how = match r.signed {
        Some(true) => format!("signed, key {}", r.key),
        Some(false) => format!("signature check failed, key {}", r.key),
        None => "unsigned, SHA-256 chain".to_owned(),
    };
    let verdict = if r.valid { "OK" } else { "FAILED" };
    let mut lines = vec![format!(
        "{name}: receipt {} ({}, {how}), happened={}: {verdict}",
        r.effect_id, r.format, r.happened
    )];
    lines.extend(r.problems.iter().map(|p| format!("  {p}")));
    lines
}

fn original_lines(name: &str, r: &OriginalReport) -> Vec<String> {
    let verdict = if r.ok { "OK" } else { "FAILED" };
    let mut lines = vec![format!(
        "{name}: python-original results, {} receipts (unsigned, per-effect SHA-256 chains): {verdict}",
        r.receipts.len()
    )];
    lines.extend(r.findings.iter().map(|f| format!("  {f}")));
    lines
}

fn results_lines(name: &str, r: &ResultsReport) -> Vec<String> {
    let how = if r.signed {
        format!("signed, key {}", r.key)
    } else if r.receipts == 0 {
        "no receipts".to_owned()
    } else {
        format!("signature check failed, key {}", r.key)
    };
    let verdict = if r.ok { "OK" } else { "FAILED" };
    let mut lines = vec![format!(
        "{name}: {} cells, {} receipts ({how}): {verdict}",
        r.cells, r.receipts
    )];
    lines.extend(r.first_findings().into_iter().map(|f| format!("  {f}")));
    lines
}

fn check_file(path: &Path, key: &KeyCheck) -> (Status, Vec<String>, Value) {
    let name = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("cannot read: {e}");
            return (
                Status::CouldNotCheck,
                vec![format!("{name}: could not check: {msg}")],
                json!({"file": name, "status": "could_not_check", "error": msg}),
            );
        }
    };
    let loaded = load_document(&bytes);
    // The parsed document is all the checks need: give the file's bytes back before checking.
    drop(bytes);
    let doc = match loaded {
        Ok(d) => d,
        Err(e) => {
            return (
                Status::CouldNotCheck,
                vec![format!("{name}: could not check: {e}")],
                json!({"file": name, "status": "could_not_check", "error": e.to_string()}),
            );
        }
    };
    let (ok, lines, kind, report) = match doc {
        Document::Receipt(b) => {
            let r = verify_bundle(&b, key);
            (
                r.valid,
                receipt_line(&name, &r),
                "receipt",
                serde_json::to_value(&r),
            )
        }
        Document::OriginalResults(v) => {
            let r = verify_original_results(&v);
            (
                r.ok,
                original_lines(&name, &r),
                "python-original-results",
                serde_json::to_value(&r),
            )
        }
        Document::Results(f) => {
            let r = verify_results(&f, key);
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
        "report": report.unwrap_or(Value::Null),
    });
    (status, lines, value)
}

fn run(args: &Args) -> Result<Status> {
    let key = match &args.key {
        Some(k) => KeyCheck::Pinned(parse_key(k)?),
        None => KeyCheck::SelfAttested,
    };
    let mut worst = Status::Ok;
    let mut reports = Vec::new();
    for path in &args.files {
        let (status, lines, value) = check_file(path, &key);
        worst = worst.max(status);
        let silent = args.json || (args.quiet && status == Status::Ok);
        if !silent {
            for line in lines {
                println!("{line}");
            }
        }
        reports.push(value);
    }
    if args.json {
        let out = json!({"exit_code": worst as u8, "files": reports});
        println!("{}", serde_json::to_string_pretty(&out)?);
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
            eprintln!("verify: {e:#}");
            ExitCode::from(2)
        }
    }
}
