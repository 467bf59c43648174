//! The processes of a trial: the decide worker (killed at an instant, at a step, or paused for a
//! world change) and the restarts (killed as drawn, then a final one). How a decide run ends is
//! in `decide`, reading a worker's stdout in `process`, where a replay kills in `replay_step`.

use super::decide::{decide_exposed, decide_paused, DecideEnd, Running, Stopped};
use super::faults::Draw;
use super::process::{
    describe_exit, line_reader, poll_fired, reap, signal, wait_until, worker_instant, Lines,
};
use super::replay_step::{durable_step, held_at_service, last_record, later_of, replay_position};
use super::timeline::Timeline;
use super::trial::{ms, TrialContext};
use super::trial_error::TrialError;
use crate::worker::{
    self, CONTINUE_LINE, CRASH_LINE_PREFIX, EVERY_STEP, NO_CRASH, PAUSE_LINE_PREFIX,
    STEP_LINE_PREFIX, STRIPE_KEY_ENV,
};
use scenarios::billing_credit as bc;
use std::fs;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultHandle, FaultId};
use verify::nemesis::Kill;

/// Longest a worker may run before the trial gives up on it.
pub(super) const WORKER_TIMEOUT: Duration = Duration::from_secs(90);

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
    /// Extra environment of the decide worker only (write_enospc's and fsync_eio's preloaded
    /// library); never of a restart.
    pub(super) decide_env: &'a [(&'static str, String)],
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
        if let (Some(at), Some(_)) = (plan.world_at_us, plan.world) {
            return decide_exposed(run, at, world);
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
        self.spawn_in(
            "decide",
            EVERY_STEP,
            "decide.stderr",
            &extra,
            self.decide_env,
        )
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

// Keeps the worker module's phase names and ours in one place.
const _: worker::Phase = worker::Phase::Resume;
