//! The runner's command-line edges: exit codes (2 could not run, 130 after SIGINT, 143 after
//! SIGTERM), one error line on stderr in the tools' style, and help that wraps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rustix::process::{kill_process, Pid, Signal};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Starts a long matrix run, waits until its signal handler is installed (the run's first line
/// is printed after it), sends `signal` from this process, and returns the exit code, stderr and
/// whether a results file was written.
fn interrupt_a_run(signal: Signal) -> (Option<i32>, String, bool) {
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--jobs",
            "1",
            "--repeat",
            "20",
        ])
        .arg("--out")
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "ended early: {text}"
        );
        text.push_str(&line);
        if line.starts_with("runner: ") && line.contains(" cell(s), ") {
            break;
        }
    }
    kill_process(Pid::from_child(&child), signal).unwrap();
    for line in stderr.lines() {
        text.push_str(&line.unwrap());
        text.push('\n');
    }
    let status = child.wait().unwrap();
    (
        status.code(),
        text,
        out.path().join("billing_credit.json").exists(),
    )
}

#[test]
fn sigterm_exits_143_and_sigint_130_with_nothing_written() {
    for (signal, want) in [(Signal::TERM, 143), (Signal::INT, 130)] {
        let (code, stderr, written) = interrupt_a_run(signal);
        assert_eq!(code, Some(want), "{signal:?}: {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        assert!(!written, "{signal:?}: a results file was written");
    }
}

/// The run's own checks, in the same one-line style as `verify` and `site`, with the OS error
/// once and how to fix it, before any cell runs.
#[test]
fn an_unwritable_site_out_is_one_error_line_before_any_cell_runs() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, b"").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--out"])
        .arg(dir.path().join("out"))
        .arg("--site-out")
        .arg(&blocked)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "runner: error: --site-out {}: ",
            blocked.display()
        )),
        "{stderr}"
    );
    assert!(stderr.matches("(os error").count() <= 1, "{stderr}");
    assert!(
        stderr.contains(": it is a file, not a directory; pass a directory you can write"),
        "{stderr}"
    );
    assert!(!dir.path().join("out/billing_credit.json").exists());
}

#[test]
fn usage_errors_and_reconcile_errors_are_one_line_exit_2() {
    for args in [
        &[][..],
        &["--scenario", "nope"][..],
        &["--scenario", "billing_credit", "--bogus"][..],
        &["reconcile", "/nonexistent/results.json"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("runner: error: "), "{args:?}: {stderr}");
        assert!(stderr.matches("(os error").count() <= 1, "{stderr}");
    }
}

#[test]
fn help_wraps_at_100_columns_without_a_terminal() {
    for args in [
        &["--help"][..],
        &["reconcile", "--help"][..],
        &["keygen", "--help"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        let text = String::from_utf8_lossy(&output.stdout);
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(
            widest <= 100,
            "{args:?}: a help line of {widest} characters"
        );
        if args == ["--help"] {
            // --scenario's help says what each scenario it accepts is.
            for name in runner::scenario::choices() {
                assert!(
                    text.contains(&format!("{name} (")),
                    "--scenario {name} not described in: {text}"
                );
            }
        }
    }
}

/// What a run refuses before it starts anything, one exact line each, exit 2: the run's, the
/// campaign's, the merge's and keygen's own checks (each names the option and how to fix it).
#[test]
fn each_refusal_before_a_run_starts_is_its_exact_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let (out, blocked) = (out.to_str().unwrap(), blocked.to_str().unwrap());
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--replay", "nope"],
            r#""nope" is not a trial id (nemesis:column:14 hex)"#.to_owned(),
        ),
        (
            vec!["merge", "/nonexistent/x.json", "--out", out],
            "/nonexistent/x.json: cannot read it: No such file or directory (os error 2); pass \
             the path of a shard file (DIR/nemesis/billing_credit.shard-K-of-N.json.gz, or .json \
             from earlier runs)"
                .to_owned(),
        ),
        (
            vec!["merge", "/nonexistent/x.json", "--out", blocked],
            format!(
                "--out {blocked}/nemesis: cannot write the merged file there: Not a directory \
                 (os error 20); pass a directory you can write"
            ),
        ),
        (
            vec!["--scenario", "shared_cap", "--repeat", "0", "--out", out],
            "--repeat 0 runs no cell; pass --repeat 1 or more".to_owned(),
        ),
        (
            vec!["--scenario", "billing_credit", "--jobs", "0", "--out", out],
            "--jobs must be at least 1; pass --jobs 1 or more, or leave it out for the default"
                .to_owned(),
        ),
        (
            vec!["--scenario", "shared_cap", "--nemesis", ",", "--out", out],
            "--nemesis needs `all` or at least one name".to_owned(),
        ),
        (
            vec![
                "--scenario",
                "shared_cap",
                "--nemesis",
                "all",
                "--out",
                blocked,
            ],
            format!(
                "--out {blocked}: cannot write the nemesis file there: Not a directory \
                 (os error 20); pass a directory you can write"
            ),
        ),
        (
            vec![
                "--scenario",
                "billing_credit",
                "--nemesis",
                "all",
                "--out",
                blocked,
            ],
            format!(
                "--out {blocked}/nemesis: cannot write the results there: Not a directory \
                 (os error 20); pass a directory you can write (checked before any trial runs)"
            ),
        ),
        (
            vec![
                "--scenario",
                "billing_credit",
                "--nemesis",
                "all",
                "--trials",
                "2",
                "--shard",
                "2/3",
                "--out",
                out,
            ],
            "--shard 2/3: a campaign of 2 trials per nemesis and column is cut into 1 to 2 \
             shards, numbered from 1; pass K/N with 1 <= K <= N <= --trials"
                .to_owned(),
        ),
        (
            vec![
                "--scenario",
                "billing_credit",
                "--journal",
                "mysql://h/db",
                "--no-site",
                "--out",
                out,
            ],
            "--journal must be a PostgreSQL URL (postgres://user@host:port/db), got \
             \"mysql://h/db\"; without --journal each cell keeps a JSONL journal file"
                .to_owned(),
        ),
        (
            vec![
                "--scenario",
                "billing_credit",
                "--no-site",
                "--out",
                blocked,
            ],
            format!(
                "--out {blocked}: cannot write the results there: it is a file, not a directory; \
                 pass a directory you can write (checked before any cell runs)"
            ),
        ),
        (
            vec!["keygen", "/nonexistent/dir/key"],
            "cannot create /nonexistent/dir/key (it is never overwritten): No such file or \
             directory (os error 2); pass the path of a new file in an existing directory"
                .to_owned(),
        ),
    ];
    for (args, want) in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(&args)
            .env_remove("INTERLOCK_SIGNING_KEY")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr, format!("runner: error: {want}\n"), "{args:?}");
    }
}

/// A pr_merge matrix (seconds, git only) into `out`, with `stdout` as given; its exit code and
/// stderr.
fn pr_merge_into(
    out: &std::path::Path,
    site: &std::path::Path,
    stdout: Stdio,
) -> (Option<i32>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "pr_merge", "--jobs", "2"])
        .arg("--out")
        .arg(out)
        .arg("--site-out")
        .arg(site)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = child.wait_with_output().unwrap();
    (
        done.status.code(),
        String::from_utf8_lossy(&done.stderr).into_owned(),
    )
}

#[test]
fn a_site_that_cannot_be_rendered_fails_the_run_and_keeps_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // A stray file the site cannot read, beside the results the run writes.
    std::fs::write(out.join("stray.json"), "{}").unwrap();
    let (code, stderr) = pr_merge_into(&out, &dir.path().join("site"), Stdio::null());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("site: could not render the report"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the report site could not be rendered"),
        "{stderr}"
    );
    assert!(out.join("pr_merge.json").is_file());
}

#[test]
fn a_closed_standard_output_silences_the_run_not_its_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // A pipe whose reading end is closed before the run writes its first line.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let (code, stderr) = pr_merge_into(&out, &dir.path().join("site"), Stdio::from(writer));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.join("pr_merge.json").is_file());
    assert!(dir.path().join("site/index.html").is_file());
}

/// `runner keygen`'s one line of output is its answer (it goes into the signers file): a
/// standard output that cannot take it (`/dev/full`, or closed) fails the command, and the error
/// gives the line, so nothing is lost; the key file stays written.
#[test]
fn a_keygen_line_that_cannot_be_printed_fails_and_is_given_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    for (k, closed) in [false, true].into_iter().enumerate() {
        let key = dir.path().join(format!("k{k}.key"));
        let stdout = if closed {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            Stdio::from(writer)
        } else {
            Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
        };
        let out = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["keygen", "--comment", "ci@example"])
            .arg(&key)
            .stdout(stdout)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "closed {closed}: {stderr}");
        assert!(key.is_file(), "closed {closed}: {stderr}");
        let given = stderr
            .split("add this line to the signers file yourself: ")
            .nth(1)
            .unwrap_or_else(|| panic!("closed {closed}: {stderr}"));
        let (public, comment) = given.trim().split_once(' ').unwrap();
        assert_eq!(comment, "ci@example", "{stderr}");
        assert_eq!(public.len(), 64, "{stderr}");
        assert!(public.bytes().all(|b| b.is_ascii_hexdigit()), "{stderr}");
    }
}

#[test]
fn a_site_out_folder_that_holds_no_site_is_refused_before_any_cell_runs() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("mine");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("notes.txt"), "mine").unwrap();
    for scenario in ["billing_credit", "pr_merge", "shared_cap"] {
        let done = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["--scenario", scenario, "--out"])
            .arg(dir.path().join("out"))
            .arg("--site-out")
            .arg(&site)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "{scenario}: {stderr}");
        assert!(
            stderr.contains("--site-out: cannot build the site into")
                && stderr.contains("holds files and no site"),
            "{scenario}: {stderr}"
        );
        assert!(!dir
            .path()
            .join("out")
            .join(format!("{scenario}.json"))
            .exists());
        assert_eq!(
            std::fs::read_to_string(site.join("notes.txt")).unwrap(),
            "mine"
        );
    }
}

#[test]
fn ctrl_c_while_keeping_the_emulator_says_the_written_results_are_kept() {
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--cells",
            "before_send:renewal:interlock",
            "--no-site",
            "--keep-emulator",
        ])
        .arg("--out")
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run is written and the emulator serves once this line is out.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 && !line.contains("emulator: serving") {
        line.clear();
    }
    assert!(line.contains("emulator: serving"), "the run never served");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the results already written are kept"),
        "{stderr}"
    );
    assert!(!stderr.contains("no results"), "{stderr}");
    assert!(out.path().join("billing_credit.json").is_file());
}

/// Ctrl-C while the report site is being rendered: the stop says the site is finished first, the
/// site is written whole, and the run still ends as interrupted (130), naming what it wrote.
#[test]
fn a_stop_during_the_site_finishes_the_site_and_exits_130_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let site_out = dir.path().join("public");
    // The committed billing_credit matrix and campaign beside the run's file: a site of
    // thousands of pages, seconds to render.
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    std::fs::create_dir_all(out.join("nemesis")).unwrap();
    for name in ["billing_credit.json", "nemesis/billing_credit.json.gz"] {
        std::fs::copy(committed.join(name), out.join(name)).unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "pr_merge", "--out"])
        .arg(&out)
        .arg("--site-out")
        .arg(&site_out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text).unwrap();
        text
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = String::new();
    // The results are written and verified, and the site's rendering has begun.
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.starts_with("site: rendering") {
            break;
        }
    }
    assert!(said.contains("verify: ok"), "{said}");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    said.push_str(&errors.join().unwrap());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130), "{said}");
    assert!(
        said.contains("the report site being rendered is finished first"),
        "{said}"
    );
    assert!(site_out.join("index.html").is_file(), "{said}");
    assert!(
        said.contains(&site_out.display().to_string()),
        "the last line names the site: {said}"
    );
}
