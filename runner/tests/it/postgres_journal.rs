//! `runner --journal postgres://…`: the interlock column keeps its journal in PostgreSQL, in the
//! run's own schema, and the run still verifies. Needs `INTERLOCK_TEST_PG_URL` (`.ci/pg-cluster
//! start`); without it the test says it was skipped — and fails when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// The test cluster's URL; `None` (the test says it was skipped) when unset outside CI.
fn pg_url() -> Option<String> {
    let url = std::env::var("INTERLOCK_TEST_PG_URL").ok();
    if url.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "INTERLOCK_TEST_PG_URL is not set under CI (.ci/run starts a cluster)"
        );
        eprintln!("skipped: INTERLOCK_TEST_PG_URL is not set (see .ci/pg-cluster)");
    }
    url
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn the_interlock_column_runs_on_a_postgres_journal() {
    let Some(url) = pg_url() else { return };
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit", "--no-site", "--jobs", "2"])
        .args([
            "--cells",
            "before_send:billing_credit:interlock",
            "after_send:renewal:interlock",
        ])
        .args(["--journal", &url])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verify: ok"), "{stdout}");
    let bytes = std::fs::read(out.path().join("billing_credit.json")).unwrap();
    let file = verify::load::load_results(&bytes).unwrap();
    let statuses: Vec<&str> = file.cells.iter().map(|c| c.outcome.as_str()).collect();
    assert!(
        statuses.contains(&"REFUSED:stale_premise_at_recovery")
            && statuses.contains(&"COMMITTED_BY_RETRY"),
        "{statuses:?}"
    );
    assert!(
        file.environment.command.contains("--journal"),
        "the re-run command names the store"
    );
    assert_eq!(file.environment.journal.as_deref(), Some("postgresql"));
    // The entries are in the run's schema, not in any cell's file.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let schemas: Vec<String> = client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'interlock_run_%'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut rows = 0i64;
    for schema in &schemas {
        let n: i64 = client
            .query_one(
                &format!("SELECT count(*) FROM {schema}.interlock_entries"),
                &[],
            )
            .map(|r| r.get(0))
            .unwrap_or(0);
        rows += n;
    }
    let receipts: usize = file
        .cells
        .iter()
        .filter_map(|c| c.receipt.as_ref())
        .map(|r| r.entries.len())
        .sum();
    assert!(
        rows >= receipts as i64,
        "{rows} rows for {receipts} receipt entries"
    );
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn nemesis_trials_run_on_a_postgres_journal() {
    let Some(url) = pg_url() else { return };
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "billing_credit"])
        .args(["--nemesis", "kill_at_step,two_workers"])
        .args(["--trials", "3", "--seed", "9", "--jobs", "4"])
        .args(["--journal", &url])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let bytes =
        verify::input::read_file(&out.path().join("nemesis/billing_credit.json.gz")).unwrap();
    let file = verify::load::load_nemesis(&bytes).unwrap();
    assert_eq!(file.environment.journal.as_deref(), Some("postgresql"));
    assert!(file.environment.command.contains("--journal"));
    // The interlock trials wrote their entries to PostgreSQL, not to a file: their receipts
    // (read back from the store) verify, and the kill at a step still landed at that step.
    let interlock: Vec<_> = file
        .trials
        .iter()
        .filter(|t| t.column == "interlock")
        .collect();
    assert!(interlock.iter().all(|t| t.harness_error.is_none()));
    assert!(interlock.iter().any(|t| t.receipt.is_some()));
    for t in interlock.iter().filter(|t| t.nemesis == "kill_at_step") {
        let k = &t.kills[0];
        if k.after != "request_held" {
            assert_eq!(k.last_step.as_deref(), Some(k.after.as_str()), "{}", t.id);
        }
        assert!(!t.violation || t.assumption.is_some(), "{}", t.id);
    }
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn shared_cap_holds_the_cap_on_a_postgres_journal_at_every_step() {
    let Some(url) = pg_url() else { return };
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "shared_cap",
            "--every-step",
            "--no-site",
            "--jobs",
            "2",
        ])
        .args(["--journal", &url])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("verify: ok"), "{stdout}");
    let bytes = std::fs::read(out.path().join("shared_cap.json")).unwrap();
    let verify::load::Document::SharedCap(file) = verify::load::load_document(&bytes).unwrap()
    else {
        panic!("not a shared_cap file")
    };
    assert_eq!(file.environment.journal, "postgresql");
    let interlock: Vec<_> = file
        .cells
        .iter()
        .filter(|c| c.column == "interlock")
        .collect();
    assert_eq!(interlock.len(), 14);
    for c in interlock {
        assert!(c.harness_error.is_none(), "{:?}", c.harness_error);
        assert!(c.invariant_held, "{}:{}", c.crash_point, c.overlap);
        assert!(
            c.tickets.iter().all(|t| t.proof),
            "{}:{}",
            c.crash_point,
            c.overlap
        );
    }
}

#[test]
#[ignore = "needs PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn hand_pg_lock_runs_in_the_matrix_and_under_kill_while_held_on_a_postgres_journal() {
    let Some(url) = pg_url() else { return };
    let (output, out) = run_cap(&["--journal", &url, "--no-site"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.contains("verify: ok (20 cells"), "{stdout}");
    let bytes = std::fs::read(out.path().join("shared_cap.json")).unwrap();
    let verify::load::Document::SharedCap(file) = verify::load::load_document(&bytes).unwrap()
    else {
        panic!("not a shared_cap file")
    };
    let pg: Vec<_> = file
        .cells
        .iter()
        .filter(|c| c.column == "hand_pg_lock")
        .collect();
    assert_eq!(pg.len(), 4);
    for c in &pg {
        assert!(c.harness_error.is_none(), "{:?}", c.harness_error);
        assert!(c.answers_match, "{}:{}", c.crash_point, c.overlap);
    }
    assert!(file.summary.iter().any(|s| s.column == "hand_pg_lock"));

    let (output, out) = run_cap(&[
        "--journal",
        &url,
        "--nemesis",
        "kill_while_held",
        "--trials",
        "2",
        "--no-site",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("verify: ok (10 trials"), "{output:?}");
    let bytes = verify::input::read_file(&out.path().join("nemesis/shared_cap.json.gz")).unwrap();
    let verify::load::Document::SharedCapNemesis(file) =
        verify::load::load_document(&bytes).unwrap()
    else {
        panic!("not a shared_cap nemesis file")
    };
    for t in file
        .trials
        .iter()
        .filter(|t| ["hand_pg_lock", "interlock"].contains(&t.cell.column.as_str()))
    {
        let c = &t.cell;
        assert!(c.harness_error.is_none(), "{}: {:?}", t.id, c.harness_error);
        assert_eq!(
            c.tickets[0].killed_at.as_deref(),
            Some("request_held"),
            "{}",
            t.id
        );
        assert!(t.held.as_ref().is_some_and(|h| h.landed), "{}", t.id);
        // The SIGKILL ended a's session and so released its lock: b ran to its end by itself.
        assert_eq!(c.tickets[1].first_exit, "finished by itself", "{}", t.id);
        if c.column == "interlock" {
            assert!(c.invariant_held, "{}", t.id);
        }
    }
}

/// `runner --scenario shared_cap` with `extra`, into a fresh directory.
fn run_cap(extra: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["--scenario", "shared_cap", "--seed", "11", "--jobs", "2"])
        .arg("--out")
        .arg(out.path())
        .args(extra)
        .output()
        .unwrap();
    (output, out)
}

#[test]
#[ignore = "needs root (network namespaces) and PostgreSQL: INTERLOCK_TEST_PG_URL (.ci/pg-cluster start); run with --include-ignored"]
fn on_two_hosts_interlock_holds_the_cap_in_every_cell_and_nemesis_trial() {
    let Some(url) = pg_url() else { return };
    let (output, out) = run_cap(&[
        "--two-hosts",
        "--journal",
        &url,
        "--repeat",
        "2",
        "--no-site",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("workers on two hosts"), "{stderr}");
    let bytes = std::fs::read(out.path().join("shared_cap_two_hosts.json")).unwrap();
    let file = match verify::load::load_document(&bytes).unwrap() {
        verify::load::Document::SharedCap(f) => *f,
        _ => panic!("not a shared_cap file"),
    };
    assert_eq!(file.environment.hosts, Some(2));
    assert_eq!(file.environment.journal, "postgresql");
    assert!(verify::shared_cap::check::check(&file, &verify::receipt::KeyCheck::SelfAttested).ok);
    for c in &file.cells {
        assert!(c.harness_error.is_none(), "{:?}", c.harness_error);
        if c.column == "interlock" {
            assert!(c.invariant_held, "{}:{}", c.crash_point, c.overlap);
        }
    }
    // hand_lock's outcome across hosts is a race (its lock is on each host's own disk, so it
    // orders nothing between them); it is published as measured, not asserted here.
    // The namespaces went with the run.
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&netns.stdout).contains("ilcap"),
        "namespaces left behind"
    );

    let (output, out) = run_cap(&[
        "--two-hosts",
        "--journal",
        &url,
        "--nemesis",
        "all",
        "--trials",
        "2",
        "--no-site",
    ]);
    assert!(output.status.success(), "{output:?}");
    let bytes =
        verify::input::read_file(&out.path().join("nemesis/shared_cap_two_hosts.json.gz")).unwrap();
    let verify::load::Document::SharedCapNemesis(file) =
        verify::load::load_document(&bytes).unwrap()
    else {
        panic!("not a shared_cap nemesis file")
    };
    assert_eq!(file.environment.hosts, Some(2));
    for t in file.trials.iter().filter(|t| t.cell.column == "interlock") {
        assert!(
            t.cell.harness_error.is_none() && t.cell.invariant_held,
            "{}",
            t.id
        );
    }
}
