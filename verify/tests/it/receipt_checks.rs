//! Receipt verification: derived fields, one negative test per problem code, and the tamper
//! scenarios of issue 2 (each must fail naming the entry).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use synthetic::seal_chain;
use verify::entry::{compute_hash, ReceiptBundle};
use verify::problem::code;
use verify::receipt::{verify_bundle, verify_bundles, Happened, KeyCheck, ReceiptReport};
use verify::scenarios::billing_credit::billing_credit_effect_id;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[1u8; 32])
}

fn pinned() -> KeyCheck {
    KeyCheck::Pinned(key().verifying_key())
}

const CASE: &str = "case-0123456789";

fn eid() -> String {
    billing_credit_effect_id(CASE)
}

fn effect() -> Value {
    json!({"customer": "cus_1", "amount": 1000, "description": "Goodwill credit"})
}

fn checks() -> Value {
    json!({"lease_live": true, "grant": {"id": "approval-case-0123456789", "max_cents": 1000, "revoked": null}, "violations": []})
}

fn proposed() -> Value {
    json!({"kind": "PROPOSED", "agent": "a", "lease": "approval-case-0123456789",
           "premises": {"subscription_status": "active"}, "effect": effect(),
           "request_id": format!("goodwill-credit:{CASE}")})
}
fn authorized() -> Value {
    json!({"kind": "AUTHORIZED", "lease": "approval-case-0123456789"})
}
fn dispatched() -> Value {
    json!({"kind": "DISPATCHED", "effect": effect(), "lease": "approval-case-0123456789",
           "premises": {"subscription_status": "active"}, "checks": checks()})
}
fn committed(via: &str) -> Value {
    json!({"kind": "COMMITTED", "via": via, "evidence": {"credit": "cbtxn_1", "amount": 1000}, "rechecked": checks()})
}
fn refused(resolves: bool) -> Value {
    json!({"kind": "REFUSED", "code": "stale_premise_at_recovery", "reason": "The premise changed.",
           "resolves": resolves, "rechecked": {"lease_live": true, "grant": null, "violations": ["x"]}})
}
fn ambiguous() -> Value {
    json!({"kind": "AMBIGUOUS", "code": "ambiguous", "reason": "Nobody can know.", "rechecked": checks()})
}

fn build(bodies: Vec<Value>) -> ReceiptBundle {
    seal_chain(&key(), &eid(), 1_000, bodies)
}

/// [`build`] with the first entry written at `ts_ms` (an entry that rests on an in-flight
/// bound must come after the bound has passed since it was counted).
fn build_from(ts_ms: i64, bodies: Vec<Value>) -> ReceiptBundle {
    seal_chain(&key(), &eid(), ts_ms, bodies)
}

/// [`build_from`], then sealed.
fn sealed_from(ts_ms: i64, bodies: Vec<Value>) -> ReceiptBundle {
    let mut b = build_from(ts_ms, bodies);
    verify::binding::seal_bundle(&mut b, &key(), 1_000_000).unwrap();
    b
}

/// [`build`], then sealed: only a sealed receipt can prove an effect did not happen.
fn sealed(bodies: Vec<Value>) -> ReceiptBundle {
    let mut b = build(bodies);
    verify::binding::seal_bundle(&mut b, &key(), 1_000_000).unwrap();
    b
}

fn good() -> ReceiptBundle {
    build(vec![
        proposed(),
        authorized(),
        dispatched(),
        committed("send"),
    ])
}

fn codes(r: &ReceiptReport) -> Vec<(Option<usize>, String)> {
    r.problems
        .iter()
        .map(|p| (p.entry, p.code.clone()))
        .collect()
}

/// The bundle fails with `code` (at `entry`, when given) and never comes out valid.
#[track_caller]
fn fails(b: &ReceiptBundle, key: &KeyCheck, want: &str, entry: Option<usize>) -> ReceiptReport {
    let r = verify_bundle(b, key);
    assert!(!r.valid, "expected {want}, but the receipt is valid");
    assert!(
        r.problems
            .iter()
            .any(|p| p.code == want && (entry.is_none() || p.entry == entry)),
        "expected {want} at {entry:?}, got {:?}",
        codes(&r)
    );
    for p in &r.problems {
        assert!(
            p.message.contains(&b.effect_id),
            "message names the effect: {}",
            p.message
        );
    }
    r
}

fn obj(b: &mut ReceiptBundle, i: usize) -> &mut serde_json::Map<String, Value> {
    b.entries[i].as_object_mut().unwrap()
}

fn rehash(b: &mut ReceiptBundle, i: usize) {
    let h = compute_hash(obj(b, i)).unwrap();
    obj(b, i).insert("hash".into(), json!(h));
}

#[test]
fn a_committed_chain_is_valid_with_every_derived_field() {
    let r = verify_bundle(&good(), &pinned());
    assert!(r.valid, "{:?}", r.problems);
    assert!(r.chain_consistent);
    assert_eq!(r.signed, Some(true));
    assert_eq!(r.key, "pinned");
    assert_eq!(r.happened, Happened::Yes);
    assert!(r.happened_once);
    assert_eq!(r.authorized_when_fired, Some(true));
    assert_eq!(r.assumptions_held, Some(true));
    assert_eq!(r.refused, None);
    assert_eq!(r.via.as_deref(), Some("send"));
    assert_eq!(r.final_kind.as_deref(), Some("COMMITTED"));
    assert_eq!(
        r.evidence,
        Some(json!({"credit": "cbtxn_1", "amount": 1000}))
    );
    assert_eq!(
        r.journal_kinds,
        ["PROPOSED", "AUTHORIZED", "DISPATCHED", "COMMITTED"]
    );
    let self_attested = verify_bundle(&good(), &KeyCheck::SelfAttested);
    assert!(self_attested.valid);
    assert_eq!(self_attested.key, "self-attested");
    assert_eq!(serde_json::to_value(&r).unwrap()["happened"], json!(true));
}

#[test]
fn refused_ambiguous_and_open_chains_derive_happened() {
    let r = verify_bundle(
        &sealed(vec![proposed(), authorized(), dispatched(), refused(true)]),
        &pinned(),
    );
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.happened, Happened::No);
    assert_eq!(
        r.refused.as_ref().unwrap().code.as_deref(),
        Some("stale_premise_at_recovery")
    );
    // The refused send never landed, so nothing that counts was fired.
    assert_eq!(r.authorized_when_fired, None);
    assert_eq!(r.assumptions_held, None);
    assert_eq!(
        r.rechecked_at_recovery.as_ref().unwrap()["violations"],
        json!(["x"])
    );

    let r = verify_bundle(
        &build(vec![proposed(), authorized(), dispatched(), ambiguous()]),
        &pinned(),
    );
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.happened, Happened::Unknown);
    assert_eq!(serde_json::to_value(r.happened).unwrap(), json!("unknown"));

    let r = verify_bundle(
        &build(vec![proposed(), authorized(), dispatched()]),
        &pinned(),
    );
    assert!(r.valid);
    assert_eq!(r.happened, Happened::Unknown);

    let r = verify_bundle(&sealed(vec![proposed(), refused(false)]), &pinned());
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.happened, Happened::No);
    assert!(r.refused.is_some());
}

#[test]
fn an_unsealed_receipt_never_proves_that_nothing_happened() {
    // Cut after AUTHORIZED and without its head, a committed credit's receipt reads as "nothing
    // sent": its entries say so, but nothing proves they are all of them.
    let committed = sealed(vec![
        proposed(),
        authorized(),
        dispatched(),
        committed("send"),
    ]);
    let mut cut = committed.clone();
    cut.entries.truncate(2);
    cut.head = None;
    for key in [pinned(), KeyCheck::SelfAttested] {
        let r = verify_bundle(&cut, &key);
        assert!(r.valid, "{:?}", r.problems);
        assert_eq!(r.entries_say, Happened::No);
        assert_eq!(r.happened, Happened::Unknown);
        assert_eq!(
            serde_json::to_value(&r).unwrap()["happened"],
            json!("unknown")
        );
    }
    // A refusal, unsealed, is no proof either; sealed, it is.
    let r = verify_bundle(&build(vec![proposed(), refused(false)]), &pinned());
    assert_eq!(r.happened, Happened::Unknown);
    assert!(r.refused.is_some());
    // A head that does not hold is no seal: the cut receipt with its old head fails, and proves
    // nothing either way.
    let mut kept_head = committed.clone();
    kept_head.entries.truncate(2);
    let r = verify_bundle(&kept_head, &pinned());
    assert!(r
        .problems
        .iter()
        .any(|p| p.code == verify::seal::code::HEAD_MISMATCH));
    assert_eq!(r.happened, Happened::Unknown);
    // Sealed and complete, a commit is still a commit.
    assert_eq!(verify_bundle(&committed, &pinned()).happened, Happened::Yes);
}

#[test]
fn a_resend_counts_with_its_own_checks() {
    let mut resend = committed("retry-idempotent");
    resend["rechecked"]["lease_live"] = json!(false);
    let r = fails(
        &build(vec![proposed(), authorized(), dispatched(), resend]),
        &pinned(),
        code::UNAUTHORIZED_SEND,
        Some(3),
    );
    assert_eq!(r.authorized_when_fired, Some(false));
    let r = verify_bundle(
        &build(vec![
            proposed(),
            authorized(),
            dispatched(),
            committed("retry-idempotent"),
        ]),
        &pinned(),
    );
    assert!(r.valid);
    assert_eq!(r.authorized_when_fired, Some(true));
}

#[test]
fn batched_reports_equal_single_reports() {
    let mut bad = good();
    obj(&mut bad, 2).insert("sig".into(), json!("00".repeat(64)));
    let bundles = vec![
        good(),
        bad.clone(),
        build(vec![proposed(), authorized(), dispatched(), refused(true)]),
    ];
    let batched = verify_bundles(&bundles, &pinned());
    for (b, r) in bundles.iter().zip(&batched) {
        assert_eq!(&verify_bundle(b, &pinned()), r);
    }
    assert!(!batched[1].valid);
    assert_eq!(batched[1].signed, Some(false));
}

// ---- one negative test per problem code ----

#[test]
fn unknown_format() {
    let mut b = good();
    b.format = "interlock-receipt/2".into();
    fails(&b, &pinned(), code::UNKNOWN_FORMAT, None);
}

#[test]
fn bad_effect_id() {
    let upper = eid().to_uppercase();
    let b = seal_chain(
        &key(),
        &upper,
        0,
        vec![proposed(), authorized(), dispatched(), committed("send")],
    );
    fails(&b, &pinned(), code::BAD_EFFECT_ID, None);
}

#[test]
fn empty_receipt() {
    fails(&build(vec![]), &pinned(), code::EMPTY_RECEIPT, None);
}

#[test]
fn malformed_entry() {
    let mut b = good();
    b.entries[1] = json!(5);
    fails(&b, &pinned(), code::MALFORMED_ENTRY, Some(1));
    let mut no_code = refused(true);
    no_code.as_object_mut().unwrap().remove("code");
    fails(
        &build(vec![proposed(), authorized(), dispatched(), no_code]),
        &pinned(),
        code::MALFORMED_ENTRY,
        Some(3),
    );
    let mut no_hash = good();
    obj(&mut no_hash, 0).remove("hash");
    fails(&no_hash, &pinned(), code::MALFORMED_ENTRY, Some(0));
}

#[test]
fn unknown_version() {
    let mut p = proposed();
    p["v"] = json!(2);
    fails(
        &build(vec![p, authorized()]),
        &pinned(),
        code::UNKNOWN_VERSION,
        Some(0),
    );
}

#[test]
fn foreign_entry() {
    let mut a = authorized();
    a["effect_id"] = json!("0".repeat(64));
    fails(
        &build(vec![proposed(), a]),
        &pinned(),
        code::FOREIGN_ENTRY,
        Some(1),
    );
}

#[test]
fn unknown_kind() {
    fails(
        &build(vec![proposed(), json!({"kind": "EXPLODED"})]),
        &pinned(),
        code::UNKNOWN_KIND,
        Some(1),
    );
}

#[test]
fn hash_mismatch() {
    let mut b = good();
    obj(&mut b, 2)["effect"]["amount"] = json!(100_000);
    fails(&b, &pinned(), code::HASH_MISMATCH, Some(2));
}

#[test]
fn uncanonical_entry() {
    let mut b = good();
    obj(&mut b, 1).insert("ts_extra".into(), json!(1.5));
    fails(&b, &pinned(), code::UNCANONICAL_ENTRY, Some(1));
}

#[test]
fn broken_link() {
    let mut b = good();
    b.entries.remove(1);
    fails(&b, &pinned(), code::BROKEN_LINK, Some(1));
}

#[test]
fn bad_signer() {
    let mut b = good();
    obj(&mut b, 3).insert("signer".into(), json!("zz"));
    rehash(&mut b, 3);
    fails(&b, &pinned(), code::BAD_SIGNER, Some(3));
}

#[test]
fn weak_key() {
    let mut b = good();
    let mut identity = [0u8; 32];
    identity[0] = 1;
    obj(&mut b, 3).insert("signer".into(), json!(hex::encode(identity)));
    rehash(&mut b, 3);
    fails(&b, &KeyCheck::SelfAttested, code::WEAK_KEY, Some(3));
}

#[test]
fn wrong_signer() {
    let other = SigningKey::from_bytes(&[2u8; 32]);
    let b = seal_chain(
        &other,
        &eid(),
        0,
        vec![proposed(), authorized(), dispatched(), committed("send")],
    );
    let r = fails(&b, &pinned(), code::WRONG_SIGNER, Some(0));
    // Every entry is named, and the signatures themselves are fine.
    assert_eq!(
        r.problems
            .iter()
            .filter(|p| p.code == code::WRONG_SIGNER)
            .count(),
        4
    );
    assert!(verify_bundle(&b, &KeyCheck::SelfAttested).valid);
}

#[test]
fn mixed_signers() {
    let mut b = good();
    let other = SigningKey::from_bytes(&[2u8; 32]);
    verify::entry::seal(obj(&mut b, 3), &other).unwrap();
    fails(&b, &KeyCheck::SelfAttested, code::MIXED_SIGNERS, Some(3));
}

#[test]
fn bad_signature() {
    let mut b = good();
    let sig = obj(&mut b, 2)["sig"].as_str().unwrap().to_owned();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('0') { "1" } else { "0" },
        &sig[1..]
    );
    obj(&mut b, 2).insert("sig".into(), json!(flipped));
    let r = fails(&b, &pinned(), code::BAD_SIGNATURE, Some(2));
    assert_eq!(r.signed, Some(false));
    let mut missing = good();
    obj(&mut missing, 1).remove("sig");
    let r = fails(&missing, &pinned(), code::BAD_SIGNATURE, Some(1));
    assert_eq!(
        r.signed,
        Some(false),
        "an entry without a signature is not signed"
    );
    assert_eq!(verify_bundle(&build(vec![]), &pinned()).signed, Some(false));
    // The same signature bytes spelled in uppercase hex are not accepted.
    let mut upper = good();
    let sig = obj(&mut upper, 0)["sig"].as_str().unwrap().to_uppercase();
    obj(&mut upper, 0).insert("sig".into(), json!(sig));
    fails(&upper, &pinned(), code::BAD_SIGNATURE, Some(0));
}

#[test]
fn first_not_proposed() {
    fails(
        &build(vec![authorized(), proposed()]),
        &pinned(),
        code::FIRST_NOT_PROPOSED,
        Some(0),
    );
}

#[test]
fn dispatch_without_authorization() {
    fails(
        &build(vec![proposed(), dispatched(), committed("send")]),
        &pinned(),
        code::DISPATCH_WITHOUT_AUTHORIZATION,
        Some(1),
    );
}

#[test]
fn dispatch_while_open() {
    let r = fails(
        &build(vec![
            proposed(),
            authorized(),
            dispatched(),
            dispatched(),
            committed("send"),
        ]),
        &pinned(),
        code::DISPATCH_WHILE_OPEN,
        Some(3),
    );
    assert!(!r.happened_once);
}

#[test]
fn dispatch_after_commit() {
    fails(
        &build(vec![
            proposed(),
            authorized(),
            dispatched(),
            committed("send"),
            dispatched(),
        ]),
        &pinned(),
        code::DISPATCH_AFTER_COMMIT,
        Some(4),
    );
}

#[test]
fn commit_without_dispatch() {
    fails(
        &build(vec![proposed(), authorized(), committed("send")]),
        &pinned(),
        code::COMMIT_WITHOUT_DISPATCH,
        Some(2),
    );
}

#[test]
fn multiple_commits() {
    let r = fails(
        &build(vec![
            proposed(),
            authorized(),
            dispatched(),
            committed("send"),
            committed("send"),
        ]),
        &pinned(),
        code::MULTIPLE_COMMITS,
        Some(4),
    );
    assert!(!r.happened_once);
}

#[test]
fn resolves_nothing() {
    fails(
        &build(vec![proposed(), authorized(), refused(true)]),
        &pinned(),
        code::RESOLVES_NOTHING,
        Some(2),
    );
}

#[test]
fn ambiguous_without_dispatch() {
    fails(
        &build(vec![proposed(), authorized(), ambiguous()]),
        &pinned(),
        code::AMBIGUOUS_WITHOUT_DISPATCH,
        Some(2),
    );
}

#[test]
fn payload_changed() {
    let mut d = dispatched();
    d["effect"]["amount"] = json!(900);
    fails(
        &build(vec![proposed(), authorized(), d, committed("send")]),
        &pinned(),
        code::PAYLOAD_CHANGED,
        Some(2),
    );
}

#[test]
fn effect_id_mismatch() {
    let mut p = proposed();
    p["request_id"] = json!("goodwill-credit:case-ffffffffff");
    fails(
        &build(vec![p, authorized(), dispatched(), committed("send")]),
        &pinned(),
        code::EFFECT_ID_MISMATCH,
        Some(0),
    );
}

#[test]
fn unauthorized_send() {
    for (field, value) in [
        ("/checks/lease_live", json!(false)),
        ("/checks/lease_live", json!("true")),
        ("/checks/grant/revoked", json!({"by": "support-lead"})),
        ("/checks/grant/max_cents", json!(999)),
    ] {
        let mut d = dispatched();
        *d.pointer_mut(field).unwrap() = value;
        let r = fails(
            &build(vec![proposed(), authorized(), d, committed("send")]),
            &pinned(),
            code::UNAUTHORIZED_SEND,
            Some(2),
        );
        assert_eq!(r.authorized_when_fired, Some(false));
    }
}

#[test]
fn premises_violated_at_send() {
    let mut d = dispatched();
    d["checks"]["violations"] = json!(["subscription_status: was active, now canceled"]);
    fails(
        &build(vec![proposed(), authorized(), d, committed("send")]),
        &pinned(),
        code::PREMISES_VIOLATED,
        Some(2),
    );
    let mut missing = dispatched();
    missing["checks"]
        .as_object_mut()
        .unwrap()
        .remove("violations");
    let r = fails(
        &build(vec![proposed(), authorized(), missing, committed("send")]),
        &pinned(),
        code::PREMISES_VIOLATED,
        Some(2),
    );
    assert_eq!(r.assumptions_held, Some(false));
}

#[test]
fn unknown_via() {
    fails(
        &build(vec![
            proposed(),
            authorized(),
            dispatched(),
            committed("teleport"),
        ]),
        &pinned(),
        code::UNKNOWN_VIA,
        Some(3),
    );
}

// ---- the tamper scenarios of issue 2 ----

#[test]
fn tamper_edit_one_field() {
    let mut b = good();
    obj(&mut b, 3)["evidence"]["credit"] = json!("cbtxn_forged");
    fails(&b, &pinned(), code::HASH_MISMATCH, Some(3));
}

#[test]
fn tamper_drop_an_entry() {
    let mut b = good();
    b.entries.remove(2); // the DISPATCHED: the commit now closes nothing
    fails(&b, &pinned(), code::BROKEN_LINK, Some(2));
}

#[test]
fn tamper_reorder_two_entries() {
    let mut b = good();
    b.entries.swap(1, 2);
    fails(&b, &pinned(), code::BROKEN_LINK, Some(1));
}

#[test]
fn tamper_resign_with_another_key() {
    let mut b = good();
    let other = SigningKey::from_bytes(&[9u8; 32]);
    // A forger re-signs every entry (and relinks) with their own key.
    let mut prev = Value::Null;
    for i in 0..b.entries.len() {
        obj(&mut b, i).insert("prev".into(), prev.clone());
        verify::entry::seal(obj(&mut b, i), &other).unwrap();
        prev = obj(&mut b, i)["hash"].clone();
    }
    fails(&b, &pinned(), code::WRONG_SIGNER, Some(0));
}

#[test]
fn tamper_forge_a_lone_commit() {
    let b = build(vec![committed("send")]);
    let r = fails(&b, &pinned(), code::COMMIT_WITHOUT_DISPATCH, Some(0));
    assert!(r
        .problems
        .iter()
        .any(|p| p.code == code::FIRST_NOT_PROPOSED));
}

#[test]
fn tamper_rebuild_the_chain_with_fresh_hashes() {
    let mut b = good();
    obj(&mut b, 0)["effect"]["amount"] = json!(100_000);
    obj(&mut b, 2)["effect"]["amount"] = json!(100_000);
    let mut prev = Value::Null;
    for i in 0..b.entries.len() {
        obj(&mut b, i).insert("prev".into(), prev.clone());
        rehash(&mut b, i);
        prev = obj(&mut b, i)["hash"].clone();
    }
    let r = fails(&b, &pinned(), code::BAD_SIGNATURE, Some(0));
    assert!(
        r.chain_consistent,
        "the chain itself is consistent; only signatures catch it"
    );
    assert_eq!(r.signed, Some(false));
    let bad: Vec<usize> = r
        .problems
        .iter()
        .filter(|p| p.code == code::BAD_SIGNATURE)
        .filter_map(|p| p.entry)
        .collect();
    assert_eq!(bad, vec![0, 1, 2, 3]);
}

/// The gate's recovery records the in-flight bound a "not found" rested on, and refuses with
/// `target_failed_at_recovery` when the service replayed an error and a lookup found nothing:
/// extra kind fields and new refusal codes verify like any other.
#[test]
fn recovery_entries_with_in_flight_fields_and_new_refusal_codes_verify() {
    let in_flight = json!({"assumed_max_in_flight_ms": 5500, "counted_from_ms": 1_000,
                           "in_flight_basis": "claim found free"});
    let mut refusal = json!({"kind": "REFUSED", "code": "target_failed_at_recovery",
        "reason": "the service failed the request and a lookup did not find it", "resolves": true,
        "rechecked": checks()});
    let mut reapply = committed("recovery-reapply");
    for (k, v) in in_flight.as_object().unwrap() {
        refusal[k] = v.clone();
        reapply[k] = v.clone();
    }
    reapply["rechecked"] = checks();
    let refused = sealed_from(
        10_000,
        vec![proposed(), authorized(), dispatched(), refusal],
    );
    let r = verify_bundle(&refused, &pinned());
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.happened, Happened::No);
    assert_eq!(
        r.refused.as_ref().and_then(|x| x.code.as_deref()),
        Some("target_failed_at_recovery")
    );
    let reapplied = build_from(
        10_000,
        vec![proposed(), authorized(), dispatched(), reapply],
    );
    let r = verify_bundle(&reapplied, &pinned());
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.happened, Happened::Yes);
    assert_eq!(r.via.as_deref(), Some("recovery-reapply"));
}

/// Problems of `code` in `r` that name an entry, and the count its `problems_not_listed` states.
fn listed_and_counted(r: &ReceiptReport, code_: &str) -> (usize, Option<String>) {
    let listed = r.problems.iter().filter(|p| p.code == code_).count();
    let note = r
        .problems
        .iter()
        .find(|p| p.code == code::PROBLEMS_NOT_LISTED && p.message.contains(code_))
        .map(|p| p.message.clone());
    (listed, note)
}

#[test]
fn a_receipt_of_many_empty_entries_lists_at_most_64_problems_of_each_code_and_counts_the_rest() {
    let n = 20_000;
    let b = ReceiptBundle {
        format: "interlock-receipt/1".into(),
        effect_id: eid(),
        entries: vec![json!({}); n],
        head: None,
    };
    let r = fails(&b, &KeyCheck::SelfAttested, code::FOREIGN_ENTRY, Some(0));
    let (listed, note) = listed_and_counted(&r, code::FOREIGN_ENTRY);
    assert_eq!(listed, verify::problem::LISTED_PER_CODE);
    let note = note.expect("the problems left out are counted");
    assert!(note.contains(&format!("{} more", n - 64)), "{note}");
    assert!(
        r.problems.len() < 20 * verify::problem::LISTED_PER_CODE,
        "{} problems listed for {n} entries",
        r.problems.len()
    );
    assert_eq!(
        r.journal_kinds.len(),
        n,
        "every entry's kind is still named"
    );
}

#[test]
fn a_receipt_whose_every_signature_fails_lists_64_and_counts_the_rest() {
    let mut bodies = vec![proposed(), authorized()];
    bodies.extend((0..200).map(|_| authorized()));
    let mut b = build(bodies);
    let n = b.entries.len();
    for e in &mut b.entries {
        // A signature of the right shape that does not verify.
        e["sig"] = json!("11".repeat(64));
    }
    let r = fails(&b, &pinned(), code::BAD_SIGNATURE, Some(0));
    let (listed, note) = listed_and_counted(&r, code::BAD_SIGNATURE);
    assert_eq!(listed, 64);
    let note = note.expect("the failed signatures left out are counted");
    assert!(note.contains(&format!("{} more", n - 64)), "{note}");
    assert_eq!(r.signed, Some(false));
}

/// Heads are verified in the same batches as the entries: a head whose signature fails among
/// good ones is no seal (its refusal proves nothing, `head_signature`), and only its receipt fails.
#[test]
fn a_head_whose_signature_fails_in_a_batch_is_no_seal_and_names_only_its_receipt() {
    let good = sealed(vec![proposed(), refused(false)]);
    let mut forged = good.clone();
    let head = forged.head.as_mut().unwrap();
    let first = if head.sig.starts_with('0') { "1" } else { "0" };
    head.sig.replace_range(0..1, first);
    let mut bundles = vec![good.clone(); 300];
    bundles[150] = forged.clone();
    for key in [pinned(), KeyCheck::SelfAttested] {
        let reports = verify_bundles(&bundles, &key);
        for (i, r) in reports.iter().enumerate() {
            if i == 150 {
                assert!(!r.valid);
                let found: Vec<_> = r.problems.iter().map(|p| p.code.as_str()).collect();
                assert_eq!(found, [verify::seal::code::HEAD_SIGNATURE]);
                assert_eq!(r.entries_say, Happened::No);
                assert_eq!(r.happened, Happened::Unknown);
                assert_eq!(r.signed, Some(true), "the entries' signatures hold");
            } else {
                assert!(r.valid, "{i}: {:?}", r.problems);
                assert_eq!(r.happened, Happened::No, "{i}");
            }
        }
        assert_eq!(verify_bundle(&forged, &key).problems, reports[150].problems);
    }
}

/// A refusal that rests on "not found" after the service said a request under the key was still
/// executing: the bound must count from no earlier than that answer, and the dispatch must not
/// be refused at all unless the service then replayed that request's saved failure (the gate
/// answers AMBIGUOUS there, DESIGN §4.10).
fn refused_after_answers(code_: &str, counted_from_ms: u64, answers: Value) -> Value {
    json!({"kind": "REFUSED", "code": code_, "reason": "Recovery refused the effect.",
           "resolves": true, "rechecked": checks(), "assumed_max_in_flight_ms": 5_500,
           "counted_from_ms": counted_from_ms,
           "resend_answers": {"answers": answers, "dropped": 0}})
}

#[test]
fn bound_before_in_use() {
    let answers = json!([
        {"answer": "in_use", "said": "HTTP 409 (idempotency_key_in_use)", "at_ms": 2_000},
        {"answer": "replayed", "said": "HTTP 500 (saved under the key)", "at_ms": 3_000},
    ]);
    let ok = refused_after_answers("target_failed_at_recovery", 3_000, answers.clone());
    let r = verify_bundle(
        &build_from(10_000, vec![proposed(), authorized(), dispatched(), ok]),
        &pinned(),
    );
    assert!(r.problems.is_empty(), "{:?}", codes(&r));
    let early = refused_after_answers("target_failed_at_recovery", 1_999, answers);
    fails(
        &build_from(10_000, vec![proposed(), authorized(), dispatched(), early]),
        &pinned(),
        code::BOUND_BEFORE_IN_USE,
        Some(3),
    );
}

#[test]
fn gave_up_while_in_use() {
    // The gate review's sequence: "in use", then unknown answers that ended the resends.
    let answers = json!([
        {"answer": "unknown", "said": "timeout", "at_ms": 1_000},
        {"answer": "in_use", "said": "HTTP 409 (idempotency_key_in_use)", "at_ms": 2_000},
        {"answer": "unknown", "said": "timeout", "at_ms": 3_000},
        {"answer": "unknown", "said": "timeout", "at_ms": 4_000},
    ]);
    for code_ in ["target_failed_at_recovery", "lease_at_recovery"] {
        let gave_up = refused_after_answers(code_, 4_000, answers.clone());
        fails(
            &build(vec![proposed(), authorized(), dispatched(), gave_up]),
            &pinned(),
            code::GAVE_UP_WHILE_IN_USE,
            Some(3),
        );
    }
    // AMBIGUOUS is the answer there.
    let ambiguous = json!({"kind": "AMBIGUOUS", "code": "ambiguous",
        "reason": "The service said a request under the key was still executing.",
        "rechecked": checks(), "resend_answers": {"answers": answers, "dropped": 0}});
    let r = verify_bundle(
        &build(vec![proposed(), authorized(), dispatched(), ambiguous]),
        &pinned(),
    );
    assert!(r.problems.is_empty(), "{:?}", codes(&r));
}

/// A settling entry that rests on the in-flight bound must be written after the bound has
/// passed since it was counted: a reapply or a refusal on a "not found" looked up sooner proves
/// nothing (a referee's review of pr_merge: nothing checked it).
#[test]
fn an_entry_written_before_its_bound_passed_fails() {
    let mut early = committed("recovery-reapply");
    early["rechecked"] = checks();
    early["assumed_max_in_flight_ms"] = json!(5_500);
    early["counted_from_ms"] = json!(9_000);
    let b = build_from(
        10_000,
        vec![proposed(), authorized(), dispatched(), early.clone()],
    );
    fails(&b, &pinned(), code::BOUND_NOT_WAITED, Some(3));
    early["counted_from_ms"] = json!(4_000);
    let b = build_from(10_000, vec![proposed(), authorized(), dispatched(), early]);
    let r = verify_bundle(&b, &pinned());
    assert!(r.valid, "{:?}", codes(&r));
}
