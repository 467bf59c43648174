//! The shared_cap scenario's pages: its report, its ids page and one page per receipt, rendered
//! from a `interlock-shared-cap/1` file that `verify::shared_cap::check` accepted at build time,
//! and its Nemesis page when the run has a campaign ([`crate::cap_nemesis`]). Every figure on
//! them is the file's data or what that check derived (the summary); the site counts nothing
//! itself.
//!
//! A results directory may hold several shared_cap runs: each goes to the folder its
//! [`run_name`] names (`shared_cap/`, `shared_cap_two_hosts/`), with its prose from
//! `scenarios/<run name>/` (a file missing there is `shared_cap`'s).

mod facts;
mod opening;
mod receipts;

pub(crate) use receipts::{receipt_pages, NavFn, ReceiptsOf};

use crate::error::SiteError;
use crate::pages::{Nav, VERSION};
use crate::prose::{self, Section};
use crate::report_view::{backend_words, decider_words, ViewError};
use askama::Template;
use facts::{facts, verdict_line};
use std::path::Path;
use verify::figures::shared_cap::CapFigures;
use verify::receipt::KeyCheck;
use verify::shared_cap::check::CapReport;
use verify::shared_cap::record::{run_name, CapCell, CapEnvironment, CapResults, SCENARIO};
use verify::shared_cap::summary::{columns_of, ColumnSummary};

/// The scenario's title on every page of a one-host run.
pub const TITLE: &str = "shared_cap: two support bots, one order, one refund cap";
/// The title of a two-host run's pages.
pub const TITLE_TWO_HOSTS: &str =
    "shared_cap on two hosts: two support bots, one order, one refund cap";

/// The title of a run's pages, by its [`run_name`]: it says two hosts when the run had two.
pub fn title(name: &str) -> &'static str {
    if name == SCENARIO {
        TITLE
    } else {
        TITLE_TWO_HOSTS
    }
}

/// What the front page shows of the scenario.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// The run's name ([`run_name`]): its folder and its data file's stem.
    pub scenario: String,
    /// [`title`] of the run.
    pub title: String,
    /// The verdict in one sentence.
    pub verdict_line: String,
    /// What the run ran against.
    pub ran: String,
    /// The per-column summary, as verify derived it.
    pub summary: Vec<SummaryRow>,
    /// The results file's name under `data/`.
    pub json_name: String,
    /// The run's campaign in one sentence, when it has a Nemesis page.
    pub nemesis_line: Option<String>,
    /// The report's opening ([`crate::opening`]).
    pub opening: crate::opening::Opening,
}

/// One column's summary as verify derived it, with the figures the tables print beside it.
#[derive(Debug, Clone)]
pub struct SummaryRow {
    /// The summary.
    pub s: ColumnSummary,
    /// Cells judged (not harness errors): the denominator of the column's ratios.
    pub judged: u32,
    /// Judged cells whose kill of worker `a` landed (the fault fired).
    pub landed: u32,
    /// Of those, the cells whose cap held.
    pub held_landed: u32,
    /// Judged cells whose kill did not land (`a` ended before its point), counted apart.
    pub apart: u32,
    /// The row the column held least in, with the 95% interval over its repeats, in words.
    pub weakest: String,
}

/// Each column's [`SummaryRow`], in the summary's order, from the figures `verify` derived.
pub fn summary_rows(figures: &CapFigures) -> Vec<SummaryRow> {
    figures
        .columns()
        .iter()
        .map(|c| SummaryRow {
            s: c.summary().clone(),
            judged: c.judged(),
            landed: c.landed(),
            held_landed: c.held_landed(),
            apart: c.judged().saturating_sub(c.landed()),
            weakest: facts::weakest(c.weakest_row()).to_string(),
        })
        .collect()
}

/// Everything written for one shared_cap file.
pub struct Rendered {
    /// The front page's entry.
    pub index: IndexEntry,
    /// The results file's bytes (published under `data/`).
    pub bytes: Vec<u8>,
    /// `shared_cap/index.html`.
    pub report_html: String,
    /// `shared_cap/ids.html`.
    pub ids_html: String,
    /// Per receipt: file stem (the effect id), page, bundle JSON.
    pub receipts: Vec<(String, String, String)>,
    /// The Nemesis page, when `nemesis/<run name>.json` is beside the results file.
    pub nemesis: Option<crate::cap_nemesis::Rendered>,
    /// The results file, for errors naming it.
    pub path: std::path::PathBuf,
}

/// One row of the matrix on the report page.
struct RowView {
    crash: String,
    overlap: String,
    /// Per column, every repeat of the row, in file order.
    cells: Vec<Vec<CellView>>,
}

/// One cell as the report and ids pages show it.
struct CellView {
    anchor: String,
    label: String,
    repeat: u32,
    a_killed: bool,
    held: bool,
    refunded: String,
    refunds: usize,
    tickets: Vec<TicketView>,
    harness_error: Option<String>,
    cell: CapCell,
}

struct TicketView {
    name: String,
    id: String,
    status: String,
    first_exit: String,
    answer_matches: bool,
    proof: bool,
    effect_id: Option<String>,
    journal: String,
}

#[derive(Template)]
#[template(path = "cap_report.html")]
struct ReportPage<'a> {
    root: &'a str,
    version: &'a str,
    nav: Option<Nav>,
    title: &'a str,
    verdict_line: &'a str,
    summary: &'a [SummaryRow],
    verdict: &'a Section,
    setup: &'a Section,
    nemesis: Option<&'a str>,
    rows: &'a [RowView],
    columns: &'a [&'a str],
    file: &'a CapResults,
    json_name: &'a str,
    backend_label: String,
    /// How the signer key was checked.
    key: crate::provenance::KeyPolicy,
    /// The report's opening.
    o: &'a crate::opening::Opening,
}

#[derive(Template)]
#[template(path = "cap_ids.html")]
struct IdsPage<'a> {
    root: &'a str,
    version: &'a str,
    nav: Option<Nav>,
    name: &'a str,
    cells: &'a [CellView],
}

pub(crate) fn page(name: &str, t: &impl Template) -> Result<String, SiteError> {
    t.render().map_err(|source| SiteError::Template {
        page: name.to_owned(),
        source,
    })
}

fn anchor(c: &CapCell) -> String {
    format!("{}-{}-{}-{}", c.crash_point, c.overlap, c.column, c.repeat)
}

/// A cell as the pages show it; `refunds` is how many of its refunds count, as `verify` found.
fn cell_view(c: &CapCell, refunds: Option<u32>) -> CellView {
    let tickets = c
        .tickets
        .iter()
        .map(|t| TicketView {
            name: t.name.clone(),
            id: t.ticket_id.clone(),
            status: t.status.clone(),
            first_exit: t.first_exit.clone(),
            answer_matches: t.answer_matches,
            proof: t.proof,
            effect_id: t.receipt.as_ref().map(|r| r.effect_id.clone()),
            journal: t.journal_kinds.join(" "),
        })
        .collect();
    CellView {
        anchor: anchor(c),
        label: format!("{}:{}:{} #{}", c.crash_point, c.overlap, c.column, c.repeat),
        repeat: c.repeat,
        a_killed: c.a_killed(),
        held: c.invariant_held,
        refunded: crate::format::dollars(c.truth.refunded_cents()),
        refunds: refunds.map_or(0, |n| n as usize),
        tickets,
        harness_error: c.harness_error.clone(),
        cell: c.clone(),
    }
}

fn rows(file: &CapResults, figures: &CapFigures) -> Vec<RowView> {
    // Rows in the order the file's cells first name them.
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for c in &file.cells {
        let key = (c.crash_point.as_str(), c.overlap.as_str());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(crash, overlap)| RowView {
            crash: crash.to_owned(),
            overlap: overlap.to_owned(),
            cells: columns_of(&file.cells)
                .iter()
                .map(|col| {
                    file.cells
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| {
                            c.crash_point == crash && c.overlap == overlap && c.column == *col
                        })
                        .map(|(i, c)| cell_view(c, figures.refunds(i)))
                        .collect()
                })
                .collect(),
        })
        .collect()
}

/// A receipt's page as written: its file stem (the effect id), its HTML, its bundle JSON.
pub type ReceiptFiles = (String, String, String);

/// What a shared_cap run ran against and who decided, in words (every page's header), and on
/// how many hosts when it had two.
pub(crate) fn ran_line(env: &CapEnvironment) -> Result<String, ViewError> {
    let backend_label = backend_words(&env.backend)?;
    let mut ran = format!(
        "Ran against {backend_label}; decided by {}. Where a page says Stripe, it means that backend.",
        decider_words(&env.decider, None)
    );
    if env.hosts == Some(2) {
        ran.push_str(" Workers a and b ran on two hosts: network namespaces of one machine.");
    }
    Ok(ran)
}

/// A shared_cap results file that `verify` accepted ([`crate::verification::load_verified`]).
pub struct Checked<'a> {
    /// Where it was read from.
    pub path: &'a Path,
    /// Its bytes (published under `data/`).
    pub bytes: Vec<u8>,
    /// The file.
    pub file: &'a CapResults,
    /// What `verify` derived from it.
    pub report: CapReport,
    /// The figures `verify` derived from it.
    pub figures: &'a CapFigures,
}

/// The header of a run's pages: `nav(up, current, crumbs, here)`, the run's report first in
/// the breadcrumb of every other page.
fn run_nav<'a>(
    name: &'a str,
    has_nemesis: bool,
    ran: &'a str,
) -> impl Fn(&str, &'static str, Vec<(String, String)>, String) -> Option<Nav> + 'a {
    move |up, current, crumbs, here| {
        let mut all = Vec::new();
        if current != "report" {
            all.push((format!("{up}index.html"), name.to_owned()));
        }
        all.extend(crumbs);
        Some(Nav {
            up: up.to_owned(),
            scenario: name.to_owned(),
            nemesis: has_nemesis,
            emulator_vs_stripe: false,
            current,
            crumbs: all,
            here,
            ran: ran.to_owned(),
        })
    }
}

/// The run's ids page and one page per receipt of its cells (each checked by `verify` against
/// `key`): the ids page's HTML, and per receipt its file stem, page and bundle JSON.
fn ids_and_receipts(
    name: &str,
    file: &CapResults,
    figures: &CapFigures,
    key: &KeyCheck,
    json_name: &str,
    nav: &NavFn<'_>,
) -> Result<(String, Vec<ReceiptFiles>), SiteError> {
    let cells: Vec<CellView> = file
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| cell_view(c, figures.refunds(i)))
        .collect();
    let ids_html = page(
        &format!("{name}/ids.html"),
        &IdsPage {
            root: "../",
            version: VERSION,
            nav: nav("", "ids", Vec::new(), "Ids and receipts".into()),
            name,
            cells: &cells,
        },
    )?;
    let of: Vec<ReceiptsOf<'_>> = cells
        .iter()
        .map(|c| ReceiptsOf {
            cell: &c.cell,
            of: "cell",
            href: format!("../ids.html#{}", c.anchor),
            label: c.label.clone(),
            crumb: ("../ids.html".into(), "Ids and receipts".into()),
        })
        .collect();
    let receipts = receipt_pages(name, &of, &file.environment.public_key, key, json_name, nav)?;
    Ok((ids_html, receipts))
}

/// [`ran_line`] followed by where the run's data was made against the site's commit.
fn header_line(
    env: &CapEnvironment,
    built_from: &crate::built_from::BuiltFrom,
) -> Result<String, ViewError> {
    Ok(built_from.after(ran_line(env)?, env.git_commit.as_ref()))
}

/// Renders a shared_cap file `verify` accepted under the build's key (`pinned`, or the file's
/// own). Its Nemesis page is rendered too when `nemesis/<run name>.json.gz` (or `.json`) is
/// beside it.
pub fn render(
    checked: Checked<'_>,
    pinned: Option<&ed25519_dalek::VerifyingKey>,
    options: &crate::BuildOptions,
) -> Result<Rendered, SiteError> {
    let Checked {
        path,
        bytes,
        file,
        report: _,
        figures,
    } = checked;
    let key = crate::verification::key_check(pinned);
    let data_err = |problem: String| SiteError::Data {
        path: path.to_path_buf(),
        problem,
    };
    let name = run_name(&file.environment);
    let backend_label =
        backend_words(&file.environment.backend).map_err(|e| data_err(e.to_string()))?;
    let ran =
        header_line(&file.environment, &options.built_from).map_err(|e| data_err(e.to_string()))?;
    let json_name = crate::verification::data_name(name, &bytes);
    let summary = summary_rows(figures);
    let verdict_line = verdict_line(&summary);
    let facts = facts(file, figures);
    let files = prose::load(name, &options.prose)?;
    let verdict = prose::render(&files.verdict.0, &files.verdict.1, &facts)?;
    let setup = prose::render(&files.setup.0, &files.setup.1, &facts)?;
    let results_dir = path.parent().unwrap_or_else(|| Path::new("."));
    let has_nemesis = crate::cap_nemesis::nemesis_path(results_dir, name)?.is_some();
    let nav = run_nav(name, has_nemesis, &ran);
    let nemesis = crate::cap_nemesis::render(
        results_dir,
        name,
        pinned,
        &files.nemesis,
        &|up, current, crumbs, here| nav(up, current, crumbs, here),
        &options.built_from,
    )?;
    let rows = rows(file, figures);
    let columns: Vec<String> = columns_of(&file.cells)
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    let opening = opening::opening(&opening::Inputs {
        summary: &summary,
        rows: &rows,
        columns: &columns,
        campaign: nemesis.as_ref().map(|n| &n.figures),
        backend: &backend_label,
        hosts: file.environment.hosts,
        json_name: &json_name,
    });
    let report_html = page(
        &format!("{name}/index.html"),
        &ReportPage {
            root: "../",
            version: VERSION,
            nav: nav("", "report", Vec::new(), name.to_owned()),
            title: title(name),
            verdict_line: &verdict_line,
            summary: &summary,
            verdict: &verdict,
            setup: &setup,
            nemesis: nemesis.as_ref().map(|n| n.headline.as_str()),
            rows: &rows,
            columns: &columns_of(&file.cells),
            file,
            json_name: &json_name,
            backend_label,
            key: crate::provenance::KeyPolicy::of(pinned.is_some()),
            o: &opening,
        },
    )?;
    let (ids_html, mut receipts) = ids_and_receipts(name, file, figures, &key, &json_name, &nav)?;
    if let Some(n) = &nemesis {
        receipts.extend(n.receipts.iter().cloned());
    }
    Ok(Rendered {
        index: IndexEntry {
            scenario: name.to_owned(),
            title: title(name).to_owned(),
            verdict_line,
            ran: ran.clone(),
            summary,
            json_name,
            nemesis_line: nemesis
                .as_ref()
                .map(|n| format!("{} For the campaign: {}", n.headline, n.data_commit)),
            opening,
        },
        bytes,
        report_html,
        ids_html,
        receipts,
        nemesis,
        path: path.to_path_buf(),
    })
}
