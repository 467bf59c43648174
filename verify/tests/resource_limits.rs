//! Resource limits (issue 10): no input under 1 MB may make the verifier use more than 64 MB or
//! print more than 1 MB, whatever its shape: long strings, many entries, many problems, deep
//! nesting, big free-form values, plans far larger than what the file holds, in every format
//! (nemesis files included).
//!
//! Memory is measured in this process (this file holds one test, so nothing else runs here; it
//! stays a test binary of its own, not a module of `tests/it`, for that reason): the
//! peak resident size is reset through `/proc/self/clear_refs` before each input and read from
//! `VmHWM` after loading and checking it; and on the `verify` binary itself, whose peak resident
//! size (the largest of any run so far, as `getrusage` reports for children) must stay under the
//! same bound in text and in `--json` mode, where the report is serialized and cut. Output is
//! measured on the binary too, in both modes, and must hold no control or format character (Cf,
//! bidirectional or invisible) from the file. The largest input of each shape ([`extremes`]) is
//! checked before the random ones: every format (results, receipt, nemesis, shared_cap matrix and
//! nemesis, the original format) has at least one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The helpers of the other suites (`tests/it`); this suite is a binary of its own (above).
#[path = "it/common.rs"]
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
    if let Some(head) = verify::contract::read_head(bytes) {
        if let Some(scenario) = verify::scenarios::registered(&head.scenario) {
            drop(scenario.check_text(bytes, &KeyCheck::SelfAttested));
        }
        return peak_rss_bytes().unwrap_or(0).saturating_sub(before);
    }
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

/// Where GNU time is: it measures the binary's own peak resident size (a child started by this
/// process would report this process's peak too, inherited through the spawn).
const TIME: &str = "/usr/bin/time";

/// Runs the `verify` binary on `path` with `args`: its exit code, what it printed (standard
/// output and error), and its peak resident size in bytes (`None` without GNU time).
fn run_binary(
    args: &[&str],
    path: &std::path::Path,
) -> (Option<i32>, Vec<u8>, Vec<u8>, Option<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let measured = dir.path().join("rss");
    let out = if std::path::Path::new(TIME).exists() {
        Command::new(TIME)
            .arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&measured)
            .arg(env!("CARGO_BIN_EXE_verify"))
            .args(args)
            .arg(path)
            .output()
            .unwrap()
    } else {
        Command::new(env!("CARGO_BIN_EXE_verify"))
            .args(args)
            .arg(path)
            .output()
            .unwrap()
    };
    let peak = std::fs::read_to_string(&measured)
        .ok()
        .and_then(|t| t.lines().last()?.trim().parse::<usize>().ok())
        .map(|kb| kb * 1024);
    (out.status.code(), out.stdout, out.stderr, peak)
}

/// What the binary printed for `bytes` with `args`: its size. Asserts that it ran (exit 0 to 2),
/// stayed under 64 MB, and printed no character a terminal or a JSON reader would act on or hide.
fn output_bytes(args: &[&str], bytes: &[u8]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("input.json");
    std::fs::write(&p, bytes).unwrap();
    let (code, stdout, stderr, peak) = run_binary(args, &p);
    assert!(matches!(code, Some(0..=2)), "crashed: {code:?}");
    if let Some(peak) = peak {
        if std::env::var_os("VERIFY_SHOW_PEAKS").is_some() {
            eprintln!("binary {args:?}: {} MB", peak / MB);
        }
        assert!(
            peak <= 64 * MB,
            "the binary used {} MB ({args:?})",
            peak / MB
        );
    }
    for stream in [&stdout, &stderr] {
        let text = String::from_utf8_lossy(stream);
        let shown = text
            .chars()
            .find(|c| (c.is_control() && *c != '\n') || hidden(*c));
        assert_eq!(shown, None, "printed unescaped ({args:?})");
    }
    stdout.len() + stderr.len()
}

/// A character that hides, reorders or breaks text on screen: a format character (Cf) or a line
/// or paragraph separator (the checker's own list is not trusted here).
fn hidden(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}'
        | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}' | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}' | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A shared_cap nemesis file of one trial with a 60 000-character id and 2 000 tickets, each
/// restating its judgement: every finding of the trial would quote the id.
fn shared_cap_nemesis_long_id() -> Vec<u8> {
    let mut d = fixture("shared_cap_nemesis.json");
    let trials = d["trials"].as_array().unwrap();
    let mut t = trials
        .iter()
        .find(|t| t["cell"]["column"] == "no_check")
        .unwrap()
        .clone();
    t["id"] = json!("t".repeat(60_000));
    let mut ticket = t["cell"]["tickets"][1].clone();
    ticket["answer_matches"] = json!(!ticket["answer_matches"].as_bool().unwrap());
    ticket["proof"] = json!(true);
    let first = t["cell"]["tickets"][0].clone();
    let mut tickets = vec![first];
    tickets.extend(std::iter::repeat_n(ticket, 2_000));
    t["cell"]["tickets"] = json!(tickets);
    d["trials"] = json!([t]);
    serde_json::to_vec(&d).unwrap()
}

/// A shared_cap matrix file of one interlock cell with a 60 000-character order id and 2 000
/// tickets restating their judgement, each a kill its exit does not record.
fn shared_cap_long_order_id() -> Vec<u8> {
    let mut d = fixture("shared_cap.json");
    let cells = d["cells"].as_array().unwrap();
    let mut c = cells
        .iter()
        .find(|c| c["column"] == "hand_check")
        .unwrap()
        .clone();
    c["order"]["order_id"] = json!("o".repeat(60_000));
    let mut ticket = c["tickets"][1].clone();
    ticket["answer_matches"] = json!(!ticket["answer_matches"].as_bool().unwrap());
    ticket["killed_at"] = c["crash_point"].clone();
    ticket["log"] = Value::Null;
    let first = c["tickets"][0].clone();
    let mut tickets = vec![first];
    tickets.extend(std::iter::repeat_n(ticket, 2_000));
    c["tickets"] = json!(tickets);
    d["cells"] = json!([c]);
    serde_json::to_vec(&d).unwrap()
}

/// A results file whose interlock cell lists 12 000 credits sent for another effect than its
/// receipt's: one finding per credit, before the list was capped.
fn credits_of_another_effect() -> Vec<u8> {
    let mut d = synthetic();
    let cells = d["cells"].as_array_mut().unwrap();
    let c = cells.iter_mut().find(|c| !c["receipt"].is_null()).unwrap();
    let credit = json!({"id": "", "amount": 0, "created": 0, "effect_id": "x", "dispatch": null});
    c["ground_truth"]["case_credits"] = json!(vec![credit; 12_000]);
    serde_json::to_vec(&d).unwrap()
}

/// Format characters (Cf) and other hidden ones in a value each format echoes in a finding.
fn hidden_characters() -> Vec<(&'static str, Vec<u8>)> {
    let hidden = "\u{61c}\u{ad}\u{2066}\u{200b}\u{2028}\u{feff}\u{e0041}OK";
    let mut results = synthetic();
    results["cells"][0]["outcome"] = json!(hidden);
    let mut nemesis = nemesis();
    nemesis["trials"][0]["outcome"] = json!(hidden);
    nemesis["trials"][1]["id"] = json!(hidden);
    let mut cap = fixture("shared_cap.json");
    cap["cells"][0]["tickets"][0]["first_exit"] = json!(hidden);
    cap["environment"]["public_key"] = json!(hidden);
    let mut cap_nemesis = fixture("shared_cap_nemesis.json");
    cap_nemesis["trials"][0]["id"] = json!(hidden);
    cap_nemesis["environment"]["journal"] = json!(hidden);
    cap_nemesis["environment"]["hosts"] = json!(2);
    let receipt = receipt(
        vec![json!({"kind": hidden, "effect_id": hidden})],
        hidden.into(),
    );
    let mut original: Value = serde_json::from_slice(ORIGINAL).unwrap();
    original["cells"][0]["outcome"] = json!(hidden);
    [
        ("hidden characters in a results file", results),
        ("hidden characters in a nemesis file", nemesis),
        ("hidden characters in a shared_cap file", cap),
        (
            "hidden characters in a shared_cap nemesis file",
            cap_nemesis,
        ),
        ("hidden characters in a receipt", receipt),
        ("hidden characters in an original results file", original),
    ]
    .into_iter()
    .map(|(name, v)| (name, serde_json::to_vec(&v).unwrap()))
    .collect()
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
    let mut shapes = vec![
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
        (
            "a shared_cap nemesis trial with a 60 000-character id and 2 000 tickets",
            shared_cap_nemesis_long_id(),
        ),
        (
            "a shared_cap cell with a 60 000-character order id and 2 000 tickets",
            shared_cap_long_order_id(),
        ),
        (
            "a results cell with 12 000 credits sent for another effect",
            credits_of_another_effect(),
        ),
    ];
    shapes.extend(hidden_characters());
    shapes.extend(scenario_files());
    shapes
}

/// Files on the scenario contract whose environment is a tree: read before any limit (its head
/// is read first to find the scenario), and read, hashed and shown after the limits pass. A
/// 1 MB file of each took 152 MB and 68 MB while the environment was built as a tree three times.
fn scenario_files() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}0{}", "[".repeat(120), "]".repeat(120));
    let prefix = r#"{"format":"interlock-scenario/1","scenario":"pr_merge","environment":["#;
    let n = (MB - 30_000 - prefix.len()) / (deep.len() + 1);
    let arrays = format!("{prefix}{}]}}", vec![deep; n].join(","));
    // One value per 9 bytes (within the density limit): objects of one member, 100 deep.
    let level = format!("{}0{}", r#"{"":    "#.repeat(100), "}".repeat(100));
    let mut file = serde_json::to_value(synthetic::pr_merge::signed_file(
        &ed25519_dalek::SigningKey::from_bytes(&[21; 32]),
    ))
    .unwrap();
    file["environment"] = json!({"backend": "x", "git_commit": "abc", "pad": "PAD"});
    let text = serde_json::to_string(&file).unwrap();
    let room = MB - 30_000 - text.len();
    let pad = vec![level.as_str(); room / (level.len() + 1)].join(",");
    let objects = text.replace(r#""PAD""#, &format!("[{pad}]"));
    vec![
        (
            "a scenario file whose environment is 1 MB of nested arrays",
            arrays.into_bytes(),
        ),
        (
            "a pr_merge file whose environment is 1 MB of nested one-member objects",
            objects.into_bytes(),
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
        // A shared_cap matrix: its cells repeated, each restating its judgement, the order id
        // long.
        (1usize..40, 0usize..20_000).prop_map(|(n, len)| {
            let mut d = fixture("shared_cap.json");
            let cells = d["cells"].as_array().unwrap().clone();
            let mut out = Vec::new();
            for k in 0..n {
                let mut c = cells[k % cells.len()].clone();
                c["invariant_held"] = json!(!c["invariant_held"].as_bool().unwrap_or(false));
                c["order"]["order_id"] = json!("\u{61c}".repeat(len));
                out.push(c);
            }
            d["cells"] = json!(out);
            serde_json::to_vec(&d).unwrap()
        }),
        // A shared_cap nemesis file: its trials repeated with a long id, each restating its
        // judgement.
        (1usize..40, 0usize..20_000).prop_map(|(n, len)| {
            let mut d = fixture("shared_cap_nemesis.json");
            let trials = d["trials"].as_array().unwrap().clone();
            let mut out = Vec::new();
            for k in 0..n {
                let mut t = trials[k % trials.len()].clone();
                t["id"] = json!("\u{202e}".repeat(len));
                t["cell"]["answers_match"] =
                    json!(!t["cell"]["answers_match"].as_bool().unwrap_or(false));
                out.push(t);
            }
            d["trials"] = json!(out);
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

/// Many small files named at once share one budget: 1,300 copies of a 728-byte receipt of empty
/// entries (under 1 MB in all) once made `--json` keep every file's whole report until the end
/// (1.5 GB) and the text output print 8 MB. Now each file's report is cut as it is kept, the
/// text stops at the size of the input and counts the files it did not show, and the JSON
/// report lists what fits.
#[test]
fn many_small_files_named_at_once_stay_within_the_limits() {
    let entries: Vec<Value> = (0..150).map(|_| json!({})).collect();
    let small = serde_json::to_vec(
        &json!({"format": "interlock-receipt/1", "effect_id": "a".repeat(64), "entries": entries}),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 1_300;
    assert!(n * small.len() < MB, "{} bytes", n * small.len());
    let paths: Vec<std::path::PathBuf> = (0..n)
        .map(|i| {
            let p = dir.path().join(format!("s{i}.json"));
            std::fs::write(&p, &small).unwrap();
            p
        })
        .collect();
    for args in [vec!["--json"], vec![]] {
        let measured = dir.path().join("rss");
        let timed = std::path::Path::new(TIME).exists();
        let mut cmd = if timed {
            let mut c = Command::new(TIME);
            c.arg("-f").arg("%M").arg("-o").arg(&measured);
            c.arg(env!("CARGO_BIN_EXE_verify"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_verify"))
        };
        let out = cmd.args(&args).args(&paths).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let printed = out.stdout.len() + out.stderr.len();
        assert!(printed <= MB, "{args:?}: printed {printed} bytes");
        if timed {
            let kb: usize = std::fs::read_to_string(&measured)
                .unwrap()
                .lines()
                .last()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(kb * 1024 <= 64 * MB, "{args:?}: {} MB", kb / 1024);
        }
        if args.is_empty() {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.lines()
                    .last()
                    .is_some_and(|l| l.contains("not shown in full")),
                "the text says it stopped"
            );
        } else {
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report["exit_code"], 1);
            let listed = report["files"].as_array().unwrap().len();
            let left_out = report["files_left_out"].as_u64().unwrap_or(0) as usize;
            assert_eq!(listed + left_out, n);
        }
    }
}
