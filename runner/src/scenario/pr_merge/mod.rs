//! `runner --scenario pr_merge` (DESIGN §4.9): an agent merges a pull request reviewed at head
//! `H`. The matrix is crash point × outage × column (`verify::scenarios::pr_merge::plan`); each
//! cell opens its own repository at the run's forge (a GitHub REST subset over real git
//! repositories, on loopback), runs a real worker process, SIGKILLs it before or after its
//! merge request, makes the outage while it is dead, restarts it, reads the repository back with
//! git and judges with `verify::scenarios::pr_merge`. Writes `DIR/pr_merge.json`, signed with
//! the run's key, and checks it.

mod cell;
mod error;
pub mod worker;

use super::{RunKind, ScenarioError, ScenarioOption, ScenarioRun};
use crate::cli::RunArgs;
use crate::job::Outcome;
use crate::run::{git_commit, install_signal_handler, Interrupted, RunOutcome, SetupError};
use cell::{run_cell, MergeContext};
pub use error::PrMergeError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verify::contract::{self, FileSignature, Scenario, ScenarioFile};
use verify::scenarios::pr_merge::{plan, summarize, Cell, Params, PrMerge as Rules};

/// The forge's server-side in-flight bound. The forge applies a merge within milliseconds of
/// receiving it (a git merge-tree, commit-tree and update-ref under the repository's lock); only
/// an injected hold keeps one longer, and the matrix injects none. The gate trusts a "not
/// found" only this long after it found the sender's claim free.
pub const FORGE_MAX_IN_FLIGHT: Duration = Duration::from_millis(2_000);
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

    fn nemesis(&self, _args: &RunArgs, _list: &str) -> Result<Outcome, ScenarioError> {
        Err(ScenarioError::NotBuilt {
            name: Rules::NAME,
            why: "its nemesis campaign is not built yet; its matrix is (drop --nemesis)",
        })
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
        "runner: pr_merge, {} cell(s), {jobs} job(s), backend {BACKEND} ({}), decider policy",
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
    let slots = Mutex::new((0..cells_plan.len()).map(|_| None).collect::<Vec<_>>());
    let next = AtomicUsize::new(0);
    let n = cells_plan.len();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if ctx.cancel.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let p = &cells_plan[i];
                let result = run_cell(&ctx, i, p);
                let line = match &result {
                    Ok(c) => cell_line(c),
                    Err(abort) => format!("{abort:?}"),
                };
                eprintln!(
                    "  [{}/{n}] {}:{}:{} {line}",
                    i + 1,
                    p.crash_point,
                    p.outage,
                    p.column
                );
                if matches!(result, Err(crate::cell::CellAbort::Setup(_))) {
                    ctx.cancel.store(true, Ordering::SeqCst);
                }
                if let Ok(mut slots) = slots.lock() {
                    slots[i] = Some(result);
                }
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut cells = Vec::with_capacity(n);
    for slot in slots {
        match slot {
            Some(Ok(c)) => cells.push(c),
            Some(Err(crate::cell::CellAbort::Setup(e))) => {
                return Err(PrMergeError::CouldNotContinue(e))
            }
            Some(Err(crate::cell::CellAbort::Cancelled)) | None => return Err(Interrupted.into()),
        }
    }
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
        (
            "command",
            format!(
                "runner --scenario pr_merge{}",
                if args.repeat == 1 {
                    String::new()
                } else {
                    format!(" --repeat {}", args.repeat)
                }
            ),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    key.delete().map_err(SetupError::DeleteKey)?;
    let pairs: Vec<_> = cells
        .iter()
        .filter_map(|c| c.judgement.as_ref().map(|j| (c, j)))
        .collect();
    let summary = summarize(&pairs);
    let mut file = ScenarioFile::<Rules> {
        format: contract::FORMAT.to_owned(),
        scenario: Rules::NAME.to_owned(),
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
    let path = args.out.join(format!("{}.json", Rules::NAME));
    crate::results::write_atomically(&path, &bytes).map_err(|error| PrMergeError::Write {
        path: path.clone(),
        error,
    })?;
    print_summary(&file, started.elapsed());
    println!("results: {}", path.display());
    let harness_errors = file
        .cells
        .iter()
        .filter(|c| c.harness_error.is_some())
        .count();
    let verified = match verify::contract::check(file, &verify::receipt::KeyCheck::Pinned(public)) {
        Ok(v) => {
            println!(
                "verify: ok ({} cells, {} receipts, signed by the run's key)",
                v.report().cells,
                v.report().receipts
            );
            if !args.no_site {
                crate::run::render_site(&args.out, &args.site_out);
            }
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

fn print_summary(file: &ScenarioFile<Rules>, wall: Duration) {
    println!(
        "{} cells in {:.1} s (wall), backend {BACKEND}, decider policy",
        file.cells.len(),
        wall.as_secs_f64()
    );
    for (column, s) in &file.summary {
        println!(
            "  {column:<10} held {}/{}  over {}  under {}  unreviewed {}  wrong answers {}",
            s.held, s.judged, s.over, s.under, s.unreviewed, s.wrong_answers
        );
    }
}
