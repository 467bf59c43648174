//! The decide worker's run and how it ends: paused for a world change, exposed to one at a drawn
//! instant, or stopped (SIGSTOP) and continued later.

use super::process::{describe_exit, reap, signal, wait_until, worker_instant, Lines};
use super::timeline::Timeline;
use super::trial_error::TrialError;
use super::workers::WORKER_TIMEOUT;
use crate::worker::{CONTINUE_LINE, PAUSE_LINE_PREFIX, STEP_LINE_PREFIX};
use scenarios::billing_credit as bc;
use std::io::Write;
use std::process::Child;
use std::time::{Duration, Instant};
use verify::nemesis::Kill;

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
pub(super) struct Running<'t> {
    pub(super) child: Child,
    pub(super) lines: Lines<'t>,
    pub(super) started: Instant,
    pub(super) deadline: Instant,
}

/// Paused at a worker step: the world changes, then the worker is told to go on and runs to
/// its end.
pub(super) fn decide_paused(
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

/// Runs to its end while the world changes `at` µs after the worker saved its decision (the
/// exposure nemesis): the decision never knows of the change, and nobody waits for anybody
/// after, so where the change lands in the rest of the worker's life is chance.
pub(super) fn decide_exposed(
    mut run: Running<'_>,
    at: u64,
    world: &mut dyn FnMut() -> Result<(), TrialError>,
) -> Result<DecideEnd, TrialError> {
    // From the decide worker's `decision_saved` step as the worker stamped it (`INTERLOCK-STEP
    // decision_saved <µs>`), not from when the runner got the line: the decision phase before
    // it is the same code in every column, so a change drawn from there lands where the
    // columns' code differs (issue 35: drawn from the decision's read, it landed before the
    // decision was saved in most trials of the slower columns, measuring machine load). A worker
    // that never saves a decision is changed under at once.
    let saved = format!(
        "{STEP_LINE_PREFIX}{} ",
        bc::CrashPoint::DecisionSaved.as_str()
    );
    let origin = run
        .lines
        .wait_for(&saved, run.deadline)
        .map_or_else(Instant::now, |line| worker_instant(&line, 2));
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
    pub(super) run: Running<'t>,
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

impl DecideEnd {
    /// The worker ended by itself (or was given up on: `problem`).
    pub(super) fn finished(problem: Option<String>, held_from: Option<Instant>) -> DecideEnd {
        DecideEnd {
            kill: None,
            ended: Some(Instant::now()),
            problem,
            replay_at: None,
            held_from,
        }
    }

    pub(super) fn killed(kill: Kill, replay_at: Option<String>) -> DecideEnd {
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
