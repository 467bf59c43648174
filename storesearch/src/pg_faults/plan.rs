//! A run drawn from its seed: the database's session defaults, the target's tier, the
//! workload of the two gates, and the faults aimed at each gate's sessions. The same seed
//! draws the same run (the timing of the threads is not drawn: a race may need a few tries).

use super::database::{Isolation, SyncCommit};
use super::faults::{Action, At, FaultSpec, Then};
use super::statements::{Class, Session};
use interlock::testing::Fault;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::fmt;

/// What one gate does, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Submit the proposal of effect `n` of the run.
    Submit(usize),
    /// Recover every open dispatch once.
    Recover,
}

/// The shape of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One gate submits effects one after another while the other recovers, round after round,
    /// until it is done: recovery races the settling of each dispatch.
    Race {
        /// The gate that submits (0: A, 1: B).
        settler: usize,
    },
    /// Each gate submits effects of its own, recovering now and then.
    Split,
    /// Both gates submit the same effects at once.
    Contend,
}

/// One effect of the run: its payload's number and what the target does with its first send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectPlan {
    /// Makes the payload (and so the effect id) unique within the run.
    pub number: usize,
    /// The target's answer to the first send (later sends land).
    pub first_send: Fault,
}

/// The two gates' work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// Its shape.
    pub shape: Shape,
    /// The effects.
    pub effects: Vec<EffectPlan>,
    /// Each gate's operations (A, B).
    pub ops: [Vec<Op>; 2],
    /// Whether each gate, once its operations are done, recovers round after round until the
    /// other gate is done too.
    pub keeps_recovering: [bool; 2],
}

/// The target's tier (both queryable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetTier {
    /// Dedupes on the effect id: recovery resends under the key at once.
    One,
    /// No dedupe: recovery looks up, and resends only a "not found".
    Two,
}

/// Everything a run does, drawn from its seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    /// The seed.
    pub seed: u64,
    /// The run database's default isolation.
    pub isolation: Isolation,
    /// The run database's default `synchronous_commit`.
    pub sync_commit: SyncCommit,
    /// The target's tier.
    pub tier: TargetTier,
    /// The gates' work.
    pub workload: Workload,
    /// The faults aimed at each gate's sessions (A, B).
    pub faults: [Vec<FaultSpec>; 2],
}

/// Pick from weighted choices.
fn pick<T: Copy>(rng: &mut StdRng, choices: &[(u32, T)]) -> T {
    let total: u32 = choices.iter().map(|(w, _)| w).sum();
    let mut at = rng.random_range(0..total.max(1));
    for &(w, v) in choices {
        if at < w {
            return v;
        }
        at -= w;
    }
    choices[choices.len() - 1].1
}

impl RunPlan {
    /// Draw the run of `seed`.
    pub fn draw(seed: u64) -> RunPlan {
        let mut rng = StdRng::seed_from_u64(seed);
        let isolation = Isolation::ALL[rng.random_range(0..Isolation::ALL.len())];
        let sync_commit = SyncCommit::ALL[rng.random_range(0..SyncCommit::ALL.len())];
        let shape = pick(
            &mut rng,
            &[
                (5, Shape::Race { settler: 0 }),
                (5, Shape::Race { settler: 1 }),
                (3, Shape::Split),
                (2, Shape::Contend),
            ],
        );
        let tier = match shape {
            Shape::Race { .. } => pick(&mut rng, &[(85, TargetTier::One), (15, TargetTier::Two)]),
            _ => pick(&mut rng, &[(65, TargetTier::One), (35, TargetTier::Two)]),
        };
        let workload = draw_workload(&mut rng, shape);
        let mut faults: [Vec<FaultSpec>; 2] = [Vec::new(), Vec::new()];
        let mut general = rng.random_range(1..=3);
        if let Shape::Race { settler } = shape {
            if rng.random_bool(0.85) {
                faults[settler].push(draw_settle_fault(&mut rng, &workload.effects));
                general = rng.random_range(0..=1);
            }
        }
        for _ in 0..general {
            let gate = rng.random_range(0..2);
            faults[gate].push(draw_fault(&mut rng));
        }
        RunPlan {
            seed,
            isolation,
            sync_commit,
            tier,
            workload,
            faults,
        }
    }
}

fn draw_first_send(rng: &mut StdRng, racing: bool) -> Fault {
    if racing {
        pick(
            rng,
            &[
                (55, Fault::Rejected),
                (25, Fault::Ok),
                (5, Fault::Unknown),
                (10, Fault::LandedButUnknown),
                (5, Fault::RejectedButLanded),
            ],
        )
    } else {
        pick(
            rng,
            &[
                (40, Fault::Ok),
                (25, Fault::Rejected),
                (10, Fault::Unknown),
                (15, Fault::LandedButUnknown),
                (10, Fault::RejectedButLanded),
            ],
        )
    }
}

fn draw_workload(rng: &mut StdRng, shape: Shape) -> Workload {
    let (count, racing) = match shape {
        Shape::Race { .. } => (rng.random_range(1..=3), true),
        Shape::Split => (rng.random_range(2..=5), false),
        Shape::Contend => (rng.random_range(1..=3), false),
    };
    let effects: Vec<EffectPlan> = (0..count)
        .map(|number| EffectPlan {
            number,
            first_send: draw_first_send(rng, racing),
        })
        .collect();
    let mut ops: [Vec<Op>; 2] = [Vec::new(), Vec::new()];
    let mut keeps_recovering = [false, false];
    match shape {
        Shape::Race { settler } => {
            ops[settler] = (0..count).map(Op::Submit).collect();
            keeps_recovering[1 - settler] = true;
        }
        Shape::Split => {
            for n in 0..count {
                let gate = rng.random_range(0..2);
                ops[gate].push(Op::Submit(n));
                if rng.random_bool(0.3) {
                    ops[gate].push(Op::Recover);
                }
            }
        }
        Shape::Contend => {
            for gate_ops in &mut ops {
                *gate_ops = (0..count).map(Op::Submit).collect();
            }
            keeps_recovering = [rng.random_bool(0.5), rng.random_bool(0.5)];
        }
    }
    for gate_ops in &mut ops {
        gate_ops.push(Op::Recover);
    }
    Workload {
        shape,
        effects,
        ops,
        keeps_recovering,
    }
}

/// How many times the sender confirms its claim while submitting an effect whose first send
/// gets `first_send`: before the send, and again before the entry that settles its answer
/// (none settles an unknown answer).
fn confirms(first_send: Fault) -> u32 {
    match first_send {
        Fault::Ok | Fault::Rejected | Fault::RejectedButLanded => 2,
        _ => 1,
    }
}

/// The fault the race is about: the settling gate's claims session lost right after (or while)
/// it confirms its claim, and, with it, its main session slowed at its next round trip, so the
/// other gate's recovery can take the claim while the settling entry is on its way. Mostly
/// aimed at the confirmation before the entry that settles a rejected send (REFUSED is the
/// answer a resend contradicts), counted from the effects submitted before it.
fn draw_settle_fault(rng: &mut StdRng, effects: &[EffectPlan]) -> FaultSpec {
    let all: u32 = effects.iter().map(|e| confirms(e.first_send)).sum();
    let rejected: Vec<usize> = (0..effects.len())
        .filter(|&k| effects[k].first_send == Fault::Rejected)
        .collect();
    let nth = if !rejected.is_empty() && rng.random_bool(0.8) {
        let k = rejected[rng.random_range(0..rejected.len())];
        effects[..k]
            .iter()
            .map(|e| confirms(e.first_send))
            .sum::<u32>()
            + 2
    } else {
        rng.random_range(1..=all.max(1))
    };
    let partition = rng.random_range(50..=300);
    let action = pick(
        rng,
        &[
            (40, Action::Reset),
            (40, Action::Drop),
            (20, Action::Partition(partition, Then::Close)),
        ],
    );
    let then_other = rng
        .random_bool(0.8)
        .then(|| Action::Delay(rng.random_range(100..=500)));
    FaultSpec {
        session: Session::Claims,
        class: Some(Class::Confirm),
        nth,
        at: pick(rng, &[(80, At::After), (20, At::Answer)]),
        action,
        then_other,
    }
}

/// Round-trip classes a fault is aimed at, by session: (weight, class, highest `nth`); `None`
/// aims at every round trip.
const MAIN_AIMS: [(u32, Option<Class>, u32); 7] = [
    (30, Some(Class::Lock), 12),
    (30, Some(Class::Append), 12),
    (10, Some(Class::CatchUp), 6),
    (10, Some(Class::Unlock), 10),
    (5, Some(Class::Setup), 8),
    (5, Some(Class::Connect), 2),
    (10, None, 80),
];
const CLAIMS_AIMS: [(u32, Option<Class>, u32); 7] = [
    (25, Some(Class::Confirm), 6),
    (20, Some(Class::Claim), 6),
    (15, Some(Class::Record), 6),
    (15, Some(Class::Read), 10),
    (10, Some(Class::Unlock), 6),
    (5, Some(Class::Connect), 2),
    (10, None, 50),
];

/// A fault anywhere: a session, a round trip of it, when and what.
fn draw_fault(rng: &mut StdRng) -> FaultSpec {
    let session = pick(rng, &[(55, Session::Main), (45, Session::Claims)]);
    let aims = match session {
        Session::Main => &MAIN_AIMS,
        Session::Claims => &CLAIMS_AIMS,
    };
    let weighted: Vec<(u32, (Option<Class>, u32))> =
        aims.iter().map(|&(w, c, most)| (w, (c, most))).collect();
    let (class, most) = pick(rng, &weighted);
    let at = pick(rng, &[(50, At::Request), (25, At::Answer), (25, At::After)]);
    let then = if rng.random_bool(0.5) {
        Then::Close
    } else {
        Then::Resume
    };
    let (delay, partition) = (rng.random_range(20..=600), rng.random_range(100..=1200));
    let action = pick(
        rng,
        &[
            (25, Action::Drop),
            (20, Action::Reset),
            (30, Action::Delay(delay)),
            (25, Action::Partition(partition, then)),
        ],
    );
    let then_other = rng.random_bool(0.15).then(|| {
        if rng.random_bool(0.5) {
            Action::Delay(rng.random_range(50..=400))
        } else {
            Action::Drop
        }
    });
    FaultSpec {
        session,
        class,
        nth: rng.random_range(1..=most),
        at,
        action,
        then_other,
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Race { settler } => write!(f, "race({} settles)", gate_name(*settler)),
            Shape::Split => f.write_str("split"),
            Shape::Contend => f.write_str("contend"),
        }
    }
}

/// `A` or `B`.
pub fn gate_name(gate: usize) -> char {
    if gate == 0 {
        'A'
    } else {
        'B'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_run_every_time() {
        for seed in 0..50 {
            assert_eq!(RunPlan::draw(seed), RunPlan::draw(seed));
        }
    }

    #[test]
    fn every_run_aims_a_fault_and_ends_each_gate_with_a_recovery() {
        for seed in 0..200 {
            let plan = RunPlan::draw(seed);
            assert!(
                plan.faults.iter().map(Vec::len).sum::<usize>() >= 1,
                "seed {seed}"
            );
            for ops in &plan.workload.ops {
                assert_eq!(ops.last(), Some(&Op::Recover), "seed {seed}");
            }
        }
    }

    #[test]
    fn the_draws_cover_every_isolation_race_and_fault_kind() {
        let plans: Vec<RunPlan> = (0..300).map(RunPlan::draw).collect();
        for isolation in Isolation::ALL {
            assert!(plans.iter().any(|p| p.isolation == isolation));
        }
        assert!(plans
            .iter()
            .any(|p| matches!(p.workload.shape, Shape::Race { .. })
                && p.isolation != Isolation::ReadCommitted
                && p.faults
                    .iter()
                    .flatten()
                    .any(|f| f.class == Some(Class::Confirm) && f.then_other.is_some())));
        let kinds: Vec<_> = plans
            .iter()
            .flat_map(|p| p.faults.iter().flatten().map(|f| f.action.kind()))
            .collect();
        for kind in super::super::faults::Kind::ALL {
            assert!(kinds.contains(&kind), "{kind:?}");
        }
    }
}
