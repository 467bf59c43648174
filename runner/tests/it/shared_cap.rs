//! `runner --scenario shared_cap` end to end: two real worker processes per cell against the
//! embedded emulator, worker `a` SIGKILLed where the row says, every refund read back, and a
//! signed results file that verifies — and stops verifying when a reader would care.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use verify::receipt::KeyCheck;
use verify::shared_cap::check::check;
use verify::shared_cap::record::CapResults;

fn run(extra: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "shared_cap", "--seed", "11", "--jobs", "2"])
        .arg("--out")
        .arg(out.path())
        .arg("--site-out")
        .arg(out.path().join("site"))
        .args(extra)
        .output()
        .unwrap();
    (output, out)
}

fn load(dir: &std::path::Path) -> CapResults {
    let bytes = std::fs::read(dir.join("shared_cap.json")).unwrap();
    match verify::load::load_document(&bytes).unwrap() {
        verify::load::Document::SharedCap(f) => *f,
        _ => panic!("not a shared_cap file"),
    }
}

#[test]
fn the_matrix_runs_through_real_processes_and_verifies() {
    let (output, out) = run(&[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "runner failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verify: ok"), "{stdout}");
    // The report was rendered from the verified file.
    let page = std::fs::read_to_string(out.path().join("site/shared_cap/index.html")).unwrap();
    assert!(page.contains("Ran against the project"), "{page}");
    let file = load(out.path());
    assert_eq!(file.cells.len(), 16);
    assert_eq!(file.environment.seed, 11);
    assert_eq!(file.environment.backend, "emulator");
    for c in &file.cells {
        let at = format!("{}:{}:{}", c.crash_point, c.overlap, c.column);
        assert!(c.harness_error.is_none(), "{at}: {:?}", c.harness_error);
        assert!(c.truth.consistent(), "{at}");
        // Worker b is never killed; worker a is killed by the runner's SIGKILL unless it ended
        // by itself before its crash point (a refusal, in which case it sent nothing).
        assert!(c.tickets[1].killed_at.is_none(), "{at}");
        match &c.tickets[0].killed_at {
            Some(point) => assert_eq!(point, &c.crash_point, "{at}"),
            None => assert!(
                c.tickets[0].status.starts_with("REFUSED"),
                "{at}: {:?}",
                c.tickets[0]
            ),
        }
        assert!(c.answers_match, "{at}");
        match c.column.as_str() {
            // Each bot's own key dedupes its own resend, never the other bot's refund.
            "no_check" => {
                assert!(!c.invariant_held, "{at}");
                assert_eq!(c.truth.refunded_cents(), 4000, "{at}");
            }
            // One host, one lock around check-and-send: never over the cap.
            "hand_lock" => assert!(c.invariant_held, "{at}"),
            // The budget reserves before the send, whoever dies where.
            "interlock" => {
                assert!(c.invariant_held, "{at}");
                assert!(
                    c.tickets.iter().all(|t| t.receipt.is_some() && t.proof),
                    "{at}"
                );
            }
            _ => {}
        }
    }
    // Sequentially, hand_check reads the first refund before it sends: it holds.
    for c in file
        .cells
        .iter()
        .filter(|c| c.column == "hand_check" && c.overlap == "sequential")
    {
        assert!(c.invariant_held, "{}:{}", c.crash_point, c.overlap);
    }
}

#[test]
fn a_changed_refund_or_judgement_fails_verification() {
    let (output, out) = run(&["--no-site"]);
    assert!(output.status.success(), "{output:?}");
    let genuine = load(out.path());
    let key = ed25519_dalek::VerifyingKey::from_bytes(
        &hex::decode(&genuine.environment.public_key)
            .unwrap()
            .try_into()
            .unwrap(),
    )
    .unwrap();
    assert!(check(&genuine, &KeyCheck::Pinned(key)).ok);

    // A refund dropped from the ground truth (and the charge's total with it), re-judged.
    let i = genuine
        .cells
        .iter()
        .position(|c| c.column == "no_check")
        .unwrap();
    let mut forged = genuine.clone();
    forged.cells[i].truth.refunds.truncate(1);
    forged.cells[i].truth.amount_refunded = 2000;
    let report = check(&forged, &KeyCheck::Pinned(key));
    assert!(!report.ok);
    assert!(
        report.findings.iter().any(|f| f.starts_with("signature")),
        "{:?}",
        report.findings
    );
    // Re-signed by someone else, it no longer names the run's key.
    let other = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    verify::shared_cap::check::sign(&mut forged, &other).unwrap();
    assert!(!check(&forged, &KeyCheck::Pinned(key)).ok);
    // Self-attested, a forged judgement is still re-derived and caught.
    let mut judged = genuine.clone();
    judged.cells[i].invariant_held = !judged.cells[i].invariant_held;
    let report = check(&judged, &KeyCheck::SelfAttested);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.contains("invariant_held is recorded as")),
        "{:?}",
        report.findings
    );
}

#[test]
fn every_step_with_the_other_scenario_is_refused_with_a_reason() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--every-step", "--no-site"])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--every-step belongs to --scenario shared_cap"),
        "{stderr}"
    );
}

#[test]
fn options_of_the_other_scenario_are_refused_with_a_reason() {
    let (output, _out) = run(&["--cells", "before_send:renewal:interlock"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--cells is not available with --scenario shared_cap"),
        "{stderr}"
    );
}

#[test]
fn worker_a_killed_at_every_step_of_its_column() {
    let (output, out) = run(&["--every-step", "--no-site"]);
    assert!(output.status.success(), "{output:?}");
    let file = load(out.path());
    assert_eq!(file.cells.len(), 2 * (3 + 8 + 8 + 7));
    let mut killed = 0;
    for c in &file.cells {
        let at = format!("{}:{}:{}", c.crash_point, c.overlap, c.column);
        assert!(c.harness_error.is_none(), "{at}: {:?}", c.harness_error);
        assert!(c.answers_match, "{at}");
        killed += usize::from(c.tickets[0].killed_at.as_deref() == Some(c.crash_point.as_str()));
        if c.column == "interlock" || c.column == "hand_lock" {
            assert!(c.invariant_held, "{at}");
        }
    }
    // Sequentially, worker a always reaches the step it is killed at.
    let sequential = file
        .cells
        .iter()
        .filter(|c| c.overlap == "sequential")
        .count();
    assert!(
        killed >= sequential,
        "{killed} kills, {sequential} sequential cells"
    );
}

fn load_nemesis(path: &std::path::Path) -> verify::shared_cap::nemesis::record::CapNemesisFile {
    let bytes = verify::input::read_file(path).unwrap();
    match verify::load::load_document(&bytes).unwrap() {
        verify::load::Document::SharedCapNemesis(f) => *f,
        _ => panic!("not a shared_cap nemesis file"),
    }
}

#[test]
fn a_nemesis_campaign_runs_its_drawn_kills_through_real_processes_and_verifies() {
    let (output, out) = run(&[
        "--nemesis",
        "kill_at_step,kill_both,kill_restart",
        "--trials",
        "2",
        "--no-site",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.contains("verify: ok (24 trials"), "{stdout}");
    let file = load_nemesis(&out.path().join("nemesis/shared_cap.json.gz"));
    assert_eq!(file.plan.seed, 11);
    assert_eq!(file.trials.len(), 3 * 4 * 2);
    let mut landed = 0;
    for t in &file.trials {
        let c = &t.cell;
        assert!(c.harness_error.is_none(), "{}: {:?}", t.id, c.harness_error);
        assert!(c.truth.consistent(), "{}", t.id);
        assert!(c.answers_match, "{}", t.id);
        // Kills land only where drawn.
        assert!(c.tickets[0].killed_at.is_none() || c.tickets[0].killed_at == t.draw.kill_a);
        assert!(c.tickets[1].killed_at.is_none() || c.tickets[1].killed_at == t.draw.kill_b);
        landed += t.kills_landed();
        if c.column == "interlock" {
            assert!(c.invariant_held, "{}", t.id);
        }
    }
    assert!(landed >= 12, "{landed} kills landed in 24 trials");
    let key = ed25519_dalek::VerifyingKey::from_bytes(
        &hex::decode(&file.environment.public_key)
            .unwrap()
            .try_into()
            .unwrap(),
    )
    .unwrap();
    assert!(verify::shared_cap::nemesis::check::check(&file, &KeyCheck::Pinned(key)).ok);
}

#[test]
fn kill_while_held_kills_a_while_its_refund_is_held_and_the_held_refund_lands() {
    let (output, out) = run(&["--nemesis", "kill_while_held", "--trials", "2", "--no-site"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("verify: ok (8 trials"), "{output:?}");
    let file = load_nemesis(&out.path().join("nemesis/shared_cap.json.gz"));
    // Without the run's PostgreSQL there is no hand_pg_lock column.
    assert_eq!(
        file.plan.columns,
        ["no_check", "hand_check", "hand_lock", "interlock"]
    );
    assert!(
        output.status.success(),
        "no trial is a harness error: {output:?}"
    );
    for t in &file.trials {
        let held = t.held.as_ref().expect("a held trial records its hold");
        assert!(held.taken && held.landed, "{}: {held:?}", t.id);
        let c = &t.cell;
        assert!(c.harness_error.is_none(), "{}: {:?}", t.id, c.harness_error);
        // no_check's restart resends under the held key: Stripe's saved refund, or 409s until
        // it gives up with its outcome unknown, an unresolved ticket judged like any other.
        let a = &c.tickets[0];
        if a.status == verify::nemesis::rules::RESTART_FAILED {
            assert_eq!(c.column, "no_check", "{}", t.id);
            let why = a.restart_error.as_deref().unwrap_or_default();
            assert!(why.contains("idempotency_key_in_use"), "{}: {why}", t.id);
        }
        assert_eq!(
            c.tickets[0].killed_at.as_deref(),
            Some("request_held"),
            "{}",
            t.id
        );
        assert!(held.killed_after_ms.is_some(), "{}", t.id);
        // The held refund landed after a was gone: Stripe holds a refund of a's ticket.
        assert!(
            c.truth.of_ticket(&c.tickets[0].ticket_id).next().is_some(),
            "{}",
            t.id
        );
        // b ran after a's death by itself, whatever it decided.
        assert_eq!(c.tickets[1].first_exit, "finished by itself", "{}", t.id);
        if c.column == "interlock" {
            assert!(c.invariant_held, "{}", t.id);
        }
    }
}

#[test]
fn a_nemesis_name_of_the_other_scenario_is_refused_with_the_names_there_are() {
    let (output, _out) = run(&["--nemesis", "kill_in_flight"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown shared_cap nemesis \"kill_in_flight\"")
            && stderr.contains("kill_restart"),
        "{stderr}"
    );
}

#[test]
fn two_hosts_without_a_database_journal_is_refused_with_the_reason() {
    let (output, _out) = run(&["--two-hosts"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--two-hosts needs --journal"), "{stderr}");
}

#[test]
fn a_shared_cap_campaign_in_shards_is_refused_with_the_reason() {
    let (output, _out) = run(&["--nemesis", "all", "--trials", "2", "--shard", "1/2"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--shard slices billing_credit's campaigns only"),
        "{stderr}"
    );
}
