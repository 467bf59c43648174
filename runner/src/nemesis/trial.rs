//! Running one trial: open the case, set the service fault, start the decide worker and kill it
//! as drawn, run the outage while it is dead, kill the restarts as drawn, run a final restart,
//! read what Stripe holds and judge it.

use super::faults::{describe, draw_for, Draw, WorldFault};
use super::Nemesis;
use crate::backend::Backend;
use crate::cell::{empty_truth, stderr_tail};
use crate::worker::{
    self, CONTINUE_LINE, CRASH_LINE_PREFIX, EVERY_STEP, NO_CRASH, PAUSE_LINE_PREFIX,
    STEP_LINE_PREFIX, STRIPE_KEY_ENV,
};
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit as bc;
use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultAction, FaultHandle, FaultId, FaultRule};
use verify::billing_credit::HARNESS_ERROR;
use verify::nemesis::rules::{judge, trial_id};
use verify::nemesis::{Fault, Kill, Trial};
use verify::results::{GroundTruth, Want};

/// Longest a worker may run before the trial gives up on it.
const WORKER_TIMEOUT: Duration = Duration::from_secs(90);
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

fn ms(d: Duration) -> u64 {
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
        let made = match plan.world {
            Some(WorldFault::Revoke) => clock_now(&client, &case)
                .and_then(|at| revoke(&client, &dir, at))
                .map(|(revoked, at)| {
                    let fault = Fault {
                        kind: "revocation".into(),
                        detail: format!(
                            "support revoked the approval while the worker was paused at {}, at test-clock {at}; the clock was then advanced one second",
                            plan.pause_at.unwrap_or("?")
                        ),
                        fired: 1,
                    };
                    (fault, Some(revoked))
                }),
            Some(WorldFault::CreditNote) => {
                let mut outage_rng = StdRng::seed_from_u64(spec.seed ^ 0x5eed);
                bc::run_outage(&client, &case, bc::Outage::BillingCredit, &mut outage_rng)
                    .map_err(|e| e.to_string())
                    .map(|_| {
                        let fault = Fault {
                            kind: "credit_note".into(),
                            detail: format!(
                                "billing's renewal and credit note for the case's incident ran while the worker was paused at {}; the clock was then advanced one second",
                                plan.pause_at.unwrap_or("?")
                            ),
                            fired: 1,
                        };
                        (fault, None)
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
        let until = decide_ended + Duration::from_millis(held + 200);
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

struct Workers<'a> {
    ctx: &'a TrialContext<'a>,
    dir: &'a Path,
    api_key: &'a str,
    column: bc::Column,
}

struct DecideEnd {
    kill: Option<Kill>,
    ended: Option<Instant>,
    problem: Option<String>,
    /// Where a replay kills to reach the same state (timed kills only).
    replay_at: Option<String>,
}

impl DecideEnd {
    fn killed(kill: Kill, replay_at: Option<String>) -> DecideEnd {
        DecideEnd {
            kill: Some(kill),
            ended: Some(Instant::now()),
            problem: None,
            replay_at,
        }
    }

    fn problem(why: String) -> DecideEnd {
        DecideEnd {
            kill: None,
            ended: Some(Instant::now()),
            problem: Some(why),
            replay_at: None,
        }
    }
}

enum RestartEnd {
    /// The column's restart ended in an error (a measured outcome).
    Failed,
    /// The harness could not run it.
    Harness(String),
}

impl Workers<'_> {
    fn spawn(
        &self,
        phase: &str,
        crash: &str,
        stderr_name: &str,
        extra: &[String],
    ) -> Result<Child, String> {
        let backend = self.ctx.backend;
        let settings = backend.scenario_settings();
        let stderr = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(stderr_name))
            .map_err(|e| format!("cannot open {stderr_name}: {e}"))?;
        Command::new(self.ctx.exe)
            .arg("worker")
            .arg(phase)
            .args(["--column", self.column.as_str(), "--crash", crash])
            .arg("--cell-dir")
            .arg(self.dir)
            .arg("--key-file")
            .arg(self.ctx.key_file)
            .args(["--base-url", backend.base_url()])
            .args([
                "--request-timeout-ms",
                &ms(backend.request_timeout()).to_string(),
            ])
            .args([
                "--max-in-flight-ms",
                &ms(settings.max_in_flight).to_string(),
            ])
            .args(["--claim-ttl-ms", &ms(settings.claim_ttl).to_string()])
            .args(extra)
            .env(STRIPE_KEY_ENV, self.api_key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start a {phase} worker: {e}"))
    }

    /// The decide worker, killed or paused as drawn. `world` makes the drawn world change while
    /// the worker is paused.
    fn run_decide(
        &self,
        plan: &Draw,
        rule: Option<(&FaultHandle, FaultId)>,
        world: &mut dyn FnMut() -> Result<(), String>,
    ) -> Result<DecideEnd, String> {
        if plan.decide_at_before_send {
            return self.decide_cooperative();
        }
        let stepwise = plan.kill_at_step.filter(|s| *s != "request_held");
        let mut child = self.spawn_steps(stepwise, plan.pause_at)?;
        let started = Instant::now();
        let deadline = started + WORKER_TIMEOUT;
        let mut lines = Lines::new(&mut child);
        if let Some(step) = plan.pause_at {
            let paused = lines.wait_for(PAUSE_LINE_PREFIX, deadline);
            if paused.is_some() {
                world()?;
                let told = child.stdin.as_mut().map(|stdin| {
                    stdin
                        .write_all(format!("{CONTINUE_LINE}\n").as_bytes())
                        .and_then(|()| stdin.flush())
                });
                if !matches!(told, Some(Ok(()))) {
                    reap(&mut child);
                    return Ok(DecideEnd::problem(format!(
                        "could not tell the decide worker paused at {step} to go on"
                    )));
                }
            }
            let status = wait_until(&mut child, deadline);
            lines.drain();
            let problem = match (paused, status) {
                (_, None) => Some("the decide worker did not finish in time".to_owned()),
                (None, Some(s)) if !s.success() => Some(format!(
                    "the decide worker {} before its pause at {step}",
                    describe_exit(Some(s))
                )),
                _ => None,
            };
            return Ok(DecideEnd {
                kill: None,
                ended: Some(Instant::now()),
                problem,
                replay_at: None,
            });
        }
        if let Some(step) = plan.kill_at_step {
            // At a worker step: it announces the step and blocks there. Mid-request: the service
            // holds the POST (for at least 100 ms) and the runner sees the rule fire.
            match (step, rule) {
                ("request_held", Some((handle, id))) => {
                    poll_fired(&mut child, handle, id, deadline);
                }
                _ => {
                    lines.wait_for(CRASH_LINE_PREFIX, deadline);
                }
            }
            let kill = self.kill_now(&mut child, "decide", 0, step, &mut lines);
            return Ok(DecideEnd::killed(kill, None));
        }
        let Some(at) = plan.decide_kill_ms else {
            let mut second = match plan.second_worker {
                true => Some(self.spawn("decide", NO_CRASH, "decide-2.stderr", &[])?),
                false => None,
            };
            let status = wait_until(&mut child, deadline);
            if let Some(second) = second.as_mut() {
                wait_until(second, deadline);
            }
            lines.drain();
            return Ok(DecideEnd {
                kill: None,
                ended: Some(Instant::now()),
                problem: status
                    .is_none()
                    .then(|| "the decide worker did not finish in time".into()),
                replay_at: None,
            });
        };
        let origin = match (plan.kill_after, rule) {
            // The instant counts from the service holding the credit POST: poll the rule.
            ("request_held", Some((handle, id))) => poll_fired(&mut child, handle, id, deadline),
            _ => started,
        };
        let when = origin + Duration::from_millis(at);
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        let kill = self.kill_now(&mut child, "decide", at, plan.kill_after, &mut lines);
        // Where a replay must kill to reach the same state: the last step passed; a POST that
        // reached the service but whose answer the worker never saw is `request_held` when the
        // service held it, else `after_send` (it was applied; only the record is missing).
        let arrived = rule.is_some_and(|(handle, id)| handle.fired(id) > 0);
        let held = matches!(plan.service, Some(FaultAction::Delay { ms }) if ms >= 100);
        let replay_at = kill
            .delivered
            .then(|| replay_position(&lines.steps, arrived, held));
        Ok(DecideEnd::killed(kill, replay_at))
    }

    /// Cooperative: the worker announces `before_send` and blocks there (kill_recovery's and
    /// revoke_in_outage's base).
    fn decide_cooperative(&self) -> Result<DecideEnd, String> {
        let mut child = self.spawn("decide", "before_send", "decide.stderr", &[])?;
        let deadline = Instant::now() + WORKER_TIMEOUT;
        let mut lines = Lines::new(&mut child);
        if lines.wait_for(CRASH_LINE_PREFIX, deadline).is_none() {
            let status = wait_until(&mut child, Instant::now());
            return Ok(DecideEnd::problem(format!(
                "the decide worker {} before its crash point",
                describe_exit(status)
            )));
        }
        let kill = self.kill_now(&mut child, "decide", 0, "before_send", &mut lines);
        Ok(DecideEnd::killed(kill, None))
    }

    /// A decide worker that announces every step (`--crash every`), blocking at `kill_at` or
    /// pausing at `pause_at`.
    fn spawn_steps(&self, kill_at: Option<&str>, pause_at: Option<&str>) -> Result<Child, String> {
        let mut extra = Vec::new();
        if let Some(step) = kill_at {
            extra.extend(["--kill-at".to_owned(), step.to_owned()]);
        }
        if let Some(step) = pause_at {
            extra.extend(["--pause-at".to_owned(), step.to_owned()]);
        }
        self.spawn("decide", EVERY_STEP, "decide.stderr", &extra)
    }

    /// SIGKILL the worker now if it is still running; record what it hit (the last step it
    /// announced, read from `lines` once it is dead and its output complete).
    fn kill_now(
        &self,
        child: &mut Child,
        worker: &str,
        at_ms: u64,
        after: &str,
        lines: &mut Lines,
    ) -> Kill {
        let already = matches!(child.try_wait(), Ok(Some(_)));
        if !already {
            let _ = child.kill();
        }
        let status = child.wait().ok();
        drop(child.stdin.take());
        lines.drain();
        Kill {
            worker: worker.into(),
            at_ms,
            after: after.into(),
            delivered: !already && status.and_then(|s| s.signal()) == Some(libc::SIGKILL),
            last_step: lines.steps.last().cloned(),
        }
    }

    fn kill_restart(&self, n: usize, at: u64) -> Result<Kill, String> {
        let mut child = self.spawn("resume", NO_CRASH, "restart.stderr", &[])?;
        let mut lines = Lines::new(&mut child);
        std::thread::sleep(Duration::from_millis(at));
        let mut kill = self.kill_now(&mut child, &format!("restart-{n}"), at, "start", &mut lines);
        // A restart announces no steps; say how far its column's record got instead.
        kill.last_step = last_record(self.dir, self.column);
        Ok(kill)
    }

    fn final_restart(&self) -> Result<bc::RestartReport, RestartEnd> {
        let mut child = self
            .spawn("resume", NO_CRASH, "restart.stderr", &[])
            .map_err(RestartEnd::Harness)?;
        let lines = line_reader(&mut child);
        let deadline = Instant::now() + WORKER_TIMEOUT;
        let mut last = None;
        loop {
            match lines.recv_timeout(Duration::from_millis(20)) {
                Ok(Some(l)) if !l.trim().is_empty() => last = Some(l),
                Ok(Some(_)) => {}
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                    reap(&mut child);
                    return Err(RestartEnd::Harness(
                        "the final restart did not finish in time".into(),
                    ));
                }
                Err(_) => {}
            }
        }
        let status = child
            .wait()
            .map_err(|e| RestartEnd::Harness(e.to_string()))?;
        if !status.success() {
            return Err(RestartEnd::Failed);
        }
        let line =
            last.ok_or_else(|| RestartEnd::Harness("the final restart printed nothing".into()))?;
        serde_json::from_str(&line).map_err(|e| {
            RestartEnd::Harness(format!("the final restart's report does not parse: {e}"))
        })
    }
}

/// How far a column's durable record got (for restarts, which announce no steps): the
/// journal's last entry kind (interlock, file store), the log's last step (hand_check), or
/// whether the decision was saved.
fn last_record(dir: &Path, column: bc::Column) -> Option<String> {
    match column {
        bc::Column::Interlock => {
            let text = fs::read_to_string(dir.join(bc::JOURNAL_FILE)).ok()?;
            text.lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
                .or_else(|| decision_saved(dir))
        }
        bc::Column::HandCheck => bc::read_hand_check_log(dir)
            .ok()?
            .last()
            .and_then(|l| {
                let phase = l.get("phase").and_then(Value::as_str)?;
                let step = l.get("step").and_then(Value::as_str)?;
                Some(format!("{phase}:{step}"))
            })
            .or_else(|| decision_saved(dir)),
        bc::Column::NoCheck => decision_saved(dir),
    }
}

fn decision_saved(dir: &Path) -> Option<String> {
    dir.join(bc::DECISION_FILE)
        .exists()
        .then(|| "decision_saved".to_owned())
}

/// The step a replay kills at to reach the state a timed kill left: the last step announced,
/// except that `before_send` (nothing durable since the step before it) is that earlier step,
/// or — when the POST reached the service — `request_held` (held there) or `after_send`.
pub(super) fn replay_position(steps: &[String], arrived: bool, held: bool) -> String {
    let last = steps.last().map(String::as_str).unwrap_or("started");
    if last == "before_send" {
        if arrived {
            return if held { "request_held" } else { "after_send" }.to_owned();
        }
        let before = steps.len().checked_sub(2).and_then(|i| steps.get(i));
        return before.map_or("started".to_owned(), Clone::clone);
    }
    last.to_owned()
}

fn poll_fired(child: &mut Child, handle: &FaultHandle, id: FaultId, deadline: Instant) -> Instant {
    loop {
        if handle.fired(id) > 0
            || matches!(child.try_wait(), Ok(Some(_)))
            || Instant::now() > deadline
        {
            return Instant::now();
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A worker's stdout, line by line, on a thread; the steps it announced so far.
struct Lines {
    rx: mpsc::Receiver<Option<String>>,
    steps: Vec<String>,
    last: Option<String>,
    done: bool,
}

impl Lines {
    fn new(child: &mut Child) -> Lines {
        Lines {
            rx: line_reader(child),
            steps: Vec::new(),
            last: None,
            done: false,
        }
    }

    fn take(&mut self, line: String) -> String {
        if let Some(step) = line.strip_prefix(STEP_LINE_PREFIX) {
            self.steps.push(step.trim().to_owned());
        } else if !line.trim().is_empty() {
            self.last = Some(line.clone());
        }
        line
    }

    /// Waits for a line starting with `prefix`; `None` if the output ended or time ran out.
    fn wait_for(&mut self, prefix: &str, deadline: Instant) -> Option<String> {
        while !self.done {
            match self.rx.recv_timeout(Duration::from_millis(20)) {
                Ok(Some(l)) => {
                    let l = self.take(l);
                    if l.starts_with(prefix) {
                        return Some(l);
                    }
                }
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => self.done = true,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => return None,
                Err(_) => {}
            }
        }
        None
    }

    /// Reads what is left once the worker is dead (its output is complete then).
    fn drain(&mut self) {
        while !self.done {
            match self.rx.recv_timeout(Duration::from_secs(2)) {
                Ok(Some(l)) => {
                    self.take(l);
                }
                _ => self.done = true,
            }
        }
    }
}

fn line_reader(child: &mut Child) -> mpsc::Receiver<Option<String>> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(l) = line else { break };
                if tx.send(Some(l)).is_err() {
                    return;
                }
            }
            let _ = tx.send(None);
        });
    } else {
        let _ = tx.send(None);
    }
    rx
}

fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                reap(child);
                return None;
            }
        }
    }
}

fn reap(child: &mut Child) -> Option<ExitStatus> {
    let _ = child.kill();
    child.wait().ok()
}

fn describe_exit(status: Option<ExitStatus>) -> String {
    match status.map(|s| (s.signal(), s.code())) {
        Some((Some(sig), _)) => format!("ended by signal {sig}"),
        Some((None, Some(code))) => format!("exited with code {code}"),
        _ => "ended in an unknown way".into(),
    }
}

// Keeps the worker module's phase names and ours in one place.
const _: worker::Phase = worker::Phase::Resume;
