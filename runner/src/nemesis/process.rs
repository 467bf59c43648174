//! A worker process as the trial sees it: its stdout read line by line on a thread (every line
//! on the trial's timeline), waiting for it to end, signalling it, and describing how it ended.

use super::timeline::Timeline;
use crate::worker::STEP_LINE_PREFIX;
use scenarios::billing_credit as bc;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultHandle, FaultId};

/// The instant a worker stamped as word `word` of `line` (the machine's monotonic µs), as an
/// `Instant`; now when the line carries no stamp (or one from the future).
pub(super) fn worker_instant(line: &str, word: usize) -> Instant {
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
pub(super) fn signal(pid: u32, sig: rustix::process::Signal) -> bool {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    pid.is_some_and(|p| rustix::process::kill_process(p, sig).is_ok())
}

pub(super) fn poll_fired(
    child: &mut Child,
    handle: &FaultHandle,
    id: FaultId,
    deadline: Instant,
) -> Instant {
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
pub(super) struct Lines<'t> {
    rx: mpsc::Receiver<Option<(Instant, String)>>,
    pub(super) steps: Vec<String>,
    last: Option<String>,
    done: bool,
    actor: String,
    pub(super) timeline: &'t Timeline,
}

impl<'t> Lines<'t> {
    pub(super) fn new(child: &mut Child, actor: &str, timeline: &'t Timeline) -> Lines<'t> {
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
    pub(super) fn wait_for(&mut self, prefix: &str, deadline: Instant) -> Option<String> {
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
    pub(super) fn drain(&mut self) {
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

pub(super) fn line_reader(child: &mut Child) -> mpsc::Receiver<Option<(Instant, String)>> {
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

pub(super) fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
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

pub(super) fn reap(child: &mut Child) -> Option<ExitStatus> {
    let _ = child.kill();
    child.wait().ok()
}

pub(super) fn describe_exit(status: Option<ExitStatus>) -> String {
    match status.map(|s| (s.signal(), s.code())) {
        Some((Some(sig), _)) => format!("ended by signal {sig}"),
        Some((None, Some(code))) => format!("exited with code {code}"),
        _ => "ended in an unknown way".into(),
    }
}
