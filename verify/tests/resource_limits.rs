//! Resource limits (issue 10): no input under 1 MB may make the verifier use more than 64 MB or
//! print more than 1 MB, whatever its shape: long strings, many entries, many problems, deep
//! nesting, big free-form values, plans far larger than what the file holds, in every format
//! (nemesis files included).
//!
//! Memory is measured in this process (this file holds one test, so nothing else runs here): the
//! peak resident size is reset through `/proc/self/clear_refs` before each input and read from
//! `VmHWM` after loading and checking it. Output is measured on the `verify` binary itself, in text
//! and in `--json` mode. The largest input of each shape ([`extremes`]) is checked before the
//! random ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use serde_json::{json, Value};
use std::process::Command;
use verify::check::verify_results;
use verify::load::{load_document, Document};
use verify::original::verify_original_results;
use verify::receipt::{verify_bundle, KeyCheck};

const MB: usize = 1024 * 1024;
const ORIGINAL: &[u8] = include_bytes!("fixtures/billing_credit.original.json");

fn peak_rss_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Reset the peak to the current size; false where the kernel does not allow it.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Load and check `bytes` in this process: how far the peak resident size rose above what the
/// process held before (the test's own inputs and fixtures are not the input's cost).
fn check_in_process(bytes: &[u8]) -> usize {
    let before = peak_rss_bytes().unwrap_or(0);
    if let Ok(doc) = load_document(bytes) {
        match doc {
            Document::Results(f) => drop(verify_results(&f, &KeyCheck::SelfAttested)),
            Document::Receipt(b) => drop(verify_bundle(&b, &KeyCheck::SelfAttested)),
            Document::OriginalResults(v) => drop(verify_original_results(&v)),
            Document::Nemesis(f) => drop(verify::nemesis::check::verify_nemesis(
                &f,
                &KeyCheck::SelfAttested,
            )),
            Document::SharedCap(f) => drop(verify::shared_cap::check::check(
                &f,
                &KeyCheck::SelfAttested,
            )),
            Document::SharedCapNemesis(f) => drop(verify::shared_cap::nemesis::check::check(
                &f,
                &KeyCheck::SelfAttested,
            )),
        }
    }
    peak_rss_bytes().unwrap_or(0).saturating_sub(before)
}

fn output_bytes(args: &[&str], bytes: &[u8]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("input.json");
    std::fs::write(&p, bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "crashed: {:?}",
        out.status
    );
    out.stdout.len() + out.stderr.len()
}

fn receipt(entries: Vec<Value>, eid: String) -> Value {
    json!({"format": "interlock-receipt/1", "effect_id": eid, "entries": entries})
}

fn synthetic() -> Value {
    static BASE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    BASE.get_or_init(|| serde_json::to_value(synthetic::generate(&Default::default())).unwrap())
        .clone()
}

/// A consistent, signed nemesis file built in code.
fn nemesis() -> Value {
    static BASE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    BASE.get_or_init(|| serde_json::to_value(common::nemesis_file().0).unwrap())
        .clone()
}

/// `n` distinct short names.
fn names(prefix: &str, n: usize) -> Value {
    json!((0..n).map(|i| format!("{prefix}{i:x}")).collect::<Vec<_>>())
}

/// A nemesis file whose one trial carries a timeline of `k` world changes of the approval and `k`
/// unanswered POSTs by `k` processes, each with a read: the within-assumptions rule's worst case
/// (`rules::assumption_broken` looks at every change × POST × event × process).
fn crafted_timeline(k: usize) -> Vec<u8> {
    let (mut file, key) = common::nemesis_file();
    let event = |at_us: u64, actor: String, kind: &str| verify::nemesis::Event {
        at_us,
        actor,
        kind: kind.to_owned(),
        what: "approval".to_owned(),
        until_us: None,
    };
    let mut timeline = Vec::new();
    for p in 0..k as u64 {
        timeline.push(event(10 * p, format!("restart-{p}"), "read"));
        timeline.push(event(10 * p + 5, format!("restart-{p}"), "post"));
    }
    for c in 0..k as u64 {
        timeline.push(event(1 + 10 * c, "world".to_owned(), "change"));
    }
    file.trials[0].timeline = timeline;
    common::resign(&mut file, &key);
    serde_json::to_vec(&file).unwrap()
}

/// A nemesis file whose trial with a receipt has a 60 000-character id and 14 000 case credits
/// each naming a dispatch the receipt does not have: every anchor finding would quote the id.
fn long_id_many_anchors() -> Vec<u8> {
    let (mut file, key) = common::nemesis_file();
    let Some(t) = file.trials.iter_mut().find(|t| t.receipt.is_some()) else {
        panic!("the fixture has no trial with a receipt");
    };
    t.id = "x".repeat(60_000);
    let credit = verify::results::CaseCredit {
        id: String::new(),
        amount: 0,
        created: 0,
        effect_id: None,
        dispatch: Some("x".to_owned()),
    };
    t.ground_truth.case_credits = vec![credit; 14_000];
    common::resign(&mut file, &key);
    serde_json::to_vec(&file).unwrap()
}

/// The largest input of each shape that grows with a file's size, under 1 MB: named, built.
fn extremes() -> Vec<(&'static str, Vec<u8>)> {
    let mut plan = nemesis();
    plan["plan"]["nemeses"] = names("n", 45_000);
    plan["plan"]["columns"] = names("c", 45_000);
    plan["plan"]["trials"] = json!(1);
    plan["trials"] = json!([]);
    plan["summary"] = json!([]);
    let mut results = synthetic();
    let n = 22_000;
    results["rows"] = json!((0..n)
        .map(|i| json!({"crash": format!("{i:x}"), "outage": "o"}))
        .collect::<Vec<_>>());
    results["columns"] = names("c", n);
    results["cells"] = json!([]);
    results["summary"] = json!({});
    vec![
        (
            "a receipt of 320 000 empty entries",
            serde_json::to_vec(&receipt(vec![json!({}); 320_000], "a".repeat(64))).unwrap(),
        ),
        (
            "a nemesis plan of 45 000 x 45 000 and no trials",
            serde_json::to_vec(&plan).unwrap(),
        ),
        (
            "a results plan of 22 000 x 22 000 and no cells",
            serde_json::to_vec(&results).unwrap(),
        ),
        // The rule costs POSTs x reads since it was rewritten (k = 300, 46 KB: 33 s of one core
        // in a release build before).
        ("a crafted trial timeline (k = 300)", crafted_timeline(300)),
        (
            "a trial with a 60 000-character id and 14 000 credits anchored to no dispatch",
            long_id_many_anchors(),
        ),
    ]
}

/// Adversarial inputs, each under 1 MB.
fn adversarial() -> impl Strategy<Value = Vec<u8>> {
    let eid = "e".repeat(64);
    prop_oneof![
        // Many empty entries: a problem or more per entry.
        (1usize..320_000).prop_map(move |n| {
            let entries = (0..n).map(|_| json!({})).collect();
            serde_json::to_vec(&receipt(entries, "a".repeat(64))).unwrap()
        }),
        // Entries naming a long foreign effect id, and long kinds, each repeated in problems.
        (1usize..14)
            .prop_flat_map(|n| (Just(n), 1usize..(240_000 / n)))
            .prop_map(move |(n, len)| {
                let long = "x".repeat(len);
                let entries = (0..n)
                    .map(|_| json!({"effect_id": long, "kind": long, "hash": long, "prev": long}))
                    .collect();
                serde_json::to_vec(&receipt(entries, eid.clone())).unwrap()
            }),
        // Deep nesting inside an entry.
        (1usize..126).prop_map(|depth| {
            let mut v = json!(0);
            for _ in 0..depth {
                v = json!([v]);
            }
            serde_json::to_vec(&receipt(
                vec![json!({"kind": "PROPOSED", "effect": v})],
                "b".repeat(64),
            ))
            .unwrap()
        }),
        // Big free-form values in a results file (hand_check log, restart output).
        (1usize..20_000, any::<bool>()).prop_map(|(n, log)| {
            let mut d = synthetic();
            let filler: Vec<Value> = (0..n).map(|_| json!([])).collect();
            if log {
                d["cells"][1]["hand_check_log"] = json!(filler);
            } else {
                d["cells"][0]["restart"] = json!({"detail": filler});
            }
            serde_json::to_vec(&d).unwrap()
        }),
        // Many cells, every one failing.
        (1usize..300).prop_map(|n| {
            let mut d = synthetic();
            let cell = d["cells"][0].clone();
            let cells = d["cells"].as_array_mut().unwrap();
            for _ in 0..n {
                let mut c = cell.clone();
                c["outcome"] = json!("\u{1b}[2K OK");
                cells.push(c);
            }
            serde_json::to_vec(&d).unwrap()
        }),
        // A nemesis plan of n nemeses x n columns and no trials (nothing to fill it), planning
        // no trial or one per pair.
        (1usize..60_000, 0u32..2).prop_map(|(n, per)| {
            let mut d = nemesis();
            d["plan"]["nemeses"] = names("n", n);
            d["plan"]["columns"] = names("c", n);
            d["plan"]["trials"] = json!(per);
            d["trials"] = json!([]);
            d["summary"] = json!([]);
            serde_json::to_vec(&d).unwrap()
        }),
        // A results file of n rows x n columns and no cells, or a selection it does not hold.
        (1usize..20_000, any::<bool>(), 1u32..=u32::MAX).prop_map(|(n, select, repeats)| {
            let mut d = synthetic();
            let rows: Vec<Value> = (0..n)
                .map(|i| json!({"crash": format!("{i:x}"), "outage": "o"}))
                .collect();
            d["rows"] = json!(rows);
            d["columns"] = names("c", n);
            d["repeats"] = json!(repeats);
            if select {
                let sel: Vec<Value> = (0..n)
                    .map(|i| json!({"crash": format!("{i:x}"), "outage": "o", "column": "c0"}))
                    .collect();
                d["selected"] = json!(sel);
            }
            d["cells"] = json!([]);
            d["summary"] = json!({});
            serde_json::to_vec(&d).unwrap()
        }),
        // A flood of short column names, each distinct or all the same, beside the file's cells.
        (1usize..200_000, any::<bool>()).prop_map(|(n, same)| {
            let mut d = synthetic();
            d["columns"] = if same {
                json!(vec!["a"; n])
            } else {
                names("", n)
            };
            serde_json::to_vec(&d).unwrap()
        }),
        // Many nemesis trials, every one failing.
        (1usize..60).prop_map(|n| {
            let mut d = nemesis();
            let all = d["trials"].as_array().unwrap().clone();
            let trials = d["trials"].as_array_mut().unwrap();
            for k in 0..n {
                let mut t = all[k % all.len()].clone();
                t["outcome"] = json!("\u{1b}[2K OK");
                trials.push(t);
            }
            serde_json::to_vec(&d).unwrap()
        }),
        // The original format, with its cells repeated and edited.
        (1usize..10, any::<bool>()).prop_map(|(n, flip)| {
            let mut d: Value = serde_json::from_slice(ORIGINAL).unwrap();
            let cells = d["cells"].as_array().unwrap().clone();
            for _ in 1..n {
                for c in &cells {
                    let mut c = c.clone();
                    if flip {
                        c["invariant_held"] =
                            json!(!c["invariant_held"].as_bool().unwrap_or(false));
                    }
                    d["cells"].as_array_mut().unwrap().push(c);
                }
            }
            serde_json::to_vec(&d).unwrap()
        }),
    ]
    .prop_filter("under 1 MB", |b| b.len() < MB)
}

#[test]
fn no_input_under_1_mb_uses_more_than_64_mb_or_prints_more_than_1_mb() {
    let can_reset = reset_peak();
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    let worst_rss = std::cell::Cell::new(0usize);
    for (name, bytes) in extremes() {
        assert!(bytes.len() < MB, "{name}: {} bytes", bytes.len());
        let started = std::time::Instant::now();
        for args in [vec![], vec!["--json"]] {
            let printed = output_bytes(&args, &bytes);
            assert!(printed <= MB, "{name}: {printed} bytes printed ({args:?})");
        }
        if can_reset {
            reset_peak();
        }
        let peak = check_in_process(&bytes);
        worst_rss.set(worst_rss.get().max(peak));
        assert!(peak <= 64 * MB, "{name}: the check used {} MB", peak / MB);
        eprintln!(
            "{name}: {} bytes, {:.1} s (binary twice, then in process), {} MB",
            bytes.len(),
            started.elapsed().as_secs_f64(),
            peak / MB
        );
    }
    runner
        .run(&adversarial(), |bytes| {
            for args in [vec![], vec!["--json"]] {
                let printed = output_bytes(&args, &bytes);
                prop_assert!(
                    printed <= MB,
                    "{} bytes printed for {} bytes of input ({args:?})",
                    printed,
                    bytes.len()
                );
            }
            if can_reset {
                reset_peak();
            }
            let peak = check_in_process(&bytes);
            worst_rss.set(worst_rss.get().max(peak));
            prop_assert!(
                peak <= 64 * MB,
                "the check used {} MB for {} bytes of input",
                peak / MB,
                bytes.len()
            );
            Ok(())
        })
        .unwrap_or_else(|e| {
            // Name the failure and the input's size; never print a megabyte of input.
            let why = match e {
                TestError::Fail(reason, bytes) => {
                    format!("{reason} ({} bytes of input)", bytes.len())
                }
                TestError::Abort(reason) => reason.to_string(),
            };
            panic!("{why}");
        });
    eprintln!(
        "worst rise of the peak resident size: {} MB (peak reset before each input: {can_reset})",
        worst_rss.get() / MB
    );
}
