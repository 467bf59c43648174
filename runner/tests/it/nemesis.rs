//! Nemesis trials through real processes: a small run writes a file that verifies and holds every
//! planned trial, and `--replay` runs a violating trial again to the same outcome.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use verify::nemesis::NemesisFile;

/// Runs `runner --nemesis LIST --trials N --seed S`; returns the file, verified.
fn run_nemesis(list: &str, trials: u32, seed: u64) -> NemesisFile {
    run_nemesis_on(list, trials, seed, 4)
}

/// [`run_nemesis`] with `jobs` trials at once (trials that mostly wait, as a stopped holder's).
fn run_nemesis_on(list: &str, trials: u32, seed: u64, jobs: u32) -> NemesisFile {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--nemesis", list])
        .args(["--trials", &trials.to_string(), "--seed", &seed.to_string()])
        .args(["--jobs", &jobs.to_string(), "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = out.path().join("nemesis/billing_credit.json.gz");
    let stored = std::fs::read(&path).unwrap();
    assert!(
        verify::input::is_gzip(&stored),
        "the campaign is stored compressed"
    );
    let bytes = verify::input::read_file(&path).unwrap();
    let file = verify::load::load_nemesis(&bytes).unwrap();
    let planned = list.split(',').count() * 3 * trials as usize;
    assert_eq!(file.trials.len(), planned);
    let report =
        verify::nemesis::check::verify_nemesis(&file, &verify::receipt::KeyCheck::SelfAttested);
    assert!(report.ok, "{:?}", report.findings.first());
    file
}

#[test]
fn a_violating_trial_replays_to_the_same_outcome() {
    let file = run_nemesis("revoke_in_outage,kill_random", 2, 11);
    // Every decide kill in kill_random was a real SIGKILL or found the worker already done.
    for t in file.trials.iter().filter(|t| t.nemesis == "kill_random") {
        assert_eq!(t.kills.len(), 1, "{}", t.id);
    }
    // The approval revoked while the worker was dead: no_check re-sends anyway, the careful
    // columns refuse; the judge sees the credit after the revocation.
    let violating: Vec<_> = file.trials.iter().filter(|t| t.violation).collect();
    assert!(
        violating.iter().all(|t| t.column == "no_check"),
        "{violating:?}"
    );
    let t = violating
        .iter()
        .find(|t| t.nemesis == "revoke_in_outage")
        .unwrap();
    for careful in file
        .trials
        .iter()
        .filter(|t| t.nemesis == "revoke_in_outage" && t.column != "no_check")
    {
        assert!(
            careful.outcome.starts_with("REFUSED:"),
            "{}: {}",
            careful.id,
            careful.outcome
        );
        assert_eq!(careful.ground_truth.case_credit_count, 0);
    }

    let replay = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--replay", &t.id])
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains(&format!("outcome {}", t.outcome)), "{text}");
    assert!(text.contains("violation true"), "{text}");
    assert!(text.contains(&format!("outage {}", t.outage)), "{text}");
    // The trial's line in words, not Rust's debug notation.
    let line = text.lines().next().unwrap_or_default();
    for debug in ["[", "Some(", "\""] {
        assert!(!line.contains(debug), "{debug} in {line}");
    }
}

#[test]
fn a_malformed_trial_id_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--replay", "kill_random:interlock:xyz"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// Runs `runner --replay ID [--at STEP]` and returns its report line.
fn replay(id: &str, at: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.args(["--replay", id]);
    if let Some(at) = at {
        cmd.args(["--at", at]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn steps_pauses_and_timed_kills_replay_to_the_same_outcome() {
    let file = run_nemesis(
        "kill_at_step,revoke_mid_check,note_mid_check,kill_random",
        3,
        23,
    );
    for t in &file.trials {
        assert!(t.harness_error.is_none(), "{}: {:?}", t.id, t.harness_error);
        // Within its assumptions interlock never sends twice, after a revocation, or against a
        // premise that changed while it was still checking.
        if t.column == "interlock" && t.assumption.is_none() {
            assert!(!t.violation, "{} {}", t.id, t.outcome);
            assert!(t.answer_matches, "{} {}", t.id, t.outcome);
        }
        // hand_check reads the approval and the premises afresh before it sends, as the
        // reference defines it: a change it could read is seen. Every change it misses lands
        // after its last read of that fact, and the one rule puts it beyond its assumptions.
        if t.column == "hand_check" && t.nemesis.ends_with("_mid_check") && t.violation {
            assert!(t.assumption.is_some(), "{} {}", t.id, t.outcome);
        }
        // Every trial's timeline has the decide worker's reads.
        assert!(
            t.timeline
                .iter()
                .any(|e| e.actor == "decide" && e.kind == "read"),
            "{}",
            t.id
        );
        match t.nemesis.as_str() {
            // A kill at a step lands exactly there: the worker announced it and blocked.
            "kill_at_step" => {
                let k = &t.kills[0];
                assert!(k.delivered, "{}", t.id);
                if k.after != "request_held" {
                    assert_eq!(k.last_step.as_deref(), Some(k.after.as_str()), "{}", t.id);
                }
            }
            // The world changed while the worker was paused; it was not killed.
            "revoke_mid_check" | "note_mid_check" => {
                assert!(t.kills.is_empty(), "{}", t.id);
                assert_eq!(t.faults.len(), 1, "{}", t.id);
            }
            _ => {}
        }
    }
    // Paused before interlock's last check, a revocation is seen: it refuses.
    for t in file.trials.iter().filter(|t| {
        t.nemesis == "revoke_mid_check" && t.column == "interlock" && t.assumption.is_none()
    }) {
        assert!(t.outcome.starts_with("REFUSED"), "{}: {}", t.id, t.outcome);
        assert_eq!(t.ground_truth.case_credit_count, 0, "{}", t.id);
    }

    // Replays: step kills and pauses from the id alone; timed kills at their recorded step.
    let mut replayed = 0;
    for t in &file.trials {
        let at = match t.nemesis.as_str() {
            "kill_random" => match &t.replay_at {
                Some(at) => Some(at.as_str()),
                None => continue,
            },
            _ if t.index == 0 => None,
            _ => continue,
        };
        let text = replay(&t.id, at);
        for want in [
            format!("outcome {},", t.outcome),
            format!("case credits {} ", t.ground_truth.case_credit_count),
            format!("violation {},", t.violation),
        ] {
            assert!(
                text.contains(&want),
                "{} (at {at:?}): {want} not in {text}",
                t.id
            );
        }
        replayed += 1;
    }
    assert!(replayed >= 9, "only {replayed} trials replayed");
}

/// Whether this machine can run the clock nemesis (dedup_expired needs libfaketime). Outside CI
/// a machine that cannot says so and the test is skipped; under CI (`.ci/run` installs
/// faketime) it must.
fn can_run_storage_nemeses() -> bool {
    let faketime = std::path::Path::new("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
        .exists()
        || std::path::Path::new("/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1").exists();
    if faketime {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "under CI the clock nemesis must run: libfaketime {faketime}"
    );
    eprintln!("SKIPPED: dedup_expired needs libfaketime (the faketime package)");
    false
}

#[test]
#[ignore = "needs libfaketime (dedup_expired); run with --include-ignored"]
fn the_new_nemeses_run_are_judged_and_replay() {
    if !can_run_storage_nemeses() {
        return;
    }
    let file = run_nemesis_on(
        "stop_holder,torn_tail,dedup_expired,decides_again,kill_recovery",
        2,
        31,
        16,
    );
    for t in &file.trials {
        assert!(t.harness_error.is_none(), "{}: {:?}", t.id, t.harness_error);
        if t.column == "interlock" && t.assumption.is_none() {
            assert!(!t.violation, "{} {}", t.id, t.outcome);
            assert!(t.answer_matches, "{} {}", t.id, t.outcome);
        }
        if t.unresolved {
            assert!(t.restart_error.is_some(), "{}: no reason", t.id);
        }
        let fault = |kind: &str| t.faults.iter().find(|f| f.kind == kind);
        match t.nemesis.as_str() {
            // Stopped past the claim TTL while the restart ran, then continued.
            "stop_holder" => {
                assert_eq!(fault("stop").map(|f| f.fired), Some(1), "{}", t.id);
                assert!(t.settle_ms.is_some_and(|ms| ms >= 12_000), "{}", t.id);
                let kinds: Vec<&str> = t.timeline.iter().map(|e| e.kind.as_str()).collect();
                assert!(
                    kinds.contains(&"stop") && kinds.contains(&"cont"),
                    "{}",
                    t.id
                );
            }
            // The record's last line was cut where the column keeps one; every restart read
            // past it (hand_check's report names an unreadable log instead of failing).
            "torn_tail" => {
                let torn = fault("torn_tail").unwrap();
                assert_eq!(torn.fired, u32::from(t.column != "no_check"), "{}", t.id);
                assert!(!t.unresolved, "{}: {:?}", t.id, t.restart_error);
            }
            // A resend under a key the service forgot runs again: no_check, killed after its
            // POST landed, credits twice.
            "dedup_expired" => {
                assert!(fault("dedup_expired").is_some(), "{}", t.id);
                if t.column == "no_check" && t.kills[0].after == "after_send" {
                    assert!(t.violation, "{} {}", t.id, t.outcome);
                }
            }
            // A second decision under the same key with other parameters: Stripe refuses it.
            "decides_again" if t.column == "no_check" && t.kills[0].after == "after_send" => {
                assert!(t.unresolved, "{} {}", t.id, t.outcome);
            }
            // Restart kills land at the restart's own announced steps.
            "kill_recovery" => {
                assert!(t.kills.len() >= 2, "{}", t.id);
                for k in t.kills.iter().skip(1).filter(|k| k.delivered) {
                    assert_eq!(k.last_step.as_deref(), Some(k.after.as_str()), "{}", t.id);
                }
            }
            _ => {}
        }
    }
    // Each of these replays from its id alone (the stopped holder's replay takes its stop again:
    // left out for time).
    for t in file
        .trials
        .iter()
        .filter(|t| t.index == 0 && t.nemesis != "stop_holder")
    {
        let text = replay(&t.id, None);
        for want in [
            format!("outcome {},", t.outcome),
            format!("case credits {} ", t.ground_truth.case_credit_count),
            format!("violation {},", t.violation),
        ] {
            assert!(text.contains(&want), "{}: {want} not in {text}", t.id);
        }
    }
}

/// write_enospc and fsync_eio (issue 35, item 4): the write-fault library fails the drawn write
/// or sync of the decide worker, and the record says where; a drawn call the worker never made
/// (a shorter path) is recorded as never fired. Each column meets a failed call of each kind,
/// and the counts the draws are made over are the ones the columns make.
#[test]
fn write_faults_are_drawn_over_the_writes_the_column_makes() {
    // The library is no dependency of the runner (nothing may link it): `cargo test --workspace`
    // builds it for its own tests, `cargo test -p runner` alone does not, so build it here (a
    // no-op when it is fresh; the cargo running these tests holds no lock while they run).
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "write-fault"])
        .status()
        .unwrap();
    assert!(built.success(), "cargo build -p write-fault failed");
    let file = run_nemesis("write_enospc,fsync_eio", 6, 23);
    for nemesis in ["write_enospc", "fsync_eio"] {
        let sync = nemesis == "fsync_eio";
        for column in ["no_check", "hand_check", "interlock"] {
            let trials: Vec<_> = file
                .trials
                .iter()
                .filter(|t| t.nemesis == nemesis && t.column == column)
                .collect();
            let most = verify::nemesis::draw::column_writes(column, sync);
            let mut fired = 0;
            for t in &trials {
                let f = t.faults.iter().find(|f| f.kind == nemesis).unwrap();
                let nth: u32 = f
                    .detail
                    .strip_prefix("drawn call ")
                    .and_then(|r| r.split(' ').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{}: {}", t.id, f.detail));
                assert!((1..=most).contains(&nth), "{}: {}", t.id, f.detail);
                if f.fired > 0 {
                    fired += 1;
                    assert!(f.detail.contains("failed with"), "{}", f.detail);
                } else {
                    // Never fired: the worker made fewer calls of the kind than the drawn one.
                    let made: u32 = f
                        .detail
                        .split("made ")
                        .nth(1)
                        .and_then(|r| r.split(' ').next())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("{}: {}", t.id, f.detail));
                    assert!(made < nth, "{}: {}", t.id, f.detail);
                }
            }
            assert!(fired > 0, "{nemesis} never fired on {column}");
        }
    }
}

/// Issue 35, item 1: a run sizes the exposure span from its own calibration trials (each
/// column's path from `decision_saved` to the POST's answer, measured under the run's load) and
/// records it with the paths; verify derives the span from the paths again and every exposure
/// trial's draw over it (the run's file verifies). A trial replays with the recorded span.
#[test]
fn the_exposure_span_is_sized_from_the_runs_own_paths() {
    use verify::nemesis::exposure_span::{span_from, CALIBRATION_TRIALS};
    let file = run_nemesis("exposure", 2, 31);
    let e = file.plan.exposure.clone().expect("the span is recorded");
    let calibration = e.calibration.clone().expect("sized here, not given");
    let columns: Vec<&str> = calibration.iter().map(|c| c.column.as_str()).collect();
    assert_eq!(columns, ["no_check", "hand_check", "interlock"]);
    for c in &calibration {
        assert_eq!(c.paths_us.len(), CALIBRATION_TRIALS as usize, "{c:?}");
        assert!(c.paths_us.iter().all(|us| *us > 0), "{c:?}");
    }
    assert_eq!(span_from(&calibration), Some(e.span_ms));
    let t = file.trials.first().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.args([
        "--replay",
        &t.id,
        "--exposure-span-ms",
        &e.span_ms.to_string(),
    ]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&t.id));
}

/// Shards run apart and would each size their own span: a sharded campaign with exposure
/// must be given one, and is refused before any trial runs; given one, it records it without
/// paths.
#[test]
fn a_sharded_exposure_campaign_needs_its_span_given() {
    let out = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["--scenario", "billing_credit", "--nemesis", "exposure"])
            .args(["--trials", "2", "--seed", "5", "--shard", "1/2", "--out"])
            .arg(out.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = run(&[]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("needs --exposure-span-ms"), "{stderr}");
    let given = run(&["--exposure-span-ms", "20"]);
    assert!(
        given.status.success(),
        "{}",
        String::from_utf8_lossy(&given.stderr)
    );
    let bytes = verify::input::read_file(
        &out.path()
            .join("nemesis/billing_credit.shard-1-of-2.json.gz"),
    )
    .unwrap();
    let file = verify::load::load_nemesis(&bytes).unwrap();
    let e = file.plan.exposure.unwrap();
    assert_eq!((e.span_ms, e.calibration), (20, None));
}
