//! Issue 10: `verify` cannot be talked into OK. Every attack of the issue, built in code from the
//! fixtures (the committed run and the synthetic file; the original Python results), with a
//! forger's tools: edit any field, recompute any summary, re-hash chains, and sign with a key of
//! their own. None of them may exit 0; none may crash.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ed25519_dalek::SigningKey;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::process::Command;
use verify::entry::seal;
use verify::results::ResultsFile;

const ORIGINAL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/billing_credit.original.json"
);

fn committed_run() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/billing_credit.json")
}

/// The genuine files under attack: the synthetic file, and the committed run when present.
fn genuine() -> Vec<(&'static str, Value)> {
    let mut out = vec![(
        "synthetic",
        serde_json::to_value(synthetic::generate(&Default::default())).unwrap(),
    )];
    if let Ok(bytes) = std::fs::read(committed_run()) {
        out.push(("committed", serde_json::from_slice(&bytes).unwrap()));
    }
    out
}

/// The forger's own key.
fn forger() -> SigningKey {
    SigningKey::from_bytes(&[0x42; 32])
}

fn cells(d: &mut Value) -> &mut Vec<Value> {
    d["cells"].as_array_mut().unwrap()
}

fn find(d: &Value, pred: impl Fn(&Value) -> bool) -> usize {
    d["cells"]
        .as_array()
        .unwrap()
        .iter()
        .position(pred)
        .unwrap()
}

fn committed_interlock(d: &Value) -> usize {
    find(d, |c| {
        c["column"] == "interlock"
            && c["receipt"]["entries"]
                .as_array()
                .and_then(|e| e.last())
                .is_some_and(|e| e["kind"] == "COMMITTED")
    })
}

/// Re-sign every receipt entry with `key` (re-hashing the chains), restate the summary from the
/// cells' stated judgements, publish `key` as the signer, and sign a fresh manifest with it.
fn resign(d: &mut Value, key: &SigningKey) {
    for c in cells(d) {
        let entries = c
            .get_mut("receipt")
            .and_then(|r| r.get_mut("entries"))
            .and_then(Value::as_array_mut);
        if let Some(entries) = entries {
            let mut prev = Value::Null;
            for e in entries {
                let m: &mut Map<String, Value> = e.as_object_mut().unwrap();
                m.insert("prev".into(), prev.clone());
                seal(m, key).unwrap();
                prev = m["hash"].clone();
            }
        }
        // A forger who re-signs the entries re-seals the head too.
        if c["receipt"]["head"].is_object() {
            let mut b: verify::entry::ReceiptBundle =
                serde_json::from_value(c["receipt"].clone()).unwrap();
            let ts = b.head.as_ref().unwrap().ts_ms;
            verify::binding::seal_bundle(&mut b, key, ts).unwrap();
            c["receipt"] = serde_json::to_value(b).unwrap();
        }
    }
    d["environment"]["signer"] = json!(hex::encode(key.verifying_key().as_bytes()));
    let mut file: ResultsFile = serde_json::from_value(d.clone()).unwrap();
    file.summary = verify::scenarios::billing_credit::summarize(&file.columns, &file.cells);
    verify::manifest::sign(&mut file, key).unwrap();
    *d = serde_json::to_value(file).unwrap();
}

/// Only restate the summary and re-sign the manifest (receipts untouched).
fn restate(d: &mut Value, key: &SigningKey) {
    let mut file: ResultsFile = serde_json::from_value(d.clone()).unwrap();
    file.summary = verify::scenarios::billing_credit::summarize(&file.columns, &file.cells);
    verify::manifest::sign(&mut file, key).unwrap();
    *d = serde_json::to_value(file).unwrap();
}

fn verify_bin(args: &[&str], bytes: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.json");
    std::fs::write(&p, bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .arg(&p)
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

fn genuine_key(d: &Value) -> String {
    d["environment"]["signer"].as_str().unwrap().to_owned()
}

/// The edit must not pass: neither under the genuine (pinned) key, nor self-attested.
fn assert_refused(name: &str, genuine_signer: &str, d: &Value) {
    let bytes = serde_json::to_vec_pretty(d).unwrap();
    for args in [vec!["--key", genuine_signer], vec![]] {
        let (code, out) = verify_bin(&args, &bytes);
        assert!(
            matches!(code, Some(1) | Some(2)),
            "{name} ({args:?}): exit {code:?}\n{out}"
        );
    }
}

/// The edit must not pass under the genuine key (the forger re-signed with their own key; the
/// self-attested check may accept a consistent forgery, and says it is self-attested).
fn assert_refused_pinned(name: &str, genuine_signer: &str, d: &Value) {
    let bytes = serde_json::to_vec_pretty(d).unwrap();
    let (code, out) = verify_bin(&["--key", genuine_signer], &bytes);
    assert_eq!(code, Some(1), "{name}: exit {code:?}\n{out}");
}

type Edit = Box<dyn Fn(&mut Value)>;

/// Edits of issue 10, items 3 and 4, each applied with the summary restated and everything
/// re-signed by the forger: each must fail under the genuine key; `consistency` ones must fail
/// self-attested too.
fn forgeries() -> Vec<(&'static str, bool, Edit)> {
    vec![
        (
            "approval cap differs from the signed grant",
            true,
            Box::new(|d| {
                let i = committed_interlock(d);
                d["cells"][i]["case"]["approval"]["max_cents"] = json!(5000);
            }),
        ),
        (
            "ground-truth credit amount differs from the signed evidence",
            true,
            Box::new(|d| {
                let i = committed_interlock(d);
                let c = &mut d["cells"][i]["ground_truth"];
                let id = c["case_credits"][0]["id"].clone();
                c["case_credits"][0]["amount"] = json!(-900);
                c["case_credit_cents"] = json!(900);
                for t in c["balance_transactions"].as_array_mut().unwrap() {
                    if t["id"] == id {
                        t["amount"] = json!(-900);
                    }
                }
                d["cells"][i]["want"]["cents"] = json!(1000);
                d["cells"][i]["invariant_held"] = json!(false);
            }),
        ),
        (
            "a second case credit with proof still true",
            true,
            Box::new(|d| {
                let i = committed_interlock(d);
                let case_id = d["cells"][i]["case"]["case_id"].clone();
                let gt = &mut d["cells"][i]["ground_truth"];
                let credit =
                    json!({"id": "cbtxn_forged", "amount": -1000, "created": 1, "effect_id": null});
                gt["case_credits"].as_array_mut().unwrap().push(credit);
                gt["balance_transactions"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({
                    "id": "cbtxn_forged", "type": "adjustment", "amount": -1000, "created": 1,
                    "case_id": case_id, "incident": null, "credit_note": null, "invoice": null}));
                gt["case_credit_count"] = json!(2);
                gt["case_credit_cents"] = json!(2000);
                d["cells"][i]["stripe_ids"]["case_credits"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("cbtxn_forged"));
                d["cells"][i]["invariant_held"] = json!(false);
            }),
        ),
        (
            "the decision's premises differ from the signed proposal",
            true,
            Box::new(|d| {
                let i = committed_interlock(d);
                d["cells"][i]["decision"]["premises"]["incident_compensation"] = json!(7);
            }),
        ),
        (
            "a cell deleted",
            true,
            Box::new(|d| {
                cells(d).remove(0);
            }),
        ),
        (
            "a whole row deleted (rows restated)",
            false,
            Box::new(|d| {
                let row = d["rows"][0].clone();
                cells(d).retain(|c| !(c["crash"] == row["crash"] && c["outage"] == row["outage"]));
                d["rows"].as_array_mut().unwrap().remove(0);
            }),
        ),
        (
            "crash and outage labels swapped between two cells",
            true,
            Box::new(|d| {
                let a = 0;
                let b = find(d, |c| {
                    c["outage"] != d["cells"][0]["outage"] && c["column"] == d["cells"][0]["column"]
                });
                for field in ["crash", "outage"] {
                    let x = d["cells"][a][field].clone();
                    d["cells"][a][field] = d["cells"][b][field].clone();
                    d["cells"][b][field] = x;
                }
            }),
        ),
        (
            "an unplanned cell added",
            true,
            Box::new(|d| {
                let mut extra = d["cells"][0].clone();
                extra["repeat"] = json!(1);
                extra["case"]["case_id"] = json!("case-ffffffffff");
                cells(d).push(extra);
            }),
        ),
        (
            "no crash happened: worker_exit_signal null everywhere",
            true,
            Box::new(|d| {
                for c in cells(d) {
                    c["worker_exit_signal"] = Value::Null;
                }
            }),
        ),
        (
            "a judged cell ended by SIGTERM",
            true,
            Box::new(|d| {
                d["cells"][0]["worker_exit_signal"] = json!(15);
            }),
        ),
        (
            "a cell marked HARNESS_ERROR with its receipt cut to PROPOSED+AUTHORIZED",
            false,
            Box::new(|d| {
                let i = committed_interlock(d);
                let c = &mut d["cells"][i];
                c["outcome"] = json!("HARNESS_ERROR");
                c["harness_error"] = json!("the worker vanished");
                c["receipt"]["entries"].as_array_mut().unwrap().truncate(2);
                c["journal_kinds"] = json!(["PROPOSED", "AUTHORIZED"]);
                c["via"] = Value::Null;
            }),
        ),
        (
            "a HARNESS_ERROR without its evidence",
            true,
            Box::new(|d| {
                let c = &mut d["cells"][0];
                c["outcome"] = json!("HARNESS_ERROR");
                c["harness_error"] = json!(" ");
            }),
        ),
        (
            "interlock timings rewritten to 1 ms",
            false,
            Box::new(|d| {
                for c in cells(d) {
                    if c["column"] == "interlock" {
                        c["timings"] = json!({"crash_to_settled_ms": 1, "restart_to_settled_ms": 1, "outage_ms": 0});
                    }
                }
            }),
        ),
        (
            "want-rule input: the case's incident rewritten",
            false,
            Box::new(|d| {
                d["cells"][0]["case"]["incident"] = json!("INC-fedcba");
            }),
        ),
        (
            "want-rule input: a credit note's creation time moved",
            false,
            Box::new(|d| {
                let i = find(d, |c| {
                    c["ground_truth"]["credit_notes"]
                        .as_array()
                        .is_some_and(|n| !n.is_empty())
                });
                let note = &mut d["cells"][i]["ground_truth"]["credit_notes"][0];
                note["created"] = json!(note["created"].as_i64().unwrap() + 86_400);
            }),
        ),
        (
            "a file with no interlock cells",
            false,
            Box::new(|d| {
                cells(d).retain(|c| c["column"] != "interlock");
                d["columns"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|c| c != "interlock");
            }),
        ),
    ]
}

#[test]
fn every_forgery_fails_under_the_genuine_key_and_consistency_ones_fail_self_attested() {
    for (file, base) in genuine() {
        let signer = genuine_key(&base);
        for (name, consistency, edit) in forgeries() {
            let name = format!("{file}: {name}");
            // The forger's best: everything re-signed with their own key.
            let mut d = base.clone();
            edit(&mut d);
            resign(&mut d, &forger());
            let bytes = serde_json::to_vec_pretty(&d).unwrap();
            let (code, out) = verify_bin(&["--key", &signer], &bytes);
            assert_eq!(code, Some(1), "{name}, re-signed: {out}");
            let (code, out) = verify_bin(&[], &bytes);
            if consistency {
                assert_eq!(code, Some(1), "{name}, self-attested: {out}");
            }
            // A re-signed forgery never prints the genuine file's signer line.
            let genuine_fp = verify::fingerprint(&verify::keys::parse_key(&signer).unwrap());
            assert!(!out.contains(&genuine_fp), "{name}: {out}");
            // Without re-signing (the genuine key is not the forger's): fails both ways.
            let mut d = base.clone();
            edit(&mut d);
            assert_refused(&name, &signer, &d);
            // With the summary restated and the manifest re-signed by the forger, receipts kept.
            let mut d = base.clone();
            edit(&mut d);
            restate(&mut d, &forger());
            assert_refused_pinned(&name, &signer, &d);
        }
    }
}

#[test]
fn the_genuine_files_pass_pinned_and_under_an_allowed_signers_file() {
    for (file, d) in genuine() {
        let signer = genuine_key(&d);
        let bytes = serde_json::to_vec(&d).unwrap();
        let (code, out) = verify_bin(&["--key", &signer], &bytes);
        assert_eq!(code, Some(0), "{file}: {out}");
        let dir = tempfile::tempdir().unwrap();
        let signers = dir.path().join("allowed_signers");
        let other = hex::encode(forger().verifying_key().as_bytes());
        std::fs::write(
            &signers,
            format!("# keys\n{other} someone else\n{signer} the run\n"),
        )
        .unwrap();
        let (code, out) = verify_bin(&["--signers", signers.to_str().unwrap()], &bytes);
        assert_eq!(code, Some(0), "{file}: {out}");
        std::fs::write(&signers, format!("{other} someone else\n")).unwrap();
        let (code, out) = verify_bin(&["--signers", signers.to_str().unwrap()], &bytes);
        assert_eq!(code, Some(1), "{file}: {out}");
    }
}

#[test]
fn a_results_file_without_format_is_not_read_as_the_original() {
    for (file, base) in genuine() {
        let signer = genuine_key(&base);
        let mut d = base.clone();
        d.as_object_mut().unwrap().remove("format");
        let bytes = serde_json::to_vec(&d).unwrap();
        for args in [vec!["--key", signer.as_str()], vec![], vec!["--json"]] {
            let (code, out) = verify_bin(&args, &bytes);
            assert_eq!(code, Some(2), "{file} {args:?}: {out}");
            assert!(!out.contains("\"ok\""), "{out}");
        }
    }
    let (code, out) = verify_bin(&[], br#"{"scenario":0,"cells":0}"#);
    assert_eq!(code, Some(2), "{out}");
    let (code, out) = verify_bin(&[], br#"{"scenario":"x","cells":[]}"#);
    assert_eq!(code, Some(2), "{out}");
    let (code, out) = verify_bin(&[], br#"{"effect_id":"abcdefabcdef","entries":[]}"#);
    // An empty original receipt: known shape, but nothing to verify.
    assert_eq!(code, Some(1), "{out}");
}

fn original() -> Value {
    serde_json::from_slice(&std::fs::read(ORIGINAL).unwrap()).unwrap()
}

#[test]
fn original_judgements_are_checked() {
    let edits: Vec<(&str, Edit)> = vec![
        (
            "invariant_held",
            Box::new(|d| d["cells"][3]["invariant_held"] = json!(true)),
        ),
        (
            "answer_matches_stripe",
            Box::new(|d| d["cells"][0]["answer_matches_stripe"] = json!(false)),
        ),
        (
            "can_prove_what_happened of no_check",
            Box::new(|d| d["cells"][0]["can_prove_what_happened"] = json!(true)),
        ),
        (
            "case_credit_count",
            Box::new(|d| d["cells"][1]["ground_truth"]["case_credit_count"] = json!(2)),
        ),
        (
            "want",
            Box::new(|d| d["cells"][1]["want"]["case_credit_cents"] = json!(5)),
        ),
        (
            "an unknown key",
            Box::new(|d| d["cells"][1]["extra"] = json!(1)),
        ),
    ];
    let (code, out) = verify_bin(&[], &std::fs::read(ORIGINAL).unwrap());
    assert_eq!(code, Some(0), "{out}");
    for (name, edit) in edits {
        let mut d = original();
        edit(&mut d);
        let (code, out) = verify_bin(&[], &serde_json::to_vec(&d).unwrap());
        assert!(matches!(code, Some(1) | Some(2)), "{name}: {out}");
    }
}

#[test]
fn unsigned_original_content_never_passes_under_a_pinned_key() {
    let key = hex::encode(forger().verifying_key().as_bytes());
    let (code, out) = verify_bin(&["--key", &key], &std::fs::read(ORIGINAL).unwrap());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("unsigned_under_pinned_key"), "{out}");
    // A finding about the whole file names no path.
    assert!(out.contains("\n  [unsigned_under_pinned_key] "), "{out}");
    // An original receipt rebuilt with fresh hashes after changing the amount.
    let d = original();
    let cell = d["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["system"] == "interlock")
        .unwrap();
    let mut entries = cell["receipt"]["entries"].as_array().unwrap().clone();
    let mut prev = Value::Null;
    for e in &mut entries {
        let m = e.as_object_mut().unwrap();
        if let Some(effect) = m.get_mut("effect") {
            effect["amount"] = json!(900);
        }
        m.insert("prev".into(), prev.clone());
        let h = verify::pycompat::entry_hash(m).unwrap();
        m.insert("hash".into(), json!(h));
        prev = json!(h);
    }
    let bundle = json!({"effect_id": cell["receipt"]["effect_id"], "entries": entries});
    let bytes = serde_json::to_vec(&bundle).unwrap();
    let (code, out) = verify_bin(&[], &bytes);
    assert_eq!(code, Some(0), "consistency only, and says so: {out}");
    assert!(out.contains("unsigned"), "{out}");
    let (code, out) = verify_bin(&["--key", &key], &bytes);
    assert_eq!(code, Some(1), "{out}");
}

#[test]
fn oversized_and_unsafe_values_are_refused_with_small_output() {
    let eid = "a".repeat(100_000);
    let entries: Vec<Value> = (0..1000).map(|_| json!({})).collect();
    let bundle = json!({"format": "interlock-receipt/1", "effect_id": eid, "entries": entries});
    let bytes = serde_json::to_vec(&bundle).unwrap();
    let (code, out) = verify_bin(&[], &bytes);
    assert_eq!(code, Some(2), "{}", &out[..out.len().min(500)]);
    assert!(out.len() < 2_000, "{} bytes of output", out.len());
    // Under the string limit, but not an effect id.
    let bundle = json!({"format": "interlock-receipt/1", "effect_id": "a".repeat(60_000), "entries": entries});
    let (code, out) = verify_bin(&["--json"], &serde_json::to_vec(&bundle).unwrap());
    assert_eq!(code, Some(2));
    assert!(out.len() < 2_000, "{} bytes of output", out.len());
    // Integers JavaScript readers would round, in an unhashed field.
    for (file, base) in genuine() {
        let mut d = base.clone();
        d["cells"][0]["timings"]["outage_ms"] = json!(1u64 << 60);
        let (code, out) = verify_bin(&[], &serde_json::to_vec(&d).unwrap());
        assert_eq!(code, Some(2), "{file}: {out}");
        // Credit-note sums that would wrap a 64-bit integer.
        let mut d = base.clone();
        let note = json!({"id": "cn_x", "amount": i64::MAX, "status": "issued", "incident": null, "created": 1, "invoice": "in_x"});
        let notes = d["cells"][0]["ground_truth"]["credit_notes"]
            .as_array_mut()
            .unwrap();
        notes.push(note.clone());
        notes.push(note);
        let (code, _) = verify_bin(&[], &serde_json::to_vec(&d).unwrap());
        assert_eq!(code, Some(2), "{file}");
        // A free-form value past its limit (kept as text, at most 256 KiB), of values large
        // enough to pass the loader's density limit.
        let mut d = base.clone();
        let filler: Vec<Value> = (0..30_000).map(|_| json!("xxxxxxxxxx")).collect();
        d["cells"][0]["restart"] = json!({"detail": filler});
        let (code, out) = verify_bin(&[], &serde_json::to_vec(&d).unwrap());
        assert_eq!(code, Some(2), "{file}: {}", &out[..out.len().min(300)]);
        assert!(out.contains("free-form"), "{}", &out[..out.len().min(300)]);
        // Unknown fields in a receipt bundle; an uppercase signer.
        let mut d = base.clone();
        let i = committed_interlock(&d);
        d["cells"][i]["receipt"]["note"] = json!("trust me");
        let (code, _) = verify_bin(&[], &serde_json::to_vec(&d).unwrap());
        assert_eq!(code, Some(2), "{file}");
        let mut d = base.clone();
        let upper = genuine_key(&d).to_uppercase();
        d["environment"]["signer"] = json!(upper);
        let (code, _) = verify_bin(&[], &serde_json::to_vec(&d).unwrap());
        assert_eq!(code, Some(1), "{file}");
    }
}

#[test]
fn deep_values_do_not_blow_up_the_json_report() {
    let key = forger();
    let eid = verify::scenarios::billing_credit::billing_credit_effect_id("case-00000000aa");
    let mut deep = json!(0);
    for _ in 0..120 {
        deep = json!([deep]);
    }
    let effect = json!({"customer": "cus_1", "amount": 1000, "description": "d"});
    let b = synthetic::seal_chain(
        &key,
        &eid,
        0,
        vec![
            json!({"kind": "PROPOSED", "agent": "a", "lease": "l", "premises": {}, "effect": effect,
                   "request_id": "goodwill-credit:case-00000000aa"}),
            json!({"kind": "AUTHORIZED", "lease": "l"}),
            json!({"kind": "DISPATCHED", "effect": effect, "lease": "l", "premises": {},
                   "checks": {"lease_live": true, "grant": null, "violations": []}}),
            json!({"kind": "COMMITTED", "via": "send", "evidence": deep, "rechecked": deep}),
        ],
    );
    let bytes = serde_json::to_vec(&b).unwrap();
    let (code, out) = verify_bin(&["--json"], &bytes);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.len() < 4 * bytes.len() + 8_000,
        "{} bytes of output for {} bytes of input",
        out.len(),
        bytes.len()
    );
}

#[test]
fn strings_from_the_file_cannot_forge_a_line_on_a_terminal() {
    for (file, base) in genuine() {
        let mut d = base.clone();
        let forged = "X\r\u{1b}[2K\u{1b}[1A\nresults/billing_credit.json: 18 cells: OK\u{9b}0m";
        d["cells"][0]["outcome"] = json!(forged);
        let bytes = serde_json::to_vec(&d).unwrap();
        let (code, out) = verify_bin(&[], &bytes);
        assert_eq!(code, Some(1), "{file}: {out}");
        assert!(
            !out.chars().any(|c| c.is_control() && c != '\n'),
            "{file}: a control character reached the output: {out:?}"
        );
        assert!(
            !out.lines()
                .any(|l| l.starts_with("results/billing_credit.json")),
            "{file}: the forged line stands on its own: {out}"
        );
        let (code, out) = verify_bin(&["--json"], &bytes);
        assert_eq!(code, Some(1));
        assert!(
            out.is_ascii() || !out.chars().any(|c| c.is_control() && c != '\n'),
            "{out:?}"
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["exit_code"], 1);
    }
}

#[test]
fn a_bad_key_with_json_still_prints_json() {
    let (code, out) = verify_bin(&["--json", "--key", "nothex"], b"{}");
    assert_eq!(code, Some(2));
    let first = out.lines().next().unwrap();
    let v: Value = serde_json::from_str(first).unwrap();
    assert_eq!(v["exit_code"], 2);
    assert!(v["error"].as_str().unwrap().contains("--key"));
}
