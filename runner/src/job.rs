//! What the runner was asked to do: clap's options turned once into a checked [`Job`]. Every
//! option combination is refused here, before anything runs; the runs themselves check only
//! values (a `--cells` spec, `--jobs 0`, a directory that cannot be written).

use crate::backend::BackendKind;
use crate::cli::{Cli, Internal, KeygenArgs, MergeArgs, ReconcileArgs, RunArgs};
use crate::clock::ClockStart;
use crate::keys::KeyError;
use crate::nemesis::{MergeShardsError, NemesisOutcome, NemesisRunError};
use crate::run::RunOutcome;
use crate::scenario::shared_cap::worker::CapWorkerArgs;
use crate::scenario::{RunKind, ScenarioError, ScenarioOption, ScenarioRun, ALL, SCENARIOS};
use crate::worker::WorkerArgs;
use std::process::ExitCode;

/// A command line the runner refuses before anything runs; exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(String);

/// Why a job could not start or go on (exit 2), or [`crate::run::Interrupted`] (exit 130 or
/// 143; [`JobError::is_interrupted`]).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A scenario's matrix or campaign.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// `runner merge`.
    #[error(transparent)]
    Merge(#[from] MergeShardsError),
    /// `runner --replay`.
    #[error(transparent)]
    Replay(#[from] NemesisRunError),
    /// `runner keygen`: the key file could not be written.
    #[error("{0}; pass the path of a new file in an existing directory")]
    Keygen(KeyError),
    /// `runner keygen`: the key file is written, but its allowed-signers line could not be
    /// printed (a closed or full standard output): the line is given here instead.
    #[error(
        "{}: the key is written, but its allowed-signers line could not be printed: {why}; add \
         this line to the signers file yourself: {line}",
        file.display()
    )]
    SignersLine {
        /// The key file written.
        file: std::path::PathBuf,
        /// The line that was to be printed.
        line: String,
        /// Why printing it failed.
        why: std::io::Error,
    },
    /// A run that finished what it was doing after Ctrl-C or SIGTERM (the report site being
    /// rendered): it ends as interrupted all the same, naming what it wrote.
    #[error(transparent)]
    Interrupted(#[from] crate::run::Interrupted),
}

impl JobError {
    /// Whether the job stopped because the disk filled (exit [`crate::DISK_FULL_EXIT`]): its
    /// finished work is kept, and the message says where.
    pub fn is_disk_full(&self) -> bool {
        self.keeps_work_of_full_disk() || self.lost_to_full_disk()
    }

    /// Whether the disk filled and the finished work is kept (a campaign's partial file), the
    /// message saying where.
    fn keeps_work_of_full_disk(&self) -> bool {
        matches!(
            self,
            JobError::Scenario(ScenarioError::Nemesis(NemesisRunError::DiskFull { .. }))
        )
    }

    /// Whether the disk (or the quota) filled where nothing of the run could be kept: a
    /// results file, of a run that keeps no partial file, that could not be written.
    pub fn lost_to_full_disk(&self) -> bool {
        !self.keeps_work_of_full_disk()
            && std::iter::successors(Some(self as &dyn std::error::Error), |e| e.source()).any(
                |e| {
                    e.downcast_ref::<std::io::Error>()
                        .is_some_and(crate::partial::disk_full)
                },
            )
    }

    /// Whether the job was interrupted (Ctrl-C or SIGTERM) rather than failed.
    pub fn is_interrupted(&self) -> bool {
        match self {
            JobError::Scenario(e) => e.is_interrupted(),
            JobError::Replay(NemesisRunError::Interrupted(_)) | JobError::Interrupted(_) => true,
            _ => false,
        }
    }
}

/// One checked thing to do.
pub enum Job {
    /// A billing_credit worker process (started by the runner).
    Worker(Box<WorkerArgs>),
    /// A shared_cap worker process (started by the runner).
    CapWorker(Box<CapWorkerArgs>),
    /// A pr_merge worker process (started by the runner).
    MergeWorker(Box<crate::scenario::pr_merge::worker::MergeWorkerArgs>),
    /// A notify worker process (started by the runner).
    NotifyWorker(Box<crate::scenario::notify::worker::NotifyWorkerArgs>),
    /// `runner reconcile`.
    Reconcile(ReconcileArgs),
    /// `runner merge`.
    Merge(MergeArgs),
    /// `runner keygen`.
    Keygen(KeygenArgs),
    /// `runner --replay ID`.
    Replay(Replay),
    /// One scenario's matrix.
    Matrix {
        /// The scenario.
        scenario: &'static dyn ScenarioRun,
        /// The run's options, checked.
        args: RunArgs,
    },
    /// One scenario's nemesis campaign.
    Nemesis {
        /// The scenario.
        scenario: &'static dyn ScenarioRun,
        /// `--nemesis LIST`, parsed by the scenario.
        list: String,
        /// The run's options, checked.
        args: RunArgs,
    },
    /// `--scenario all`: every scenario's matrix, then one site.
    All(RunArgs),
}

/// `runner --replay ID [--at STEP]`: one billing_credit nemesis trial again.
pub struct Replay {
    /// The trial's id.
    pub id: String,
    /// `--at STEP`.
    pub at: Option<String>,
    /// `--clock-start`.
    pub clock_start: ClockStart,
    /// `--outage-ms`.
    pub outage_ms: Option<u64>,
    /// `--exposure-span-ms`.
    pub exposure_span_ms: Option<u64>,
}

/// What a job ended with, for its exit code.
#[derive(Debug)]
pub enum Outcome {
    /// Exit with this code; the job has said what there was to say.
    Exit(u8),
    /// A results file of cells was written (a matrix, or a shared_cap campaign).
    Cells(RunOutcome),
    /// A billing_credit nemesis file was written.
    Trials(NemesisOutcome),
}

impl Outcome {
    /// The exit code (cli.rs's "Exit status"): 0 when every cell or trial was judged and the
    /// file verifies, 1 when not (the HARNESS_ERROR count printed).
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Outcome::Exit(code) => ExitCode::from(*code),
            Outcome::Cells(o) => {
                if o.harness_errors > 0 {
                    eprintln!(
                        "{} cell(s) are HARNESS_ERROR: see harness_error in {}",
                        o.harness_errors,
                        o.results_path.display()
                    );
                }
                if o.site_failed {
                    eprintln!(
                        "the report site could not be rendered (see above); the results are \
                         written in {}",
                        o.results_path.display()
                    );
                }
                pass_or_fail(o.verified && o.harness_errors == 0 && !o.site_failed)
            }
            Outcome::Trials(o) => {
                if o.harness_errors > 0 {
                    eprintln!(
                        "{} trial(s) are HARNESS_ERROR: see {}",
                        o.harness_errors,
                        o.path.display()
                    );
                }
                pass_or_fail(o.verified && o.harness_errors == 0)
            }
        }
    }
}

fn pass_or_fail(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

impl TryFrom<Cli> for Job {
    type Error = Refused;

    fn try_from(cli: Cli) -> Result<Job, Refused> {
        Ok(match cli.command {
            Some(Internal::Worker(args)) => Job::Worker(args),
            Some(Internal::CapWorker(args)) => Job::CapWorker(args),
            Some(Internal::MergeWorker(args)) => Job::MergeWorker(args),
            Some(Internal::NotifyWorker(args)) => Job::NotifyWorker(args),
            Some(Internal::Reconcile(args)) => Job::Reconcile(args),
            Some(Internal::Merge(args)) => Job::Merge(args),
            Some(Internal::Keygen(args)) => Job::Keygen(args),
            None => return run_job(cli.run),
        })
    }
}

/// The job of a command line without a subcommand: a replay, a campaign, a matrix or all.
fn run_job(args: RunArgs) -> Result<Job, Refused> {
    if let Some(id) = &args.replay {
        return Ok(Job::Replay(Replay {
            id: id.clone(),
            at: args.at.clone(),
            clock_start: args.clock_start,
            outage_ms: args.outage_ms,
            exposure_span_ms: args.exposure_span_ms,
        }));
    }
    let name = args.scenario.as_deref().unwrap_or_default();
    let scenario = SCENARIOS.iter().copied().find(|s| s.name() == name);
    let kind = match args.nemesis {
        Some(_) => RunKind::Nemesis,
        None => RunKind::Matrix,
    };
    if let Some(why) = scenario.and_then(|s| s.not_runnable()) {
        return Err(Refused(format!(
            "--scenario {name} cannot be run yet: {why}"
        )));
    }
    let runs: Vec<&'static dyn ScenarioRun> = match (scenario, kind) {
        (Some(s), _) => vec![s],
        (None, RunKind::Matrix) if name == ALL => crate::scenario::runnable(),
        _ => return Err(Refused(one_scenario_please(kind))),
    };
    for option in ScenarioOption::ALL.into_iter().filter(|o| o.given(&args)) {
        if let Some(s) = runs.iter().find(|s| !s.takes(option, kind)) {
            return Err(Refused(s.refusal(option, kind)));
        }
    }
    refuse_unmet_needs(&args)?;
    refuse_resume_elsewhere(&args, scenario)?;
    Ok(match (scenario, args.nemesis.clone()) {
        (Some(scenario), Some(list)) => Job::Nemesis {
            scenario,
            list,
            args,
        },
        (Some(scenario), None) => Job::Matrix { scenario, args },
        (None, _) => Job::All(args),
    })
}

/// What `--scenario` must be: one scenario for a campaign (`all` runs matrices only).
fn one_scenario_please(kind: RunKind) -> String {
    let names: Vec<String> = crate::scenario::runnable()
        .iter()
        .map(|s| format!("--scenario {}", s.name()))
        .collect();
    match kind {
        RunKind::Nemesis => format!(
            "--nemesis runs one scenario's trials: pass {}",
            names.join(" or ")
        ),
        RunKind::Matrix => format!("--scenario: pass {} or --scenario {ALL}", names.join(", ")),
    }
}

/// `--resume` continues a billing_credit campaign: the only campaign loop that keeps its
/// finished trials in a partial file yet.
fn refuse_resume_elsewhere(
    args: &RunArgs,
    scenario: Option<&'static dyn ScenarioRun>,
) -> Result<(), Refused> {
    let billing_credit = verify::scenarios::Scenario::BillingCredit.as_str();
    match scenario {
        Some(s) if args.resume && s.name() != billing_credit => Err(Refused(format!(
            "--resume continues a --scenario {billing_credit} campaign; {}'s campaigns keep no \
             partial file to resume from yet (drop --resume)",
            s.name()
        ))),
        _ => Ok(()),
    }
}

/// Options that need another option or a backend.
fn refuse_unmet_needs(args: &RunArgs) -> Result<(), Refused> {
    let emulator = args.backend == BackendKind::Emulator;
    let unmet = [
        (
            args.two_hosts && args.journal.is_none(),
            "--two-hosts needs --journal postgres://...: the hosts share no disk, so the \
             interlock column's journal must be a database both reach",
        ),
        (
            args.two_hosts && !emulator,
            "--two-hosts runs against the embedded emulator only (its hosts reach services \
             through relays on this machine); drop --backend stripe",
        ),
        (
            args.outage_ms.is_some() && !emulator,
            "--outage-ms sets how long the emulator's clock advances take; Stripe's take what \
             they take (drop it with --backend stripe)",
        ),
        (
            args.keep_emulator && !emulator,
            "--keep-emulator keeps the embedded emulator serving; it needs --backend emulator",
        ),
    ];
    match unmet.into_iter().find(|(unmet, _)| *unmet) {
        Some((_, why)) => Err(Refused(why.to_owned())),
        None => Ok(()),
    }
}

/// Runs a worker process's body once it watches for its runner's end: a worker whose runner is
/// gone stops ([`crate::parent_watch`]).
fn as_worker(body: impl FnOnce() -> i32) -> i32 {
    crate::parent_watch::exit_when_parent_gone();
    body()
}

impl Job {
    /// Runs the job. Errors are the run's: it could not start or go on (exit 2), or it was
    /// interrupted ([`crate::run::Interrupted`], exit 130 or 143).
    pub fn run(self) -> Result<Outcome, JobError> {
        let outcome = self.run_through()?;
        // A signal that came while the last step (the site) was finished is still the news.
        if matches!(outcome, Outcome::Cells(_) | Outcome::Trials(_))
            && crate::run::stopped_by_signal()
        {
            return Err(crate::run::Interrupted.into());
        }
        Ok(outcome)
    }

    /// Runs the job as asked; [`Job::run`] adds what a stopping signal meant.
    fn run_through(self) -> Result<Outcome, JobError> {
        match self {
            Job::Worker(args) => Ok(exit_with(as_worker(|| crate::worker::main(&args)))),
            Job::CapWorker(args) => Ok(exit_with(as_worker(|| {
                crate::scenario::shared_cap::worker::main(&args)
            }))),
            Job::MergeWorker(args) => Ok(exit_with(as_worker(|| {
                crate::scenario::pr_merge::worker::main(&args)
            }))),
            Job::NotifyWorker(args) => Ok(exit_with(as_worker(|| {
                crate::scenario::notify::worker::main(&args)
            }))),
            Job::Reconcile(args) => Ok(Outcome::Exit(crate::reconcile::command(&args))),
            Job::Merge(args) => Ok(crate::nemesis::merge_shards(&args).map(passed)?),
            Job::Keygen(args) => keygen(&args),
            Job::Replay(r) => Ok(crate::nemesis::replay(
                &r.id,
                r.at.as_deref(),
                r.clock_start,
                (r.outage_ms, r.exposure_span_ms),
            )
            .map(passed)?),
            Job::Matrix { scenario, args } => Ok(scenario.matrix(&args).map(Outcome::Cells)?),
            // A resume reads the campaign's partial file, which billing_credit's campaign keeps
            // (the only one refuse_resume_elsewhere lets through).
            Job::Nemesis { list, args, .. } if args.resume => {
                Ok(crate::nemesis::resume_campaign(&args, &list)
                    .map(Outcome::Trials)
                    .map_err(ScenarioError::from)?)
            }
            Job::Nemesis {
                scenario,
                list,
                args,
            } => Ok(scenario.nemesis(&args, &list)?),
            Job::All(args) => Ok(run_all(&args).map(Outcome::Cells)?),
        }
    }
}

/// A worker's exit code as the process's (1 when it does not fit).
fn exit_with(code: i32) -> Outcome {
    Outcome::Exit(u8::try_from(code).unwrap_or(1))
}

/// 0 when a merge's or a replay's check passed, 1 when not.
fn passed(ok: bool) -> Outcome {
    Outcome::Exit(if ok { 0 } else { 1 })
}

/// `runner keygen FILE`: writes the key and prints its allowed-signers line.
fn keygen(args: &KeygenArgs) -> Result<Outcome, JobError> {
    let public = crate::keys::keygen(&args.file).map_err(JobError::Keygen)?;
    // Not `say!`: this line is the command's answer (it goes into the signers file), so a
    // standard output that cannot take it is an error that gives the line, never a silent 0.
    let line = format!("{public} {}", args.comment);
    let printed = {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").and_then(|()| out.flush())
    };
    printed.map_err(|why| JobError::SignersLine {
        file: args.file.clone(),
        line,
        why,
    })?;
    Ok(Outcome::Exit(0))
}

/// `--scenario all`: every scenario's matrix into one `--out`, then one site over all of them.
fn run_all(args: &RunArgs) -> Result<RunOutcome, ScenarioError> {
    let mut each = args.clone();
    each.no_site = true;
    let mut total = RunOutcome {
        results_path: args.out.clone(),
        harness_errors: 0,
        verified: true,
        site_failed: false,
    };
    for scenario in crate::scenario::runnable() {
        let one = scenario.matrix(&each)?;
        total.harness_errors += one.harness_errors;
        total.verified &= one.verified;
    }
    total.site_failed = !crate::run::site_after(args, total.verified);
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn job(args: &[&str]) -> Result<Job, Refused> {
        let cli = Cli::try_parse_from(std::iter::once("runner").chain(args.iter().copied()))
            .map_err(|e| Refused(e.to_string()))?;
        Job::try_from(cli)
    }

    fn refusal(args: &[&str]) -> String {
        match job(args) {
            Err(Refused(why)) => why,
            Ok(_) => panic!("{args:?} was not refused"),
        }
    }

    #[test]
    fn each_scenario_refuses_the_options_it_does_not_take_before_anything_runs() {
        assert_eq!(
            refusal(&["--scenario", "billing_credit", "--two-hosts"]),
            "--two-hosts belongs to --scenario shared_cap (pass that, or drop --two-hosts)"
        );
        assert!(refusal(&["--scenario", "billing_credit", "--every-step"])
            .starts_with("--every-step belongs to --scenario shared_cap"));
        assert!(refusal(&["--scenario", "shared_cap", "--outage-ms", "5"])
            .starts_with("--outage-ms is not available with --scenario shared_cap"));
        assert!(refusal(&["--scenario", "all", "--cells", "*:*:*"])
            .starts_with("--cells is not available with --scenario shared_cap"));
        assert!(refusal(&["--scenario", "all", "--every-step"])
            .starts_with("--every-step belongs to --scenario shared_cap"));
    }

    #[test]
    fn a_campaign_is_of_one_scenario_and_takes_only_its_options() {
        assert!(refusal(&["--scenario", "all", "--nemesis", "all"])
            .starts_with("--nemesis runs one scenario's trials: pass --scenario billing_credit"));
        assert!(refusal(&[
            "--scenario",
            "shared_cap",
            "--nemesis",
            "all",
            "--every-step"
        ])
        .starts_with("--every-step is the matrix's"));
        assert!(refusal(&[
            "--scenario",
            "shared_cap",
            "--nemesis",
            "all",
            "--shard",
            "1/2"
        ])
        .starts_with("--shard slices billing_credit's campaigns only"));
        assert!(matches!(
            job(&["--scenario", "shared_cap", "--nemesis", "kill_both"]),
            Ok(Job::Nemesis { .. })
        ));
        assert!(
            refusal(&["--scenario", "shared_cap", "--nemesis", "all", "--resume"])
                .starts_with("--resume continues a --scenario billing_credit campaign")
        );
        assert!(refusal(&["--scenario", "billing_credit", "--resume"]).contains("--nemesis"));
        assert!(matches!(
            job(&["--scenario", "billing_credit", "--nemesis", "all", "--resume"]),
            Ok(Job::Nemesis { args, .. }) if args.resume
        ));
    }

    #[test]
    fn options_that_need_another_are_refused_without_it() {
        assert!(refusal(&["--scenario", "shared_cap", "--two-hosts"])
            .starts_with("--two-hosts needs --journal"));
        assert!(refusal(&[
            "--scenario",
            "billing_credit",
            "--keep-emulator",
            "--backend",
            "stripe"
        ])
        .starts_with("--keep-emulator keeps the embedded emulator serving"));
    }

    #[test]
    fn a_valid_command_line_is_the_job_it_names() {
        assert!(matches!(
            job(&["--scenario", "billing_credit"]),
            Ok(Job::Matrix { scenario, .. }) if scenario.name() == "billing_credit"
        ));
        assert!(matches!(job(&["--scenario", "all"]), Ok(Job::All(_))));
        assert!(matches!(
            job(&["--replay", "kill_random:interlock:00000000000001"]),
            Ok(Job::Replay(_))
        ));
        assert!(matches!(
            job(&["keygen", "/tmp/never-written"]),
            Ok(Job::Keygen(_))
        ));
    }
}
