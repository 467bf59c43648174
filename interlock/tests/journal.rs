//! The journal on disk: missing, empty, torn tail, corrupt middle line, shrunk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    std::fs::write(&path, b"\n\n{oops}\n").unwrap();
    let err = open(&path).unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
}
