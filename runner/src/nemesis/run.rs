//! A nemesis run: plan every trial from the run's seed, run them in parallel, write the signed
//! results file, verify it; and `--replay ID`: run one trial again from its id.

use super::console::{amounts_line, print_summary, print_verified, progress};
use super::run_error::NemesisRunError;
use super::trial::{run_trial, TrialContext, TrialSpec};
use super::Nemesis;
use crate::backend::{Backend, BackendKind};
use crate::clock::ClockStart;
use crate::keys::RunKey;
use crate::run::SetupError;
use scenarios::billing_credit::Column;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use verify::nemesis::rules::{parse_trial_id, summarize, trial_id, trial_seed};
use verify::nemesis::shards::{in_slice, well_formed};
use verify::nemesis::{FileSignature, NemesisFile, NemesisPlan, Shard, Trial, NEMESIS_FORMAT};
use verify::results::{ClaimSettings, DeciderInfo, Environment};
use verify::scenarios::Scenario;

/// What a nemesis run wrote.
#[derive(Debug)]
pub struct NemesisOutcome {
    /// The results file.
    pub path: PathBuf,
    /// The file verified.
    pub verified: bool,
    /// Trials that are HARNESS_ERROR.
    pub harness_errors: usize,
}

/// Options of a nemesis run.
pub struct NemesisArgs<'a> {
    /// Nemeses, in order.
    pub nemeses: Vec<Nemesis>,
    /// Trials per nemesis and column.
    pub trials: u32,
    /// The run's seed (random if `None`).
    pub seed: Option<u64>,
    /// Parallel trials.
    pub jobs: usize,
    /// Results directory (the file goes to `DIR/nemesis/billing_credit.json.gz`).
    pub out: &'a Path,
    /// `--journal postgres://…`: interlock trials keep their journal in the run's own schema.
    pub journal: Option<&'a str>,
    /// Where every trial's test clock starts (`--clock-start`).
    pub clock_start: ClockStart,
    /// How long every outage's clock advance takes at least (`--outage-ms`).
    pub outage_ms: Option<u64>,
    /// `--exposure-span-ms`: the exposure span, instead of sizing it from calibration trials.
    pub exposure_span_ms: Option<u64>,
    /// `--shard K/N`: run only slice K of N of the campaign's plan (same seed, same trial ids).
    pub shard: Option<Shard>,
    /// `--signing-key`: the stable key to sign with (else the environment's, else a per-run key).
    pub signing_key: Option<&'a Path>,
}

struct Started {
    backend: Backend,
    key: RunKey,
    dir: tempfile::TempDir,
    exe: PathBuf,
    /// The journal URL with the run's schema, for `--journal`.
    journal: Option<String>,
}

impl Started {
    /// What every trial of the run needs from it; the exposure span is the fixed one until
    /// the run sizes its own.
    fn context(
        &self,
        clock_start: ClockStart,
        outage_ms: Option<u64>,
        exposure_span_ms: Option<u64>,
    ) -> TrialContext<'_> {
        TrialContext {
            backend: &self.backend,
            exe: &self.exe,
            run_dir: self.dir.path(),
            key_file: self.key.path(),
            journal: self.journal.as_deref(),
            clock_start: clock_start.unix(),
            outage_ms,
            exposure_span_ms: exposure_span_ms.unwrap_or(verify::nemesis::draw::EXPOSURE_SPAN_MS),
        }
    }
}

fn start(journal: Option<&str>, signing_key: Option<&Path>) -> Result<Started, SetupError> {
    let (dir, key) = crate::run::run_dir_and_key("interlock-nemesis-", signing_key)?;
    let run_id = format!("{:08x}", rand::random::<u32>());
    let journal = journal
        .map(|url| crate::run::journal_schema(url, &run_id))
        .transpose()?;
    let backend = Backend::start(BackendKind::Emulator, &run_id)?;
    backend.prepare()?;
    let exe = std::env::current_exe().map_err(SetupError::OwnBinary)?;
    Ok(Started {
        backend,
        key,
        dir,
        exe,
        journal,
    })
}

/// Runs every planned trial and writes `DIR/nemesis/billing_credit.json.gz`.
pub fn run_nemesis(args: &NemesisArgs<'_>) -> Result<NemesisOutcome, NemesisRunError> {
    let wall = Instant::now();
    let out_dir = args.out.join("nemesis");
    crate::results::check_writable(&out_dir).map_err(|error| NemesisRunError::Out {
        dir: out_dir.clone(),
        error,
    })?;
    // The code that runs is the code at the start (files may change while a long run goes on).
    let git_commit = crate::run::git_commit();
    let (mut plan, specs) = plan_trials(args)?;
    super::calibration::check_given(&plan, args.exposure_span_ms)?;
    let s = start(args.journal, args.signing_key)?;
    super::storage::preflight(&args.nemeses, s.dir.path(), &s.exe)?;
    // Ctrl-C / SIGTERM: no new trial starts; running trials end (every worker wait is bounded)
    // and nothing is written.
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::run::install_signal_handler(cancel.clone()).map_err(SetupError::from)?;
    let mut ctx = s.context(args.clock_start, args.outage_ms, None);
    plan.exposure = super::calibration::exposure_span(
        &plan,
        args.exposure_span_ms,
        specs.len(),
        &|calibration| run_trials(&ctx, calibration, args.jobs, &cancel),
    )?;
    if cancel.load(Ordering::SeqCst) {
        return Err(crate::run::Interrupted.into());
    }
    ctx.exposure_span_ms = plan.exposure_span_ms();
    eprintln!(
        "runner: nemesis {} x 3 columns x {} trials{} = {} trials, {} jobs, seed {}",
        plan.nemeses.join(","),
        args.trials,
        args.shard
            .map(|s| format!(", shard {} of {}", s.index, s.count))
            .unwrap_or_default(),
        specs.len(),
        args.jobs,
        plan.seed
    );
    let slots = run_trials(&ctx, &specs, args.jobs, &cancel);
    if cancel.load(Ordering::SeqCst) {
        return Err(crate::run::Interrupted.into());
    }
    let trials = collect_trials(slots)?;
    let signing = crate::keys::read_signing_key(s.key.path()).map_err(SetupError::from)?;
    let summary = summarize(&plan, &trials);
    let mut file = NemesisFile {
        format: NEMESIS_FORMAT.into(),
        scenario: Scenario::BillingCredit.as_str().into(),
        generated: crate::results::now_rfc3339(),
        environment: environment(args, &s, plan.seed, git_commit),
        plan,
        trials,
        summary,
        signature: FileSignature::default(),
    };
    verify::nemesis::sign::sign(&mut file, &signing)?;
    let path = write(args, &file)?;
    print_summary(&file, wall.elapsed().as_secs_f64());
    let report = verify::nemesis::check::verify_nemesis(
        &file,
        &verify::receipt::KeyCheck::Pinned(s.key.public()),
    );
    print_verified(&report, "signed by the run's key");
    say!("results: {}", path.display());
    Ok(NemesisOutcome {
        path,
        verified: report.ok,
        harness_errors: file.trials.iter().filter(|t| t.is_harness_error()).count(),
    })
}

/// The campaign's plan (the seed drawn when not given) and its trials, a shard's slice only.
fn plan_trials(args: &NemesisArgs<'_>) -> Result<(NemesisPlan, Vec<TrialSpec>), NemesisRunError> {
    let seed = args.seed.unwrap_or_else(|| rand::random::<u64>() >> 11);
    let plan = NemesisPlan {
        nemeses: args.nemeses.iter().map(|n| n.as_str().to_owned()).collect(),
        columns: Column::ALL.iter().map(|c| c.as_str().to_owned()).collect(),
        trials: args.trials,
        seed,
        shard: args.shard,
        merged: None,
        exposure: None,
    };
    if let Some(shard) = args.shard.filter(|s| !well_formed(*s, args.trials)) {
        return Err(NemesisRunError::Shard {
            index: shard.index,
            count: shard.count,
            trials: args.trials,
        });
    }
    let mut specs = Vec::new();
    for n in &args.nemeses {
        for c in Column::ALL {
            // A shard runs its slice of the plan; every trial keeps the id the whole run gives it.
            let mine = (0..args.trials).filter(|i| args.shard.is_none_or(|s| in_slice(*i, s)));
            for index in mine {
                let slot = specs.len();
                specs.push(TrialSpec {
                    nemesis: *n,
                    column: c,
                    index,
                    seed: trial_seed(seed, n.as_str(), c.as_str(), index),
                    slot,
                    at: None,
                    calibration: false,
                });
            }
        }
    }
    Ok((plan, specs))
}

/// A trial's result, in its place in the plan (`None`: it never ran).
pub(super) type Slots = Vec<Option<Result<Trial, super::trial_error::TrialError>>>;

/// The order the trials are started in, as positions in `specs` (which is in plan order:
/// nemesis, column, index): nemesis by nemesis, index by index, the columns of one index one
/// after another. Every column's trial `i` starts next to the other columns' trial `i`, so each
/// column meets the same load on the machine (run column by column, one column's trials all ran
/// together, and the decision phase — the same code in every column — took three times as long
/// in the last column as in the first).
fn run_order(specs: &[TrialSpec]) -> Vec<usize> {
    let mut nemeses = Vec::new();
    for s in specs {
        if !nemeses.contains(&s.nemesis) {
            nemeses.push(s.nemesis);
        }
    }
    let mut order: Vec<usize> = (0..specs.len()).collect();
    // A stable sort keeps the plan's column order within each (nemesis, index).
    order.sort_by_key(|&i| {
        let s = &specs[i];
        (nemeses.iter().position(|n| *n == s.nemesis), s.index)
    });
    order
}

/// Runs the trials on `jobs` threads behind a progress bar, printing each violation's replay
/// command; no new trial starts once `cancel` is set. Trials start in [`run_order`]; each
/// result goes to its place in the plan.
fn run_trials(
    ctx: &TrialContext<'_>,
    specs: &[TrialSpec],
    jobs: usize,
    cancel: &std::sync::atomic::AtomicBool,
) -> Slots {
    let bar = progress(specs.len());
    let slots: Mutex<Slots> = Mutex::new((0..specs.len()).map(|_| None).collect());
    let order = run_order(specs);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(specs.len().max(1)) {
            scope.spawn(|| loop {
                if cancel.load(Ordering::SeqCst) {
                    break;
                }
                let Some(&i) = order.get(next.fetch_add(1, Ordering::SeqCst)) else {
                    break;
                };
                let Some(spec) = specs.get(i).copied() else {
                    break;
                };
                let result = run_trial(ctx, spec);
                if let Ok(t) = &result {
                    if t.violation {
                        bar.println(format!(
                            "violation: {} ({}), replay: runner --replay {}",
                            t.id, t.outcome, t.id
                        ));
                    }
                }
                bar.inc(1);
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    bar.finish_and_clear();
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The trials in plan order; an error when one could not run.
fn collect_trials(slots: Slots) -> Result<Vec<Trial>, NemesisRunError> {
    let mut trials = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Some(Ok(t)) => trials.push(t),
            Some(Err(e)) => return Err(NemesisRunError::CouldNotContinue(e)),
            None => return Err(NemesisRunError::TrialDidNotRun),
        }
    }
    Ok(trials)
}

/// The campaign's record of where and how it ran, with the command that runs it again.
fn environment(
    args: &NemesisArgs<'_>,
    s: &Started,
    seed: u64,
    git_commit: Option<String>,
) -> Environment {
    let settings = s.backend.scenario_settings();
    Environment {
        backend: s.backend.name().into(),
        stripe_api_version: stripe::API_VERSION.into(),
        decider: DeciderInfo {
            kind: "policy".into(),
            model: None,
        },
        runner_version: env!("CARGO_PKG_VERSION").into(),
        git_commit,
        seed,
        claim: ClaimSettings {
            max_in_flight_ms: settings.max_in_flight.as_millis() as u64,
            claim_ttl_ms: settings.claim_ttl.as_millis() as u64,
            dedup_window_ms: scenarios::billing_credit::DEDUP_WINDOW.as_millis() as u64,
            dedup_margin_ms: interlock::GateConfig::default().dedup_margin.as_millis() as u64,
        },
        signer: s.key.public_hex(),
        command: command(args, seed),
        jobs: args.jobs as u32,
        journal: args
            .journal
            .map(|_| crate::run::JOURNAL_POSTGRESQL.to_owned()),
        clock_start: Some(args.clock_start.unix()),
        outage_ms: args.outage_ms,
    }
}

/// The command that runs the campaign (or its shard) again.
fn command(args: &NemesisArgs<'_>, seed: u64) -> String {
    let nemeses: Vec<&str> = args.nemeses.iter().map(|n| n.as_str()).collect();
    format!(
        "cargo run --release -p runner -- --scenario billing_credit --nemesis {} --trials {} --seed {seed} --jobs {} --clock-start {}{}{}{}",
        nemeses.join(","),
        args.trials,
        args.jobs,
        args.clock_start,
        args.outage_ms
            .map(|ms| format!(" --outage-ms {ms}"))
            .unwrap_or_default()
            + &args
                .exposure_span_ms
                .map(|ms| format!(" --exposure-span-ms {ms}"))
                .unwrap_or_default(),
        args.journal
            .map(|url| format!(" --journal {}", crate::run::without_password(url)))
            .unwrap_or_default(),
        // Last, so that a merge can name the whole campaign's command without it.
        args.shard
            .map(|s| format!(" --shard {}/{}", s.index, s.count))
            .unwrap_or_default()
    )
}

/// Writes the campaign (compact JSON, gzip-compressed: a run of a few thousand trials is tens of
/// megabytes of JSON) to `DIR/nemesis/`, as the whole file or a shard's; returns its path.
fn write(args: &NemesisArgs<'_>, file: &NemesisFile) -> Result<PathBuf, NemesisRunError> {
    let mut bytes = serde_json::to_vec(file).map_err(NemesisRunError::Serialize)?;
    bytes.push(b'\n');
    let stem = match args.shard {
        Some(s) => shard_file_stem(s),
        None => Scenario::BillingCredit.as_str().to_owned(),
    };
    let path = crate::results::campaign_path(&args.out.join("nemesis"), &stem);
    let replaced =
        crate::results::write_campaign(&path, &bytes).map_err(|error| NemesisRunError::Write {
            path: path.clone(),
            error,
        })?;
    if let Some(plain) = replaced {
        say!("{}", crate::results::replaced_line(&plain, &path));
    }
    Ok(path)
}

/// The file name, less `.json.gz`, of shard `shard`'s results, beside where the whole run's
/// would be.
pub(super) fn shard_file_stem(shard: Shard) -> String {
    format!("billing_credit.shard-{}-of-{}", shard.index, shard.count)
}

/// Runs the trial `id` again (its decide worker killed at step `at` when given: the trial's
/// `replay_at`) and prints what happened; returns whether it ran (not HARNESS_ERROR).
pub fn replay(
    id: &str,
    at: Option<&str>,
    clock_start: ClockStart,
    (outage_ms, exposure_span_ms): (Option<u64>, Option<u64>),
) -> Result<bool, NemesisRunError> {
    let (nemesis, column, seed) =
        parse_trial_id(id).ok_or_else(|| NemesisRunError::NotATrialId(id.to_owned()))?;
    let nemesis = super::parse_nemesis(nemesis)?;
    let column = Column::parse(column).map_err(NemesisRunError::Column)?;
    let s = start(None, None)?;
    super::storage::preflight(&[nemesis], s.dir.path(), &s.exe)?;
    let ctx = s.context(clock_start, outage_ms, exposure_span_ms);
    let trial = run_trial(
        &ctx,
        TrialSpec {
            nemesis,
            column,
            index: 0,
            seed,
            slot: 0,
            at: at
                .map(|a| {
                    super::steps::POSITIONS
                        .into_iter()
                        .find(|p| *p == a)
                        .ok_or_else(|| NemesisRunError::NotAStep { step: a.to_owned() })
                })
                .transpose()?,
            calibration: false,
        },
    )?;
    debug_assert_eq!(trial.id, trial_id(nemesis.as_str(), column.as_str(), seed));
    let kills: Vec<String> = trial
        .kills
        .iter()
        .map(|k| {
            format!(
                "{} at {} ms after {} (delivered {}, last step {:?})",
                k.worker, k.at_ms, k.after, k.delivered, k.last_step
            )
        })
        .collect();
    say!(
        "trial {}{}: outage {}, faults {:?}, kills {:?}, outcome {}, case credits {} (want {}), violation {}, answer matches {}",
        trial.id,
        at.map(|a| format!(" at {a}")).unwrap_or_default(),
        trial.outage,
        trial.faults.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(),
        kills,
        trial.outcome,
        trial.ground_truth.case_credit_count,
        trial.want.count,
        trial.violation,
        trial.answer_matches
    );
    say!(
        "clock start {clock_start}{}",
        outage_ms
            .map(|ms| format!(", outages of {ms} ms at least"))
            .unwrap_or_default()
    );
    say!("{}", amounts_line(&trial.ground_truth, clock_start));
    Ok(!trial.is_harness_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(nemesis: Nemesis, column: Column, index: u32, slot: usize) -> TrialSpec {
        TrialSpec {
            nemesis,
            column,
            index,
            seed: 0,
            slot,
            at: None,
            calibration: false,
        }
    }

    #[test]
    fn the_columns_of_one_trial_index_start_together() {
        let mut specs = Vec::new();
        for n in [Nemesis::KillRandom, Nemesis::KillInFlight] {
            for c in Column::ALL {
                for index in 0..2 {
                    specs.push(spec(n, c, index, specs.len()));
                }
            }
        }
        let started: Vec<(Nemesis, u32, Column)> = run_order(&specs)
            .iter()
            .map(|&i| (specs[i].nemesis, specs[i].index, specs[i].column))
            .collect();
        let mut want = Vec::new();
        for n in [Nemesis::KillRandom, Nemesis::KillInFlight] {
            for index in 0..2 {
                for c in Column::ALL {
                    want.push((n, index, c));
                }
            }
        }
        assert_eq!(started, want);
        let mut every = run_order(&specs);
        every.sort_unstable();
        assert_eq!(every, (0..specs.len()).collect::<Vec<_>>());
    }
}
