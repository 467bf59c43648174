//! The billing_credit scenario against the in-process Stripe emulator: premise arithmetic on a
//! fixture built through the API, every list page read, hand_check's refusal paths, the
//! CreditTarget and the approval store, and every (crash, outage, column) cell of the reference
//! page run in-process with the crash simulated by a panicking hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Env;
use interlock::{LeaseStore, Target};
use scenarios::billing_credit::{
    default_rows, facts, ground_truth, load_decision, observations, read_hand_check_log,
    run_outage, stripe_ids, Account, ApprovalStore, CaseFile, Column, CrashPoint, CreditTarget,
    Outage, JOURNAL_FILE, RECEIPT_FILE,
};
use serde_json::{json, Value};
use std::path::Path;
use stripe::{Client, Params};
use verify::results::Candidates;
use verify::scenarios::billing_credit::{answer_matches, invariant_held, want};

fn adjust(client: &Client, customer: &str, amount: i64, metadata: &[(&str, &str)]) -> String {
    let mut p = Params::new().set("amount", amount).set("currency", "usd");
    for (k, v) in metadata {
        p = p.set(&format!("metadata[{k}]"), v);
    }
    let r = client
        .post(
            &format!("/v1/customers/{customer}/balance_transactions"),
            &p,
            None,
        )
        .unwrap();
    r.body["id"].as_str().unwrap().to_owned()
}

fn credit_note(client: &Client, invoice: &str, cents: i64, incident: &str) -> String {
    let r = client
        .post(
            "/v1/credit_notes",
            &Params::new()
                .set("invoice", invoice)
                .set("amount", cents)
                .set("credit_amount", cents)
                .set("metadata[incident]", incident),
            None,
        )
        .unwrap();
    r.body["id"].as_str().unwrap().to_owned()
}

fn first_invoice(client: &Client, customer: &str) -> String {
    let all = client
        .list_all("/v1/invoices", &Params::new().set("customer", customer))
        .unwrap();
    all.last().unwrap()["id"].as_str().unwrap().to_owned()
}

fn case_credit_count(env: &Env, case: &CaseFile) -> u32 {
    ground_truth(&env.client, case).unwrap().case_credit_count
}

/// The original's offline fixture, built for real: own credit −1000 (consumed by a renewal:
/// applied_to_invoice +1000), a credit note's own credit_note-type transaction, adjustments −500
/// (no incident), −300 (this incident), +700 (a debit), notes 1000 issued (this incident), 400
/// void (this incident), 250 issued (another incident): unscoped 2050, scoped 1300.
#[test]
fn premise_arithmetic_on_a_mixed_fixture() {
    let mut env = Env::new();
    let (case, _) = env.open("fixture");
    let before = facts(&env.client, &case).unwrap();
    assert_eq!(before.subscription_status, "active");
    assert_eq!(before.incident_compensation, 0);

    let inc = case.incident.as_str();
    adjust(
        &env.client,
        &case.customer,
        -1000,
        &[("case_id", &case.case_id), ("incident", inc)],
    );
    run_outage(&env.client, &case, Outage::Renewal, &mut env.rng).unwrap();
    adjust(
        &env.client,
        &case.customer,
        -500,
        &[("case_id", "case-other")],
    );
    adjust(
        &env.client,
        &case.customer,
        -300,
        &[("case_id", "case-other"), ("incident", inc)],
    );
    adjust(
        &env.client,
        &case.customer,
        700,
        &[("case_id", "case-debit"), ("incident", inc)],
    );
    let invoice = first_invoice(&env.client, &case.customer);
    credit_note(&env.client, &invoice, 1000, inc);
    let void = credit_note(&env.client, &invoice, 400, inc);
    env.client
        .post(
            &format!("/v1/credit_notes/{void}/void"),
            &Params::new(),
            None,
        )
        .unwrap();
    credit_note(&env.client, &invoice, 250, "INC-000000");

    let truth = ground_truth(&env.client, &case).unwrap();
    let kinds: Vec<&str> = truth
        .balance_transactions
        .iter()
        .map(|t| t.kind.as_str())
        .collect();
    assert!(kinds.contains(&"applied_to_invoice"), "{kinds:?}");
    assert!(kinds.contains(&"credit_note"), "{kinds:?}");
    assert_eq!(truth.compensation_by_others, 2050);
    assert_eq!(truth.incident_compensation, 1300);
    // The premise leaves the other cases' adjustments to them; the judge does not: every credit
    // to the case's customer that billing did not make counts as the case's, whatever its tags.
    assert_eq!(truth.case_credit_count, 3);
    assert_eq!(truth.case_credit_cents, 1800);

    let now = facts(&env.client, &case).unwrap();
    assert_eq!(now.incident_compensation, 1300);
    let seen = observations(&env.client, &case).unwrap();
    assert_eq!(seen.compensation_by_others, 2050);
    assert_eq!(seen.incident_compensation, 1300);
    assert_eq!(seen.customer_balance, truth.customer_balance);

    let ids = stripe_ids(&case, &truth);
    assert_eq!(ids.case_credits.len(), 3);
    assert_eq!(ids.credit_notes.len(), 3);
    assert!(ids.invoices.len() >= 2);
}

/// A compensation that sits beyond the first page (100 objects) still counts.
#[test]
fn every_list_page_is_read() {
    let mut env = Env::new();
    let (case, _) = env.open("pages");
    adjust(
        &env.client,
        &case.customer,
        -200,
        &[("case_id", "case-other"), ("incident", &case.incident)],
    );
    for _ in 0..105 {
        adjust(&env.client, &case.customer, 1, &[]);
    }
    let first_page = env
        .client
        .get(
            &format!("/v1/customers/{}/balance_transactions", case.customer),
            &Params::new().set("limit", 100),
        )
        .unwrap();
    assert_eq!(first_page.body["has_more"], true);
    assert_eq!(
        facts(&env.client, &case).unwrap().incident_compensation,
        200
    );
    let truth = ground_truth(&env.client, &case).unwrap();
    assert_eq!(truth.balance_transactions.len(), 106);
}

#[test]
fn hand_check_refuses_a_revoked_approval_without_posting() {
    let mut env = Env::new();
    let (mut case, cell) = env.open("revoked");
    let (_, decision) = env.decide(&case);
    case.approval.revoked = Some(verify::results::Revocation {
        by: "support-lead".into(),
        clock_time: None,
    });
    case.save(&cell).unwrap();
    let status = env
        .send(Column::HandCheck, &cell, &case, &decision)
        .unwrap();
    assert_eq!(status, "REFUSED:approval");
    assert_eq!(case_credit_count(&env, &case), 0);
    let log = read_hand_check_log(&cell).unwrap();
    let steps: Vec<&str> = log.iter().map(|l| l["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["lookup", "approval"]);
    assert_eq!(log[1]["refused"]["revoked"]["by"], "support-lead");
    assert_eq!(log[1]["phase"], "decide");
    assert_eq!(log[1]["agent"], "billing-credit-agent");
}

#[test]
fn hand_check_refuses_a_stale_premise_after_billing_credited_the_incident() {
    let mut env = Env::new();
    let (case, cell) = env.open("stale");
    let (_, decision) = env.decide(&case);
    env.decide_and_crash(
        Column::HandCheck,
        &cell,
        &case,
        &decision,
        CrashPoint::BeforeSend,
    );
    run_outage(&env.client, &case, Outage::BillingCredit, &mut env.rng).unwrap();
    let report = env.restart(Column::HandCheck, &cell).unwrap();
    assert_eq!(report.status, "REFUSED:stale_premise");
    assert_eq!(case_credit_count(&env, &case), 0);
    let log = report.hand_check_log.unwrap();
    let last = log.last().unwrap();
    assert_eq!(last["step"], "premises");
    assert_eq!(last["phase"], "restart");
    assert_eq!(last["refused"]["was"]["incident_compensation"], 0);
    assert_eq!(last["refused"]["now"]["incident_compensation"], 1000);
    // The decide phase logged `send` and died before the POST.
    assert!(log
        .iter()
        .any(|l| l["step"] == "send" && l["phase"] == "decide"));
    assert!(!log.iter().any(|l| l["step"] == "sent"));
}

#[test]
fn hand_check_finds_its_own_credit_by_lookup() {
    let mut env = Env::new();
    let (case, cell) = env.open("lookup");
    let (_, decision) = env.decide(&case);
    let first = env
        .send(Column::HandCheck, &cell, &case, &decision)
        .unwrap();
    assert_eq!(first, "CREDITED");
    let again = env.restart(Column::HandCheck, &cell).unwrap();
    assert_eq!(again.status, "FOUND_BY_LOOKUP");
    let truth = ground_truth(&env.client, &case).unwrap();
    assert_eq!(truth.case_credit_count, 1);
    assert_eq!(again.detail["credit"], json!(truth.case_credits[0].id));
    let log = again.hand_check_log.unwrap();
    let sent = log.iter().find(|l| l["step"] == "sent").unwrap();
    assert_eq!(sent["credit"], json!(truth.case_credits[0].id));
    assert_eq!(sent["replayed"], false);
    let send = log.iter().find(|l| l["step"] == "send").unwrap();
    assert_eq!(
        send["key"],
        json!(format!("goodwill-credit-{}", case.case_id))
    );
    assert_eq!(
        log.last().unwrap()["found"],
        json!(truth.case_credits[0].id)
    );
}

#[test]
fn no_check_restart_replays_under_the_same_key() {
    let mut env = Env::new();
    let (case, cell) = env.open("replay");
    let (_, decision) = env.decide(&case);
    env.decide_and_crash(
        Column::NoCheck,
        &cell,
        &case,
        &decision,
        CrashPoint::AfterSend,
    );
    let report = env.restart(Column::NoCheck, &cell).unwrap();
    assert_eq!(report.status, "REPLAYED_BY_STRIPE");
    assert_eq!(report.detail["replayed"], true);
    assert_eq!(case_credit_count(&env, &case), 1);
}

#[test]
fn credit_target_checks_premises_applies_and_queries() {
    let mut env = Env::new();
    let (case, _) = env.open("target");
    let (_, decision) = env.decide(&case);
    let premises = serde_json::to_value(&decision.premises).unwrap();
    let target = CreditTarget::new(
        env.client.clone(),
        case.clone(),
        env.settings.max_in_flight,
        None,
    );
    let caps = target.capabilities();
    assert_eq!(caps.tier(), interlock::Tier::One);
    assert!(caps.lookup);
    assert_eq!(
        caps.dedup_window(),
        Some(std::time::Duration::from_secs(86_400))
    );
    assert_eq!(caps.max_in_flight, Some(env.settings.max_in_flight));
    let eid = "ab".repeat(32);
    let effect = json!({"customer": case.customer, "amount": 1000, "description": "goodwill"});

    assert!(target.check_premises(&eid, &premises).unwrap().is_empty());
    assert_eq!(target.query(&eid, &effect).unwrap(), None);

    let anchor = "d1".repeat(32);
    // Without its DISPATCHED entry's hash, nothing is posted.
    assert!(matches!(
        target.apply(&eid, &effect),
        Err(interlock::TargetError::Rejected { .. })
    ));
    let evidence = target.apply_dispatched(&eid, &effect, &anchor).unwrap();
    assert_eq!(evidence["status"], "ok");
    assert_eq!(evidence["amount"], 1000);
    let credit = evidence["credit"].as_str().unwrap().to_owned();
    let again = target.apply_dispatched(&eid, &effect, &anchor).unwrap();
    assert_eq!(again["status"], "already_processed");
    assert_eq!(again["credit"], json!(credit));

    // Own credit is excluded from the premise; the query finds it by effect id only.
    assert!(target.check_premises(&eid, &premises).unwrap().is_empty());
    let found = target.query(&eid, &effect).unwrap().unwrap();
    assert_eq!(found["credit"], json!(credit));
    assert_eq!(target.query(&"cd".repeat(32), &effect).unwrap(), None);
    let truth = ground_truth(&env.client, &case).unwrap();
    assert_eq!(
        truth.case_credits[0].effect_id.as_deref(),
        Some(eid.as_str())
    );
    assert_eq!(
        truth.case_credits[0].dispatch.as_deref(),
        Some(anchor.as_str()),
        "the credit carries its dispatch's hash in metadata[interlock_dispatch]"
    );

    // Another incident's credit note does not violate; this incident's does, once.
    let invoice = first_invoice(&env.client, &case.customer);
    credit_note(&env.client, &invoice, 1000, "INC-000000");
    assert!(target.check_premises(&eid, &premises).unwrap().is_empty());
    credit_note(&env.client, &invoice, 1000, &case.incident);
    assert_eq!(
        target.check_premises(&eid, &premises).unwrap(),
        ["incident_compensation: was 0, now 1000"]
    );

    // A rejected request maps to Rejected.
    let bad = json!({"customer": "cus_missing", "amount": 1000, "description": "x"});
    match target.apply_dispatched(&"ef".repeat(32), &bad, &anchor) {
        Err(interlock::TargetError::Rejected { reason }) => assert!(reason.contains("cus_missing")),
        other => panic!("expected Rejected, got {other:?}"),
    }
}

#[test]
fn approval_store_rereads_the_case_file() {
    let mut env = Env::new();
    let (mut case, cell) = env.open("approval");
    let store = ApprovalStore::new(&cell);
    let lease = json!(case.approval.id);
    let effect =
        |amount: i64| json!({"customer": case.customer, "amount": amount, "description": "x"});
    let check = store.check(&lease, &effect(1000)).unwrap();
    assert!(check.live);
    assert_eq!(check.grant.unwrap()["max_cents"], 1000);
    assert!(!store.check(&lease, &effect(1001)).unwrap().live);
    assert!(!store.check(&lease, &effect(0)).unwrap().live);
    assert!(
        !store
            .check(&json!("approval-other"), &effect(1000))
            .unwrap()
            .live
    );
    case.approval.revoked = Some(verify::results::Revocation {
        by: "support-lead".into(),
        clock_time: None,
    });
    case.save(&cell).unwrap();
    let revoked = store.check(&lease, &effect(1000)).unwrap();
    assert!(!revoked.live);
    assert_eq!(revoked.grant.unwrap()["revoked"]["by"], "support-lead");
    std::fs::remove_file(cell.join("case.json")).unwrap();
    assert!(store.check(&lease, &effect(1000)).is_err());
}

/// An approval revoked while the worker is dead is seen at recovery: the gate looks the credit
/// up, finds nothing, and refuses.
#[test]
fn interlock_recovery_sees_an_approval_revoked_during_the_outage() {
    let mut env = Env::new();
    let (mut case, cell) = env.open("revoked-at-recovery");
    let (_, decision) = env.decide(&case);
    env.decide_and_crash(
        Column::Interlock,
        &cell,
        &case,
        &decision,
        CrashPoint::BeforeSend,
    );
    case.approval.revoked = Some(verify::results::Revocation {
        by: "support-lead".into(),
        clock_time: None,
    });
    case.save(&cell).unwrap();
    let report = env.restart(Column::Interlock, &cell).unwrap();
    assert_eq!(report.status, "REFUSED:lease_at_recovery");
    assert_eq!(case_credit_count(&env, &case), 0);
    // "Not found" is trusted only once max_in_flight has passed since the restart found the
    // claim free: the restart slept until exactly that instant, once, instead of polling.
    let recoveries = report.detail["recoveries"].as_array().unwrap();
    assert_eq!(recoveries.len(), 2, "{recoveries:?}");
    assert!(
        recoveries[0]["blocked"]["until_ms"].as_u64().is_some(),
        "{recoveries:?}"
    );
    assert_eq!(recoveries[1]["resolved"], "REFUSED:lease_at_recovery");
    let max = env.settings.max_in_flight.as_millis() as u64;
    // One Blocked then the resolution (above) shows it waited once; the bound only says the
    // wait was about max_in_flight, with room for a loaded machine's late wake-up.
    assert!(
        report.waited_ms > 0 && report.waited_ms <= max + 2_000,
        "{}",
        report.waited_ms
    );
    // The refusal names the bound it rests on and the instant it counted from, which is after
    // the DISPATCHED (the kill came later), and it was written no earlier than the bound allows.
    let entries = &report.receipt.as_ref().unwrap().entries;
    let dispatched = entries.iter().find(|e| e["kind"] == "DISPATCHED").unwrap();
    let refused = entries.last().unwrap();
    assert_eq!(refused["assumed_max_in_flight_ms"], json!(max));
    let from = refused["counted_from_ms"].as_u64().unwrap();
    assert!(from >= dispatched["ts_ms"].as_u64().unwrap(), "{refused}");
    assert!(
        refused["ts_ms"].as_u64().unwrap() >= from + max,
        "{refused}"
    );
}

fn expected(crash: CrashPoint, outage: Outage, column: Column) -> &'static str {
    use Column::*;
    use CrashPoint::*;
    match (crash, outage, column) {
        (BeforeSend, Outage::BillingCredit, NoCheck) => "CREDITED",
        (BeforeSend, Outage::BillingCredit, HandCheck) => "REFUSED:stale_premise",
        (BeforeSend, Outage::BillingCredit, Interlock) => "REFUSED:stale_premise_at_recovery",
        (BeforeSend, _, NoCheck | HandCheck) => "CREDITED",
        (AfterSend, _, NoCheck) => "REPLAYED_BY_STRIPE",
        (AfterSend, _, HandCheck) => "FOUND_BY_LOOKUP",
        (AfterSend, _, Interlock) => "COMMITTED_BY_RETRY",
        (BeforeSend, _, Interlock) => "COMMITTED_BY_RETRY",
        (other, ..) => panic!("{} is not a matrix crash point", other.as_str()),
    }
}

/// The reference page's "Premise candidates" table: (decision, crash, restart) per candidate.
fn expected_candidates(crash: CrashPoint, outage: Outage) -> [(i64, i64, i64); 3] {
    match (crash, outage) {
        (CrashPoint::BeforeSend, Outage::BillingCredit) => {
            [(0, 0, -1000), (0, 0, 1000), (0, 0, 1000)]
        }
        (CrashPoint::BeforeSend, Outage::UnrelatedCredit) => {
            [(0, 0, -1000), (0, 0, 1000), (0, 0, 0)]
        }
        (CrashPoint::AfterSend, _) => [(0, -1000, 0), (0, 0, 0), (0, 0, 0)],
        (CrashPoint::BeforeSend, _) => [(0, 0, 0), (0, 0, 0), (0, 0, 0)],
        (other, _) => panic!("{} is not a matrix crash point", other.as_str()),
    }
}

fn triple(d: &Candidates, c: &Candidates, r: &Candidates) -> [(i64, i64, i64); 3] {
    [
        (d.customer_balance, c.customer_balance, r.customer_balance),
        (
            d.compensation_by_others,
            c.compensation_by_others,
            r.compensation_by_others,
        ),
        (
            d.incident_compensation,
            c.incident_compensation,
            r.incident_compensation,
        ),
    ]
}

fn journal_kinds(cell: &Path) -> Vec<String> {
    std::fs::read_to_string(cell.join(JOURNAL_FILE))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn run_cell(env: &mut Env, crash: CrashPoint, outage: Outage, column: Column) {
    let label = format!("{crash}/{outage}/{column}");
    let (case, cell) = env.open(&label);
    let (account, decision) = env.decide(&case);
    account.save(&cell).unwrap();
    env.decide_and_crash(column, &cell, &case, &decision, crash);
    assert_eq!(Account::load(&cell).unwrap(), account);
    assert_eq!(load_decision(&cell).unwrap(), decision);
    let at_crash = observations(&env.client, &case).unwrap();
    let record = run_outage(&env.client, &case, outage, &mut env.rng).unwrap();
    let at_restart = observations(&env.client, &case).unwrap();
    let report = env.restart(column, &cell).unwrap();
    let truth = ground_truth(&env.client, &case).unwrap();

    assert_eq!(
        report.status,
        expected(crash, outage, column),
        "{label}: {report:?}"
    );
    let w = want(
        &truth,
        &case.case_id,
        &case.incident,
        case.approval.max_cents,
    );
    let held = invariant_held(&truth, w);
    let violated_row = crash == CrashPoint::BeforeSend
        && outage == Outage::BillingCredit
        && column == Column::NoCheck;
    assert_eq!(held, !violated_row, "{label}: want {w:?}, truth {truth:?}");
    assert!(answer_matches(&report.status, &truth), "{label}");
    assert_eq!(
        triple(&account.observed, &at_crash, &at_restart),
        expected_candidates(crash, outage),
        "{label}"
    );

    assert!(record.renewal_invoice.is_some(), "{label}");
    match outage {
        Outage::BillingCredit => {
            assert_eq!(
                record.credit_note_incident.as_deref(),
                Some(case.incident.as_str())
            )
        }
        Outage::UnrelatedCredit => {
            let other = record.credit_note_incident.clone().unwrap();
            assert!(
                other.starts_with("INC-") && other != case.incident,
                "{label}"
            )
        }
        Outage::Proration => {
            assert_eq!(
                record.downgraded_to_price.as_deref(),
                Some(case.prices.small.as_str())
            );
            let renewal = truth
                .invoices
                .iter()
                .find(|i| Some(&i.id) == record.renewal_invoice.as_ref())
                .unwrap();
            assert_eq!(
                renewal.total, 1000,
                "{label}: proration renewal {renewal:?}"
            );
        }
        Outage::Renewal => assert!(record.credit_note.is_none()),
    }

    if column == Column::Interlock {
        let receipt = report.receipt.clone().unwrap();
        assert_eq!(Some(&receipt.effect_id), report.effect_id.as_ref());
        assert_eq!(report.journal_kinds, journal_kinds(&cell), "{label}");
        assert_eq!(
            &report.journal_kinds[..3],
            ["PROPOSED", "AUTHORIZED", "DISPATCHED"],
            "{label}"
        );
        let verified = &report.detail["verify"];
        assert_eq!(verified["valid"], true, "{label}: {verified}");
        assert_eq!(verified["signed"], true, "{label}: {verified}");
        assert_eq!(
            verified["happened"] == json!(true),
            truth.case_credit_count > 0,
            "{label}: {verified}"
        );
        let saved: verify::entry::ReceiptBundle =
            serde_json::from_slice(&std::fs::read(cell.join(RECEIPT_FILE)).unwrap()).unwrap();
        assert_eq!(saved, receipt);
        if report.status == "COMMITTED_BY_RETRY" {
            assert_eq!(report.via.as_deref(), Some("retry-idempotent"));
            let committed = receipt.entries.last().unwrap();
            assert_eq!(
                committed["evidence"]["credit"],
                json!(truth.case_credits[0].id)
            );
            assert_eq!(
                truth.case_credits[0].effect_id.as_deref(),
                report.effect_id.as_deref()
            );
        } else {
            assert_eq!(report.via, None);
            assert_eq!(
                report.journal_kinds.last().map(String::as_str),
                Some("REFUSED")
            );
        }
    }
    if column == Column::HandCheck {
        let log = read_hand_check_log(&cell).unwrap();
        assert!(log.iter().any(|l| l["phase"] == "restart"), "{label}");
    }
}

/// Every cell of the reference page's six rows, each column, crash simulated in-process.
#[test]
fn reference_rows_in_process() {
    let mut env = Env::new();
    for (crash, outage) in default_rows() {
        for column in Column::ALL {
            run_cell(&mut env, crash, outage, column);
        }
    }
}

/// The two combinations the reference page did not run.
#[test]
fn after_send_with_credit_note_outages() {
    let mut env = Env::new();
    for outage in [Outage::BillingCredit, Outage::UnrelatedCredit] {
        for column in Column::ALL {
            let label = format!("after_send/{outage}/{column}");
            let (case, cell) = env.open(&label);
            let (_, decision) = env.decide(&case);
            env.decide_and_crash(column, &cell, &case, &decision, CrashPoint::AfterSend);
            run_outage(&env.client, &case, outage, &mut env.rng).unwrap();
            let report = env.restart(column, &cell).unwrap();
            let truth = ground_truth(&env.client, &case).unwrap();
            let w = want(
                &truth,
                &case.case_id,
                &case.incident,
                case.approval.max_cents,
            );
            // The credit landed before billing's note: one credit is what the rule allows.
            assert_eq!(w.count, 1, "{label}");
            assert!(invariant_held(&truth, w), "{label}: {report:?}");
            assert!(
                answer_matches(&report.status, &truth),
                "{label}: {report:?}"
            );
            if column == Column::Interlock && outage == Outage::BillingCredit {
                // The premise moved, but the gate looks the credit up before refusing.
                assert_eq!(report.status, "COMMITTED_ON_QUERY", "{label}");
            }
        }
    }
}
