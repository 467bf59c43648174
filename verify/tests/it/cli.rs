//! The `verify` binary end to end (`interlock-verify` is the same program): exit codes 0 / 1 / 2
//! and what it prints.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Output};
use synthetic::seal_chain;
use verify::scenarios::billing_credit::billing_credit_effect_id;

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
    let mut b = seal_chain(
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
    verify::binding::seal_bundle(&mut b, &key(), 1_796_069_499_123).unwrap();
    serde_json::to_value(b).unwrap()
}

#[test]
fn the_original_results_verify() {
    let (code, out) = run(&[FIXTURE]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("billing_credit.original.json: python-original results, 18 cells, 6 receipts (per-effect SHA-256 chains; consistency only), decided by claude-haiku-4-5-20251001; unsigned, generated 2026-09-13 22:40 UTC: OK"),
        "{out}"
    );
}

/// From the fifth forger review: the original format is unsigned, and its line said neither how
/// many cells it holds nor who decided, and a repeated cell was taken: a file without its
/// no_check column, one naming another model, and one with every no_check cell twice each
/// printed the genuine file's line and exited 0. Now the line names the cells and the model,
/// and a cell that repeats another's crash point, outage and column fails.
#[test]
fn an_edited_original_file_prints_another_line_or_fails() {
    let genuine: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let line = |v: &Value, name: &str| {
        let path = write(&dir, name, &serde_json::to_vec(v).unwrap());
        let (code, out) = run(&[&path]);
        let first = out.lines().next().unwrap_or_default();
        let shown = first
            .split_once(": ")
            .map_or("", |(_, rest)| rest)
            .to_owned();
        (code, shown, out)
    };
    let (_, genuine_line, _) = line(&genuine, "genuine.json");
    let mut dropped = genuine.clone();
    let cells = dropped["cells"].as_array_mut().unwrap();
    cells.retain(|c| c["system"] != "no_check");
    let mut model = genuine.clone();
    model["model"] = json!("claude-opus-4");
    for (edited, name) in [(dropped, "dropped.json"), (model, "model.json")] {
        let (code, shown, out) = line(&edited, name);
        assert_eq!(code, Some(0), "{out}");
        assert_ne!(shown, genuine_line, "{name}: {out}");
    }
    let mut twice = genuine.clone();
    let again: Vec<Value> = twice["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["system"] == "no_check")
        .cloned()
        .collect();
    twice["cells"].as_array_mut().unwrap().extend(again);
    let (code, _, out) = line(&twice, "twice.json");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("repeats the crash point, outage and column"),
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
            "(interlock-receipt/1, signed), happened=true; signer {} (pinned), sealed 2026-11-30T20:11:39.123Z: OK",
            verify::fingerprint(&key().verifying_key())
        )),
        "{out}"
    );
    let (code, out) = run(&[&path]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "signer {} (self-attested: the key the file names itself;",
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

/// The first line of each file's output, and its `--json` entry.
fn verdict_and_json(args: &[&str], path: &str) -> (Option<i32>, String, Value) {
    let mut with_path = args.to_vec();
    with_path.push(path);
    let (code, out) = run(&with_path);
    let mut json_args = vec!["--json"];
    json_args.extend_from_slice(&with_path);
    let (_, json_out) = run(&json_args);
    let v: Value = serde_json::from_str(&json_out).unwrap();
    (
        code,
        out.lines().next().unwrap_or("").to_owned(),
        v["files"][0].clone(),
    )
}

#[test]
fn every_verdict_line_and_json_entry_names_the_signer_the_pin_the_time_and_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let fp = verify::fingerprint(&key().verifying_key());
    let hex_key = hex::encode(key().verifying_key().as_bytes());
    let receipt = write(&dir, "r.json", bundle().to_string().as_bytes());
    for (args, pin) in [
        (vec!["--key", hex_key.as_str()], "pinned"),
        (vec![], "self-attested"),
    ] {
        let (code, line, entry) = verdict_and_json(&args, &receipt);
        assert_eq!(code, Some(0), "{line}");
        assert!(line.contains(&format!("signer {fp} ({pin}")), "{line}");
        assert!(line.contains("sealed 2026-11-30T20:11:39.123Z"), "{line}");
        assert_eq!(entry["fingerprint"], json!(fp));
        assert_eq!(entry["pinned_key"], json!(pin == "pinned"));
        assert_eq!(entry["sealed_at"], json!("2026-11-30T20:11:39.123Z"));
    }

    let spec = synthetic::Spec::default();
    let results = synthetic::generate(&spec);
    let run_key = synthetic::signing_key(&spec).verifying_key();
    let run_fp = verify::fingerprint(&run_key);
    let run_hex = hex::encode(run_key.as_bytes());
    let results_path = write(&dir, "results.json", &serde_json::to_vec(&results).unwrap());
    let (nemesis, _) = common::nemesis_file();
    let nemesis_path = write(&dir, "nemesis.json", &serde_json::to_vec(&nemesis).unwrap());
    let commit = nemesis.environment.git_commit.clone().unwrap();
    let files = [
        (
            &results_path,
            results.generated.as_str(),
            "commit not recorded".to_owned(),
            Value::Null,
        ),
        (
            &nemesis_path,
            nemesis.generated.as_str(),
            format!("commit {commit}"),
            json!(commit),
        ),
    ];
    for (path, generated, commit_text, commit_json) in files {
        for (args, pin) in [
            (vec!["--key", run_hex.as_str()], "pinned"),
            (vec![], "self-attested"),
        ] {
            let (code, line, entry) = verdict_and_json(&args, path);
            assert_eq!(code, Some(0), "{line}");
            assert!(line.contains(&format!("signer {run_fp} ({pin}")), "{line}");
            assert!(
                line.contains(&format!("generated {generated}, {commit_text}: OK")),
                "{line}"
            );
            assert_eq!(entry["fingerprint"], json!(run_fp));
            assert_eq!(entry["pinned_key"], json!(pin == "pinned"));
            assert_eq!(entry["generated"], json!(generated));
            assert_eq!(entry["commit"], commit_json);
        }
    }

    let (code, line, entry) = verdict_and_json(&[], FIXTURE);
    assert_eq!(code, Some(0), "{line}");
    assert!(
        line.contains("; unsigned, generated 2026-09-13 22:40 UTC: OK"),
        "{line}"
    );
    assert_eq!(entry["fingerprint"], Value::Null);
    assert_eq!(entry["pinned_key"], json!(false));
    assert_eq!(entry["generated"], json!("2026-09-13 22:40 UTC"));
}

#[test]
fn not_before_fails_files_made_earlier_and_files_that_state_no_time() {
    let dir = tempfile::tempdir().unwrap();
    // The synthetic run was generated at 2026-11-29T12:00:00Z.
    let results = write(
        &dir,
        "results.json",
        &serde_json::to_vec(&synthetic::generate(&synthetic::Spec::default())).unwrap(),
    );
    let (code, out) = run(&["--not-before", "2026-11-29T11:59:59Z", &results]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(&["--not-before", "2026-11-29T13:00:00+01:00", &results]);
    assert_eq!(code, Some(0), "same instant: {out}");
    let (code, out) = run(&["--not-before", "2026-11-29T12:00:01Z", &results]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("generated: [not_before]"), "{out}");
    let (_, json_out) = run(&["--json", "--not-before", "2026-11-30T00:00:00Z", &results]);
    let v: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(v["exit_code"], json!(1));
    assert_eq!(v["files"][0]["findings"][0]["code"], json!("not_before"));

    // A receipt by the time its seal was signed; one without a seal states no time.
    let sealed = write(&dir, "r.json", bundle().to_string().as_bytes());
    assert_eq!(
        run(&["--not-before", "2026-11-30T20:11:39Z", &sealed]).0,
        Some(0)
    );
    assert_eq!(
        run(&["--not-before", "2026-11-30T20:11:40Z", &sealed]).0,
        Some(1)
    );
    let mut unsealed = bundle();
    unsealed.as_object_mut().unwrap().remove("head");
    let unsealed = write(&dir, "u.json", unsealed.to_string().as_bytes());
    let (code, out) = run(&["--not-before", "1970-01-01T00:00:00Z", &unsealed]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("head: [not_before]"), "{out}");
    // The original states its time in a form that is not RFC 3339.
    assert_eq!(
        run(&["--not-before", "2000-01-01T00:00:00Z", FIXTURE]).0,
        Some(1)
    );

    for bad in ["yesterday", "2026-11-30", "2026-11-30T00:00:00"] {
        let (code, out) = run(&["--not-before", bad, &results]);
        assert_eq!(code, Some(2), "{bad}: {out}");
        assert!(out.contains("not an RFC 3339 time"), "{out}");
    }
}

#[test]
fn key_and_signers_errors_escape_control_characters_once() {
    let (code, out) = run(&["--key", "\u{1b}[31mred", FIXTURE]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--key \\u{001b}[31mred: not 64 hex characters"),
        "{out}"
    );
    assert!(!out.contains("\\\\u{001b}"), "escaped twice: {out}");
    assert!(!out.contains('\u{1b}'), "{out}");

    let (code, out) = run(&["--signers", "/nonexistent/\u{7}bell", FIXTURE]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--signers /nonexistent/\\u{0007}bell: cannot read"),
        "{out}"
    );
    assert!(!out.contains("\\\\u{0007}"), "escaped twice: {out}");

    let (code, out) = run(&["--json", "--key", "\u{1b}x", FIXTURE]);
    assert_eq!(code, Some(2), "{out}");
    let v: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(error.starts_with("--key \\u{001b}x: "), "{error}");
}

/// Runs the binary with `args`, reads one byte of its output and closes it: the exit code, and
/// what it wrote to standard error.
fn run_with_stdout_closed(args: &[String]) -> (Option<i32>, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    stdout.read_exact(&mut byte).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_verdicts_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(&dir, "r.json", &serde_json::to_vec(&bundle()).unwrap());
    let mut bad = bundle();
    bad["entries"][1]["lease"] = json!("forged");
    let bad = write(&dir, "bad.json", &serde_json::to_vec(&bad).unwrap());
    // Far more output than a pipe holds, so the writer meets the closed end whatever the timing.
    let goods: Vec<String> = vec![good; 600];
    let mut with_bad = goods.clone();
    with_bad.push(bad);
    for (files, want) in [(&goods, 0), (&with_bad, 1)] {
        for json in [false, true] {
            let mut args: Vec<String> = files.clone();
            if json {
                args.insert(0, "--json".into());
            }
            let (code, stderr) = run_with_stdout_closed(&args);
            assert_eq!(code, Some(want), "json {json}: {stderr}");
            assert!(!stderr.contains("panicked"), "json {json}: {stderr}");
        }
    }
}

/// Output that cannot be written (standard output on `/dev/full`, every write failing with "no
/// space left") exits 2 naming standard output, whatever the verdict: a report cut short must
/// not pass for a whole one. Checked with text and with `--json`, on a good and a bad file.
#[test]
fn output_that_cannot_be_written_whole_exits_2_naming_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(&dir, "r.json", &serde_json::to_vec(&bundle()).unwrap());
    let mut bad = bundle();
    bad["entries"][1]["lease"] = json!("forged");
    let bad = write(&dir, "bad.json", &serde_json::to_vec(&bad).unwrap());
    for file in [&good, &bad] {
        for json in [false, true] {
            let mut args = vec![file.as_str()];
            if json {
                args.insert(0, "--json");
            }
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_verify"))
                .args(&args)
                .stdout(full)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(
                stderr.contains("error: standard output: the report could not be written whole")
                    && stderr.contains("No space left"),
                "{args:?}: {stderr}"
            );
        }
    }
}

/// An empty or cut-short file says so once, with its position once, and what to do.
#[test]
fn an_empty_or_cut_file_says_so_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let whole = serde_json::to_vec(&bundle()).unwrap();
    let empty = write(&dir, "empty.json", b"");
    let cut = write(&dir, "cut.json", &whole[..whole.len() / 2]);
    for file in [&empty, &cut] {
        let (code, text) = run(&[file]);
        assert_eq!(code, Some(2), "{text}");
        assert!(
            text.contains("the file is empty or cut short; copy or download it again"),
            "{text}"
        );
        assert_eq!(text.matches(" column ").count(), 1, "{text}");
    }
}

#[test]
fn a_pinned_nemesis_file_whose_signature_fails_prints_no_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (mut file, key) = common::nemesis_file();
    let i = common::committed_trial(&file);
    file.trials[i].violation = true;
    let path = write(&dir, "nemesis.json", &serde_json::to_vec(&file).unwrap());
    let hex = hex::encode(key.verifying_key().as_bytes());
    let (code, text) = run(&["--key", &hex, &path]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("signature check failed"), "{text}");
    for count in ["trials", "receipts", "violations"] {
        assert!(!text.contains(&format!(" {count},")), "{text}");
    }
    let (code, text) = run(&["--json", "--key", &hex, &path]);
    assert_eq!(code, Some(1), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let report = &v["files"][0]["report"];
    for count in ["trials", "receipts", "violations"] {
        assert_eq!(report[count], Value::Null, "{count} in {report}");
    }
}

/// The exit code, standard output and standard error, apart.
fn run_apart(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_file_is_answered_on_one_stderr_line_before_any_file_is_checked() {
    let (code, stdout, stderr) = run_apart(&[FIXTURE, "/nonexistent/file.json"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    // The good file before it was not checked: no verdict at all.
    assert_eq!(stdout, "", "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("verify: error: /nonexistent/file.json: cannot read: "),
        "{stderr}"
    );
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
    assert!(
        stderr.contains("; pass the path of"),
        "says how to fix: {stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let shown = dir.path().display().to_string();
    let (code, stdout, stderr) = run_apart(&[&shown], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "verify: error: {shown}: is a directory; pass the files in it (e.g. {shown}/*.json)"
        )
    );

    // Every bad argument and file, one line each.
    let (code, _, stderr) = run_apart(
        &[
            "--signers",
            &shown,
            "/nonexistent/a.json",
            "/nonexistent/b.json",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 3, "{stderr}");
    assert!(
        stderr.lines().all(|l| l.starts_with("verify: error: ")),
        "{stderr}"
    );
    assert_eq!(stderr.matches("os error 21").count(), 1, "{stderr}");
}

#[test]
fn could_not_check_is_an_error_on_stderr_not_a_verdict_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = write(&dir, "n.json", b"hello");
    let (code, stdout, stderr) = run_apart(&[FIXTURE, &not_json], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stdout.contains("could not check"), "{stdout}");
    assert!(
        stdout.contains(": OK"),
        "the readable file's verdict: {stdout}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("verify: error: {not_json}: could not check: ")),
        "{stderr}"
    );
}

#[test]
fn usage_errors_are_one_line_too() {
    for args in [&["--bogus", FIXTURE][..], &[][..]] {
        let (code, stdout, stderr) = run_apart(args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stdout, "");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("verify: error: "), "{stderr}");
        assert!(
            stderr.trim_end().ends_with("see `verify --help`"),
            "{stderr}"
        );
    }
}

#[test]
fn help_wraps_at_the_terminal_width_and_at_100_columns_without_one() {
    let widest = |env: &[(&str, &str)]| {
        let (code, stdout, _) = run_apart(&["--help"], env);
        assert_eq!(code, Some(0));
        stdout.lines().map(|l| l.chars().count()).max().unwrap()
    };
    // Not a terminal, no COLUMNS: a width one can read.
    let plain = widest(&[]);
    assert!((60..=100).contains(&plain), "widest help line: {plain}");
    assert!(widest(&[("COLUMNS", "60")]) <= 60);
}

/// `--help` of both names of the command, its words joined by single spaces (as wrapped).
fn help_of(exe: &str) -> String {
    let out = Command::new(exe).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn help_names_every_format_it_reads_and_the_exit_codes() {
    for exe in [
        env!("CARGO_BIN_EXE_interlock-verify"),
        env!("CARGO_BIN_EXE_verify"),
    ] {
        let help = help_of(exe);
        // Every `format` the loaders know, by the constants they match on.
        for format in [
            verify::entry::RECEIPT_FORMAT,
            verify::results::RESULTS_FORMAT,
            verify::nemesis::NEMESIS_FORMAT,
            verify::shared_cap::check::FORMAT,
            verify::shared_cap::nemesis::FORMAT,
            verify::contract::FORMAT,
        ] {
            assert!(help.contains(format), "{exe}: {format} not in: {help}");
        }
        // Every scenario on the contract, by the name its files state.
        for scenario in verify::scenarios::REGISTRY {
            assert!(
                help.contains(scenario.name()),
                "{exe}: {} not in: {help}",
                scenario.name()
            );
        }
        // The files without a `format`, and the compressed ones.
        for other in [
            "original receipt bundle",
            "original results file",
            "gzip",
            "*.json.gz",
        ] {
            assert!(help.contains(other), "{exe}: {other} not in: {help}");
        }
        for code in [
            "Exit status: 0 every check of every file holds;",
            "1 a check failed",
            "2 could not check",
        ] {
            assert!(help.contains(code), "{exe}: {code} not in: {help}");
        }
    }
}

#[test]
fn the_command_names_itself_by_the_name_it_was_called_by() {
    let out = Command::new(env!("CARGO_BIN_EXE_interlock-verify"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("interlock-verify: error: "), "{stderr}");
    assert!(
        stderr.trim_end().ends_with("see `interlock-verify --help`"),
        "{stderr}"
    );
    assert!(help_of(env!("CARGO_BIN_EXE_interlock-verify"))
        .contains("Usage: interlock-verify [OPTIONS] <FILE>..."));
    assert!(help_of(env!("CARGO_BIN_EXE_verify")).contains("Usage: verify [OPTIONS] <FILE>..."));
}

#[test]
fn the_nemesis_verdict_does_not_read_as_failures_followed_by_ok() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = common::nemesis_file();
    assert!(
        file.trials.iter().any(|t| t.violation),
        "the fixture has violations"
    );
    let path = write(&dir, "nemesis.json", &serde_json::to_vec(&file).unwrap());
    let (code, stdout, stderr) = run_apart(&[&path], &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let line = stdout.lines().next().unwrap();
    assert!(line.ends_with(": OK"), "{line}");
    assert!(!line.contains(" violations,"), "{line}");
    assert!(
        line.contains("in which the column under test credited more than wanted and ")
            && line.contains(" in which it credited less: what the run found, re-derived from the data, not a failed check"),
        "{line}"
    );
}

/// From the fourth forger review: a verdict line is cut at [`verify::cli::MAX_LINE_CHARS`] after
/// escaping, and a file's name came first: 140 DEL characters (each printed as `\u{007f}`) pushed
/// the signer's fingerprint, the time and `OK` or `FAILED` off the line, so a receipt re-signed
/// by another key printed, under the same name, byte for byte what the genuine one did. The
/// name is now cut to what its escaped form takes in [`verify::cli::NAME_CHARS`]; the rest of
/// the line is always printed, and a long name or path still names the file.
#[test]
fn a_long_or_control_filled_name_never_hides_the_signer_or_the_verdict() {
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../results/billing_credit.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let receipt = results["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|c| c["receipt"].is_object().then(|| c["receipt"].clone()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let deep = "d".repeat(200);
    for name in [
        format!("receipt{}.json", "\u{7f}".repeat(140)),
        format!("{deep}/{deep}/{deep}/receipt.json"),
    ] {
        let path = dir.path().join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_vec(&receipt).unwrap()).unwrap();
        let (code, stdout) = run(&[path.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{stdout}");
        let line = stdout.lines().next().unwrap();
        assert!(line.contains("signer SHA256:"), "{line}");
        assert!(line.ends_with(": OK"), "{line}");
        assert!(
            line.contains("bytes in all"),
            "the name is said to be cut: {line}"
        );
        assert!(
            line.chars().count() <= verify::cli::MAX_LINE_CHARS,
            "{line}"
        );
    }
}
