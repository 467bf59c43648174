//! Thread schedules of the file store, controlled: the workloads of the crash-state search run
//! under a controlled scheduler (`shuttle`; feature `shuttle`), which picks at every lock,
//! condition wait and pause of the store which thread runs next — randomly, or by PCT (random
//! priorities with a few change points, which finds bugs of small depth with known
//! probability). Each schedule is recorded, and every answer a caller was given is checked
//! against the harshest crash right after it (nothing unsynced survives): the answer must hold
//! before and after recovery, and no effect may land twice. A second test checks that `status`
//! answers while another thread of its gate waits for another gate's journal lock.
//!
//! `INTERLOCK_SCHEDULES` sets the schedules per test and scheduler (default 1,000: the CI
//! setting), `INTERLOCK_SCHEDULE_SEED` the seed (default fixed; `random` draws one). A failure
//! prints the seed and shuttle's schedule, which `shuttle::replay` runs again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use interlock::testing::record::{Op, Recording};
use interlock::{Gate, GateConfig, LeaseCheck, LeaseError, LeaseStore, Tier};
use serde_json::{json, Value};
use shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use shuttle::sync::atomic::{AtomicBool, Ordering};
use shuttle::{Config, MaxSteps, Runner};
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storesearch::crash::checks::{check, Told};
use storesearch::crash::model::synced_state;
use storesearch::crash::workloads::{self, Workload, ALL};
use storesearch::crash::world::World;

fn schedules() -> usize {
    std::env::var("INTERLOCK_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn seed() -> u64 {
    match std::env::var("INTERLOCK_SCHEDULE_SEED").ok().as_deref() {
        None | Some("") => 20_261_205,
        Some("random") => rand::random(),
        Some(v) => v
            .parse()
            .expect("INTERLOCK_SCHEDULE_SEED: a number, or `random`"),
    }
}

fn workload(name: &str) -> Workload {
    *ALL.iter().find(|w| w.name == name).unwrap()
}

/// Run `f` under `schedules()` random and as many PCT schedules, printing the seed first.
fn explore(what: &str, steps: usize, f: impl Fn() + Send + Sync + 'static) {
    let seed = seed();
    let n = schedules();
    eprintln!("{what}: {n} random and {n} PCT schedules, seed {seed} (INTERLOCK_SCHEDULE_SEED={seed} replays them)");
    let f = Arc::new(f);
    let run = |name: &str, scheduler: Box<dyn Scheduler + Send>| {
        let mut config = Config::new();
        config.max_steps = MaxSteps::FailAfter(steps);
        // The gate signs and checks entries in its threads: far more stack than the default.
        config.stack_size = 8 << 20;
        let f = Arc::clone(&f);
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = Arc::clone(&started);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Runner::new(scheduler, config).run(move || {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                f()
            })
        }));
        if let Err(panic) = outcome {
            let k = started.load(std::sync::atomic::Ordering::SeqCst);
            eprintln!("{what}: FAILED at {name} schedule {k} of {n} (seed {seed})");
            std::panic::resume_unwind(panic);
        }
    };
    run("random", Box::new(RandomScheduler::new_from_seed(seed, n)));
    run("PCT", Box::new(PctScheduler::new_from_seed(seed, 3, n)));
}

/// States already checked (by their bytes and what callers were told), across schedules.
static SEEN: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

/// Whether the state hashed `h` is new (and now seen).
fn first_seen(h: u64) -> bool {
    SEEN.lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(h)
}

/// Run `w` once (inside a schedule), recorded, and check the harshest crash after each answer.
fn answers_hold(w: &Workload) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let world = Arc::new(World::new(w.tier, workloads::first_sends(w), true));
    let recording = Recording::start(&root).unwrap();
    workloads::run(w, &root, world);
    let ops = recording.finish();
    let mut told = Told::default();
    let (mut answers, mut checked) = (0, 0);
    for (k, op) in ops.iter().enumerate() {
        let Op::Note { text } = op else { continue };
        told.take(text);
        if text.starts_with("land ") {
            continue;
        }
        answers += 1;
        let state = synced_state(&ops, k + 1);
        let mut h = DefaultHasher::new();
        (&state.files, &told).hash(&mut h);
        if !first_seen(h.finish()) {
            continue;
        }
        checked += 1;
        let at = tempfile::tempdir().unwrap();
        let failed = check(w, &state, &told, at.path());
        assert!(
            failed.is_empty(),
            "workload {}: a crash right after operation {} (of {}), keeping only what was synced, contradicts what callers were told:\n  - {}",
            w.name,
            k + 1,
            ops.len(),
            failed.join("\n  - ")
        );
    }
    assert!(answers > 0, "workload {}: no answer was given", w.name);
    (answers, checked)
}

#[test]
fn under_every_schedule_searched_each_answer_survives_the_harshest_crash_after_it() {
    for name in ["threads", "two_gates", "budgets", "appends", "race"] {
        let w = workload(name);
        let totals = Arc::new(Mutex::new((0usize, 0usize, 0usize)));
        let t = Arc::clone(&totals);
        explore(&format!("workload {name}"), 200_000, move || {
            let (a, c) = answers_hold(&w);
            let mut t = t.lock().unwrap();
            t.0 += 1;
            t.1 += a;
            t.2 += c;
        });
        let (runs, answers, checked) = *totals.lock().unwrap();
        println!(
            "{{\"search\":\"schedules\",\"workload\":\"{name}\",\"schedules\":{runs},\"answers\":{answers},\"states_checked\":{checked}}}"
        );
    }
}

/// A lease store whose second check of the effect named `held` (the one at dispatch, made
/// under the journal lock; the first is at proposal) waits until `release` is set.
struct HoldingLeases {
    held: String,
    checks: shuttle::sync::atomic::AtomicUsize,
    entered: Arc<AtomicBool>,
    release: Arc<AtomicBool>,
}

impl LeaseStore for HoldingLeases {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        if effect == &json!({"credit": self.held})
            && self.checks.fetch_add(1, Ordering::SeqCst) == 1
        {
            self.entered.store(true, Ordering::SeqCst);
            while !self.release.load(Ordering::SeqCst) {
                shuttle::thread::yield_now();
            }
        }
        Ok(LeaseCheck {
            live: true,
            grant: Some(json!({"lease": lease})),
        })
    }
}

#[test]
fn status_answers_while_another_thread_of_its_gate_waits_for_another_gates_lock() {
    // Gate 2 holds the journal lock (its dispatch-time lease check waits); a thread of gate 1
    // submits and waits for that lock; another thread of gate 1 asks `status`, and only once
    // it answered is gate 2 let go. If `status` waited behind the waiting thread, nothing
    // would move until the lock wait ran out (an hour): the schedule's step bound fails it.
    let counts = Arc::new(Mutex::new(HashMap::<&'static str, usize>::new()));
    let c = Arc::clone(&counts);
    explore("status during a lock wait", 100_000, move || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(workloads::JOURNAL);
        let world = Arc::new(World::new(Tier::Two, HashMap::new(), false));
        let config = GateConfig {
            journal_lock_wait: Duration::from_secs(3600),
            ..GateConfig::default()
        };
        let entered = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let leases = HoldingLeases {
            held: "held".into(),
            checks: shuttle::sync::atomic::AtomicUsize::new(0),
            entered: Arc::clone(&entered),
            release: Arc::clone(&release),
        };
        let g2 = Arc::new(
            Gate::open(
                &path,
                Arc::clone(&world),
                leases,
                workloads::key(),
                config.clone(),
            )
            .unwrap(),
        );
        let g1 = Arc::new(
            Gate::open(
                &path,
                Arc::clone(&world),
                interlock::testing::AllLive,
                workloads::key(),
                config,
            )
            .unwrap(),
        );
        let holder = {
            let g2 = Arc::clone(&g2);
            shuttle::thread::spawn(move || g2.submit(&workloads::proposal("held", None)).unwrap())
        };
        while !entered.load(Ordering::SeqCst) {
            shuttle::thread::yield_now();
        }
        let waiter = {
            let g1 = Arc::clone(&g1);
            shuttle::thread::spawn(move || {
                g1.submit(&workloads::proposal("waiting", None)).unwrap()
            })
        };
        let asked = shuttle::thread::spawn({
            let g1 = Arc::clone(&g1);
            move || {
                g1.status(&interlock::effect_id(&workloads::proposal("waiting", None)))
                    .unwrap()
            }
        });
        asked.join().unwrap();
        release.store(true, Ordering::SeqCst);
        holder.join().unwrap();
        waiter.join().unwrap();
        *c.lock().unwrap().entry("schedules").or_default() += 1;
    });
    let runs = counts
        .lock()
        .unwrap()
        .get("schedules")
        .copied()
        .unwrap_or(0);
    println!(
        "{{\"search\":\"schedules\",\"test\":\"status_during_lock_wait\",\"schedules\":{runs}}}"
    );
    assert!(runs > 0);
}
