//! Stripe misbehaving under the scenario: 5xx, a response lost after the credit landed, and a
//! send slow enough to time out and land later. Each test has its own emulator, so fault rules
//! never leak between tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Env;
use interlock::{Target, TargetError};
use scenarios::billing_credit::{ground_truth, Column, CreditTarget};
use serde_json::json;
use stripe::emulator::{FaultAction, FaultRule};

const CREDIT_PATH: &str = "/v1/customers/*/balance_transactions";

#[test]
fn credit_target_maps_a_server_error_to_unknown() {
    let mut env = Env::new();
    let (case, _) = env.open("5xx");
    let target = CreditTarget::new(
        env.client.clone(),
        case.clone(),
        env.settings.max_in_flight,
        None,
    );
    env.emulator
        .faults()
        .add(FaultRule::new("POST", CREDIT_PATH, FaultAction::Error { status: 503 }).times(1));
    let eid = "ab".repeat(32);
    let effect = json!({"customer": case.customer, "amount": 1000, "description": "x"});
    match target.apply_dispatched(&eid, &effect, &"d1".repeat(32)) {
        Err(TargetError::Unknown { reason }) => assert!(reason.contains("503"), "{reason}"),
        other => panic!("expected Unknown, got {other:?}"),
    }
    assert_eq!(target.query(&eid, &effect).unwrap(), None);
    assert_eq!(
        target
            .apply_dispatched(&eid, &effect, &"d1".repeat(32))
            .unwrap()["status"],
        "ok"
    );
    assert_eq!(
        ground_truth(&env.client, &case).unwrap().case_credit_count,
        1
    );
}

/// The credit lands but its answer is lost. no_check and hand_check see an error in the decide
/// phase; the gate leaves its dispatch open. Every restart ends with exactly one credit.
#[test]
fn a_lost_answer_after_the_credit_landed_ends_with_one_credit_in_every_column() {
    let mut env = Env::new();
    for column in Column::ALL {
        let (case, cell) = env.open(&format!("dropped/{column}"));
        let (_, decision) = env.decide(&case);
        let rule = env
            .emulator
            .faults()
            .add(FaultRule::new("POST", CREDIT_PATH, FaultAction::CommitThenDrop).times(1));
        let decided = env.send(column, &cell, &case, &decision);
        assert_eq!(env.emulator.faults().fired(rule), 1, "{column}");
        match column {
            Column::Interlock => assert_eq!(decided.unwrap(), "IN_FLIGHT"),
            _ => {
                let err = decided.unwrap_err().to_string();
                assert!(err.contains("outcome unknown"), "{column}: {err}");
            }
        }
        let report = env.restart(column, &cell).unwrap();
        let expected = match column {
            Column::NoCheck => "REPLAYED_BY_STRIPE",
            Column::HandCheck => "FOUND_BY_LOOKUP",
            Column::Interlock => "COMMITTED_BY_RETRY",
        };
        assert_eq!(report.status, expected, "{column}: {report:?}");
        let truth = ground_truth(&env.client, &case).unwrap();
        assert_eq!(truth.case_credit_count, 1, "{column}");
    }
}

/// The send times out at the client and lands later. The gate's resend meets Stripe's 409
/// `idempotency_key_in_use` (a request in flight, not an unknown answer), waits the stated
/// instant, asks again under the key and is answered by the replay; the COMMITTED entry lists
/// both answers.
#[test]
fn a_send_that_times_out_and_lands_later_is_committed_once() {
    let mut env = Env::new();
    let (case, cell) = env.open("slow");
    let (_, decision) = env.decide(&case);
    let slow = common::CLIENT_TIMEOUT.as_millis() as u64 + 300;
    env.emulator
        .faults()
        .add(FaultRule::new("POST", CREDIT_PATH, FaultAction::Delay { ms: slow }).times(1));
    let status = env
        .send(Column::Interlock, &cell, &case, &decision)
        .unwrap();
    assert_eq!(status, "IN_FLIGHT");
    let report = env.restart(Column::Interlock, &cell).unwrap();
    assert_eq!(report.status, "COMMITTED_BY_RETRY", "{report:?}");
    let recoveries = report.detail["recoveries"].as_array().unwrap();
    let blocked = &recoveries[0]["blocked"];
    assert_eq!(blocked["holder"], "target", "{recoveries:?}");
    assert!(
        blocked["reason"]
            .as_str()
            .unwrap()
            .contains("idempotency_key_in_use"),
        "{recoveries:?}"
    );
    assert!(report.waited_ms > 0);
    let truth = ground_truth(&env.client, &case).unwrap();
    assert_eq!(truth.case_credit_count, 1);
    let committed = report.receipt.unwrap().entries.last().cloned().unwrap();
    assert_eq!(
        committed["evidence"]["credit"],
        json!(truth.case_credits[0].id)
    );
    let answers = committed["resend_answers"]["answers"].as_array().unwrap();
    assert_eq!(answers[0]["answer"], "in_use", "{answers:?}");
    assert!(
        answers[0]["said"]
            .as_str()
            .unwrap()
            .contains("idempotency_key_in_use"),
        "{answers:?}"
    );
    assert_eq!(answers.last().unwrap()["answer"], "applied", "{answers:?}");
}

/// Sequence 2a against the emulator: the credit POST executes 2 s past its client's timeout and
/// lands while the approval has been revoked. Counted from DISPATCHED, the first version trusted
/// "not found" after the bound and refused the effect before the credit landed; counted from
/// when the restart found the claim free, the restart sees the late credit: the journal agrees
/// with Stripe.
#[test]
fn a_credit_landing_after_its_client_gave_up_is_seen_by_a_restart_after_a_revocation() {
    let mut env = Env::new();
    let (mut case, cell) = env.open("late-after-revocation");
    let (_, decision) = env.decide(&case);
    let timeout = common::CLIENT_TIMEOUT.as_millis() as u64;
    let late = timeout + 2_000;
    assert!(late > env.settings.max_in_flight.as_millis() as u64);
    env.emulator
        .faults()
        .add(FaultRule::new("POST", CREDIT_PATH, FaultAction::Delay { ms: late }).times(1));
    let status = env
        .send(Column::Interlock, &cell, &case, &decision)
        .unwrap();
    assert_eq!(status, "IN_FLIGHT");
    case.approval.revoked = Some(verify::results::Revocation {
        by: "support-lead".into(),
        clock_time: None,
    });
    case.save(&cell).unwrap();
    let report = env.restart(Column::Interlock, &cell).unwrap();
    let truth = ground_truth(&env.client, &case).unwrap();
    assert_eq!(truth.case_credit_count, 1, "the late credit landed");
    assert_eq!(report.status, "COMMITTED_ON_QUERY", "{report:?}");
}
