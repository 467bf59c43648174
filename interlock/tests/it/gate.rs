//! submit and recover against an in-memory target: every row of DESIGN §2.3.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemTarget};
use interlock::{effect_id, GateError, RecoveryOutcome, RefusalCode, Status, Step, Tier};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn happy_path_commits_once_and_then_ignores_duplicates() {
    let s = setup(Tier::One, true);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status, Status::Committed);
    assert_eq!(r.effect_id.len(), 64);
    assert_eq!(
        s.kinds(&r.effect_id),
        ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    );
    let again = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(again.status, Status::DuplicateIgnored);
    assert_eq!(s.target.landed(&r.effect_id), 1);
    let entries = s.gate.entries(&r.effect_id).unwrap();
    assert_chain(&entries);
    let d = &entries[2];
    assert_eq!(d["premises"], json!({"incident_compensation": 0}));
    assert_eq!(d["checks"]["lease_live"], json!(true));
    assert_eq!(d["checks"]["violations"], json!([]));
    assert_eq!(entries[3]["via"], json!("send"));
    assert_eq!(entries[0]["request_id"], json!("req-1"));
    let bundle = s.gate.receipt(&r.effect_id).unwrap();
    assert_eq!(bundle.format, "interlock-receipt/1");
    assert_eq!(bundle.entries, entries);
    assert!(s.gate.recover().unwrap().is_empty());
}

#[test]
fn a_different_payload_for_the_same_request_is_refused() {
    let s = setup(Tier::One, true);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let r = s.gate.submit(&proposal(5000)).unwrap();
    assert_eq!(r.effect_id, eid);
    assert_eq!(r.status, Status::Refused(RefusalCode::ConflictingPayload));
    assert_eq!(r.status.as_str(), "REFUSED:conflicting_payload");
    assert_eq!(
        s.kinds(&eid),
        [
            "PROPOSED",
            "AUTHORIZED",
            "DISPATCHED",
            "COMMITTED",
            "PROPOSED",
            "REFUSED"
        ]
    );
    assert_eq!(s.last(&eid)["code"], json!("conflicting_payload"));
    assert!(!r.detail.unwrap().contains("Nothing was ever dispatched"));
    assert_eq!(s.target.landed_total(), 1);
    assert_chain(&s.gate.entries(&eid).unwrap());
}

/// DESIGN §2: a second payload for an effect whose first proposal was authorized and never
/// dispatched (the worker died after AUTHORIZED, and its restart decided again) is refused, and
/// the refusal closes only the second proposal: its reason says nothing was sent, and the first
/// payload, submitted again, is checked and sent. The gate sends nothing on its own.
#[test]
fn a_second_payload_after_an_undispatched_first_closes_only_itself() {
    let mut s = setup(Tier::One, true);
    let armed = Arc::new(AtomicBool::new(true));
    let a = armed.clone();
    s.gate.set_observer(Box::new(move |step| {
        if step == Step::Authorized && a.swap(false, Ordering::SeqCst) {
            panic!("the worker dies right after AUTHORIZED");
        }
    }));
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.gate.submit(&proposal(1000))
    }));
    assert!(died.is_err());
    let eid = effect_id(&proposal(1000));
    assert_eq!(s.kinds(&eid), ["PROPOSED", "AUTHORIZED"]);

    let again = s.gate.submit(&proposal(830)).unwrap();
    assert_eq!(
        again.status,
        Status::Refused(RefusalCode::ConflictingPayload)
    );
    let why = again.detail.unwrap();
    assert!(why.contains("Nothing was ever dispatched"), "{why}");
    assert_eq!(s.last(&eid)["reason"], json!(why));
    assert_eq!(s.target.apply_calls(), 0);
    // Recovery has no open dispatch to settle and sends nothing.
    assert!(s.gate.recover().unwrap().is_empty());
    assert_eq!(s.target.apply_calls(), 0);

    // The first payload, submitted again, goes through the checks and is sent once.
    let first = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(first.status, Status::Committed);
    assert_eq!(s.target.landed(&eid), 1);
    assert_eq!(
        s.kinds(&eid),
        [
            "PROPOSED",
            "AUTHORIZED",
            "PROPOSED",
            "REFUSED",
            "PROPOSED",
            "AUTHORIZED",
            "DISPATCHED",
            "COMMITTED"
        ]
    );
    assert_chain(&s.gate.entries(&eid).unwrap());
}

#[test]
fn a_dead_lease_is_refused_before_anything_is_sent() {
    let s = setup(Tier::One, true);
    s.leases.revoke(&json!("lease-1"));
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status.as_str(), "REFUSED:lease");
    assert_eq!(s.kinds(&r.effect_id), ["PROPOSED", "REFUSED"]);
    let last = s.last(&r.effect_id);
    assert_eq!(last["code"], json!("lease"));
    assert_eq!(last["checks"]["lease_live"], json!(false));
    assert!(r.detail.unwrap().contains("not live"));
    assert_eq!(s.target.apply_calls(), 0);
    // The lease comes back: the same effect can now go.
    s.leases.grant(&json!("lease-1"));
    assert_eq!(
        s.gate.submit(&proposal(1000)).unwrap().status,
        Status::Committed
    );
}

#[test]
fn stale_premises_are_refused_and_retries_are_held_to_the_first_decision() {
    let s = setup(Tier::One, true);
    s.target.set_fact("incident_compensation", json!(1000));
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status.as_str(), "REFUSED:stale_premise");
    let last = s.last(&r.effect_id);
    assert_eq!(last["code"], json!("stale_premise"));
    assert_eq!(
        last["checks"]["violations"],
        json!(["incident_compensation: was 0, now 1000"])
    );
    // A retry under the same lease that re-read the facts is still checked against the
    // premises the decision was first made on.
    let mut retry = proposal(1000);
    retry.premises = json!({"incident_compensation": 1000});
    assert_eq!(
        s.gate.submit(&retry).unwrap().status.as_str(),
        "REFUSED:stale_premise"
    );
    // A new authority brings new facts.
    s.leases.grant(&json!("lease-2"));
    retry.lease = json!("lease-2");
    assert_eq!(s.gate.submit(&retry).unwrap().status, Status::Committed);
    assert_eq!(s.target.apply_calls(), 1);
    assert_chain(&s.gate.entries(&r.effect_id).unwrap());
}

#[test]
fn a_rejected_send_settles_by_lookup() {
    // Not landed: REFUSED:target_error, resolving, and never resent.
    let s = setup(Tier::One, true);
    s.target.push_faults([Fault::Rejected]);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status.as_str(), "REFUSED:target_error");
    let last = s.last(&r.effect_id);
    assert_eq!(last["resolves"], json!(true));
    assert_eq!(last["code"], json!("target_error"));
    let again = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(again.status.as_str(), "REFUSED:target_error");
    assert_eq!(s.target.apply_calls(), 1);
    assert_chain(&s.gate.entries(&r.effect_id).unwrap());

    // Landed despite the rejection: COMMITTED_ON_QUERY via failed-but-landed.
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::RejectedButLanded]);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status, Status::CommittedOnQuery);
    assert_eq!(s.last(&r.effect_id)["via"], json!("failed-but-landed"));
    assert_eq!(s.target.landed(&r.effect_id), 1);

    // Not queryable: refused on the service's word.
    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::Rejected]);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status.as_str(), "REFUSED:target_error");
}

#[test]
fn an_unknown_send_stays_open_and_recovery_retries_under_the_same_key() {
    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::LandedButUnknown]);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status, Status::InFlight);
    assert!(r.detail.as_deref().unwrap().contains("unknown"));
    assert_eq!(s.gate.open_effects().unwrap(), vec![r.effect_id.clone()]);
    // Submitting again sends nothing.
    assert_eq!(
        s.gate.submit(&proposal(1000)).unwrap().status,
        Status::InFlight
    );
    assert_eq!(s.target.apply_calls(), 1);
    let rec = s.gate.recover().unwrap();
    assert_eq!(rec.len(), 1);
    assert_eq!(
        rec[0].outcome,
        RecoveryOutcome::Resolved(Status::CommittedByRetry)
    );
    let last = s.last(&r.effect_id);
    assert_eq!(last["via"], json!("retry-idempotent"));
    assert_eq!(last["rechecked"]["lease_live"], json!(true));
    // The resend under the key says how old it took the dispatch to be, on two hosts' wall
    // clocks, and the skew it assumed between them (the dedup margin).
    assert!(last["dedup_age_ms"].as_u64().is_some(), "{last}");
    assert_eq!(last["assumed_clock_skew_ms"], json!(600_000));
    assert_eq!(
        s.target.landed(&r.effect_id),
        1,
        "the service deduped the retry"
    );
    assert_eq!(
        s.gate.submit(&proposal(1000)).unwrap().status,
        Status::DuplicateIgnored
    );
    assert_chain(&s.gate.entries(&r.effect_id).unwrap());
}

#[test]
fn tier_three_recovers_as_ambiguous_and_is_never_resent() {
    let s = setup(Tier::Three, false);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let rec = s.gate.recover_effect(&eid).unwrap();
    assert_eq!(rec, Some(RecoveryOutcome::Resolved(Status::Ambiguous)));
    assert_eq!(s.last(&eid)["code"], json!("ambiguous"));
    assert_eq!(
        s.gate.submit(&proposal(1000)).unwrap().status,
        Status::Ambiguous
    );
    assert_eq!(s.target.apply_calls(), 1);
    assert_eq!(s.gate.recover_effect(&eid).unwrap(), None);
    assert_chain(&s.gate.entries(&eid).unwrap());
}

#[test]
fn tier_one_without_lookup_and_a_failed_recheck_is_ambiguous() {
    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    s.target.set_fact("incident_compensation", json!(1000));
    let rec = s.gate.recover_effect(&eid).unwrap();
    assert_eq!(rec, Some(RecoveryOutcome::Resolved(Status::Ambiguous)));
    let last = s.last(&eid);
    assert_eq!(
        last["rechecked"]["violations"],
        json!(["incident_compensation: was 0, now 1000"])
    );
    assert_eq!(s.target.apply_calls(), 1);
}

#[test]
fn a_lookup_that_finds_it_commits_even_when_the_recheck_fails() {
    let s = setup(Tier::One, true);
    s.target.push_faults([Fault::LandedButUnknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    s.target.set_fact("incident_compensation", json!(1000));
    let rec = s.gate.recover_effect(&eid).unwrap();
    assert_eq!(
        rec,
        Some(RecoveryOutcome::Resolved(Status::CommittedOnQuery))
    );
    let last = s.last(&eid);
    assert_eq!(last["via"], json!("recovery-query"));
    assert_eq!(last["evidence"]["effect_id"], json!(eid));
    assert_eq!(last["rechecked"]["violations"].as_array().unwrap().len(), 1);
    assert_eq!(s.target.apply_calls(), 1);
}

#[test]
fn a_failed_recheck_with_nothing_found_is_refused_at_recovery() {
    for (revoke, code) in [
        (false, "stale_premise_at_recovery"),
        (true, "lease_at_recovery"),
    ] {
        let s = setup(Tier::Two, true);
        s.target.push_faults([Fault::Unknown]);
        let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
        if revoke {
            s.leases.revoke(&json!("lease-1"));
        } else {
            s.target.set_fact("incident_compensation", json!(1000));
        }
        let rec = s.gate.recover_effect(&eid).unwrap();
        let want = format!("REFUSED:{code}");
        assert_eq!(
            rec.and_then(|o| o.status()).map(Status::as_str),
            Some(want.as_str())
        );
        let last = s.last(&eid);
        assert_eq!(last["code"], json!(code));
        assert_eq!(last["resolves"], json!(true));
        assert_eq!(last["rechecked"]["lease_live"], json!(!revoke));
        assert_eq!(s.target.landed_total(), 0);
        assert_chain(&s.gate.entries(&eid).unwrap());
    }
}

#[test]
fn tier_two_not_found_and_holding_is_reapplied_once() {
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let rec = s.gate.recover_effect(&eid).unwrap();
    assert_eq!(
        rec,
        Some(RecoveryOutcome::Resolved(Status::ReappliedAfterQuery))
    );
    assert_eq!(s.last(&eid)["via"], json!("recovery-reapply"));
    assert_eq!(s.target.landed(&eid), 1);
    // The recorded payload is what was resent (I5).
    assert_eq!(s.target.apply_calls(), 2);
}

#[test]
fn a_not_found_is_trusted_only_after_max_in_flight() {
    let s = setup_with(MemTarget::new(Tier::Two, true).with_max_in_flight(Duration::from_secs(10)));
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    s.advance(2_000);
    // Counted from when recovery found the claim free (now), not from DISPATCHED.
    let found_free = s.now();
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked {
            holder,
            until_ms,
            reason,
        }) => {
            assert_eq!(holder, interlock::Holder::Target);
            assert_eq!(until_ms, found_free + 10_000);
            assert!(reason.contains("may still land"), "{reason}");
        }
        other => panic!("expected Blocked, got {other:?}"),
    }
    assert_eq!(
        s.target.apply_calls(),
        1,
        "nothing resent inside the window"
    );
    // A find inside the window is trusted at once.
    let s2 =
        setup_with(MemTarget::new(Tier::Two, true).with_max_in_flight(Duration::from_secs(10)));
    s2.target.push_faults([Fault::LandedButUnknown]);
    let eid2 = s2.gate.submit(&proposal(1000)).unwrap().effect_id;
    assert_eq!(
        s2.gate.recover_effect(&eid2).unwrap(),
        Some(RecoveryOutcome::Resolved(Status::CommittedOnQuery))
    );
    // Still inside the window a moment before its end, whatever the DISPATCHED's age.
    s.advance(9_999);
    assert!(matches!(
        s.gate.recover_effect(&eid).unwrap(),
        Some(RecoveryOutcome::Blocked { .. })
    ));
    // After the window, the resend goes, and says what it assumed.
    s.advance(1);
    assert_eq!(
        s.gate.recover_effect(&eid).unwrap(),
        Some(RecoveryOutcome::Resolved(Status::ReappliedAfterQuery))
    );
    assert_eq!(s.target.landed(&eid), 1);
    let last = s.last(&eid);
    assert_eq!(last["assumed_max_in_flight_ms"], serde_json::json!(10_000));
    assert_eq!(last["counted_from_ms"], serde_json::json!(found_free));
}

#[test]
fn an_old_tier_one_dispatch_is_recovered_as_tier_two_or_three() {
    for queryable in [true, false] {
        let s = setup_with(
            MemTarget::new(Tier::One, queryable)
                .with_dedup_window(Some(Duration::from_secs(24 * 3600))),
        );
        s.target.push_faults([Fault::Unknown]);
        let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
        s.advance(24 * 3600 * 1000 - 600_000 + 1);
        let got = s
            .gate
            .recover_effect(&eid)
            .unwrap()
            .and_then(|o| o.status());
        let want = if queryable {
            Status::ReappliedAfterQuery
        } else {
            Status::Ambiguous
        };
        assert_eq!(got, Some(want));
    }
}

#[test]
fn an_unknown_resend_stays_open_and_is_reported() {
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::Unknown, Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked { holder, reason, .. }) => {
            assert_eq!(holder, interlock::Holder::Target);
            assert!(reason.contains("unknown"));
        }
        other => panic!("expected Blocked, got {other:?}"),
    }
    assert_eq!(s.gate.open_effects().unwrap(), vec![eid.clone()]);
    assert_eq!(
        s.gate.recover_effect(&eid).unwrap(),
        Some(RecoveryOutcome::Resolved(Status::ReappliedAfterQuery))
    );
    assert_eq!(s.target.landed(&eid), 1);
}

#[test]
fn a_failed_lookup_is_reported_not_skipped() {
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::Unknown]);
    s.gate.submit(&proposal(1000)).unwrap();
    s.target.fail_queries(1);
    let rec = s.gate.recover().unwrap();
    assert_eq!(rec.len(), 1);
    assert!(
        matches!(rec[0].outcome, RecoveryOutcome::Blocked { ref holder, .. } if *holder == interlock::Holder::Target)
    );
    assert_eq!(s.target.apply_calls(), 1);
    assert_eq!(
        s.gate.recover().unwrap()[0].outcome,
        RecoveryOutcome::Resolved(Status::ReappliedAfterQuery)
    );
}

#[test]
fn rejected_resend_settles_like_a_rejected_send() {
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::Unknown, Fault::Rejected]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    assert_eq!(
        s.gate.recover_effect(&eid).unwrap(),
        Some(RecoveryOutcome::Resolved(Status::Refused(
            RefusalCode::TargetError
        )))
    );
    let last = s.last(&eid);
    assert_eq!(last["resolves"], json!(true));
    assert!(last["rechecked"].is_object());
    assert_chain(&s.gate.entries(&eid).unwrap());
}

#[test]
fn floats_are_refused_in_proposals() {
    let s = setup(Tier::One, true);
    let mut p = proposal(1000);
    p.effect = json!({"amount": 10.5});
    assert!(matches!(
        s.gate.submit(&p),
        Err(GateError::InvalidProposal {
            field: "effect",
            ..
        })
    ));
    assert_eq!(s.gate.effect_ids().unwrap().len(), 0);
}

#[test]
fn effect_ids_are_full_width_and_request_bound() {
    let a = proposal(1000);
    let b = proposal(2000);
    assert_eq!(effect_id(&a), effect_id(&b));
    assert_eq!(effect_id(&a).len(), 64);
}

#[test]
fn receipt_of_an_unknown_effect_is_an_error() {
    let s = setup(Tier::One, true);
    assert!(matches!(
        s.gate.receipt("00"),
        Err(GateError::UnknownEffect { .. })
    ));
    assert!(s.gate.entries("00").unwrap().is_empty());
}

#[test]
fn status_reads_what_the_journal_records() {
    let s = setup(Tier::One, true);
    let eid = effect_id(&proposal(1000));
    assert_eq!(s.gate.status(&eid).unwrap(), None);
    s.target.push_faults([Fault::Unknown]);
    s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(s.gate.status(&eid).unwrap(), Some(Status::InFlight));
    s.gate.recover().unwrap();
    assert_eq!(s.gate.status(&eid).unwrap(), Some(Status::CommittedByRetry));
    // A later conflicting proposal does not change what happened.
    s.gate.submit(&proposal(2000)).unwrap();
    assert_eq!(s.gate.status(&eid).unwrap(), Some(Status::CommittedByRetry));

    let s = setup(Tier::One, true);
    s.leases.revoke(&serde_json::json!("lease-1"));
    s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(
        s.gate.status(&eid).unwrap(),
        Some(Status::Refused(RefusalCode::Lease))
    );
}

#[test]
fn recover_wait_sleeps_exactly_until_the_in_flight_window_ends() {
    // Real clock here: recover_wait sleeps for real.
    let dir = tempfile::tempdir().unwrap();
    let target = MemTarget::new(Tier::Two, true).with_max_in_flight(Duration::from_millis(300));
    target.set_fact("incident_compensation", json!(0));
    target.push_faults([Fault::Unknown]);
    let gate = interlock::Gate::open_at(
        &store_at(dir.path()),
        target,
        interlock::testing::AllLive,
        key(),
        interlock::GateConfig::default(),
    )
    .unwrap();
    let eid = gate.submit(&proposal(1000)).unwrap().effect_id;
    let started = std::time::Instant::now();
    let rec = gate.recover_wait(Duration::from_secs(5)).unwrap();
    let took = started.elapsed();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0].effect_id, eid);
    assert_eq!(
        rec[0].outcome,
        RecoveryOutcome::Resolved(Status::ReappliedAfterQuery)
    );
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(gate.target().landed(&eid), 1);

    // With too little time it hands back the Blocked report.
    let dir = tempfile::tempdir().unwrap();
    let target = MemTarget::new(Tier::Two, true).with_max_in_flight(Duration::from_secs(30));
    target.set_fact("incident_compensation", json!(0));
    target.push_faults([Fault::Unknown]);
    let gate = interlock::Gate::open_at(
        &store_at(dir.path()),
        target,
        interlock::testing::AllLive,
        key(),
        interlock::GateConfig::default(),
    )
    .unwrap();
    gate.submit(&proposal(1000)).unwrap();
    let rec = gate.recover_wait(Duration::from_millis(100)).unwrap();
    assert!(matches!(rec[0].outcome, RecoveryOutcome::Blocked { .. }));
}

#[test]
fn every_send_carries_the_hash_of_its_dispatched_entry_and_a_resend_the_same_one() {
    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::LandedButUnknown]);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status, Status::InFlight);
    s.gate.recover().unwrap();
    let entries = s.gate.entries(&r.effect_id).unwrap();
    let dispatched: Vec<&str> = entries
        .iter()
        .filter(|e| e["kind"] == "DISPATCHED")
        .map(|e| e["hash"].as_str().unwrap())
        .collect();
    assert_eq!(dispatched.len(), 1);
    assert_eq!(
        s.target.anchors(&r.effect_id),
        vec![dispatched[0].to_owned(), dispatched[0].to_owned()],
        "the first send and the resend both name the one DISPATCHED entry"
    );
}

#[test]
fn an_exported_receipt_is_sealed_and_a_cut_one_fails_verification() {
    use verify::receipt::{verify_bundle, KeyCheck};
    let s = setup(Tier::One, false);
    let r = s.gate.submit(&proposal(1000)).unwrap();
    let mut bundle = s.gate.receipt(&r.effect_id).unwrap();
    let head = bundle
        .head
        .clone()
        .expect("the gate seals every receipt it exports");
    assert_eq!(head.count, 4);
    assert_eq!(head.signer, s.gate.signer());
    assert!(verify_bundle(&bundle, &KeyCheck::SelfAttested).valid);
    bundle.entries.pop();
    let report = verify_bundle(&bundle, &KeyCheck::SelfAttested);
    assert!(!report.valid);
    assert!(report
        .problems
        .iter()
        .any(|p| p.code == verify::seal::code::HEAD_MISMATCH));
}
