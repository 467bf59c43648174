//! Browser check: build the report from the fixture, load it from disk (file://) in headless
//! Chromium through `tests/browser/check.mjs` (playwright-core driving the system Chromium),
//! assert the main table's rows and columns and that no console error happened, and save a
//! screenshot to `target/site-browser-check.png`.
//!
//! Needs `node`, `/usr/bin/chromium` (or `$CHROMIUM`) and `npm ci` run in `site/tests/browser`.
//! When one is missing the test prints that it was skipped and passes, unless `CI` is set: then it
//! fails, saying what to install.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn missing_prerequisite(browser_dir: &Path) -> Option<String> {
    let chromium = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if !chromium.is_file() {
        return Some(format!(
            "{} not found (apt-get install -y chromium)",
            chromium.display()
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node not found (apt-get install -y nodejs npm)".into());
    }
    if !browser_dir
        .join("node_modules/playwright-core/package.json")
        .is_file()
    {
        return Some(format!(
            "playwright-core not installed (cd {} && npm ci)",
            browser_dir.display()
        ));
    }
    None
}

#[test]
#[ignore = "needs Chromium, node and `npm ci` in site/tests/browser; run with --include-ignored"]
fn the_report_loads_in_headless_chromium() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let browser_dir = manifest.join("tests/browser");
    if let Some(why) = missing_prerequisite(&browser_dir) {
        if std::env::var_os("CI").is_some() {
            panic!("browser check cannot run in CI: {why}");
        }
        eprintln!("browser check skipped: {why}");
        return;
    }
    let (out, _) = support::build_fixture_site();
    let file: verify::results::ResultsFile = serde_json::from_slice(
        &std::fs::read(support::fixture_dir().join("billing_credit.json")).unwrap(),
    )
    .unwrap();
    let rows: Vec<String> = file
        .rows
        .iter()
        .map(|r| format!("{} / {}", r.crash, r.outage))
        .collect();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| manifest.join("../target"), PathBuf::from);
    std::fs::create_dir_all(&target).unwrap();
    let screenshot = target.join("site-browser-check.png");
    let output = Command::new("node")
        .current_dir(&browser_dir)
        .arg("check.mjs")
        .arg(out.path())
        .arg(serde_json::to_string(&rows).unwrap())
        .arg(serde_json::to_string(&file.columns).unwrap())
        .arg(&screenshot)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "browser check failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        screenshot.is_file(),
        "no screenshot at {}",
        screenshot.display()
    );
    eprintln!("{stdout}");
}
