//! `verify`: checks receipt bundles and results files offline.
//!
//! Exit codes: 0 every check holds; 1 a check failed; 2 could not check (unreadable file, unknown
//! format, bad arguments). A closed standard output (`verify FILE | head -c1`) silences the
//! output, not the checks: the exit code is the same as if everything had been printed.

use anyhow::{Context, Result};
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use verify::cli::{
    check_file_with, json_error, json_report, shown_lines, NotBefore, Options, Pinned, Status,
};
use verify::display::escape;

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
    /// Fail every file made before this RFC 3339 time (e.g. 2026-11-30T00:00:00Z): a results or
    /// nemesis file by its `generated` time, a receipt by the time its seal was signed. A file
    /// that states no such time fails too.
    #[arg(long, value_name = "TIME")]
    not_before: Option<String>,
    /// Receipt bundles (`interlock-receipt/1` or original), results files
    /// (`interlock-results/2` or original).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

fn pinned_keys(args: &Args) -> Result<Pinned> {
    if let Some(k) = &args.key {
        return Ok(Pinned::Keys(vec![verify::keys::parse_key(k)?]));
    }
    if let Some(path) = &args.signers {
        // Escaped once, where the error is printed.
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--signers {}: cannot read", path.display()))?;
        let keys = verify::keys::parse_signers(&text)
            .with_context(|| format!("--signers {}", path.display()))?;
        return Ok(Pinned::Keys(keys));
    }
    Ok(Pinned::None)
}

fn not_before(args: &Args) -> Result<Option<NotBefore>> {
    let Some(arg) = &args.not_before else {
        return Ok(None);
    };
    match NotBefore::parse(arg) {
        Some(nb) => Ok(Some(nb)),
        None => anyhow::bail!(
            "--not-before {}: not an RFC 3339 time (e.g. 2026-11-30T00:00:00Z)",
            verify::display::shorten(arg, 200)
        ),
    }
}

/// Standard output that goes quiet once writing to it fails (the reader closed it): the checks
/// go on, and nothing panics.
struct Out {
    open: bool,
}

impl Out {
    fn line(&mut self, text: &str) {
        if self.open {
            let mut stdout = std::io::stdout().lock();
            self.open = writeln!(stdout, "{text}")
                .and_then(|()| stdout.flush())
                .is_ok();
        }
    }
}

fn run(args: &Args, out: &mut Out) -> Result<Status> {
    let pinned = pinned_keys(args)?;
    let options = Options {
        pinned: &pinned,
        json: args.json,
        not_before: not_before(args)?,
    };
    let mut worst = Status::Ok;
    let mut reports = Vec::new();
    let mut input_bytes = 0usize;
    for path in &args.files {
        input_bytes += std::fs::metadata(path).map_or(0, |m| m.len() as usize);
        let (status, lines, value) = check_file_with(path, &options);
        worst = worst.max(status);
        if !(args.json || (args.quiet && status == Status::Ok)) {
            shown_lines(&lines).iter().for_each(|l| out.line(l));
        }
        reports.push(value);
    }
    if args.json {
        out.line(&json_report(worst, reports, input_bytes));
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
    let mut out = Out { open: true };
    match run(&args, &mut out) {
        Ok(status) => ExitCode::from(status as u8),
        Err(e) => {
            let msg = escape(&format!("{e:#}"));
            if args.json {
                out.line(&json_error(&msg));
            }
            // Nothing to do if standard error is closed too.
            let _ = writeln!(std::io::stderr(), "verify: {msg}");
            ExitCode::from(2)
        }
    }
}
