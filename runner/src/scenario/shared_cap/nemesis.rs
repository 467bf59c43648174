//! `runner --scenario shared_cap --nemesis LIST`: randomized trials of the two bots
//! (`verify::shared_cap::nemesis`). Each trial is a cell whose kills were drawn from the
//! campaign's seed and the trial's place in the plan; it runs through the matrix's own cell
//! code, real processes and real SIGKILLs, and is judged by the matrix's rules. Writes
//! `DIR/nemesis/shared_cap.json.gz` (`shared_cap_two_hosts.json.gz` with `--two-hosts`), signed with
//! the run's key, and checks it.

use super::cell::{run_spec, CellSpec};
use super::{cell_line, collect, run_parallel, Setup, SharedCapError};
use crate::cli::RunArgs;
use crate::run::RunOutcome;
use std::time::Instant;
use verify::receipt::KeyCheck;
use verify::shared_cap::nemesis::check::{check, sign};
use verify::shared_cap::nemesis::draw::{draw, trial_id, Draw};
use verify::shared_cap::nemesis::record::{Campaign, CapNemesisFile, CapTrial};
use verify::shared_cap::nemesis::summary::summarize;
use verify::shared_cap::nemesis::{FORMAT, NEMESES};
use verify::shared_cap::plan::columns_for;
use verify::shared_cap::record::{run_name, SCENARIO};

/// `all`, or a comma-separated list of shared_cap's nemeses, each at most once, in run order.
pub fn parse_list(list: &str) -> Result<Vec<String>, SharedCapError> {
    if list.trim() == "all" {
        return Ok(NEMESES.map(str::to_owned).to_vec());
    }
    let mut out: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !NEMESES.contains(&name) {
            return Err(SharedCapError::UnknownNemesis {
                name: name.to_owned(),
            });
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    if out.is_empty() {
        return Err(SharedCapError::NoNemesis);
    }
    Ok(out)
}

/// The campaign's trials, in plan order: nemesis, then column, then index.
fn plan(
    seed: u64,
    nemeses: &[String],
    columns: &[&str],
    trials: u32,
) -> Result<Vec<Planned>, SharedCapError> {
    let mut out = Vec::new();
    for n in nemeses {
        for &c in columns {
            for i in 0..trials {
                let d = draw(seed, n, c, i).ok_or_else(|| SharedCapError::NothingToDraw {
                    nemesis: n.clone(),
                    column: c.to_owned(),
                })?;
                out.push((n.clone(), c.to_owned(), i, d));
            }
        }
    }
    Ok(out)
}

/// A campaign's trial in plan order: nemesis, column, index, draw.
type Planned = (String, String, u32, Draw);

/// Runs a shared_cap nemesis campaign.
pub fn run(args: &RunArgs, list: &str) -> Result<RunOutcome, SharedCapError> {
    let nemeses = parse_list(list)?;
    crate::results::check_writable(&args.out.join("nemesis")).map_err(|error| {
        SharedCapError::NemesisOut {
            dir: args.out.clone(),
            error,
        }
    })?;
    let started = Instant::now();
    let setup = Setup::new(args)?;
    let ctx = setup.context();
    let seed = ctx.seed;
    let columns: Vec<String> = columns_for(super::journal_kind(args))
        .into_iter()
        .map(str::to_owned)
        .collect();
    let planned = plan(
        seed,
        &nemeses,
        &columns.iter().map(String::as_str).collect::<Vec<_>>(),
        args.trials,
    )?;
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, planned.len().max(1));
    setup.announce(
        &format!(
            "nemesis {} x {} columns x {} trials",
            nemeses.join(","),
            columns.len(),
            args.trials
        ),
        jobs,
    );
    let slots = run_parallel(&ctx, planned.len(), jobs, |i| run_one(&ctx, i, &planned[i]));
    let options = format!(" --nemesis {} --trials {}", nemeses.join(","), args.trials);
    let environment = setup.environment(args, &options);
    let (signing_key, public) = setup.finish()?;
    let trials = collect(slots)?;
    let mut file = CapNemesisFile {
        format: FORMAT.to_owned(),
        scenario: SCENARIO.to_owned(),
        generated_at: crate::results::now_rfc3339(),
        environment,
        want: verify::shared_cap::WANT.to_owned(),
        summary: summarize(&trials, &nemeses, &columns),
        plan: Campaign {
            seed,
            nemeses,
            columns,
            trials: args.trials,
        },
        trials,
        signature: None,
    };
    sign(&mut file, &signing_key).map_err(SharedCapError::SignNemesis)?;
    drop(signing_key);
    let path = write(args, &file)?;
    print_summary(&file, started.elapsed());
    say!("results: {}", path.display());
    let verified = check_written(&file, &public);
    Ok(RunOutcome {
        harness_errors: file.trials.iter().filter(|t| !t.cell.judged()).count(),
        results_path: path,
        verified,
        site_failed: false,
    })
}

/// Runs trial `i` of the plan through the matrix's cell code; gives its result, id and line.
fn run_one(
    ctx: &super::cell::CapContext<'_>,
    i: usize,
    (nemesis, column, index, d): &Planned,
) -> (Result<CapTrial, crate::cell::CellAbort>, String, String) {
    let id = trial_id(ctx.seed, nemesis, column, *index);
    let spec = CellSpec {
        column,
        overlap: &d.overlap,
        kill_a: d.kill_a.as_deref(),
        kill_b: d.kill_b.as_deref(),
        kill_restart: d.kill_restart.as_deref(),
        hold_a_ms: d.hold_a_ms,
    };
    let result = run_spec(ctx, i, &id, &spec).map(|outcome| {
        let mut cell = outcome.cell;
        if let Some(k) = &d.kill_a {
            cell.crash_point = k.clone();
        }
        cell.repeat = *index;
        CapTrial {
            id: id.clone(),
            nemesis: nemesis.clone(),
            index: *index,
            draw: d.clone(),
            restart_killed_at: outcome.restart_killed_at,
            held: outcome.held,
            cell,
        }
    });
    let line = match &result {
        Ok(t) => cell_line(&t.cell),
        Err(abort) => format!("{abort:?}"),
    };
    (result, id, line)
}

/// Writes `DIR/nemesis/<run name>.json.gz` (pretty JSON, compressed), replacing a plain
/// `<run name>.json` an earlier run left; returns its path.
fn write(args: &RunArgs, file: &CapNemesisFile) -> Result<std::path::PathBuf, SharedCapError> {
    let mut bytes = serde_json::to_vec_pretty(file).map_err(SharedCapError::SerializeTrials)?;
    bytes.push(b'\n');
    let path =
        crate::results::campaign_path(&args.out.join("nemesis"), run_name(&file.environment));
    let replaced =
        crate::results::write_campaign(&path, &bytes).map_err(|error| SharedCapError::Write {
            path: path.clone(),
            error,
        })?;
    if let Some(plain) = replaced {
        say!("{}", crate::results::replaced_line(&plain, &path));
    }
    Ok(path)
}

/// Checks the written campaign with verify's rules against the run's key; prints the verdict.
fn check_written(file: &CapNemesisFile, public: &ed25519_dalek::VerifyingKey) -> bool {
    let report = check(file, &KeyCheck::Pinned(*public));
    if report.ok {
        say!(
            "verify: ok ({} trials, signed by the run's key)",
            report.trials
        );
    } else {
        eprintln!("verify: the nemesis file does NOT verify:");
        for f in report.findings.iter().take(10) {
            eprintln!("  {f}");
        }
    }
    report.ok
}

fn print_summary(file: &CapNemesisFile, wall: std::time::Duration) {
    say!(
        "{} trials in {:.1} s (wall), backend {}, decider policy",
        file.trials.len(),
        wall.as_secs_f64(),
        file.environment.backend
    );
    for s in &file.summary {
        say!(
            "  {:<12} {:<10} held {}/{}  every kill landed {}  over the cap {}  answers {}/{}{}",
            s.nemesis,
            s.column,
            s.held,
            s.judged,
            s.all_kills_landed,
            s.over_cap,
            s.answers_matched,
            s.judged,
            if s.harness_errors > 0 {
                format!("  HARNESS_ERROR {}", s.harness_errors)
            } else {
                String::new()
            }
        );
    }
}
