//! Renders verified Interlock results files into a static report site.
//!
//! [`build`] reads every `*.json` results file in a directory, verifies each one with the
//! `verify` crate's checker (refusing, with the problem named, any file that fails), and writes
//! plain HTML pages, one stylesheet, the results JSON and its JSON Schema. The pages need no
//! JavaScript and use only relative links, so they work from `file://` and under any sub-path.
//!
//! Prose (Verdict, Setup, Rows) comes from Markdown under `scenarios/<scenario>/`; numbers enter
//! it only through placeholders filled from the data, and claims in it are checked against the
//! data ([`prose`], [`placeholders`], [`claims`]).

pub mod built_from;
pub mod cap_nemesis;
pub mod chart;
pub mod claims;
pub mod conformance;
pub mod conformance_page;
pub mod error;
pub mod facts;
pub mod format;
pub mod nemesis_figures;
pub mod nemesis_page;
pub mod opening;
pub mod outcome_chart;
pub mod overview;
pub mod pages;
pub mod placeholders;
pub mod prose;
pub mod provenance;
pub mod report_view;
pub mod scenarios;
pub mod shared_cap;
pub mod verification;

mod output;
mod staging;

pub use error::SiteError;
pub use prose::ProseSource;

use output::{mkdir, write, write_contract, write_scenario, write_shared_cap};
use verification::{Accepted, Wanted};

use std::path::{Path, PathBuf};

/// What a build wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildReport {
    /// The site's front page (`<out>/index.html`).
    pub index: PathBuf,
    /// Every HTML page written, the front page included.
    pub pages: Vec<PathBuf>,
    /// Files beside the results that were not shown under the build's key policy, each with
    /// why (an unsigned reference run under a pinned key).
    pub withheld: Vec<String>,
}

/// Options of a build.
#[derive(Debug)]
pub struct BuildOptions {
    /// Where the scenario prose comes from.
    pub prose: ProseSource,
    /// Pin the signer key (32 bytes) every receipt must be signed by; without it each file is
    /// checked against the key it publishes (self-attested).
    pub pinned_key: Option<[u8; 32]>,
    /// The GitHub repository (`owner/name`) named in each report's `gh attestation verify`
    /// command; `None` shows [`provenance::UNKNOWN_REPOSITORY`].
    pub repository: Option<String>,
    /// The commit the site is built from: every page says how its data's commit stands to it.
    pub built_from: built_from::BuiltFrom,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            prose: ProseSource::Embedded,
            pinned_key: None,
            repository: None,
            built_from: built_from::BuiltFrom::default(),
        }
    }
}

/// Build the site from every results file in `results_dir` into `out_dir`, with the prose
/// compiled into this crate.
pub fn build(results_dir: &Path, out_dir: &Path) -> Result<BuildReport, SiteError> {
    build_with(results_dir, out_dir, &BuildOptions::default())
}

/// One rendered scenario, before it is written.
struct Rendered {
    report: report_view::Report,
    bytes: Vec<u8>,
    report_html: String,
    ids_html: String,
    receipts: Vec<(String, String, String)>,
    facts: facts::Facts,
    emulator_vs_stripe: Option<conformance_page::Rendered>,
    nemesis: Option<nemesis_page::Rendered>,
    /// Why a file beside this one was not shown, if one was not.
    withheld: Option<String>,
}

/// Whether a build may write into `out_dir` (a new or empty folder, or a site an earlier build
/// wrote: a build replaces the whole folder); checked before a long run that ends in a build.
pub fn check_out_dir(out_dir: &Path) -> Result<(), SiteError> {
    staging::accepted(out_dir).map(|_| ())
}

/// [`check_out_dir`], and the results folder (the runner's `--out`) not inside the output
/// folder, which a build replaces whole.
pub fn check_folders(out_dir: &Path, results_dir: &Path) -> Result<(), SiteError> {
    staging::results_apart(out_dir, results_dir)?;
    check_out_dir(out_dir)
}

/// Build with explicit options: every results file is read, verified and rendered before the
/// output directory is touched; then the pages and data are written.
pub fn build_with(
    results_dir: &Path,
    out_dir: &Path,
    options: &BuildOptions,
) -> Result<BuildReport, SiteError> {
    staging::results_apart(out_dir, results_dir)?;
    let pinned = match options.pinned_key {
        Some(bytes) => Some(
            ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(|e| SiteError::Data {
                path: results_dir.to_path_buf(),
                problem: format!("the pinned key is not a valid ed25519 public key: {e}"),
            })?,
        ),
        None => None,
    };
    let RenderedAll {
        rendered,
        caps,
        contracts,
    } = render_all(&results_files(results_dir)?, options, pinned.as_ref())?;
    one_folder_per_run(&caps)?;
    contracts_apart(&rendered, &caps, &contracts)?;
    // Everything rendered: only now write, into a fresh folder that replaces the output folder
    // once every page is in it.
    let staging = staging::Staging::begin(out_dir)?;
    let final_dir = staging.out_dir().to_path_buf();
    let out_dir = staging.root();
    let mut pages = Vec::new();
    mkdir(out_dir)?;
    let data = out_dir.join("data");
    mkdir(&data)?;
    write(&out_dir.join("style.css"), pages::STYLESHEET.as_bytes())?;
    let schema = serde_json::to_string_pretty(&verify::results::json_schema()).unwrap_or_default();
    write(&data.join("results.schema.json"), schema.as_bytes())?;
    for r in &rendered {
        pages.extend(write_scenario(out_dir, &data, r)?);
    }
    for c in &caps {
        pages.extend(write_shared_cap(out_dir, &data, c)?);
    }
    for c in &contracts {
        pages.push(write_contract(out_dir, &data, c)?);
    }
    let withheld = rendered.iter().filter_map(|r| r.withheld.clone()).collect();
    let reports: Vec<report_view::Report> = rendered.into_iter().map(|r| r.report).collect();
    let cap_entries: Vec<shared_cap::IndexEntry> = caps.into_iter().map(|c| c.index).collect();
    let index = out_dir.join("index.html");
    let contract_entries: Vec<scenarios::IndexEntry> =
        contracts.into_iter().map(|c| c.index).collect();
    write(
        &index,
        pages::index(&reports, &cap_entries, &contract_entries)?.as_bytes(),
    )?;
    pages.insert(0, index.clone());
    let built = staging.root().to_path_buf();
    staging.commit()?;
    let placed = |p: PathBuf| match p.strip_prefix(&built) {
        Ok(rel) => final_dir.join(rel),
        Err(_) => p,
    };
    Ok(BuildReport {
        index: placed(index),
        pages: pages.into_iter().map(placed).collect(),
        withheld,
    })
}

/// Every results file read, verified under the build's key and rendered: billing_credit's and
/// shared_cap's, apart.
fn render_all(
    files: &[PathBuf],
    options: &BuildOptions,
    pinned: Option<&ed25519_dalek::VerifyingKey>,
) -> Result<RenderedAll, SiteError> {
    let mut all = RenderedAll {
        rendered: Vec::new(),
        caps: Vec::new(),
        contracts: Vec::new(),
    };
    let key = verification::key_check(pinned);
    for path in files {
        let (accepted, bytes) = verification::load_verified(path, Wanted::Results, &key)?;
        match accepted {
            Accepted::Results(verified) => {
                all.rendered
                    .push(render_file(path, bytes, &verified, options, pinned)?);
            }
            Accepted::SharedCap {
                file,
                report,
                figures,
            } => {
                let checked = shared_cap::Checked {
                    path,
                    bytes,
                    file: &file,
                    report,
                    figures: &figures,
                };
                all.caps.push(shared_cap::render(checked, pinned, options)?);
            }
            Accepted::Contract(site) => {
                all.contracts
                    .push(site.render(path, &bytes, &key, &options.built_from)?);
            }
            // `load_verified` hands a results file over as one of the two above.
            _ => {
                return Err(SiteError::Unreadable {
                    path: path.clone(),
                    problem: "not a results file".into(),
                })
            }
        }
    }
    Ok(all)
}

/// Every results file rendered, by kind.
struct RenderedAll {
    rendered: Vec<Rendered>,
    caps: Vec<shared_cap::Rendered>,
    contracts: Vec<scenarios::Rendered>,
}

/// A run of a scenario on the contract writes `<stem>/index.html` and `data/<stem>.json`:
/// refused when that folder is another run's, or that data file's name one another run writes.
fn contracts_apart(
    rendered: &[Rendered],
    caps: &[shared_cap::Rendered],
    contracts: &[scenarios::Rendered],
) -> Result<(), SiteError> {
    let mut folders: Vec<String> = Vec::new();
    let mut data: Vec<String> = Vec::new();
    for r in rendered {
        folders.push(r.report.scenario.clone());
        data.push(r.report.json_name.clone());
        data.push(format!("{}.facts.json", r.report.scenario));
        data.extend(r.nemesis.iter().map(|n| n.json_name.clone()));
        data.extend(
            r.emulator_vs_stripe
                .iter()
                .map(|c| c.reference_name.clone()),
        );
    }
    for c in caps {
        folders.push(c.index.scenario.clone());
        data.push(c.index.json_name.clone());
        data.extend(c.nemesis.iter().map(|n| n.json_name.clone()));
    }
    for c in contracts {
        // A plain name: letters, digits, `_` and `-`, not starting with `-` (`.` or `..` would
        // put the report on the front page's place, `data` into the data folder).
        let plain = !c.folder.is_empty()
            && !c.folder.starts_with('-')
            && c.folder != "data"
            && c.folder
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !plain {
            return Err(SiteError::Data {
                path: PathBuf::from(&c.json_name),
                problem: format!(
                    "a results file's name must be letters, digits, '_' or '-' before .json \
                     (its pages go to a folder of that name), not {:?}; rename the file",
                    verify::display::shorten(&c.folder, 80)
                ),
            });
        }
        if folders.contains(&c.folder) || data.contains(&c.json_name) {
            return Err(SiteError::Data {
                path: PathBuf::from(&c.json_name),
                problem: format!(
                    "its page would go to {}/ and its data to data/{}, which another run's \
                     pages or data use; rename the file",
                    c.folder, c.json_name
                ),
            });
        }
        folders.push(c.folder.clone());
        data.push(c.json_name.clone());
    }
    Ok(())
}

/// The `*.json` results files of a directory, sorted (JSON Schema files excluded).
fn results_files(dir: &Path) -> Result<Vec<PathBuf>, SiteError> {
    let entries = std::fs::read_dir(dir).map_err(|e| SiteError::io("reading directory", dir, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| SiteError::io("reading directory", dir, e))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".json") && !name.ends_with(".schema.json") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(SiteError::NoResults(dir.to_path_buf()));
    }
    Ok(files)
}

/// Two shared_cap runs of one name would write one folder: refuse, naming both files.
fn one_folder_per_run(caps: &[shared_cap::Rendered]) -> Result<(), SiteError> {
    for (i, c) in caps.iter().enumerate() {
        if let Some(first) = caps[..i]
            .iter()
            .find(|o| o.index.scenario == c.index.scenario)
        {
            return Err(SiteError::Data {
                path: c.path.clone(),
                problem: format!(
                    "it is a {} run, and so is {}: both would be written to {}/; keep one of them in the results directory",
                    c.index.scenario,
                    first.path.display(),
                    c.index.scenario
                ),
            });
        }
    }
    Ok(())
}

fn render_file(
    path: &Path,
    bytes: Vec<u8>,
    verified: &verification::Verified,
    options: &BuildOptions,
    pinned: Option<&ed25519_dalek::VerifyingKey>,
) -> Result<Rendered, SiteError> {
    let data_err = |problem: String| SiteError::Data {
        path: path.to_path_buf(),
        problem,
    };
    let scenario = &verified.file().scenario;
    if scenario.is_empty()
        || !scenario
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(data_err(format!(
            "scenario name {scenario:?} cannot be a directory name"
        )));
    }
    let json_name = verification::data_name(scenario, &bytes);
    let mut report =
        report_view::build(verified, &json_name).map_err(|e| data_err(e.to_string()))?;
    let results_dir = path.parent().unwrap_or_else(|| Path::new("."));
    let data_commit = verified.file().environment.git_commit.as_ref();
    report.ran = options.built_from.after(report.ran, data_commit);
    report.env.key = provenance::KeyPolicy::of(pinned.is_some());
    report.env.signer_label =
        provenance::signer_label(results_dir, &report.env.signer, report.env.key);
    report.env.attest_command =
        provenance::attest_command(&json_name, options.repository.as_deref());
    // Every page's header links the scenario's other pages: know which exist before rendering.
    report.nemesis = nemesis_page::nemesis_path(results_dir, scenario)?.is_some();
    let reference = conformance_page::Reference::of(path, scenario, pinned.is_some());
    report.emulator_vs_stripe = matches!(reference, conformance_page::Reference::Shown(_));
    let emulator_vs_stripe = conformance_page::render(&reference, verified.file(), &report)?;
    report.emulator_vs_stripe = emulator_vs_stripe.is_some();
    let prose_files = prose::load(scenario, &options.prose)?;
    let nemesis =
        nemesis_page::render(results_dir, &report, pinned, &prose_files.nemesis, options)?;
    report.nemesis = nemesis.is_some();
    report.nemesis_line = nemesis.as_ref().map(|n| n.headline.clone());
    if let Some(n) = nemesis.as_ref().filter(|n| n.signer != report.env.signer) {
        // Two runs, two keys (each per-run key is its run's own): the verdict joins them, so the
        // page says so wherever it names this file's signer.
        report.env.signer_label = format!(
            "{}; the randomized campaign whose figures the verdict joins to it was {}: two \
             runs, two keys, tied only by their commit",
            report.env.signer_label,
            provenance::signer_label(results_dir, &n.signer, report.env.key).replacen(
                "for this run",
                "for that run",
                1
            )
        );
    }
    let facts = facts::compute(verified.file(), verified.figures(), &report);
    report.verdict_line = overview::verdict_line(&report.columns, &facts);
    report.opening =
        opening::results::opening(&report, &facts, nemesis.as_ref().map(|n| &n.campaign));
    let report_html = report_page(&report, verified.file(), &prose_files, &facts)?;
    let ids_html = pages::ids(&report)?;
    let mut receipts = Vec::new();
    for rc in &report.receipts {
        receipts.push((
            rc.effect_id.clone(),
            pages::receipt(&report, rc)?,
            rc.bundle_json.clone(),
        ));
    }
    Ok(Rendered {
        report,
        bytes,
        report_html,
        ids_html,
        receipts,
        facts,
        emulator_vs_stripe,
        nemesis,
        withheld: reference.withheld_note(),
    })
}

/// The report page, its prose (Verdict, Setup, Rows) filled from the facts.
fn report_page(
    report: &report_view::Report,
    file: &verify::results::ResultsFile,
    prose_files: &prose::ProseFiles,
    facts: &facts::Facts,
) -> Result<String, SiteError> {
    let verdict = prose::render(&prose_files.verdict.0, &prose_files.verdict.1, facts)?;
    let setup = prose::render(&prose_files.setup.0, &prose_files.setup.1, facts)?;
    let crashes: Vec<String> = file.rows.iter().map(|r| r.crash.clone()).collect();
    let outages: Vec<String> = file.rows.iter().map(|r| r.outage.clone()).collect();
    let rows = prose::render_rows(
        &prose_files.rows.0,
        &prose_files.rows.1,
        facts,
        &crashes,
        &outages,
    )?;
    let chart = chart::timing_panels(file);
    pages::report(report, &verdict, &setup, &rows, &chart)
}
