//! The steps of each billing_credit column a trial can kill, pause or tear at: the decide
//! worker's announced steps, the restarts', the anchors of kill_random, and every position a
//! replay can kill at. A column is named as its trials record it (`interlock`, `hand_check`,
//! `no_check`); a name that is no column has no steps.

/// The steps a restart announces (`worker resume --crash every`), in order: kill_recovery kills
/// each of its restarts at one of these; a restart that ends before reaching it is not killed.
pub fn restart_steps(column: &str) -> &'static [&'static str] {
    match column {
        "interlock" => &["started", "before_send", "after_send", "committed"],
        "hand_check" => &[
            "started",
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "before_send",
            "after_send",
            "sent_logged",
        ],
        "no_check" => &["started", "before_send", "after_send"],
        _ => &[],
    }
}

/// The steps whose own write is the last line of the column's record (torn_tail kills there and
/// cuts that line). no_check keeps no record but its decision, written whole by a rename: its
/// trials are kills at these steps with nothing to cut.
pub fn tear_steps(column: &str) -> &'static [&'static str] {
    match column {
        "interlock" => &["proposed", "authorized", "dispatched", "committed"],
        "hand_check" => &[
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "sent_logged",
        ],
        "no_check" => &["decision_saved", "after_send"],
        _ => &[],
    }
}

/// The steps dedup_expired kills at: the column's last durable step before the POST (nothing
/// landed) and right after the POST's answer (it landed, nothing recorded it).
pub fn dedup_steps(column: &str) -> &'static [&'static str] {
    match column {
        "interlock" => &["dispatched", "after_send"],
        "hand_check" => &["send_logged", "after_send"],
        "no_check" => &["decision_saved", "after_send"],
        _ => &[],
    }
}

/// The steps of a column a trial can kill its decide worker at, in order: the worker's own steps
/// (it announces each and blocks at the drawn one until SIGKILLed, so a replay kills at exactly
/// the same step) and `request_held`, the credit POST held at the service (mid-request).
pub fn column_steps(column: &str) -> &'static [&'static str] {
    match column {
        "interlock" => &[
            "decision_saved",
            "proposed",
            "authorized",
            "dispatched",
            "request_held",
            "after_send",
            "committed",
        ],
        "hand_check" => &[
            "decision_saved",
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "request_held",
            "after_send",
            "sent_logged",
        ],
        "no_check" => &["decision_saved", "request_held", "after_send"],
        _ => &[],
    }
}

/// The steps a world fault can pause a column at (after its decision, so the change is one the
/// decision could not know), in order. Whether a change made there lies within the column's
/// assumptions is not decided here: verify's one rule derives it from the trial's timeline
/// ([`super::rules::assumption_broken`]).
pub fn pause_steps(column: &str) -> &'static [&'static str] {
    match column {
        "interlock" => &["decision_saved", "proposed", "authorized", "dispatched"],
        "hand_check" => &[
            "decision_saved",
            "lookup",
            "approval",
            "premises",
            "send_logged",
        ],
        // no_check checks nothing after its decision.
        "no_check" => &["decision_saved"],
        _ => &[],
    }
}

/// Where kill_random's kills are anchored: the column's announced steps from its saved decision
/// to the moment its credit POST leaves (`before_send`, announced right before it). A kill lands
/// a drawn instant after the worker's own stamp of the drawn step ([`RANDOM_KILL_JITTER_US`](super::draw::RANDOM_KILL_JITTER_US)),
/// so it is unannounced (the worker does not wait) and lands mid-step: mid-append, mid-fsync,
/// mid-request, or after the answer. Anchored to the worker's progress, where the kills land
/// does not depend on how loaded the machine is, as a draw over a fixed number of milliseconds
/// after the decision did (the careful columns' kills then landed before the POST).
pub fn random_kill_anchors(column: &str) -> &'static [&'static str] {
    match column {
        "interlock" => &[
            "decision_saved",
            "proposed",
            "authorized",
            "dispatched",
            "before_send",
        ],
        "hand_check" => &[
            "decision_saved",
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "before_send",
        ],
        "no_check" => &["decision_saved", "before_send"],
        _ => &[],
    }
}

/// Every position a replay can kill at (`--at`): the steps of every column, `started` and
/// `request_held`.
pub const POSITIONS: [&str; 15] = [
    "started",
    "decision_saved",
    "lookup",
    "approval",
    "premises",
    "send_logged",
    "proposed",
    "authorized",
    "dispatched",
    "before_send",
    "request_held",
    "after_send",
    "sent_logged",
    "committed",
    "finished",
];
