//! A trial's random choices, drawn from its seed alone (so a replay draws the same): the outage,
//! the service fault, and the kill instants.

use super::Nemesis;
use rand::{rngs::StdRng, Rng, SeedableRng};
use scenarios::billing_credit::{Column, Outage};
use stripe::emulator::FaultAction;

/// The emulator's declared server-side in-flight bound, as the beyond-the-bound nemesis names it.
pub const BOUND_ASSUMPTION: &str =
    "the target's declared server-side in-flight bound (max_in_flight): a request held longer than it can land after recovery trusted a \"not found\"";

/// The window every column shares: Stripe has no precondition on a balance transaction, so a
/// premise change that lands while a credit POST is in flight (checked, sent, not yet applied)
/// cannot be refused by anyone (DESIGN §5.1).
pub const PREMISE_IN_FLIGHT_ASSUMPTION: &str =
    "no premise change lands while a credit POST is in flight: billing's credit note was issued while the request was held at the service, and Stripe has no precondition on a balance transaction";

/// The window every column shares for world changes: a change that lands after a column's last
/// check and before its POST cannot be seen by any check (DESIGN §5.1).
pub const AFTER_LAST_CHECK_ASSUMPTION: &str =
    "no premise change or revocation lands between a column's last check and its POST: the world changed while the worker was paused after its last check";

/// A change in the world made while the decide worker is paused mid-check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldFault {
    /// Support revokes the approval.
    Revoke,
    /// Billing's SLA automation credits the renewal invoice for the case's incident.
    CreditNote,
}

/// Everything a trial will do, before it does it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// The outage run while the worker is dead.
    pub outage: Outage,
    /// The emulator rule on the case's credit POST, if any.
    pub service: Option<FaultAction>,
    /// How many credit POSTs the rule applies to (the first ones).
    pub service_times: u32,
    /// Start a second decide worker on the same case at the same time.
    pub second_worker: bool,
    /// Revoke the approval during the outage.
    pub revoke_in_outage: bool,
    /// Kill the decide worker at this step (see [`column_steps`]).
    pub kill_at_step: Option<&'static str>,
    /// Pause the decide worker at this step (see [`pause_steps`]) and make `world` happen.
    pub pause_at: Option<&'static str>,
    /// The world change made while the worker is paused.
    pub world: Option<WorldFault>,
    /// When to kill the decide worker, ms after `kill_after` (None: never).
    pub decide_kill_ms: Option<u64>,
    /// What the decide kill instant counts from: `start` or `request_held`.
    pub kill_after: &'static str,
    /// Cooperative kill right before the send (kill_recovery's base), instead of a timed one.
    pub decide_at_before_send: bool,
    /// Instants (ms after start) at which successive restarts are killed, before a final one.
    pub restart_kills_ms: Vec<u64>,
    /// The assumption the trial's faults break, if any.
    pub assumption: Option<&'static str>,
}

/// The steps of a column a trial can kill its decide worker at, in order: the worker's own steps
/// (it announces each and blocks at the drawn one until SIGKILLed, so a replay kills at exactly
/// the same step) and `request_held`, the credit POST held at the service (mid-request).
pub fn column_steps(column: Column) -> &'static [&'static str] {
    match column {
        Column::Interlock => &[
            "decision_saved",
            "proposed",
            "authorized",
            "dispatched",
            "request_held",
            "after_send",
            "committed",
        ],
        Column::HandCheck => &[
            "decision_saved",
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "request_held",
            "after_send",
            "sent_logged",
        ],
        Column::NoCheck => &["decision_saved", "request_held", "after_send"],
    }
}

/// The steps a world fault can pause a column at (after its decision, so the change is one the
/// decision could not know), in order, and how many of them come before the column's last check
/// (a change made there must be seen; one made later lies in the window
/// [`AFTER_LAST_CHECK_ASSUMPTION`] names).
pub fn pause_steps(column: Column) -> (&'static [&'static str], usize) {
    match column {
        Column::Interlock => (
            &["decision_saved", "proposed", "authorized", "dispatched"],
            3,
        ),
        Column::HandCheck => (
            &[
                "decision_saved",
                "lookup",
                "approval",
                "premises",
                "send_logged",
            ],
            3,
        ),
        // no_check checks nothing after its decision: every change it misses is in the window.
        Column::NoCheck => (&["decision_saved"], 0),
    }
}

/// Draws a trial's plan from its seed, for a column (only `kill_at_step` depends on it).
pub fn draw_for(nemesis: Nemesis, column: Column, seed: u64) -> Draw {
    let mut rng = StdRng::seed_from_u64(seed);
    let outage = Outage::ALL[rng.gen_range(0..Outage::ALL.len())];
    let mut d = Draw {
        outage,
        service: None,
        service_times: 1,
        second_worker: false,
        revoke_in_outage: false,
        kill_at_step: None,
        pause_at: None,
        world: None,
        decide_kill_ms: None,
        kill_after: "start",
        decide_at_before_send: false,
        restart_kills_ms: Vec::new(),
        assumption: None,
    };
    match nemesis {
        // A release-built worker lives ~20-60 ms on the emulator (spawn, reads, decision, send;
        // measured): draw over that life, so most kills land inside it and some find it done.
        Nemesis::KillRandom => d.decide_kill_ms = Some(rng.gen_range(0..=60)),
        Nemesis::KillInFlight => {
            d.service = Some(FaultAction::Delay {
                ms: rng.gen_range(100..=2_000),
            });
            d.kill_after = "request_held";
            d.decide_kill_ms = Some(rng.gen_range(0..=50));
        }
        Nemesis::LateAfterTimeout => {
            // Past the client's timeout, inside the declared bound (both the emulator's).
            let timeout = crate::backend::EMULATOR_REQUEST_TIMEOUT.as_millis() as u64;
            let bound = crate::backend::EMULATOR_MAX_IN_FLIGHT.as_millis() as u64;
            d.service = Some(FaultAction::Delay {
                ms: rng.gen_range(timeout + 100..=bound - 100),
            });
        }
        Nemesis::LateBeyondBound => {
            d.service = Some(FaultAction::Delay {
                ms: rng.gen_range(7_000..=9_000),
            });
            d.kill_after = "request_held";
            d.decide_kill_ms = Some(rng.gen_range(0..=50));
            d.assumption = Some(BOUND_ASSUMPTION);
        }
        Nemesis::CommitThen500 => d.service = Some(FaultAction::CommitThenError { status: 500 }),
        Nemesis::CommitThenDrop => d.service = Some(FaultAction::CommitThenDrop),
        Nemesis::KillRecovery => {
            d.decide_at_before_send = true;
            let n = rng.gen_range(1..=3);
            d.restart_kills_ms = (0..n).map(|_| rng.gen_range(0..=150)).collect();
        }
        Nemesis::TwoWorkers => d.second_worker = true,
        Nemesis::RevokeInOutage => {
            d.decide_at_before_send = true;
            d.revoke_in_outage = true;
        }
        Nemesis::KillAtStep => {
            let steps = column_steps(column);
            let step = steps[rng.gen_range(0..steps.len())];
            d.kill_at_step = Some(step);
            if step == "request_held" {
                d.service = Some(FaultAction::Delay {
                    ms: rng.gen_range(100..=1_000),
                });
            }
        }
        Nemesis::RevokeMidCheck | Nemesis::NoteMidCheck => {
            let (steps, within) = pause_steps(column);
            let i = rng.gen_range(0..steps.len());
            d.pause_at = Some(steps[i]);
            d.world = Some(match nemesis {
                Nemesis::RevokeMidCheck => WorldFault::Revoke,
                _ => WorldFault::CreditNote,
            });
            if nemesis == Nemesis::NoteMidCheck {
                d.outage = Outage::BillingCredit;
            }
            if i >= within {
                d.assumption = Some(AFTER_LAST_CHECK_ASSUMPTION);
            }
        }
        Nemesis::RateLimitBurst => {
            d.service = Some(FaultAction::RateLimit {
                retry_after_s: None,
            });
            d.service_times = rng.gen_range(1..=4);
        }
    }
    // A held request with billing's credit note issued during the outage: the note lands while
    // the credit is in flight (decided by the draw, before anything runs).
    let held = d.kill_after == "request_held"
        || d.kill_at_step == Some("request_held")
        || nemesis == Nemesis::LateAfterTimeout;
    if held && outage == Outage::BillingCredit && d.assumption.is_none() {
        d.assumption = Some(PREMISE_IN_FLIGHT_ASSUMPTION);
    }
    d
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

impl Draw {
    /// The same trial with its decide kill moved to `position` (`runner --replay ID --at STEP`):
    /// the faults stay as drawn; a timed kill becomes a kill at that step (`finished`: no kill).
    pub fn replayed_at(mut self, position: &str) -> Result<Draw, String> {
        let Some(at) = POSITIONS.into_iter().find(|p| *p == position) else {
            return Err(format!(
                "--at {position:?} is not a step; expected one of: {}",
                POSITIONS.join(", ")
            ));
        };
        if self.pause_at.is_some() || self.decide_at_before_send {
            return Err(
                "--at applies to trials whose decide kill is timed or at a step; this trial's decide worker is paused or killed at a fixed point already".into(),
            );
        }
        if at == "request_held" && !matches!(self.service, Some(FaultAction::Delay { .. })) {
            return Err("--at request_held needs a trial whose credit POST is held".into());
        }
        self.decide_kill_ms = None;
        self.kill_after = "start";
        self.kill_at_step = (at != "finished").then_some(at);
        Ok(self)
    }
}

/// One line naming a service fault.
pub fn describe(action: &FaultAction) -> (String, String) {
    match action {
        FaultAction::Delay { ms } => (
            "delay".into(),
            format!("the first credit POST is held {ms} ms before it is applied (it lands whether or not its client is still there)"),
        ),
        FaultAction::CommitThenError { status } => (
            "commit_then_error".into(),
            format!("the first credit POST is applied, then answered {status}; the error is saved under its idempotency key"),
        ),
        FaultAction::CommitThenDrop => (
            "commit_then_drop".into(),
            "the first credit POST is applied, then its connection is closed without an answer".into(),
        ),
        FaultAction::RateLimit { .. } => (
            "rate_limit".into(),
            "the first credit POSTs are answered 429 rate_limit before anything runs".into(),
        ),
        other => ("other".into(), format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_draws_the_same_trial() {
        for n in Nemesis::ALL {
            for seed in [0, 1, 99, (1 << 53) - 1] {
                assert_eq!(
                    draw_for(n, Column::Interlock, seed),
                    draw_for(n, Column::Interlock, seed)
                );
            }
        }
        let beyond = draw_for(Nemesis::LateBeyondBound, Column::Interlock, 5);
        assert!(matches!(beyond.service, Some(FaultAction::Delay { ms }) if ms > 5_500));
        assert!(beyond.assumption.is_some());
        for seed in 0..40 {
            let held = draw_for(Nemesis::KillInFlight, Column::NoCheck, seed);
            assert!(matches!(held.service, Some(FaultAction::Delay { ms }) if ms < 5_500));
            // Inside the bound; only billing's note issued meanwhile names an assumption.
            assert_eq!(
                held.assumption.is_some(),
                held.outage == Outage::BillingCredit,
                "seed {seed}"
            );
        }
        for seed in 0..60 {
            for column in Column::ALL {
                let d = draw_for(Nemesis::NoteMidCheck, column, seed);
                let (steps, within) = pause_steps(column);
                let i = steps.iter().position(|s| Some(*s) == d.pause_at).unwrap();
                assert_eq!(d.assumption.is_some(), i >= within, "{column} {seed}");
                assert_eq!(d.outage, Outage::BillingCredit);
                assert_eq!(d.world, Some(WorldFault::CreditNote));
                let r = draw_for(Nemesis::RevokeMidCheck, column, seed);
                assert_eq!(r.world, Some(WorldFault::Revoke));
                assert!(r.service.is_none() && r.decide_kill_ms.is_none());
            }
        }
        let timed = draw_for(Nemesis::KillRandom, Column::HandCheck, 3);
        let at = timed.clone().replayed_at("premises").unwrap();
        assert_eq!(
            (at.kill_at_step, at.decide_kill_ms),
            (Some("premises"), None)
        );
        assert!(timed.clone().replayed_at("request_held").is_err());
        assert!(timed.replayed_at("nowhere").is_err());
        for seed in 0..40 {
            let late = draw_for(Nemesis::LateAfterTimeout, Column::Interlock, seed);
            assert!(
                matches!(late.service, Some(FaultAction::Delay { ms }) if ms > 5_000 && ms < 5_500)
            );
            assert!(late.decide_kill_ms.is_none() && late.kill_at_step.is_none());
        }
        let rec = draw_for(Nemesis::KillRecovery, Column::HandCheck, 7);
        assert!((1..=3).contains(&rec.restart_kills_ms.len()));
    }

    #[test]
    fn kill_at_step_draws_every_step_of_the_column_and_holds_the_request_only_mid_request() {
        for column in Column::ALL {
            let mut seen = std::collections::BTreeSet::new();
            for seed in 0..200 {
                let d = draw_for(Nemesis::KillAtStep, column, seed);
                let step = d.kill_at_step.unwrap();
                assert!(column_steps(column).contains(&step));
                assert_eq!(d.service.is_some(), step == "request_held");
                seen.insert(step);
            }
            assert_eq!(seen.len(), column_steps(column).len(), "{column}");
        }
    }
}
