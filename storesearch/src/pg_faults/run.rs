//! One run: its own database with the drawn defaults, a proxy in front of each gate, the
//! workload, recovery by a fresh gate on a direct connection, and the checks.

use super::checks::{self, Check, Failure, Final};
use super::database::Server;
use super::faults::{Fired, Schedule};
use super::plan::{gate_name, RunPlan};
use super::proxy::Proxy;
use super::workload::{self, Record, Recorder, RunGate};
use super::world::World;
use anyhow::Context;
use ed25519_dalek::SigningKey;
use interlock::testing::AllLive;
use interlock::{effect_id, Gate, GateConfig, Location, Proposal, Recovered, RecoveryOutcome};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the final recovery may wait for claims and in-flight bounds.
const FINAL_RECOVERY: Duration = Duration::from_secs(20);

/// What one run did and found.
#[derive(Debug)]
pub struct Outcome {
    /// What was drawn.
    pub plan: RunPlan,
    /// The faults that struck, both gates', in order.
    pub fired: Vec<Fired>,
    /// How many round trips both gates made through their proxies.
    pub round_trips: u32,
    /// The failed checks.
    pub failures: Vec<Failure>,
    /// What else happened worth telling with a failure (a gate that could not open).
    pub notes: Vec<String>,
    /// The answers, reported steps and errors of the workload.
    pub record: Record,
    /// Each effect after the final recovery.
    pub finals: Vec<Final>,
    /// The run's database (dropped unless kept).
    pub database: String,
    /// How long the run took.
    pub elapsed: Duration,
}

/// The gates' settings: short waits, so a fault costs the run little time.
fn config(keys: &[SigningKey]) -> GateConfig {
    GateConfig {
        journal_lock_wait: Duration::from_secs(3),
        retry_interval: Duration::from_millis(100),
        send_window: Duration::from_millis(500),
        trusted_signers: keys.iter().map(SigningKey::verifying_key).collect(),
        ..GateConfig::default()
    }
}

/// The keys of gates A, B and the final recoverer.
fn keys(seed: u64) -> [SigningKey; 3] {
    [0u8, 1, 2].map(|i| {
        let mut bytes = [7u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        bytes[8] = i;
        SigningKey::from_bytes(&bytes)
    })
}

/// The proposal of effect `n` of the run of `seed`.
fn proposal(seed: u64, n: usize) -> Proposal {
    Proposal {
        agent: "storesearch".into(),
        lease: json!("lease-1"),
        premises: json!({}),
        effect: json!({"credit": 100 + n, "case": n, "run": format!("{seed:016x}")}),
        request_id: None,
        budget: None,
    }
}

/// Run the run of `seed` on `server`; its database is dropped afterwards unless it failed and
/// `keep_failed` is set.
pub fn run(server: &Server, seed: u64, keep_failed: bool) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let plan = RunPlan::draw(seed);
    let database = format!("storesearch_pgf_{}_{seed:016x}", std::process::id());
    server.create_database(&database, plan.isolation, plan.sync_commit)?;
    let outcome = run_in(server, plan, &database, started);
    let keep = keep_failed && outcome.as_ref().is_ok_and(|o| !o.failures.is_empty());
    if !keep {
        server.drop_database(&database)?;
    }
    outcome
}

/// The run itself, in its database.
fn run_in(
    server: &Server,
    plan: RunPlan,
    database: &str,
    started: Instant,
) -> anyhow::Result<Outcome> {
    let keys = keys(plan.seed);
    let proposals: Vec<Proposal> = (0..plan.workload.effects.len())
        .map(|n| proposal(plan.seed, n))
        .collect();
    let ids: Vec<String> = proposals.iter().map(effect_id).collect();
    let first_sends: HashMap<String, _> = ids
        .iter()
        .zip(&plan.workload.effects)
        .map(|(id, e)| (id.clone(), e.first_send))
        .collect();
    let world = Arc::new(World::new(plan.tier, first_sends));
    let proxies = [0, 1].map(|i| {
        Proxy::start(
            server.addr,
            Schedule::new(gate_name(i), plan.faults[i].clone()),
        )
    });
    let [Ok(proxy_a), Ok(proxy_b)] = proxies else {
        anyhow::bail!("could not start the proxies on loopback");
    };
    let rec = Recorder::new();
    let mut notes = Vec::new();
    let mut gates: Vec<Option<RunGate>> = Vec::with_capacity(2);
    for (i, proxy) in [&proxy_a, &proxy_b].into_iter().enumerate() {
        let at = Location::Postgres(server.proxied_url(proxy.port(), database));
        gates.push(open_gate(i, &at, &world, &keys, &rec, &mut notes));
    }
    workload::run(
        [gates[0].as_ref(), gates[1].as_ref()],
        &plan.workload,
        &proposals,
        &ids,
        &rec,
    );
    drop(gates);
    let (mut fired, mut round_trips) = (Vec::new(), 0);
    for seen in [proxy_a.stop(), proxy_b.stop()] {
        if let Some(m) = seen.misread.first() {
            anyhow::bail!(
                "the proxy could not read a stream as PostgreSQL's protocol ({m}): a flaw of \
                 the search, not of the store"
            );
        }
        fired.extend(seen.fired);
        round_trips += seen.round_trips;
    }
    fired.sort_by_key(|f| f.at_ms);
    let direct = Location::Postgres(server.direct_url(database));
    let (finals, mut failures) = recover_and_read(&direct, &world, &keys, &ids, &rec);
    let record = rec.take();
    failures.extend(checks::check(&finals, &record.answers, &record.acked));
    Ok(Outcome {
        plan,
        fired,
        round_trips,
        failures,
        notes,
        record,
        finals,
        database: database.to_owned(),
        elapsed: started.elapsed(),
    })
}

/// Open gate `i` (A or B) at `at` through its proxy, its durable steps reported to `rec`; a
/// gate that cannot open (a fault struck its opening) is noted and does nothing.
fn open_gate(
    i: usize,
    at: &Location,
    world: &Arc<World>,
    keys: &[SigningKey; 3],
    rec: &Recorder,
    notes: &mut Vec<String>,
) -> Option<RunGate> {
    match Gate::open_at(
        at,
        Arc::clone(world),
        AllLive,
        keys[i].clone(),
        config(keys),
    ) {
        Ok(mut g) => {
            rec.observe(gate_name(i), &mut g);
            Some(g)
        }
        Err(e) => {
            notes.push(format!("gate {} could not open: {e}", gate_name(i)));
            None
        }
    }
}

/// Recover with a fresh gate on a direct connection, and read each effect's entries and the
/// target's record of it. A journal that cannot be opened or recovered is a failure.
fn recover_and_read(
    direct: &Location,
    world: &Arc<World>,
    keys: &[SigningKey; 3],
    ids: &[String],
    rec: &Recorder,
) -> (Vec<Final>, Vec<Failure>) {
    let unopened = |sentence: String| Failure {
        check: Check::Unopened,
        effect: None,
        sentence,
    };
    let recoverer = Gate::open_at(
        direct,
        Arc::clone(world),
        AllLive,
        keys[2].clone(),
        config(keys),
    );
    let r = match recoverer {
        Ok(r) => r,
        Err(e) => {
            return (
                Vec::new(),
                vec![unopened(format!(
                    "a fresh gate could not open the journal: {e}"
                ))],
            )
        }
    };
    let out = match r.recover_wait(FINAL_RECOVERY) {
        Ok(out) => out,
        Err(e) => {
            return (
                Vec::new(),
                vec![unopened(format!(
                    "recovery on a direct connection failed: {e}"
                ))],
            )
        }
    };
    rec.recovered('R', ids, &out);
    let mut finals = Vec::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        let entries = match r.entries(id).context("reading the journal back") {
            Ok(e) => e,
            Err(e) => return (finals, vec![unopened(format!("{e:#}"))]),
        };
        finals.push(Final {
            effect: n,
            entries,
            landed: world.landed(id),
            sends: world.sends(id),
            blocked: blocked_reason(&out, id),
        });
    }
    (finals, Vec::new())
}

fn blocked_reason(out: &[Recovered], id: &str) -> Option<String> {
    out.iter()
        .find(|r| r.effect_id == id)
        .and_then(|r| match &r.outcome {
            RecoveryOutcome::Blocked { holder, reason, .. } => Some(format!("{holder}: {reason}")),
            RecoveryOutcome::Resolved(_) => None,
        })
}
