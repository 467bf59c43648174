//! `site build --results DIR --out DIR`: render verified results into a static site.
//!
//! Exit codes, as `verify` has them: 0 the site was written; 1 a check failed (a results file
//! does not verify, or the data contradicts a claim of the prose or cannot be shown truthfully);
//! 2 could not build (bad arguments, a missing or unreadable input, an output that cannot be
//! written, malformed prose). Errors go to standard error, one line each; every argument and
//! directory is checked before any file is read.

use anyhow::{anyhow, bail, Context as _};
use clap::{Parser, Subcommand};
use site::SiteError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use verify::cli::{error_line, usage_error_line};

/// After the options: what the command writes and its exit codes.
const AFTER_HELP: &str = "\
The site is built whole in a fresh folder beside --out and swapped into place: an interrupted or
failed build leaves the previous site as it was, and no page of an earlier build survives.

Exit status: 0 the site was written; 1 a check failed (a results file does not verify, or the
data contradicts a claim of the prose or cannot be shown truthfully); 2 could not build (bad
arguments, a missing or unreadable input, an output that cannot be written, malformed prose).";

/// Render verified Interlock results files into a static report site.
#[derive(Parser)]
#[command(
    name = "site",
    version,
    about,
    max_term_width = 100,
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify every results file in --results and write the site into --out.
    #[command(after_help = AFTER_HELP)]
    Build {
        /// Directory holding the results files (`*.json`).
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Directory to write the site into (created if missing).
        #[arg(long, default_value = "public")]
        out: PathBuf,
        /// Read the scenario prose from this directory (one subdirectory per scenario) instead of
        /// the copy compiled into the binary; use `scenarios` while editing the Markdown.
        #[arg(long)]
        prose: Option<PathBuf>,
        /// Pin the ed25519 public key (64 hex characters) every receipt must be signed by;
        /// without it each file is checked against the key it publishes (self-attested).
        #[arg(long, value_name = "HEX")]
        key: Option<String>,
        /// The GitHub repository (`owner/name`) named in each report's `gh attestation verify`
        /// command [default: GITHUB_REPOSITORY, as GitHub Actions sets it].
        #[arg(long, value_name = "OWNER/NAME")]
        repository: Option<String>,
        /// The commit this site is built from (40 hex digits); every page says how its data's
        /// commit stands to it, counting the commits between them with git when the history is
        /// at hand [default: GITHUB_SHA, as GitHub Actions sets it, else the current
        /// directory's git HEAD; unknown outside a checkout, and the pages say so].
        #[arg(long, value_name = "HEX")]
        commit: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // --help and --version are not errors.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("site: error: no command given; run `site build` (see `site --help`)");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("{}", usage_error_line("site", &e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", error_line("site", e.as_ref()));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// 1 when the data failed a check, 2 when the build could not run.
fn exit_code(e: &anyhow::Error) -> u8 {
    match e.downcast_ref::<SiteError>() {
        Some(
            SiteError::Unverified { .. } | SiteError::FalseClaim { .. } | SiteError::Data { .. },
        ) => 1,
        _ => 2,
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Build {
            results,
            out,
            prose,
            key,
            repository,
            commit,
        } => {
            let pinned_key = key.as_deref().map(pinned_key).transpose()?;
            readable_dir(
                "--results",
                &results,
                "pass the directory that holds the results files (*.json), e.g. --results results",
            )?;
            if let Some(dir) = &prose {
                readable_dir(
                    "--prose",
                    dir,
                    "pass the directory with one subdirectory per scenario, e.g. --prose scenarios",
                )?;
            }
            writable_dir("--out", &out)?;
            let options = site::BuildOptions {
                prose: prose.map_or(site::ProseSource::Embedded, site::ProseSource::Dir),
                pinned_key,
                repository: repository.or_else(|| std::env::var("GITHUB_REPOSITORY").ok()),
                built_from: built_from(commit)?,
            };
            let report = site::build_with(&results, &out, &options).map_err(|e| match e {
                SiteError::NoResults(dir) => anyhow!(
                    "--results {}: no results file (*.json) in it; run `runner --scenario billing_credit` (it writes out/) or pass --results results",
                    dir.display()
                ),
                e => e.into(),
            })?;
            for note in &report.withheld {
                eprintln!("site: {note}");
            }
            // A closed or full standard output (`site build | head -0`) silences this line, not
            // the build: the site is written, and the exit status says so.
            {
                use std::io::Write as _;
                let _ = writeln!(std::io::stdout(), "{}", report.index.display());
            }
            eprintln!(
                "site: wrote {} pages into {}",
                report.pages.len(),
                out.display()
            );
            Ok(())
        }
    }
}

/// The site's commit: `--commit` (checked), else what [`site::built_from::BuiltFrom::from_checkout`]
/// finds.
fn built_from(commit: Option<String>) -> anyhow::Result<site::built_from::BuiltFrom> {
    let commit = match commit {
        Some(c) if c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(c.to_ascii_lowercase())
        }
        Some(c) => bail!(
            "--commit {c}: not a full commit hash (40 hex digits); pass `git rev-parse HEAD` of the checkout the site is built from"
        ),
        None => None,
    };
    Ok(site::built_from::BuiltFrom::from_checkout(commit))
}

/// `--key`: 64 hex characters of a valid ed25519 public key.
fn pinned_key(hex_key: &str) -> anyhow::Result<[u8; 32]> {
    let bytes = hex::decode(hex_key)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .with_context(|| {
            format!("--key {hex_key}: not 64 hex characters; pass the signer's public key (a line of results/SIGNERS)")
        })?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(|e| {
        anyhow!("--key {hex_key}: not a valid ed25519 public key ({e}); pass the signer's public key (a line of results/SIGNERS)")
    })?;
    Ok(bytes)
}

/// A directory the build reads: it exists, is a directory and can be listed.
fn readable_dir(flag: &str, dir: &Path, fix: &str) -> anyhow::Result<()> {
    let shown = dir.display();
    let meta =
        std::fs::metadata(dir).map_err(|e| anyhow!("{flag} {shown}: cannot read: {e}; {fix}"))?;
    if !meta.is_dir() {
        bail!("{flag} {shown}: not a directory; {fix}");
    }
    std::fs::read_dir(dir)
        .map_err(|e| anyhow!("{flag} {shown}: cannot list: {e}; check its permissions"))?;
    Ok(())
}

/// The directory the site is written into: it, or the nearest of its parents that exists, is a
/// directory one can write into. Nothing is created in it (a probe file comes and goes): the
/// build touches the output only once everything is rendered.
fn writable_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    let shown = dir.display();
    let fix = "pass a directory you can write (it is created if missing)";
    let mut existing = dir;
    loop {
        match std::fs::metadata(existing) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => bail!(
                "{flag} {shown}: {} is not a directory; {fix}",
                existing.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && existing != Path::new(".") => {
                existing = match existing.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
            }
            Err(e) => bail!(
                "{flag} {shown}: cannot read {}: {e}; {fix}",
                existing.display()
            ),
        }
    }
    let probe = existing.join(format!(".site-write-check-{}", std::process::id()));
    std::fs::File::create_new(&probe).map_err(|e| {
        anyhow!(
            "{flag} {shown}: cannot write into {}: {e}; {fix}",
            existing.display()
        )
    })?;
    std::fs::remove_file(&probe).map_err(|e| {
        anyhow!(
            "{flag} {shown}: cannot remove the probe file {}: {e}",
            probe.display()
        )
    })
}
