//! What a scenario file on the contract may cost to read, and what its receipts must agree with: refused before anything is built when
//! it holds more objects and arrays than its size allows or nests them too deep, and refused
//! when it comes compressed (a forger's review: 947 KB of gzip expanded to a file whose trees took
//! 680 MB).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use std::process::Command;
use verify::contract::{read, ReadError, MAX_DEPTH, MIN_BYTES_PER_CONTAINER};
use verify::scenarios::pr_merge::PrMerge;

fn genuine() -> serde_json::Value {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    serde_json::to_value(synthetic::pr_merge::signed_file(&key)).unwrap()
}

fn limits_error(v: &serde_json::Value) -> String {
    match read::<PrMerge>(&serde_json::to_vec(v).unwrap()) {
        Err(ReadError::Limits(why)) => why,
        other => panic!("not refused for its limits: {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_scenario_file_denser_in_objects_than_the_runner_writes_is_refused_before_it_is_built() {
    let genuine = genuine();
    assert!(read::<PrMerge>(&serde_json::to_vec(&genuine).unwrap()).is_ok());
    let mut dense = genuine.clone();
    // Small objects, each well under MIN_BYTES_PER_CONTAINER bytes (but within the one value per
    // 8 bytes every document is held to), are refused whatever their place: the count comes
    // before the shape.
    dense["cells"][0]["truth"]["updates"] = serde_json::Value::Array(
        (0..20_000)
            .map(|_| serde_json::json!({ "k": "x".repeat(36) }))
            .collect(),
    );
    let why = limits_error(&dense);
    assert!(
        why.contains(&format!(
            "more than one per {MIN_BYTES_PER_CONTAINER} bytes"
        )),
        "{why}"
    );
    let mut deep = serde_json::json!({});
    for _ in 0..MAX_DEPTH + 1 {
        deep = serde_json::json!({ "k": deep });
    }
    let mut nested = genuine;
    nested["cells"][0]["ticket"]["status"] = deep;
    let why = limits_error(&nested);
    assert!(why.contains(&format!("more than {MAX_DEPTH}")), "{why}");
}

#[test]
fn a_compressed_scenario_file_is_refused_by_the_command_with_how_to_fix_it() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_vec(&genuine()).unwrap();
    let plain = dir.path().join("pr_merge.json");
    std::fs::write(&plain, &text).unwrap();
    let packed = dir.path().join("pr_merge.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).unwrap();
    std::fs::write(&packed, gz.finish().unwrap()).unwrap();
    let run = |p: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_verify"))
            .arg(p)
            .output()
            .unwrap()
    };
    let ok = run(&plain);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let refused = run(&packed);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("read plain, never compressed"), "{stderr}");
    assert!(stderr.contains("gzip -d"), "{stderr}");
}

#[test]
fn a_receipt_naming_another_head_or_another_merge_than_the_repository_holds_is_found() {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let file = synthetic::pr_merge::signed_file(&key);
    let cell = file
        .cells
        .iter()
        .find(|c| c.ticket.receipt.is_some())
        .expect("a gated cell");
    let findings = |t: &verify::scenarios::pr_merge::TicketRecord| {
        verify::scenarios::pr_merge::receipt_findings(&cell.truth, t)
            .into_iter()
            .map(|f| f.path)
            .collect::<Vec<_>>()
    };
    assert!(findings(&cell.ticket).is_empty());
    let mut other_merge = cell.ticket.clone();
    if let Some(r) = other_merge.receipt.as_mut() {
        r.entries[3]["evidence"]["merge_commit"] = serde_json::json!("e".repeat(40));
    }
    assert_eq!(
        findings(&other_merge),
        ["ticket.receipt.entries[3].evidence.merge_commit"]
    );
    let mut other_head = cell.ticket.clone();
    if let Some(r) = other_head.receipt.as_mut() {
        r.entries[2]["effect"]["sha"] = serde_json::json!("f".repeat(40));
    }
    assert_eq!(
        findings(&other_head),
        ["ticket.receipt.entries[2].effect.sha"]
    );
}

#[test]
fn a_gated_ticket_whose_restart_failed_is_unresolved_like_any_columns_and_needs_no_receipt() {
    use verify::contract::{check, sign};
    use verify::receipt::KeyCheck;
    use verify::scenarios::pr_merge::{judge, summarize, RESTART_FAILED};
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let mut file = synthetic::pr_merge::signed_file(&key);
    let i = file
        .cells
        .iter()
        .position(|c| c.ticket.receipt.is_some())
        .expect("a gated cell");
    let unresolved = |file: &mut verify::contract::ScenarioFile<PrMerge>, status: &str| {
        let c = &mut file.cells[i];
        c.ticket.status = status.into();
        c.ticket.receipt = None;
        c.ticket.effect_id = None;
        c.ticket.journal_kinds = None;
        c.judgement = judge(c).ok();
        let pairs: Vec<_> = file
            .cells
            .iter()
            .filter_map(|c| c.judgement.as_ref().map(|j| (c, j)))
            .collect();
        file.summary = summarize(&pairs);
        sign(file, &key).unwrap();
    };
    let pinned = KeyCheck::Pinned(key.verifying_key());
    unresolved(&mut file, RESTART_FAILED);
    let v = check(file, &pinned).unwrap_or_else(|r| panic!("{:?}", r.findings));
    // The failed restart gave no answer: it counts as a wrong answer here, against the column.
    assert_eq!(v.summary()["interlock"].wrong_answers, 1);
    // Any other status still needs the gate's receipt.
    let mut file = synthetic::pr_merge::signed_file(&key);
    unresolved(&mut file, "COMMITTED");
    assert!(check(file, &pinned).is_err());
}
