//! The page "The emulator against real Stripe": a scenario's emulator run beside what real
//! Stripe test mode held for the same cells in the original implementation's published results.
//!
//! The original file sits beside the results as `reference/<scenario>.original.json`. It is
//! re-verified (its receipts, by the `verify` crate's original-format check) before anything
//! from it is shown; a scenario without one gets no page.

use crate::conformance::{compare, Comparison};
use crate::error::SiteError;
use crate::model::Report;
use crate::pages::VERSION;
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

/// Reads and re-verifies the reference run, if there is one: its JSON and its bytes.
pub fn load_reference(path: &Path) -> Result<Option<(Value, Vec<u8>)>, SiteError> {
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = std::fs::read(path).map_err(|e| SiteError::io("reading", path, e))?;
    let unverified = |problem: String| SiteError::Unverified {
        path: path.to_path_buf(),
        problem,
    };
    let value = match verify::load::load_document(&bytes) {
        Ok(verify::load::Document::OriginalResults(v)) => v,
        Ok(_) => {
            return Err(unverified(
                "not a results file of the original implementation".into(),
            ))
        }
        Err(e) => return Err(unverified(e.to_string())),
    };
    let report = verify::original::verify_original_results(&value);
    if let Some(first) = report.findings.first() {
        return Err(unverified(format!(
            "{}: {} ({})",
            first.path, first.message, first.code
        )));
    }
    Ok(Some((value, bytes)))
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

/// The page for one scenario, when a reference run exists beside its results file.
pub fn render(
    results_file: &Path,
    file: &ResultsFile,
    report: &Report,
) -> Result<Option<Rendered>, SiteError> {
    let path = reference_path(results_file, &file.scenario);
    let Some((original, reference_bytes)) = load_reference(&path)? else {
        return Ok(None);
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
            .map(|s| crate::model::clock_start_label(Some(s))),
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
