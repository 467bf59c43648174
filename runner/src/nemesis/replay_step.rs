//! Where a replay kills to reach the state a killed trial left: the steps a worker announced,
//! the step its column's durable record shows, and whether the POST reached the service.

use super::faults::{Draw, ServiceFault};
use scenarios::billing_credit as bc;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// How far a column's durable record got (for restarts, which announce no steps): the
/// journal's last entry kind (interlock, file store), the log's last step (hand_check), or
/// whether the decision was saved.
pub(super) fn last_record(dir: &Path, column: bc::Column) -> Option<String> {
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
pub(super) fn durable_step(dir: &Path, column: bc::Column) -> Option<&'static str> {
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
pub(super) fn later_of(column: bc::Column, announced: String, durable: Option<&str>) -> String {
    let steps = super::steps::column_steps(column.as_str());
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
    matches!(plan.service, Some(ServiceFault::Delay { ms }) if ms >= 100)
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
