//! The `verify` binary end to end: exit codes 0 / 1 / 2 and what it prints.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Output};
use synthetic::seal_chain;
use verify::billing_credit::billing_credit_effect_id;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/billing_credit.original.json"
);

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> String {
    let p: PathBuf = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[5u8; 32])
}

fn bundle() -> Value {
    let eid = billing_credit_effect_id("case-00000000aa");
    let effect = json!({"customer": "cus_1", "amount": 1000, "description": "d"});
    let checks = json!({"lease_live": true, "grant": null, "violations": []});
    let b = seal_chain(
        &key(),
        &eid,
        0,
        vec![
            json!({"kind": "PROPOSED", "agent": "a", "lease": "l", "premises": {}, "effect": effect,
                   "request_id": "goodwill-credit:case-00000000aa"}),
            json!({"kind": "AUTHORIZED", "lease": "l"}),
            json!({"kind": "DISPATCHED", "effect": effect, "lease": "l", "premises": {}, "checks": checks}),
            json!({"kind": "COMMITTED", "via": "send", "evidence": {"credit": "cbtxn_1"}}),
        ],
    );
    serde_json::to_value(b).unwrap()
}

#[test]
fn the_original_results_verify() {
    let (code, out) = run(&[FIXTURE]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("billing_credit.original.json: python-original results, 6 receipts (unsigned, per-effect SHA-256 chains; consistency only): OK"),
        "{out}"
    );
}

#[test]
fn a_one_byte_edit_of_the_compat_fixture_fails_naming_effect_and_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(FIXTURE).unwrap();
    // The REFUSED entry's reason of effect 5af981a181de: "stale_premise at recovery".
    let needle = b"\"reason\": \"stale_premise at recovery\"";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    bytes[at + 11] = b'S';
    let (code, out) = run(&[&write(&dir, "edited.json", &bytes)]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAILED"), "{out}");
    assert!(
        out.contains("effect 5af981a181de: entry 3 (REFUSED) was altered"),
        "{out}"
    );
    assert!(out.contains(".receipt.entries[3]"), "{out}");
}

#[test]
fn receipt_bundles_exit_0_then_1_when_tampered() {
    let dir = tempfile::tempdir().unwrap();
    let b = bundle();
    let path = write(&dir, "r.json", b.to_string().as_bytes());
    let hex_key = hex::encode(key().verifying_key().as_bytes());
    let (code, out) = run(&["--key", &hex_key, &path]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "(interlock-receipt/1, pinned key {}), happened=true: OK",
            verify::fingerprint(&key().verifying_key())
        )),
        "{out}"
    );
    let (code, out) = run(&[&path]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "self-attested: signed by {}",
            verify::fingerprint(&key().verifying_key())
        )),
        "{out}"
    );

    let key_file = write(&dir, "key.hex", format!("{hex_key}\n").as_bytes());
    assert_eq!(run(&["--key", &key_file, &path]).0, Some(0));
    let raw_key = write(&dir, "key.bin", key().verifying_key().as_bytes());
    assert_eq!(run(&["--key", &raw_key, &path]).0, Some(0));

    let other = hex::encode(
        SigningKey::from_bytes(&[6u8; 32])
            .verifying_key()
            .as_bytes(),
    );
    let (code, out) = run(&["--key", &other, &path]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("wrong_signer"), "{out}");

    let mut t = b.clone();
    t["entries"][3]["evidence"]["credit"] = json!("cbtxn_2");
    let tampered = write(&dir, "t.json", t.to_string().as_bytes());
    let (code, out) = run(&[&tampered]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("entry 3 (COMMITTED): [hash_mismatch]"),
        "{out}"
    );

    // One good and one bad file: 1; with an unreadable one too: 2.
    assert_eq!(run(&[&path, &tampered]).0, Some(1));
    assert_eq!(
        run(&[&path, &tampered, "/nonexistent/file.json"]).0,
        Some(2)
    );
}

#[test]
fn could_not_check_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = write(
        &dir,
        "u.json",
        br#"{"format": "interlock-receipt/9", "effect_id": "x", "entries": []}"#,
    );
    let (code, out) = run(&[&unknown]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("unknown format"), "{out}");
    assert_eq!(run(&["/nonexistent/file.json"]).0, Some(2));
    assert_eq!(run(&[]).0, Some(2));
    assert_eq!(run(&["--bogus", FIXTURE]).0, Some(2));
    let (code, out) = run(&["--key", "abcd", FIXTURE]);
    assert_eq!(code, Some(2), "{out}");
    // A weak key (the identity point) is refused as a pin.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert_eq!(run(&["--key", &hex::encode(identity), FIXTURE]).0, Some(2));
    let not_json = write(&dir, "n.json", b"hello");
    assert_eq!(run(&[&not_json]).0, Some(2));
    assert_eq!(run(&["--help"]).0, Some(0));
}

#[test]
fn json_and_quiet_output() {
    let (code, out) = run(&["--json", FIXTURE]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["files"][0]["kind"], "python-original-results");
    assert_eq!(
        v["files"][0]["report"]["receipts"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
    let (code, out) = run(&["--quiet", FIXTURE]);
    assert_eq!(code, Some(0));
    assert!(out.trim().is_empty(), "{out}");
}
