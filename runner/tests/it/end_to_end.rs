//! End to end: the runner binary runs a few cells through real worker processes against the
//! embedded emulator, SIGKILLs each worker, and writes a results file that verifies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use verify::results::{Cell, ResultsFile};

fn run(args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--seed",
            "7",
            "--jobs",
            "2",
        ])
        .arg("--out")
        .arg(out.path())
        .args(args)
        .output()
        .unwrap();
    (output, out)
}

fn cell<'a>(file: &'a ResultsFile, crash: &str, outage: &str, column: &str) -> &'a Cell {
    file.cells
        .iter()
        .find(|c| c.crash == crash && c.outage == outage && c.column == column)
        .unwrap_or_else(|| panic!("no cell {crash}/{outage}/{column}"))
}

#[test]
fn cells_run_through_real_processes_and_sigkills() {
    let (output, out) = run(&[
        "--cells",
        "before_send:billing_credit:*",
        "after_send:renewal:interlock",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "runner failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verify: ok"), "{stdout}");

    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    assert_eq!(file.format, verify::results::RESULTS_FORMAT);
    assert_eq!(file.cells.len(), 4);
    assert_eq!(file.environment.backend, "emulator");
    assert_eq!(file.environment.decider.kind, "policy");
    assert_eq!(file.environment.seed, 7);
    assert_eq!(file.environment.signer.len(), 64);
    assert!(file.environment.claim.max_in_flight_ms >= 5000);
    assert_eq!(file.rows.len(), 2);
    assert_eq!(file.columns, ["no_check", "hand_check", "interlock"]);

    for c in &file.cells {
        assert_eq!(
            c.worker_exit_signal,
            Some(9),
            "{}/{}/{}",
            c.crash,
            c.outage,
            c.column
        );
        assert_eq!(c.worker_exit_code, None);
        assert!(c.harness_error.is_none(), "{:?}", c.harness_error);
        assert!(c.answer_matches, "{}/{}/{}", c.crash, c.outage, c.column);
        assert!(c.timings.is_some());
        assert!(c.decision.is_some());
        assert!(c.observations.decision.is_some());
        assert!(c.observations.crash.is_some());
        assert!(c.observations.restart.is_some());
    }

    let no_check = cell(&file, "before_send", "billing_credit", "no_check");
    assert_eq!(no_check.outcome, "CREDITED");
    assert!(
        !no_check.invariant_held,
        "no_check pays twice for the incident"
    );
    assert!(!no_check.proof);
    assert_eq!(no_check.record, "none");

    let hand = cell(&file, "before_send", "billing_credit", "hand_check");
    assert_eq!(hand.outcome, "REFUSED:stale_premise");
    assert!(hand.invariant_held && hand.proof);
    assert_eq!(hand.ground_truth.case_credit_count, 0);

    let gate = cell(&file, "before_send", "billing_credit", "interlock");
    assert_eq!(gate.outcome, "REFUSED:stale_premise_at_recovery");
    assert!(gate.invariant_held && gate.proof);
    assert!(gate.receipt.is_some());
    assert_eq!(
        gate.journal_kinds.last().map(String::as_str),
        Some("REFUSED")
    );

    let retry = cell(&file, "after_send", "renewal", "interlock");
    assert_eq!(retry.outcome, "COMMITTED_BY_RETRY");
    assert_eq!(retry.via.as_deref(), Some("retry-idempotent"));
    assert!(retry.invariant_held && retry.proof);
    assert_eq!(retry.ground_truth.case_credit_count, 1);
    assert_eq!(retry.want.count, 1);

    let s = &file.summary["interlock"];
    assert_eq!((s.cells, s.held, s.proof, s.harness_errors), (2, 2, 2, 0));
    let s = &file.summary["no_check"];
    assert_eq!((s.cells, s.held, s.proof), (1, 0, 0));
}

#[test]
fn bad_cell_specs_are_refused_before_anything_runs() {
    let (output, out) = run(&["--cells", "before_send:renewal"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("crash:outage:column"), "{stderr}");
    assert!(!out.path().join("billing_credit.json").exists());
}

/// An `--out` that cannot be written is found before the first cell (and trial) runs, not after
/// the whole run (with Stripe test mode or a model decider, that would throw away paid calls).
#[test]
fn an_unwritable_out_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the directory should be: it cannot be created or written into.
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, b"").unwrap();
    for extra in [&[][..], &["--nemesis", "kill_random", "--trials", "1"][..]] {
        let output = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["--scenario", "billing_credit", "--no-site", "--out"])
            .arg(&blocked)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("not-a-dir"),
            "names the directory: {stderr}"
        );
        assert!(stderr.contains("before any"), "{stderr}");
        // Nothing ran: no cell or trial reported, no summary.
        assert!(
            output.stdout.is_empty(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

#[test]
fn stripe_backend_refuses_live_keys() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--backend",
            "stripe",
        ])
        .arg("--out")
        .arg(out.path())
        .env("STRIPE_SECRET_KEY", "sk_live_notarealkey")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TEST key"), "{stderr}");
    assert!(!stderr.contains("notarealkey"), "{stderr}");
}

#[test]
fn anthropic_decider_needs_its_key() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--decider",
            "anthropic",
        ])
        .arg("--out")
        .arg(out.path())
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("ANTHROPIC_API_KEY"));
}

#[test]
fn a_worker_that_is_not_killed_is_a_harness_error_never_dropped() {
    for (fault, expect) in [
        ("exit", "exited by itself with code 4"),
        ("abort", "signal 6"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["--scenario", "billing_credit", "--no-site", "--seed", "3"])
            .args([
                "--cells",
                "before_send:renewal:hand_check",
                "before_send:renewal:interlock",
            ])
            .arg("--out")
            .arg(out.path())
            .env("INTERLOCK_WORKER_FAULT", fault)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{fault}: {stdout}");
        assert!(stdout.contains("verify: ok"), "{fault}: {stdout}");
        let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
        let file = verify::load::load_results(&bytes).unwrap();
        assert_eq!(file.cells.len(), 2, "HARNESS_ERROR cells are kept");
        for c in &file.cells {
            assert_eq!(c.outcome, "HARNESS_ERROR");
            let why = c.harness_error.as_deref().unwrap();
            assert!(why.contains(expect), "{fault}: {why}");
            assert!(why.contains("injected fault"), "stderr tail kept: {why}");
            assert!(!c.proof && c.timings.is_none());
            assert_ne!(c.worker_exit_signal, Some(9));
        }
        assert_eq!(file.summary["interlock"].harness_errors, 1);
        assert_eq!(file.summary["interlock"].cells, 0);
    }
}

/// A stateless Messages API mock: asks for the account first, then issues the approved credit.
fn serve_mock_messages_api() -> String {
    serve_mock_messages_api_proposing(1000)
}

/// The mock, proposing `amount` cents (over the cap when above 1000).
fn serve_mock_messages_api_proposing(amount: i64) -> String {
    serve_counting_mock(amount).0
}

/// The mock, and how many decisions (`issue_credit` answers) it gave.
fn serve_counting_mock(amount: i64) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::{routing::post, Json, Router};
    use serde_json::{json, Value};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let decisions = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = decisions.clone();
    let messages = move |Json(body): Json<Value>| {
        let counter = counter.clone();
        async move {
            let turns = body["messages"].as_array().map_or(0, Vec::len);
            let block = if turns <= 1 {
                json!({"type": "tool_use", "id": "toolu_a", "name": "get_account", "input": {}})
            } else {
                counter.fetch_add(1, Ordering::SeqCst);
                let account: Value = body["messages"][turns - 1]["content"][0]["content"]
                    .as_str()
                    .and_then(|s| serde_json::from_str(s).ok())
                    .unwrap_or(Value::Null);
                json!({"type": "tool_use", "id": "toolu_b", "name": "issue_credit", "input": {
                    "amount_cents": amount,
                    "description": format!("Goodwill credit for {} ({})", account["incident"].as_str().unwrap_or("?"), account["case_id"].as_str().unwrap_or("?"))
                }})
            };
            Json(json!({
                "id": "msg_x", "type": "message", "role": "assistant",
                "model": "claude-haiku-4-5-20251001", "content": [block],
                "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}
            }))
        }
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(
                listener,
                Router::new().route("/v1/messages", post(messages)),
            )
            .await
            .unwrap();
        });
    });
    (format!("http://{}", rx.recv().unwrap()), decisions)
}

/// Runs one row through the three columns with the model decider (mocked) and `--decide mode`.
fn run_row_with_model(mode: Option<&str>) -> (verify::results::ResultsFile, usize) {
    let (url, decisions) = serve_counting_mock(1000);
    let out = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.args(["--scenario", "billing_credit", "--no-site"])
        .args(["--decider", "anthropic", "--anthropic-base-url", &url])
        .args(["--cells", "before_send:renewal:*", "--jobs", "3"])
        .arg("--out")
        .arg(out.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-offline-test");
    if let Some(mode) = mode {
        cmd.args(["--decide", mode]);
    }
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    let asked = decisions.load(std::sync::atomic::Ordering::SeqCst);
    (file, asked)
}

#[test]
fn a_model_decides_once_per_row_and_every_column_replays_it() {
    let (file, asked) = run_row_with_model(None);
    assert_eq!(asked, 1, "one model decision for the row");
    assert_eq!(file.cells.len(), 3);
    let decisions: Vec<_> = file
        .cells
        .iter()
        .map(|c| (c, c.decision.as_ref().unwrap()))
        .collect();
    let deciders: Vec<_> = decisions
        .iter()
        .filter(|(_, d)| d.replayed_from.is_none())
        .collect();
    assert_eq!(deciders.len(), 1, "one cell asked the model");
    let (source, source_decision) = deciders[0];
    let label = format!("{}/{}/{}", source.crash, source.outage, source.column);
    for (c, d) in &decisions {
        assert_eq!(d.amount, source_decision.amount);
        assert_eq!(d.decider, source_decision.decider);
        // Each replay names the deciding cell and carries its own case's ids.
        if d.replayed_from.is_some() {
            assert_eq!(d.replayed_from.as_deref(), Some(label.as_str()));
        }
        assert!(d.description.contains(&c.case.case_id), "{}", d.description);
        assert!(
            d.description.contains(&c.case.incident),
            "{}",
            d.description
        );
        assert_ne!(c.outcome, "HARNESS_ERROR", "{:?}", c.harness_error);
    }
}

#[test]
fn per_cell_asks_the_model_in_every_cell() {
    let (file, asked) = run_row_with_model(Some("per-cell"));
    assert_eq!(asked, 3);
    assert!(file
        .cells
        .iter()
        .all(|c| c.decision.as_ref().unwrap().replayed_from.is_none()));
}

#[test]
fn anthropic_decider_runs_through_workers_against_a_mock() {
    let url = serve_mock_messages_api();
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--decider",
            "anthropic",
        ])
        .args([
            "--anthropic-base-url",
            &url,
            "--cells",
            "after_send:renewal:interlock",
        ])
        .arg("--out")
        .arg(out.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-offline-test")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    assert_eq!(file.environment.decider.kind, "anthropic");
    assert_eq!(
        file.environment.decider.model.as_deref(),
        Some("claude-haiku-4-5-20251001")
    );
    let c = &file.cells[0];
    let d = c.decision.as_ref().unwrap();
    assert_eq!(d.amount, 1000);
    assert_eq!(d.decider.kind, "anthropic");
    assert!(
        d.description.contains(&c.case.incident),
        "{}",
        d.description
    );
    assert_eq!(c.outcome, "COMMITTED_BY_RETRY");
    assert!(c.invariant_held && c.proof);
}

/// Processes whose command line mentions `needle` (Linux /proc).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(cmd);
            }
        }
    }
    found
}

#[test]
fn ctrl_c_kills_workers_and_writes_nothing() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // before_send/billing_credit/interlock waits max_in_flight (5.5 s) in its restart worker.
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--jobs",
            "2",
            "--repeat",
            "2",
        ])
        .args(["--cells", "before_send:billing_credit:interlock"])
        .arg("--out")
        .arg(out.path())
        .env("TMPDIR", tmp.path())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(first.starts_with("runner:"), "{first}");
    // Wait until both restart workers are running, then interrupt.
    let needle = tmp.path().to_string_lossy().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while processes_mentioning("worker restart")
        .iter()
        .filter(|c| c.contains(&needle))
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "restart workers never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rest.contains("no results were written"), "{rest}");
    assert!(!out.path().join("billing_credit.json").exists());
    assert!(
        processes_mentioning(&needle).is_empty(),
        "workers left behind: {:?}",
        processes_mentioning(&needle)
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "the run's temp dir (and its key) must be gone: {left:?}"
    );
}

/// The whole chain on fresh output of every crash point x outage x column (the reference rows and
/// the two the reference page did not run): the runner writes results and renders the site itself,
/// the verifier (pinned to the signer the run published) accepts the file, the Verdict's checked
/// claims hold on this data, and the receipt pages the site rendered belong to the file.
#[test]
fn a_run_renders_a_site_from_results_that_verify_with_the_key_pinned() {
    let out = tempfile::tempdir().unwrap();
    let site_dir = out.path().join("public");
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--seed",
            "11",
            "--cells",
            "*:*:*",
        ])
        .arg("--out")
        .arg(out.path())
        .arg("--site-out")
        .arg(&site_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "runner failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let index = site_dir.join("index.html");
    assert!(
        stdout.contains(&index.display().to_string()),
        "the runner prints the index path: {stdout}"
    );

    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    let key_bytes: [u8; 32] = hex::decode(&file.environment.signer)
        .unwrap()
        .try_into()
        .unwrap();
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key_bytes).unwrap();
    let report = verify::check::verify_results(&file, &verify::receipt::KeyCheck::Pinned(key));
    assert!(report.ok, "{:?}", report.first_findings());

    // This row is outside the reference six: the gate finds the credit that landed before billing's
    // credit note and commits on the lookup even though the premise moved.
    let interlock = cell(&file, "after_send", "billing_credit", "interlock");
    assert_eq!(interlock.outcome, "COMMITTED_ON_QUERY");
    assert!(interlock.invariant_held && interlock.proof);

    let effect = interlock.effect_id.as_deref().unwrap();
    let page = site_dir
        .join("billing_credit")
        .join("receipts")
        .join(format!("{effect}.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(effect));
    assert!(std::fs::read_to_string(&index)
        .unwrap()
        .contains("billing_credit"));
    let report =
        std::fs::read_to_string(site_dir.join("billing_credit").join("index.html")).unwrap();
    assert!(
        report.contains("Where interlock is better"),
        "the Verdict is rendered in full for the whole matrix"
    );
    // Built from this checkout (the test runs in one): every page names the commit the site was
    // built from, as the site binary's pages do.
    let head = Command::new("git").args(["rev-parse", "HEAD"]).output();
    if let Some(head) = head.ok().filter(|h| h.status.success()) {
        let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
        for page in [&report, &std::fs::read_to_string(&index).unwrap()] {
            assert!(!page.contains("built from is not known"), "{head}");
            assert!(page.contains(&head[..12]), "the page names {head}");
        }
    }
}

/// A proposal the approval refuses (2000 cents against a 1000 cap) is a judged outcome: no_check
/// sends it and breaks the invariant, the careful columns refuse it before the send and hold it.
#[test]
fn a_proposal_over_the_cap_is_judged_not_a_harness_error() {
    let url = serve_mock_messages_api_proposing(2000);
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--decider",
            "anthropic",
        ])
        .args([
            "--anthropic-base-url",
            &url,
            "--cells",
            "before_send:renewal:*",
        ])
        .arg("--out")
        .arg(out.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-offline-test")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    let no_check = cell(&file, "before_send", "renewal", "no_check");
    assert_eq!(no_check.decision.as_ref().unwrap().amount, 2000);
    assert_eq!(no_check.outcome, "CREDITED");
    assert_eq!(no_check.want.count, 0);
    assert!(!no_check.invariant_held);
    let hand = cell(&file, "before_send", "renewal", "hand_check");
    assert_eq!(hand.outcome, "REFUSED:approval");
    assert!(hand.invariant_held && hand.answer_matches);
    let gate = cell(&file, "before_send", "renewal", "interlock");
    assert!(
        gate.outcome.starts_with("REFUSED:lease"),
        "{}",
        gate.outcome
    );
    assert!(gate.invariant_held && gate.answer_matches && gate.proof);
    assert_eq!(gate.worker_exit_code, Some(3));
    for c in &file.cells {
        assert_ne!(c.outcome, "HARNESS_ERROR", "{:?}", c.harness_error);
    }
}
