//! A runner SIGKILLed by another process leaves nothing going and no private key behind: its
//! workers see it gone and stop, and the run's signing key was never on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rustix::process::{kill_process, Pid, Signal};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A living process (not a zombie): its pid, command line and process group.
struct Proc {
    pid: i32,
    cmdline: String,
    group: Option<i32>,
}

/// Every living process, read from `/proc`.
fn living() -> Vec<Proc> {
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
        // `pid (comm) state ppid pgrp ...`: the fields follow the command's closing parenthesis.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let zombie = fields
            .first()
            .is_none_or(|s| s.starts_with('Z') || s.starts_with('X'));
        if !zombie {
            let group = fields.get(2).and_then(|g| g.parse::<i32>().ok());
            out.push(Proc {
                pid,
                cmdline,
                group,
            });
        }
    }
    out
}

/// Processes (not zombies) whose command line names `needle`, with their pids.
fn processes_naming(needle: &str) -> Vec<(i32, String)> {
    living()
        .into_iter()
        .filter(|p| p.cmdline.contains(needle))
        .map(|p| (p.pid, p.cmdline))
        .collect()
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
    // Nothing the run left on disk holds its private key (looked at at once, before the run's
    // folder is cleaned away).
    let keys: Vec<_> = files_under(&tmp)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("key"))
        })
        .collect();
    assert!(keys.is_empty(), "key files left behind: {keys:?}");
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
    // The run's folder goes too, a moment after the runner.
    wait_until_empty(&tmp, Duration::from_secs(10));
}

/// Waits (bounded by `limit`) until `dir` holds nothing.
fn wait_until_empty(dir: &Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} s after the runner's SIGKILL these are still in its temp dir: {left:?}",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The processes in process group `group` (zombies left out).
fn living_in_group(group: i32) -> Vec<i32> {
    living()
        .into_iter()
        .filter(|p| p.group == Some(group))
        .map(|p| p.pid)
        .collect()
}

#[test]
#[ignore = "needs postfix (apt-get install postfix) and root"]
fn a_sigkilled_notify_run_leaves_no_mail_server_running() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // Postfix's own processes must reach the instance's queue under it.
    use std::os::unix::fs::PermissionsExt;
    for dir in [root.path(), tmp.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tmp_name = tmp.to_str().unwrap().to_owned();
    let mut runner = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "notify", "--no-site"])
        .arg("--out")
        .arg(root.path().join("out"))
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until the run's mail server has started (its master's pid file is under
    // `tmp`) and a worker of the run is going.
    let deadline = Instant::now() + Duration::from_secs(120);
    let master = loop {
        let pid_file = files_under(&tmp)
            .into_iter()
            .find(|p| p.ends_with("pid/master.pid"));
        let master = pid_file
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| t.trim().parse::<i32>().ok());
        let worker = processes_naming(&tmp_name)
            .into_iter()
            .any(|(_, cmd)| cmd.contains("worker"));
        if let (Some(master), true) = (master, worker) {
            break master;
        }
        assert!(
            runner.try_wait().unwrap().is_none(),
            "the run ended before its mail server and a worker were seen"
        );
        assert!(
            Instant::now() < deadline,
            "no mail server and worker within 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        !living_in_group(master).is_empty(),
        "the mail server's master {master} is not running"
    );
    let pid = Pid::from_raw(i32::try_from(runner.id()).unwrap()).unwrap();
    kill_process(pid, Signal::KILL).unwrap();
    runner.wait().unwrap();
    // The instance's watcher stops it (SIGTERM, then SIGKILL after 10 s); the workers stop on
    // their own.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let server = living_in_group(master);
        let workers = processes_naming(&tmp_name);
        if server.is_empty() && workers.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "15 s after the runner's SIGKILL these are still running: mail server {server:?}, \
             workers {workers:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The run's folder and the mail server's go too (the latter once the server is surely
    // stopped).
    wait_until_empty(&tmp, Duration::from_secs(20));
}
