//! What a trial's faults may do and still leave the column within its assumptions (DESIGN §5.1):
//! the target's server-side in-flight bound, and the one rule for "within assumptions" the
//! nemesis judges every trial by. The runner draws its faults around the same bound.

use crate::nemesis::{Event, Fault};

/// The emulator's declared server-side in-flight bound, ms: how long after a request left a
/// client it can still take effect there (the runner states it for its emulator backend, and a
/// results file records the bound its run used in `environment.claim.max_in_flight_ms`).
pub const EMULATOR_MAX_IN_FLIGHT_MS: u64 = 5_500;

/// Whether a request held at the service for `held_ms` was held longer than the declared bound
/// (so it may land after recovery trusted a "not found").
pub fn held_beyond_bound(held_ms: u64, max_in_flight_ms: u64) -> bool {
    held_ms > max_in_flight_ms
}

/// The range (ms, inclusive) a nemesis that holds a request past the bound draws its hold from:
/// 1.5 to 3.5 s beyond it, so the hold is past the bound by far more than a scheduler's jitter.
pub fn beyond_bound_hold_ms(max_in_flight_ms: u64) -> (u64, u64) {
    (
        max_in_flight_ms.saturating_add(1_500),
        max_in_flight_ms.saturating_add(3_500),
    )
}

/// What an `answered` event says when the service answered from its idempotency cache.
pub const REPLAYED: &str = "replayed";

/// The actor of the runner's own events on a timeline.
pub const WORLD: &str = "world";

/// The assumption a held request breaks when its hold is longer than the target's declared
/// server-side in-flight bound.
pub const BEYOND_BOUND: &str = "the target's declared server-side in-flight bound (max_in_flight): a request was held at the service longer than it, so it can land after recovery trusted a \"not found\"";

/// The assumption every column shares about the world: nothing it checked changes between its
/// last read of that fact and the moment its credit POST is applied.
pub const AFTER_LAST_READ: &str = "no world change lands between the column's last read of the changed fact and the moment its credit POST can be applied: no check sees a change made after its last read, and Stripe has no precondition on a balance transaction";

/// The one rule for "within assumptions", for every column (DESIGN §5.1): the assumption a
/// trial's faults broke, or `None`.
///
/// - A request held at the service longer than `max_in_flight_ms` breaks [`BEYOND_BOUND`].
/// - A world change of a fact (a `change` event, from its request's start to its answer) breaks
///   [`AFTER_LAST_READ`] when it began before some credit POST of the column's workers could be
///   applied (the POST's answer, or the end of its hold at the service when it was held; a POST
///   whose answer never came, its sender killed, is applied when its hold ended if the service
///   held it, else may be applied until the declared in-flight bound after it left), and the last read of that fact that the POST rests on, before the
///   POST left, had ended before the change began (or there was none). A read that ends after
///   the change began counts as seeing it: the rule never excuses a change a check could have
///   seen. A change followed by no POST excuses nothing.
/// - A POST answered as a replay (`answered` with [`REPLAYED`]) applied nothing and is skipped.
/// - A POST rests on the reads of its own process and of every process it took over from: one
///   whose every event came before the POST's process began (killed or finished by then; a
///   resend that reads nothing rests on the decision's read). Two processes alive at once — two
///   workers, or a stopped sender and the restart that ran while it was stopped — never vouch
///   for each other's POSTs: a read by one says nothing about what the other checked.
pub fn assumption_broken(
    faults: &[Fault],
    timeline: &[Event],
    max_in_flight_ms: u64,
) -> Option<&'static str> {
    let held_too_long = faults.iter().any(|f| {
        f.fired > 0
            && f.held_ms
                .is_some_and(|h| held_beyond_bound(h, max_in_flight_ms))
    });
    if held_too_long {
        return Some(BEYOND_BOUND);
    }
    let changes: Vec<&Event> = timeline
        .iter()
        .filter(|e| e.actor == WORLD && e.kind == "change")
        .collect();
    if changes.is_empty() {
        return None;
    }
    let posts = Posts::new(timeline, max_in_flight_ms);
    for (i, post) in posts.applying() {
        let applied_by = posts.applied_by(i);
        let mut last_reads: std::collections::BTreeMap<&str, Option<u64>> =
            std::collections::BTreeMap::new();
        for change in changes.iter().filter(|c| c.at_us < applied_by) {
            let last_read = *last_reads
                .entry(change.what.as_str())
                .or_insert_with(|| posts.last_read(post, &change.what));
            if last_read.is_none_or(|r| r < change.at_us) {
                return Some(AFTER_LAST_READ);
            }
        }
    }
    None
}

/// A column's unguarded window for `fact` in one trial, µs: from the end of the last read of
/// `fact` that the first applying credit POST rests on to the moment that POST was applied (the
/// same instants [`assumption_broken`] compares a change with). `None` without such a POST or
/// read. Measured on the trials of a nemesis that pauses and kills nobody, it is how long a
/// change of `fact` could land unseen.
pub fn unguarded_window_us(timeline: &[Event], fact: &str, max_in_flight_ms: u64) -> Option<u64> {
    let (read, applied) = unguarded_window_at_us(timeline, fact, max_in_flight_ms)?;
    Some(applied.saturating_sub(read))
}

/// Where [`unguarded_window_us`]'s window lies on the trial's clock, µs: (its start, the end of
/// the last read of `fact` the POST rests on; its end, when the POST was applied).
pub fn unguarded_window_at_us(
    timeline: &[Event],
    fact: &str,
    max_in_flight_ms: u64,
) -> Option<(u64, u64)> {
    let posts = Posts::new(timeline, max_in_flight_ms);
    let (i, post) = posts.applying().next()?;
    let read = posts.last_read(post, fact)?;
    Some((read, posts.applied_by(i)))
}

/// Whether a worker process began while a credit POST of another process was still held at
/// the service: the one interleaving in which a restart's checks and resends meet a request of
/// its predecessor that has left and not yet been applied (a held POST's hold ends at its
/// `until_us`).
pub fn began_during_a_hold(timeline: &[Event]) -> bool {
    let spans = process_spans(timeline);
    timeline
        .iter()
        .filter(|e| e.kind == "post" && e.actor != WORLD)
        .filter_map(|p| Some((p, p.until_us?)))
        .any(|(p, hold_end)| {
            spans.iter().any(|(actor, (began, _))| {
                *actor != p.actor && *began > p.at_us && *began < hold_end
            })
        })
}

/// What the rule needs of a timeline's credit POSTs, computed once: each POST's answer, each
/// process's span, every read by fact.
struct Posts<'t> {
    timeline: &'t [Event],
    /// Each POST's answer: the next `answered` of its process after it.
    answers: Vec<Option<&'t Event>>,
    spans: std::collections::BTreeMap<&'t str, (u64, u64)>,
    /// Every read of the column's processes, by fact: (reader, end). A read's end is `until_us`
    /// (older timelines stamp only its arrival, `at_us`).
    reads: std::collections::BTreeMap<&'t str, Vec<(&'t str, u64)>>,
    bound_us: u64,
}

impl<'t> Posts<'t> {
    fn new(timeline: &'t [Event], max_in_flight_ms: u64) -> Posts<'t> {
        let mut answers: Vec<Option<&Event>> = vec![None; timeline.len()];
        let mut next: std::collections::BTreeMap<&str, &Event> = std::collections::BTreeMap::new();
        for (i, e) in timeline.iter().enumerate().rev() {
            match e.kind.as_str() {
                "answered" => {
                    next.insert(&e.actor, e);
                }
                "post" => answers[i] = next.get(e.actor.as_str()).copied(),
                _ => {}
            }
        }
        let mut reads: std::collections::BTreeMap<&str, Vec<(&str, u64)>> =
            std::collections::BTreeMap::new();
        for e in timeline
            .iter()
            .filter(|e| e.kind == "read" && e.actor != WORLD)
        {
            reads
                .entry(e.what.as_str())
                .or_default()
                .push((e.actor.as_str(), e.until_us.unwrap_or(e.at_us)));
        }
        Posts {
            timeline,
            answers,
            spans: process_spans(timeline),
            reads,
            bound_us: max_in_flight_ms.saturating_mul(1_000),
        }
    }

    /// The column's credit POSTs that could apply, with their index: a POST answered from the
    /// service's idempotency cache applied nothing (the first one under its key did, and is
    /// judged on its own reads).
    fn applying(&self) -> impl Iterator<Item = (usize, &'t Event)> + '_ {
        self.timeline.iter().enumerate().filter(|(i, e)| {
            e.kind == "post"
                && e.actor != WORLD
                && self.answers[*i].is_none_or(|a| a.what != REPLAYED)
        })
    }

    /// By when POST `i` was applied: its answer (or the end of its hold, if later); unanswered,
    /// the end of its hold when the service held it, else the declared bound after it left.
    fn applied_by(&self, i: usize) -> u64 {
        let post = &self.timeline[i];
        match (self.answers[i], post.until_us) {
            (Some(a), until) => a.at_us.max(until.unwrap_or(a.at_us)),
            (None, Some(until)) => until,
            (None, None) => post.at_us.saturating_add(self.bound_us),
        }
    }

    /// Whether a read by `reader` is one a POST by `poster` rests on: its own, or one of a
    /// process that ended before it began.
    fn rests_on(&self, poster: &str, reader: &str) -> bool {
        reader == poster
            || match (self.spans.get(poster), self.spans.get(reader)) {
                (Some((began, _)), Some((_, ended))) => ended < began,
                _ => false,
            }
    }

    /// The end of the last read of `fact` that `post` rests on, before it left.
    fn last_read(&self, post: &Event, fact: &str) -> Option<u64> {
        self.reads
            .get(fact)
            .into_iter()
            .flatten()
            .filter(|(reader, end)| *end < post.at_us && self.rests_on(&post.actor, reader))
            .map(|(_, end)| *end)
            .max()
    }
}

/// Each of the column's processes on a timeline with the instants of its first and last event
/// (a read's or hold's end included).
fn process_spans(timeline: &[Event]) -> std::collections::BTreeMap<&str, (u64, u64)> {
    let mut spans = std::collections::BTreeMap::new();
    for e in timeline.iter().filter(|e| e.actor != WORLD) {
        let end = e.until_us.unwrap_or(e.at_us).max(e.at_us);
        let span = spans.entry(e.actor.as_str()).or_insert((e.at_us, end));
        span.0 = span.0.min(e.at_us);
        span.1 = span.1.max(end);
    }
    spans
}
