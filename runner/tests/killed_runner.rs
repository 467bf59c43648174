//! A runner SIGKILLed by another process leaves nothing going and no private key behind: its
//! workers see it gone and stop, and the run's signing key was never on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rustix::process::{kill_process, Pid, Signal};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Processes (not zombies) whose command line names `needle`, with their pids.
fn processes_naming(needle: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The state follows the command's closing parenthesis: `pid (comm) S ...`.
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        let zombie = state.is_none_or(|s| s.starts_with('Z') || s.starts_with('X'));
        if cmdline.contains(needle) && !zombie {
            out.push((pid, cmdline));
        }
    }
    out
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_sigkilled_runner_leaves_no_worker_running_and_no_key_on_disk() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let tmp_name = tmp.to_str().unwrap().to_owned();
    let mut runner = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--jobs", "2"])
        .arg("--out")
        .arg(root.path().join("out"))
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until the gate's restart worker of this run is going (its cell directory is
    // under `tmp`): the process that, orphaned, would retry its recovery against the emulator
    // that died with the runner for minutes.
    let deadline = Instant::now() + Duration::from_secs(120);
    let workers = loop {
        let found: Vec<(i32, String)> = processes_naming(&tmp_name)
            .into_iter()
            .filter(|(_, cmd)| cmd.contains(" worker restart ") && cmd.contains("interlock"))
            .collect();
        if !found.is_empty() {
            break found;
        }
        assert!(
            runner.try_wait().unwrap().is_none(),
            "the run ended before any worker was seen"
        );
        assert!(
            Instant::now() < deadline,
            "no restart worker started within 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let pid = Pid::from_raw(i32::try_from(runner.id()).unwrap()).unwrap();
    kill_process(pid, Signal::KILL).unwrap();
    runner.wait().unwrap();
    // Every process of the run (workers and any restart) stops on its own, soon.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_naming(&tmp_name);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "10 s after the runner's SIGKILL these are still running: {left:?} (seen first: \
             {workers:?})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nothing the run left on disk holds its private key.
    let files = files_under(&tmp);
    let keys: Vec<_> = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("key"))
        })
        .collect();
    assert!(keys.is_empty(), "key files left behind: {keys:?}");
}
