//! Tests written for mutants that the other suites let survive (see the README's "Mutation
//! testing"): each pins down a behaviour that one or more mutants of `src/` broke unnoticed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use ed25519_dalek::Signer;
use interlock::journal::{Journal, JournalError};
use interlock::testing::{AllLive, Fault, MemLeases, MemTarget};
use interlock::{
    Gate, GateConfig, GateError, Holder, LeaseCheck, LeaseError, LeaseStore, Location,
    RecoveryOutcome, RefusalCode, Status, Tier,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A gate on a fresh store whose target is made knowing the lease store (for hooks that revoke
/// the lease mid-submit).
fn setup_leased(make: impl FnOnce(Arc<MemLeases>) -> MemTarget) -> Setup {
    setup_leased_at(make).0
}

/// [`setup_leased`], and where its journal is.
fn setup_leased_at(make: impl FnOnce(Arc<MemLeases>) -> MemTarget) -> (Setup, interlock::Location) {
    let dir = tempfile::tempdir().unwrap();
    let leases = Arc::new(MemLeases::new());
    leases.grant(&json!("lease-1"));
    let target = Arc::new(make(leases.clone()));
    target.set_fact("incident_compensation", json!(0));
    let clock = Arc::new(AtomicU64::new(1_800_000_000_000));
    let at = store_at(dir.path());
    let mut gate = Gate::open_at(
        &at,
        target.clone(),
        leases.clone(),
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    gate.set_clock(Box::new(move || c.load(Ordering::SeqCst)));
    let s = Setup {
        dir,
        gate,
        target,
        leases,
        clock,
    };
    (s, at)
}

/// The claim directory of a file-store setup.
fn claims_dir(s: &Setup) -> PathBuf {
    let journal = std::fs::canonicalize(s.dir.path().join("journal.jsonl")).unwrap();
    let mut dir = journal.into_os_string();
    dir.push(".claims");
    PathBuf::from(dir)
}

/// Hold the effect's claim file lock from the test, as another process that took the claim.
fn hold_claim(s: &Setup, eid: &str) -> std::fs::File {
    let f = std::fs::File::open(claims_dir(s).join(eid)).unwrap();
    f.try_lock().unwrap();
    f
}

fn recovered(s: &Setup, eid: &str) -> Option<Status> {
    s.gate.recover_effect(eid).unwrap().and_then(|o| o.status())
}

/// A lost send at a tier-3 target is AMBIGUOUS because the target neither dedupes nor can be
/// looked up; at a tier-1 target without lookup past its dedup window, because the key expired.
/// The AMBIGUOUS entry's reason says which (mutant: the two reasons swapped).
#[test]
fn an_ambiguous_entry_names_why_a_lost_send_cannot_be_settled() {
    let s = setup(Tier::Three, false);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    assert_eq!(recovered(&s, &eid), Some(Status::Ambiguous));
    let reason = s.last(&eid)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("neither dedupes"), "{reason}");

    let s = setup_with(
        MemTarget::new(Tier::One, false).with_dedup_window(Some(Duration::from_secs(3600))),
    );
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    s.advance(3600 * 1000);
    assert_eq!(recovered(&s, &eid), Some(Status::Ambiguous));
    let reason = s.last(&eid)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("dedup window"), "{reason}");
    assert_eq!(s.target.landed(&eid), 0);
}

/// At a tier-1 target without lookup, a lost send whose premise no longer holds is AMBIGUOUS
/// "because a premise no longer holds", one whose lease was revoked "because the lease no longer
/// holds", and one the service failed (a saved error replayed under the key) "because the
/// service failed" (mutant: the premise and failure reasons swapped).
#[test]
fn an_ambiguous_entry_at_tier_one_names_the_check_that_failed() {
    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    s.target.set_fact("incident_compensation", json!(1));
    assert_eq!(recovered(&s, &eid), Some(Status::Ambiguous));
    let reason = s.last(&eid)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("A premise no longer holds"), "{reason}");

    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    s.leases.revoke(&json!("lease-1"));
    assert_eq!(recovered(&s, &eid), Some(Status::Ambiguous));
    let reason = s.last(&eid)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("The lease no longer holds"), "{reason}");

    let s = setup(Tier::One, false);
    s.target.push_faults([Fault::FailsSaved]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let mut status = None;
    for _ in 0..5 {
        status = recovered(&s, &eid);
        if status.is_some() {
            break;
        }
    }
    assert_eq!(status, Some(Status::Ambiguous));
    let reason = s.last(&eid)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("The service failed"), "{reason}");
    assert_eq!(s.target.landed(&eid), 0);
}

/// A submit refused under the claim (the lease revoked while the premises were read) leaves no
/// claim file behind: nothing was dispatched, so the claim is removed, not merely let go
/// (mutant: `Gate::release` doing nothing).
#[test]
fn a_refusal_under_the_claim_leaves_no_claim_file() {
    if file_only("a_refusal_under_the_claim_leaves_no_claim_file") {
        return;
    }
    let s = setup_leased(|leases| {
        MemTarget::new(Tier::One, true).with_premise_hook(Box::new(move || {
            leases.revoke(&json!("lease-1"));
        }))
    });
    let r = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status, Status::Refused(RefusalCode::Lease));
    assert_eq!(s.target.apply_calls(), 0);
    let left: Vec<_> = std::fs::read_dir(claims_dir(&s))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "claim files left: {left:?}");
}

/// An append the index refuses (a chain that does not start with PROPOSED) is a corruption error
/// naming the line it was written as, and the journal refuses every later append until it is
/// reopened (mutants: `poison` doing nothing; the line number off by one).
#[test]
fn a_refused_append_names_its_line_and_poisons_the_journal() {
    if file_only("a_refused_append_names_its_line_and_poisons_the_journal") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let journal =
        Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(1)).unwrap();
    let fields = |v: Value| v.as_object().unwrap().clone();
    journal
        .append_entry(
            "a",
            verify::entry::Kind::Proposed,
            fields(json!({"agent": "agent-1", "lease": "lease-1", "premises": {}, "effect": {"amount": 1}})),
            1,
            &key(),
        )
        .unwrap();
    let err = journal
        .append_entry(
            "b",
            verify::entry::Kind::Dispatched,
            fields(
                json!({"effect": {"amount": 2}, "lease": "lease-1", "premises": {}, "checks": {}}),
            ),
            2,
            &key(),
        )
        .unwrap_err();
    assert!(
        matches!(err, JournalError::Corrupt { line: 2, .. }),
        "{err:?}"
    );
    let err = journal
        .append_entry(
            "c",
            verify::entry::Kind::Proposed,
            fields(json!({"agent": "agent-1", "lease": "lease-1", "premises": {}, "effect": {"amount": 3}})),
            3,
            &key(),
        )
        .unwrap_err();
    assert!(matches!(err, JournalError::Poisoned { .. }), "{err:?}");
    assert!(journal.entries("a").is_err());
}

/// At a tier-1 target without lookup, recovery resends under the key at most
/// `max_unknown_answers` (3) times while the answers stay unknown, then reports AMBIGUOUS instead
/// of resending forever (mutant: the count of unknown answers never growing — the fifth
/// request then landed and read as `COMMITTED_BY_RETRY`).
#[test]
fn unknown_answers_to_resends_stop_after_the_configured_count() {
    let s = setup(Tier::One, false);
    s.target.push_faults([
        Fault::Unknown,
        Fault::Unknown,
        Fault::Unknown,
        Fault::Unknown,
    ]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let mut status = None;
    for _ in 0..8 {
        status = recovered(&s, &eid);
        if status.is_some() {
            break;
        }
        s.advance(1_000);
    }
    assert_eq!(status, Some(Status::Ambiguous));
    assert_eq!(s.target.apply_calls(), 4, "one send and three resends");
    assert_eq!(s.target.landed(&eid), 0);
}

/// A reapply whose answer is unknown blocks recovery until the in-flight bound has passed since
/// that reapply (the request may still land until then), not merely for `retry_interval`
/// (mutant: the reapply arm of the wait deleted).
#[test]
fn an_unknown_reapply_waits_the_in_flight_bound_from_the_reapply() {
    let s = setup_with(MemTarget::new(Tier::Two, true).with_max_in_flight(Duration::from_secs(10)));
    s.target.push_faults([Fault::Unknown, Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    assert!(matches!(
        s.gate.recover_effect(&eid).unwrap(),
        Some(RecoveryOutcome::Blocked { .. })
    ));
    s.advance(10_000);
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked {
            holder: Holder::Target,
            until_ms,
            ..
        }) => assert_eq!(until_ms, s.now() + 10_000),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.target.apply_calls(), 2, "the send and one reapply");
}

/// A live holder of the claim is waited for until its record's TTL; at the very instant the TTL
/// runs out it is reported hung and retried after `retry_interval`, not at the instant that has
/// just come (mutant: `expires_ms > now` as `>=`).
#[test]
fn a_holder_is_hung_from_the_instant_its_ttl_runs_out() {
    if file_only("a_holder_is_hung_from_the_instant_its_ttl_runs_out") {
        return;
    }
    let s = setup(Tier::One, true);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let _held = hold_claim(&s, &eid);
    let expires = s.now() + 40_000;
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked {
            holder: Holder::Process(_),
            until_ms,
            ..
        }) => assert_eq!(until_ms, expires),
        other => panic!("{other:?}"),
    }
    s.advance(40_000);
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked {
            holder: Holder::Process(_),
            until_ms,
            reason,
        }) => {
            assert_eq!(until_ms, s.now() + 1_000);
            assert!(reason.contains("TTL ran out"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.target.apply_calls(), 1);
}

/// A held claim whose (trusted, latest) record names a process that is gone — its pid now
/// belongs to a process started at another tick — does not name that process as the holder:
/// the holder is an unnamed process (mutants: the guard taken as always true, or its `&&` as
/// `||`).
#[test]
fn a_record_of_a_dead_process_does_not_name_the_holder() {
    if file_only("a_record_of_a_dead_process_does_not_name_the_holder") {
        return;
    }
    let s = setup(Tier::One, true);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let path = claims_dir(&s).join(&eid);
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let ticks = record["owner"]["start_ticks"].as_u64().unwrap();
    record["owner"]["start_ticks"] = json!(ticks + 1);
    // Signed again with the gate's own key: the record is trusted, only its process is gone.
    resign(&mut record);
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let _held = hold_claim(&s, &eid);
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked { holder, .. }) => {
            assert_eq!(holder, Holder::UnnamedProcess)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.target.apply_calls(), 1);
}

/// Leases that are always live and run `hook` once, on the second check: the one `submit` makes
/// under the claim and the journal lock.
struct HookLeases {
    calls: AtomicU64,
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl LeaseStore for HookLeases {
    fn check(&self, _lease: &Value, _effect: &Value) -> Result<LeaseCheck, LeaseError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 1 {
            if let Some(hook) = self.hook.lock().unwrap().take() {
                hook();
            }
        }
        Ok(LeaseCheck {
            live: true,
            grant: None,
        })
    }
}

/// A holder's lease check at `at` runs `f` under its claim and its effect's lock (on the file
/// store, the journal lock); what `f` returned.
fn under_the_holders_lock(
    at: &Location,
    config: GateConfig,
    f: impl FnOnce() -> Result<Status, GateError> + Send + 'static,
) -> Result<Status, GateError> {
    let target = Arc::new(MemTarget::new(Tier::One, true));
    target.set_fact("incident_compensation", json!(0));
    let seen: Arc<Mutex<Option<Result<Status, GateError>>>> = Arc::new(Mutex::new(None));
    let seen2 = seen.clone();
    let leases = HookLeases {
        calls: AtomicU64::new(0),
        hook: Mutex::new(Some(Box::new(move || {
            *seen2.lock().unwrap() = Some(f());
        }))),
    };
    let holder = Gate::open_at(at, target.clone(), leases, key(), config).unwrap();
    let r = holder.submit(&proposal(1000)).unwrap();
    assert_eq!(r.status, Status::Committed);
    let seen = seen
        .lock()
        .unwrap()
        .take()
        .expect("the hook ran under the holder's lock");
    seen
}

/// A second gate on `at`, opened before the holder takes its lock.
fn waiter(at: &Location, config: &GateConfig) -> Gate<Arc<MemTarget>, AllLive> {
    let target = Arc::new(MemTarget::new(Tier::One, true));
    target.set_fact("incident_compensation", json!(0));
    Gate::open_at(at, target, AllLive, key(), config.clone()).unwrap()
}

fn short_wait() -> GateConfig {
    GateConfig {
        journal_lock_wait: Duration::from_millis(300),
        ..GateConfig::default()
    }
}

/// A gate that waits for an effect's lock (the file store's journal lock) longer than its bound
/// gets `JournalError::Busy` (the error `recover` turns into `Blocked` by the journal), on either
/// store — not a generic store error (mutant: PostgreSQL's lock-timeout test inverted).
#[test]
fn a_journal_lock_held_past_the_wait_bound_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let at = store_at(dir.path());
    let other = waiter(&at, &short_wait());
    // The same effect: its lock is held.
    let seen = under_the_holders_lock(&at, short_wait(), move || {
        other.submit(&proposal(1000)).map(|s| s.status)
    });
    assert!(
        matches!(seen, Err(GateError::Journal(JournalError::Busy { .. }))),
        "{seen:?}"
    );
}

/// No journal-wide lock on PostgreSQL (DESIGN §2.7): a writer holding one effect's lock does not
/// hold up a writer of another effect, which commits meanwhile. The file store's journal lock
/// covers every effect: the other writer waits and, past its bound, is `Busy`.
#[test]
fn a_writer_of_another_effect_is_held_up_only_by_the_file_stores_journal_lock() {
    let dir = tempfile::tempdir().unwrap();
    let at = store_at(dir.path());
    let other = waiter(&at, &short_wait());
    let seen = under_the_holders_lock(&at, short_wait(), move || {
        let mut p = proposal(2000);
        p.request_id = Some("req-2".into());
        other.submit(&p).map(|s| s.status)
    });
    if on_postgres() {
        assert!(matches!(seen, Ok(Status::Committed)), "{seen:?}");
    } else {
        assert!(
            matches!(seen, Err(GateError::Journal(JournalError::Busy { .. }))),
            "{seen:?}"
        );
    }
}

/// A torn mark line (a crash while a mark was written) is cut when the next mark is written, so
/// the process that wrote it keeps reading the marks in step: another gate's marks appended later
/// are read as they are, not glued to the torn bytes (mutant: the torn tail kept — the next
/// catch-up read the other gate's mark shifted and refused the journal as rewritten).
#[test]
fn a_torn_mark_is_cut_and_later_marks_are_read_in_step() {
    if file_only("a_torn_mark_is_cut_and_later_marks_are_read_in_step") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let open = || {
        let target = MemTarget::new(Tier::One, true);
        target.set_fact("incident_compensation", json!(0));
        Gate::open(&path, target, AllLive, key(), GateConfig::default()).unwrap()
    };
    let submit = |gate: &Gate<MemTarget, AllLive>, n: u32| {
        let mut p = proposal(1000);
        p.request_id = Some(format!("req-{n}"));
        gate.submit(&p).map(|s| s.status)
    };
    let first = open();
    assert_eq!(submit(&first, 0).unwrap(), Status::Committed);
    drop(first);
    let mut marks = std::fs::canonicalize(&path).unwrap().into_os_string();
    marks.push(".marks");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&marks)
        .unwrap();
    std::io::Write::write_all(&mut f, b"0123abcd").unwrap();
    drop(f);
    let a = open();
    assert_eq!(submit(&a, 1).unwrap(), Status::Committed);
    let b = open();
    assert_eq!(submit(&b, 2).unwrap(), Status::Committed);
    assert_eq!(submit(&a, 3).unwrap(), Status::Committed);
    assert_eq!(submit(&b, 4).unwrap(), Status::Committed);
    assert_eq!(a.effect_ids().unwrap().len(), 5);
}

/// On PostgreSQL, a row this gate does not trust is a corruption error naming its place in the
/// journal, counted over every row — this gate's own appends included: the fifth row is line 5
/// (mutant: the gate's own appends not counted, so the row was named line 1).
#[test]
fn an_untrusted_row_after_own_appends_is_named_by_its_line() {
    if !on_postgres() {
        eprintln!("an_untrusted_row_after_own_appends_is_named_by_its_line: PostgreSQL only");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let at = store_at(dir.path());
    let target = || {
        let t = MemTarget::new(Tier::One, true);
        t.set_fact("incident_compensation", json!(0));
        t
    };
    let gate = Gate::open_at(&at, target(), AllLive, key(), GateConfig::default()).unwrap();
    let other = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    let config = GateConfig {
        trusted_signers: vec![key().verifying_key()],
        ..GateConfig::default()
    };
    let forger = Gate::open_at(&at, target(), AllLive, other, config).unwrap();
    assert_eq!(
        gate.submit(&proposal(1000)).unwrap().status,
        Status::Committed
    );
    let mut p = proposal(1000);
    p.request_id = Some("req-2".into());
    assert_eq!(forger.submit(&p).unwrap().status, Status::Committed);
    let mut p = proposal(1000);
    p.request_id = Some("req-3".into());
    let err = gate.submit(&p).unwrap_err();
    assert!(
        matches!(
            err,
            GateError::Journal(JournalError::Corrupt { line: 5, .. })
        ),
        "{err:?}"
    );
}

/// Sign a claim record (as JSON) with the gate's key, as the gate does.
fn resign(record: &mut Value) {
    let obj = record.as_object_mut().unwrap();
    obj.remove("sig");
    let bytes = verify::canonical::to_vec(&Value::Object(obj.clone())).unwrap();
    obj.insert(
        "sig".into(),
        json!(hex::encode(key().sign(&bytes).to_bytes())),
    );
}

/// On PostgreSQL, an earlier holder's "may send until" instant in a (trusted, latest) claim
/// record is taken as it is only from this host *and boot*: one of another boot means nothing
/// on this monotonic clock, so recovery waits a whole send window from its take-over before the
/// in-flight bound starts (mutants: the host-and-boot test loosened with `||`).
#[test]
fn an_earlier_holders_instant_from_another_boot_is_not_believed() {
    if !on_postgres() {
        eprintln!("an_earlier_holders_instant_from_another_boot_is_not_believed: PostgreSQL only");
        return;
    }
    let (s, at) = setup_leased_at(|_| {
        MemTarget::new(Tier::Two, true).with_max_in_flight(Duration::from_secs(1))
    });
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    let interlock::Location::Postgres(url) = at else {
        unreachable!()
    };
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let row = c
        .query_one(
            "SELECT record, gen FROM interlock_claims WHERE effect_id = $1",
            &[&eid],
        )
        .unwrap();
    let mut record: Value = serde_json::from_str(row.get(0)).unwrap();
    let gen: i64 = row.get(1);
    // The sender let the claim go; the holder before it (says the record) may send until 0 ms
    // of a monotonic clock of another boot of this host.
    record["released"] = json!(true);
    record["earlier_sends_until"] = json!({"boot": "another boot", "ms": 0});
    record["gen"] = json!(gen + 1);
    resign(&mut record);
    c.execute(
        "UPDATE interlock_claims SET record = $2, gen = $3 WHERE effect_id = $1",
        &[&eid, &serde_json::to_string(&record).unwrap(), &(gen + 1)],
    )
    .unwrap();
    // Not found, and the bound (1 s) counts from the take-over plus the send window (2 s).
    match s.gate.recover_effect(&eid).unwrap() {
        Some(RecoveryOutcome::Blocked { until_ms, .. }) => {
            assert_eq!(until_ms, s.now() + 3_000)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.target.apply_calls(), 1);
}

/// A lease store that, on the first check made while the effect's claim file exists (the check
/// under the claim, right before DISPATCHED), replaces that file: a new file at its path, the
/// locked one moved aside.
struct ReplacesClaimFile {
    inner: Arc<MemLeases>,
    claim: Mutex<Option<PathBuf>>,
}

impl LeaseStore for ReplacesClaimFile {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let mut claim = self.claim.lock().unwrap();
        if let Some(path) = claim.as_ref().filter(|p| p.exists()).cloned() {
            std::fs::rename(&path, path.with_extension("aside")).unwrap();
            std::fs::write(&path, b"").unwrap();
            *claim = None;
        }
        self.inner.check(lease, effect)
    }
}

/// A claim file replaced while its holder lives, before its send: the holder confirms, right
/// before the request leaves, that the path still names the file it locked, and sends nothing
/// (mutant: `HeldClaim::confirm` → `Ok(())`).
#[test]
fn a_claim_file_replaced_before_the_send_stops_the_send() {
    if file_only("a_claim_file_replaced_before_the_send_stops_the_send") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let target = Arc::new(MemTarget::new(Tier::Two, true));
    target.set_fact("incident_compensation", json!(0));
    let inner = Arc::new(MemLeases::new());
    inner.grant(&json!("lease-1"));
    let p = proposal(1000);
    let mut claims = std::path::absolute(&path).unwrap().into_os_string();
    claims.push(".claims");
    let leases = ReplacesClaimFile {
        inner,
        claim: Mutex::new(Some(PathBuf::from(claims).join(interlock::effect_id(&p)))),
    };
    let gate = Gate::open(&path, target.clone(), leases, key(), GateConfig::default()).unwrap();
    let answer = gate.submit(&p);
    assert_eq!(
        target.apply_calls(),
        0,
        "sent under a claim file that was replaced: {answer:?}"
    );
}

/// An open DISPATCHED replaced in place, after it was indexed, by another entry of the same
/// length that recomputes to its own hash and is signed by the gate's key: what recovery reads
/// back must be the entry it checked (its hash), not merely a valid one (mutant: `hash_tag` → a
/// constant).
#[test]
fn an_open_dispatched_resealed_in_place_is_not_resent() {
    if file_only("an_open_dispatched_resealed_in_place_is_not_resent") {
        return;
    }
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(500)).unwrap().effect_id;
    let journal = s.dir.path().join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"DISPATCHED\""))
        .unwrap();
    let mut entry: serde_json::Map<String, Value> = serde_json::from_str(&lines[at]).unwrap();
    entry["effect"]["amount"] = json!(900);
    verify::entry::seal(&mut entry, &key()).unwrap();
    let resealed = serde_json::to_string(&entry).unwrap();
    assert_eq!(resealed.len(), lines[at].len(), "same length, same place");
    lines[at] = resealed;
    std::fs::write(&journal, format!("{}\n", lines.join("\n"))).unwrap();
    s.advance(3_600_000);
    let _ = s.gate.recover_effect(&eid);
    assert_eq!(s.target.apply_calls(), 1, "the resealed payload was sent");
}
