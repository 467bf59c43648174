//! Which trials a notify campaign has, and what each draws: derived from the campaign's seed
//! and the trial's place only, so `verify` re-derives every draw.

use crate::contract::PlanError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The nemeses, in display order:
/// * `kill_at_step`: the worker SIGKILLed at a drawn step of its column (mid-DATA included), an
///   outage drawn while it is dead;
/// * `kill_restart`: killed right after saving its decision, right before its send or right
///   after it, a change drawn while it is dead, then its restart SIGKILLed at a drawn step of
///   the column's path (mid-DATA included), then restarted again;
/// * `change_mid_check`: the worker paused at a drawn step before its send while the refund
///   fails or the approval is revoked (drawn), then let go on.
pub const NEMESES: [&str; 3] = ["kill_at_step", "kill_restart", "change_mid_check"];

/// The step inside the SMTP transaction: the `DATA` command answered `354` and the first half
/// of the message's text written to the server, its final `.` not yet sent. A client killed
/// here leaves a transaction the server must discard (RFC 5321 section 4.1.1.4).
pub const MID_DATA: &str = "mid_data";

/// The changes `change_mid_check` draws (each one of [`crate::scenarios::notify::OUTAGES`]).
pub const CHANGES: [&str; 2] = ["refund_failed", "approval_revoked"];

/// Every step a column's first worker passes, in order.
pub fn first_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" => &["decision_saved", "before_send", MID_DATA, "after_send"],
        "hand_check" | "hand_resend" => &[
            "decision_saved",
            "premises",
            "approval",
            "send_logged",
            "before_send",
            MID_DATA,
            "after_send",
            "sent_logged",
        ],
        "interlock" => &[
            "decision_saved",
            "proposed",
            "authorized",
            "premises",
            "dispatched",
            "before_send",
            MID_DATA,
            "after_send",
            "committed",
        ],
        _ => &[],
    }
}

/// The steps a restart passes when it runs the column's whole path: after a first worker killed
/// right after saving its decision (the gate, finding no journal entry, submits again), and for
/// the columns that send again after a kill past their send. A restart that settles a send it
/// cannot see through without sending (the gate's AMBIGUOUS, hand_check's escalation) passes
/// none of them: a kill drawn there does not fire and its trial is counted apart.
pub fn restart_steps(column: &str) -> &'static [&'static str] {
    first_steps(column).get(1..).unwrap_or(&[])
}

/// Where `kill_restart` kills the first worker: right after its decision, right before its
/// SMTP transaction, right after the server accepted its message.
pub const RESTART_FIRST_KILLS: [&str; 3] = ["decision_saved", "before_send", "after_send"];

/// The steps before a column's send at which a worker can be paused while a fact changes.
pub fn pause_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" => &["decision_saved"],
        "hand_check" | "hand_resend" => &["decision_saved", "premises", "approval", "send_logged"],
        "interlock" => &[
            "decision_saved",
            "proposed",
            "authorized",
            "premises",
            "dispatched",
        ],
        _ => &[],
    }
}

/// What decides a campaign's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The seed every draw derives from.
    pub seed: u64,
    /// Trials per nemesis and column (at least 1).
    pub trials: u32,
    /// Nemeses, each one of [`NEMESES`].
    pub nemeses: Vec<String>,
    /// Columns, each one of [`crate::scenarios::notify::COLUMNS`].
    pub columns: Vec<String>,
}

/// What a trial draws.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draw {
    /// The change made to the case: while the first worker is dead (`kill_at_step`) or while
    /// it is paused (`change_mid_check`); one of [`crate::scenarios::notify::OUTAGES`].
    pub outage: String,
    /// Where the first worker is SIGKILLed, if it is.
    pub kill_at: Option<String>,
    /// Where its restart is SIGKILLed, if it is.
    pub restart_kill_at: Option<String>,
    /// Where the first worker is paused while the change is made.
    pub pause_at: Option<String>,
}

/// One planned trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Planned {
    /// One of [`NEMESES`].
    pub nemesis: String,
    /// The column.
    pub column: String,
    /// The trial's index within its nemesis and column.
    pub index: u32,
    /// What it draws.
    pub draw: Draw,
}

/// A number in `0..n` drawn for the trial's `k`-th draw (SHA-256 of the scenario, the seed and
/// the trial's place).
fn pick(seed: u64, nemesis: &str, column: &str, index: u32, k: u32, n: u64) -> u64 {
    let mut h = Sha256::new();
    h.update(b"notify\0");
    h.update(seed.to_be_bytes());
    h.update(nemesis.as_bytes());
    h.update([0]);
    h.update(column.as_bytes());
    h.update([0]);
    h.update(index.to_be_bytes());
    h.update(k.to_be_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b) % n.max(1)
}

fn one_of(steps: &[&str], r: u64) -> Option<String> {
    usize::try_from(r)
        .ok()
        .and_then(|i| steps.get(i))
        .map(|s| (*s).to_owned())
}

/// The draw of trial `index` of `nemesis` × `column`.
pub fn draw(seed: u64, nemesis: &str, column: &str, index: u32) -> Draw {
    let r = |k: u32, n: usize| pick(seed, nemesis, column, index, k, n as u64);
    let outages = crate::scenarios::notify::OUTAGES;
    let mut d = Draw {
        outage: "none".into(),
        kill_at: None,
        restart_kill_at: None,
        pause_at: None,
    };
    match nemesis {
        "kill_at_step" => {
            let steps = first_steps(column);
            d.kill_at = one_of(steps, r(1, steps.len()));
            d.outage = one_of(&outages, r(0, outages.len())).unwrap_or_else(|| "none".into());
        }
        "kill_restart" => {
            d.kill_at = one_of(&RESTART_FIRST_KILLS, r(1, RESTART_FIRST_KILLS.len()));
            let steps = restart_steps(column);
            d.restart_kill_at = one_of(steps, r(2, steps.len()));
            d.outage = one_of(&outages, r(0, outages.len())).unwrap_or_else(|| "none".into());
        }
        "change_mid_check" => {
            let steps = pause_steps(column);
            d.pause_at = one_of(steps, r(1, steps.len()));
            d.outage = one_of(&CHANGES, r(0, CHANGES.len())).unwrap_or_else(|| "none".into());
        }
        _ => {}
    }
    d
}

/// Every nemesis × column × index, in that nesting, each with its draw; `Err` names a value that
/// is not known or listed twice, or a plan of more than `at_most` trials.
pub fn plan(p: &Params, at_most: usize) -> Result<Vec<Planned>, PlanError> {
    PlanError::check_names("nemeses", &p.nemeses, &NEMESES)?;
    PlanError::check_names("columns", &p.columns, &crate::scenarios::notify::COLUMNS)?;
    if p.trials == 0 {
        return Err(PlanError::NoRepeats);
    }
    let factors = [
        p.nemeses.len(),
        p.columns.len(),
        usize::try_from(p.trials).unwrap_or(usize::MAX),
    ];
    let mut out = Vec::with_capacity(PlanError::count_within(&factors, at_most)?);
    for nemesis in &p.nemeses {
        for column in &p.columns {
            for index in 0..p.trials {
                out.push(Planned {
                    nemesis: nemesis.clone(),
                    column: column.clone(),
                    index,
                    draw: draw(p.seed, nemesis, column, index),
                });
            }
        }
    }
    Ok(out)
}
