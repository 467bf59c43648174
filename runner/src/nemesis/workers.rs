//! The processes of a trial: the decide worker (killed at an instant, at a step, or paused for a
//! world change), the restarts (killed as drawn, then a final one), and what their stdout says.

use super::faults::Draw;
use super::timeline::Timeline;
use super::trial::{ms, TrialContext};
use super::trial_error::TrialError;
use crate::worker::{
    self, CONTINUE_LINE, CRASH_LINE_PREFIX, EVERY_STEP, NO_CRASH, PAUSE_LINE_PREFIX,
    STEP_LINE_PREFIX, STRIPE_KEY_ENV,
};
use scenarios::billing_credit as bc;
use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultAction, FaultHandle, FaultId};
use verify::nemesis::Kill;

/// Longest a worker may run before the trial gives up on it.
const WORKER_TIMEOUT: Duration = Duration::from_secs(90);

pub(super) struct Workers<'a> {
    pub(super) ctx: &'a TrialContext<'a>,
    /// The case's directory (`--cell-dir`).
    pub(super) dir: &'a Path,
    /// Where the workers' stderr files go (the case's directory, or beside it when that is a
    /// small tmpfs that fills up).
    pub(super) logs: &'a Path,
    pub(super) api_key: &'a str,
    pub(super) column: bc::Column,
    /// Where every announcement and kill is recorded.
    pub(super) timeline: &'a Timeline,
}

pub(super) struct DecideEnd {
    pub(super) kill: Option<Kill>,
    pub(super) ended: Option<Instant>,
    pub(super) problem: Option<String>,
    /// Where a replay kills to reach the same state (timed kills only).
    pub(super) replay_at: Option<String>,
    /// When the runner saw the service hold the credit POST, if it watched (a held request
    /// lands at most its hold after this).
    pub(super) held_from: Option<Instant>,
}

/// A decide worker while it runs.
struct Running<'t> {
    child: Child,
    lines: Lines<'t>,
    started: Instant,
    deadline: Instant,
}

/// Paused at a worker step: the world changes, then the worker is told to go on and runs to
/// its end.
fn decide_paused(
    mut run: Running<'_>,
    step: &str,
    world: &mut dyn FnMut() -> Result<(), TrialError>,
) -> Result<DecideEnd, TrialError> {
    let paused = run.lines.wait_for(PAUSE_LINE_PREFIX, run.deadline);
    if paused.is_some() {
        world()?;
        let told = run.child.stdin.as_mut().map(|stdin| {
            stdin
                .write_all(format!("{CONTINUE_LINE}\n").as_bytes())
                .and_then(|()| stdin.flush())
        });
        run.lines.timeline.resumed("decide");
        if !matches!(told, Some(Ok(()))) {
            reap(&mut run.child);
            return Ok(DecideEnd::problem(format!(
                "could not tell the decide worker paused at {step} to go on"
            )));
        }
    }
    let status = wait_until(&mut run.child, run.deadline);
    run.lines.drain();
    let problem = match (paused, status) {
        (_, None) => Some("the decide worker did not finish in time".to_owned()),
        (None, Some(s)) if !s.success() => Some(format!(
            "the decide worker {} before its pause at {step}",
            describe_exit(Some(s))
        )),
        _ => None,
    };
    Ok(DecideEnd::finished(problem, None))
}

/// Runs to its end while the world changes `fact` `at` µs after the worker's decision read it
/// (the exposure nemesis): the decision never knows of the change, and nobody waits for
/// anybody after, so where the change lands in the rest of the worker's life is chance.
fn decide_exposed(
    mut run: Running<'_>,
    fact: &str,
    at: u64,
    world: &mut dyn FnMut() -> Result<(), TrialError>,
) -> Result<DecideEnd, TrialError> {
    let read = format!("{}read {fact} ", bc::EVENT_LINE_PREFIX);
    // From the end of the read as the worker stamped it (`read <fact> <start> <end>`), not from
    // when the runner got the line.
    let origin = run
        .lines
        .wait_for(&read, run.deadline)
        .map_or(run.started, |line| worker_instant(&line, 4));
    let when = origin + Duration::from_micros(at);
    let now = Instant::now();
    if when > now {
        std::thread::sleep(when - now);
    }
    world()?;
    let status = wait_until(&mut run.child, run.deadline);
    run.lines.drain();
    let problem = match status {
        None => Some("the decide worker did not finish in time".to_owned()),
        Some(s) if !s.success() => Some(format!(
            "the decide worker {} with the world changing under it",
            describe_exit(Some(s))
        )),
        Some(_) => None,
    };
    Ok(DecideEnd::finished(problem, None))
}

/// A decide worker stopped (SIGSTOP) at its last step before the POST; it goes on when
/// [`Stopped::resume_at`] sends SIGCONT.
pub(super) struct Stopped<'t> {
    run: Running<'t>,
    /// When the runner stopped it.
    pub(super) at: Instant,
}

impl Stopped<'_> {
    /// The stopped process's id.
    pub(super) fn pid(&self) -> u32 {
        self.run.child.id()
    }

    /// Waits for the continued worker to end (its POST answered or failed).
    pub(super) fn finish(mut self) -> DecideEnd {
        let status = wait_until(&mut self.run.child, Instant::now() + WORKER_TIMEOUT);
        self.run.lines.drain();
        let problem = status
            .is_none()
            .then(|| "the stopped decide worker did not finish in time once continued".to_owned());
        DecideEnd::finished(problem, None)
    }
}

/// Sends SIGCONT to the stopped decide worker `pid` at `when` (the trial runs its restart
/// meanwhile, on another thread); false if it could not be sent.
pub(super) fn continue_at(pid: u32, when: Instant, timeline: &Timeline) -> bool {
    let now = Instant::now();
    if when > now {
        std::thread::sleep(when - now);
    }
    timeline.signalled("cont", "decide");
    signal(pid, rustix::process::Signal::CONT)
}

/// The instant a worker stamped as word `word` of `line` (the machine's monotonic µs), as an
/// `Instant`; now when the line carries no stamp (or one from the future).
fn worker_instant(line: &str, word: usize) -> Instant {
    let now = Instant::now();
    let stamped = line
        .split_whitespace()
        .nth(word)
        .and_then(|w| w.parse::<u64>().ok());
    let ago = stamped.map(|us| bc::monotonic_us().saturating_sub(us));
    ago.and_then(|us| now.checked_sub(Duration::from_micros(us)))
        .unwrap_or(now)
}

/// Sends `sig` to process `pid`; false if it could not be sent (the process is gone).
fn signal(pid: u32, sig: rustix::process::Signal) -> bool {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    pid.is_some_and(|p| rustix::process::kill_process(p, sig).is_ok())
}

impl DecideEnd {
    /// The worker ended by itself (or was given up on: `problem`).
    fn finished(problem: Option<String>, held_from: Option<Instant>) -> DecideEnd {
        DecideEnd {
            kill: None,
            ended: Some(Instant::now()),
            problem,
            replay_at: None,
            held_from,
        }
    }

    fn killed(kill: Kill, replay_at: Option<String>) -> DecideEnd {
        DecideEnd {
            kill: Some(kill),
            ended: Some(Instant::now()),
            problem: None,
            replay_at,
            held_from: None,
        }
    }

    pub(super) fn problem(why: String) -> DecideEnd {
        DecideEnd::finished(Some(why), None)
    }

    /// A worker that has not ended yet (stopped): its end comes later.
    pub(super) fn pending() -> DecideEnd {
        DecideEnd {
            kill: None,
            ended: None,
            problem: None,
            replay_at: None,
            held_from: None,
        }
    }
}

pub(super) enum RestartEnd {
    /// The column's restart ended in an error (a measured outcome).
    Failed,
    /// The harness could not run it.
    Harness(TrialError),
}

impl Workers<'_> {
    fn spawn(
        &self,
        phase: &str,
        crash: &str,
        stderr_name: &str,
        extra: &[String],
    ) -> Result<Child, TrialError> {
        self.spawn_in(phase, crash, stderr_name, extra, &[])
    }

    fn spawn_in(
        &self,
        phase: &str,
        crash: &str,
        stderr_name: &str,
        extra: &[String],
        env: &[(&str, String)],
    ) -> Result<Child, TrialError> {
        let backend = self.ctx.backend;
        let settings = backend.scenario_settings();
        let stderr = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.join(stderr_name))
            .map_err(|source| TrialError::OpenLog {
                name: stderr_name.to_owned(),
                source,
            })?;
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
            .arg("--announce-events")
            .args(extra)
            .env(STRIPE_KEY_ENV, self.api_key)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .spawn()
            .map_err(|source| TrialError::Spawn {
                phase: phase.to_owned(),
                source,
            })
    }

    /// The decide worker, killed or paused as drawn. `world` makes the drawn world change while
    /// the worker is paused.
    pub(super) fn run_decide(
        &self,
        plan: &Draw,
        rule: Option<(&FaultHandle, FaultId)>,
        world: &mut dyn FnMut() -> Result<(), TrialError>,
    ) -> Result<DecideEnd, TrialError> {
        if plan.decide_at_before_send {
            return self.decide_cooperative();
        }
        let stepwise = plan.kill_at_step.filter(|s| *s != "request_held");
        let mut child = self.spawn_steps(stepwise, plan.pause_at)?;
        let started = Instant::now();
        let run = Running {
            lines: Lines::new(&mut child, "decide", self.timeline),
            child,
            started,
            deadline: started + WORKER_TIMEOUT,
        };
        if let (Some(at), Some(fault)) = (plan.world_at_us, plan.world) {
            return decide_exposed(run, fault.fact(), at, world);
        }
        match (plan.pause_at, plan.kill_at_step, plan.decide_kill_ms) {
            (Some(step), _, _) => decide_paused(run, step, world),
            (None, Some(step), _) => Ok(self.decide_at_step(run, step, rule)),
            (None, None, Some(at)) => Ok(self.decide_timed(run, plan, at, rule)),
            (None, None, None) => self.decide_to_its_end(run, plan, rule),
        }
    }

    /// At a worker step: it announces the step and blocks there. Mid-request: the service holds
    /// the POST (for at least 100 ms) and the runner sees the rule fire.
    fn decide_at_step(
        &self,
        mut run: Running<'_>,
        step: &str,
        rule: Option<(&FaultHandle, FaultId)>,
    ) -> DecideEnd {
        let held_from = match (step, rule) {
            ("request_held", Some((handle, id))) => {
                Some(poll_fired(&mut run.child, handle, id, run.deadline))
            }
            _ => {
                run.lines.wait_for(CRASH_LINE_PREFIX, run.deadline);
                None
            }
        };
        let kill = self.kill_now(&mut run.child, "decide", 0, step, &mut run.lines);
        let mut end = DecideEnd::killed(kill, None);
        end.held_from = held_from;
        end
    }

    /// At an instant drawn ms after the start, or after the service held the POST; records where
    /// a replay must kill to reach the same state.
    fn decide_timed(
        &self,
        mut run: Running<'_>,
        plan: &Draw,
        at: u64,
        rule: Option<(&FaultHandle, FaultId)>,
    ) -> DecideEnd {
        let (origin, held_from) = match (plan.kill_after, rule) {
            ("request_held", Some((handle, id))) => {
                let held = poll_fired(&mut run.child, handle, id, run.deadline);
                (held, Some(held))
            }
            ("start", _) => (run.started, None),
            (step, _) => {
                // From the worker's own stamp of the step (`INTERLOCK-STEP <step> <µs>`); a worker
                // that never reaches it (it refused first, or ended) is killed at once.
                let prefix = format!("{STEP_LINE_PREFIX}{step} ");
                let seen = run.lines.wait_for(&prefix, run.deadline);
                (
                    seen.map_or_else(Instant::now, |l| worker_instant(&l, 2)),
                    None,
                )
            }
        };
        let when = origin + Duration::from_millis(at) + Duration::from_micros(plan.kill_jitter_us);
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        let kill = self.kill_now(
            &mut run.child,
            "decide",
            at,
            plan.kill_after,
            &mut run.lines,
        );
        // The last step passed; a POST that reached the service but whose answer the worker
        // never saw is `request_held` when the service held it, else `after_send` (it was
        // applied; only the record is missing).
        let arrived = rule.is_some_and(|(handle, id)| handle.fired(id) > 0);
        let held = held_at_service(plan);
        let replay_at = kill.delivered.then(|| {
            let announced = replay_position(&run.lines.steps, arrived, held);
            later_of(self.column, announced, durable_step(self.dir, self.column))
        });
        let mut end = DecideEnd::killed(kill, replay_at);
        end.held_from = held_from;
        end
    }

    /// No kill: the worker (and a second one, if drawn) runs to its end, while the runner
    /// watches when the service held the POST (that bounds when it lands).
    fn decide_to_its_end(
        &self,
        mut run: Running<'_>,
        plan: &Draw,
        rule: Option<(&FaultHandle, FaultId)>,
    ) -> Result<DecideEnd, TrialError> {
        let mut second = match plan.second_worker {
            true => {
                let mut child = self.spawn("decide", NO_CRASH, "decide-2.stderr", &[])?;
                let lines = Lines::new(&mut child, "decide-2", self.timeline);
                Some((child, lines))
            }
            false => None,
        };
        let mut held_from = None;
        let status = loop {
            if held_from.is_none() && rule.is_some_and(|(h, id)| h.fired(id) > 0) {
                held_from = Some(Instant::now());
            }
            match run.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < run.deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                _ => {
                    reap(&mut run.child);
                    break None;
                }
            }
        };
        if let Some((second, lines)) = second.as_mut() {
            wait_until(second, run.deadline);
            lines.drain();
        }
        run.lines.drain();
        let problem = status
            .is_none()
            .then(|| "the decide worker did not finish in time".to_owned());
        Ok(DecideEnd::finished(problem, held_from))
    }

    /// stop_holder: the worker pauses at `step` (its last before the POST), the runner stops it
    /// there with SIGSTOP and writes its `continue` (read once it runs again). `Err`: why the
    /// trial is a HARNESS_ERROR.
    pub(super) fn decide_stopped(&self, step: &str) -> Result<Stopped<'_>, TrialError> {
        let mut child = self.spawn_steps(None, Some(step))?;
        let started = Instant::now();
        let mut run = Running {
            lines: Lines::new(&mut child, "decide", self.timeline),
            child,
            started,
            deadline: started + WORKER_TIMEOUT,
        };
        if run
            .lines
            .wait_for(PAUSE_LINE_PREFIX, run.deadline)
            .is_none()
        {
            let status = wait_until(&mut run.child, Instant::now());
            return Err(TrialError::EndedBeforeStop {
                exit: describe_exit(status),
                step: step.to_owned(),
            });
        }
        self.timeline.signalled("stop", "decide");
        if !signal(run.child.id(), rustix::process::Signal::STOP) {
            reap(&mut run.child);
            return Err(TrialError::Sigstop);
        }
        let at = Instant::now();
        let told = run.child.stdin.as_mut().map(|stdin| {
            stdin
                .write_all(format!("{CONTINUE_LINE}\n").as_bytes())
                .and_then(|()| stdin.flush())
        });
        if !matches!(told, Some(Ok(()))) {
            reap(&mut run.child);
            return Err(TrialError::QueueContinue);
        }
        Ok(Stopped { run, at })
    }

    /// Cooperative: the worker announces `before_send` and blocks there (kill_recovery's and
    /// revoke_in_outage's base).
    fn decide_cooperative(&self) -> Result<DecideEnd, TrialError> {
        let mut child = self.spawn("decide", "before_send", "decide.stderr", &[])?;
        let deadline = Instant::now() + WORKER_TIMEOUT;
        let mut lines = Lines::new(&mut child, "decide", self.timeline);
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
    fn spawn_steps(
        &self,
        kill_at: Option<&str>,
        pause_at: Option<&str>,
    ) -> Result<Child, TrialError> {
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
        lines: &mut Lines<'_>,
    ) -> Kill {
        let already = matches!(child.try_wait(), Ok(Some(_)));
        let sent_at = Instant::now();
        if !already {
            let _ = child.kill();
        }
        let status = child.wait().ok();
        drop(child.stdin.take());
        lines.drain();
        let delivered = !already && status.and_then(|s| s.signal()) == Some(libc::SIGKILL);
        // On the timeline only a kill that killed (a process that ended first was not killed).
        if delivered {
            self.timeline.killed_at(worker, sent_at);
        }
        Kill {
            worker: worker.into(),
            at_ms,
            after: after.into(),
            delivered,
            last_step: lines.steps.last().cloned(),
        }
    }

    /// Restart `n`, announcing its recovery steps and blocking at `step` until SIGKILLed there;
    /// a restart that ends before it reaches `step` is not killed (the kill is not delivered).
    pub(super) fn kill_restart(&self, n: usize, step: &str) -> Result<Kill, TrialError> {
        let extra = ["--kill-at".to_owned(), step.to_owned()];
        let mut child = self.spawn("resume", EVERY_STEP, "restart.stderr", &extra)?;
        let actor = format!("restart-{n}");
        let mut lines = Lines::new(&mut child, &actor, self.timeline);
        lines.wait_for(CRASH_LINE_PREFIX, Instant::now() + WORKER_TIMEOUT);
        let mut kill = self.kill_now(&mut child, &actor, 0, step, &mut lines);
        if kill.last_step.is_none() {
            kill.last_step = last_record(self.dir, self.column);
        }
        Ok(kill)
    }

    /// The final restart, with `extra` arguments and environment (decides_again's percentage,
    /// dedup_expired's clock ahead).
    pub(super) fn final_restart(
        &self,
        extra: &[String],
        env: &[(&str, String)],
    ) -> Result<bc::RestartReport, RestartEnd> {
        let mut child = self
            .spawn_in("resume", NO_CRASH, "restart.stderr", extra, env)
            .map_err(RestartEnd::Harness)?;
        let lines = line_reader(&mut child);
        let deadline = Instant::now() + WORKER_TIMEOUT;
        let mut last = None;
        loop {
            match lines.recv_timeout(Duration::from_millis(20)) {
                Ok(Some((at, l))) => {
                    self.timeline.worker_line("restart", at, &l);
                    let announcement = l.starts_with(bc::EVENT_LINE_PREFIX);
                    if !announcement && !l.trim().is_empty() {
                        last = Some(l);
                    }
                }
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                    reap(&mut child);
                    return Err(RestartEnd::Harness(TrialError::FinalRestartTimeout));
                }
                Err(_) => {}
            }
        }
        let status = child.wait().map_err(|e| RestartEnd::Harness(e.into()))?;
        if !status.success() {
            return Err(RestartEnd::Failed);
        }
        let line = last.ok_or(RestartEnd::Harness(TrialError::FinalRestartSilent))?;
        serde_json::from_str(&line)
            .map_err(|e| RestartEnd::Harness(TrialError::FinalRestartReport(e)))
    }
}

/// How far a column's durable record got (for restarts, which announce no steps): the
/// journal's last entry kind (interlock, file store), the log's last step (hand_check), or
/// whether the decision was saved.
fn last_record(dir: &Path, column: bc::Column) -> Option<String> {
    let found = match column {
        bc::Column::Interlock => last_journal_kind(dir, |kind| Some(kind.to_owned()))?,
        bc::Column::HandCheck => last_log_step(dir)?.map(|(phase, step)| format!("{phase}:{step}")),
        bc::Column::NoCheck => None,
    };
    found.or_else(|| decision_saved(dir))
}

/// The last readable entry of the interlock journal in `dir` whose kind `pick` takes, as `pick`
/// gives it (`None`: no journal file to read; `Some(None)`: no such entry).
fn last_journal_kind<T>(dir: &Path, pick: impl Fn(&str) -> Option<T>) -> Option<Option<T>> {
    let text = fs::read_to_string(dir.join(bc::JOURNAL_FILE)).ok()?;
    Some(
        text.lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|v| v.get("kind").and_then(Value::as_str).and_then(&pick)),
    )
}

/// The phase and step of the last line of hand_check's log in `dir` (`None`: the log cannot be
/// read; `Some(None)`: it has no such line).
fn last_log_step(dir: &Path) -> Option<Option<(String, String)>> {
    let log = bc::read_hand_check_log(dir).ok()?;
    Some(log.last().and_then(|line| {
        let field = |k: &str| line.get(k).and_then(Value::as_str).map(str::to_owned);
        Some((field("phase")?, field("step")?))
    }))
}

/// The last step whose write is durable in the column's record: a worker killed between a
/// durable write and its announcement of the step has passed that step, though it never said so.
fn durable_step(dir: &Path, column: bc::Column) -> Option<&'static str> {
    let step = match column {
        bc::Column::Interlock => last_journal_kind(dir, |kind| match kind {
            "PROPOSED" => Some("proposed"),
            "AUTHORIZED" => Some("authorized"),
            "DISPATCHED" => Some("dispatched"),
            "COMMITTED" => Some("committed"),
            _ => None,
        })?,
        bc::Column::HandCheck => last_log_step(dir)?.and_then(|(_, step)| match step.as_str() {
            "lookup" => Some("lookup"),
            "approval" => Some("approval"),
            "premises" => Some("premises"),
            "send" => Some("send_logged"),
            "sent" => Some("sent_logged"),
            _ => None,
        }),
        bc::Column::NoCheck => None,
    };
    step.or_else(|| {
        dir.join(bc::DECISION_FILE)
            .exists()
            .then_some("decision_saved")
    })
}

/// Of the step a replay would kill at from what the worker announced and the step its record
/// shows durable, the later in the column's order.
fn later_of(column: bc::Column, announced: String, durable: Option<&str>) -> String {
    let steps = super::faults::column_steps(column);
    let rank = |s: &str| steps.iter().position(|x| *x == s);
    match durable {
        Some(d) if rank(d) > rank(&announced) => d.to_owned(),
        _ => announced,
    }
}

fn decision_saved(dir: &Path) -> Option<String> {
    dir.join(bc::DECISION_FILE)
        .exists()
        .then(|| "decision_saved".to_owned())
}

/// The step a replay kills at to reach the state a timed kill left: the last step announced,
/// except that `before_send` (nothing durable since the step before it) is that earlier step,
/// or — when the POST reached the service — `request_held` (held there) or `after_send`. The
/// service's count of the POST decides over the announced steps, which the runner reads from
/// the worker's pipe and may not have caught up with when the kill landed (a busy machine):
/// a POST that arrived was sent after `before_send`, announced or not.
pub(super) fn replay_position(steps: &[String], arrived: bool, held: bool) -> String {
    let last = steps.last().map(String::as_str).unwrap_or("started");
    let past_send = steps
        .iter()
        .position(|s| s == "before_send")
        .is_some_and(|i| i + 1 < steps.len());
    if arrived && !past_send {
        return if held { "request_held" } else { "after_send" }.to_owned();
    }
    if last == "before_send" {
        let before = steps.len().checked_sub(2).and_then(|i| steps.get(i));
        return before.map_or("started".to_owned(), Clone::clone);
    }
    last.to_owned()
}

/// Whether the drawn service fault holds the credit POST at the service.
pub(super) fn held_at_service(plan: &Draw) -> bool {
    matches!(plan.service, Some(FaultAction::Delay { ms }) if ms >= 100)
}

/// The replay position of a killed trial whose POST the service counted only after the kill
/// (it was on its way when the kill landed, and the runner read the count too early): the POST
/// was sent after `before_send`, so the trial replays to where a POST that reached the service
/// leaves it, unless it had already got further.
pub(super) fn after_a_late_arrival(replay_at: &str, held: bool) -> String {
    const PAST_THE_POST: [&str; 4] = ["request_held", "after_send", "sent_logged", "committed"];
    if PAST_THE_POST.contains(&replay_at) {
        replay_at.to_owned()
    } else if held {
        "request_held".to_owned()
    } else {
        "after_send".to_owned()
    }
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

/// A worker's stdout, line by line, on a thread; the steps it announced so far. Every line goes
/// on the trial's timeline, stamped when it was read.
struct Lines<'t> {
    rx: mpsc::Receiver<Option<(Instant, String)>>,
    steps: Vec<String>,
    last: Option<String>,
    done: bool,
    actor: String,
    timeline: &'t Timeline,
}

impl<'t> Lines<'t> {
    fn new(child: &mut Child, actor: &str, timeline: &'t Timeline) -> Lines<'t> {
        Lines {
            rx: line_reader(child),
            steps: Vec::new(),
            last: None,
            done: false,
            actor: actor.to_owned(),
            timeline,
        }
    }

    fn take(&mut self, (at, line): (Instant, String)) -> String {
        self.timeline.worker_line(&self.actor, at, &line);
        if line.starts_with(bc::EVENT_LINE_PREFIX) {
            return line;
        }
        if let Some(step) = line.strip_prefix(STEP_LINE_PREFIX) {
            let name = step.split_whitespace().next().unwrap_or_default();
            self.steps.push(name.to_owned());
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

fn line_reader(child: &mut Child) -> mpsc::Receiver<Option<(Instant, String)>> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(l) = line else { break };
                if tx.send(Some((Instant::now(), l))).is_err() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_that_arrived_is_replayed_after_the_send_though_its_step_was_not_read_yet() {
        let steps = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        // The runner had read only `decision_saved` when the kill landed; the service had the
        // POST already.
        let lagging = steps(&["started", "decision_saved"]);
        assert_eq!(replay_position(&lagging, true, false), "after_send");
        assert_eq!(replay_position(&lagging, true, true), "request_held");
        assert_eq!(replay_position(&lagging, false, false), "decision_saved");
        let at_send = steps(&["started", "decision_saved", "before_send"]);
        assert_eq!(replay_position(&at_send, true, false), "after_send");
        assert_eq!(replay_position(&at_send, false, false), "decision_saved");
        // A step announced after the send is later than the POST's arrival.
        let answered = steps(&["started", "decision_saved", "before_send", "after_send"]);
        assert_eq!(replay_position(&answered, true, false), "after_send");
        // Counted only after the kill: replayed past the send all the same.
        assert_eq!(after_a_late_arrival("send_logged", false), "after_send");
        assert_eq!(after_a_late_arrival("dispatched", true), "request_held");
        assert_eq!(after_a_late_arrival("sent_logged", false), "sent_logged");
    }

    #[test]
    fn a_replay_kills_at_the_later_of_the_announced_and_the_durable_step() {
        let i = bc::Column::Interlock;
        assert_eq!(
            later_of(i, "authorized".into(), Some("dispatched")),
            "dispatched"
        );
        assert_eq!(
            later_of(i, "request_held".into(), Some("dispatched")),
            "request_held"
        );
        assert_eq!(
            later_of(i, "started".into(), Some("decision_saved")),
            "decision_saved"
        );
        assert_eq!(later_of(i, "proposed".into(), None), "proposed");
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(durable_step(dir.path(), bc::Column::NoCheck), None);
        fs::write(dir.path().join(bc::DECISION_FILE), "{}").unwrap();
        assert_eq!(
            durable_step(dir.path(), bc::Column::NoCheck),
            Some("decision_saved")
        );
        fs::write(
            dir.path().join(bc::JOURNAL_FILE),
            "{\"kind\":\"PROPOSED\"}\n{\"kind\":\"DISPATCHED\"}\n{\"kind\":",
        )
        .unwrap();
        assert_eq!(durable_step(dir.path(), i), Some("dispatched"));
    }
}
