//! `runner reconcile` against the emulator that served the run: the runner binary runs two cells
//! with `--keep-emulator` (real workers, real SIGKILLs) and keeps its emulator serving; reconcile
//! (another process, with read-only keys) passes on the fresh run, then each change made at the
//! emulator — an anchor edited, a credit note voided, the case credit reversed, a credit added —
//! makes it exit 1 naming the cell and the object.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use stripe::{Client, ClientConfig, Params};
use verify::results::ResultsFile;

/// The runner process, SIGKILLed when the test ends (pass or fail).
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run the cells with `--keep-emulator`; returns the process, the emulator URL and run id.
fn run_and_keep(out: &Path) -> (Serving, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args([
            "--scenario",
            "billing_credit",
            "--no-site",
            "--keep-emulator",
        ])
        .args(["--seed", "13", "--jobs", "2", "--cells"])
        .args([
            "after_send:billing_credit:interlock",
            "after_send:renewal:no_check",
        ])
        .arg("--out")
        .arg(out)
        .env_remove("INTERLOCK_EMULATOR_RATE_LIMIT")
        .env_remove("INTERLOCK_SIGNING_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let serving = Serving(child);
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.split("--base-url ").nth(1) {
            let mut words = rest.split_whitespace();
            let url = words.next().unwrap().to_owned();
            let run = words.nth(1).unwrap().to_owned();
            return (serving, url, run);
        }
        seen.push(line);
    }
    panic!(
        "the runner ended without serving its emulator:\n{}",
        seen.join("\n")
    );
}

fn reconcile(file: &Path, url: &str, run: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("reconcile")
        .arg(file)
        .args(["--base-url", url, "--emulator-run", run])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// A writing client for cell `i`'s emulator account (the test plays someone changing Stripe).
fn writer(url: &str, run: &str, i: usize) -> Client {
    let key = format!("sk_test_interlock_{run}_cell{i:03}");
    Client::new(ClientConfig::new(url, key).with_timeout(Duration::from_secs(10))).unwrap()
}

#[test]
fn reconcile_passes_on_the_run_and_fails_on_each_change_at_the_emulator() {
    let dir = tempfile::tempdir().unwrap();
    let (_serving, url, run) = run_and_keep(dir.path());
    let path = dir.path().join("billing_credit.json");
    let file: ResultsFile = verify::load::load_results(&std::fs::read(&path).unwrap()).unwrap();
    let il = file
        .cells
        .iter()
        .position(|c| c.column == "interlock")
        .unwrap();
    let nc = file
        .cells
        .iter()
        .position(|c| c.column == "no_check")
        .unwrap();
    let cell = &file.cells[il];
    let credit = cell.ground_truth.case_credits[0].clone();
    let anchor = credit
        .dispatch
        .clone()
        .expect("the gate's credit carries its anchor");
    let note = cell.ground_truth.credit_notes[0].id.clone();
    let customer = cell.stripe_ids.customer.clone();
    let il_name = format!("cells[{il}] (after_send:billing_credit:interlock #0)");

    let (code, out) = reconcile(&path, &url, &run);
    assert_eq!(code, Some(0), "a fresh run reconciles: {out}");

    // An anchor edited at Stripe.
    let c = writer(&url, &run, il);
    let txn_path = format!(
        "/v1/customers/{customer}/balance_transactions/{}",
        credit.id
    );
    let set_anchor = |v: &str| {
        c.post(
            &txn_path,
            &Params::new().set("metadata[interlock_dispatch]", v),
            None,
        )
        .unwrap();
    };
    set_anchor(&"0f".repeat(32));
    let (code, out) = reconcile(&path, &url, &run);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "{il_name}: {}: metadata[interlock_dispatch]",
            credit.id
        )),
        "{out}"
    );
    set_anchor(&anchor);
    let (code, out) = reconcile(&path, &url, &run);
    assert_eq!(code, Some(0), "the anchor put back reconciles again: {out}");

    // Billing's credit note voided.
    c.post(
        &format!("/v1/credit_notes/{note}/void"),
        &Params::new(),
        None,
    )
    .unwrap();
    let (code, out) = reconcile(&path, &url, &run);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("{il_name}: {note}: credit note differs")),
        "{out}"
    );

    // The case credit reversed by a balance transaction that takes it back.
    let reversal = c
        .post(
            &format!("/v1/customers/{customer}/balance_transactions"),
            &Params::new()
                .set("amount", 1000)
                .set("currency", "usd")
                .set("description", "reverse the goodwill credit"),
            None,
        )
        .unwrap()
        .body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, out) = reconcile(&path, &url, &run);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "{il_name}: {reversal}: balance transaction at Stripe, not in the ground truth"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("{il_name}: {customer}: customer balance")),
        "{out}"
    );

    // A credit added to the other cell's customer.
    let nc_customer = file.cells[nc].stripe_ids.customer.clone();
    let added = writer(&url, &run, nc)
        .post(
            &format!("/v1/customers/{nc_customer}/balance_transactions"),
            &Params::new()
                .set("amount", -500)
                .set("currency", "usd")
                .set("metadata[case_id]", &file.cells[nc].case.case_id),
            None,
        )
        .unwrap()
        .body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, out) = reconcile(&path, &url, &run);
    assert_eq!(code, Some(1), "{out}");
    let nc_name = format!("cells[{nc}] (after_send:renewal:no_check #0)");
    assert!(
        out.contains(&format!(
            "{nc_name}: {added}: case credit at Stripe, not in the ground truth"
        )),
        "{out}"
    );
}

#[test]
fn reconcile_refuses_what_it_cannot_check() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{}").unwrap();
    let (code, out) = reconcile(&bad, "http://127.0.0.1:9", "x");
    assert_eq!(code, Some(2), "{out}");
    let help = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["reconcile", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--emulator-run") && help.contains("read-only"),
        "{help}"
    );
}
