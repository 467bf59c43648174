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
use interlock::{Budget, Gate, GateConfig, Proposal, RecoveryOutcome, Step, Tier};
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

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args
        .first()
        .cloned()
        .ok_or("missing mode (submit|recover)")?;
    let mut opts: HashMap<String, String> = HashMap::new();
    let mut flags = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let name = args[i]
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {:?}", args[i]))?
            .to_owned();
        if name == "queryable" {
            flags.push(name);
            i += 1;
            continue;
        }
        let value = args
            .get(i + 1)
            .ok_or_else(|| format!("--{name} needs a value"))?;
        opts.insert(name, value.clone());
        i += 2;
    }
    let get = |k: &str| opts.get(k).ok_or_else(|| format!("missing --{k}"));
    let num = |k: &str, d: u64| -> Result<u64, String> {
        opts.get(k)
            .map_or(Ok(d), |v| v.parse().map_err(|e| format!("--{k}: {e}")))
    };
    let journal = interlock::Location::parse(get("journal")?);
    let state = PathBuf::from(get("state")?);
    let key_bytes: [u8; 32] = hex::decode(get("key")?)
        .map_err(|e| format!("--key: {e}"))?
        .try_into()
        .map_err(|_| "--key must be 32 bytes of hex".to_owned())?;
    let tier = match num("tier", 1)? {
        1 => Tier::One,
        2 => Tier::Two,
        3 => Tier::Three,
        n => return Err(format!("--tier {n}: must be 1, 2 or 3")),
    };
    let target = FileTarget::new(
        &state,
        tier,
        flags.iter().any(|f| f == "queryable"),
        Duration::from_millis(num("max-in-flight-ms", 0)?),
    )
    .with_apply_delay(Duration::from_millis(num("apply-delay-ms", 0)?));
    let config = GateConfig {
        claim_ttl: Duration::from_millis(num("ttl-ms", 40_000)?),
        ..GateConfig::default()
    };
    let stop_at = match opts.get("stop-at") {
        Some(s) => Some(Step::parse(s).ok_or_else(|| format!("--stop-at {s}: unknown step"))?),
        None => None,
    };
    let mut gate = Gate::open_at(
        &journal,
        target,
        AllLive,
        SigningKey::from_bytes(&key_bytes),
        config,
    )
    .map_err(|e| e.to_string())?;
    if let Some(caps) = opts.get("caps") {
        let caps: HashMap<String, i64> =
            serde_json::from_str(caps).map_err(|e| format!("--caps: {e}"))?;
        gate.set_budgets(Box::new(MemBudgets::with_caps(
            caps.iter().map(|(id, cap)| (id.as_str(), *cap)),
        )));
    }
    let continue_file = opts.get("continue-file").map(PathBuf::from);
    gate.set_observer(Box::new(move |step| {
        say(&json!({"step": step.as_str()}));
        if Some(step) == stop_at {
            say(&json!({"blocked_at": step.as_str()}));
            // With --continue-file, go on once that file exists; else block until killed.
            loop {
                match &continue_file {
                    Some(f) if f.exists() => break,
                    Some(_) => std::thread::sleep(Duration::from_millis(20)),
                    None => std::thread::sleep(Duration::from_secs(3600)),
                }
            }
            say(&json!({"continued_at": step.as_str()}));
        }
    }));
    if let Some(t) = opts.get("start-at-ms") {
        let t: u64 = t.parse().map_err(|e| format!("--start-at-ms: {e}"))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_millis() as u64;
        if t > now {
            std::thread::sleep(Duration::from_millis(t - now));
        }
    }
    say(&json!({"ready": std::process::id(), "owner": gate.owner()}));
    match mode.as_str() {
        "submit" => {
            let premises: Value = match opts.get("premises") {
                Some(p) => serde_json::from_str(p).map_err(|e| format!("--premises: {e}"))?,
                None => json!({}),
            };
            let amount = num("amount", 1000)?;
            let budget = match opts.get("budget") {
                Some(id) => Some(Budget {
                    id: id.clone(),
                    amount: i64::try_from(amount).map_err(|e| format!("--amount: {e}"))?,
                }),
                None => None,
            };
            let p = Proposal {
                agent: "crash-probe".into(),
                lease: json!("lease-1"),
                premises,
                effect: json!({"amount": amount, "customer": "cus_probe"}),
                request_id: Some(
                    opts.get("request-id")
                        .cloned()
                        .unwrap_or_else(|| "req-1".into()),
                ),
                budget,
            };
            let s = gate.submit(&p).map_err(|e| e.to_string())?;
            say(
                &json!({"effect_id": s.effect_id, "status": s.status.as_str(), "detail": s.detail}),
            );
        }
        "recover" => {
            let started = Instant::now();
            let rec = gate.recover().map_err(|e| e.to_string())?;
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
        }
        other => return Err(format!("unknown mode {other:?} (submit|recover)")),
    }
    Ok(())
}
