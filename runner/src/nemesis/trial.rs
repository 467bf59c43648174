//! Running one trial: open the case, set the service fault, start the decide worker and kill it
//! as drawn, run the outage while it is dead, kill the restarts as drawn, run a final restart,
//! read what Stripe holds and judge it.

use super::faults::{describe, draw_for, Draw, WorldFault};
use super::workers::{RestartEnd, Workers};
use super::Nemesis;
use crate::backend::Backend;
use crate::cell::{empty_truth, stderr_tail};
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit as bc;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultAction, FaultRule};
use verify::billing_credit::HARNESS_ERROR;
use verify::nemesis::rules::{judge, trial_id};
use verify::nemesis::{Fault, Trial};
use verify::results::{GroundTruth, Want};

/// The outcome of a trial whose final restart ended in an error (the column gave up).
pub const RESTART_FAILED: &str = "RESTART_FAILED";

/// What a trial needs from the run.
pub struct TrialContext<'a> {
    /// The backend (the embedded emulator: service faults need it).
    pub backend: &'a Backend,
    /// The runner binary.
    pub exe: &'a Path,
    /// The run's temporary directory.
    pub run_dir: &'a Path,
    /// The private signing key file handed to workers.
    pub key_file: &'a Path,
    /// `--journal`: the PostgreSQL journal (URL with the run's schema) for interlock trials.
    pub journal: Option<&'a str>,
}

/// Which trial to run.
#[derive(Debug, Clone, Copy)]
pub struct TrialSpec {
    /// The nemesis.
    pub nemesis: Nemesis,
    /// The column.
    pub column: bc::Column,
    /// Index within (nemesis, column).
    pub index: u32,
    /// The trial's seed.
    pub seed: u64,
    /// A number unique in the run (API keys, directories).
    pub slot: usize,
    /// `runner --replay ID --at STEP`: kill the decide worker at this step instead of as drawn.
    pub at: Option<&'static str>,
}

pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Runs a trial. Errors only when the case cannot even be opened (the backend is unusable).
pub fn run_trial(ctx: &TrialContext<'_>, spec: TrialSpec) -> Result<Trial, String> {
    let id = trial_id(spec.nemesis.as_str(), spec.column.as_str(), spec.seed);
    let mut plan = draw_for(spec.nemesis, spec.column, spec.seed);
    if let Some(at) = spec.at {
        plan = plan.replayed_at(at)?;
    }
    let dir = ctx.run_dir.join(format!("trial{:05}", spec.slot));
    fs::create_dir_all(&dir).map_err(|e| format!("trial {id}: {e}"))?;
    if let Some(url) = ctx.journal {
        fs::write(dir.join(bc::JOURNAL_LOCATION_FILE), url)
            .map_err(|e| format!("trial {id}: name the journal store: {e}"))?;
    }
    let api_key = ctx.backend.api_key(spec.slot);
    let client = ctx.backend.client(&api_key)?;
    let prices = ctx.backend.prices(&client)?;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let case = bc::open_case(&client, &prices, &format!("nemesis {id}"), &mut rng)
        .map_err(|e| format!("trial {id}: open the case: {e}"))?;
    case.save(&dir).map_err(|e| format!("trial {id}: {e}"))?;

    let mut trial = blank_trial(&id, spec, &plan, &case);
    let faults = ctx.backend.faults();
    // A timed kill with no service fault still watches the credit POST arrive (a zero hold), so
    // the trial can say whether the request had reached the service when the worker died.
    let timed = plan.decide_kill_ms.is_some();
    let action = match &plan.service {
        Some(a) => Some(a.clone()),
        None if timed => Some(FaultAction::Delay { ms: 0 }),
        None => None,
    };
    let rule = match (action, &faults) {
        (Some(action), Some(handle)) => {
            let r = FaultRule::new("POST", "/v1/customers/*/balance_transactions", action)
                .for_key(&api_key)
                .times(spec_times(&plan));
            Some(handle.add(r))
        }
        (Some(_), None) => return Err("service nemeses need the embedded emulator".into()),
        _ => None,
    };
    let w = Workers {
        ctx,
        dir: &dir,
        api_key: &api_key,
        column: spec.column,
    };

    let mut first_fault: Option<Instant> = None;
    let mut world_at: Option<Instant> = None;
    let mut world_record: Option<Result<(Fault, Option<bc::CaseFile>), String>> = None;
    let mut world = || -> Result<(), String> {
        world_at = Some(Instant::now());
        let paused = plan.pause_at.unwrap_or("?");
        let made = match plan.world {
            Some(WorldFault::Revoke) => clock_now(&client, &case)
                .and_then(|at| revoke(&client, &dir, at))
                .map(|(revoked, at)| {
                    let what = format!("support revoked the approval while the worker was paused at {paused}, at test-clock {at}");
                    (world_fault("revocation", what), Some(revoked))
                }),
            Some(WorldFault::CreditNote) => {
                let mut outage_rng = StdRng::seed_from_u64(spec.seed ^ 0x5eed);
                bc::run_outage(&client, &case, bc::Outage::BillingCredit, &mut outage_rng)
                    .map_err(|e| e.to_string())
                    .map(|_| {
                        let what = format!("billing's renewal and credit note for the case's incident ran while the worker was paused at {paused}");
                        (world_fault("credit_note", what), None)
                    })
            }
            None => Err("a pause was drawn without a world fault".into()),
        };
        let ok = made.is_ok();
        world_record = Some(made);
        if ok {
            Ok(())
        } else {
            Err("the world fault failed".into())
        }
    };
    let decide = w.run_decide(&plan, faults.as_ref().zip(rule), &mut world);
    match world_record {
        Some(Ok((fault, revoked))) => {
            if let Some(revoked) = revoked {
                trial.case = revoked.to_results_case();
            }
            trial.faults.push(fault);
            first_fault = world_at;
        }
        Some(Err(why)) => {
            let why = format!("the world fault failed: {why}");
            return Ok(harness(trial, &client, &case, why, &dir));
        }
        None => {}
    }
    let decide = decide?;
    trial.replay_at = decide.replay_at.clone();
    trial.kills.extend(decide.kill.clone());
    if decide.kill.as_ref().is_some_and(|k| k.delivered) {
        first_fault = decide.ended;
    }
    let decide_ended = decide.ended.unwrap_or_else(Instant::now);
    let held_from = decide.held_from;
    if let Some(problem) = decide.problem {
        return Ok(harness(trial, &client, &case, problem, &dir));
    }

    // The worker is dead (or finished): the world moves on.
    // (A credit note mid-check was this trial's outage: it ran already.)
    let record = if plan.world == Some(WorldFault::CreditNote) {
        None
    } else {
        let mut outage_rng = StdRng::seed_from_u64(spec.seed ^ 0x5eed);
        match bc::run_outage(&client, &case, plan.outage, &mut outage_rng) {
            Ok(r) => Some(r),
            Err(e) => {
                let why = format!("the outage failed: {e}");
                return Ok(harness(trial, &client, &case, why, &dir));
            }
        }
    };
    if plan.revoke_in_outage {
        let at = record
            .as_ref()
            .and_then(|r| r.clock_time)
            .ok_or_else(|| "the outage recorded no clock time".to_owned());
        match at.and_then(|at| revoke(&client, &dir, at)) {
            Ok((revoked, at)) => {
                trial.case = revoked.to_results_case();
                trial.faults.push(Fault {
                    kind: "revocation".into(),
                    detail: format!(
                        "support revoked the approval during the outage, at test-clock {at}; \
                         the clock was then advanced one second"
                    ),
                    fired: 1,
                });
            }
            Err(e) => {
                let why = format!("the revocation failed: {e}");
                return Ok(harness(trial, &client, &case, why, &dir));
            }
        }
    }
    for (k, at) in plan.restart_kills_ms.iter().enumerate() {
        let kill = w.kill_restart(k + 1, *at)?;
        if kill.delivered && first_fault.is_none() {
            first_fault = Some(Instant::now());
        }
        trial.kills.push(kill);
    }
    let final_restart = w.final_restart();
    let settled = Instant::now();
    if let (Some(handle), Some(rule)) = (&faults, rule) {
        // The service rule is the first fault recorded (a revocation comes after it); a zero
        // hold only watched.
        if plan.service.is_some() {
            if let Some(f) = trial.faults.first_mut() {
                f.fired = handle.fired(rule);
            }
        }
        handle.remove(rule);
    }
    let report = match final_restart {
        Ok(r) => Some(r),
        Err(RestartEnd::Failed) => None,
        Err(RestartEnd::Harness(why)) => return Ok(harness(trial, &client, &case, why, &dir)),
    };
    // A request held beyond the bound may still be on its way: let it land before reading, so
    // the ground truth is the final state (the hold is the runner's own fault, of known length).
    if let Some(stripe::emulator::FaultAction::Delay { ms: held }) = plan.service {
        let until = held_from.unwrap_or(decide_ended) + Duration::from_millis(held + 200);
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
    }
    let truth = match bc::ground_truth(&client, &case) {
        Ok(t) => t,
        Err(e) => {
            return Ok(harness(
                trial,
                &client,
                &case,
                format!("ground truth: {e}"),
                &dir,
            ))
        }
    };
    trial.settle_ms = Some(ms(settled - first_fault.unwrap_or(decide_ended)));
    match report {
        Some(r) => {
            trial.outcome = r.status;
            trial.journal_kinds = r.journal_kinds;
            trial.receipt = r.receipt;
        }
        None => trial.outcome = RESTART_FAILED.into(),
    }
    trial.decision = bc::load_decision(&dir).ok();
    finish(&mut trial, truth);
    Ok(trial)
}

/// Revokes the approval in `case.json` at the clock's current instant, then advances the clock a
/// second past it, so a credit created after the revocation is after it in Stripe's `created`.
fn revoke(client: &stripe::Client, dir: &Path, at: i64) -> Result<(bc::CaseFile, i64), String> {
    let mut case = bc::CaseFile::load(dir).map_err(|e| e.to_string())?;
    case.approval.revoked = Some(serde_json::json!({"by": bc::APPROVER, "clock_time": at}));
    case.save(dir).map_err(|e| e.to_string())?;
    bc::advance_one_second(client, &case, at).map_err(|e| e.to_string())?;
    Ok((case, at))
}

/// A world change made while the worker was paused (the clock is always advanced a second after
/// it, so whatever the worker creates next is later in Stripe's `created`).
fn world_fault(kind: &str, what: String) -> Fault {
    Fault {
        kind: kind.into(),
        detail: format!("{what}; the clock was then advanced one second"),
        fired: 1,
    }
}

/// The case's test-clock time now.
fn clock_now(client: &stripe::Client, case: &bc::CaseFile) -> Result<i64, String> {
    bc::clock_time(client, case).map_err(|e| e.to_string())
}

/// How many credit POSTs the service rule applies to.
fn spec_times(plan: &Draw) -> u32 {
    if plan.service.is_some() {
        plan.service_times
    } else {
        1
    }
}

fn blank_trial(id: &str, spec: TrialSpec, plan: &Draw, case: &bc::CaseFile) -> Trial {
    Trial {
        id: id.to_owned(),
        nemesis: spec.nemesis.as_str().into(),
        column: spec.column.as_str().into(),
        index: spec.index,
        seed: spec.seed,
        outage: plan.outage.as_str().into(),
        faults: plan
            .service
            .iter()
            .map(|a| {
                let (kind, detail) = describe(a);
                Fault {
                    kind,
                    detail,
                    fired: 0,
                }
            })
            .collect(),
        kills: Vec::new(),
        assumption: plan.assumption.map(str::to_owned),
        case: case.to_results_case(),
        decision: None,
        outcome: HARNESS_ERROR.into(),
        harness_error: None,
        ground_truth: empty_truth(),
        want: Want { count: 0, cents: 0 },
        invariant_held: false,
        violation: false,
        answer_matches: false,
        ambiguous: false,
        settle_ms: None,
        receipt: None,
        journal_kinds: Vec::new(),
        replay_at: None,
    }
}

fn finish(trial: &mut Trial, truth: GroundTruth) {
    let j = judge(
        &truth,
        &trial.case.case_id,
        &trial.case.incident,
        &trial.case.approval,
        trial.decision.as_ref().map(|d| d.amount),
        &trial.outcome,
    );
    trial.ground_truth = truth;
    trial.want = j.want;
    trial.invariant_held = j.invariant_held;
    trial.violation = j.violation;
    trial.answer_matches = j.answer_matches;
    trial.ambiguous = j.ambiguous;
}

/// A HARNESS_ERROR trial: still reads and judges what Stripe holds.
fn harness(
    mut trial: Trial,
    client: &stripe::Client,
    case: &bc::CaseFile,
    why: String,
    dir: &Path,
) -> Trial {
    let mut text = why;
    for file in ["decide.stderr", "restart.stderr"] {
        let tail = stderr_tail(&dir.join(file));
        if !tail.trim().is_empty() {
            text.push_str(&format!("\n--- {file} (tail) ---\n{tail}"));
        }
    }
    trial.outcome = HARNESS_ERROR.into();
    trial.harness_error = Some(text);
    let truth = bc::ground_truth(client, case).unwrap_or_else(|_| empty_truth());
    finish(&mut trial, truth);
    trial
}
