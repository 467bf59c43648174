//! Runs `sdk_probe.py` (the official stripe-python SDK) against the emulator
//! twice, pinning the crate's API version and with the SDK's own default
//! version (stripe-python 16.1.0 sends `2026-10-28.endive`), each time with
//! fault rules for a second API key so the probe also meets a saved 500, a 429
//! and a retry hint; and checks the `stripe-emulator` binary serves and
//! rate-limits. The probe is skipped, with a message saying so, when
//! `python3 -c "import stripe"` does not work (install with `pip install stripe`),
//! except when `CI` is set: there a missing SDK fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use stripe::emulator::{Emulator, EmulatorConfig, FaultAction, FaultRule};

/// The installed stripe-python version, or `None` (after saying why) when the
/// probe cannot run here.
fn sdk_version() -> Option<String> {
    let probe = Command::new("python3")
        .args(["-c", "import stripe; print(stripe.VERSION)"])
        .current_dir(std::env::temp_dir())
        .output();
    match probe {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        }
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "stripe-python is required in CI: run `python3 -m pip install stripe==16.1.0` first"
            );
            println!(
                "SKIPPED the SDK probe: `python3 -c \"import stripe\"` \
                 failed; install the SDK with `python3 -m pip install stripe` to run this probe"
            );
            eprintln!("SKIPPED: stripe-python is not installed");
            None
        }
    }
}

/// Runs the probe against a fresh emulator, pinning `version` or, with
/// `"default"`, letting the SDK send its own default version.
fn run_probe(version: &str) {
    let Some(sdk_version) = sdk_version() else {
        return;
    };
    let emulator = Emulator::start(EmulatorConfig::default()).expect("emulator starts");
    let fault_key = format!("sk_test_sdk_probe_faults_{}", std::process::id());
    let faults = emulator.faults();
    let rules = [
        (
            "POST",
            "/v1/customers",
            FaultAction::CommitThenError { status: 500 },
        ),
        (
            "POST",
            "/v1/products",
            FaultAction::RateLimit {
                retry_after_s: None,
            },
        ),
        ("GET", "/v1/prices", FaultAction::Retryable { status: 503 }),
    ]
    .map(|(method, path, action)| {
        faults.add(
            FaultRule::new(method, path, action)
                .for_key(&fault_key)
                .times(1),
        )
    });
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk_probe.py");
    let out = Command::new("python3")
        .args([script, &emulator.base_url(), version, &fault_key])
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("stripe-python {sdk_version}\n{stdout}");
    assert!(
        out.status.success(),
        "sdk probe failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"));
    for rule in rules {
        assert_eq!(faults.fired(rule), 1, "every fault met the SDK once");
    }
}

#[test]
#[ignore = "needs Python with stripe-python 16.1.0; run with --include-ignored"]
fn official_python_sdk_runs_the_scenario_calls() {
    run_probe(stripe::API_VERSION);
}

#[test]
#[ignore = "needs Python with stripe-python 16.1.0; run with --include-ignored"]
fn official_python_sdk_runs_the_scenario_calls_with_its_default_version() {
    run_probe("default");
}

#[test]
fn the_binary_serves_on_loopback_and_applies_its_rate_limit() {
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_stripe-emulator"))
            .args(["--port", "0", "--rate-limit", "1"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start stripe-emulator"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let client = stripe::Client::new(
        stripe::ClientConfig::new(&url, "sk_test_binary").with_retry(stripe::RetryPolicy::none()),
    )
    .unwrap();
    // One request per second, bursts of one: two at once meet the limit.
    let statuses: Vec<Option<u16>> = (0..2)
        .map(|_| {
            client
                .get("/v1/customers", &stripe::Params::new())
                .err()
                .and_then(|e| e.status())
        })
        .collect();
    assert_eq!(statuses, [None, Some(429)]);
}

/// Kills the emulator process when the test ends, even on a failed assertion.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
