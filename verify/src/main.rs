//! `interlock-verify` (also built as `verify`, its older name): checks receipt bundles and
//! results files offline.
//!
//! Exit codes: 0 every check holds; 1 a check failed; 2 could not check (unreadable file, unknown
//! format, bad arguments). Verdicts go to standard output; a file that could not be checked and
//! every other error go to standard error, one line each. Every argument and every file's
//! readability is checked before any file is: a missing file is answered at once. A closed
//! standard output (`verify FILE | head -c1`) silences the output, not the checks: the exit code
//! is the same as if everything had been printed. Any other failure to write the output (a full
//! disk) exits 2 with an error: a report cut short never passes for a whole one.

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use verify::cli::{
    check_file_with, error_line, json_error, json_report, output_budget, shown_lines,
    usage_error_line, NotBefore, Options, Pinned, Status, JSON_BUDGET_MIN,
};

/// After the options: every format the command reads, and its exit codes. Wrapped at 100
/// columns, as clap wraps the rest.
const AFTER_HELP: &str = "\
Formats (told apart by their `format` field, whatever the file's name):
  interlock-receipt/1             a receipt bundle: one effect's signed, hash-chained entries
  original receipt bundle         the original Python implementation's (no `format` field)
  interlock-results/2             a billing_credit results file (the runner's matrix)
  original results file           the original Python implementation's (no `format` field)
  interlock-shared-cap/1          a shared_cap results file
  interlock-shared-cap-nemesis/1  a shared_cap nemesis file
  interlock-nemesis/3             a billing_credit nemesis file (trials under injected faults)
  interlock-scenario/1            a file of a scenario on the contract (pr_merge,
                                  pr_merge_nemesis, notify, notify_nemesis); read plain only,
                                  never compressed
  gzip                            any of the others but the last, compressed (`*.json.gz`, told
                                  by its first bytes): decompressed to at most 16 times its size
                                  (at least 1 MiB, at most 1 GiB), refused past that

Exit status: 0 every check of every file holds; 1 a check failed (a file is FAILED); 2 could
not check (an unreadable file, an unknown format, bad arguments). The worst file decides. Every
argument and every file's readability is checked before any file is. A closed standard output
(`interlock-verify FILE | head`) silences the output, not the checks: the exit status is the
same as if everything had been printed. Output that cannot be written whole for any other
reason (a full disk) exits 2.

Examples (`verify` is the same program under its older name):
  interlock-verify --signers results/SIGNERS results/*.json results/nemesis/*.json.gz
  interlock-verify --key 64HEXCHARS --json receipt.json";

/// Check Interlock receipt bundles and results files offline: hash chains, signatures, replay
/// rules, and every judgement and summary number re-derived from the raw data.
#[derive(Parser, Debug)]
#[command(
    name = "interlock-verify",
    version,
    max_term_width = 100,
    after_help = AFTER_HELP
)]
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
    /// Receipt bundles, results files, nemesis files and files of the scenarios on the
    /// contract, plain or gzip-compressed: see Formats below.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// A file that cannot be opened for reading, found before any file is checked.
fn readable(path: &Path) -> Result<()> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        anyhow!("{shown}: cannot read: {e}; pass the path of a results file, nemesis file or receipt bundle")
    })?;
    if meta.is_dir() {
        bail!("{shown}: is a directory; pass the files in it (e.g. {shown}/*.json)");
    }
    std::fs::File::open(path)
        .map_err(|e| anyhow!("{shown}: cannot read: {e}; check its permissions"))?;
    Ok(())
}

fn pinned_keys(args: &Args) -> Result<Pinned> {
    if let Some(k) = &args.key {
        return Ok(Pinned::Keys(vec![verify::keys::parse_key(k)?]));
    }
    if let Some(path) = &args.signers {
        // Escaped once, where the error is printed.
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow!(
                "--signers {}: cannot read: {e}; pass an allowed-signers file (e.g. results/SIGNERS)",
                path.display()
            )
        })?;
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

/// Standard output that goes quiet once writing to it fails: the checks go on, and nothing
/// panics. A reader that closed it (`| head`) wanted no more; any other failure (a full disk, an
/// I/O error) cut the report short, and is kept to be reported at the end.
struct Out {
    open: bool,
    failed: Option<std::io::Error>,
}

impl Out {
    fn new() -> Out {
        Out {
            open: true,
            failed: None,
        }
    }

    fn line(&mut self, text: &str) {
        if self.open {
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
                self.open = false;
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    self.failed = Some(e);
                }
            }
        }
    }

    /// The exit code once everything is printed: `code`, or 2 with one line on standard error
    /// when the report could not be written whole (a report cut short must not pass for one).
    fn finish(self, tool: &str, code: u8) -> ExitCode {
        match self.failed {
            None => ExitCode::from(code),
            Some(e) => {
                error(&format!(
                    "{tool}: error: standard output: the report could not be written whole: {e}; \
                     free space where it goes (or send it elsewhere) and check again"
                ));
                ExitCode::from(2)
            }
        }
    }
}

/// Standard error, for the errors (one line each); nothing to do if it is closed too.
fn error(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Every argument, then every file's readability: all of it before any file is checked. The
/// errors found, one per bad argument or file.
fn check_inputs(args: &Args) -> Result<(Pinned, Option<NotBefore>), Vec<anyhow::Error>> {
    let mut errors = Vec::new();
    let pinned = pinned_keys(args).map_err(|e| errors.push(e)).ok();
    let not_before = not_before(args).map_err(|e| errors.push(e)).ok();
    errors.extend(args.files.iter().filter_map(|f| readable(f).err()));
    match (pinned, not_before) {
        (Some(pinned), Some(not_before)) if errors.is_empty() => Ok((pinned, not_before)),
        _ => Err(errors),
    }
}

fn run(
    tool: &str,
    args: &Args,
    pinned: &Pinned,
    not_before: Option<NotBefore>,
    out: &mut Out,
) -> Status {
    let options = Options {
        pinned,
        json: args.json,
        not_before,
    };
    let mut worst = Status::Ok;
    let mut reports = Vec::new();
    let sizes: Vec<usize> = args
        .files
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len() as usize))
        .collect();
    let input_bytes = sizes.iter().fold(0usize, |a, b| a.saturating_add(*b));
    // Many files share one budget: the text printed, and each file's `--json` report as it is
    // kept (so memory follows the input, not the number of files times a report's size).
    let mut text = TextBudget::new(output_budget(input_bytes));
    let share = JSON_BUDGET_MIN / args.files.len().max(1);
    for (path, size) in args.files.iter().zip(&sizes) {
        let (status, lines, mut value) = check_file_with(path, &options);
        worst = worst.max(status);
        if status == Status::CouldNotCheck {
            // Not a verdict: an error, on standard error like the others.
            for l in shown_lines(&lines) {
                if text.spend(&l) {
                    error(&format!("{tool}: error: {l}"));
                }
            }
        } else if !(args.json || (args.quiet && status == Status::Ok)) {
            for l in shown_lines(&lines) {
                if text.spend(&l) {
                    out.line(&l);
                }
            }
        }
        text.file_done(status);
        if args.json {
            value.cut_to((*size).max(share));
            reports.push(value);
        }
    }
    if let Some(line) = text.left_out(tool) {
        // Standard output holds only the JSON report under `--json`.
        if args.json {
            error(&line);
        } else {
            out.line(&line);
        }
    }
    if args.json {
        out.line(&json_report(worst, reports, input_bytes));
    }
    worst
}

/// The text output's share of the run's budget ([`output_budget`]): lines are printed until it
/// is spent; after that the files checked are only counted, in one closing line.
struct TextBudget {
    left: usize,
    spent: bool,
    not_shown: [usize; 3],
}

impl TextBudget {
    fn new(budget: usize) -> TextBudget {
        TextBudget {
            left: budget,
            spent: false,
            not_shown: [0; 3],
        }
    }

    /// Whether `line` may be printed (it is then counted against the budget).
    fn spend(&mut self, line: &str) -> bool {
        if self.spent || line.len() + 1 > self.left {
            self.spent = true;
            return false;
        }
        self.left -= line.len() + 1;
        true
    }

    /// A file was checked; counted when its lines could not all be shown.
    fn file_done(&mut self, status: Status) {
        if self.spent {
            self.not_shown[status as usize] += 1;
        }
    }

    /// The closing line, when the budget ran out.
    fn left_out(&self, tool: &str) -> Option<String> {
        let [ok, failed, unchecked] = self.not_shown;
        self.spent.then(|| {
            format!(
                "{tool}: the output budget ran out; {} file(s) not shown in full: {ok} OK, {failed} FAILED, {unchecked} could not be checked (the exit code covers every file; check fewer files at once to see them)",
                ok + failed + unchecked
            )
        })
    }
}

/// The name the program was called by, for its messages: `verify` under its older name,
/// `interlock-verify` otherwise.
fn tool() -> &'static str {
    let called = std::env::args_os().next().map(PathBuf::from);
    match called.as_deref().and_then(Path::file_name) {
        Some(name) if name == "verify" => "verify",
        _ => "interlock-verify",
    }
}

/// The command: `interlock-verify` and `verify` (`src/bin/verify.rs`) both run this.
pub(crate) fn main() -> ExitCode {
    let tool = tool();
    let args = match Args::try_parse() {
        Ok(a) => a,
        // --help and --version are not errors.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            error(&usage_error_line(tool, &e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let mut out = Out::new();
    match check_inputs(&args) {
        Ok((pinned, not_before)) => {
            let status = run(tool, &args, &pinned, not_before, &mut out);
            out.finish(tool, status as u8)
        }
        Err(errors) => {
            let lines: Vec<String> = errors
                .iter()
                .map(|e| error_line(tool, e.as_ref()))
                .collect();
            if args.json {
                let prefix = format!("{tool}: error: ");
                let first = lines
                    .first()
                    .map_or("", |l| l.strip_prefix(&prefix).unwrap_or(l));
                out.line(&json_error(first));
            }
            lines.iter().for_each(|l| error(l));
            out.finish(tool, 2)
        }
    }
}
