//! Real processes: the `gate-crash-probe` binary is SIGKILLed at every named step of `submit`,
//! and a fresh process recovers. The target's state lives in a file, outside any process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{file_only, read_store, store_at};
use interlock::testing::FileTarget;
use interlock::Location;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const PROBE: &str = env!("CARGO_BIN_EXE_gate-crash-probe");
const KEY: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";

struct World {
    _dir: tempfile::TempDir,
    journal: Location,
    state: PathBuf,
    target_args: Vec<String>,
}

impl World {
    fn new(target_args: &[&str]) -> World {
        let dir = tempfile::tempdir().unwrap();
        World {
            journal: store_at(dir.path()),
            state: dir.path().join("target.json"),
            _dir: dir,
            target_args: target_args.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn command(&self, mode: &str, extra: &[&str]) -> Command {
        self.command_in(&[], mode, extra)
    }

    /// The probe run under `wrapper` (a program and its arguments, e.g. `unshare --time`).
    fn command_in(&self, wrapper: &[&str], mode: &str, extra: &[&str]) -> Command {
        let mut c = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(PROBE);
                c
            }
            None => Command::new(PROBE),
        };
        c.arg(mode)
            .arg("--journal")
            .arg(location_arg(&self.journal))
            .arg("--state")
            .arg(&self.state)
            .args(["--key", KEY, "--ttl-ms", "40000"])
            .args(&self.target_args)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn spawn(&self, mode: &str, extra: &[&str]) -> Probe {
        let mut child = self.command(mode, extra).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Probe { child, lines: rx }
    }

    /// Run to completion; the last JSON line printed.
    fn run(&self, mode: &str, extra: &[&str]) -> Value {
        let out = self.command(mode, extra).output().unwrap();
        assert!(
            out.status.success(),
            "probe {mode} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        serde_json::from_str(text.lines().last().unwrap()).unwrap()
    }

    /// Recover in a fresh process; returns (report, wall time).
    fn recover(&self) -> (Value, Duration) {
        let started = Instant::now();
        let v = self.run("recover", &[]);
        (v, started.elapsed())
    }

    fn landed(&self) -> usize {
        FileTarget::landed_in(&self.state).unwrap().len()
    }

    fn apply_calls(&self) -> u64 {
        FileTarget::with_state(&self.state, |s| {
            s.get("apply_calls").and_then(Value::as_u64).unwrap_or(0)
        })
        .unwrap()
    }

    fn kinds(&self) -> Vec<String> {
        journal_kinds(&self.journal)
    }
}

/// The `--journal` argument naming a store: a file path or a database URL.
fn location_arg(at: &Location) -> String {
    match at {
        Location::File(p) => p.to_string_lossy().into_owned(),
        Location::Postgres(url) => url.clone(),
    }
}

fn journal_kinds(at: &Location) -> Vec<String> {
    read_store(at)
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

struct Probe {
    child: Child,
    lines: Receiver<Value>,
}

impl Probe {
    /// Wait for a line with `key` (panics after 20 s).
    fn wait_for(&self, key: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if v.get(key).is_some() => return v,
                Ok(_) => {}
                Err(e) => panic!("probe never printed {key:?}: {e}"),
            }
        }
    }

    fn sigkill(mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "the probe must die by SIGKILL");
    }
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn statuses(report: &Value) -> Vec<String> {
    report["recovered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.get("status")
                .and_then(Value::as_str)
                .map_or_else(|| "BLOCKED".to_owned(), str::to_owned)
        })
        .collect()
}

/// Every effect's receipt passes the `verify` crate's checker with the probe's key pinned.
fn assert_receipts_valid(journal: &Location) {
    let entries = read_store(journal);
    let mut eids: Vec<String> = entries
        .iter()
        .map(|e| e["effect_id"].as_str().unwrap().to_owned())
        .collect();
    eids.sort();
    eids.dedup();
    let key: [u8; 32] = hex::decode(KEY).unwrap().try_into().unwrap();
    let pinned = verify::receipt::KeyCheck::Pinned(
        ed25519_dalek::SigningKey::from_bytes(&key).verifying_key(),
    );
    for eid in eids {
        let mine: Vec<Value> = entries
            .iter()
            .filter(|e| e["effect_id"] == eid.as_str())
            .cloned()
            .collect();
        let bundle = verify::entry::ReceiptBundle::new(eid.clone(), mine);
        let report = verify::receipt::verify_bundle(&bundle, &pinned);
        assert!(report.valid, "{eid}: {:?}", report.problems);
    }
}

fn assert_fast(report: &Value, wall: Duration) {
    let in_process = Duration::from_micros(report["elapsed_us"].as_u64().unwrap());
    assert!(
        in_process < Duration::from_secs(1),
        "recovery took {in_process:?} (TTL 40 s)"
    );
    assert!(
        wall < Duration::from_secs(5),
        "recovery process took {wall:?} (TTL 40 s)"
    );
}

#[test]
fn sigkill_at_every_step_then_a_fresh_process_recovers_tier_one() {
    // (step, what recovery resolves, what a re-submit answers)
    let cases = [
        ("proposed", vec![], "COMMITTED"),
        ("authorized", vec![], "COMMITTED"),
        (
            "dispatched",
            vec!["COMMITTED_BY_RETRY"],
            "DUPLICATE_IGNORED",
        ),
        ("sent", vec!["COMMITTED_BY_RETRY"], "DUPLICATE_IGNORED"),
        ("committed", vec![], "DUPLICATE_IGNORED"),
    ];
    for (step, recovered, resubmit) in cases {
        let w = World::new(&["--tier", "1", "--queryable"]);
        let probe = w.spawn("submit", &["--stop-at", step]);
        assert_eq!(probe.wait_for("blocked_at")["blocked_at"], step);
        probe.sigkill();
        let (report, wall) = w.recover();
        assert_eq!(statuses(&report), recovered, "step {step}");
        assert_fast(&report, wall);
        let again = w.run("submit", &[]);
        assert_eq!(again["status"], resubmit, "step {step}");
        assert_eq!(
            w.landed(),
            1,
            "step {step}: exactly one effect at the target"
        );
        let (report, _) = w.recover();
        assert_eq!(
            statuses(&report),
            Vec::<String>::new(),
            "step {step}: journal resolved"
        );
        let kinds = w.kinds();
        assert_eq!(
            kinds.iter().filter(|k| *k == "COMMITTED").count(),
            1,
            "step {step}: {kinds:?}"
        );
        assert_receipts_valid(&w.journal);
    }
}

#[test]
fn sigkill_around_the_send_tier_two_waits_only_max_in_flight() {
    // Killed before the send: not found, trusted only after max_in_flight, then reapplied.
    let w = World::new(&["--tier", "2", "--max-in-flight-ms", "400"]);
    let probe = w.spawn("submit", &["--stop-at", "dispatched"]);
    probe.wait_for("blocked_at");
    probe.sigkill();
    let killed_at = wall_ms();
    let (report, wall) = w.recover();
    let recovered_at = wall_ms();
    assert_fast(&report, wall);
    let first = &report["recovered"][0];
    let blocked = &first["blocked"];
    assert_eq!(blocked["holder"], "target", "{report}");
    let until = blocked["until_ms"].as_u64().unwrap();
    // Counted from when the recoverer found the claim free (after the kill), not from
    // DISPATCHED. One millisecond of slack: wall and monotonic clocks are read separately.
    assert!(
        killed_at + 400 <= until + 1 && until <= recovered_at + 400 + 1,
        "until {until}, killed at {killed_at}, recovered at {recovered_at}"
    );
    assert_eq!(w.apply_calls(), 0);
    // Wait exactly until the instant recovery named, as a restart would.
    let now_ms = wall_ms();
    std::thread::sleep(Duration::from_millis(until.saturating_sub(now_ms) + 5));
    let (report, _) = w.recover();
    assert_eq!(statuses(&report), ["REAPPLIED_AFTER_QUERY"]);
    assert_eq!(w.landed(), 1);
    assert_receipts_valid(&w.journal);

    // Killed after the send: found at once.
    let w = World::new(&["--tier", "2", "--max-in-flight-ms", "400"]);
    let probe = w.spawn("submit", &["--stop-at", "sent"]);
    probe.wait_for("blocked_at");
    probe.sigkill();
    let (report, wall) = w.recover();
    assert_fast(&report, wall);
    assert_eq!(statuses(&report), ["COMMITTED_ON_QUERY"]);
    assert_eq!(w.landed(), 1);
}

#[test]
fn sigkill_around_the_send_tier_three_is_ambiguous() {
    for (step, landed) in [("dispatched", 0), ("sent", 1)] {
        let w = World::new(&["--tier", "3"]);
        let probe = w.spawn("submit", &["--stop-at", step]);
        probe.wait_for("blocked_at");
        probe.sigkill();
        let (report, wall) = w.recover();
        assert_fast(&report, wall);
        assert_eq!(statuses(&report), ["AMBIGUOUS"]);
        assert_eq!(w.run("submit", &[])["status"], "AMBIGUOUS");
        assert_eq!(w.landed(), landed, "tier 3 never resends");
        assert_receipts_valid(&w.journal);
    }
}

#[test]
fn a_live_sender_blocks_recovery_and_its_death_frees_it_at_once() {
    let w = World::new(&["--tier", "1", "--queryable"]);
    let sender = w.spawn("submit", &["--stop-at", "dispatched"]);
    let ready = sender.wait_for("ready");
    sender.wait_for("blocked_at");
    let (report, _) = w.recover();
    let blocked = &report["recovered"][0]["blocked"];
    let holder = blocked["holder"].as_str().unwrap();
    assert!(holder.starts_with("process:"), "{holder}");
    assert!(
        blocked["reason"].as_str().unwrap().contains("sending"),
        "{report}"
    );
    assert!(
        holder.contains(&format!(":{}:", ready["ready"])),
        "{holder} names the pid"
    );
    let dispatched = read_store(&w.journal)[2]["ts_ms"].as_u64().unwrap();
    assert_eq!(blocked["until_ms"].as_u64().unwrap(), dispatched + 40_000);
    assert_eq!(w.run("submit", &[])["status"], "IN_FLIGHT");
    sender.sigkill();
    let (report, wall) = w.recover();
    assert_fast(&report, wall);
    assert_eq!(statuses(&report), ["COMMITTED_BY_RETRY"]);
    assert_eq!(w.landed(), 1);
}

#[test]
fn eight_processes_racing_one_effect_send_it_once() {
    let w = World::new(&["--tier", "2"]);
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 700;
    let start = start.to_string();
    let children: Vec<Child> = (0..8)
        .map(|_| {
            w.command(
                "submit",
                &["--start-at-ms", &start, "--apply-delay-ms", "150"],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    let mut results = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        results.push(last["status"].as_str().unwrap().to_owned());
    }
    let committed = results.iter().filter(|s| *s == "COMMITTED").count();
    assert_eq!(committed, 1, "{results:?}");
    assert!(
        results
            .iter()
            .all(|s| ["COMMITTED", "IN_FLIGHT", "DUPLICATE_IGNORED"].contains(&s.as_str())),
        "{results:?}"
    );
    assert_eq!(w.apply_calls(), 1, "exactly one send");
    assert_eq!(w.landed(), 1);
    let kinds = w.kinds();
    assert_eq!(
        kinds.iter().filter(|k| *k == "DISPATCHED").count(),
        1,
        "{kinds:?}"
    );
    // A process that arrives after the DISPATCHED (or the COMMITTED) answers IN_FLIGHT or
    // DUPLICATE_IGNORED without writing anything, so how many PROPOSED there are depends on the
    // scheduler; every one that was written passed the lease check.
    let proposed = kinds.iter().filter(|k| *k == "PROPOSED").count();
    let authorized = kinds.iter().filter(|k| *k == "AUTHORIZED").count();
    assert!((1..=8).contains(&proposed), "{kinds:?}");
    assert_eq!(proposed, authorized, "{kinds:?}");
    assert_receipts_valid(&w.journal);
}

#[test]
fn two_recovering_processes_one_takes_it_the_other_is_blocked() {
    let w = World::new(&["--tier", "1"]);
    let sender = w.spawn("submit", &["--stop-at", "dispatched"]);
    sender.wait_for("blocked_at");
    sender.sigkill();
    // The first recoverer resends and blocks right after the resend returned, holding the claim.
    let first = w.spawn("recover", &["--stop-at", "sent"]);
    let ready = first.wait_for("ready");
    first.wait_for("blocked_at");
    let (report, _) = w.recover();
    let blocked = &report["recovered"][0]["blocked"];
    let holder = blocked["holder"].as_str().unwrap();
    assert!(holder.starts_with("process:"), "{report}");
    assert!(
        blocked["reason"].as_str().unwrap().contains("recovering"),
        "{report}"
    );
    assert!(
        holder.contains(&format!(":{}:", ready["ready"])),
        "{holder}"
    );
    first.sigkill();
    // The killed recoverer's resend landed; the next one retries under the same key: deduped.
    let (report, wall) = w.recover();
    assert_fast(&report, wall);
    assert_eq!(statuses(&report), ["COMMITTED_BY_RETRY"]);
    assert_eq!(w.landed(), 1);
    assert_eq!(w.apply_calls(), 2);
    assert_receipts_valid(&w.journal);
}

/// Sequence 4 with real processes: a sender hangs (alive, holding its claim) under the journal's
/// real path; a recoverer opens the same journal through a symlink. One journal, one set of
/// claims: the recoverer is Blocked by the sender, and nothing is sent twice.
#[test]
fn a_recoverer_through_a_symlink_is_blocked_by_a_hung_sender() {
    if file_only("a_recoverer_through_a_symlink_is_blocked_by_a_hung_sender") {
        return;
    }
    let w = World::new(&["--tier", "2", "--max-in-flight-ms", "0"]);
    let sender = w.spawn("submit", &["--stop-at", "dispatched"]);
    let ready = sender.wait_for("ready");
    sender.wait_for("blocked_at");
    let Location::File(journal) = &w.journal else {
        unreachable!("file only")
    };
    let link = journal.with_file_name("via-link.jsonl");
    std::os::unix::fs::symlink(journal, &link).unwrap();
    let report = w.run("recover", &["--journal", link.to_str().unwrap()]);
    let blocked = &report["recovered"][0]["blocked"];
    let holder = blocked["holder"].as_str().unwrap_or_default();
    assert!(
        holder.contains(&format!(":{}:", ready["ready"])),
        "not blocked by the hung sender: {report}"
    );
    assert_eq!(w.apply_calls(), 0, "sent while the sender holds the effect");
    sender.sigkill();
    let (report, _) = w.recover();
    assert_eq!(statuses(&report), ["REAPPLIED_AFTER_QUERY"]);
    assert_eq!(w.landed(), 1);
    assert_receipts_valid(&w.journal);
}

/// Sequence 2b with real processes: the sender stalls between DISPATCHED and its send (alive,
/// holding its claim) far longer than the target's bound, then sends a request that lands after
/// the sender has gone. Counted from when the recoverer found the claim free, the late landing is
/// seen: one effect, not two.
#[test]
fn a_sender_that_stalled_before_its_send_is_not_reapplied_over() {
    let w = World::new(&["--tier", "2", "--max-in-flight-ms", "600"]);
    FileTarget::push_faults_in(&w.state, &["lands-late:300"]).unwrap();
    // Stalls 1.5 s inside apply before the request leaves, then the answer is lost.
    let out = w.run("submit", &["--apply-delay-ms", "1500"]);
    assert_eq!(out["status"], "IN_FLIGHT", "{out}");
    let mut rounds = 0;
    let status = loop {
        rounds += 1;
        assert!(rounds < 20, "not settled");
        let (report, _) = w.recover();
        let item = &report["recovered"][0];
        if let Some(s) = item["status"].as_str() {
            break s.to_owned();
        }
        let until = item["blocked"]["until_ms"].as_u64().unwrap();
        std::thread::sleep(Duration::from_millis(until.saturating_sub(wall_ms()) + 1));
    };
    assert_eq!(w.landed(), 1, "two effects");
    assert_eq!(status, "COMMITTED_ON_QUERY");
    assert_receipts_valid(&w.journal);
}

/// Two processes of one boot in different time namespaces (containers on one host) do not share
/// a monotonic clock. The first recoverer counts the in-flight bound from its take-over on the
/// host's clock and records that instant; a second one in a namespace 100 000 s ahead read it as
/// its own: the bound had long passed, "not found" was trusted at once and the effect reapplied
/// while the first request (landing 1.5 s after it left) was still executing: two landings. A
/// claim record names the clock it was read on (boot id and the namespace's offsets), and an
/// instant on another clock is not inherited.
#[test]
#[ignore = "needs root (unshare --time); run with --include-ignored"]
fn a_recoverer_in_another_time_namespace_does_not_inherit_the_hosts_instant() {
    let unshare = ["unshare", "--time", "--monotonic", "100000", "--fork"];
    let can = Command::new(unshare[0])
        .args(&unshare[1..])
        .arg("true")
        .status()
        .is_ok_and(|s| s.success());
    if !can {
        assert!(
            std::env::var_os("CI").is_none(),
            "under CI (root) `unshare --time` must work"
        );
        eprintln!("SKIPPED: `unshare --time` is not allowed here (needs root or user namespaces)");
        return;
    }
    let w = World::new(&["--tier", "2", "--max-in-flight-ms", "2000"]);
    FileTarget::push_faults_in(&w.state, &["lands-late:1500"]).unwrap();
    let out = w.run("submit", &[]);
    assert_eq!(out["status"], "IN_FLIGHT", "{out}");
    let (first, _) = w.recover();
    assert!(first["recovered"][0]["blocked"].is_object(), "{first}");
    let mut rounds = 0;
    let status = loop {
        rounds += 1;
        assert!(rounds < 20, "not settled");
        let out = w.command_in(&unshare, "recover", &[]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let report: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let item = &report["recovered"][0];
        if let Some(s) = item["status"].as_str() {
            break s.to_owned();
        }
        let until = item["blocked"]["until_ms"].as_u64().unwrap();
        std::thread::sleep(Duration::from_millis(until.saturating_sub(wall_ms()) + 1));
    };
    // Let any request still executing land before counting.
    std::thread::sleep(Duration::from_millis(1_600));
    let _ = w.apply_calls();
    assert_eq!(w.landed(), 1, "two effects ({status})");
    assert_eq!(status, "COMMITTED_ON_QUERY");
}
