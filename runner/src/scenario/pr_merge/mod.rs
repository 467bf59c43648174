//! `runner --scenario pr_merge` (DESIGN §4.9): an agent merges a pull request reviewed at head
//! `H`. The matrix is crash point × outage × column (`verify::scenarios::pr_merge::plan`); each
//! cell opens its own repository at the run's forge (a GitHub REST subset over real git
//! repositories, on loopback), runs a real worker process, SIGKILLs it before or after its
//! merge request, makes the outage while it is dead, restarts it, reads the repository back with
//! git and judges with `verify::scenarios::pr_merge`. Writes `DIR/pr_merge.json`, signed with
//! the run's key, and checks it.

mod cell;
mod error;
mod nemesis;
pub mod worker;

use super::{RunKind, ScenarioError, ScenarioOption, ScenarioRun};
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::{git_commit, install_signal_handler, Interrupted, RunOutcome, SetupError};
use cell::{run_cell, MergeContext};
pub use error::PrMergeError;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use verify::contract::{self, FileSignature, Scenario, ScenarioFile};
use verify::scenarios::pr_merge::{plan, Cell, Params, PrMerge as Rules};

/// The forge's server-side in-flight bound. The forge applies a merge within milliseconds of
/// receiving it (a git merge-tree, commit-tree and update-ref under the repository's lock); only
/// an injected hold keeps one longer, and the matrix injects none. The gate trusts a "not
/// found" only this long after it found the sender's claim free.
pub const FORGE_MAX_IN_FLIGHT: Duration =
    Duration::from_millis(verify::scenarios::pr_merge::DECLARED_MAX_IN_FLIGHT_MS);
/// The forge client's request timeout.
pub const FORGE_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The backend's name in the results' environment.
pub const BACKEND: &str = "forge";

/// The pr_merge scenario.
pub struct PrMerge;

impl ScenarioRun for PrMerge {
    fn name(&self) -> &'static str {
        Rules::NAME
    }

    fn takes(&self, _option: ScenarioOption, _kind: RunKind) -> bool {
        false
    }

    fn refusal(&self, option: ScenarioOption, _kind: RunKind) -> String {
        let flag = option.flag();
        format!(
            "{flag} is not available with --scenario pr_merge: its matrix is every crash point x \
             outage x column, decided by the policy, against the run's own forge (drop {flag})"
        )
    }

    fn matrix(&self, args: &RunArgs) -> Result<RunOutcome, ScenarioError> {
        Ok(run(args)?)
    }

    fn nemesis(&self, args: &RunArgs, list: &str) -> Result<Outcome, ScenarioError> {
        Ok(nemesis::run(args, list).map(Outcome::Cells)?)
    }
}

/// Runs the pr_merge matrix.
pub fn run(args: &RunArgs) -> Result<RunOutcome, PrMergeError> {
    if args.repeat == 0 {
        return Err(PrMergeError::NoRepeat);
    }
    let params = Params {
        repeats: args.repeat,
        ..Params::default()
    };
    let cells_plan =
        plan(&params, usize::MAX).map_err(|e| PrMergeError::CouldNotContinue(e.to_string()))?;
    let command = format!(
        "runner --scenario pr_merge{}",
        if args.repeat == 1 {
            String::new()
        } else {
            format!(" --repeat {}", args.repeat)
        }
    );
    run_plan::<Rules>(
        args,
        params,
        &cells_plan,
        &command,
        |p| format!("{}:{}:{}", p.crash_point, p.outage, p.column),
        run_cell,
        cell_line,
    )
}

/// Runs `cells_plan` of scenario `S` on the run's forge, `one` cell at a time on `--jobs`
/// threads, then signs, writes (`DIR/<S::NAME>.json`) and checks the file.
pub(crate) fn run_plan<S: Scenario>(
    args: &RunArgs,
    params: S::Params,
    cells_plan: &[S::Planned],
    command: &str,
    label: impl Fn(&S::Planned) -> String + Sync,
    one: impl Fn(&MergeContext<'_>, usize, &S::Planned) -> Result<S::Cell, crate::cell::CellAbort>
        + Sync,
    line: impl Fn(&S::Cell) -> String + Sync,
) -> Result<RunOutcome, PrMergeError> {
    let jobs = match args.jobs {
        Some(0) => return Err(PrMergeError::NoJobs),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    }
    .min(cells_plan.len().max(1));
    crate::results::check_writable(&args.out).map_err(|error| PrMergeError::Out {
        dir: args.out.clone(),
        error,
    })?;
    if !args.no_site {
        site::check_folders(&args.site_out, &args.out).map_err(PrMergeError::SiteFolder)?;
    }
    let started = Instant::now();
    let (run_dir, key) =
        crate::run::run_dir_and_key("interlock-pr-merge-", args.signing_key.as_deref())?;
    let cancel = Arc::new(AtomicBool::new(false));
    install_signal_handler(cancel.clone()).map_err(SetupError::from)?;
    let forge = forge::Forge::start(&run_dir.path().join("forge")).map_err(PrMergeError::Forge)?;
    let exe = std::env::current_exe().map_err(SetupError::OwnBinary)?;
    let settings = scenarios::billing_credit::ScenarioSettings::new(
        FORGE_MAX_IN_FLIGHT,
        FORGE_REQUEST_TIMEOUT,
    );
    eprintln!(
        "runner: {}, {} cell(s), {jobs} job(s), backend {BACKEND} ({}), decider policy",
        S::NAME,
        cells_plan.len(),
        forge.url()
    );
    let ctx = MergeContext {
        forge: &forge,
        exe: &exe,
        run_dir: run_dir.path(),
        key_file: key.path(),
        cancel: &cancel,
        settings,
        request_timeout: FORGE_REQUEST_TIMEOUT,
        worker_timeout: settings.claim_ttl + settings.max_in_flight + Duration::from_secs(60),
    };
    let cells = super::cells::run_cells(
        cells_plan,
        jobs,
        ctx.cancel,
        &label,
        &|i, p| one(&ctx, i, p),
        &line,
    )
    .map_err(|stopped| match stopped {
        super::cells::CellsStopped::CouldNotContinue(e) => PrMergeError::CouldNotContinue(e),
        super::cells::CellsStopped::Interrupted => Interrupted.into(),
    })?;
    drop(forge);
    let signing_key = crate::keys::read_signing_key(key.path()).map_err(SetupError::from)?;
    let public = key.public();
    let environment: BTreeMap<String, String> = [
        ("backend", BACKEND.to_owned()),
        (
            "backend_detail",
            "a GitHub REST subset served on loopback over real git repositories (no GitHub)"
                .to_owned(),
        ),
        ("decider", "policy".to_owned()),
        ("runner_version", env!("CARGO_PKG_VERSION").to_owned()),
        ("git_commit", git_commit().unwrap_or_default()),
        ("public_key", key.public_hex()),
        ("journal", "file".to_owned()),
        (
            "max_in_flight_ms",
            FORGE_MAX_IN_FLIGHT.as_millis().to_string(),
        ),
        ("command", command.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let judged: Vec<(&S::Cell, &S::Judgement)> = cells
        .iter()
        .filter_map(|c| S::stated(c).map(|j| (c, j)))
        .collect();
    let summary = S::summarize(&judged);
    let mut file = ScenarioFile::<S> {
        format: contract::FORMAT.to_owned(),
        scenario: S::NAME.to_owned(),
        generated_at: crate::results::now_rfc3339(),
        environment,
        params,
        summary,
        cells,
        signature: FileSignature {
            signer: String::new(),
            hash: String::new(),
            sig: String::new(),
        },
    };
    contract::sign(&mut file, &signing_key).map_err(PrMergeError::Sign)?;
    drop(signing_key);
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(PrMergeError::Serialize)?;
    bytes.push(b'\n');
    let path = args.out.join(format!("{}.json", S::NAME));
    crate::results::write_keeping(&path, &bytes).map_err(|error| PrMergeError::Write {
        path: path.clone(),
        error,
    })?;
    let harness_errors = file
        .cells
        .iter()
        .filter(|c| !verify::contract::judged::<S>(c))
        .count();
    say!(
        "{} cells in {:.1} s (wall), backend {BACKEND}, decider policy, {harness_errors} harness \
         error(s)",
        file.cells.len(),
        started.elapsed().as_secs_f64()
    );
    say!("results: {}", path.display());
    let verified = match verify::contract::check(file, &verify::receipt::KeyCheck::Pinned(public)) {
        Ok(v) => {
            say!(
                "verify: ok ({} cells, {} receipts, signed by the run's key)",
                v.report().cells,
                v.report().receipts
            );
            true
        }
        Err(report) => {
            eprintln!("verify: the results file does NOT verify:");
            for f in report.findings.iter().take(10) {
                eprintln!("  {f}");
            }
            false
        }
    };
    Ok(RunOutcome {
        harness_errors,
        results_path: path,
        site_failed: !crate::run::site_after(args, verified),
        verified,
    })
}

fn cell_line(c: &Cell) -> String {
    if let Some(e) = &c.harness_error {
        return format!("HARNESS_ERROR: {e}");
    }
    match &c.judgement {
        Some(j) => format!(
            "{} {} merge(s), want {}; {}{}",
            if j.invariant_held { "held" } else { "VIOLATED" },
            j.merges,
            j.want,
            c.ticket.status,
            if j.answer_matches {
                ""
            } else {
                " (wrong answer)"
            }
        ),
        None => "not judged".into(),
    }
}
