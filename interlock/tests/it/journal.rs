//! The journal on disk: missing, empty, torn tail, corrupt middle line, shrunk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::journal::read_all;
use interlock::testing::{AllLive, MemTarget};
use interlock::{Gate, GateConfig, GateError, JournalError, Status, Tier};
use std::io::Write;
use std::path::Path;

fn open(path: &Path) -> Result<Gate<MemTarget, AllLive>, GateError> {
    let target = MemTarget::new(Tier::One, true);
    target.set_fact("incident_compensation", serde_json::json!(0));
    Gate::open(path, target, AllLive, key(), GateConfig::default())
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn a_missing_file_is_an_empty_journal() {
    if file_only("a_missing_file_is_an_empty_journal") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.jsonl");
    assert!(read_all(&path).unwrap().is_empty());
    let gate = open(&path).unwrap();
    assert!(gate.effect_ids().unwrap().is_empty());
    assert!(gate.recover().unwrap().is_empty());
    assert_eq!(
        gate.submit(&proposal(1000)).unwrap().status,
        Status::Committed
    );
    assert_eq!(read_all(&path).unwrap().len(), 4);
}

#[test]
fn an_empty_file_is_an_empty_journal() {
    if file_only("an_empty_file_is_an_empty_journal") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.jsonl");
    std::fs::write(&path, b"").unwrap();
    let gate = open(&path).unwrap();
    assert!(gate.effect_ids().unwrap().is_empty());
    assert_eq!(
        gate.submit(&proposal(1000)).unwrap().status,
        Status::Committed
    );
}

#[test]
fn a_torn_tail_is_ignored_and_cut_off_before_the_next_append() {
    if file_only("a_torn_tail_is_ignored_and_cut_off_before_the_next_append") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let gate = open(&path).unwrap();
    let eid = gate.submit(&proposal(1000)).unwrap().effect_id;
    let before = std::fs::read(&path).unwrap();
    // A writer died in the middle of a DISPATCHED line of another effect.
    append_raw(
        &path,
        br#"{"v":1,"ts_ms":1,"kind":"DISPATCHED","effect_id":"ab"#,
    );
    assert_eq!(read_all(&path).unwrap().len(), 4);
    // Both a fresh process and the already-open one ignore it.
    let fresh = open(&path).unwrap();
    assert_eq!(fresh.effect_ids().unwrap(), vec![eid.clone()]);
    assert!(
        fresh.recover().unwrap().is_empty(),
        "a torn DISPATCHED never opened a dispatch"
    );
    assert_eq!(gate.entries(&eid).unwrap().len(), 4);
    // The next append cuts the torn bytes off first.
    let mut other = proposal(1000);
    other.request_id = Some("req-2".into());
    let eid2 = gate.submit(&other).unwrap().effect_id;
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before));
    assert!(!String::from_utf8_lossy(&after).contains(r#""effect_id":"ab"#));
    let all = read_all(&path).unwrap();
    assert_eq!(all.len(), 8);
    assert_chain(&fresh.entries(&eid2).unwrap());
    assert_eq!(fresh.effect_ids().unwrap(), vec![eid, eid2]);
}

#[test]
fn a_corrupt_middle_line_is_an_error_naming_the_line() {
    if file_only("a_corrupt_middle_line_is_an_error_naming_the_line") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let gate = open(&path).unwrap();
    gate.submit(&proposal(1000)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{not json";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = open(&path).unwrap_err();
    match &err {
        GateError::Journal(JournalError::Corrupt { line, .. }) => assert_eq!(*line, 2),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(err.to_string().contains("line 2"), "{err}");
    match read_all(&path).unwrap_err() {
        JournalError::Corrupt { line, .. } => assert_eq!(line, 2),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn corruption_appended_behind_an_open_gate_is_reported_with_its_line() {
    if file_only("corruption_appended_behind_an_open_gate_is_reported_with_its_line") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let gate = open(&path).unwrap();
    gate.submit(&proposal(1000)).unwrap();
    append_raw(&path, b"[1,2,3]\n");
    let err = gate.effect_ids().unwrap_err();
    assert!(err.to_string().contains("line 5"), "{err}");
    // An entry without an effect id is corrupt too.
    std::fs::write(&path, b"{\"kind\":\"PROPOSED\"}\n").unwrap();
    let err = open(&path).unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
}

#[test]
fn a_journal_that_shrank_under_an_open_gate_is_an_error() {
    if file_only("a_journal_that_shrank_under_an_open_gate_is_an_error") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let gate = open(&path).unwrap();
    gate.submit(&proposal(1000)).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(10).unwrap();
    assert!(matches!(
        gate.effect_ids(),
        Err(GateError::Journal(JournalError::Shrunk { .. }))
    ));
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    if file_only("blank_lines_are_skipped_but_counted") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    std::fs::write(&path, b"\n\n{oops}\n").unwrap();
    let err = open(&path).unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
}

#[test]
fn a_line_with_a_recomputed_hash_but_no_valid_signature_is_corrupt() {
    if file_only("a_line_with_a_recomputed_hash_but_no_valid_signature_is_corrupt") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let gate = open(&path).unwrap();
    gate.submit(&proposal(1000)).unwrap();
    drop(gate);
    // Edit the amount of the last entry and recompute its hash: only the signature can tell.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = lines.last_mut().unwrap().as_object_mut().unwrap();
    last.insert("evidence".into(), serde_json::json!({"id": "forged"}));
    let hash = verify::entry::compute_hash(last).unwrap();
    last.insert("hash".into(), serde_json::json!(hash));
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).unwrap();
    let err = open(&path).unwrap_err().to_string();
    assert!(err.contains("line 4") && err.contains("signature"), "{err}");
}

#[test]
fn a_line_signed_by_an_untrusted_key_is_corrupt() {
    if file_only("a_line_signed_by_an_untrusted_key_is_corrupt") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let other = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let target = MemTarget::new(Tier::One, true);
    target.set_fact("incident_compensation", serde_json::json!(0));
    let gate = Gate::open(&path, target, AllLive, other.clone(), GateConfig::default()).unwrap();
    gate.submit(&proposal(1000)).unwrap();
    drop(gate);
    let err = open(&path).unwrap_err().to_string();
    assert!(
        err.contains("line 1") && err.contains("not a key this gate trusts"),
        "{err}"
    );
    // Trusted explicitly, the same journal opens.
    let config = GateConfig {
        trusted_signers: vec![other.verifying_key()],
        ..GateConfig::default()
    };
    let target = MemTarget::new(Tier::One, true);
    assert!(Gate::open(&path, target, AllLive, key(), config).is_ok());
}

#[test]
fn caller_fields_cannot_override_kind_or_effect_id() {
    if file_only("caller_fields_cannot_override_kind_or_effect_id") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let journal = interlock::journal::Journal::open(
        &path,
        vec![key().verifying_key()],
        std::time::Duration::from_secs(1),
    )
    .unwrap();
    for field in ["kind", "effect_id", "prev", "hash"] {
        let mut fields = serde_json::Map::new();
        fields.insert(field.into(), serde_json::json!("x"));
        let err = journal
            .append_entry("e", verify::entry::Kind::Authorized, fields, 1, &key())
            .unwrap_err();
        assert!(matches!(err, JournalError::ReservedField { .. }), "{err}");
    }
    assert!(read_all(&path).unwrap().is_empty());
}

#[test]
fn a_complete_unread_line_after_the_index_is_never_cut_as_torn() {
    if file_only("a_complete_unread_line_after_the_index_is_never_cut_as_torn") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let gate = open(&path).unwrap();
    let eid = gate.submit(&proposal(1000)).unwrap().effect_id;
    // Bytes with a newline after the last line that the index will refuse (not an entry): the
    // journal reports them instead of cutting them off on the next append.
    append_raw(&path, b"{\"not\": \"an entry\"}\n");
    let err = gate.submit(&proposal(1000)).unwrap_err().to_string();
    assert!(err.contains("line 5"), "{err}");
    assert!(std::fs::read_to_string(&path).unwrap().contains("not"));
    assert_eq!(read_all(&path).unwrap().len(), 5, "nothing was cut: {eid}");
}

#[test]
fn a_held_journal_lock_blocks_recovery_with_a_report_and_status_still_answers() {
    if file_only("a_held_journal_lock_blocks_recovery_with_a_report_and_status_still_answers") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let target = MemTarget::new(Tier::One, true);
    target.set_fact("incident_compensation", serde_json::json!(0));
    target.push_faults([interlock::testing::Fault::Unknown]);
    let config = GateConfig {
        journal_lock_wait: std::time::Duration::from_millis(50),
        ..GateConfig::default()
    };
    let gate = Gate::open(&path, target, AllLive, key(), config).unwrap();
    let eid = gate.submit(&proposal(1000)).unwrap().effect_id;
    // Another holder of the journal lock (a stuck process), through a symlink.
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let held = std::fs::File::open(&link).unwrap();
    held.lock().unwrap();
    match gate.recover().unwrap().pop().map(|r| r.outcome) {
        Some(interlock::RecoveryOutcome::Blocked { holder, .. }) => {
            assert_eq!(holder, interlock::Holder::Journal)
        }
        other => panic!("expected Blocked by the journal, got {other:?}"),
    }
    assert_eq!(gate.status(&eid).unwrap(), Some(Status::InFlight));
    held.unlock().unwrap();
    assert_eq!(
        gate.recover().unwrap().pop().map(|r| r.outcome),
        Some(interlock::RecoveryOutcome::Resolved(
            Status::CommittedByRetry
        ))
    );
}

#[test]
fn settled_effects_leave_no_claim_files() {
    if file_only("settled_effects_leave_no_claim_files") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let target = MemTarget::new(Tier::One, true);
    target.set_fact("incident_compensation", serde_json::json!(0));
    target.push_faults([interlock::testing::Fault::Unknown]);
    let gate = Gate::open(&path, target, AllLive, key(), GateConfig::default()).unwrap();
    for n in 0..20 {
        let mut p = proposal(1000);
        p.request_id = Some(format!("req-{n}"));
        gate.submit(&p).unwrap();
    }
    gate.recover().unwrap();
    assert!(gate.open_effects().unwrap().is_empty());
    let claims = dir.path().join("j.jsonl.claims");
    assert_eq!(std::fs::read_dir(&claims).unwrap().count(), 0);
}

/// Built without the `postgres` feature, the gate keeps no journal in PostgreSQL: opening or
/// reading a `postgres://` location is a database error that says so, naming no credentials.
#[cfg(not(feature = "postgres"))]
#[test]
fn without_the_postgres_feature_a_postgres_location_is_refused() {
    let at = interlock::Location::parse("postgres://user:secret@db.invalid/journal");
    assert!(matches!(at, interlock::Location::Postgres(_)));
    let target = MemTarget::new(Tier::One, true);
    let Err(GateError::Journal(e @ JournalError::Database { .. })) =
        Gate::open_at(&at, target, AllLive, key(), GateConfig::default())
    else {
        panic!("a postgres:// journal opened without the postgres feature");
    };
    let said = e.to_string();
    assert!(said.contains("`postgres` feature"), "{said}");
    assert!(!said.contains("secret"), "{said}");
    let Err(e @ JournalError::Database { .. }) = interlock::read_entries(&at) else {
        panic!("a postgres:// journal read without the postgres feature");
    };
    assert!(e.to_string().contains("`postgres` feature"), "{e}");
}
