//! Every PostgreSQL round trip faulted (DESIGN §2.7): two gates share a journal in PostgreSQL,
//! each through a proxy on loopback that, at a drawn round trip of a drawn session (the main
//! session or the claims session, told apart by their `application_name`), drops, delays,
//! resets or partitions it. Each run draws, from its seed, its database's default isolation and
//! `synchronous_commit`, the target's tier, the two gates' workload (recovery racing the
//! settling of a dispatch among them) and the faults; then a fresh gate on a direct connection
//! recovers, and the checks hold every answer against the journal and the target's record.
//!
//! - [`wire`]: the protocol framed just enough to count round trips;
//! - [`statements`]: what a round trip carries (its class), and which session it is on;
//! - [`faults`]: faults aimed at round trips, and each gate's schedule of them;
//! - [`proxy`] and [`link`]: the proxy and one proxied connection;
//! - [`database`]: the server, and each run's own database;
//! - [`plan`]: a run drawn from its seed;
//! - [`world`]: the target both gates send to;
//! - [`workload`]: the two gates' threads;
//! - [`run`]: one run from its database to its checks;
//! - [`checks`]: the checks.

mod checks;
mod database;
mod faults;
mod link;
mod plan;
mod proxy;
mod run;
mod statements;
mod wire;
mod workload;
mod world;

use anyhow::{bail, Context};
use database::Server;
use faults::Kind;
use run::Outcome;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The environment variable the URL is read from when `--url` is not given.
const URL_VAR: &str = "INTERLOCK_TEST_PG_URL";

/// How many runs, and how long at most.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// 80 runs from seed 1 (under a minute on two quiet cores), at most 300 s: the limit is
    /// a guard against a hung server, set well past what a loaded machine needs, so that CI
    /// always searches the same 80 runs.
    Ci,
    /// 2000 runs from a drawn seed, at most 30 minutes (some 20 minutes on two cores).
    Nightly,
}

impl Setting {
    fn runs(self) -> u32 {
        match self {
            Setting::Ci => 80,
            Setting::Nightly => 2000,
        }
    }

    fn limit(self) -> Duration {
        match self {
            Setting::Ci => Duration::from_secs(300),
            Setting::Nightly => Duration::from_secs(1800),
        }
    }
}

/// The command's options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The PostgreSQL server, as a postgres:// URL on this machine's loopback (default:
    /// $INTERLOCK_TEST_PG_URL, which `.ci/pg-cluster start` prints). Each run creates a
    /// database of its own there (the role needs CREATEDB) and drops it afterwards.
    #[arg(long)]
    pub url: Option<String>,
    /// How many runs, and how long at most: `ci` or `nightly`.
    #[arg(long, value_enum, default_value = "ci")]
    pub setting: Setting,
    /// How many runs (instead of the setting's).
    #[arg(long)]
    pub runs: Option<u32>,
    /// Start no run after this many seconds (instead of the setting's 300 or 1800).
    #[arg(long)]
    pub max_seconds: Option<u64>,
    /// The first run's seed (decimal or 0x-hex); run i draws from seed + i. Default: 1 for
    /// `ci`, drawn for `nightly`.
    #[arg(long, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Run each seed this many times: the draws are the seed's, the threads' timing is not,
    /// so a race may take a few tries to replay.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Go on after a failing run (by default the search stops at the first).
    #[arg(long)]
    pub keep_going: bool,
    /// Keep a failing run's database for a look (its name is printed).
    #[arg(long)]
    pub keep_failed: bool,
    /// Tell every run's story (answers, entries, faults), not only a failing one's.
    #[arg(long)]
    pub show: bool,
}

fn parse_seed(s: &str) -> anyhow::Result<u64> {
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.with_context(|| format!("{s:?} is not a seed (a number, decimal or 0x-hex)"))
}

/// What the runs added up to.
#[derive(Default)]
struct Totals {
    runs: u32,
    faults: BTreeMap<Kind, u32>,
    failed: Vec<u64>,
}

/// The server's URL, and whether it came from the environment.
fn server_url(args: &Args) -> anyhow::Result<(String, bool)> {
    match &args.url {
        Some(u) => Ok((u.clone(), false)),
        None => match std::env::var(URL_VAR) {
            Ok(u) if !u.is_empty() => Ok((u, true)),
            _ => bail!(
                "no PostgreSQL server to search: give --url postgres://… (on loopback) or set \
                 {URL_VAR} (`eval \"$(.ci/pg-cluster start)\"` starts one and sets it)"
            ),
        },
    }
}

/// Run the search; `Ok(false)` when it found a failure (already printed).
pub fn main(args: &Args) -> anyhow::Result<bool> {
    let (url, from_env) = server_url(args)?;
    let server = Server::from_url(&url)?;
    let runs = args.runs.unwrap_or(args.setting.runs());
    let first = args.seed.unwrap_or_else(|| match args.setting {
        Setting::Ci => 1,
        Setting::Nightly => u64::from(rand::random::<u32>()),
    });
    let limit = args
        .max_seconds
        .map_or(args.setting.limit(), Duration::from_secs);
    let replay_url = if from_env {
        format!("\"${URL_VAR}\"")
    } else {
        database::shown(&url)
    };
    println!(
        "pg-faults: {runs} run(s) from seed {first} on {} ({} run(s) of each seed, at most {} s)",
        server.shown(),
        args.repeat.max(1),
        limit.as_secs()
    );
    let started = Instant::now();
    let mut totals = Totals::default();
    let planned = runs.saturating_mul(args.repeat.max(1));
    'runs: for i in 0..runs {
        let seed = first.wrapping_add(u64::from(i));
        for _ in 0..args.repeat.max(1) {
            if started.elapsed() > limit {
                println!(
                    "pg-faults: the {} s allowed are spent; no more runs",
                    limit.as_secs()
                );
                break 'runs;
            }
            let outcome = run::run(&server, seed, args.keep_failed)
                .with_context(|| format!("run of seed {seed} could not be carried out"))?;
            totals.runs += 1;
            for f in &outcome.fired {
                *totals.faults.entry(f.kind).or_default() += 1;
            }
            print_run(totals.runs, planned, &outcome);
            if args.show && outcome.failures.is_empty() {
                print_story(&outcome);
            }
            if !outcome.failures.is_empty() {
                print_failure(&outcome, &replay_url, &url, args.keep_failed);
                totals.failed.push(seed);
                if !args.keep_going {
                    break 'runs;
                }
            }
        }
    }
    print_totals(&totals, started.elapsed(), &replay_url);
    Ok(totals.failed.is_empty())
}

fn print_run(n: u32, of: u32, o: &Outcome) {
    let p = &o.plan;
    let faults = if o.fired.is_empty() {
        "none struck".to_owned()
    } else {
        o.fired
            .iter()
            .map(|f| f.what.clone())
            .collect::<Vec<_>>()
            .join("; ")
    };
    println!(
        "run {n}/{of} seed {} | isolation {} | synchronous_commit {} | {}, tier {}, {} effect(s) | {} round trips, {} faulted: {faults} | {} ({:.1} s)",
        p.seed,
        p.isolation.sql(),
        p.sync_commit.sql(),
        p.workload.shape,
        match p.tier {
            plan::TargetTier::One => 1,
            plan::TargetTier::Two => 2,
        },
        p.workload.effects.len(),
        o.round_trips,
        o.fired.len(),
        if o.failures.is_empty() { "ok" } else { "FAILED" },
        o.elapsed.as_secs_f64()
    );
}

fn print_failure(o: &Outcome, replay_url: &str, url: &str, kept: bool) {
    println!("  FAILURE in the run of seed {}:", o.plan.seed);
    for f in &o.failures {
        println!("  - {f}");
    }
    print_story(o);
    if kept {
        println!("  its database is kept: {}", o.database);
    }
    let password = if database::has_password(url) && !replay_url.starts_with('"') {
        " (put the URL's password back)"
    } else {
        ""
    };
    println!(
        "  replay: storesearch pg-faults --url {replay_url} --seed {} --runs 1{password}",
        o.plan.seed
    );
    println!("  (the draws are the seed's; a race may take a few tries: add --repeat 20)");
}

/// What a run did: each effect's journal and the target's record, the answers, the faults
/// and the errors, in order.
fn print_story(o: &Outcome) {
    for (f, e) in o.finals.iter().zip(&o.plan.workload.effects) {
        println!(
            "  effect #{}: first send {:?} | journal {} | landed {} | sends {}",
            f.effect,
            e.first_send,
            f.summary(),
            f.landed,
            f.sends
        );
    }
    for a in &o.record.answers {
        println!(
            "  {} ms: gate {} {:?} #{} answered {}{}",
            a.at_ms,
            a.gate,
            a.call,
            a.effect,
            a.status.as_str(),
            a.detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        );
    }
    for f in &o.fired {
        println!("  {} ms: fault {}", f.at_ms, f.what);
    }
    println!("  recovery rounds run: {}", o.record.rounds);
    for e in o.record.errors.iter().chain(&o.notes) {
        println!("  {e}");
    }
}

fn print_totals(t: &Totals, elapsed: Duration, replay_url: &str) {
    let struck: u32 = t.faults.values().sum();
    let by_kind = Kind::ALL
        .iter()
        .map(|k| format!("{} {}", k.as_str(), t.faults.get(k).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "pg-faults: {} run(s) in {:.1} s, {struck} faulted round trip(s) ({by_kind}), {} failure(s)",
        t.runs,
        elapsed.as_secs_f64(),
        t.failed.len()
    );
    for seed in &t.failed {
        println!(
            "pg-faults: failed: storesearch pg-faults --url {replay_url} --seed {seed} --runs 1"
        );
    }
}
