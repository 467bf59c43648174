//! Checks of the site built from the committed results (`results/`, its nemesis run and its
//! reference run included), by real tools:
//!
//! - the W3C Nu HTML checker (`vnu-jar` from npm, run with `java`): 0 errors on every page that
//!   is not a trial page, and on the first trial page of every nemesis, column and kind;
//! - headless Chromium through `tests/browser/check.mjs` (playwright-core driving the system
//!   Chromium), one page of every kind at 1280 px and 390 px: loads from `file://` with no
//!   script, no console error, no failed request, no sideways scrolling of the page; axe-core
//!   finds no serious or critical violation; the report shows its Verdict above the matrix, the
//!   Nemesis table fits 1280 px, every trial page has its timeline. Screenshots go to
//!   `target/site-browser-check-<kind>-<width>.png`.
//!
//! Needs `java`, `node`, `/usr/bin/chromium` (or `$CHROMIUM`) and `npm ci` run in
//! `site/tests/browser`. When one is missing a test prints that it was skipped and passes, unless
//! `CI` is set: then it fails, saying what to install.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

fn results_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

/// Copies `from` into `to`, folders included.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// The committed results, with the shared_cap fixtures the committed results lack: a campaign
/// of the one-host run (for its Nemesis page) and a two-host run.
fn results_with_shared_cap_pages(to: &Path) {
    copy_tree(&results_dir(), to);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shared_cap");
    for (from, into) in [
        ("nemesis/shared_cap.json", "nemesis/shared_cap.json"),
        ("shared_cap_two_hosts.json", "shared_cap_two_hosts.json"),
    ] {
        // The committed campaigns are stored compressed (`<name>.json.gz`); either form counts.
        let packed = to.join(format!("{into}.gz"));
        if !to.join(into).exists() && !packed.exists() {
            std::fs::copy(fixtures.join(from), to.join(into)).unwrap();
        }
    }
}

fn skip_or_fail(why: Option<String>, what: &str) -> bool {
    let Some(why) = why else { return false };
    if std::env::var_os("CI").is_some() {
        panic!("{what} cannot run in CI: {why}");
    }
    eprintln!("{what} skipped: {why}");
    true
}

fn missing_npm_package(name: &str) -> Option<String> {
    let dir = browser_dir();
    (!dir
        .join("node_modules")
        .join(name)
        .join("package.json")
        .is_file())
    .then(|| format!("{name} not installed (cd {} && npm ci)", dir.display()))
}

fn missing_browser() -> Option<String> {
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
    missing_npm_package("playwright-core").or_else(|| missing_npm_package("axe-core"))
}

fn missing_vnu() -> Option<String> {
    if Command::new("java").arg("-version").output().is_err() {
        return Some("java not found (apt-get install -y openjdk-17-jre-headless)".into());
    }
    missing_npm_package("vnu-jar")
}

/// The site built once from the committed results, and the pages to check: (kind, path).
struct Built {
    dir: tempfile::TempDir,
    /// One page of every kind, for the browser.
    kinds: Vec<(String, String)>,
    /// Every page that is not a trial page, and the first trial page of every nemesis, column
    /// and kind, for the HTML checker.
    validate: Vec<PathBuf>,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let results = tempfile::tempdir().unwrap();
        results_with_shared_cap_pages(results.path());
        let report = site::build(results.path(), dir.path()).expect("the committed results build");
        let out = dir.path();
        let rel = |p: &Path| p.strip_prefix(out).unwrap().to_string_lossy().into_owned();
        let campaign = results_dir().join("nemesis/billing_credit.json.gz");
        let nemesis =
            verify::load::load_nemesis(&verify::input::read_file(&campaign).unwrap()).unwrap();
        let mut validate: Vec<PathBuf> = report
            .pages
            .iter()
            .filter(|p| !p.to_string_lossy().contains("/trials/"))
            .cloned()
            .collect();
        let mut kinds: Vec<(String, String)> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for t in &nemesis.trials {
            let Some(kind) = site::nemesis_page::listed_kind(t) else {
                continue;
            };
            let page = out
                .join("billing_credit/trials")
                .join(site::nemesis_page::trial_file(&t.id));
            if seen.insert((t.nemesis.clone(), t.column.clone(), kind)) {
                validate.push(page.clone());
            }
            let kind = format!("trial-{}", kind.to_lowercase().replace(' ', "-"));
            if !kinds.iter().any(|(k, _)| *k == kind) {
                kinds.push((kind, rel(&page)));
            }
        }
        let first = |under: &str| {
            report
                .pages
                .iter()
                .find(|p| rel(p).starts_with(under))
                .map(|p| rel(p))
                .unwrap_or_else(|| panic!("no page under {under}"))
        };
        let mut pages: Vec<(String, String)> = vec![
            ("index".into(), "index.html".into()),
            ("report".into(), "billing_credit/index.html".into()),
            ("ids".into(), "billing_credit/ids.html".into()),
            (
                "emulator-vs-stripe".into(),
                "billing_credit/emulator-vs-stripe.html".into(),
            ),
            ("nemesis".into(), "billing_credit/nemesis.html".into()),
            ("nemesis-one".into(), first("billing_credit/nemesis/")),
            ("receipt".into(), first("billing_credit/receipts/")),
            ("cap-report".into(), "shared_cap/index.html".into()),
            ("cap-nemesis".into(), "shared_cap/nemesis.html".into()),
            (
                "cap-report-two-hosts".into(),
                "shared_cap_two_hosts/index.html".into(),
            ),
            ("cap-receipt".into(), first("shared_cap/receipts/")),
        ];
        pages.extend(kinds);
        Built {
            dir,
            kinds: pages,
            validate,
        }
    })
}

#[test]
#[ignore = "needs java and `npm ci` in site/tests/browser (vnu-jar); run with --include-ignored"]
fn every_page_kind_passes_the_nu_html_checker() {
    if skip_or_fail(missing_vnu(), "HTML check") {
        return;
    }
    let b = built();
    let jar = browser_dir().join("node_modules/vnu-jar/build/dist/vnu.jar");
    let output = Command::new("java")
        .arg("-jar")
        .arg(&jar)
        .arg("--errors-only")
        .args(&b.validate)
        .output()
        .expect("run java");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "the Nu HTML checker found errors ({}):\n{stderr}",
        output.status
    );
    eprintln!(
        "Nu HTML checker: 0 errors on {} pages of {} kinds",
        b.validate.len(),
        b.kinds.len()
    );
}

#[test]
#[ignore = "needs Chromium, node and `npm ci` in site/tests/browser; run with --include-ignored"]
fn every_page_kind_loads_in_headless_chromium_and_passes_axe() {
    if skip_or_fail(missing_browser(), "browser check") {
        return;
    }
    let b = built();
    let file: verify::results::ResultsFile =
        serde_json::from_slice(&std::fs::read(results_dir().join("billing_credit.json")).unwrap())
            .unwrap();
    let rows: Vec<String> = file
        .rows
        .iter()
        .map(|r| format!("{} / {}", r.crash, r.outage))
        .collect();
    let spec = serde_json::json!({
        "pages": b.kinds.iter().map(|(k, p)| serde_json::json!({"kind": k, "path": p})).collect::<Vec<_>>(),
        "rows": rows,
        "columns": file.columns,
        "indexLinks": [
            "billing_credit/index.html",
            "billing_credit/nemesis.html",
            "billing_credit/emulator-vs-stripe.html",
            "billing_credit/ids.html",
            "billing_credit/ids.html#receipts",
        ],
    });
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| manifest.join("../target"), PathBuf::from);
    std::fs::create_dir_all(&target).unwrap();
    let prefix = target.join("site-browser-check");
    let output = Command::new("node")
        .current_dir(browser_dir())
        .arg("check.mjs")
        .arg(b.dir.path())
        .arg(spec.to_string())
        .arg(&prefix)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "browser check failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    for (kind, _) in &b.kinds {
        for width in [1280, 390] {
            let shot = target.join(format!("site-browser-check-{kind}-{width}.png"));
            assert!(shot.is_file(), "no screenshot at {}", shot.display());
        }
    }
    eprintln!("{stdout}");
}
