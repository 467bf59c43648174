//! Running one trial: open the case, set the service fault, start the decide worker and kill it
//! as drawn, run the outage while it is dead, kill the restarts as drawn, run a final restart,
//! read what Stripe holds and judge it.

use super::faults::{describe, draw_for, Draw, WorldFault, DISK_KIB, STOP_AT};
use super::storage::{self, SmallDisk};
use super::timeline::Timeline;
use super::trial_error::TrialError;
use super::workers::{continue_at, DecideEnd, RestartEnd, Stopped, Workers};
use super::Nemesis;
use crate::backend::Backend;
use crate::cell::{empty_truth, stderr_tail};
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit as bc;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stripe::emulator::{FaultAction, FaultHandle, FaultId, FaultRule};
use verify::nemesis::rules::{assumption_broken, judge, trial_id, RESTART_FAILED};
use verify::nemesis::{Fault, Trial};
use verify::results::{GroundTruth, Want};
use verify::scenarios::billing_credit::HARNESS_ERROR;

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

/// Mixed into a trial's seed for the outage's own random choices.
const OUTAGE_SEED: u64 = 0x5eed;

pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What a trial works on once its case is open.
struct Opened {
    /// The case's directory (on a small tmpfs for disk_full).
    dir: PathBuf,
    /// Where the workers' stderr goes.
    logs: PathBuf,
    api_key: String,
    client: stripe::Client,
    case: bc::CaseFile,
    /// disk_full's tmpfs, unmounted when the trial is done.
    disk: Option<SmallDisk>,
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
    let mut plan = draw_for(spec.nemesis, spec.column, spec.seed);
    if let Some(at) = spec.at {
        plan = plan.replayed_at(at)?;
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
        let w = Workers {
            ctx: self.ctx,
            dir: &self.o.dir,
            logs: &self.o.logs,
            api_key: &self.o.api_key,
            column: self.spec.column,
            timeline: self.timeline,
        };
        let mut decided = self.decide(&w, trial)?;
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
                trial.replay_at = Some(super::workers::after_a_late_arrival(
                    at,
                    super::workers::held_at_service(plan),
                ));
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

/// The trial's timeline, and the within-assumptions label verify's rule derives from it.
/// `held_from`: when the runner saw the service hold the credit POST, if it did.
fn label(
    trial: &mut Trial,
    timeline: &Timeline,
    ctx: &TrialContext<'_>,
    held_from: Option<Instant>,
) {
    let hold = trial
        .faults
        .iter()
        .find(|f| f.fired > 0 && f.held_ms.is_some_and(|h| h > 0))
        .and_then(|f| f.held_ms)
        .map(Duration::from_millis);
    trial.timeline = timeline.events(hold, held_from);
    trial.interleaving = verify::nemesis::rules::interleaving(&trial.timeline);
    let bound = ms(ctx.backend.scenario_settings().max_in_flight);
    trial.assumption = assumption_broken(&trial.faults, &trial.timeline, bound).map(str::to_owned);
}

/// What the runner does to a dead (or stopped) worker's files and to the service's memory, as
/// drawn: torn_tail cuts the record's last line, dedup_expired lets the service forget its keys
/// and returns the environment that runs the restart's wall clock as far ahead.
fn after_the_kill(
    plan: &Draw,
    o: &Opened,
    faults: Option<&FaultHandle>,
    trial: &mut Trial,
    timeline: &Timeline,
) -> Result<Vec<(&'static str, String)>, TrialError> {
    if let Some(permille) = plan.tear_permille {
        let record = match trial.column.as_str() {
            "interlock" => Some(bc::JOURNAL_FILE),
            "hand_check" => Some(bc::HAND_CHECK_LOG),
            _ => None,
        };
        let torn = match record {
            Some(name) => storage::tear_last_line(&o.dir.join(name), permille)?.map(|t| (name, t)),
            None => None,
        };
        if let (Some(name @ bc::JOURNAL_FILE), Some((_, (_, _, Some(hash))))) = (record, &torn) {
            // A line cut mid-write was never durable, so the gate never marked it (the mark
            // follows the entry's fsync): take its mark back as that crash leaves it.
            interlock::marks::unmark_torn_entry(&o.dir.join(name), hash)
                .map_err(TrialError::Unmark)?;
        }
        let detail = match torn {
            Some((name, (line, kept, _))) => {
                timeline.runner_fault("tear", name);
                format!("after the kill the last line of {name} ({line} bytes) was cut to {kept} bytes, as a crash mid-append leaves it")
            }
            None => "after the kill there was no record line to cut (no_check keeps only its decision, written whole by a rename; or the record was empty)".to_owned(),
        };
        trial.faults.push(Fault {
            kind: "torn_tail".into(),
            detail,
            fired: u32::from(torn.is_some()),
            held_ms: None,
        });
    }
    let Some(seconds) = plan.dedup_passed_s else {
        return Ok(Vec::new());
    };
    let handle = faults.ok_or(TrialError::NeedsEmulator("dedup_expired needs"))?;
    let library = storage::faketime_library().ok_or(TrialError::NoFaketime)?;
    handle.pass_idempotency_time(&o.api_key);
    timeline.runner_fault("dedup", "the service forgot the account's idempotency keys");
    trial.faults.push(Fault {
        kind: "dedup_expired".into(),
        detail: format!(
            "while the worker was dead {seconds} s passed: the service forgot every idempotency key of the account, and the final restart's wall clock ran {seconds} s ahead (libfaketime; its monotonic clock untouched)"
        ),
        fired: 1,
        held_ms: None,
    });
    Ok(storage::clock_ahead_env(&library, seconds))
}

/// The last non-empty line of a worker's stderr.
fn last_line(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(500).collect())
}

/// The trial's directory (naming the journal store, if any) and its case, opened at the service.
/// For disk_full the case's directory is a small tmpfs inside it, filled once the case is saved.
fn open(
    ctx: &TrialContext<'_>,
    spec: TrialSpec,
    id: &str,
    plan: &Draw,
) -> Result<Opened, TrialError> {
    let opening = || TrialError::opening(id);
    let logs = ctx.run_dir.join(format!("trial{:05}", spec.slot));
    fs::create_dir_all(&logs).map_err(|e| opening()(e.into()))?;
    let (dir, disk) = match plan.disk_free_pages {
        Some(_) => {
            let dir = logs.join("disk");
            fs::create_dir_all(&dir).map_err(|e| opening()(e.into()))?;
            let disk = SmallDisk::mount(&dir, DISK_KIB).map_err(|e| opening()(e.into()))?;
            (dir, Some(disk))
        }
        None => (logs.clone(), None),
    };
    if let Some(url) = ctx.journal {
        fs::write(dir.join(bc::JOURNAL_LOCATION_FILE), url)
            .map_err(|e| opening()(TrialError::NameJournal(e)))?;
    }
    let api_key = ctx.backend.api_key(spec.slot);
    let client = ctx.backend.client(&api_key)?;
    let prices = ctx.backend.prices(&client)?;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let case = bc::open_case(
        &client,
        &prices,
        &format!("nemesis {id}"),
        ctx.clock_start,
        &mut rng,
    )
    .map_err(|e| opening()(TrialError::OpenCase(e)))?;
    case.save(&dir).map_err(|e| opening()(e.into()))?;
    if let (Some(disk), Some(pages)) = (&disk, plan.disk_free_pages) {
        disk.fill_until(pages).map_err(|e| opening()(e.into()))?;
    }
    Ok(Opened {
        dir,
        logs,
        api_key,
        client,
        case,
        disk,
    })
}

/// Sets the drawn service fault on the case's credit POST. A timed kill with no service fault
/// still watches the POST arrive (a zero hold), so the trial can say whether the request had
/// reached the service when the worker died.
fn service_rule(
    plan: &Draw,
    faults: Option<&FaultHandle>,
    api_key: &str,
) -> Result<Option<FaultId>, TrialError> {
    let action = match &plan.service {
        Some(a) => a.clone(),
        None if plan.decide_kill_ms.is_some() => FaultAction::Delay { ms: 0 },
        None => return Ok(None),
    };
    let handle = faults.ok_or(TrialError::NeedsEmulator("service nemeses need"))?;
    let times = if plan.service.is_some() {
        plan.service_times
    } else {
        1
    };
    let rule = FaultRule::new("POST", "/v1/customers/*/balance_transactions", action)
        .for_key(api_key)
        .times(times);
    Ok(Some(handle.add(rule)))
}

/// How long the trial's outage advance takes: at least `--outage-ms`, and for a trial whose
/// credit POST is held at the service, longer than the hold (Stripe's advances take seconds, so
/// a held request lands before the outage is over there too) — except for late_beyond_bound,
/// whose point is a request that lands after recovery has run. Sets the rule and records it.
fn advance_rule(
    ctx: &TrialContext<'_>,
    nemesis: Nemesis,
    plan: &Draw,
    faults: Option<&FaultHandle>,
    api_key: &str,
    trial: &mut Trial,
) -> Result<Option<FaultId>, TrialError> {
    let hold = match plan.service {
        Some(FaultAction::Delay { ms }) if ms > 0 && nemesis != Nemesis::LateBeyondBound => {
            Some(ms + 500)
        }
        _ => None,
    };
    let Some(ms) = hold.max(ctx.outage_ms) else {
        return Ok(None);
    };
    let handle = faults.ok_or(TrialError::NeedsEmulator(
        "--outage-ms and held requests need",
    ))?;
    let why = match hold {
        Some(h) if Some(h) == Some(ms) => {
            "longer than the held request, as a Stripe advance of seconds would be"
        }
        _ => "as --outage-ms asked",
    };
    trial.faults.push(Fault {
        kind: "slow_advance".into(),
        detail: format!("the outage's test-clock advance took {ms} ms ({why})"),
        fired: 0,
        held_ms: None,
    });
    Ok(Some(
        handle.add(crate::cell::slow_advance_rule(api_key, ms)),
    ))
}

/// The drawn world change, made while the worker is paused: the fault to record and, for a
/// revocation, the case as it now stands.
fn change_world(
    plan: &Draw,
    seed: u64,
    o: &Opened,
    (timeline, from): (&Timeline, Instant),
    emulator: Option<&stripe::emulator::RunningEmulator>,
) -> Result<(Fault, Option<bc::CaseFile>), TrialError> {
    let paused = match (plan.pause_at, plan.world_at_us) {
        (Some(step), _) => format!("while the worker was paused at {step}"),
        (None, Some(us)) => format!(
            "{}.{:03} ms after the decision read what it changes, while the worker ran",
            us / 1000,
            us % 1000
        ),
        (None, None) => "?".to_owned(),
    };
    match plan.world {
        Some(WorldFault::Revoke) => {
            let (revoked, at) =
                clock_now(&o.client, &o.case).and_then(|at| revoke(o, emulator, at, timeline))?;
            let what = format!("support revoked the approval {paused}, at test-clock {at}");
            Ok((world_fault("revocation", what), Some(revoked)))
        }
        Some(WorldFault::CreditNote) => {
            let mut outage_rng = StdRng::seed_from_u64(seed ^ OUTAGE_SEED);
            let outage = bc::Outage::BillingCredit;
            let (_, changes) = bc::run_outage_timed(&o.client, &o.case, outage, &mut outage_rng)?;
            timeline.outage(outage.as_str(), from);
            for c in changes {
                timeline.changed(c.fact, c.from, c.until);
            }
            let what =
                format!("billing's renewal and credit note for the case's incident ran {paused}");
            Ok((world_fault("credit_note", what), None))
        }
        None => Err(TrialError::NoWorldFault),
    }
}

/// The outage while the worker is dead (none when a credit note mid-check was this trial's
/// outage), then the drawn revocation. `Err`: why the trial is a HARNESS_ERROR.
fn outage(
    plan: &Draw,
    seed: u64,
    o: &Opened,
    trial: &mut Trial,
    (timeline, emulator): (&Timeline, Option<&stripe::emulator::RunningEmulator>),
) -> Result<(), TrialError> {
    if plan.world == Some(WorldFault::CreditNote) {
        return Ok(());
    }
    let mut outage_rng = StdRng::seed_from_u64(seed ^ OUTAGE_SEED);
    let from = Instant::now();
    let (record, changes) = bc::run_outage_timed(&o.client, &o.case, plan.outage, &mut outage_rng)
        .map_err(TrialError::Outage)?;
    timeline.outage(plan.outage.as_str(), from);
    for c in changes {
        timeline.changed(c.fact, c.from, c.until);
    }
    if plan.revoke_in_outage {
        let at = record.clock_time.ok_or(TrialError::NoClockTime)?;
        let (revoked, at) =
            revoke(o, emulator, at, timeline).map_err(|e| TrialError::Revocation(Box::new(e)))?;
        trial.case = revoked.to_results_case();
        trial.faults.push(world_fault(
            "revocation",
            format!("support revoked the approval during the outage, at test-clock {at}"),
        ));
    }
    Ok(())
}

/// A request held at the service may still be on its way: let it land before reading, so the
/// ground truth is the final state (the hold is the runner's own fault, of known length, and
/// began no later than `held_from`).
fn wait_for_held_request(plan: &Draw, held_from: Instant) {
    if let Some(FaultAction::Delay { ms: held }) = plan.service {
        let until = held_from + Duration::from_millis(held + 200);
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
    }
}

/// Revokes the approval in `case.json` (the file renamed into place is the change, recorded on
/// the timeline) and moves the test clock a second past it, so a credit created after the
/// revocation is after it in Stripe's `created`. On the embedded emulator both happen with the
/// case's account locked (`step_clock_around`): every credit is created wholly before the
/// change, in the revocation's second, or after the clock moved, in a later one, so the
/// verdict's test-clock order and the timeline's order agree exactly, even for a worker that is
/// sending meanwhile. Elsewhere: the clock's time `at`, the rename, then an advance.
fn revoke(
    o: &Opened,
    emulator: Option<&stripe::emulator::RunningEmulator>,
    at: i64,
    timeline: &Timeline,
) -> Result<(bc::CaseFile, i64), TrialError> {
    let mut case = bc::CaseFile::load(&o.dir)?;
    let mut write = |at: i64| {
        case.approval.revoked = Some(verify::results::Revocation {
            by: bc::APPROVER.to_owned(),
            clock_time: Some(at),
        });
        case.save_timed(&o.dir)
    };
    let at = match emulator {
        Some(emu) => {
            let (written, at) = emu
                .step_clock_around(&o.api_key, &o.case.clock, &mut write)
                .map_err(TrialError::EmulatorClock)?;
            let (from, until) = written?;
            timeline.changed("approval", from, until);
            at
        }
        None => {
            let (from, until) = write(at)?;
            timeline.changed("approval", from, until);
            bc::advance_one_second(&o.client, &o.case, at)?;
            at
        }
    };
    Ok((case, at))
}

/// A world change made while the worker was paused (the clock is always advanced a second after
/// it, so whatever the worker creates next is later in Stripe's `created`).
fn world_fault(kind: &str, what: String) -> Fault {
    Fault {
        kind: kind.into(),
        detail: format!("{what}; the clock was then advanced one second"),
        fired: 1,
        held_ms: None,
    }
}

/// The case's test-clock time now.
fn clock_now(client: &stripe::Client, case: &bc::CaseFile) -> Result<i64, TrialError> {
    Ok(bc::clock_time(client, case)?)
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
                    held_ms: match a {
                        FaultAction::Delay { ms } => Some(*ms),
                        _ => None,
                    },
                }
            })
            .collect(),
        kills: Vec::new(),
        // Derived from the timeline once the trial has run.
        assumption: None,
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
        unresolved: false,
        timeline: Vec::new(),
        interleaving: String::new(),
        settle_ms: None,
        receipt: None,
        journal_kinds: Vec::new(),
        replay_at: None,
        restart_error: None,
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
    trial.unresolved = j.unresolved;
}

/// A HARNESS_ERROR trial: still reads and judges what Stripe holds, with the timeline so far.
fn harness(
    mut trial: Trial,
    o: &Opened,
    (timeline, ctx): (&Timeline, &TrialContext<'_>),
    why: String,
) -> Trial {
    let mut text = why;
    for file in ["decide.stderr", "restart.stderr"] {
        let tail = stderr_tail(&o.logs.join(file));
        if !tail.trim().is_empty() {
            text.push_str(&format!("\n--- {file} (tail) ---\n{tail}"));
        }
    }
    trial.outcome = HARNESS_ERROR.into();
    trial.harness_error = Some(text);
    let truth = bc::ground_truth(&o.client, &o.case).unwrap_or_else(|_| empty_truth());
    finish(&mut trial, truth);
    label(&mut trial, timeline, ctx, None);
    trial
}
