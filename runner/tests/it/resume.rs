//! Long campaigns that resume, through real processes: a billing_credit campaign stopped by a
//! signal from another process keeps its finished trials in its partial file, says the command
//! that resumes it, and that command writes a file that verifies under the campaign's key and
//! holds what an uninterrupted run of the same seed holds; a resume of another plan or key is
//! refused; a full disk stops a campaign with exit 3 and its trials kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rustix::process::{kill_process, Pid, Signal};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use verify::nemesis::NemesisFile;

const NEMESES: &str = "kill_at_step,commit_then_500";

/// A campaign's options (without `--out`), on two jobs.
fn campaign(trials: u32, seed: u32, key: Option<&Path>) -> Vec<String> {
    campaign_on(2, trials, seed, key)
}

/// A campaign's options (without `--out`), on `jobs` jobs.
fn campaign_on(jobs: u32, trials: u32, seed: u32, key: Option<&Path>) -> Vec<String> {
    let mut args: Vec<String> = ["--scenario", "billing_credit", "--nemesis", NEMESES]
        .map(String::from)
        .to_vec();
    args.extend(["--trials".into(), trials.to_string()]);
    args.extend(["--seed".into(), seed.to_string()]);
    args.extend(["--jobs".into(), jobs.to_string()]);
    if let Some(k) = key {
        args.extend(["--signing-key".into(), k.display().to_string()]);
    }
    args
}

fn runner(args: &[String], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

fn spawn(args: &[String], out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn partial(out: &Path) -> PathBuf {
    out.join("nemesis/billing_credit.partial.jsonl")
}

/// Waits (bounded) until the partial file under `out` holds `trials` finished trials.
fn wait_for_trials(out: &Path, trials: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let lines = std::fs::read_to_string(partial(out))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines > trials {
            return;
        }
        assert!(Instant::now() < deadline, "no {trials} trials kept in time");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `signal` to the runner from this process and waits for it.
fn signal_and_wait(child: Child, signal: Signal) -> Output {
    kill_process(Pid::from_child(&child), signal).unwrap();
    child.wait_with_output().unwrap()
}

/// A stable key made with `runner keygen` in `dir`, and its public half.
fn keygen(dir: &Path) -> (PathBuf, ed25519_dalek::VerifyingKey) {
    let path = dir.join("campaign.key");
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("keygen")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let line = String::from_utf8(out.stdout).unwrap();
    let hex = line.split_whitespace().next().unwrap();
    let bytes = verify::entry::decode_lower_hex::<32>(hex).unwrap();
    (
        path,
        ed25519_dalek::VerifyingKey::from_bytes(&bytes).unwrap(),
    )
}

/// The command an interruption or a full disk printed to resume the campaign, as arguments
/// (its first word, `runner`, left out).
fn printed_resume_command(said: &str) -> Vec<String> {
    let command = said
        .lines()
        .filter_map(|l| {
            l.split_once("continue the campaign with: runner ")
                .map(|(_, c)| c)
        })
        .next_back()
        .unwrap_or_else(|| panic!("no resume command in: {said}"));
    assert!(!command.contains('\''), "plain words only here: {command}");
    command.split_whitespace().map(String::from).collect()
}

fn load(path: &Path) -> NemesisFile {
    verify::load::load_nemesis(&verify::input::read_file(path).unwrap()).unwrap()
}

/// The final file under `out`, checked: it verifies pinned to `key`, and its partial file is
/// gone.
fn verified(out: &Path, key: &ed25519_dalek::VerifyingKey) -> NemesisFile {
    let file = load(&out.join("nemesis/billing_credit.json.gz"));
    let report =
        verify::nemesis::check::verify_nemesis(&file, &verify::receipt::KeyCheck::Pinned(*key));
    assert!(report.ok, "{:?}", report.findings.first());
    assert!(
        !partial(out).exists(),
        "the partial file stays after the run"
    );
    file
}

/// What two runs of one seed give alike: every trial's id, in order, and what the runner drew
/// and judged (the outage, faults, kills, interleaving, outcome and judgement); the Stripe ids,
/// times and receipts differ from run to run.
fn drawn_and_judged(file: &NemesisFile) -> Vec<serde_json::Value> {
    file.trials
        .iter()
        .map(|t| {
            serde_json::json!([
                t.id,
                t.outage,
                t.faults,
                t.kills,
                t.interleaving,
                t.outcome,
                t.violation,
                t.answer_matches,
                t.journal_kinds
            ])
        })
        .collect()
}

#[test]
fn a_campaign_stopped_by_sigterm_resumes_with_the_printed_command_to_the_uninterrupted_file() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let args = campaign(6, 41, Some(&key));
    let out = dir.path().join("stopped");
    let child = spawn(&args, &out);
    wait_for_trials(&out, 3);
    let stopped = signal_and_wait(child, Signal::TERM);
    let said = text(&stopped);
    assert_eq!(stopped.status.code(), Some(143), "{said}");
    assert!(said.contains("the results file was not written"), "{said}");
    assert!(
        said.contains(&format!("kept in {}", partial(&out).display())),
        "{said}"
    );
    assert!(!out.join("nemesis/billing_credit.json.gz").exists());
    // A SIGKILL in the middle of an append leaves a torn last line: the resume drops it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(partial(&out))
        .unwrap();
    f.write_all(b"{\"at\":35,\"id\":\"commit_then_500:interl")
        .unwrap();
    drop(f);
    let resumed = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(printed_resume_command(&said))
        .output()
        .unwrap();
    let resumed_said = text(&resumed);
    assert!(resumed.status.success(), "{resumed_said}");
    assert!(
        resumed_said.contains("a torn last line was dropped"),
        "{resumed_said}"
    );
    let resumed = verified(&out, &public);

    let whole_out = dir.path().join("whole");
    let whole = runner(&args, &whole_out);
    assert!(whole.status.success(), "{}", text(&whole));
    let whole = verified(&whole_out, &public);
    assert_eq!(resumed.plan, whole.plan);
    assert_eq!(resumed.environment, whole.environment);
    assert_eq!(resumed.trials.len(), 36);
    assert_eq!(drawn_and_judged(&resumed), drawn_and_judged(&whole));
}

#[test]
fn a_resume_of_another_plan_or_key_is_refused_and_a_per_run_key_cannot_be_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = keygen(dir.path());
    let out = dir.path().join("stable");
    let child = spawn(&campaign(4, 7, Some(&key)), &out);
    wait_for_trials(&out, 1);
    let killed = signal_and_wait(child, Signal::KILL);
    assert_eq!(killed.status.code(), None);

    let mut other_plan = campaign(5, 7, Some(&key));
    other_plan.push("--resume".into());
    let refused = runner(&other_plan, &out);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("its plan.trials is 4, this run's is 5"),
        "{}",
        text(&refused)
    );
    let mut no_key = campaign(4, 7, None);
    no_key.push("--resume".into());
    let refused = runner(&no_key, &out);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused).contains("resume with that key"),
        "{}",
        text(&refused)
    );
    let other_dir = dir.path().join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let mut other_key = campaign(4, 7, Some(&keygen(&other_dir).0));
    other_key.push("--resume".into());
    let refused = runner(&other_key, &out);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused).contains("not by the key given"),
        "{}",
        text(&refused)
    );
    let fresh = runner(&campaign(4, 7, Some(&key)), &out);
    assert_eq!(fresh.status.code(), Some(2));
    assert!(
        text(&fresh).contains("continue it with --resume, or remove the file"),
        "{}",
        text(&fresh)
    );

    // A per-run key ends with its runner: the interruption says the campaign cannot be resumed,
    // a resume is refused saying why, and a fresh run replaces the file.
    let out = dir.path().join("per-run");
    let child = spawn(&campaign(4, 7, None), &out);
    wait_for_trials(&out, 1);
    let stopped = signal_and_wait(child, Signal::INT);
    assert_eq!(stopped.status.code(), Some(130), "{}", text(&stopped));
    assert!(
        text(&stopped).contains("so the campaign cannot be resumed"),
        "{}",
        text(&stopped)
    );
    let refused = runner(&no_key, &out);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused).contains("was signed by a per-run key"),
        "{}",
        text(&refused)
    );
    let fresh = runner(&campaign(4, 7, None), &out);
    assert!(fresh.status.success(), "{}", text(&fresh));
    assert!(text(&fresh).contains("which cannot be resumed"));
    assert!(!partial(&out).exists());
}

/// A tmpfs mounted on a directory for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount a tmpfs (needs root)");
        Tmpfs(dir.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes zeros into `path` until the disk holding it is full.
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    // What is left is less than one page: fill it byte by byte.
    while f.write(&[0]).is_ok_and(|n| n == 1) {}
}

#[test]
#[ignore = "needs root: mounts a tmpfs"]
fn a_disk_that_fills_mid_campaign_stops_it_with_exit_3_and_the_trials_kept_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let out = dir.path().join("small-disk");
    let disk = Tmpfs::mount(&out, "16m");
    // One trial at a time, so the disk fills while most of the campaign is still to run.
    let args = campaign_on(1, 10, 17, Some(&key));
    let child = spawn(&args, &out);
    wait_for_trials(&out, 2);
    let filler = out.join("filler");
    fill(&filler);
    let full = child.wait_with_output().unwrap();
    let said = text(&full);
    assert_eq!(full.status.code(), Some(3), "{said}");
    assert!(said.contains("the disk is full: cannot write"), "{said}");
    assert!(
        said.contains(&format!("kept in {}", partial(&out).display())),
        "{said}"
    );
    assert!(!out.join("nemesis/billing_credit.json.gz").exists());
    std::fs::remove_file(&filler).unwrap();
    let resumed = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(printed_resume_command(&said))
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    let file = verified(&out, &public);
    assert_eq!(file.trials.len(), 60);
    drop(disk);
}

#[test]
#[ignore = "needs root: mounts a tmpfs"]
fn a_disk_too_full_for_a_matrix_results_file_exits_3_saying_the_cells_are_lost() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tiny-disk");
    // One page: room for the probe of --out at start, not for the results file.
    let disk = Tmpfs::mount(&out, "4k");
    let run = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "pr_merge", "--no-site"])
        .arg("--out")
        .arg(&out)
        // No wait for space: give up at once.
        .env("INTERLOCK_DISK_FULL_WAIT_S", "0")
        .output()
        .unwrap();
    let said = text(&run);
    assert_eq!(run.status.code(), Some(3), "{said}");
    assert!(said.contains("cannot write"), "{said}");
    assert!(said.contains("its cells are lost"), "{said}");
    assert!(!out.join("pr_merge.json").exists());
    drop(disk);
}

#[test]
fn a_campaign_given_its_exposure_span_resumes_with_the_printed_command() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path());
    let mut args = campaign(2, 43, Some(&key));
    let at = args.iter().position(|a| a == NEMESES).unwrap();
    args[at] = "kill_at_step,exposure".into();
    args.extend(["--exposure-span-ms".into(), "450".into()]);
    let out = dir.path().join("stopped");
    let child = spawn(&args, &out);
    wait_for_trials(&out, 2);
    let stopped = signal_and_wait(child, Signal::TERM);
    let said = text(&stopped);
    assert_eq!(stopped.status.code(), Some(143), "{said}");
    let command = printed_resume_command(&said);
    assert!(
        command.join(" ").contains("--exposure-span-ms 450"),
        "{said}"
    );
    let resumed = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(command)
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    let file = verified(&out, &public);
    assert_eq!(file.trials.len(), 12);
}

#[test]
#[ignore = "needs root: mounts a tmpfs"]
fn a_matrix_whose_disk_is_full_waits_for_space_and_writes_its_results_once_there_is() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tiny-disk");
    let disk = Tmpfs::mount(&out, "4k");
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "pr_merge", "--no-site"])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let mut lines = stderr.lines();
    // Wait (bounded by the run itself) for the runner to say the disk is full.
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains("the disk is full") {
            break;
        }
    }
    assert!(said.contains("free space there"), "{said}");
    // Free space: the same tmpfs, made larger.
    let status = Command::new("mount")
        .args(["-o", "remount,size=16m"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "{said}");
    assert!(said.contains("space was freed"), "{said}");
    let text = std::fs::read(out.join("pr_merge.json")).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&text).is_ok());
    drop(disk);
}
