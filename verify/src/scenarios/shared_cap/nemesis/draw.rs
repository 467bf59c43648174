//! A trial's draws: which worker is killed where, and how the two overlap. Derived from the
//! campaign's seed and the trial's place in the plan only, so the runner and verify compute the
//! same trial from the same numbers.

use super::super::plan::{kill_steps, OVERLAPS};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// What a trial was drawn to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draw {
    /// `sequential` or `concurrent`.
    pub overlap: String,
    /// The step worker `a` is SIGKILLed at, if it is.
    pub kill_a: Option<String>,
    /// The step worker `b` is SIGKILLed at, if it is.
    pub kill_b: Option<String>,
    /// The step worker `a`'s restart is SIGKILLed at, if it is.
    pub kill_restart: Option<String>,
    /// `kill_while_held`: how long the service holds worker `a`'s refund POST before it applies
    /// it, ms (worker `a` is SIGKILLed while it is held, at [`super::HELD_STEP`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_a_ms: Option<u64>,
}

/// The shortest hold `kill_while_held` draws, ms: long enough for worker `b` to run its checks
/// while `a`'s refund is held.
pub const HOLD_MIN_MS: u64 = 1_000;
/// The longest hold `kill_while_held` draws, ms: inside the emulator's declared in-flight bound
/// (5 500 ms), so the fault is within every column's assumptions.
pub const HOLD_MAX_MS: u64 = 4_500;

/// The steps a restart passes, per column, in order: the checks again (hand-written columns),
/// the resend (every column), and the gate's record of the answer (interlock). A restart that
/// finds the refund already out passes fewer.
pub fn restart_steps(column: &str) -> &'static [&'static str] {
    match column {
        "no_check" => &["before_send", "after_send"],
        "hand_check" | "hand_lock" | crate::shared_cap::plan::HAND_PG_LOCK => &[
            "lookup",
            "approval",
            "premises",
            "send_logged",
            "before_send",
            "after_send",
            "sent_logged",
        ],
        "interlock" => &["before_send", "after_send", "committed"],
        _ => &[],
    }
}

/// A trial's id: the campaign's seed, the nemesis, the column and the trial's index among that
/// nemesis and column's trials.
pub fn trial_id(seed: u64, nemesis: &str, column: &str, index: u32) -> String {
    format!("{seed:x}-{nemesis}-{column}-{index}")
}

/// A stream of numbers from the trial's place in the plan.
struct Dice {
    bytes: [u8; 32],
    used: usize,
}

impl Dice {
    fn new(seed: u64, nemesis: &str, column: &str, index: u32) -> Dice {
        let mut h = sha2::Sha256::new();
        h.update(b"interlock-shared-cap-nemesis-draw-v1\0");
        h.update(seed.to_be_bytes());
        h.update(nemesis.as_bytes());
        h.update([0]);
        h.update(column.as_bytes());
        h.update([0]);
        h.update(index.to_be_bytes());
        Dice {
            bytes: h.finalize().into(),
            used: 0,
        }
    }

    /// One of `options` (two bytes per pick: sixteen picks per trial at most).
    fn pick<'a>(&mut self, options: &[&'a str]) -> Option<&'a str> {
        let n = self.next_u16() as usize;
        options.get(n % options.len().max(1)).copied()
    }

    /// A number in `low..=high` (two bytes, as a pick).
    fn between(&mut self, low: u64, high: u64) -> u64 {
        let span = high.saturating_sub(low).saturating_add(1);
        low + u64::from(self.next_u16()) % span
    }

    fn next_u16(&mut self) -> u16 {
        let at = self.used % 31;
        self.used += 2;
        u16::from_be_bytes([self.bytes[at], self.bytes[at + 1]])
    }
}

/// The draws of trial `index` of `nemesis` in `column`, under `seed`; `None` for a nemesis or
/// column this module does not know.
pub fn draw(seed: u64, nemesis: &str, column: &str, index: u32) -> Option<Draw> {
    let steps = kill_steps(column);
    if steps.is_empty() || !super::NEMESES.contains(&nemesis) {
        return None;
    }
    let mut dice = Dice::new(seed, nemesis, column, index);
    let overlap = dice.pick(&OVERLAPS)?.to_owned();
    let step = |dice: &mut Dice| dice.pick(steps).map(str::to_owned);
    let drawn = match nemesis {
        "kill_at_step" => {
            let victim = dice.pick(&["a", "b"])?;
            let at = step(&mut dice);
            Draw {
                overlap,
                kill_a: if victim == "a" { at.clone() } else { None },
                kill_b: if victim == "b" { at } else { None },
                kill_restart: None,
                hold_a_ms: None,
            }
        }
        "kill_both" => Draw {
            overlap,
            kill_a: step(&mut dice),
            kill_b: step(&mut dice),
            kill_restart: None,
            hold_a_ms: None,
        },
        // Worker `a` runs alone, its POST is held and it is killed; then `b` runs: the overlap
        // is sequential whatever was drawn for it (the dice still turn, so the other
        // nemeses' draws are unchanged).
        super::KILL_WHILE_HELD => Draw {
            overlap: OVERLAPS[0].to_owned(),
            kill_a: Some(super::HELD_STEP.to_owned()),
            kill_b: None,
            kill_restart: None,
            hold_a_ms: Some(dice.between(HOLD_MIN_MS, HOLD_MAX_MS)),
        },
        _ => Draw {
            overlap,
            kill_a: step(&mut dice),
            kill_b: None,
            kill_restart: dice.pick(restart_steps(column)).map(str::to_owned),
            hold_a_ms: None,
        },
    };
    Some(drawn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_cap::plan::COLUMNS;

    #[test]
    fn the_same_place_in_the_plan_draws_the_same_trial_and_other_places_differ() {
        let a = draw(7, "kill_both", "interlock", 3);
        assert_eq!(a, draw(7, "kill_both", "interlock", 3));
        let others: Vec<_> = (0..40)
            .map(|i| draw(7, "kill_both", "interlock", i))
            .collect();
        assert!(others.iter().any(|o| *o != a), "every trial drew the same");
        assert!(draw(7, "kill_everything", "interlock", 0).is_none());
        assert!(draw(7, "kill_both", "two_phase", 0).is_none());
    }

    #[test]
    fn kill_while_held_holds_a_inside_the_bound_kills_it_there_and_runs_b_after() {
        let mut holds = std::collections::BTreeSet::new();
        for column in COLUMNS {
            for i in 0..100 {
                let d = draw(5, super::super::KILL_WHILE_HELD, column, i).unwrap();
                assert_eq!(d.overlap, "sequential");
                assert_eq!(d.kill_a.as_deref(), Some(super::super::HELD_STEP));
                assert_eq!((d.kill_b.as_ref(), d.kill_restart.as_ref()), (None, None));
                let hold = d.hold_a_ms.unwrap();
                assert!((HOLD_MIN_MS..=HOLD_MAX_MS).contains(&hold), "{hold}");
                assert!(hold < crate::billing_credit::assumptions::EMULATOR_MAX_IN_FLIGHT_MS);
                holds.insert(hold);
                // The other nemeses never hold.
                assert!(draw(5, "kill_both", column, i).unwrap().hold_a_ms.is_none());
            }
        }
        assert!(holds.len() > 100, "the holds are drawn, not fixed");
    }

    #[test]
    fn over_a_campaign_every_step_and_both_overlaps_and_both_victims_are_drawn() {
        for column in COLUMNS {
            let mut steps = std::collections::BTreeSet::new();
            let mut restarts = std::collections::BTreeSet::new();
            let (mut overlaps, mut victims) = (std::collections::BTreeSet::new(), [0; 2]);
            for i in 0..200 {
                let d = draw(11, "kill_at_step", column, i).unwrap();
                overlaps.insert(d.overlap.clone());
                victims[usize::from(d.kill_b.is_some())] += 1;
                steps.extend(d.kill_a.into_iter().chain(d.kill_b));
                let r = draw(11, "kill_restart", column, i).unwrap();
                assert!(r.kill_a.is_some() && r.kill_b.is_none());
                restarts.extend(r.kill_restart);
                let both = draw(11, "kill_both", column, i).unwrap();
                assert!(both.kill_a.is_some() && both.kill_b.is_some());
            }
            assert_eq!(steps.len(), kill_steps(column).len(), "{column}");
            assert_eq!(restarts.len(), restart_steps(column).len(), "{column}");
            assert_eq!(overlaps.len(), 2);
            assert!(victims.iter().all(|&n| n > 40), "{victims:?}");
        }
    }
}
