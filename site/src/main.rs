//! `site build --results DIR --out DIR`: render verified results into a static site.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Render verified Interlock results files into a static report site.
#[derive(Parser)]
#[command(name = "site", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify every results file in --results and write the site into --out.
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
    },
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("site: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Build {
            results,
            out,
            prose,
            key,
            repository,
        } => {
            let pinned_key = match key {
                Some(hex_key) => Some(
                    hex::decode(&hex_key)
                        .ok()
                        .and_then(|b| <[u8; 32]>::try_from(b).ok())
                        .with_context(|| format!("--key {hex_key:?} is not 64 hex characters"))?,
                ),
                None => None,
            };
            let options = site::BuildOptions {
                prose: prose.map_or(site::ProseSource::Embedded, site::ProseSource::Dir),
                pinned_key,
                repository: repository.or_else(|| std::env::var("GITHUB_REPOSITORY").ok()),
            };
            let report = site::build_with(&results, &out, &options)
                .with_context(|| format!("building the site from {}", results.display()))?;
            println!("{}", report.index.display());
            eprintln!(
                "site: wrote {} pages into {}",
                report.pages.len(),
                out.display()
            );
            Ok(())
        }
    }
}
