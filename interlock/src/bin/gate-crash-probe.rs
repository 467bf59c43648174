//! Test helper (not a product binary): submits or recovers one effect through the gate against a
//! `interlock::testing::FileTarget` whose state lives in a file, printing each
//! durable step as a JSON line on stdout. With `--stop-at STEP` it prints
//! `{"blocked_at": STEP}` right after that step and blocks until killed (or, with
//! `--continue-file F`, until F exists, then goes on), so a test can SIGKILL it exactly there or
//! change the world before it continues.
//!
//! ```text
//! gate-crash-probe submit|recover --journal FILE|postgres://… --state S --key HEX64
//!     [--tier 1|2|3] [--queryable] [--max-in-flight-ms N] [--ttl-ms N] [--apply-delay-ms N]
//!     [--stop-at proposed|authorized|dispatched|sent|committed] [--continue-file F]
//!     [--request-id R]
//!     [--premises JSON] [--amount N] [--start-at-ms T]
//!     [--budget ID] [--caps JSON]
//! ```
//! `--budget ID` names budget ID for the effect, spending `--amount`; `--caps '{"ID": N}'` gives
//! the gate a budget store with those caps (read again by every process: a recoverer may be
//! given a lower cap than the sender had).
//! Exit status: 0 done, 2 bad arguments or gate error.

use ed25519_dalek::SigningKey;
use interlock::testing::{AllLive, FileTarget, MemBudgets};
use interlock::{Budget, Gate, GateConfig, GateError, Proposal, RecoveryOutcome, Step, Tier};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    if let Err(e) = run() {
        eprintln!("gate-crash-probe: {e}");
        std::process::exit(2);
    }
}

fn say(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// Why the probe could not do what was asked (exit status 2).
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    /// No mode was given.
    #[error("missing mode (submit|recover)")]
    MissingMode,
    /// The mode is neither `submit` nor `recover`.
    #[error("unknown mode {0:?} (submit|recover)")]
    UnknownMode(String),
    /// An argument that is not an option.
    #[error("unexpected argument {0:?}")]
    Unexpected(String),
    /// An option given without its value.
    #[error("--{0} needs a value")]
    NeedsValue(String),
    /// A required option is missing.
    #[error("missing --{0}")]
    Missing(String),
    /// An option's value cannot be read.
    #[error("--{option}: {reason}")]
    Invalid {
        /// The option, without its dashes.
        option: String,
        /// Why.
        reason: String,
    },
    /// The key is not 32 bytes.
    #[error("--key must be 32 bytes of hex")]
    KeyLength,
    /// A tier other than 1, 2 or 3.
    #[error("--tier {0}: must be 1, 2 or 3")]
    Tier(u64),
    /// A step name that is not a step.
    #[error("--stop-at {0}: unknown step")]
    StopAt(String),
    /// The system clock is before the Unix epoch.
    #[error(transparent)]
    Clock(#[from] std::time::SystemTimeError),
    /// The gate failed.
    #[error(transparent)]
    Gate(#[from] GateError),
}

/// The error for option `option` whose value cannot be read, for `reason`.
fn invalid(option: &str) -> impl FnOnce(String) -> ProbeError + '_ {
    move |reason| ProbeError::Invalid {
        option: option.to_owned(),
        reason,
    }
}

/// The command line: the mode, the options with their values, and the flags.
struct Args {
    mode: String,
    opts: HashMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    /// Read the command line (without the program's name).
    fn parse(args: &[String]) -> Result<Args, ProbeError> {
        let mode = args.first().cloned().ok_or(ProbeError::MissingMode)?;
        let mut opts: HashMap<String, String> = HashMap::new();
        let mut flags = Vec::new();
        let mut i = 1;
        while i < args.len() {
            let name = args[i]
                .strip_prefix("--")
                .ok_or_else(|| ProbeError::Unexpected(args[i].clone()))?
                .to_owned();
            if name == "queryable" {
                flags.push(name);
                i += 1;
                continue;
            }
            let value = args
                .get(i + 1)
                .ok_or_else(|| ProbeError::NeedsValue(name.clone()))?;
            opts.insert(name, value.clone());
            i += 2;
        }
        Ok(Args { mode, opts, flags })
    }

    /// A required option's value.
    fn get(&self, k: &str) -> Result<&String, ProbeError> {
        self.opts
            .get(k)
            .ok_or_else(|| ProbeError::Missing(k.to_owned()))
    }

    /// A numeric option's value, `d` when it is not given.
    fn num(&self, k: &str, d: u64) -> Result<u64, ProbeError> {
        self.opts.get(k).map_or(Ok(d), |v| {
            v.parse()
                .map_err(|e: std::num::ParseIntError| invalid(k)(e.to_string()))
        })
    }
}

/// The gate over the journal, the file target and every lease live, as the options say; with
/// a budget store when `--caps` is given.
fn open_gate(args: &Args) -> Result<Gate<FileTarget, AllLive>, ProbeError> {
    let journal = interlock::Location::parse(args.get("journal")?);
    let state = PathBuf::from(args.get("state")?);
    let key_bytes: [u8; 32] = hex::decode(args.get("key")?)
        .map_err(|e| invalid("key")(e.to_string()))?
        .try_into()
        .map_err(|_| ProbeError::KeyLength)?;
    let tier = match args.num("tier", 1)? {
        1 => Tier::One,
        2 => Tier::Two,
        3 => Tier::Three,
        n => return Err(ProbeError::Tier(n)),
    };
    let target = FileTarget::new(
        &state,
        tier,
        args.flags.iter().any(|f| f == "queryable"),
        Duration::from_millis(args.num("max-in-flight-ms", 0)?),
    )
    .with_apply_delay(Duration::from_millis(args.num("apply-delay-ms", 0)?));
    let config = GateConfig {
        claim_ttl: Duration::from_millis(args.num("ttl-ms", 40_000)?),
        ..GateConfig::default()
    };
    let stop_at = match args.opts.get("stop-at") {
        Some(s) => Some(Step::parse(s).ok_or_else(|| ProbeError::StopAt(s.clone()))?),
        None => None,
    };
    let mut gate = Gate::open_at(
        &journal,
        target,
        AllLive,
        SigningKey::from_bytes(&key_bytes),
        config,
    )?;
    if let Some(caps) = args.opts.get("caps") {
        let caps: HashMap<String, i64> =
            serde_json::from_str(caps).map_err(|e| invalid("caps")(e.to_string()))?;
        gate.set_budgets(Box::new(MemBudgets::with_caps(
            caps.iter().map(|(id, cap)| (id.as_str(), *cap)),
        )));
    }
    let continue_file = args.opts.get("continue-file").map(PathBuf::from);
    gate.set_observer(Box::new(move |step| {
        observe(step, stop_at, continue_file.as_ref())
    }));
    Ok(gate)
}

/// Print each durable step; at `stop_at`, say so and block until killed (or, with a continue
/// file, until it exists).
fn observe(step: Step, stop_at: Option<Step>, continue_file: Option<&PathBuf>) {
    say(&json!({"step": step.as_str()}));
    if Some(step) == stop_at {
        say(&json!({"blocked_at": step.as_str()}));
        // With --continue-file, go on once that file exists; else block until killed.
        loop {
            match continue_file {
                Some(f) if f.exists() => break,
                Some(_) => std::thread::sleep(Duration::from_millis(20)),
                None => std::thread::sleep(Duration::from_secs(3600)),
            }
        }
        say(&json!({"continued_at": step.as_str()}));
    }
}

/// With `--start-at-ms T`, sleep until wall-clock instant T.
fn wait_for_start(args: &Args) -> Result<(), ProbeError> {
    if let Some(t) = args.opts.get("start-at-ms") {
        let t: u64 = t
            .parse()
            .map_err(|e: std::num::ParseIntError| invalid("start-at-ms")(e.to_string()))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis() as u64;
        if t > now {
            std::thread::sleep(Duration::from_millis(t - now));
        }
    }
    Ok(())
}

fn run() -> Result<(), ProbeError> {
    let args = Args::parse(&std::env::args().skip(1).collect::<Vec<String>>())?;
    let gate = open_gate(&args)?;
    wait_for_start(&args)?;
    say(&json!({"ready": std::process::id(), "owner": gate.owner()}));
    match args.mode.as_str() {
        "submit" => submit(&gate, &args),
        "recover" => recover(&gate),
        other => Err(ProbeError::UnknownMode(other.to_owned())),
    }
}

/// Submit the probe's proposal and print the answer.
fn submit(gate: &Gate<FileTarget, AllLive>, args: &Args) -> Result<(), ProbeError> {
    let premises: Value = match args.opts.get("premises") {
        Some(p) => serde_json::from_str(p).map_err(|e| invalid("premises")(e.to_string()))?,
        None => json!({}),
    };
    let amount = args.num("amount", 1000)?;
    let budget = match args.opts.get("budget") {
        Some(id) => Some(Budget {
            id: id.clone(),
            amount: i64::try_from(amount).map_err(|e| invalid("amount")(e.to_string()))?,
        }),
        None => None,
    };
    let p = Proposal {
        agent: "crash-probe".into(),
        lease: json!("lease-1"),
        premises,
        effect: json!({"amount": amount, "customer": "cus_probe"}),
        request_id: Some(
            args.opts
                .get("request-id")
                .cloned()
                .unwrap_or_else(|| "req-1".into()),
        ),
        budget,
    };
    let s = gate.submit(&p)?;
    say(&json!({"effect_id": s.effect_id, "status": s.status.as_str(), "detail": s.detail}));
    Ok(())
}

/// Recover every open effect and print the outcomes.
fn recover(gate: &Gate<FileTarget, AllLive>) -> Result<(), ProbeError> {
    let started = Instant::now();
    let rec = gate.recover()?;
    let elapsed_us = started.elapsed().as_micros() as u64;
    let items: Vec<Value> = rec
        .into_iter()
        .map(|r| match r.outcome {
            RecoveryOutcome::Resolved(s) => {
                json!({"effect_id": r.effect_id, "status": s.as_str()})
            }
            RecoveryOutcome::Blocked {
                holder,
                until_ms,
                reason,
            } => json!({"effect_id": r.effect_id, "blocked": {"holder": holder, "until_ms": until_ms, "reason": reason}}),
        })
        .collect();
    say(&json!({"recovered": items, "elapsed_us": elapsed_us}));
    Ok(())
}
