//! The scenarios on the contract (`interlock-scenario/1`), one line each in [`REGISTRY`]: the
//! site finds a file's scenario here by the name the file states, has `verify` read and check
//! it ([`verify::contract::read_and_check`]), and maps the [`Verified`] value it gets to one
//! report page through the scenario's [`Views`]. Nothing here reads a file, checks or counts.

pub mod notify;
pub mod notify_nemesis;
pub mod pr_merge;
pub mod pr_merge_nemesis;

use crate::error::SiteError;
use crate::outcome_chart::{self, Outcome, OutcomeBar, OutcomeRow};
use crate::pages::VERSION;
use crate::provenance::KeyPolicy;
use askama::Template;
use std::marker::PhantomData;
use std::path::Path;
use verify::contract::{read_and_check, Refused, Scenario, Verified};
use verify::receipt::KeyCheck;

/// Every scenario on the contract the site renders.
pub static REGISTRY: &[&dyn ScenarioSite] = &[
    // One line per scenario on the contract.
    &Pages::<verify::scenarios::pr_merge::PrMerge>::NEW,
    &Pages::<verify::scenarios::pr_merge_nemesis::PrMergeNemesis>::NEW,
    &Pages::<verify::scenarios::notify::Notify>::NEW,
    &Pages::<verify::scenarios::notify_nemesis::NotifyNemesis>::NEW,
];

/// The registered scenario of this name.
pub fn registered(name: &str) -> Option<&'static dyn ScenarioSite> {
    REGISTRY.iter().copied().find(|s| s.name() == name)
}

/// A table a page shows: its caption, column headers and rows of cells, all text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// What the table shows.
    pub caption: String,
    /// The column headers.
    pub headers: Vec<String>,
    /// The rows; each row's first cell is its header.
    pub rows: Vec<Vec<String>>,
}

/// How a scenario's verified results become views: the figures are `verify`'s, the words are
/// the scenario's; a view only formats.
pub trait Views: Scenario + Sized {
    /// The report's title.
    const TITLE: &'static str;
    /// One sentence: what the scenario tests.
    const ABOUT: &'static str;
    /// The per-column table (from the derived summary).
    fn summary(v: &Verified<Self>) -> Table;
    /// Every cell, with its derived judgement.
    fn cells(v: &Verified<Self>) -> Table;
    /// What the figures show, in the scenario's words, one sentence or two each (built from the
    /// derived figures only). None by default.
    fn notes(_v: &Verified<Self>) -> Vec<String> {
        Vec::new()
    }
    /// What one bar of the outcomes figure counts (`cells`, `trials`).
    const UNIT: &'static str = "cells";
    /// Every judged cell's place in the outcomes figure: its fault (a crash point and outage, or
    /// a nemesis), its column and its outcome, from `verify`'s judgements. None by default (no
    /// figure).
    fn placed(_v: &Verified<Self>) -> Vec<Placed> {
        Vec::new()
    }
    /// The report's opening: what was tested and found, how to check it, the terms and the
    /// outcomes figure. By default [`crate::opening::stated`] of the scenario's `ABOUT` and
    /// notes, with the figure of [`Views::placed`] when it places any cell.
    fn opening(v: &Verified<Self>, json_name: &str) -> crate::opening::Opening {
        let columns = crate::opening::planned_columns(&v.file().params);
        let mut opening = crate::opening::stated(crate::opening::Stated {
            about: Self::ABOUT,
            notes: &Self::notes(v),
            environment: &v.file().environment,
            columns: &columns,
            json_name,
        });
        let placed = Self::placed(v);
        if !placed.is_empty() {
            opening.figure = Some(outcome_chart::figure(
                Self::NAME,
                &format!(
                    "Outcomes per fault and column, {} {}",
                    placed.len(),
                    Self::UNIT
                ),
                Self::UNIT,
                &columns,
                &outcome_rows(&columns, placed),
            ));
        }
        opening
    }
}

/// One judged cell's place in the outcomes figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The fault it ran under (a row of the figure).
    pub fault: String,
    /// Its column (a bar of the row).
    pub column: String,
    /// What became of it.
    pub outcome: Outcome,
}

impl Placed {
    /// A cell of a campaign: apart when its fault never fired, else held or violated, within
    /// or beyond its column's assumptions.
    pub fn trial(fault: &str, column: &str, fired: bool, beyond: bool, held: bool) -> Placed {
        let outcome = match (fired, beyond, held) {
            (false, _, _) => Outcome::Apart,
            (true, false, true) => Outcome::Held,
            (true, false, false) => Outcome::Violated,
            (true, true, true) => Outcome::BeyondHeld,
            (true, true, false) => Outcome::BeyondViolated,
        };
        Placed {
            fault: fault.to_owned(),
            column: column.to_owned(),
            outcome,
        }
    }
}

/// The figure's rows, one per fault in the order the cells first name it, each with a bar per
/// column of `columns` (its outcomes in [`Outcome::ALL`]'s order).
fn outcome_rows(columns: &[String], placed: Vec<Placed>) -> Vec<OutcomeRow> {
    let mut faults: Vec<String> = Vec::new();
    let mut counts: std::collections::HashMap<(String, String, usize), u32> =
        std::collections::HashMap::new();
    for p in placed {
        if !faults.contains(&p.fault) {
            faults.push(p.fault.clone());
        }
        let at = Outcome::ALL
            .iter()
            .position(|o| *o == p.outcome)
            .unwrap_or(0);
        *counts.entry((p.fault, p.column, at)).or_default() += 1;
    }
    faults
        .into_iter()
        .map(|fault| OutcomeRow {
            bars: columns
                .iter()
                .map(|column| OutcomeBar {
                    column: column.clone(),
                    parts: Outcome::ALL
                        .iter()
                        .enumerate()
                        .filter_map(|(at, o)| {
                            let n = counts.get(&(fault.clone(), column.clone(), at))?;
                            Some((*o, *n))
                        })
                        .collect(),
                })
                .collect(),
            fault,
        })
        .collect()
}

/// A scenario the site renders, without its types.
pub trait ScenarioSite: Sync {
    /// The scenario's name.
    fn name(&self) -> &'static str;
    /// Has `verify` read and check the file's text under `key`, then renders its report;
    /// refuses, naming the first problems, a file that does not pass.
    /// `built_from`: the site's commit, which the page compares with the run's.
    fn render(
        &self,
        path: &Path,
        text: &[u8],
        key: &KeyCheck,
        built_from: &crate::built_from::BuiltFrom,
    ) -> Result<Rendered, SiteError>;
}

/// A registry line: `&Pages::<MyScenario>::NEW`.
pub struct Pages<S>(PhantomData<fn() -> S>);

impl<S> Pages<S> {
    /// The line's value.
    pub const NEW: Pages<S> = Pages(PhantomData);
}

/// One scenario run rendered, before it is written.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The folder of its pages (the file's stem, e.g. `pr_merge`).
    pub folder: String,
    /// The report page.
    pub html: String,
    /// The file's name under `data/`.
    pub json_name: String,
    /// The file's bytes, published under `data/`.
    pub bytes: Vec<u8>,
    /// Its entry on the front page.
    pub index: IndexEntry,
}

/// A scenario run's entry on the front page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The report's title.
    pub title: String,
    /// The folder of its pages.
    pub folder: String,
    /// What the scenario tests.
    pub about: String,
    /// Cells and judged cells, as words.
    pub counts: String,
    /// Who signed the run and how that was checked, as words.
    pub signed_by: String,
    /// The per-column table.
    pub summary: Table,
    /// The verdict: the scenario's first note, when it has notes.
    pub verdict: Option<String>,
    /// What the run ran against and when its data was made, as words (the service, the
    /// decider, the data's commit beside the site's).
    pub ran: String,
    /// The report's opening.
    pub opening: crate::opening::Opening,
}

/// The report page of a scenario on the contract.
#[derive(Template)]
#[template(path = "scenario.html")]
struct ReportPage<'a> {
    root: &'a str,
    version: &'a str,
    nav: Option<crate::pages::Nav>,
    title: &'a str,
    counts: &'a str,
    summary: &'a Table,
    notes: Vec<String>,
    cells: &'a Table,
    environment: Vec<(String, String)>,
    generated_at: &'a str,
    signer: &'a str,
    key: KeyPolicy,
    json_name: &'a str,
    o: &'a crate::opening::Opening,
}

impl<S: Views> ScenarioSite for Pages<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn render(
        &self,
        path: &Path,
        text: &[u8],
        key: &KeyCheck,
        built_from: &crate::built_from::BuiltFrom,
    ) -> Result<Rendered, SiteError> {
        let verified = read_and_check::<S>(text, key).map_err(|refused| match refused {
            Refused::Unreadable(e) => SiteError::Unreadable {
                path: path.to_path_buf(),
                problem: e.to_string(),
            },
            Refused::Unverified(report) => SiteError::Unverified {
                path: path.to_path_buf(),
                problem: first_findings(&report.findings),
            },
        })?;
        let folder = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| S::NAME.to_owned());
        let json_name = format!("{folder}.json");
        let report = verified.report();
        let counts = format!(
            "{} cells, {} judged, {} receipts verified",
            report.cells, report.judged, report.receipts
        );
        let summary = S::summary(&verified);
        let notes = S::notes(&verified);
        let cells = S::cells(&verified);
        let opening = S::opening(&verified, &json_name);
        let file = verified.file();
        let (environment, ran) = environment_and_ran(&file.environment, built_from);
        let policy = KeyPolicy::of(matches!(key, KeyCheck::Pinned(_)));
        let signed_by = format!(
            "signer {} ({}{})",
            report.fingerprint.as_deref().unwrap_or_default(),
            policy.key_note(),
            policy
                .advice()
                .map(|a| format!("; {a}"))
                .unwrap_or_default()
        );
        let page = ReportPage {
            root: "../",
            version: VERSION,
            nav: None,
            title: S::TITLE,
            counts: &counts,
            summary: &summary,
            notes: notes.clone(),
            cells: &cells,
            environment,
            generated_at: &file.generated_at,
            signer: report.signer.as_deref().unwrap_or_default(),
            key: policy,
            json_name: &json_name,
            o: &opening,
        };
        let html = page.render().map_err(|source| SiteError::Template {
            page: format!("{folder}/index.html"),
            source,
        })?;
        Ok(Rendered {
            index: IndexEntry {
                title: S::TITLE.to_owned(),
                folder: folder.clone(),
                about: S::ABOUT.to_owned(),
                counts,
                signed_by,
                summary,
                verdict: notes.first().cloned(),
                ran,
                opening,
            },
            folder,
            html,
            json_name,
            bytes: text.to_vec(),
        })
    }
}

/// The report's environment rows (the file's, and how its data's commit stands to the site's)
/// and the front page's line on what the run ran against.
fn environment_and_ran(
    env: &std::collections::BTreeMap<String, String>,
    built_from: &crate::built_from::BuiltFrom,
) -> (Vec<(String, String)>, String) {
    let mut environment: Vec<(String, String)> = env.clone().into_iter().collect();
    let data_commit = env.get("git_commit").map(String::as_str);
    environment.push(("data and site".into(), built_from.words(data_commit)));
    let said = |k: &str| env.get(k).map_or("not stated", String::as_str);
    let ran = format!(
        "Service: {}. Decider: {}. {}",
        said("backend_detail"),
        said("decider"),
        built_from.words(data_commit)
    );
    (environment, ran)
}

/// The first findings of a refused file, for the error.
fn first_findings(findings: &[verify::finding::Finding]) -> String {
    let shown: Vec<String> = findings.iter().take(3).map(ToString::to_string).collect();
    if findings.len() > shown.len() {
        format!(
            "{} (and {} more)",
            shown.join("; "),
            findings.len() - shown.len()
        )
    } else {
        shown.join("; ")
    }
}
