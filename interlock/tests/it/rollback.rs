//! Issue 21, sequence 4: a journal rolled back to an older copy of itself, or given chains it
//! never wrote. An older copy is a valid prefix of every chain, so only the high-water marks
//! beside the journal can tell. Each test failed (a second landing, or a send of a refused or
//! foreign effect) before the marks existed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemTarget};
use interlock::{Gate, GateConfig, JournalError, Status, Tier};
use std::path::Path;
use std::sync::{Arc, Mutex};

fn journal_of(s: &Setup) -> std::path::PathBuf {
    s.dir.path().join("journal.jsonl")
}

fn reopen(s: &Setup) -> Result<MemGate, interlock::GateError> {
    Gate::open(
        &journal_of(s),
        s.target.clone(),
        s.leases.clone(),
        key(),
        GateConfig::default(),
    )
}

/// The reopened gate must be refused with a rollback naming `effect_id`.
fn assert_rolled_back(reopened: Result<MemGate, interlock::GateError>, effect_id: &str) {
    match reopened {
        Err(interlock::GateError::Journal(JournalError::RolledBack {
            effect_id: named, ..
        })) => assert_eq!(named, effect_id),
        Err(e) => panic!("refused, but not as a rollback: {e}"),
        Ok(_) => panic!("a journal behind its marks was opened"),
    }
}

fn copy(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn restore(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_journal_restored_from_before_a_commit_is_refused_and_nothing_is_sent_again() {
    if file_only("a_journal_restored_from_before_a_commit_is_refused") {
        return;
    }
    let s = setup(Tier::Two, true);
    // Another effect first, so the older copy is not simply an empty file.
    assert_eq!(
        s.gate.submit(&proposal(500)).unwrap().status,
        Status::Committed
    );
    let older = copy(&journal_of(&s));
    let mut p = proposal(1000);
    p.request_id = Some("req-2".into());
    let committed = s.gate.submit(&p).unwrap();
    assert_eq!(committed.status, Status::Committed);
    restore(&journal_of(&s), &older);
    let reopened = reopen(&s);
    if let Ok(gate) = &reopened {
        // What the rollback allowed before the marks: the effect proposed and sent again.
        let _ = gate.submit(&p);
    }
    assert_eq!(s.target.landed(&committed.effect_id), 1);
    assert_rolled_back(reopened, &committed.effect_id);
}

#[test]
fn a_journal_restored_from_before_a_refusal_is_refused_and_the_refused_effect_is_not_sent() {
    if file_only("a_journal_restored_from_before_a_refusal_is_refused") {
        return;
    }
    // The copy is taken while the send is in progress: DISPATCHED is durable and open.
    let taken: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
    let (slot, dir) = (taken.clone(), tempfile::tempdir().unwrap());
    let path = dir.path().join("journal.jsonl");
    let at = path.clone();
    let target = MemTarget::new(Tier::Two, true).with_apply_hook(Box::new(move |_| {
        slot.lock().unwrap().get_or_insert_with(|| copy(&at));
    }));
    let mut s = setup_with(target);
    s.dir = dir;
    s.gate = reopen(&s).unwrap();
    s.target.push_faults([Fault::Rejected]);
    let refused = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(
        refused.status,
        Status::Refused(interlock::RefusalCode::TargetError)
    );
    let older = taken.lock().unwrap().clone().unwrap();
    restore(&path, &older);
    let reopened = reopen(&s);
    if let Ok(gate) = &reopened {
        // Before the marks: recovery found the dispatch open and not landed, and resent it.
        let _ = gate.recover();
    }
    assert_eq!(
        s.target.landed(&refused.effect_id),
        0,
        "a refused effect landed"
    );
    assert_rolled_back(reopened, &refused.effect_id);
}

#[test]
fn an_emptied_journal_is_refused() {
    if file_only("an_emptied_journal_is_refused") {
        return;
    }
    let s = setup(Tier::Two, true);
    let committed = s.gate.submit(&proposal(1000)).unwrap();
    restore(&journal_of(&s), b"");
    let reopened = reopen(&s);
    if let Ok(gate) = &reopened {
        let _ = gate.submit(&proposal(1000));
    }
    assert_eq!(s.target.landed(&committed.effect_id), 1);
    assert_rolled_back(reopened, &committed.effect_id);
}

/// Entries of an effect this journal never held, written by another gate under a trusted key
/// (here the same key) up to an open DISPATCHED, then appended to this journal: all three, or
/// (`lines` = 1) the DISPATCHED alone as the first entry of its chain.
fn foreign_dispatch(s: &Setup, lines: usize) -> (String, Result<MemGate, interlock::GateError>) {
    let other = tempfile::tempdir().unwrap();
    let mut p = proposal(700);
    p.request_id = Some("req-foreign".into());
    let eid = interlock::effect_id(&p);
    // The other gate's entries up to DISPATCHED, as a crash after DISPATCHED leaves them.
    let journal = interlock::journal::Journal::open(
        &other.path().join("foreign.jsonl"),
        vec![key().verifying_key()],
        std::time::Duration::from_secs(1),
    )
    .unwrap();
    let fields = |v: serde_json::Value| v.as_object().unwrap().clone();
    let mut written = vec![journal
        .append_entry(
            &eid,
            verify::entry::Kind::Proposed,
            fields(serde_json::json!({"agent": "agent-1", "lease": "lease-1",
                "premises": {"incident_compensation": 0}, "effect": p.effect})),
            s.now(),
            &key(),
        )
        .unwrap()];
    written.push(
        journal
            .append_entry(
                &eid,
                verify::entry::Kind::Authorized,
                fields(serde_json::json!({"lease": "lease-1"})),
                s.now(),
                &key(),
            )
            .unwrap(),
    );
    written.push(
        journal
            .append_entry(
                &eid,
                verify::entry::Kind::Dispatched,
                fields(serde_json::json!({"effect": p.effect, "lease": "lease-1",
                    "premises": {"incident_compensation": 0},
                    "checks": {"lease_live": true, "grant": null, "violations": []}})),
                s.now(),
                &key(),
            )
            .unwrap(),
    );
    let merged: Vec<serde_json::Map<String, serde_json::Value>> = if lines == 1 {
        // The DISPATCHED alone, re-sealed as the first entry of its chain.
        let mut d = written.pop().unwrap();
        d.insert("prev".into(), serde_json::Value::Null);
        verify::entry::seal(&mut d, &key()).unwrap();
        vec![d]
    } else {
        written
    };
    let mut mine = copy(&journal_of(s));
    for entry in merged {
        mine.extend_from_slice(&serde_json::to_vec(&entry).unwrap());
        mine.push(b'\n');
    }
    restore(&journal_of(s), &mine);
    (eid, reopen(s))
}

/// A journal holding one effect of its own, given a foreign chain (`lines` as in
/// [`foreign_dispatch`]) and reopened; recovery is let loose on it if it opens. Nothing decided
/// elsewhere may be sent either way.
fn merged_and_reopened(lines: usize) -> (String, Result<MemGate, interlock::GateError>) {
    let s = setup(Tier::Two, true);
    s.gate.submit(&proposal(1000)).unwrap();
    let (eid, reopened) = foreign_dispatch(&s, lines);
    if let Ok(gate) = &reopened {
        s.advance(3_600_000);
        let _ = gate.recover();
    }
    assert_eq!(
        s.target.landed(&eid),
        0,
        "an effect decided elsewhere was sent"
    );
    (eid, reopened)
}

#[test]
fn chains_merged_in_from_another_journal_are_refused_and_not_sent() {
    if file_only("chains_merged_in_from_another_journal_are_refused") {
        return;
    }
    let (eid, reopened) = merged_and_reopened(3);
    match reopened {
        Err(interlock::GateError::Journal(JournalError::Unmarked {
            effect_id, count, ..
        })) => assert_eq!((effect_id.as_str(), count), (eid.as_str(), 3)),
        Err(e) => panic!("refused, but not as unmarked entries: {e}"),
        Ok(_) => panic!("a journal with merged chains was opened"),
    }
}

#[test]
fn a_merged_chain_that_does_not_start_with_proposed_is_corrupt() {
    if file_only("a_merged_chain_that_does_not_start_with_proposed_is_corrupt") {
        return;
    }
    // One unmarked last line is what a crash before its mark leaves, so a single merged line
    // passes the marks: the chain's own rule must stop it.
    let (_, reopened) = merged_and_reopened(1);
    match reopened {
        Err(interlock::GateError::Journal(JournalError::Corrupt { reason, .. })) => {
            assert!(reason.contains("starts with the PROPOSED"), "{reason}")
        }
        Err(e) => panic!("refused, but not as a corrupt chain: {e}"),
        Ok(_) => panic!("a chain starting with DISPATCHED was opened"),
    }
}

#[test]
fn a_crash_between_an_entry_and_its_mark_is_marked_by_the_next_open() {
    if file_only("a_crash_between_an_entry_and_its_mark_is_marked_by_the_next_open") {
        return;
    }
    let s = setup(Tier::Two, true);
    let committed = s.gate.submit(&proposal(1000)).unwrap();
    // The last mark lost, as a crash after the entry's fsync and before its mark leaves it.
    let journal = journal_of(&s);
    let last = std::fs::read_to_string(&journal).unwrap();
    let last: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    let hash = last["hash"].as_str().unwrap();
    assert!(interlock::marks::unmark_torn_entry(&journal, hash).unwrap());
    let gate = reopen(&s).unwrap();
    assert_eq!(
        gate.status(&committed.effect_id).unwrap(),
        Some(Status::Committed)
    );
    drop(gate);
    // Marked again: a later rollback of that entry is seen.
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: Vec<&str> = text.lines().collect();
    restore(
        &journal,
        format!("{}\n", kept[..kept.len() - 1].join("\n")).as_bytes(),
    );
    assert_rolled_back(reopen(&s), &committed.effect_id);
}

/// A crash mid-write of a DISPATCHED comes before its mark and before the claim record marked
/// after it: a harness that tears that line takes back both, and the journal opens (the dispatch
/// never happened as far as it can tell).
#[test]
fn a_torn_dispatched_is_unmarked_with_the_claim_record_after_it() {
    if file_only("a_torn_dispatched_is_unmarked_with_the_claim_record_after_it") {
        return;
    }
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::Unknown]);
    let sent = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(sent.status, Status::InFlight);
    let journal = journal_of(&s);
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last: serde_json::Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    assert_eq!(last["kind"], "DISPATCHED");
    let torn = &lines[lines.len() - 1][..40];
    restore(
        &journal,
        format!("{}\n{torn}", lines[..lines.len() - 1].join("\n")).as_bytes(),
    );
    assert!(interlock::marks::unmark_torn_entry(&journal, last["hash"].as_str().unwrap()).unwrap());
    let gate = reopen(&s).unwrap();
    assert_eq!(gate.open_effects().unwrap(), Vec::<String>::new());
}

/// Issue 21's review, F5: ONE line merged in from a fork of the journal (a copy, marks and
/// claims included, that a gate appended to) used to pass as the unmarked entry a crash leaves.
/// Here the fork's recovery, which never saw the landing, resolves the open dispatch as REFUSED;
/// that one line appended to the real journal closed its dispatch with an answer the target
/// contradicts. Every line must now be announced by an intent in this journal's own marks.
#[test]
fn one_resolving_line_merged_from_a_fork_is_refused() {
    if file_only("one_resolving_line_merged_from_a_fork_is_refused") {
        return;
    }
    let s = setup(Tier::Two, true);
    s.target.push_faults([Fault::LandedButUnknown]);
    let sent = s.gate.submit(&proposal(1000)).unwrap();
    assert_eq!(sent.status, Status::InFlight);
    assert_eq!(s.target.landed(&sent.effect_id), 1);
    let journal = journal_of(&s);
    // The fork: the journal and everything beside it, copied elsewhere.
    let fork = tempfile::tempdir().unwrap();
    let fork_journal = fork.path().join("journal.jsonl");
    for suffix in ["", ".marks"] {
        let from = format!("{}{suffix}", journal.display());
        std::fs::copy(&from, format!("{}{suffix}", fork_journal.display())).unwrap();
    }
    // A gate of the fork, before a target that never saw the effect, under a revoked lease.
    let fork_target = Arc::new(MemTarget::new(Tier::Two, true));
    fork_target.set_fact("incident_compensation", serde_json::json!(0));
    let fork_leases = Arc::new(interlock::testing::MemLeases::new());
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(s.now()));
    let mut fork_gate = Gate::open(
        &fork_journal,
        fork_target,
        fork_leases,
        key(),
        GateConfig::default(),
    )
    .unwrap();
    let c = clock.clone();
    fork_gate.set_clock(Box::new(move || {
        c.load(std::sync::atomic::Ordering::SeqCst)
    }));
    let mut resolved = None;
    for _ in 0..5 {
        match fork_gate.recover_effect(&sent.effect_id).unwrap() {
            Some(interlock::RecoveryOutcome::Blocked { until_ms, .. }) => {
                let now = clock.load(std::sync::atomic::Ordering::SeqCst);
                clock.fetch_add(
                    until_ms.saturating_sub(now) + 1,
                    std::sync::atomic::Ordering::SeqCst,
                );
            }
            other => {
                resolved = other;
                break;
            }
        }
    }
    assert!(
        matches!(
            resolved,
            Some(interlock::RecoveryOutcome::Resolved(Status::Refused(_)))
        ),
        "the fork did not resolve as refused: {resolved:?}"
    );
    drop(fork_gate);
    let fork_text = std::fs::read_to_string(&fork_journal).unwrap();
    let refused = fork_text.lines().last().unwrap();
    // That one line merged into the real journal.
    let mut mine = copy(&journal);
    mine.extend_from_slice(refused.as_bytes());
    mine.push(b'\n');
    restore(&journal, &mine);
    match reopen(&s) {
        Err(interlock::GateError::Journal(JournalError::Unmarked { count, .. })) => {
            assert_eq!(count, 1)
        }
        Err(e) => panic!("refused, but not as an unmarked entry: {e}"),
        Ok(gate) => panic!(
            "a line from a fork was taken in: the effect landed, and the journal says {:?}",
            gate.status(&sent.effect_id).unwrap()
        ),
    }
}
