//! The workloads whose file operations are recorded: one effect, several threads of one gate,
//! two gates on one journal, recovery of sends whose answer was lost, budgets, raw appends, and a
//! recovery racing a sender on another gate
//! from threads. Each notes every answer it was given (`answer <effect> <status>`), every
//! outcome recovery settled (`answer` too) and every append acknowledged (`acked <effect>
//! <hash>`), between the store's operations.

use super::threads::run_all;
use super::world::{Send, World};
use ed25519_dalek::SigningKey;
use interlock::journal::Journal;
use interlock::testing::{record, AllLive, MemBudgets};
use interlock::{effect_id, Budget, Gate, GateConfig, Proposal, RecoveryOutcome, Tier};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A job of a workload's thread.
type Job<'a> = Box<dyn FnOnce() + std::marker::Send + 'a>;

/// The gates' clock (Unix milliseconds): fixed, so that a schedule's lines are the same bytes
/// every time it runs.
pub const CLOCK_MS: u64 = 1_800_000_000_000;

/// The journal's name inside a workload's directory.
pub const JOURNAL: &str = "journal.jsonl";

/// One workload and what a gate over its crash states needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Its name, as the command line takes it.
    pub name: &'static str,
    /// The target's tier.
    pub tier: Tier,
    /// The budgets' caps (none: the gate has no budget store).
    pub budgets: &'static [(&'static str, i64)],
    /// What its first sends do, by effect name.
    pub sends: &'static [(&'static str, Send)],
    run: fn(&Ctx),
}

/// The first sends of the recovery workloads: one lands with its answer lost, one is lost, one
/// is rejected (`d` lands).
const RECOVERY_SENDS: &[(&str, Send)] = &[
    ("a", Send::LandsUnanswered),
    ("b", Send::Lost),
    ("c", Send::Rejected),
];

/// Every workload.
pub const ALL: [Workload; 8] = [
    Workload {
        name: "one_effect",
        tier: Tier::Two,
        budgets: &[],
        sends: &[],
        run: one_effect,
    },
    Workload {
        name: "threads",
        tier: Tier::Two,
        budgets: &[],
        sends: &[],
        run: threads,
    },
    Workload {
        name: "two_gates",
        tier: Tier::Two,
        budgets: &[],
        sends: &[],
        run: two_gates,
    },
    Workload {
        name: "recovery_tier2",
        tier: Tier::Two,
        budgets: &[],
        sends: RECOVERY_SENDS,
        run: recovery,
    },
    Workload {
        name: "recovery_tier3",
        tier: Tier::Three,
        budgets: &[],
        sends: RECOVERY_SENDS,
        run: recovery,
    },
    Workload {
        name: "budgets",
        tier: Tier::One,
        budgets: &[("order-1", 300)],
        sends: &[],
        run: budgets,
    },
    Workload {
        name: "appends",
        tier: Tier::Two,
        budgets: &[],
        sends: &[],
        run: appends,
    },
    Workload {
        name: "race",
        tier: Tier::Two,
        budgets: &[],
        sends: &[],
        run: race,
    },
];

/// The signing key of every workload's gates.
pub fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

/// The gates' settings: a short lock wait, so a state whose lock is stuck fails fast.
pub fn config() -> GateConfig {
    GateConfig {
        journal_lock_wait: Duration::from_secs(5),
        ..GateConfig::default()
    }
}

/// The proposal of the effect named `name` (spending `amount` of `budget`, if given).
pub fn proposal(name: &str, budget: Option<(&str, i64)>) -> Proposal {
    Proposal {
        agent: "storesearch".into(),
        lease: json!("lease-1"),
        premises: json!({"balance": 0}),
        effect: json!({"credit": name}),
        request_id: None,
        budget: budget.map(|(id, amount)| Budget {
            id: id.into(),
            amount,
        }),
    }
}

/// A gate over the journal at `path` acting on `world`.
pub type SearchGate = Gate<Arc<World>, AllLive>;

/// Open a gate for `w` over the journal at `path`.
pub fn gate(
    w: &Workload,
    path: &Path,
    world: &Arc<World>,
) -> Result<SearchGate, interlock::GateError> {
    gate_at(w, path, world, CLOCK_MS)
}

/// Open a gate for `w` over the journal at `path` whose clock stands at `clock_ms`.
pub fn gate_at(
    w: &Workload,
    path: &Path,
    world: &Arc<World>,
    clock_ms: u64,
) -> Result<SearchGate, interlock::GateError> {
    let mut g = Gate::open(path, Arc::clone(world), AllLive, key(), config())?;
    g.set_clock(Box::new(move || clock_ms));
    if !w.budgets.is_empty() {
        g.set_budgets(Box::new(MemBudgets::with_caps(w.budgets.iter().copied())));
    }
    Ok(g)
}

/// What a workload runs with.
pub struct Ctx {
    workload: Workload,
    journal: PathBuf,
    world: Arc<World>,
}

impl Ctx {
    fn gate(&self) -> Option<SearchGate> {
        gate(&self.workload, &self.journal, &self.world).ok()
    }

    /// Submit the effect `name`, noting the answer if there is one.
    fn submit(&self, g: &SearchGate, name: &str, budget: Option<(&str, i64)>) {
        if let Ok(answer) = g.submit(&proposal(name, budget)) {
            record::note(format!(
                "answer {} {}",
                answer.effect_id,
                answer.status.as_str()
            ));
        }
    }

    /// Ask `status` of the effect `name`, noting a settled answer as one a caller was given.
    fn ask(&self, g: &SearchGate, name: &str) {
        if let Ok(Some(s)) = g.status(&effect_id(&proposal(name, None))) {
            if s != interlock::Status::InFlight {
                record::note(format!(
                    "answer {} {}",
                    effect_id(&proposal(name, None)),
                    s.as_str()
                ));
            }
        }
    }

    /// Recover every open dispatch, noting each settled outcome.
    fn recover(&self, g: &SearchGate) {
        if let Ok(outcomes) = g.recover() {
            for r in outcomes {
                if let RecoveryOutcome::Resolved(s) = r.outcome {
                    record::note(format!("answer {} {}", r.effect_id, s.as_str()));
                }
            }
        }
    }
}

/// Run `w` on a journal at `dir`/[`JOURNAL`], with the world its sends land in.
pub fn run(w: &Workload, dir: &Path, world: Arc<World>) {
    let ctx = Ctx {
        workload: *w,
        journal: dir.join(JOURNAL),
        world,
    };
    (w.run)(&ctx);
}

/// What each effect's first send does, by effect id.
pub fn first_sends(w: &Workload) -> HashMap<String, Send> {
    w.sends
        .iter()
        .map(|(name, send)| (effect_id(&proposal(name, None)), *send))
        .collect()
}

fn one_effect(c: &Ctx) {
    if let Some(g) = c.gate() {
        c.submit(&g, "a", None);
    }
}

/// Four threads of one gate: two effects each, one effect submitted by all of them at once
/// (its duplicates are answered while its lines may wait for their group commit).
fn threads(c: &Ctx) {
    let Some(g) = c.gate() else { return };
    let g = &g;
    let jobs: Vec<Job<'_>> = (0..4)
        .map(|t| -> Job<'_> {
            Box::new(move || {
                c.submit(g, &format!("t{t}"), None);
                c.submit(g, "shared", None);
                c.submit(g, &format!("u{t}"), None);
            })
        })
        .chain(std::iter::once(Box::new(move || {
            // A reader: `status` answers while lines of the effect wait for their commit.
            for _ in 0..4 {
                c.ask(g, "shared");
                c.ask(g, "t0");
            }
        }) as Job<'_>))
        .collect();
    run_all(jobs);
}

/// Two gates on one journal (each its own `flock` holder, like two processes), threads of
/// each, one effect submitted by both.
fn two_gates(c: &Ctx) {
    let (Some(g1), Some(g2)) = (c.gate(), c.gate()) else {
        return;
    };
    let mut jobs: Vec<Job<'_>> = Vec::new();
    for (n, g) in [(1, &g1), (2, &g2)] {
        for t in 0..2 {
            jobs.push(Box::new(move || {
                c.submit(g, &format!("g{n}t{t}"), None);
                c.submit(g, "both", None);
            }));
        }
    }
    run_all(jobs);
}

/// Sends whose answer is lost (one landed, one not) and one rejected, then a second gate
/// recovers them and is asked again.
fn recovery(c: &Ctx) {
    let Some(g1) = c.gate() else { return };
    for name in ["a", "b", "c", "d"] {
        c.submit(&g1, name, None);
    }
    drop(g1);
    let Some(g2) = c.gate() else { return };
    c.recover(&g2);
    for name in ["a", "b"] {
        c.submit(&g2, name, None);
    }
}

/// One gate sends while a second gate recovers, again and again, with its clock past every
/// in-flight bound: it must never take over a dispatch whose sender is still sending.
fn race(c: &Ctx) {
    let Some(g1) = c.gate() else { return };
    let Some(g2) = gate_at(&c.workload, &c.journal, &c.world, CLOCK_MS + 3_600_000).ok() else {
        return;
    };
    let (g1, g2) = (&g1, &g2);
    let jobs: Vec<Job<'_>> = vec![
        Box::new(move || {
            for name in ["r0", "r1"] {
                c.submit(g1, name, None);
            }
        }),
        Box::new(move || {
            for _ in 0..4 {
                c.recover(g2);
                super::threads::yield_now();
            }
        }),
    ];
    run_all(jobs);
}

/// Four effects of 100 under a cap of 300, from two threads: one is refused.
fn budgets(c: &Ctx) {
    let Some(g) = c.gate() else { return };
    let g = &g;
    let jobs: Vec<Job<'_>> = (0..2)
        .map(|t| -> Job<'_> {
            Box::new(move || {
                for k in 0..2 {
                    c.submit(g, &format!("b{t}{k}"), Some(("order-1", 100)));
                }
            })
        })
        .collect();
    run_all(jobs);
}

/// Raw appends (the journal alone, no gate) from three threads, each acknowledged.
fn appends(c: &Ctx) {
    let Ok(j) = Journal::open(
        &c.journal,
        vec![key().verifying_key()],
        Duration::from_secs(5),
    ) else {
        return;
    };
    let j = &j;
    let jobs: Vec<Job<'_>> = (0..3)
        .map(|t| -> Job<'_> {
            Box::new(move || {
                for k in 0..3u64 {
                    let effect = format!("raw{t}");
                    let mut fields = Map::new();
                    fields.insert("agent".into(), Value::from(format!("appender {k}")));
                    fields.insert("lease".into(), json!("lease-1"));
                    fields.insert("premises".into(), json!({}));
                    fields.insert("effect".into(), json!({"raw": t}));
                    let kind = verify::entry::Kind::Proposed;
                    if let Ok(entry) = j.append_entry(&effect, kind, fields, CLOCK_MS, &key()) {
                        let hash = entry
                            .get("hash")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        record::note(format!("acked {effect} {hash}"));
                    }
                }
            })
        })
        .collect();
    run_all(jobs);
}
