//! Running one trial: open the case, set the service fault, start the decide worker and kill it
//! as drawn, run the outage while it is dead, kill the restarts as drawn, run a final restart,
//! read what Stripe holds and judge it.

use super::decide::{continue_at, DecideEnd, Stopped};
use super::faults::{draw_for, replayed_at, Draw, DISK_KIB, STOP_AT};
use super::opening::{advance_rule, open, service_rule, Opened};
use super::replay_step::{after_a_late_arrival, held_at_service};
use super::timeline::Timeline;
use super::trial_error::TrialError;
use super::trial_record::{blank_trial, finish, harness, label, last_line};
use super::workers::{RestartEnd, Workers};
use super::world::{after_the_kill, change_world, outage, wait_for_held_request};
use super::Nemesis;
use crate::backend::Backend;
use scenarios::billing_credit as bc;
use std::path::Path;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultHandle, FaultId};
use verify::nemesis::rules::{trial_id, RESTART_FAILED};
use verify::nemesis::{Fault, Trial};

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
    /// Where the trial's test clock starts, Unix seconds (`--clock-start`).
    pub clock_start: i64,
    /// How long every outage's clock advance takes at least (`--outage-ms`).
    pub outage_ms: Option<u64>,
    /// The span exposure trials draw their change over, ms (the plan's).
    pub exposure_span_ms: u64,
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
    /// An exposure calibration trial: the trial as drawn, with no change in the world.
    pub calibration: bool,
}

pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Why a trial stopped before its end: a HARNESS_ERROR (the trial is still recorded, with why)
/// or an error that stops the run.
enum Stop {
    /// The trial could not run as designed: record it as a HARNESS_ERROR saying why.
    Harness(String),
    /// The run cannot go on.
    Abort(TrialError),
}

impl From<TrialError> for Stop {
    fn from(e: TrialError) -> Stop {
        Stop::Abort(e)
    }
}

/// What every step of an opened trial works with.
struct Steps<'a> {
    ctx: &'a TrialContext<'a>,
    spec: TrialSpec,
    plan: &'a Draw,
    o: &'a Opened,
    timeline: &'a Timeline,
    rules: Rules,
}

/// The emulator's fault rules set for a trial.
struct Rules {
    /// The emulator's fault rules (`None` off the embedded emulator).
    faults: Option<FaultHandle>,
    /// The service fault on the case's credit POST, if one was set.
    service: Option<FaultId>,
    /// The slow outage advance, if one was set.
    advance: Option<FaultId>,
}

/// How the decide worker ended, and what the steps after it need to know about it.
struct Decided<'w> {
    end: DecideEnd,
    /// stop_holder: the decide worker, stopped, to be continued during the final restart.
    stopped: Option<Stopped<'w>>,
    /// When the first fault landed, if one has.
    first_fault: Option<Instant>,
    /// When the decide worker ended (or the runner stopped watching it).
    ended: Instant,
}

/// Runs a trial. Errors only when the case cannot even be opened (the backend is unusable).
pub fn run_trial(ctx: &TrialContext<'_>, spec: TrialSpec) -> Result<Trial, TrialError> {
    let id = trial_id(spec.nemesis.as_str(), spec.column.as_str(), spec.seed);
    let mut plan = draw_for(spec.nemesis, spec.column, spec.seed, ctx.exposure_span_ms)?;
    if spec.calibration {
        plan.world = None;
        plan.world_at_us = None;
    }
    if let Some(at) = spec.at {
        plan = replayed_at(plan, at)?;
    }
    let o = open(ctx, spec, &id, &plan)?;
    let mut trial = blank_trial(&id, spec, &plan, &o.case);
    let rules = set_faults(ctx, spec, &plan, &o, &mut trial)?;
    let timeline = Timeline::new();
    let steps = Steps {
        ctx,
        spec,
        plan: &plan,
        o: &o,
        timeline: &timeline,
        rules,
    };
    match steps.run(&mut trial) {
        Ok(()) => Ok(trial),
        Err(Stop::Harness(why)) => Ok(harness(trial, &o, (&timeline, ctx), why)),
        Err(Stop::Abort(e)) => Err(e),
    }
}

/// The trial's faults set before any worker runs: disk_full's record, the service fault and
/// the slow outage advance. Returns the emulator's fault rules and the two rules' ids.
fn set_faults(
    ctx: &TrialContext<'_>,
    spec: TrialSpec,
    plan: &Draw,
    o: &Opened,
    trial: &mut Trial,
) -> Result<Rules, TrialError> {
    if let Some(disk) = &o.disk {
        let free = disk.free_pages()?;
        trial.faults.push(Fault {
            kind: "disk_full".into(),
            detail: format!(
                "the case's directory is a {DISK_KIB} KiB tmpfs with {free} pages of 4 KiB left free once the case was saved; the space is freed before the final restart"
            ),
            fired: 1,
            held_ms: None,
        });
    }
    let faults = ctx.backend.faults();
    let service = service_rule(plan, faults.as_ref(), &o.api_key)?;
    let advance = advance_rule(ctx, spec.nemesis, plan, faults.as_ref(), &o.api_key, trial)?;
    Ok(Rules {
        faults,
        service,
        advance,
    })
}

impl Steps<'_> {
    /// The trial from its decide worker to its judgement.
    fn run(&self, trial: &mut Trial) -> Result<(), Stop> {
        let log = self.o.logs.join(super::write_fault::LOG);
        let decide_env = match self.plan.write_fault {
            Some(fault) => super::write_fault::env(
                &super::write_fault::library(self.ctx.exe),
                &self.o.dir,
                fault,
                &log,
            ),
            None => Vec::new(),
        };
        let w = Workers {
            ctx: self.ctx,
            dir: &self.o.dir,
            logs: &self.o.logs,
            api_key: &self.o.api_key,
            column: self.spec.column,
            timeline: self.timeline,
            decide_env: &decide_env,
        };
        let mut decided = self.decide(&w, trial)?;
        if let Some(fault) = self.plan.write_fault {
            let record = super::write_fault::record(&log, fault)
                .map_err(|e| Stop::Harness(e.to_string()))?;
            self.timeline.runner_fault(
                super::write_fault::kind(fault),
                if record.fired > 0 {
                    "the drawn call failed"
                } else {
                    "the drawn call was never made"
                },
            );
            trial.faults.push(record);
        }
        let restart_env = self.while_dead(&w, trial, &mut decided.first_fault)?;
        let final_restart = self.final_restart(&w, trial, &mut decided, &restart_env)?;
        let settled = Instant::now();
        self.remove_rules(trial);
        let report = match final_restart {
            Ok(r) => Some(r),
            Err(RestartEnd::Failed) => {
                trial.restart_error = last_line(&self.o.logs.join("restart.stderr"));
                None
            }
            Err(RestartEnd::Harness(why)) => return Err(Stop::Harness(why.to_string())),
        };
        let held_from = decided.end.held_from;
        wait_for_held_request(self.plan, held_from.unwrap_or(decided.ended));
        let truth = bc::ground_truth(&self.o.client, &self.o.case)
            .map_err(|e| Stop::Harness(TrialError::GroundTruth(e).to_string()))?;
        trial.settle_ms = Some(ms(settled - decided.first_fault.unwrap_or(decided.ended)));
        match report {
            Some(r) => {
                trial.outcome = r.status;
                trial.journal_kinds = r.journal_kinds;
                trial.receipt = r.receipt;
            }
            None => trial.outcome = RESTART_FAILED.into(),
        }
        finish(trial, truth);
        label(trial, self.timeline, self.ctx, held_from);
        Ok(())
    }

    /// The decide worker, killed, paused or stopped as drawn; the world change, if one is
    /// drawn, is made while the worker is paused mid-check.
    fn decide<'w>(&self, w: &'w Workers<'_>, trial: &mut Trial) -> Result<Decided<'w>, Stop> {
        let (plan, o, emulator) = (self.plan, self.o, self.ctx.backend.emulator());
        let mut world_at: Option<Instant> = None;
        let mut world_record = None;
        let mut world = || -> Result<(), TrialError> {
            let from = Instant::now();
            world_at = Some(from);
            let made = change_world(plan, self.spec.seed, o, (self.timeline, from), emulator);
            let ok = made.is_ok();
            world_record = Some(made);
            ok.then_some(()).ok_or(TrialError::WorldFaultFailed)
        };
        let mut stopped = None;
        let decide = match plan.stop_ms {
            Some(_) => match w.decide_stopped(STOP_AT) {
                Ok(s) => {
                    stopped = Some(s);
                    Ok(DecideEnd::pending())
                }
                Err(why) => Ok(DecideEnd::problem(why.to_string())),
            },
            None => w.run_decide(
                plan,
                self.rules.faults.as_ref().zip(self.rules.service),
                &mut world,
            ),
        };
        let mut first_fault: Option<Instant> = stopped.as_ref().map(|s| s.at);
        match world_record {
            Some(Ok((fault, revoked))) => {
                if let Some(revoked) = revoked {
                    trial.case = revoked.to_results_case();
                }
                trial.faults.push(fault);
                first_fault = world_at;
            }
            Some(Err(why)) => {
                return Err(Stop::Harness(
                    TrialError::WorldFault(Box::new(why)).to_string(),
                ))
            }
            None => {}
        }
        let decide = decide?;
        trial.replay_at = decide.replay_at.clone();
        trial.kills.extend(decide.kill.clone());
        if decide.kill.as_ref().is_some_and(|k| k.delivered) {
            first_fault = decide.ended;
        }
        let ended = decide.ended.unwrap_or_else(Instant::now);
        if let Some(problem) = decide.problem.clone() {
            return Err(Stop::Harness(problem));
        }
        Ok(Decided {
            end: decide,
            stopped,
            first_fault,
            ended,
        })
    }

    /// The worker is dead (or finished, or stopped): its files and the service's memory are
    /// hurt as drawn, the world moves on, the restarts are killed as drawn and the disk is
    /// freed. Returns the final restart's environment.
    fn while_dead(
        &self,
        w: &Workers<'_>,
        trial: &mut Trial,
        first_fault: &mut Option<Instant>,
    ) -> Result<Vec<(&'static str, String)>, Stop> {
        let (plan, o, ctx, timeline) = (self.plan, self.o, self.ctx, self.timeline);
        let restart_env = after_the_kill(plan, o, self.rules.faults.as_ref(), trial, timeline)
            .map_err(|why| Stop::Harness(why.to_string()))?;
        outage(
            plan,
            self.spec.seed,
            o,
            trial,
            (timeline, ctx.backend.emulator()),
        )
        .map_err(|why| Stop::Harness(why.to_string()))?;
        // A killed trial's POST may have been on its way when the kill landed and counted by
        // the service only since: its replay position follows the service's final count
        // (nothing else sends the case's credit between the kill and the restart).
        if let (Some(at), Some((handle, id))) = (
            trial.replay_at.as_deref(),
            self.rules.faults.as_ref().zip(self.rules.service),
        ) {
            if handle.fired(id) > 0 {
                trial.replay_at = Some(after_a_late_arrival(at, held_at_service(plan)));
            }
        }
        for (k, step) in plan.restart_kill_steps.iter().enumerate() {
            let kill = w.kill_restart(k + 1, step)?;
            if kill.delivered && first_fault.is_none() {
                *first_fault = Some(Instant::now());
            }
            trial.kills.push(kill);
        }
        if let Some(disk) = &o.disk {
            disk.free().map_err(|why| Stop::Harness(why.to_string()))?;
            timeline.runner_fault("disk", "space freed before the final restart");
        }
        // decides_again is judged against the first decision, which its restart replaces.
        trial.decision = crate::saved_decision::saved_decision(&o.dir)
            .map_err(|e| Stop::Harness(e.to_string()))?;
        Ok(restart_env)
    }

    /// The final restart; for stop_holder, with the stopped decide worker continued when its
    /// stop is over (its end replaces the decide worker's in `decided`).
    fn final_restart(
        &self,
        w: &Workers<'_>,
        trial: &mut Trial,
        decided: &mut Decided<'_>,
        restart_env: &[(&'static str, String)],
    ) -> Result<Result<bc::RestartReport, RestartEnd>, Stop> {
        let plan = self.plan;
        let extra: Vec<String> = plan
            .decide_again_pct
            .map(|p| vec!["--decide-again-pct".to_owned(), p.to_string()])
            .unwrap_or_default();
        let Some(stopped) = decided.stopped.take() else {
            return Ok(w.final_restart(&extra, restart_env));
        };
        let (until, pid) = (
            stopped.at + Duration::from_millis(plan.stop_ms.unwrap_or(0)),
            stopped.pid(),
        );
        let (restarted, continued) = std::thread::scope(|s| {
            let cont = s.spawn(|| continue_at(pid, until, self.timeline));
            let restarted = w.final_restart(&extra, restart_env);
            (restarted, cont.join().unwrap_or(false))
        });
        trial.faults.push(Fault {
            kind: "stop".into(),
            detail: format!(
                "the decide worker was stopped (SIGSTOP) at {STOP_AT} for {} ms, past the {} ms claim TTL; the outage and the final restart ran meanwhile, then SIGCONT",
                plan.stop_ms.unwrap_or(0),
                ms(self.ctx.backend.scenario_settings().claim_ttl)
            ),
            fired: u32::from(continued),
            held_ms: None,
        });
        let end = stopped.finish();
        if let Some(problem) = end.problem {
            return Err(Stop::Harness(problem));
        }
        decided.end = end;
        Ok(restarted)
    }

    /// Records how often the service fault and the slow advance fired, and removes both.
    fn remove_rules(&self, trial: &mut Trial) {
        if let (Some(handle), Some(rule)) = (&self.rules.faults, self.rules.service) {
            // The service rule is the first fault recorded (a revocation comes after it); a
            // zero hold only watched.
            if self.plan.service.is_some() {
                if let Some(f) = trial.faults.first_mut() {
                    f.fired = handle.fired(rule);
                }
            }
            handle.remove(rule);
        }
        if let (Some(handle), Some(advance)) = (&self.rules.faults, self.rules.advance) {
            if let Some(f) = trial.faults.iter_mut().find(|f| f.kind == "slow_advance") {
                f.fired = handle.fired(advance);
            }
            handle.remove(advance);
        }
    }
}
