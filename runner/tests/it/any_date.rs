//! A run does not depend on the day it is made. The default matrix and one replayed nemesis
//! trial run under libfaketime with the wall clock moved into a 28-, 29-, 30- and 31-day month
//! and across a year end, and every cell (and the trial) must give the same outcome, judgement,
//! want, ground-truth amounts and test-clock times as the run on the real date.
//!
//! Needs `faketime` (Debian package `faketime`, installed by `.ci/run`); without it the test
//! says it was skipped — and fails when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};
use verify::results::{Cell, GroundTruth};

/// Wall-clock instants to run at (RFC 3339) and why each is there.
const DATES: [(&str, &str); 5] = [
    ("2027-02-10T09:00:00Z", "a 28-day month"),
    ("2028-02-10T09:00:00Z", "a 29-day month"),
    ("2027-04-10T09:00:00Z", "a 30-day month"),
    ("2027-01-10T09:00:00Z", "a 31-day month"),
    // Seconds before midnight: the run itself crosses into the new year.
    ("2027-12-31T23:59:55Z", "across a year end"),
];

/// A trial whose outage is the proration, killed at a named step, so its replay is exact. (The
/// downgrade happens at its period's first instant, so the proration's fraction is exactly one
/// and no amount depends on the period's length; the times do.)
const TRIAL: &str = "kill_at_step:interlock:00000000000004";

/// `faketime`'s path; `None` (the test says it was skipped) when it is missing outside CI.
fn faketime() -> Option<&'static str> {
    let found = Command::new("faketime")
        .args(["-f", "+0", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "faketime is not installed under CI (.ci/run installs the Debian package)"
        );
        eprintln!("skipped: faketime is not installed (apt-get install -y faketime)");
        return None;
    }
    Some("faketime")
}

fn unix(rfc3339: &str) -> i64 {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .unwrap()
        .unix_timestamp()
}

/// `runner ARGS`, with the wall clock moved to `date` when given (every child process the
/// runner starts inherits the same offset; the monotonic clock is left alone).
fn runner(date: Option<&str>, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_runner");
    let mut cmd = match date {
        None => Command::new(exe),
        Some(d) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            let mut c = Command::new("faketime");
            c.args(["-f", &format!("{:+}", unix(d) - now), exe]);
            c.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            c
        }
    };
    let out = cmd
        .args(args)
        .env_remove("INTERLOCK_EMULATOR_RATE_LIMIT")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "runner {args:?} at {date:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What Stripe held, without ids, with every time as seconds after the clock's start.
fn truth(g: &GroundTruth, start: i64) -> String {
    let mut parts = vec![format!(
        "balance {} case {} cents {} others {} incident {}",
        g.customer_balance,
        g.case_credit_count,
        g.case_credit_cents,
        g.compensation_by_others,
        g.incident_compensation
    )];
    for c in &g.case_credits {
        parts.push(format!("credit {} +{}", c.amount, c.created - start));
    }
    for i in &g.invoices {
        parts.push(format!(
            "invoice {:?} {:?} {} {} {} +{}",
            i.billing_reason,
            i.status,
            i.total,
            i.starting_balance,
            i.amount_due,
            i.created - start
        ));
    }
    for t in &g.balance_transactions {
        parts.push(format!(
            "txn {} {} +{}",
            t.kind,
            t.amount,
            t.created - start
        ));
    }
    for n in &g.credit_notes {
        parts.push(format!(
            "note {} {} +{}",
            n.amount,
            n.status,
            n.created - start
        ));
    }
    parts.join("; ")
}

/// One line per cell: what must not depend on the date.
fn cell_line(c: &Cell, start: i64) -> String {
    format!(
        "{}/{}/{}#{}: outcome {} via {:?} held {} answer {} proof {} want {:?} | {}",
        c.crash,
        c.outage,
        c.column,
        c.repeat,
        c.outcome,
        c.via,
        c.invariant_held,
        c.answer_matches,
        c.proof,
        c.want,
        truth(&c.ground_truth, start)
    )
}

/// The default matrix at `date`: one line per cell, and the file's `generated` time.
fn matrix(date: Option<&str>, out: &Path) -> (Vec<String>, String) {
    let file = run_matrix(date, out, &[]);
    let start = file
        .environment
        .clock_start
        .expect("the run records its clock start");
    assert_eq!(
        start,
        verify::scenarios::billing_credit::DEFAULT_CLOCK_START
    );
    let lines = file.cells.iter().map(|c| cell_line(c, start)).collect();
    (lines, file.generated)
}

/// `runner --scenario billing_credit EXTRA` at `date`, its results file.
fn run_matrix(date: Option<&str>, out: &Path, extra: &[&str]) -> verify::results::ResultsFile {
    let dir = out.to_str().unwrap();
    let mut args = vec![
        "--scenario",
        "billing_credit",
        "--no-site",
        "--jobs",
        "2",
        "--out",
        dir,
    ];
    args.extend_from_slice(extra);
    runner(date, &args);
    let bytes = std::fs::read(out.join("billing_credit.json")).unwrap();
    verify::load::load_results(&bytes).unwrap()
}

/// The judgement and the amounts of a cell, without times.
fn amounts_line(c: &Cell) -> String {
    let g = &c.ground_truth;
    let invoices: Vec<String> = g
        .invoices
        .iter()
        .map(|i| {
            format!(
                "{:?} {} {} {}",
                i.billing_reason, i.total, i.starting_balance, i.amount_due
            )
        })
        .collect();
    let txns: Vec<String> = g
        .balance_transactions
        .iter()
        .map(|t| format!("{} {}", t.kind, t.amount))
        .collect();
    format!(
        "{}/{}/{}: {} {:?} {} {} {} | {} {} {:?} {:?}",
        c.crash,
        c.outage,
        c.column,
        c.outcome,
        c.want,
        c.invariant_held,
        c.answer_matches,
        c.proof,
        g.customer_balance,
        g.case_credit_cents,
        invoices,
        txns
    )
}

#[test]
fn a_clock_started_in_february_bills_a_28_day_period_with_the_same_outcomes_and_amounts() {
    let base = tempfile::tempdir().unwrap();
    let default = run_matrix(None, &base.path().join("default"), &[]);
    let feb = "2027-02-10T09:00:00Z";
    let short = run_matrix(None, &base.path().join("feb"), &["--clock-start", feb]);
    assert_eq!(short.environment.clock_start, Some(unix(feb)));
    let a: Vec<String> = default.cells.iter().map(amounts_line).collect();
    let b: Vec<String> = short.cells.iter().map(amounts_line).collect();
    assert_eq!(a, b);
    // The renewal is 28 days after the start, where the default's is 30.
    let renewal = |f: &verify::results::ResultsFile| {
        let start = f.environment.clock_start.unwrap();
        f.cells[0]
            .ground_truth
            .invoices
            .iter()
            .find(|i| i.billing_reason.as_deref() == Some("subscription_cycle"))
            .map(|i| i.created - start)
            .unwrap()
    };
    assert_eq!(renewal(&short), 28 * 86_400);
    assert_eq!(renewal(&default), 30 * 86_400);
    // Compared by billing period, the emulator still matches real Stripe cell for cell.
    let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/reference/billing_credit.original.json");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reference).unwrap()).unwrap();
    let comparison = site::conformance::compare(&short, &original).unwrap();
    assert_eq!(comparison.identical(), 18, "{:#?}", comparison.cells);
}

/// The replayed trial's judgement and ground truth (its kill timings left out).
fn replay(date: Option<&str>) -> Vec<String> {
    let out = runner(date, &["--replay", TRIAL]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let verdict = lines.next().unwrap_or_default();
    let verdict = verdict
        .find("outcome ")
        .map(|i| verdict[i..].to_owned())
        .unwrap_or_else(|| panic!("no outcome in {text}"));
    let truth = lines
        .find(|l| l.starts_with("ground truth: "))
        .unwrap_or_else(|| panic!("no ground truth in {text}"))
        .to_owned();
    vec![verdict, truth]
}

#[test]
#[ignore = "needs faketime (apt-get install -y faketime); run with --include-ignored"]
fn the_matrix_and_a_replayed_trial_are_the_same_on_any_date() {
    if faketime().is_none() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let (expected, _) = matrix(None, &base.path().join("today"));
    assert_eq!(expected.len(), 18);
    let expected_trial = replay(None);
    assert!(
        expected_trial[1].contains("case credits [-1000"),
        "{expected_trial:?}"
    );
    for (i, (date, why)) in DATES.iter().enumerate() {
        let (lines, generated) = matrix(Some(date), &base.path().join(format!("d{i}")));
        // The run really saw the moved clock: it finished within minutes of the date.
        let at = unix(&generated) - unix(date);
        assert!(
            (0..600).contains(&at),
            "{why}: the run made at {date} says it was generated at {generated}"
        );
        for (want, got) in expected.iter().zip(&lines) {
            assert_eq!(got, want, "{why} ({date})");
        }
        assert_eq!(lines.len(), expected.len(), "{why}");
        assert_eq!(
            replay(Some(date)),
            expected_trial,
            "{why} ({date}): {TRIAL}"
        );
    }
}
