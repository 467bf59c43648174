//! `runner --scenario notify` end to end: one real worker process per cell against the run's
//! own Postfix instance and Stripe emulator, SIGKILLed right before the SMTP transaction or
//! right after the server's 250, the outage made while it is dead, the Maildir read once the
//! queue is empty, and a signed results file that verifies. Needs Postfix and root.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;
use verify::contract::{read_and_check, Verified};
use verify::receipt::KeyCheck;
use verify::scenarios::notify::{Answer, Notify};

fn matrix() -> (Verified<Notify>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let site = dir.path().join("site");
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "notify", "--out", out, "--site-out"])
        .arg(&site)
        .output()
        .expect("the runner binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "runner failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verify: ok"), "{stdout}");
    assert!(
        site.join("notify/index.html").exists(),
        "the report was rendered"
    );
    let bytes = std::fs::read(dir.path().join("notify.json")).unwrap();
    let verified = read_and_check::<Notify>(&bytes, &KeyCheck::SelfAttested)
        .unwrap_or_else(|_| panic!("the written file does not verify"));
    (verified, dir)
}

#[test]
#[ignore = "needs postfix (apt-get install postfix) and root"]
fn the_matrix_runs_on_a_real_mail_server_and_the_gate_answers_ambiguous_never_twice_never_wrong() {
    let (v, _dir) = matrix();
    let file = v.file();
    assert_eq!(file.cells.len(), 2 * 3 * 4);
    let mut ambiguous_with_receipt = 0;
    for (i, c) in file.cells.iter().enumerate() {
        let at = format!(
            "{}:{}:{}",
            c.planned.crash_point, c.planned.outage, c.planned.column
        );
        assert!(c.harness_error.is_none(), "{at}: {:?}", c.harness_error);
        assert_eq!(
            c.ticket.killed_at.as_deref(),
            Some(c.planned.crash_point.as_str()),
            "{at}"
        );
        let j = v.judgement(i).expect("every cell is judged");
        if c.planned.column != "interlock" {
            continue;
        }
        // The gate never sends twice and never states an outcome the mailbox contradicts.
        assert!(j.delivered <= 1, "{at}: {j:?}");
        assert_ne!(j.answer, Answer::Wrong, "{at}: {}", c.ticket.status);
        assert!(c.ticket.receipt.is_some(), "{at}");
        if c.ticket.status == "AMBIGUOUS" {
            ambiguous_with_receipt += 1;
            let kinds = c.ticket.journal_kinds.clone().unwrap_or_default();
            assert_eq!(kinds.last().map(String::as_str), Some("AMBIGUOUS"), "{at}");
        }
    }
    // A kill with the dispatch durable and the email possibly sent: AMBIGUOUS, in every cell.
    assert_eq!(ambiguous_with_receipt, 6);
    let summary = v.summary();
    // The saved decision re-sent: a second email after every after_send crash.
    assert_eq!(summary["no_check"].over, 5);
    // The careful hand-written version and the gate hand the same six cases to a person.
    assert_eq!(summary["hand_check"].handoffs, 6);
    assert_eq!(summary["interlock"].handoffs, 6);
    assert_eq!(summary["interlock"].over, 0);
    assert_eq!(summary["interlock"].wrong_answers, 0);
    // The common variant guesses: a second email without an outage, and refusals that say
    // nothing was sent while the first worker's email is in the mailbox.
    assert_eq!(summary["hand_resend"].over, 1);
    assert_eq!(summary["hand_resend"].wrong_answers, 2);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix) and root"]
fn a_campaign_kills_inside_data_and_the_gate_never_sends_twice_nor_answers_wrong() {
    use verify::scenarios::notify_nemesis::{NotifyNemesis, MID_DATA, NEMESES};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "notify", "--nemesis", "all", "--trials", "4"])
        .args(["--seed", "3", "--no-site", "--out", out])
        .output()
        .expect("the runner binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verify: ok"), "{stdout}");
    let bytes = std::fs::read(dir.path().join("notify_nemesis.json")).unwrap();
    let v = read_and_check::<NotifyNemesis>(&bytes, &KeyCheck::SelfAttested)
        .unwrap_or_else(|_| panic!("the campaign does not verify"));
    assert_eq!(v.file().cells.len(), NEMESES.len() * 4 * 4);
    let mut mid_data_kills = 0;
    for (i, c) in v.file().cells.iter().enumerate() {
        assert!(c.harness_error.is_none(), "{c:?}");
        let j = v.judgement(i).expect("every trial is judged");
        // Every drawn fault lands, but a restart kill where the restart settles without a step
        // (the gate's AMBIGUOUS, hand_check's escalation, a refusal): counted apart.
        let restart_passed_no_step =
            c.planned.nemesis == "kill_restart" && c.restart_killed_at.is_none();
        assert!(j.fired || restart_passed_no_step, "{c:?}");
        if c.planned.column == "interlock" {
            assert!(j.mail.delivered <= 1, "the gate sent twice: {c:?}");
            assert_ne!(j.mail.answer, Answer::Wrong, "{c:?}");
        }
        let first_mid_data = c.ticket.killed_at.as_deref() == Some(MID_DATA);
        if first_mid_data || c.restart_killed_at.as_deref() == Some(MID_DATA) {
            mid_data_kills += 1;
        }
        if first_mid_data {
            assert!(
                c.truth.before_outage.is_empty(),
                "the server kept a message whose DATA never ended: {c:?}"
            );
        }
    }
    assert!(mid_data_kills > 0, "seed 3 draws kills inside DATA");
    // The summary agrees: no second email and no wrong answer from the gate, within its
    // assumptions or beyond them.
    for (key, s) in v
        .summary()
        .iter()
        .filter(|(k, _)| k.ends_with(":interlock"))
    {
        assert_eq!(
            (s.over_within, s.wrong_within, s.wrong_beyond),
            (0, 0, 0),
            "{key}"
        );
    }
}
