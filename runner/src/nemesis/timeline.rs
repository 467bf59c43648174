//! A trial's timeline: every line a worker announces (reads of a fact, credit POSTs and steps at
//! the instants the worker read on the machine's monotonic clock; pauses stamped when the runner
//! reads them), and what the runner itself does (kills, outages, world changes), all on
//! that one clock. verify re-derives the trial's within-assumptions label from it
//! (`verify::nemesis::rules::assumption_broken`).

use crate::worker::{PAUSE_LINE_PREFIX, STEP_LINE_PREFIX};
use scenarios::billing_credit::EVENT_LINE_PREFIX;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use verify::nemesis::rules::WORLD;
use verify::nemesis::Event;

/// How late the runner may see a hold begin after the service began it (it polls the rule every
/// millisecond at most), with a margin: added to a held POST's end.
const HOLD_SEEN_SLACK: Duration = Duration::from_millis(5);

/// The events of one trial, on one monotonic clock.
pub(super) struct Timeline {
    origin: Instant,
    /// `origin` as the monotonic clock's raw reading, to place the workers' own stamps.
    origin_us: u64,
    events: Mutex<Vec<Event>>,
}

impl Timeline {
    /// A timeline whose zero is now (before the trial's first worker starts).
    pub(super) fn new() -> Timeline {
        Timeline {
            origin: Instant::now(),
            origin_us: scenarios::billing_credit::monotonic_us(),
            events: Mutex::new(Vec::new()),
        }
    }

    fn us(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_micros()).unwrap_or(u64::MAX)
    }

    fn push(&self, at: Instant, actor: &str, kind: &str, what: &str, until: Option<Instant>) {
        self.push_us(self.us(at), actor, kind, what, until.map(|u| self.us(u)));
    }

    /// A worker's own stamp (the monotonic clock, µs) on this timeline.
    fn stamp(&self, raw: &str) -> Option<u64> {
        raw.parse::<u64>()
            .ok()
            .map(|us| us.saturating_sub(self.origin_us))
    }

    fn push_us(&self, at_us: u64, actor: &str, kind: &str, what: &str, until_us: Option<u64>) {
        let event = Event {
            at_us,
            actor: actor.to_owned(),
            kind: kind.to_owned(),
            what: what.to_owned(),
            until_us,
        };
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }

    /// A line `actor` printed, read at `at`: recorded when it is an announcement.
    pub(super) fn worker_line(&self, actor: &str, at: Instant, line: &str) {
        if let Some(step) = line.strip_prefix(STEP_LINE_PREFIX) {
            // The worker's own stamp when it has one (`<step> <µs>`), else when it arrived.
            let mut words = step.split_whitespace();
            let name = words.next().unwrap_or_default();
            let at_us = words
                .next()
                .and_then(|w| self.stamp(w))
                .unwrap_or_else(|| self.us(at));
            self.push_us(at_us, actor, "step", name, None);
        } else if let Some(step) = line.strip_prefix(PAUSE_LINE_PREFIX) {
            self.push(at, actor, "pause", step.trim(), None);
        } else if let Some(event) = line.strip_prefix(EVENT_LINE_PREFIX) {
            // The worker's own instants; a line without them is placed when it arrived.
            let arrived = self.us(at);
            let words: Vec<&str> = event.split_whitespace().collect();
            let stamp = |i: usize| words.get(i).and_then(|w| self.stamp(w));
            match words.first().copied() {
                Some("read") => {
                    let fact = words.get(1).copied().unwrap_or_default();
                    let start = stamp(2).unwrap_or(arrived);
                    let end = stamp(3).unwrap_or(arrived);
                    self.push_us(start, actor, "read", fact, Some(end));
                }
                Some(kind @ ("post" | "answered")) => {
                    // `answered <at> replayed`: from the service's idempotency cache.
                    let what = words.get(2).copied().unwrap_or_default();
                    self.push_us(stamp(1).unwrap_or(arrived), actor, kind, what, None)
                }
                _ => {}
            }
        }
    }

    /// The runner told a paused worker to go on.
    pub(super) fn resumed(&self, actor: &str) {
        self.push(Instant::now(), WORLD, "resume", actor, None);
    }

    /// The runner sent SIGSTOP (`stop`) or SIGCONT (`cont`) to `actor`.
    pub(super) fn signalled(&self, kind: &str, actor: &str) {
        self.push(Instant::now(), WORLD, kind, actor, None);
    }

    /// The runner did something to the trial's files or service (`tear`, `disk`, `dedup`):
    /// `what` says what.
    pub(super) fn runner_fault(&self, kind: &str, what: &str) {
        self.push(Instant::now(), WORLD, kind, what, None);
    }

    /// The runner sent SIGKILL to `actor` at `at`, and it died of it.
    pub(super) fn killed_at(&self, actor: &str, at: Instant) {
        self.push(at, WORLD, "kill", actor, None);
    }

    /// An outage ran from `from` to now.
    pub(super) fn outage(&self, outage: &str, from: Instant) {
        self.push(from, WORLD, "outage", outage, Some(Instant::now()));
    }

    /// The world changed `fact`, from `from` until `until`.
    pub(super) fn changed(&self, fact: &str, from: Instant, until: Instant) {
        self.push(from, WORLD, "change", fact, Some(until));
    }

    /// Every event, in time order (the runner's own first at a tie), with the first credit POST
    /// given the instant its hold at the service ended (when the service held it for `hold`):
    /// `hold` after the later of the POST leaving and the runner seeing the hold begin
    /// (`held_from`), plus [`HOLD_SEEN_SLACK`] for how often the runner looks.
    pub(super) fn events(&self, hold: Option<Duration>, held_from: Option<Instant>) -> Vec<Event> {
        let mut events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        events.sort_by_key(|e| (e.at_us, e.actor != WORLD));
        if let Some(hold) = hold {
            let hold_us = u64::try_from(hold.as_micros()).unwrap_or(u64::MAX);
            let seen_us = held_from.map_or(0, |at| self.us(at));
            let slack_us = u64::try_from(HOLD_SEEN_SLACK.as_micros()).unwrap_or(0);
            if let Some(post) = events.iter_mut().find(|e| e.kind == "post") {
                let began = post.at_us.max(seen_us);
                post.until_us = Some(began.saturating_add(hold_us).saturating_add(slack_us));
            }
        }
        events
    }
}
