//! Which trials a pr_merge campaign has, and what each draws: derived from the campaign's seed
//! and the trial's place only, so `verify` re-derives every draw.

use crate::contract::PlanError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The nemeses, in display order:
/// * `kill_at_step`: the worker SIGKILLed at a drawn step of its column, an outage drawn while
///   it is dead;
/// * `kill_restart`: killed before or after its merge request, then its restart killed at a
///   drawn step of the restart;
/// * `kill_while_held`: the service holds the merge request (inside the declared in-flight
///   bound, short holds as often as long ones: [`held_within`]) and the worker is SIGKILLed
///   while it is held; an outage drawn;
/// * `drop_answer`: the merge lands and its connection closes without an answer;
/// * `fail_after_commit`: the merge lands and is answered 500;
/// * `push_mid_check`: the worker paused at a drawn step before its send while a person pushes
///   an unreviewed commit to the branch;
/// * `revoke_mid_check`: the worker paused at a drawn step before its send while the approval
///   is revoked;
/// * `held_beyond_bound`: the request held past the declared bound, the worker killed while it
///   is held (beyond every column's assumptions);
/// * `release_mid_restart`: the request held until the runner releases it, the worker killed
///   while it is held, and the held merge landed by the runner at a drawn step of the restart
///   before its merge request ([`release_steps`]): the window a restart that does not wait out
///   the in-flight bound leaves open, searched step by step rather than sampled by timing.
///   Within or beyond is decided by how long the request was held, as measured.
pub const NEMESES: [&str; 9] = [
    "kill_at_step",
    "kill_restart",
    "kill_while_held",
    "drop_answer",
    "fail_after_commit",
    "push_mid_check",
    "revoke_mid_check",
    "held_beyond_bound",
    "release_mid_restart",
];

/// The step at which a `kill_while_held` worker is SIGKILLed: once the service has taken its
/// merge request and holds it.
pub const HELD_STEP: &str = "request_held";

/// The declared in-flight bound of the forge, ms (the runner states it with its
/// justification; a hold past it is beyond every column's assumptions).
pub const FORGE_MAX_IN_FLIGHT_MS: u64 = crate::scenarios::pr_merge::DECLARED_MAX_IN_FLIGHT_MS;

/// A hold inside the bound for `kill_while_held`, from a draw `x` in `0..1000`: `1 + x²·(bound −
/// 2)/10⁶` ms, so short holds (the ones that land while a restart checks and sends: under 50 ms
/// for about one trial in six) are drawn as often as long ones, and none reaches the bound.
pub fn held_within(x: u64) -> u64 {
    1 + x.min(999).pow(2) * (FORGE_MAX_IN_FLIGHT_MS - 2) / 1_000_000
}

/// Every step a column's first worker passes, in order.
pub fn first_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" | "native" => &["decision_saved", "before_send", "after_send"],
        "hand_check" => &[
            "decision_saved",
            "lookup",
            "premises",
            "approval",
            "send_logged",
            "before_send",
            "after_send",
            "sent_logged",
        ],
        "interlock" => &[
            "decision_saved",
            "proposed",
            "authorized",
            "dispatched",
            "before_send",
            "after_send",
            "committed",
        ],
        _ => &[],
    }
}

/// The steps a restart passes when the first worker was killed before its merge request (a
/// restart that finds the merge passes fewer). The gate's restart is its recovery: it re-reads
/// the premises and the approval, looks its merge up (once the in-flight bound has passed), and
/// only then resends; its target announces each of those reads.
pub fn restart_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" | "native" => &["before_send", "after_send"],
        "hand_check" => &[
            "lookup",
            "premises",
            "approval",
            "send_logged",
            "before_send",
            "after_send",
            "sent_logged",
        ],
        "interlock" => &[
            "premises",
            "approval",
            "lookup",
            "before_send",
            "after_send",
            "committed",
        ],
        _ => &[],
    }
}

/// The steps of a restart (after a first worker killed while its request was held) at which
/// `release_mid_restart` lands the held merge: every step the restart announces before its own
/// merge request.
pub fn release_steps(column: &str) -> &'static [&'static str] {
    let steps = restart_steps(column);
    let send = steps
        .iter()
        .position(|s| *s == "after_send")
        .unwrap_or(steps.len());
    steps.get(..send).unwrap_or(&[])
}

/// The steps before a column's send at which a worker can be paused while the head moves.
pub fn pause_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" | "native" => &["decision_saved"],
        "hand_check" => &[
            "decision_saved",
            "lookup",
            "premises",
            "approval",
            "send_logged",
        ],
        "interlock" => &["decision_saved", "proposed", "authorized", "dispatched"],
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
    /// Columns, each one of [`crate::scenarios::pr_merge::COLUMNS`].
    pub columns: Vec<String>,
}

/// What a trial draws.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draw {
    /// The outage made while the first worker is dead (one of
    /// [`crate::scenarios::pr_merge::OUTAGES`]).
    pub outage: String,
    /// Where the first worker is SIGKILLed, if it is ([`HELD_STEP`]: while its request is held).
    pub kill_at: Option<String>,
    /// Where its restart is SIGKILLed, if it is.
    pub restart_kill_at: Option<String>,
    /// How long the service holds the first merge request, ms.
    pub hold_ms: Option<u64>,
    /// Where the first worker is paused while a person pushes to the branch (`push_mid_check`)
    /// or the approval is revoked (`revoke_mid_check`).
    pub pause_at: Option<String>,
    /// The fault on the first merge request's answer: `drop` or `500`.
    pub answer: Option<String>,
    /// Where the runner lands the held merge request during the restart (`release_mid_restart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_at: Option<String>,
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

/// A number in `0..n` drawn for the trial's `k`-th draw (SHA-256 of the seed and the trial's
/// place).
fn pick(seed: u64, nemesis: &str, column: &str, index: u32, k: u32, n: u64) -> u64 {
    let mut h = Sha256::new();
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
    let outages = super::super::pr_merge::OUTAGES;
    let any_outage = one_of(&outages, r(0, outages.len())).unwrap_or_else(|| "none".into());
    let mut d = Draw {
        outage: "none".into(),
        kill_at: None,
        restart_kill_at: None,
        hold_ms: None,
        pause_at: None,
        answer: None,
        release_at: None,
    };
    match nemesis {
        "kill_at_step" => {
            let steps = first_steps(column);
            d.kill_at = one_of(steps, r(1, steps.len()));
            d.outage = any_outage;
        }
        "kill_restart" => {
            d.kill_at = one_of(&["before_send", "after_send"], r(1, 2));
            let steps = restart_steps(column);
            d.restart_kill_at = one_of(steps, r(2, steps.len()));
        }
        "kill_while_held" => {
            d.kill_at = Some(HELD_STEP.into());
            d.hold_ms = Some(held_within(r(1, 1_000)));
            d.outage = any_outage;
        }
        "held_beyond_bound" => {
            d.kill_at = Some(HELD_STEP.into());
            d.hold_ms = Some(FORGE_MAX_IN_FLIGHT_MS + 1_500 + r(1, 2_001));
        }
        "release_mid_restart" => {
            d.kill_at = Some(HELD_STEP.into());
            let steps = release_steps(column);
            d.release_at = one_of(steps, r(1, steps.len()));
        }
        "drop_answer" => d.answer = Some("drop".into()),
        "fail_after_commit" => d.answer = Some("500".into()),
        "push_mid_check" | "revoke_mid_check" => {
            let steps = pause_steps(column);
            d.pause_at = one_of(steps, r(1, steps.len()));
        }
        _ => {}
    }
    d
}

/// Every nemesis × column × index, in that nesting, each with its draw; `Err` names a value that
/// is not known or listed twice, or a plan of more than `at_most` trials.
pub fn plan(p: &Params, at_most: usize) -> Result<Vec<Planned>, PlanError> {
    PlanError::check_names("nemeses", &p.nemeses, &NEMESES)?;
    PlanError::check_names("columns", &p.columns, &super::super::pr_merge::COLUMNS)?;
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
