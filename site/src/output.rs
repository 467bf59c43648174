//! Writing the built site: each scenario's pages, receipts and data into the output directory
//! (only receipt files of an earlier build are ever removed).

use crate::error::SiteError;
use crate::{cap_nemesis, conformance_page, nemesis_page, scenarios, shared_cap, Rendered};
use std::path::{Path, PathBuf};

/// Writes a scenario on the contract: its report page and its data; returns the page.
pub(crate) fn write_contract(
    out_dir: &Path,
    data: &Path,
    c: &scenarios::Rendered,
) -> Result<PathBuf, SiteError> {
    let dir = out_dir.join(&c.folder);
    mkdir(&dir)?;
    let page = dir.join("index.html");
    write(&page, c.html.as_bytes())?;
    write(&data.join(&c.json_name), &c.bytes)?;
    Ok(page)
}

/// Writes a billing_credit scenario's pages and data; returns the pages written.
pub(crate) fn write_scenario(
    out_dir: &Path,
    data: &Path,
    r: &Rendered,
) -> Result<Vec<PathBuf>, SiteError> {
    let mut pages = Vec::new();
    write(&data.join(&r.report.json_name), &r.bytes)?;
    let dir = out_dir.join(&r.report.scenario);
    let receipts_dir = dir.join("receipts");
    mkdir(&dir)?;
    mkdir(&receipts_dir)?;
    for (name, html) in [("index.html", &r.report_html), ("ids.html", &r.ids_html)] {
        let page = dir.join(name);
        write(&page, html.as_bytes())?;
        pages.push(page);
    }
    if let Some(c) = &r.emulator_vs_stripe {
        let page = dir.join(conformance_page::PAGE);
        write(&page, c.html.as_bytes())?;
        write(&data.join(&c.reference_name), &c.reference_bytes)?;
        pages.push(page);
    }
    if let Some(n) = &r.nemesis {
        pages.extend(write_nemesis(&dir, data, n)?);
    }
    for (name, html, json) in &r.receipts {
        let page = receipts_dir.join(format!("{name}.html"));
        write(&page, html.as_bytes())?;
        write(&receipts_dir.join(format!("{name}.json")), json.as_bytes())?;
        pages.push(page);
    }
    let facts: serde_json::Map<String, serde_json::Value> = r
        .facts
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.to_string())))
        .collect();
    let facts = serde_json::to_string_pretty(&facts).unwrap_or_default();
    write(
        &data.join(format!("{}.facts.json", r.report.scenario)),
        facts.as_bytes(),
    )?;
    Ok(pages)
}

/// Writes a billing_credit campaign's page, its trial and nemesis pages, and its data into the
/// scenario's folder `dir`; returns the pages written.
fn write_nemesis(
    dir: &Path,
    data: &Path,
    n: &nemesis_page::Rendered,
) -> Result<Vec<PathBuf>, SiteError> {
    let mut pages = Vec::new();
    let page = dir.join(nemesis_page::PAGE);
    write(&page, n.html.as_bytes())?;
    write(&data.join(&n.json_name), &n.bytes)?;
    pages.push(page);
    for (sub, files) in [
        (nemesis_page::TRIALS_DIR, &n.trials),
        (nemesis_page::NEMESES_DIR, &n.nemeses),
    ] {
        let folder = dir.join(sub);
        mkdir(&folder)?;
        for (name, html) in files {
            let page = folder.join(name);
            write(&page, html.as_bytes())?;
            pages.push(page);
        }
    }
    Ok(pages)
}

/// Writes a shared_cap run's pages and data; returns the pages written.
pub(crate) fn write_shared_cap(
    out_dir: &Path,
    data: &Path,
    c: &shared_cap::Rendered,
) -> Result<Vec<PathBuf>, SiteError> {
    let mut pages = Vec::new();
    write(&data.join(&c.index.json_name), &c.bytes)?;
    let dir = out_dir.join(&c.index.scenario);
    let receipts_dir = dir.join("receipts");
    mkdir(&receipts_dir)?;
    for (name, html) in [("index.html", &c.report_html), ("ids.html", &c.ids_html)] {
        let page = dir.join(name);
        write(&page, html.as_bytes())?;
        pages.push(page);
    }
    for (name, html, json) in &c.receipts {
        let page = receipts_dir.join(format!("{name}.html"));
        write(&page, html.as_bytes())?;
        write(&receipts_dir.join(format!("{name}.json")), json.as_bytes())?;
        if !pages.contains(&page) {
            pages.push(page);
        }
    }
    if let Some(n) = &c.nemesis {
        let page = dir.join(cap_nemesis::PAGE);
        write(&page, n.html.as_bytes())?;
        write(&data.join(&n.json_name), &n.bytes)?;
        pages.push(page);
    }
    Ok(pages)
}

/// Create a directory and its parents.
pub(crate) fn mkdir(path: &Path) -> Result<(), SiteError> {
    std::fs::create_dir_all(path).map_err(|e| SiteError::io("creating directory", path, e))
}

/// Write a file.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), SiteError> {
    std::fs::write(path, bytes).map_err(|e| SiteError::io("writing", path, e))
}
