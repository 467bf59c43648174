//! The tamper suite of issue 5: single edits a forger might make to a results file, each of which
//! must fail (exit 1) naming the place; and malformed files, which must be refused (exit 2).
//!
//! The file under attack is the committed run `results/billing_credit.json` at the workspace root
//! when it exists, else a synthetic, consistent 18-cell file from [`verify::synthetic`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;
use verify::check::{verify_results, verify_results_text, Detail, ResultsReport};
use verify::entry::compute_hash;
use verify::load::{load_document, load_for_check, load_results, Document, LoadError, Loaded};
use verify::receipt::KeyCheck;

fn committed_run() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json")
}

/// The files under attack, as JSON: the synthetic file, and the committed run when present.
fn bases() -> Vec<(&'static str, Value)> {
    let mut out = vec![(
        "synthetic",
        serde_json::to_value(synthetic::generate(&Default::default())).unwrap(),
    )];
    if let Ok(bytes) = std::fs::read(committed_run()) {
        out.push((
            "results/billing_credit.json",
            serde_json::from_slice(&bytes).expect("the committed run is JSON"),
        ));
    }
    out
}

/// The committed run when present, else the synthetic file.
fn base() -> Value {
    bases().pop().map(|(_, v)| v).unwrap()
}

fn cells(d: &Value) -> &Vec<Value> {
    d["cells"].as_array().unwrap()
}

fn find(d: &Value, pred: impl Fn(&Value) -> bool) -> Option<usize> {
    cells(d).iter().position(pred)
}

fn final_kind(c: &Value) -> Option<&str> {
    c["receipt"]["entries"].as_array()?.last()?["kind"].as_str()
}

fn interlock_committed(d: &Value) -> usize {
    find(d, |c| {
        c["column"] == "interlock" && final_kind(c) == Some("COMMITTED") && c["proof"] == true
    })
    .unwrap()
}

fn second_interlock(d: &Value, not: usize) -> usize {
    cells(d)
        .iter()
        .enumerate()
        .position(|(i, c)| i != not && c["column"] == "interlock" && c["receipt"].is_object())
        .unwrap()
}

fn hand_check(d: &Value) -> usize {
    find(d, |c| {
        c["column"] == "hand_check"
            && c["proof"] == true
            && c["ground_truth"]["case_credit_count"] != 0
    })
    .unwrap()
}

fn no_check(d: &Value) -> usize {
    find(d, |c| {
        c["column"] == "no_check" && c["ground_truth"]["case_credit_count"] != 0
    })
    .unwrap()
}

fn rehash_chain(entries: &mut [Value]) {
    let mut prev = Value::Null;
    for e in entries.iter_mut() {
        let m = e.as_object_mut().unwrap();
        m.insert("prev".into(), prev.clone());
        let h = compute_hash(m).unwrap();
        m.insert("hash".into(), json!(h));
        prev = json!(h);
    }
}

fn bump(v: &mut Value, by: i64) {
    *v = json!(v.as_i64().unwrap() + by);
}

fn flip(v: &mut Value) {
    *v = json!(!v.as_bool().unwrap());
}

type Mutation = (&'static str, Box<dyn Fn(&mut Value) -> String>);

/// Each mutation edits the file and returns the JSON path the verifier must name.
fn mutations() -> Vec<Mutation> {
    vec![
        (
            "environment claims a model decided",
            Box::new(|d| {
                d["environment"]["decider"] =
                    json!({"kind": "anthropic", "model": "claude-haiku-4-5-20251001"});
                "cells[0].decision.decider".to_owned()
            }),
        ),
        (
            "environment names a backend the runner cannot have used",
            Box::new(|d| {
                d["environment"]["backend"] = json!("stripe");
                "environment.backend".to_owned()
            }),
        ),
        (
            "decision amount",
            Box::new(|d| {
                let i = interlock_committed(d);
                bump(&mut d["cells"][i]["decision"]["amount"], 500);
                format!("cells[{i}].receipt.entries[0].effect.amount")
            }),
        ),
        (
            "case credit amount in ground truth",
            Box::new(|d| {
                let i = interlock_committed(d);
                bump(
                    &mut d["cells"][i]["ground_truth"]["case_credits"][0]["amount"],
                    -1000,
                );
                format!("cells[{i}].ground_truth.case_credits")
            }),
        ),
        (
            "balance transaction amount",
            Box::new(|d| {
                let i = no_check(d);
                let case = d["cells"][i]["case"]["case_id"].clone();
                let txns = d["cells"][i]["ground_truth"]["balance_transactions"]
                    .as_array_mut()
                    .unwrap();
                let t = txns.iter_mut().find(|t| t["case_id"] == case).unwrap();
                bump(&mut t["amount"], -1000);
                format!("cells[{i}].ground_truth.case_credits")
            }),
        ),
        (
            "interlock outcome string",
            Box::new(|d| {
                let i = interlock_committed(d);
                let o = d["cells"][i]["outcome"].as_str().unwrap();
                let forged = if o == "COMMITTED" {
                    "COMMITTED_BY_RETRY"
                } else {
                    "COMMITTED"
                };
                d["cells"][i]["outcome"] = json!(forged);
                format!("cells[{i}].outcome")
            }),
        ),
        (
            "hand_check outcome string",
            Box::new(|d| {
                let i = hand_check(d);
                d["cells"][i]["outcome"] = json!("REFUSED:approval");
                format!("cells[{i}].answer_matches")
            }),
        ),
        (
            "invariant_held flag",
            Box::new(|d| {
                let i = no_check(d);
                flip(&mut d["cells"][i]["invariant_held"]);
                format!("cells[{i}].invariant_held")
            }),
        ),
        (
            "answer_matches flag",
            Box::new(|d| {
                let i = hand_check(d);
                flip(&mut d["cells"][i]["answer_matches"]);
                format!("cells[{i}].answer_matches")
            }),
        ),
        (
            "no_check claims proof",
            Box::new(|d| {
                let i = no_check(d);
                d["cells"][i]["proof"] = json!(true);
                format!("cells[{i}].proof")
            }),
        ),
        (
            "interlock denies proof",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["proof"] = json!(false);
                format!("cells[{i}].proof")
            }),
        ),
        (
            "want count",
            Box::new(|d| {
                let i = interlock_committed(d);
                bump(&mut d["cells"][i]["want"]["count"], 1);
                format!("cells[{i}].want")
            }),
        ),
        (
            "want cents",
            Box::new(|d| {
                let i = no_check(d);
                bump(&mut d["cells"][i]["want"]["cents"], 1);
                format!("cells[{i}].want")
            }),
        ),
        (
            "ground truth count",
            Box::new(|d| {
                let i = interlock_committed(d);
                bump(&mut d["cells"][i]["ground_truth"]["case_credit_count"], 1);
                format!("cells[{i}].ground_truth.case_credit_count")
            }),
        ),
        (
            "ground truth cents",
            Box::new(|d| {
                let i = no_check(d);
                bump(&mut d["cells"][i]["ground_truth"]["case_credit_cents"], -1);
                format!("cells[{i}].ground_truth.case_credit_cents")
            }),
        ),
        (
            "ground truth credit id",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["ground_truth"]["case_credits"][0]["id"] = json!("cbtxn_forged");
                format!("cells[{i}].ground_truth.case_credits")
            }),
        ),
        (
            "listed stripe case credit id",
            Box::new(|d| {
                let i = hand_check(d);
                d["cells"][i]["stripe_ids"]["case_credits"][0] = json!("cbtxn_forged");
                format!("cells[{i}].stripe_ids.case_credits")
            }),
        ),
        (
            "compensation by others",
            Box::new(|d| {
                let i = no_check(d);
                bump(
                    &mut d["cells"][i]["ground_truth"]["compensation_by_others"],
                    1000,
                );
                format!("cells[{i}].ground_truth.compensation_by_others")
            }),
        ),
        (
            "summary held count",
            Box::new(|d| {
                bump(&mut d["summary"]["interlock"]["held"], -1);
                "summary.interlock.held".into()
            }),
        ),
        (
            "summary cell count",
            Box::new(|d| {
                bump(&mut d["summary"]["no_check"]["cells"], 1);
                "summary.no_check.cells".into()
            }),
        ),
        (
            "summary proof count",
            Box::new(|d| {
                bump(&mut d["summary"]["hand_check"]["proof"], -1);
                "summary.hand_check.proof".into()
            }),
        ),
        (
            "summary crash median",
            Box::new(|d| {
                bump(
                    &mut d["summary"]["interlock"]["median_crash_to_settled_ms"],
                    -5,
                );
                "summary.interlock.median_crash_to_settled_ms".into()
            }),
        ),
        (
            "summary restart median",
            Box::new(|d| {
                bump(
                    &mut d["summary"]["hand_check"]["median_restart_to_settled_ms"],
                    1,
                );
                "summary.hand_check.median_restart_to_settled_ms".into()
            }),
        ),
        (
            "timing behind a median",
            Box::new(|d| {
                // One interlock cell's restart time moves far enough to shift the column's
                // median. Which cell and which direction depends on the data (equal middle
                // values can absorb a move), so pick the first single edit that changes it.
                let idx: Vec<usize> = (0..cells(d).len())
                    .filter(|i| {
                        d["cells"][*i]["column"] == "interlock"
                            && d["cells"][*i]["timings"].is_object()
                    })
                    .collect();
                let times: Vec<u64> = idx
                    .iter()
                    .map(|i| {
                        d["cells"][*i]["timings"]["restart_to_settled_ms"]
                            .as_u64()
                            .unwrap()
                    })
                    .collect();
                let median = verify::results::median_ms(&times);
                let (k, value) = (0..times.len())
                    .flat_map(|k| [(k, 0u64), (k, 1_000_000_000u64)])
                    .find(|(k, value)| {
                        let mut moved = times.clone();
                        moved[*k] = *value;
                        verify::results::median_ms(&moved) != median
                    })
                    .expect("some single timing edit moves the median");
                d["cells"][idx[k]]["timings"]["restart_to_settled_ms"] = json!(value);
                "summary.interlock.median_restart_to_settled_ms".into()
            }),
        ),
        (
            "receipt entry field",
            Box::new(|d| {
                let i = interlock_committed(d);
                let n = d["cells"][i]["receipt"]["entries"]
                    .as_array()
                    .unwrap()
                    .len()
                    - 1;
                d["cells"][i]["receipt"]["entries"][n]["evidence"]["credit"] =
                    json!("cbtxn_forged");
                format!("cells[{i}].receipt.entries[{n}]")
            }),
        ),
        (
            "dropped entry",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["receipt"]["entries"]
                    .as_array_mut()
                    .unwrap()
                    .remove(2);
                format!("cells[{i}].receipt.entries[2]")
            }),
        ),
        (
            "duplicated entry",
            Box::new(|d| {
                let i = interlock_committed(d);
                let e = d["cells"][i]["receipt"]["entries"][2].clone();
                d["cells"][i]["receipt"]["entries"]
                    .as_array_mut()
                    .unwrap()
                    .insert(3, e);
                format!("cells[{i}].receipt.entries[3]")
            }),
        ),
        (
            "reordered entries",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["receipt"]["entries"]
                    .as_array_mut()
                    .unwrap()
                    .swap(1, 2);
                format!("cells[{i}].receipt.entries[1]")
            }),
        ),
        (
            "receipt moved to another cell",
            Box::new(|d| {
                let i = interlock_committed(d);
                let j = second_interlock(d, i);
                let (a, b) = (
                    d["cells"][i]["receipt"].clone(),
                    d["cells"][j]["receipt"].clone(),
                );
                d["cells"][i]["receipt"] = b;
                d["cells"][j]["receipt"] = a;
                format!("cells[{i}].receipt.effect_id")
            }),
        ),
        (
            "signature byte",
            Box::new(|d| {
                let i = interlock_committed(d);
                let sig = d["cells"][i]["receipt"]["entries"][1]["sig"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let forged = format!(
                    "{}{}",
                    &sig[..10],
                    if &sig[10..11] == "0" { "1" } else { "0" }
                ) + &sig[11..];
                d["cells"][i]["receipt"]["entries"][1]["sig"] = json!(forged);
                format!("cells[{i}].receipt.entries[1]")
            }),
        ),
        (
            "signer key",
            Box::new(|d| {
                let other = SigningKey::from_bytes(&[42u8; 32]).verifying_key();
                d["environment"]["signer"] = json!(hex::encode(other.as_bytes()));
                let i = find(d, |c| c["receipt"].is_object()).unwrap();
                format!("cells[{i}].receipt.entries[0]")
            }),
        ),
        (
            "chain rebuilt with fresh hashes",
            Box::new(|d| {
                let i = interlock_committed(d);
                let entries = d["cells"][i]["receipt"]["entries"].as_array_mut().unwrap();
                for e in entries.iter_mut() {
                    if let Some(a) = e.pointer_mut("/effect/amount") {
                        *a = json!(100_000);
                    }
                }
                rehash_chain(entries);
                d["cells"][i]["decision"]["amount"] = json!(100_000);
                format!("cells[{i}].receipt.entries[0]")
            }),
        ),
        (
            "journal kinds",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["journal_kinds"].as_array_mut().unwrap().pop();
                format!("cells[{i}].journal_kinds")
            }),
        ),
        (
            "via",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["via"] = json!("recovery-query");
                format!("cells[{i}].via")
            }),
        ),
        (
            "cell effect id",
            Box::new(|d| {
                let i = interlock_committed(d);
                d["cells"][i]["effect_id"] = json!("0".repeat(64));
                format!("cells[{i}].effect_id")
            }),
        ),
        (
            "hand_check log names another credit",
            Box::new(|d| {
                let i = hand_check(d);
                let log = d["cells"][i]["hand_check_log"].as_array_mut().unwrap();
                let last = log
                    .iter_mut()
                    .rev()
                    .find(|l| l["phase"] == "restart")
                    .unwrap();
                let field = if last.get("credit").is_some() {
                    "credit"
                } else {
                    "found"
                };
                last[field] = json!("cbtxn_forged");
                format!("cells[{i}].proof")
            }),
        ),
        (
            "restart status",
            Box::new(|d| {
                let i = no_check(d);
                d["cells"][i]["restart"]["status"] = json!("REFUSED:approval");
                format!("cells[{i}].restart.status")
            }),
        ),
        (
            "no_check outcome string",
            Box::new(|d| {
                let i = no_check(d);
                d["cells"][i]["outcome"] = json!("FOUND_BY_LOOKUP");
                format!("cells[{i}].outcome")
            }),
        ),
        (
            "record kind",
            Box::new(|d| {
                let i = no_check(d);
                d["cells"][i]["record"] = json!("signed_chain");
                format!("cells[{i}].record")
            }),
        ),
        (
            "dropped cell",
            Box::new(|d| {
                let i = no_check(d);
                d["cells"].as_array_mut().unwrap().remove(i);
                "summary.no_check.cells".into()
            }),
        ),
        (
            "duplicated cell",
            Box::new(|d| {
                let i = no_check(d);
                let c = d["cells"][i].clone();
                d["cells"].as_array_mut().unwrap().push(c);
                let n = cells(d).len() - 1;
                format!("cells[{n}]")
            }),
        ),
    ]
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_verify"))
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The report of a file checked as the command checks it (a group of cells at a time, from its
/// text), with every cell's report kept; `None` when a cell does not read.
fn text_report(bytes: &[u8], key: &KeyCheck) -> Option<ResultsReport> {
    match load_for_check(bytes) {
        Ok(Loaded::Results(file)) => verify_results_text(&file, key, Detail::Every).ok(),
        _ => None,
    }
}

#[test]
fn the_untouched_file_verifies() {
    for (_, d) in bases() {
        let bytes = serde_json::to_string_pretty(&d).unwrap();
        let f = load_results(bytes.as_bytes()).unwrap();
        let r = verify_results(&f, &KeyCheck::SelfAttested);
        assert!(r.ok, "{:#?}", r.first_findings());
        let text = text_report(bytes.as_bytes(), &KeyCheck::SelfAttested);
        assert_eq!(text.as_ref(), Some(&r), "the text path reports the same");
        assert_eq!(r.key, "self-attested");
        assert!(r.signed);
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "run.json",
            serde_json::to_string(&d).unwrap().as_bytes(),
        );
        let out = bin().arg(&p).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        let signer = d["environment"]["signer"].as_str().unwrap();
        let key = verify::keys::parse_key(signer).unwrap();
        let fingerprint = verify::fingerprint(&key);
        let generated = d["generated"].as_str().unwrap();
        let commit = d["environment"]["git_commit"].as_str().map_or_else(
            || "commit not recorded".to_owned(),
            |c| format!("commit {c}"),
        );
        assert!(
            stdout.contains(&format!(
                "manifest signed; signer {fingerprint} (self-attested: the key the file names itself;"
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("generated {generated}, {commit}: OK")),
            "{stdout}"
        );
        let out = bin().args(["--key", signer]).arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!(
            "manifest signed; signer {fingerprint} (pinned), generated {generated}, {commit}: OK"
        )));
    }
}

#[test]
fn every_single_mutation_fails_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let all = mutations();
    assert!(all.len() >= 25);
    for ((file, base), (name, mutate)) in bases()
        .into_iter()
        .flat_map(|b| all.iter().map(move |m| (b.clone(), m)))
    {
        let name = format!("{file}: {name}");
        let mut d = base.clone();
        let path = mutate(&mut d);
        let bytes = serde_json::to_vec_pretty(&d).unwrap();
        let file = load_results(&bytes)
            .unwrap_or_else(|e| panic!("{name}: the mutated file no longer loads: {e}"));
        let report = verify_results(&file, &KeyCheck::SelfAttested);
        assert!(!report.ok, "{name}: not detected");
        let text = text_report(&bytes, &KeyCheck::SelfAttested);
        assert_eq!(
            text.as_ref(),
            Some(&report),
            "{name}: the text path differs"
        );
        let all_findings: Vec<_> = report
            .cell_reports
            .iter()
            .flat_map(|c| c.findings.iter())
            .chain(report.findings.iter())
            .collect();
        assert!(
            all_findings.iter().any(|f| f.path == path),
            "{name}: no finding at {path}; got {:#?}",
            all_findings
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
        );
        let p = write(&dir, "m.json", &bytes);
        let out = bin().arg(&p).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{name}: {stdout}");
        assert!(stdout.contains("FAILED"), "{name}: {stdout}");
        let place = path.split('.').next().unwrap();
        assert!(
            stdout.contains(place),
            "{name}: the output does not name {place}: {stdout}"
        );
    }
}

#[test]
fn shape_errors_name_the_json_path_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "unknown format version",
            Box::new(|d| d["format"] = json!("interlock-results/3")),
            "interlock-results/3",
        ),
        (
            "the previous format version (no manifest)",
            Box::new(|d| d["format"] = json!("interlock-results/1")),
            "interlock-results/1",
        ),
        (
            "format not a string",
            Box::new(|d| d["format"] = json!(1)),
            "format",
        ),
        (
            "missing key",
            Box::new(|d| {
                d["cells"][3].as_object_mut().unwrap().remove("want");
            }),
            "cells[3]",
        ),
        (
            "wrong type",
            Box::new(|d| d["cells"][2]["repeat"] = json!("0")),
            "cells[2].repeat",
        ),
        (
            "unknown key",
            Box::new(|d| d["cells"][1]["ground_truth"]["extra"] = json!(1)),
            "cells[1].ground_truth",
        ),
        (
            "negative count",
            Box::new(|d| d["cells"][0]["want"]["count"] = json!(-1)),
            "cells[0].want.count",
        ),
        (
            "huge integer",
            Box::new(|d| d["environment"]["seed"] = json!(1e300)),
            "environment.seed",
        ),
    ];
    for (name, mutate, needle) in cases {
        let mut d = base();
        mutate(&mut d);
        let bytes = serde_json::to_vec(&d).unwrap();
        let err = load_results(&bytes).expect_err(name);
        assert!(err.to_string().contains(needle), "{name}: {err}");
        assert!(
            text_report(&bytes, &KeyCheck::SelfAttested).is_none(),
            "{name}: the text path checked a file that does not load"
        );
        if name == "missing key" {
            assert!(err.to_string().contains("want"), "{err}");
        }
        let out = bin().arg(write(&dir, "bad.json", &bytes)).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{name}"
        );
    }
}

#[test]
fn malformed_files_exit_2_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = serde_json::to_vec(&base()).unwrap();
    let mut invalid_utf8 = good.clone();
    let at = good.windows(8).position(|w| w == b"billing_").unwrap();
    invalid_utf8[at] = 0xff;
    let deep = "[".repeat(100_000).into_bytes();
    let text = String::from_utf8(good.clone()).unwrap();
    let huge_literal = text
        .replacen("\"seed\":", "\"seed\":1e999,\"seed_\":", 1)
        .into_bytes();
    let huge_amount = text
        .replacen(
            "\"amount\":",
            "\"amount\":-999999999999999999999999999999,\"amount_\":",
            1,
        )
        .into_bytes();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("invalid utf-8", invalid_utf8),
        ("deep nesting", deep),
        ("deep objects", "{\"a\":".repeat(50_000).into_bytes()),
        ("huge numbers", huge_literal),
        ("huge amount", huge_amount),
        ("not an object", b"[1,2,3]".to_vec()),
        ("trailing garbage", [good.as_slice(), b" x"].concat()),
    ];
    for (name, bytes) in cases {
        assert!(load_document(&bytes).is_err(), "{name}: loaded");
        let out = bin().arg(write(&dir, "bad.json", &bytes)).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // An error, on standard error; standard output carries verdicts only.
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("could not check"),
            "{name}"
        );
        assert!(out.stdout.is_empty(), "{name}");
    }
    assert!(matches!(
        load_document(&[0xff, 0xfe]),
        Err(LoadError::Utf8 { offset: 0 })
    ));
    assert!(matches!(
        load_document(b"{\"a\":"),
        Err(LoadError::Syntax { .. })
    ));
}

#[test]
fn duplicate_keys_are_refused_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    for (_, d) in bases() {
        let i = cells(&d)
            .iter()
            .position(|c| c["receipt"].is_object())
            .unwrap();
        let text = serde_json::to_string(&d).unwrap();
        // A second `kind` inside the first entry of that cell's receipt.
        let entry = serde_json::to_string(&d["cells"][i]["receipt"]["entries"][0]).unwrap();
        let forged = entry.replacen('{', "{\"kind\":\"COMMITTED\",", 1);
        let bytes = text.replacen(&entry, &forged, 1).into_bytes();
        let err = load_document(&bytes).unwrap_err();
        assert!(
            matches!(&err, LoadError::Shape { path, message }
                if path == &format!("cells[{i}].receipt.entries[0]") && message.contains("duplicate key")),
            "{err}"
        );
        let out = bin().arg(write(&dir, "dup.json", &bytes)).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
    }
    assert!(matches!(
        load_document(br#"{"format": "interlock-receipt/1", "format": "interlock-receipt/1"}"#),
        Err(LoadError::Shape { .. })
    ));
}

#[test]
fn results_and_receipts_are_detected() {
    let d = base();
    let bytes = serde_json::to_vec(&d).unwrap();
    assert!(matches!(
        load_document(&bytes).unwrap(),
        Document::Results(_)
    ));
    let receipt = cells(&d).iter().find(|c| c["receipt"].is_object()).unwrap()["receipt"].clone();
    let rb = serde_json::to_vec(&receipt).unwrap();
    assert!(matches!(load_document(&rb).unwrap(), Document::Receipt(_)));
    assert!(load_results(&rb).is_err());
}

#[test]
fn a_recorded_clock_start_that_the_cells_first_invoices_contradict_fails() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../results/billing_credit.json"
    ))
    .unwrap();
    let genuine = verify::load::load_results(&bytes).unwrap();
    let key = verify::receipt::KeyCheck::SelfAttested;
    assert!(verify::check::verify_results(&genuine, &key).ok);
    let mut moved = genuine.clone();
    let start = moved.environment.clock_start.unwrap();
    moved.environment.clock_start = Some(start + 86_400);
    let report = verify::check::verify_results(&moved, &key);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.code == "ground_truth_inconsistent" && f.path.ends_with(".invoices")),
        "{:?}",
        report.findings
    );
}

/// A cell changed after signing, with the genuine manifest and signature kept: under the pinned
/// genuine key the file is not read past the manifest (exit 1, the first differing cell named,
/// no count in text or JSON, nothing derived); self-attested it still fails naming the cell.
#[test]
fn a_cell_that_differs_from_its_signed_hash_stops_a_pinned_check_before_anything_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    for (file, base) in bases() {
        let signer = base["environment"]["signer"].as_str().unwrap().to_owned();
        let key = KeyCheck::Pinned(verify::keys::parse_key(&signer).unwrap());
        let (first, later) = (interlock_committed(&base), hand_check(&base));
        let (first, later) = (first.min(later), first.max(later));
        let mut d = base.clone();
        bump(&mut d["cells"][first]["decision"]["amount"], 500);
        d["cells"][later]["outcome"] = json!("COMMITTED_ON_QUERY");
        let bytes = serde_json::to_vec(&d).unwrap();
        let place = format!("cells[{first}]");

        let typed = verify_results(&load_results(&bytes).unwrap(), &key);
        assert_eq!(text_report(&bytes, &key).as_ref(), Some(&typed), "{file}");
        assert!(!typed.ok && !typed.read && !typed.signed, "{file}");
        assert!(typed.cell_reports.is_empty(), "{file}: cells were checked");
        let found: Vec<_> = typed
            .findings
            .iter()
            .map(|f| (&*f.path, &*f.code))
            .collect();
        assert_eq!(found, [(&*place, "manifest_mismatch")], "{file}");

        let p = write(&dir, "cell.json", &bytes);
        let out = bin().args(["--key", &signer]).arg(&p).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{file}: {stdout}");
        assert!(
            stdout.contains("cannot be read further"),
            "{file}: {stdout}"
        );
        assert!(stdout.contains(&place), "{file}: {stdout}");
        assert!(
            !stdout.contains(&format!("cells[{later}]")),
            "{file}: {stdout}"
        );
        for count in [" cells,", " receipts,"] {
            assert!(!stdout.contains(count), "{file}: {stdout}");
        }
        let out = bin()
            .args(["--json", "--key", &signer])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{file}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let report = &v["files"][0]["report"];
        for count in ["cells", "receipts"] {
            assert_eq!(report[count], Value::Null, "{file}: {count} in {report}");
        }
        assert_eq!(report["cell_reports"], json!([]), "{file}");

        let open = text_report(&bytes, &KeyCheck::SelfAttested).unwrap();
        assert!(open.read && !open.ok, "{file}");
        let cell = open.cell_reports.iter().find(|c| c.index == first).unwrap();
        assert!(
            cell.findings
                .iter()
                .any(|f| f.path == place && f.code == "manifest_mismatch"),
            "{file}: {:#?}",
            cell.findings
        );
        let out = bin().arg(&p).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{file}: {stdout}");
        assert!(stdout.contains(&place), "{file}: {stdout}");
    }
}

/// Where a cell's text hashes otherwise than its typed form (a field written as `null` that the
/// typed cell leaves out), the typed cell's hash decides, under a pin as self-attested.
#[test]
fn a_cell_whose_text_differs_only_where_the_typed_cell_does_not_still_passes_a_pin() {
    for (file, mut d) in bases() {
        let signer = d["environment"]["signer"].as_str().unwrap().to_owned();
        let key = KeyCheck::Pinned(verify::keys::parse_key(&signer).unwrap());
        let i = interlock_committed(&d);
        assert!(d["cells"][i]["decision"].get("replayed_from").is_none());
        d["cells"][i]["decision"]["replayed_from"] = Value::Null;
        let bytes = serde_json::to_vec(&d).unwrap();
        let typed = verify_results(&load_results(&bytes).unwrap(), &key);
        assert!(
            typed.ok && typed.read,
            "{file}: {:#?}",
            typed.first_findings()
        );
        assert_eq!(text_report(&bytes, &key).as_ref(), Some(&typed), "{file}");
        let open = text_report(&bytes, &KeyCheck::SelfAttested).unwrap();
        assert!(open.ok, "{file}: {:#?}", open.first_findings());
    }
}
