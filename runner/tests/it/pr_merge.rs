//! `runner --scenario pr_merge` end to end: one real worker process per cell against the run's
//! forge (real git repositories on loopback), SIGKILLed before or after its merge request, the
//! outage made while it is dead, the repository read back with git, and a signed results file
//! that verifies; and its nemesis campaign. Needs the `git` CLI.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;
use verify::contract::{read_and_check, Verified};
use verify::receipt::KeyCheck;
use verify::scenarios::pr_merge::PrMerge;

fn runner(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .output()
        .expect("the runner binary starts")
}

fn matrix() -> (Verified<PrMerge>, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let site = dir.path().join("site");
    let output = runner(&[
        "--scenario",
        "pr_merge",
        "--jobs",
        "4",
        "--out",
        out,
        "--site-out",
        site.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "runner failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verify: ok"), "{stdout}");
    assert!(
        site.join("pr_merge/index.html").exists(),
        "the report was rendered"
    );
    let bytes = std::fs::read(dir.path().join("pr_merge.json")).unwrap();
    let verified = read_and_check::<PrMerge>(&bytes, &KeyCheck::SelfAttested)
        .unwrap_or_else(|_| panic!("the written file does not verify"));
    (verified, stdout)
}

#[test]
fn the_matrix_runs_through_real_processes_and_git_and_verifies_with_every_tier_two_outcome() {
    let (v, _) = matrix();
    let file = v.file();
    assert_eq!(file.cells.len(), 2 * 4 * 4);
    assert_eq!(
        file.environment.get("backend").map(String::as_str),
        Some("forge")
    );
    for (i, c) in file.cells.iter().enumerate() {
        let at = format!(
            "{}:{}:{}",
            c.planned.crash_point, c.planned.outage, c.planned.column
        );
        assert!(c.harness_error.is_none(), "{at}: {:?}", c.harness_error);
        // The runner's SIGKILL ended the first worker at the planned point.
        assert_eq!(
            c.ticket.killed_at.as_deref(),
            Some(c.planned.crash_point.as_str()),
            "{at}"
        );
        let j = v.judgement(i).expect("every cell is judged");
        if c.planned.column == "interlock" {
            assert!(
                j.invariant_held && j.answer_matches,
                "{at}: {j:?} {}",
                c.ticket.status
            );
            assert!(c.ticket.receipt.is_some(), "{at}");
        }
    }
    let status_of = |crash: &str, outage: &str, column: &str| {
        file.cells
            .iter()
            .find(|c| {
                c.planned.crash_point == crash
                    && c.planned.outage == outage
                    && c.planned.column == column
            })
            .map(|c| c.ticket.status.clone())
            .unwrap_or_default()
    };
    // A crash after the merge left: the lookup finds it.
    assert_eq!(
        status_of("after_send", "none", "interlock"),
        "COMMITTED_ON_QUERY"
    );
    // A crash before it left: after the in-flight bound, not found, re-checked and resent.
    assert_eq!(
        status_of("before_send", "none", "interlock"),
        "REAPPLIED_AFTER_QUERY"
    );
    assert_eq!(
        status_of("before_send", "base_moved", "interlock"),
        "REAPPLIED_AFTER_QUERY"
    );
    // The head moved while the worker was dead: the re-checked premise refuses.
    assert!(
        status_of("before_send", "unreviewed_push", "interlock").starts_with("REFUSED:"),
        "{}",
        status_of("before_send", "unreviewed_push", "interlock")
    );
    // Someone else merged while the worker was dead: hand_check's refusal and the gate's
    // receipt (its re-checked state) say so; the service's bare 405, all native and no_check
    // answer, does not.
    for (i, c) in file.cells.iter().enumerate() {
        if (c.planned.crash_point.as_str(), c.planned.outage.as_str())
            == ("before_send", "merged_by_other")
        {
            let j = v.judgement(i).expect("every cell is judged");
            let gated_or_careful = matches!(c.planned.column.as_str(), "hand_check" | "interlock");
            assert_eq!(
                j.answer_matches, gated_or_careful,
                "{}: {}",
                c.planned.column, c.ticket.status
            );
        }
    }
    // no_check merges the unreviewed head: it sends no sha.
    let no_check = v.summary().get("no_check").expect("no_check's summary");
    assert!(no_check.unreviewed > 0, "{no_check:?}");
}

#[test]
fn a_campaign_draws_every_nemesis_and_verifies_with_no_interlock_violation_within_assumptions() {
    use verify::scenarios::pr_merge_nemesis::{PrMergeNemesis, NEMESES};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let output = runner(&[
        "--scenario",
        "pr_merge",
        "--nemesis",
        "all",
        "--trials",
        "2",
        "--seed",
        "5",
        "--jobs",
        "4",
        "--no-site",
        "--out",
        out,
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verify: ok"), "{stdout}");
    let bytes = std::fs::read(dir.path().join("pr_merge_nemesis.json")).unwrap();
    let v = read_and_check::<PrMergeNemesis>(&bytes, &KeyCheck::SelfAttested)
        .unwrap_or_else(|_| panic!("the campaign does not verify"));
    assert_eq!(v.file().cells.len(), NEMESES.len() * 4 * 2);
    for (key, s) in v.summary() {
        if key.ends_with(":interlock") {
            assert_eq!(s.violations_within, 0, "{key}: {s:?}");
            assert_eq!(s.wrong_within, 0, "{key}: {s:?}");
        }
    }
    // The gate's restart killed inside its recovery (seed 5 draws its lookup, after the first
    // worker was killed before its merge request): the kill landed, the next restart settled.
    let mut inside = 0;
    for (i, c) in v.file().cells.iter().enumerate() {
        let at = c.restart_killed_at.as_deref();
        if c.planned.column == "interlock" && matches!(at, Some("premises" | "approval" | "lookup"))
        {
            inside += 1;
            let j = v.judgement(i).expect("every trial is judged");
            assert!(
                j.fired && j.merge.invariant_held && j.merge.answer_matches,
                "{c:?}"
            );
        }
    }
    assert!(inside > 0, "no gate restart was killed inside its recovery");
    // The service's precondition refuses native's merge after a push mid-check, and no_check,
    // which sends no sha, merges the unreviewed head (beyond its assumptions).
    let push = |column: &str| {
        v.summary()
            .get(&format!("push_mid_check:{column}"))
            .cloned()
            .unwrap()
    };
    assert_eq!(
        push("native").violations_within + push("native").violations_beyond,
        0
    );
    assert!(
        push("no_check").violations_beyond > 0,
        "{:?}",
        push("no_check")
    );
    // A campaign names an unknown nemesis with the ones it has.
    let bad = runner(&["--scenario", "pr_merge", "--nemesis", "yolo", "--out", out]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pr_merge has no nemesis \"yolo\""),
        "{stderr}"
    );
}

#[test]
fn help_names_pr_merge_among_the_scenarios() {
    let output = runner(&["--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("pr_merge"), "{help}");
}

#[test]
fn help_lists_every_nemesis_of_the_contract_scenarios() {
    let output = runner(&["--help"]);
    // clap wraps long help: compare with the line breaks and indentation folded away.
    let help: String = String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let names = verify::scenarios::pr_merge_nemesis::NEMESES
        .iter()
        .chain(verify::scenarios::notify_nemesis::NEMESES.iter());
    for name in names {
        assert!(help.contains(name), "--help does not name {name}");
    }
    assert!(help.contains("DIR/pr_merge_nemesis.json"), "{help}");
    assert!(help.contains("DIR/notify_nemesis.json"), "{help}");
}

#[test]
fn a_held_merge_landed_inside_the_restarts_checks_makes_hand_check_wrong_and_not_the_gate() {
    use verify::scenarios::pr_merge_nemesis::PrMergeNemesis;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let output = runner(&[
        "--scenario",
        "pr_merge",
        "--nemesis",
        "release_mid_restart",
        "--trials",
        "4",
        "--seed",
        "2",
        "--no-site",
        "--out",
        out,
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let bytes = std::fs::read(dir.path().join("pr_merge_nemesis.json")).unwrap();
    let v = read_and_check::<PrMergeNemesis>(&bytes, &KeyCheck::SelfAttested)
        .unwrap_or_else(|_| panic!("the campaign does not verify"));
    for (i, c) in v.file().cells.iter().enumerate() {
        let j = v.judgement(i).expect("every trial is judged");
        assert!(j.fired, "the release landed where drawn: {c:?}");
        assert_eq!(c.released_at, c.planned.draw.release_at, "{c:?}");
    }
    let row = |column: &str| {
        v.summary()
            .get(&format!("release_mid_restart:{column}"))
            .cloned()
            .unwrap()
    };
    // hand_check does not wait out the in-flight bound: every release step lies after its
    // lookup and before its merge request, inside the bound, so each of its answers is wrong.
    let hc = row("hand_check");
    assert!(hc.within > 0, "{hc:?}");
    assert_eq!(hc.wrong_within, hc.within, "{hc:?}");
    // The gate looks its merge up again once the bound has passed: never wrong, never twice.
    let gate = row("interlock");
    assert_eq!(
        (gate.wrong_within, gate.violations_within, gate.wrong_beyond),
        (0, 0, 0),
        "{gate:?}"
    );
}
