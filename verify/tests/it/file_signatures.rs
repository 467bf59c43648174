//! One key rule for every whole-file signature: the matrix format's manifest, a billing_credit
//! nemesis file, a shared_cap matrix file and a shared_cap nemesis file (a merged nemesis file's
//! shards: `nemesis_shards.rs`) all refuse what the matrix format refuses: a small-order key (under
//! which a non-strict verifier takes one forged signature for every message), a key or signature
//! not written in lowercase hex, and a signature that only a non-strict verifier accepts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{identity_key_forgery, IDENTITY_KEY};
use serde_json::Value;
use verify::load::{load_document, Document};
use verify::receipt::KeyCheck;
use verify::shared_cap::nemesis::record::CapNemesisFile;
use verify::shared_cap::record::CapResults;

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn shared_cap() -> CapResults {
    match load_document(&fixture("tests/fixtures/shared_cap.json")).unwrap() {
        Document::SharedCap(f) => *f,
        _ => panic!("not a shared_cap file"),
    }
}

fn shared_cap_nemesis() -> CapNemesisFile {
    match load_document(&fixture("tests/fixtures/shared_cap_nemesis.json")).unwrap() {
        Document::SharedCapNemesis(f) => *f,
        _ => panic!("not a shared_cap nemesis file"),
    }
}

fn upper(hex: &str) -> String {
    hex.to_ascii_uppercase()
}

#[test]
fn the_matrix_format_refuses_a_weak_key_and_uppercase_hex() {
    let bytes = fixture("../results/billing_credit.json");
    let genuine = verify::load::load_results(&bytes).unwrap();
    assert!(verify::check::verify_results(&genuine, &KeyCheck::SelfAttested).ok);
    // The manifest's signature in uppercase.
    let mut f = genuine.clone();
    f.manifest.sig = upper(&f.manifest.sig);
    let r = verify::check::verify_results(&f, &KeyCheck::SelfAttested);
    assert!(!r.ok && !r.signed);
    assert!(r.findings.iter().any(|x| x.path == "manifest.sig"));
    // The identity key, with the one signature it "verifies" for every message.
    let mut f = genuine;
    f.environment.signer = IDENTITY_KEY.to_owned();
    f.manifest.signer = IDENTITY_KEY.to_owned();
    f.manifest.head = verify::manifest::head_hash(&f).unwrap();
    f.manifest.hash =
        verify::manifest::body_hash(&f.manifest.head, &f.manifest.cells, IDENTITY_KEY).unwrap();
    f.manifest.sig = identity_key_forgery();
    let r = verify::check::verify_results(&f, &KeyCheck::SelfAttested);
    assert!(!r.ok && !r.signed);
    assert!(r.findings.iter().any(|x| x.path == "environment.signer"));
}

#[test]
fn a_billing_credit_nemesis_file_refuses_uppercase_hex_signatures() {
    let (genuine, _) = common::nemesis_file();
    assert!(verify::nemesis::check::verify_nemesis(&genuine, &KeyCheck::SelfAttested).ok);
    let mut f = genuine.clone();
    f.signature.sig = upper(&f.signature.sig);
    let r = verify::nemesis::check::verify_nemesis(&f, &KeyCheck::SelfAttested);
    assert!(!r.ok);
    assert!(r.findings.iter().any(|x| x.path == "signature"), "{r:?}");
    // A signer the file names in uppercase is the same key in another spelling: refused too.
    let mut f = genuine;
    f.signature.signer = upper(&f.signature.signer);
    let r = verify::nemesis::check::verify_nemesis(&f, &KeyCheck::SelfAttested);
    assert!(!r.ok);
}

#[test]
fn a_billing_credit_nemesis_file_refuses_a_weak_key() {
    let (mut f, _) = common::nemesis_file();
    f.environment.signer = IDENTITY_KEY.to_owned();
    f.signature.signer = IDENTITY_KEY.to_owned();
    f.signature.hash = verify::nemesis::sign::file_hash(&f).unwrap();
    f.signature.sig = identity_key_forgery();
    let r = verify::nemesis::check::verify_nemesis(&f, &KeyCheck::SelfAttested);
    assert!(!r.ok);
    assert!(r.findings.iter().any(|x| x.path == "signature"), "{r:?}");
}

/// Whether a shared_cap matrix file is taken as signed, and its findings, self-attested.
fn shared_cap_signed(f: &CapResults) -> (bool, Vec<String>) {
    let r = verify::shared_cap::check::check(f, &KeyCheck::SelfAttested);
    (r.signed, r.findings)
}

#[test]
fn a_shared_cap_file_refuses_a_weak_key() {
    assert_eq!(shared_cap_signed(&shared_cap()), (true, vec![]));
    let mut f = shared_cap();
    f.environment.public_key = IDENTITY_KEY.to_owned();
    f.signature = Some(identity_key_forgery());
    let (signed, findings) = shared_cap_signed(&f);
    assert!(
        !signed,
        "a forged signature under the identity key was taken"
    );
    assert!(
        findings
            .iter()
            .any(|x| x.starts_with("environment.public_key")),
        "{findings:?}"
    );
}

#[test]
fn a_shared_cap_file_refuses_uppercase_hex() {
    let mut f = shared_cap();
    f.signature = f.signature.as_deref().map(upper);
    let (signed, findings) = shared_cap_signed(&f);
    assert!(!signed);
    assert!(findings.iter().any(|x| x.starts_with("signature")));
    let mut f = shared_cap();
    f.environment.public_key = upper(&f.environment.public_key);
    let (signed, _) = shared_cap_signed(&f);
    assert!(!signed);
}

#[test]
fn a_shared_cap_nemesis_file_refuses_a_weak_key_and_uppercase_hex() {
    let check = |f: &CapNemesisFile| {
        let r = verify::shared_cap::nemesis::check::check(f, &KeyCheck::SelfAttested);
        (r.signed, r.findings)
    };
    assert_eq!(check(&shared_cap_nemesis()), (true, vec![]));
    let mut f = shared_cap_nemesis();
    f.environment.public_key = IDENTITY_KEY.to_owned();
    f.signature = Some(identity_key_forgery());
    let (signed, findings) = check(&f);
    assert!(
        !signed,
        "a forged signature under the identity key was taken"
    );
    assert!(findings
        .iter()
        .any(|x| x.starts_with("environment.public_key")));
    let mut f = shared_cap_nemesis();
    f.signature = f.signature.as_deref().map(upper);
    assert!(!check(&f).0);
    let mut f = shared_cap_nemesis();
    f.environment.public_key = upper(&f.environment.public_key);
    assert!(!check(&f).0);
}

/// Under a pin, the command refuses the same: the forged shared_cap file fails under the
/// identity key however it is pinned (`--key` refuses a weak key before any file is read).
#[test]
fn the_command_refuses_a_weak_key_to_pin() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(["--key", IDENTITY_KEY, "--json"])
        .arg(format!(
            "{}/tests/fixtures/shared_cap.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["exit_code"], 2);
}
