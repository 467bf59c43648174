//! Runs `sdk_probe.py` (the official stripe-python SDK) against the
//! `stripe-emulator` binary. Skipped, with a message saying so, when
//! `python3 -c "import stripe"` does not work (install with `pip install stripe`), except when `CI`
//! is set: there a missing SDK fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn official_python_sdk_runs_the_scenario_calls() {
    let probe = Command::new("python3")
        .args(["-c", "import stripe; print(stripe.VERSION)"])
        .output();
    let sdk_version = match probe {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "stripe-python is required in CI: run `python3 -m pip install stripe==16.1.0` first"
            );
            println!(
                "SKIPPED official_python_sdk_runs_the_scenario_calls: `python3 -c \"import stripe\"` \
                 failed; install the SDK with `python3 -m pip install stripe` to run this probe"
            );
            eprintln!("SKIPPED: stripe-python is not installed");
            return;
        }
    };
    let mut emulator = Child(
        Command::new(env!("CARGO_BIN_EXE_stripe-emulator"))
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start stripe-emulator"),
    );
    let stdout = emulator.0.stdout.take().unwrap();
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk_probe.py");
    let out = Command::new("python3")
        .args([script, &url, stripe::API_VERSION])
        .output()
        .expect("run python3");
    drop(emulator);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("stripe-python {sdk_version}\n{stdout}");
    assert!(
        out.status.success(),
        "sdk probe failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all checks passed"));
}

/// Kills the emulator process when the test ends, even on a failed assertion.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
