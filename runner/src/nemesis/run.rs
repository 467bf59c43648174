//! A nemesis run: plan every trial from the run's seed, run them in parallel, write the signed
//! results file, verify it; and `--replay ID`: run one trial again from its id.

use super::console::{amounts_line, print_summary, print_verified, progress};
use super::kept::{CampaignRecord, Kept};
use super::run_error::NemesisRunError;
use super::trial::{run_trial, TrialContext, TrialSpec};
use super::Nemesis;
use crate::backend::{Backend, BackendKind};
use crate::cli::RunArgs;
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
    run_campaign(args, false)
}

/// `--resume`: continues the campaign of `args` (`--scenario billing_credit --nemesis LIST`)
/// whose finished trials are in its partial file, running only the others.
pub fn resume_campaign(args: &RunArgs, list: &str) -> Result<NemesisOutcome, NemesisRunError> {
    run_campaign(&NemesisArgs::of(args, list)?, true)
}

impl<'a> NemesisArgs<'a> {
    /// The campaign `--scenario billing_credit --nemesis LIST` asks for.
    pub fn of(args: &'a RunArgs, list: &str) -> Result<NemesisArgs<'a>, NemesisRunError> {
        Ok(NemesisArgs {
            nemeses: super::parse_list(list)?,
            trials: args.trials,
            seed: args.seed,
            // Trials mostly wait (on the in-flight bound, on held requests), so more than the
            // cores.
            jobs: args.jobs.unwrap_or(32),
            out: &args.out,
            journal: args.journal.as_deref(),
            clock_start: args.clock_start,
            outage_ms: args.outage_ms,
            exposure_span_ms: args.exposure_span_ms,
            shard: args.shard,
            signing_key: args.signing_key.as_deref(),
        })
    }
}

/// Runs the campaign (`resume`: the trials its partial file does not hold yet), keeping each
/// finished trial in its partial file, and writes the whole campaign's file.
fn run_campaign(args: &NemesisArgs<'_>, resume: bool) -> Result<NemesisOutcome, NemesisRunError> {
    let wall = Instant::now();
    let out_dir = args.out.join("nemesis");
    crate::results::check_writable(&out_dir).map_err(|error| NemesisRunError::Out {
        dir: out_dir.clone(),
        error,
    })?;
    // The code that runs is the code at the start (files may change while a long run goes on).
    let git_commit = crate::run::git_commit();
    let partial = super::kept::partial_path(&out_dir, args.shard);
    // A resume without --seed continues with the campaign's own.
    let seed = match args.seed {
        None if resume => super::kept::recorded_seed(&partial)?,
        seed => seed,
    };
    let (plan, specs) = plan_trials(args, seed)?;
    super::calibration::check_given(&plan, args.exposure_span_ms)?;
    let s = start(args.journal, args.signing_key)?;
    super::storage::preflight(&args.nemeses, s.dir.path(), &s.exe)?;
    // Ctrl-C / SIGTERM: no new trial starts; running trials end (every worker wait is bounded)
    // and are kept; the final file is not written.
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::run::install_signal_handler(cancel.clone()).map_err(SetupError::from)?;
    let mut ctx = s.context(args.clock_start, args.outage_ms, None);
    let mut record = CampaignRecord {
        environment: environment(args, &s, plan.seed, git_commit),
        plan,
    };
    let ids: Vec<String> = specs
        .iter()
        .map(|t| trial_id(t.nemesis.as_str(), t.column.as_str(), t.seed))
        .collect();
    let next = super::kept::next_words(&s.key, resume_command(args, record.plan.seed));
    let (kept, done) = if resume {
        let given = args.exposure_span_ms.is_some();
        if given {
            // Recorded as a fresh run records a given span (nothing runs for it).
            record.plan.exposure = super::calibration::exposure_span(
                &record.plan,
                args.exposure_span_ms,
                specs.len(),
                &|calibration| run_trials(&ctx, calibration, args.jobs, &cancel, None),
            )?;
        }
        super::kept::resume(&partial, &mut record, given, &s.key, &ids, next)?
    } else {
        super::kept::check_fresh(&partial)?;
        record.plan.exposure = super::calibration::exposure_span(
            &record.plan,
            args.exposure_span_ms,
            specs.len(),
            &|calibration| run_trials(&ctx, calibration, args.jobs, &cancel, None),
        )?;
        if cancel.load(Ordering::SeqCst) {
            return Err(crate::run::Interrupted.into());
        }
        let kept = super::kept::create(&partial, &record, &s.key, next)?;
        (kept, Vec::new())
    };
    ctx.exposure_span_ms = record.plan.exposure_span_ms();
    let todo: Vec<TrialSpec> = specs
        .iter()
        .filter(|t| done.iter().all(|(at, _)| *at != t.slot))
        .copied()
        .collect();
    announce(args, &record.plan, specs.len());
    let slots = run_trials(&ctx, &todo, args.jobs, &cancel, Some(&kept));
    if let Some(failure) = kept.take_failure() {
        return Err(kept.append_failed(failure));
    }
    if cancel.load(Ordering::SeqCst) {
        return Err(crate::run::Interrupted.into());
    }
    let trials = in_plan_order(specs.len(), done, &todo, slots)?;
    let file = signed_file(record, trials, &s.key)?;
    let path = write(args, &file).map_err(|(path, error)| kept.stopped_by(&path, error))?;
    kept.finished()?;
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

/// The campaign's first line: what runs.
fn announce(args: &NemesisArgs<'_>, plan: &NemesisPlan, trials: usize) {
    eprintln!(
        "runner: nemesis {} x 3 columns x {} trials{} = {} trials, {} job(s), seed {}",
        plan.nemeses.join(","),
        args.trials,
        args.shard
            .map(|s| format!(", shard {} of {}", s.index, s.count))
            .unwrap_or_default(),
        trials,
        args.jobs,
        plan.seed
    );
}

/// The campaign's file: `record`'s plan and environment, its `trials` in plan order and their
/// summary, signed once with the run's key.
fn signed_file(
    record: CampaignRecord,
    trials: Vec<Trial>,
    key: &RunKey,
) -> Result<NemesisFile, NemesisRunError> {
    let signing = crate::keys::read_signing_key(key.path()).map_err(SetupError::from)?;
    let summary = summarize(&record.plan, &trials);
    let mut file = NemesisFile {
        format: NEMESIS_FORMAT.into(),
        scenario: Scenario::BillingCredit.as_str().into(),
        generated: crate::results::now_rfc3339(),
        environment: record.environment,
        plan: record.plan,
        trials,
        summary,
        signature: FileSignature::default(),
    };
    verify::nemesis::sign::sign(&mut file, &signing)?;
    Ok(file)
}

/// The campaign's plan (the seed drawn when not given) and its trials, a shard's slice only.
fn plan_trials(
    args: &NemesisArgs<'_>,
    seed: Option<u64>,
) -> Result<(NemesisPlan, Vec<TrialSpec>), NemesisRunError> {
    let seed = seed.unwrap_or_else(|| rand::random::<u64>() >> 11);
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
/// command; no new trial starts once `cancel` is set or a trial could not be kept. Trials start
/// in [`run_order`]; each result goes to its place in `specs`, and each finished trial to
/// `kept` (at its place in the plan, `slot`) as soon as it finishes.
fn run_trials(
    ctx: &TrialContext<'_>,
    specs: &[TrialSpec],
    jobs: usize,
    cancel: &std::sync::atomic::AtomicBool,
    kept: Option<&Kept>,
) -> Slots {
    let bar = progress(specs.len());
    let slots: Mutex<Slots> = Mutex::new((0..specs.len()).map(|_| None).collect());
    let order = run_order(specs);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(specs.len().max(1)) {
            scope.spawn(|| loop {
                if cancel.load(Ordering::SeqCst) || kept.is_some_and(Kept::failed) {
                    break;
                }
                let Some(&i) = order.get(next.fetch_add(1, Ordering::SeqCst)) else {
                    break;
                };
                let Some(spec) = specs.get(i).copied() else {
                    break;
                };
                let result = run_trial(ctx, spec);
                if let (Ok(t), Some(kept)) = (&result, kept) {
                    kept.keep(spec.slot, t);
                }
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

/// The campaign's `planned` trials in plan order: those `done` before (at their places) and
/// those of `todo` (at their specs' slots) as `slots` holds them; an error when one could not
/// run.
fn in_plan_order(
    planned: usize,
    done: Vec<(usize, Trial)>,
    todo: &[TrialSpec],
    slots: Slots,
) -> Result<Vec<Trial>, NemesisRunError> {
    let mut all: Vec<Option<Trial>> = (0..planned).map(|_| None).collect();
    for (at, trial) in done {
        if let Some(place) = all.get_mut(at) {
            *place = Some(trial);
        }
    }
    for (spec, slot) in todo.iter().zip(slots) {
        let trial = match slot {
            Some(Ok(t)) => t,
            Some(Err(e)) => return Err(NemesisRunError::CouldNotContinue(e)),
            None => return Err(NemesisRunError::TrialDidNotRun),
        };
        if let Some(place) = all.get_mut(spec.slot) {
            *place = Some(trial);
        }
    }
    all.into_iter()
        .map(|t| t.ok_or(NemesisRunError::TrialDidNotRun))
        .collect()
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
    format!(
        "cargo run --release -p runner -- {}",
        campaign_options(args, seed)
    )
}

/// The command that resumes the campaign from its partial file: its options, its `--out`, and
/// the key it is signed with.
fn resume_command(args: &NemesisArgs<'_>, seed: u64) -> String {
    let key = match args.signing_key {
        Some(path) => format!(" --signing-key {}", shell_word(&path.display().to_string())),
        None => format!(" (with {} set as now)", crate::keys::SIGNING_KEY_ENV),
    };
    format!(
        "runner {} --out {} --resume{key}",
        campaign_options(args, seed),
        shell_word(&args.out.display().to_string())
    )
}

/// `word` as a shell reads it back: as it is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=,+@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The options of the campaign (or its shard), as its command lines give them.
fn campaign_options(args: &NemesisArgs<'_>, seed: u64) -> String {
    let nemeses: Vec<&str> = args.nemeses.iter().map(|n| n.as_str()).collect();
    format!(
        "--scenario billing_credit --nemesis {} --trials {} --seed {seed} --jobs {} --clock-start {}{}{}{}",
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
/// megabytes of JSON) to `DIR/nemesis/`, as the whole file or a shard's; returns its path, or
/// the path it could not write and why.
fn write(args: &NemesisArgs<'_>, file: &NemesisFile) -> Result<PathBuf, (PathBuf, std::io::Error)> {
    let stem = match args.shard {
        Some(s) => shard_file_stem(s),
        None => Scenario::BillingCredit.as_str().to_owned(),
    };
    let path = crate::results::campaign_path(&args.out.join("nemesis"), &stem);
    let mut bytes = serde_json::to_vec(file).map_err(|e| (path.clone(), e.into()))?;
    bytes.push(b'\n');
    let replaced =
        crate::results::write_campaign(&path, &bytes).map_err(|error| (path.clone(), error))?;
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
            let landed = if k.delivered {
                "delivered"
            } else {
                "not delivered"
            };
            let step = k.last_step.as_deref().unwrap_or("none recorded");
            format!(
                "{} at {} ms after {} ({landed}, last step {step})",
                k.worker, k.at_ms, k.after
            )
        })
        .collect();
    let listed = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join("; ")
        }
    };
    say!(
        "trial {}{}: outage {}, faults {}, kills {}, outcome {}, case credits {} (want {}), violation {}, answer matches {}",
        trial.id,
        at.map(|a| format!(" at {a}")).unwrap_or_default(),
        trial.outage,
        listed(trial.faults.iter().map(|f| f.kind.as_str().to_owned()).collect()),
        listed(kills),
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
