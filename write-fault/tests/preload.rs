//! The library loaded with `LD_PRELOAD` into the probe (`src/bin/probe.rs`), a separate process
//! that appends lines with `write_all` + `sync_data` and prints which of its calls failed.
// A test's helpers panic on what the test did not expect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The variable the library reads.
const VAR: &str = "INTERLOCK_WRITE_FAULT";

/// The built library: next to the test executable (`target/<profile>/deps`) or one up.
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [Some(deps), deps.parent()].into_iter().flatten() {
        let lib = dir.join("libwrite_fault.so");
        if lib.is_file() {
            return lib;
        }
    }
    panic!(
        "libwrite_fault.so is not in {} or its parent: build it with `cargo build -p write-fault`",
        deps.display()
    );
}

/// The probe, preloaded with the library, with `value` (if any) as the variable.
fn probe(value: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_write-fault-probe"));
    cmd.env("LD_PRELOAD", library()).env_remove(VAR);
    if let Some(v) = value {
        cmd.env(VAR, v);
    }
    cmd
}

/// The probe's output and exit code, after K lines to each file.
fn run(value: Option<&str>, k: u32, files: &[&Path]) -> (Output, Vec<String>) {
    let out = probe(value)
        .arg(k.to_string())
        .args(files)
        .output()
        .unwrap();
    let lines = String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    (out, lines)
}

/// The variable's value.
fn var(dir: &Path, fail: &str, nth: u64, log: &Path) -> String {
    format!(
        "dir={};fail={fail};nth={nth};log={}",
        dir.display(),
        log.display()
    )
}

/// The log's lines, parsed.
fn log_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The log's call lines.
fn calls(log: &Path) -> Vec<Value> {
    log_lines(log)
        .into_iter()
        .filter(|l| l["event"] == "call")
        .collect()
}

/// A temporary directory with `data/` (the faulted directory) and `data2/` (a sibling whose name
/// starts with the same letters), resolved.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let data = root.join("data");
    let data2 = root.join("data2");
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&data2).unwrap();
    let log = root.join("fault.jsonl");
    (tmp, data, data2, log)
}

#[test]
fn the_nth_write_and_every_later_one_fail_with_enospc() {
    let (_tmp, data, _, log) = dirs();
    let file = data.join("journal");
    let (out, lines) = run(Some(&var(&data, "write", 3, &log)), 5, &[&file]);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    let writes: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("write"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        writes,
        [
            "write 1 1 ok",
            "write 1 2 ok",
            "write 1 3 err 28",
            "write 1 4 err 28",
            "write 1 5 err 28"
        ]
    );
    assert!(lines
        .iter()
        .filter(|l| l.starts_with("sync"))
        .all(|l| l.ends_with(" ok")));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "line 1\nline 2\n",
        "the first two land, nothing of the failed ones"
    );

    let all = log_lines(&log);
    assert_eq!(all[0]["event"], "start");
    assert_eq!(all[0]["dir"], data.to_str().unwrap());
    assert_eq!(all[0]["fail"], "write");
    assert_eq!(all[0]["nth"], 3);
    let calls = calls(&log);
    assert_eq!(calls.len(), 5, "every qualifying write, no sync: {calls:?}");
    for (i, c) in calls.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(c["call"], "write");
        assert_eq!(c["n"], n);
        assert_eq!(c["path"], file.to_str().unwrap());
        assert_eq!(c["failed"], n >= 3);
        assert_eq!(c["injected"], n >= 3);
        assert_eq!(c["errno"], if n >= 3 { 28 } else { 0 });
        assert_eq!(c["fired"], n == 3, "only the 3rd is the firing");
        assert_eq!(c["pid"], all[0]["pid"]);
    }
}

#[test]
fn only_the_nth_sync_fails_with_eio() {
    let (_tmp, data, _, log) = dirs();
    let file = data.join("journal");
    let (out, lines) = run(Some(&var(&data, "fsync", 2, &log)), 4, &[&file]);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    assert_eq!(
        lines,
        [
            "write 1 1 ok",
            "sync 1 1 ok",
            "write 1 2 ok",
            "sync 1 2 err 5",
            "write 1 3 ok",
            "sync 1 3 ok",
            "write 1 4 ok",
            "sync 1 4 ok",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "line 1\nline 2\nline 3\nline 4\n"
    );
    let calls = calls(&log);
    assert_eq!(calls.len(), 4, "every qualifying sync, no write: {calls:?}");
    for (i, c) in calls.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(c["call"], "fdatasync");
        assert_eq!(c["n"], n);
        assert_eq!(c["failed"], n == 2);
        assert_eq!(c["errno"], if n == 2 { 5 } else { 0 });
        assert_eq!(c["fired"], n == 2);
    }
}

#[test]
fn calls_outside_the_directory_never_count_or_fail() {
    let (_tmp, data, data2, log) = dirs();
    let outside = data2.join("journal");
    let inside = data.join("sub").join("journal");
    std::fs::create_dir(data.join("sub")).unwrap();
    // Line by line: the outside file first, then the inside one.
    let (out, lines) = run(Some(&var(&data, "write", 2, &log)), 3, &[&outside, &inside]);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    let writes: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("write"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        writes,
        [
            "write 1 1 ok",
            "write 2 1 ok",
            "write 1 2 ok",
            "write 2 2 err 28",
            "write 1 3 ok",
            "write 2 3 err 28",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "line 1\nline 2\nline 3\n"
    );
    let calls = calls(&log);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls.iter().all(|c| c["path"] == inside.to_str().unwrap()));
    assert_eq!(calls[1]["fired"], true);

    // No file under the directory at all: nothing counts.
    let log2 = data2.join("second.jsonl");
    let (out, lines) = run(Some(&var(&data, "write", 1, &log2)), 3, &[&outside]);
    assert_eq!(out.status.code(), Some(0), "{lines:?}");
    assert!(calls_of(&log2).is_empty());
}

/// The call lines of a log (none when the file is missing).
fn calls_of(log: &Path) -> Vec<Value> {
    if log.exists() {
        calls(log)
    } else {
        Vec::new()
    }
}

#[test]
fn a_malformed_value_fails_nothing_and_says_why() {
    let (_tmp, data, _, log) = dirs();
    let file = data.join("journal");
    let d = data.display();
    let l = log.display();
    let cases = [
        (format!("dir={d};fail=write;nth=0;log={l}"), "nth must be"),
        (format!("dir={d};fail=sync;nth=1;log={l}"), "fail must be"),
        (
            format!("dir=relative;fail=write;nth=1;log={l}"),
            "dir must be",
        ),
        (format!("dir={d};fail=write;log={l}"), "`nth` is missing"),
        (
            format!("dir={d};fail=write;nth=1;log={l};"),
            "a field is empty",
        ),
        (
            format!("dir={d};fail=write;nth=1;log={l};x=1"),
            "unknown key",
        ),
    ];
    for (value, why) in &cases {
        let _ = std::fs::remove_file(&log);
        let (out, lines) = run(Some(value), 3, &[&file]);
        assert_eq!(out.status.code(), Some(0), "{value}: {lines:?}");
        let logged = log_lines(&log);
        assert_eq!(logged.len(), 1, "{value}: {logged:?}");
        assert_eq!(logged[0]["event"], "malformed");
        assert!(
            logged[0]["why"].as_str().unwrap().contains(why),
            "{value}: {logged:?}"
        );
        assert!(out.stderr.is_empty(), "{value}");
    }
    // No usable log: the reason goes to standard error.
    for value in [
        format!("dir={d};fail=write;nth=1"),
        format!("dir={d};fail=write;nth=1;log=relative.jsonl"),
        format!(
            "dir={d};fail=write;nth=1;log={}",
            data.join("no/such/dir/log").display()
        ),
    ] {
        let (out, lines) = run(Some(&value), 3, &[&file]);
        assert_eq!(out.status.code(), Some(0), "{value}: {lines:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("write-fault: INTERLOCK_WRITE_FAULT ignored")
                && stderr.lines().count() == 1,
            "{value}: {stderr}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        3 * 9
    );
}

#[test]
fn without_the_variable_nothing_fails_and_nothing_is_written() {
    let (_tmp, data, _, log) = dirs();
    let file = data.join("journal");
    let (out, lines) = run(None, 3, &[&file]);
    assert_eq!(out.status.code(), Some(0), "{lines:?}");
    assert!(out.stderr.is_empty());
    assert!(!log.exists());
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 3);
}

#[test]
fn a_process_killed_after_the_firing_leaves_it_in_the_log() {
    let (_tmp, data, _, log) = dirs();
    let file = data.join("journal");
    let mut child = probe(Some(&var(&data, "write", 2, &log)))
        .arg("--hold")
        .arg("5")
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let held = line == "held";
        seen.push(line);
        if held {
            break;
        }
    }
    assert_eq!(seen.last().map(String::as_str), Some("held"), "{seen:?}");
    // A SIGKILL from this process: the probe runs no code of its own after it.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9));
    let calls = calls(&log);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1]["n"], 2);
    assert_eq!(calls[1]["fired"], true);
    assert_eq!(calls[1]["errno"], 28);
}

#[test]
fn two_processes_count_apart_and_share_the_log() {
    let (_tmp, data, _, log) = dirs();
    let value = var(&data, "fsync", 1, &log);
    for name in ["a", "b"] {
        let (out, lines) = run(Some(&value), 2, &[&data.join(name)]);
        assert_eq!(out.status.code(), Some(1), "{lines:?}");
        assert_eq!(
            lines[1], "sync 1 1 err 5",
            "each process's first sync fails"
        );
    }
    let all = log_lines(&log);
    let starts = all.iter().filter(|l| l["event"] == "start").count();
    let fired: Vec<&Value> = all.iter().filter(|l| l["fired"] == true).collect();
    assert_eq!((starts, fired.len()), (2, 2), "{all:?}");
    assert_ne!(fired[0]["pid"], fired[1]["pid"]);
}

#[test]
fn threads_share_one_count() {
    let (_tmp, data, _, log) = dirs();
    let files: Vec<PathBuf> = (1..=4).map(|i| data.join(format!("t{i}"))).collect();
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let out = probe(Some(&var(&data, "write", 100, &log)))
        .arg("--threads")
        .arg("50")
        .args(&paths)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let failed = stdout.lines().filter(|l| l.ends_with(" err 28")).count();
    assert_eq!(
        failed, 101,
        "200 writes, the 100th and every later one fail"
    );
    let landed: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    assert_eq!(landed, 99);
    let calls = calls(&log);
    let mut ns: Vec<u64> = calls.iter().map(|c| c["n"].as_u64().unwrap()).collect();
    ns.sort_unstable();
    assert_eq!(ns, (1..=200).collect::<Vec<u64>>(), "each count once");
    let fired: Vec<&Value> = calls.iter().filter(|c| c["fired"] == true).collect();
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0]["n"], 100);
    assert_eq!(calls.iter().filter(|c| c["injected"] == true).count(), 101);
}

#[test]
fn a_directory_named_through_a_symbolic_link_still_counts() {
    let (_tmp, data, data2, log) = dirs();
    let link = data2.join("link");
    std::os::unix::fs::symlink(&data, &link).unwrap();
    let (out, lines) = run(
        Some(&var(&link, "write", 1, &log)),
        1,
        &[&link.join("journal")],
    );
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    assert_eq!(lines[0], "write 1 1 err 28");
    let all = log_lines(&log);
    assert_eq!(all[0]["dir"], data.to_str().unwrap(), "resolved at load");
    assert_eq!(all[1]["path"], data.join("journal").to_str().unwrap());
}

/// The `call` names of a log's call lines, in order.
fn call_names(log: &Path) -> Vec<String> {
    calls_of(log)
        .iter()
        .map(|c| c["call"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_standard_library_calls_are_the_ones_counted() {
    let (_tmp, data, _, log) = dirs();
    // Nothing fails (nth far off): which calls count, and under which name.
    let out = probe(Some(&var(&data, "write", 1000, &log)))
        .arg("--each")
        .arg(&data)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.lines().all(|l| l.ends_with(" ok")), "{stdout}");
    assert_eq!(
        call_names(&log),
        ["write", "write", "writev", "pwrite64"],
        "fs::write, write_all, write_vectored, write_at; rename and copy are not counted"
    );
    let log2 = data.with_file_name("sync.jsonl");
    let out = probe(Some(&var(&data, "fsync", 1000, &log2)))
        .arg("--each")
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(call_names(&log2), ["fsync", "fdatasync"]);

    // Each write the probe makes fails when it is the first counted one.
    for (nth, name) in [
        (1, "fs_write"),
        (2, "write_all"),
        (3, "write_vectored"),
        (4, "write_at"),
    ] {
        let dir = data.join(format!("nth{nth}"));
        std::fs::create_dir(&dir).unwrap();
        let log = dir.with_extension("jsonl");
        let out = probe(Some(&var(&dir, "write", nth, &log)))
            .arg("--each")
            .arg(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let failed: Vec<&str> = stdout.lines().filter(|l| l.contains(" err ")).collect();
        assert_eq!(
            failed.first().copied(),
            Some(format!("{name} err 28").as_str()),
            "{stdout}"
        );
    }
}
