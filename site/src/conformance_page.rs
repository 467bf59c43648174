//! The page "The emulator against real Stripe": a scenario's emulator run beside what real
//! Stripe test mode held for the same cells in the original implementation's published results.
//!
//! The original file sits beside the results as `reference/<scenario>.original.json`. It is
//! re-verified (its receipts, by the `verify` crate's original-format check) before anything
//! from it is shown; a scenario without one gets no page.
//!
//! The original format carries no signatures, so `verify --key` refuses it: under a pinned key
//! ([`Reference::Withheld`]) the page is not rendered, not linked, and the file not published,
//! since nothing in it is vouched for by that key.

use crate::conformance::{compare, Comparison};
use crate::error::SiteError;
use crate::pages::VERSION;
use crate::report_view::Report;
use crate::verification::{load_verified, Accepted, Wanted};
use askama::Template;
use serde_json::Value;
use std::path::{Path, PathBuf};
use verify::results::ResultsFile;

/// File name of the page, beside the scenario's report.
pub const PAGE: &str = "emulator-vs-stripe.html";

/// The page.
#[derive(Template)]
#[template(path = "emulator_vs_stripe.html")]
pub struct EmulatorVsStripePage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The emulator run's report.
    pub r: &'a Report,
    /// The comparison, cell by cell.
    pub comparison: &'a Comparison,
    /// Cells identical on both sides.
    pub identical: usize,
    /// Cells compared.
    pub cells: usize,
    /// `generated` of the original file.
    pub stripe_generated: String,
    /// The original file's name under `reference/`.
    pub reference_name: String,
    /// The emulator run's recorded clock start (RFC 3339), if it recorded one.
    pub clock_start: Option<String>,
    /// The scenario header.
    pub nav: Option<crate::pages::Nav>,
}

/// Where a results file's reference run on real Stripe would be.
pub fn reference_path(results_file: &Path, scenario: &str) -> PathBuf {
    results_file
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("reference")
        .join(format!("{scenario}.original.json"))
}

/// What a build does with a scenario's reference run, by the build's key policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// No reference run beside the results file: no page.
    Absent,
    /// A reference run exists, but the build pins a key and the reference is unsigned: no page,
    /// no link, the file not published (`verify --key` refuses it too).
    Withheld(PathBuf),
    /// A reference run exists and the build is self-attested: the page is rendered from it once
    /// it verifies.
    Shown(PathBuf),
}

impl Reference {
    /// The reference run of `results_file`'s scenario and what the build does with it; `pinned`
    /// when the build pins a signer key.
    pub fn of(results_file: &Path, scenario: &str, pinned: bool) -> Reference {
        let path = reference_path(results_file, scenario);
        match (path.is_file(), pinned) {
            (false, _) => Reference::Absent,
            (true, true) => Reference::Withheld(path),
            (true, false) => Reference::Shown(path),
        }
    }

    /// Why a withheld reference is not shown, naming it; `None` unless withheld.
    pub fn withheld_note(&self) -> Option<String> {
        match self {
            Reference::Withheld(path) => Some(format!(
                "{}: not shown: the original Python format carries no signatures, so nothing in \
                 it is signed by the pinned key (verify --key refuses it for the same reason)",
                path.display()
            )),
            _ => None,
        }
    }
}

/// A rendered page and the reference file it shows, to publish beside the results JSON.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The page's HTML.
    pub html: String,
    /// File name of the reference under `data/`.
    pub reference_name: String,
    /// The reference file, as read.
    pub reference_bytes: Vec<u8>,
}

/// The page for one scenario, when its reference run is to be shown ([`Reference::Shown`]).
pub fn render(
    reference: &Reference,
    file: &ResultsFile,
    report: &Report,
) -> Result<Option<Rendered>, SiteError> {
    let Reference::Shown(path) = reference else {
        return Ok(None);
    };
    let path = path.clone();
    // A self-attested build: the reference is checked as `verify` checks it without a key.
    let key = crate::verification::key_check(None);
    let (accepted, reference_bytes) = load_verified(&path, Wanted::Reference, &key)?;
    let Accepted::Reference(original) = accepted else {
        return Err(SiteError::Unverified {
            path,
            problem: "not a results file of the original implementation".into(),
        });
    };
    let data_err = |problem: String| SiteError::Data {
        path: path.clone(),
        problem,
    };
    let comparison = compare(file, &original).map_err(|e| data_err(e.to_string()))?;
    let page = EmulatorVsStripePage {
        root: "../",
        version: VERSION,
        r: report,
        identical: comparison.identical(),
        cells: comparison.cells.len(),
        comparison: &comparison,
        stripe_generated: original
            .get("generated")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        reference_name: format!("{}.original.json", file.scenario),
        clock_start: file
            .environment
            .clock_start
            .map(|s| crate::report_view::clock_start_label(Some(s))),
        nav: Some(crate::pages::Nav::new(
            report,
            "",
            "emulator-vs-stripe",
            vec![],
            "The emulator against real Stripe".into(),
        )),
    };
    let html = page.render().map_err(|source| SiteError::Template {
        page: format!("{}/{PAGE}", file.scenario),
        source,
    })?;
    Ok(Some(Rendered {
        html,
        reference_name: page.reference_name,
        reference_bytes,
    }))
}
