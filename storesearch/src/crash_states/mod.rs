//! `storesearch crash-states`: record the file store under each workload and check every crash
//! state of the recording; a failing recording is saved, so `--recording` replays its check.

use anyhow::{bail, Context};
use interlock::testing::record::Op;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;
use storesearch::crash::model::TearStride;
use storesearch::crash::workloads::{Workload, ALL};
use storesearch::crash::{check_all, record, Report};

/// The command's options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workloads to run (comma-separated; default all): one_effect, threads, two_gates,
    /// recovery_tier2, recovery_tier3, budgets, appends, race.
    #[arg(long, value_delimiter = ',')]
    workload: Vec<String>,
    /// Tear each unsynced write at every N-th byte (and around each newline). 1 tears at every
    /// byte (the nightly setting); CI uses the default.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    tear_stride: u64,
    /// Record each workload this many times (thread interleavings differ between runs).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Check the crash states of a saved recording (JSON lines, as a failing search saves them)
    /// instead of running a workload; give its workload with --workload.
    #[arg(long)]
    recording: Option<PathBuf>,
    /// Where a failing search saves its recordings (default: the system's temporary directory).
    #[arg(long)]
    save_to: Option<PathBuf>,
    /// Go on with the other workloads and runs after one failed (by default the search stops
    /// there: a broken store can make every later workload fail slowly).
    #[arg(long)]
    keep_going: bool,
}

fn chosen(args: &Args) -> anyhow::Result<Vec<Workload>> {
    if args.workload.is_empty() {
        return Ok(ALL.to_vec());
    }
    args.workload
        .iter()
        .map(|name| {
            ALL.iter()
                .find(|w| w.name == name)
                .copied()
                .with_context(|| {
                    let names: Vec<&str> = ALL.iter().map(|w| w.name).collect();
                    format!(
                        "no workload {name:?}; the workloads are {}",
                        names.join(", ")
                    )
                })
        })
        .collect()
}

fn read_recording(path: &PathBuf) -> anyhow::Result<Vec<Op>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("could not open the recording {}", path.display()))?;
    std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .map(|(n, line)| {
            let line = line.with_context(|| format!("could not read {}", path.display()))?;
            serde_json::from_str(&line)
                .with_context(|| format!("{}, line {}: not an operation", path.display(), n + 1))
        })
        .collect()
}

fn save(ops: &[Op], w: &Workload, run: u64, args: &Args) -> anyhow::Result<PathBuf> {
    let dir = args.save_to.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let path = dir.join(format!(
        "storesearch-{}-{}-{run}.jsonl",
        w.name,
        std::process::id()
    ));
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&path)
            .with_context(|| format!("could not create {}", path.display()))?,
    );
    for op in ops {
        serde_json::to_writer(&mut out, op)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(path)
}

fn print(report: &Report, run: u64, ms: u128) {
    println!(
        "{{\"search\":\"crash_states\",\"workload\":\"{}\",\"run\":{run},\"ops\":{},\"states\":{},\"distinct\":{},\"answers\":{},\"failed\":{},\"ms\":{ms}}}",
        report.workload,
        report.ops,
        report.states,
        report.distinct,
        report.answers,
        report.failures.len()
    );
}

/// Run the search; `Ok(false)` when it found a failure (already printed).
pub fn main(args: &Args) -> anyhow::Result<bool> {
    let workloads = chosen(args)?;
    let stride = TearStride(usize::try_from(args.tear_stride).unwrap_or(usize::MAX));
    if let Some(path) = &args.recording {
        let [w] = workloads.as_slice() else {
            bail!("--recording needs the one workload it was recorded from, with --workload");
        };
        let ops = read_recording(path)?;
        let started = Instant::now();
        let report = check_all(w, &ops, stride);
        print(&report, 0, started.elapsed().as_millis());
        return Ok(explain(&report, None));
    }
    let (mut states, mut distinct, mut failed) = (0, 0, 0);
    for w in &workloads {
        for run in 1..=args.runs {
            let started = Instant::now();
            let ops = record(w)?;
            let report = check_all(w, &ops, stride);
            print(&report, run, started.elapsed().as_millis());
            states += report.states;
            distinct += report.distinct;
            if !report.failures.is_empty() {
                failed += report.failures.len();
                let saved = save(&ops, w, run, args)?;
                explain(&report, Some((&saved, stride)));
                if !args.keep_going {
                    eprintln!("stopped after the first failing workload (--keep-going goes on)");
                    return Ok(false);
                }
            }
        }
    }
    println!(
        "{{\"search\":\"crash_states\",\"total\":true,\"states\":{states},\"distinct\":{distinct},\"failed\":{failed}}}"
    );
    Ok(failed == 0)
}

/// Print the failures of `report` (the first few in full) and how to replay them.
fn explain(report: &Report, saved: Option<(&PathBuf, TearStride)>) -> bool {
    for f in report.failures.iter().take(5) {
        eprintln!(
            "crash state FAILED: workload {}, crash after operation {}, {}:",
            report.workload, f.cut, f.variant
        );
        for what in &f.what {
            eprintln!("  - {what}");
        }
    }
    if report.failures.len() > 5 {
        eprintln!(
            "  ... and {} more failing states",
            report.failures.len() - 5
        );
    }
    if let Some((path, stride)) = saved {
        eprintln!(
            "replay: storesearch crash-states --workload {} --recording {} --tear-stride {}",
            report.workload,
            path.display(),
            stride.0
        );
    }
    report.failures.is_empty()
}
