//! The pages: askama templates (in the workspace's `templates/`) filled from the report views
//! ([`crate::report_view`]), and the files written beside them.

use crate::error::SiteError;
use crate::prose::{RowsProse, Section};
use crate::report_view::{Report, CANDIDATES};
use askama::Template;

/// Version of this crate, shown in page footers.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The stylesheet, written as `style.css` at the root of the site.
pub const STYLESHEET: &str = include_str!("../../templates/style.css");

/// The site-wide header of a scenario's pages: a link to each page kind of the scenario, the
/// current one marked, and the breadcrumb from the front page to this page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nav {
    /// Relative path from the page to the scenario's folder (`""` or `"../"`).
    pub up: String,
    /// The scenario.
    pub scenario: String,
    /// Whether the Nemesis page exists.
    pub nemesis: bool,
    /// Whether the page comparing the emulator with real Stripe exists.
    pub emulator_vs_stripe: bool,
    /// Which page kind this is: `report`, `ids`, `nemesis`, `emulator-vs-stripe`, or another.
    pub current: &'static str,
    /// The breadcrumb between "Reports" and this page: (href, text).
    pub crumbs: Vec<(String, String)>,
    /// This page, as the breadcrumb's last item.
    pub here: String,
    /// What the run behind this page ran against and who decided, in words.
    pub ran: String,
}

impl Nav {
    /// The header of a page of `r`'s scenario, `up` the path from the page to the scenario's
    /// folder; the breadcrumb runs Reports › scenario › `crumbs` › `here` (the scenario itself
    /// is left out on its report page).
    pub fn new(
        r: &Report,
        up: &str,
        current: &'static str,
        crumbs: Vec<(String, String)>,
        here: String,
    ) -> Nav {
        let mut all = Vec::new();
        if current != "report" {
            all.push((format!("{up}index.html"), r.scenario.clone()));
        }
        all.extend(crumbs);
        Nav {
            up: up.to_owned(),
            scenario: r.scenario.clone(),
            nemesis: r.nemesis,
            emulator_vs_stripe: r.emulator_vs_stripe,
            current,
            crumbs: all,
            here,
            ran: r.ran.clone(),
        }
    }
}

/// The site's front page.
#[derive(Template)]
#[template(path = "index.html")]
pub struct IndexPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// Every scenario report.
    pub reports: Vec<&'a Report>,
    /// Every shared_cap report.
    pub caps: &'a [crate::shared_cap::IndexEntry],
    /// Every report of a scenario on the contract.
    pub contracts: &'a [crate::scenarios::IndexEntry],
    /// No scenario header on the front page.
    pub nav: Option<Nav>,
    /// The front page's opening: what was tested and found over every report.
    pub front: crate::opening::Front,
}

/// One line of the Rows section.
#[derive(Debug, Clone)]
pub struct RowLine {
    /// Crash point.
    pub crash: String,
    /// Outage.
    pub outage: String,
    /// Crash description (HTML from the prose).
    pub crash_html: String,
    /// Outage description (HTML from the prose).
    pub outage_html: String,
    /// Wanted credit counts of the row's cells, from the data.
    pub want: String,
}

/// A scenario's report page.
#[derive(Template)]
#[template(path = "report.html")]
pub struct ReportPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The report.
    pub r: &'a Report,
    /// The rendered verdict prose.
    pub verdict: &'a Section,
    /// The rendered setup prose.
    pub setup: &'a Section,
    /// The intro of the rows prose.
    pub rows_intro: &'a Section,
    /// One line per row.
    pub row_lines: Vec<RowLine>,
    /// The timing chart (inline SVG), in one or two panels.
    pub chart: &'a [crate::chart::Panel],
    /// Names of the premise candidates.
    pub candidates: &'a [&'a str],
    /// The scenario header.
    pub nav: Option<Nav>,
    /// The report's opening ([`crate::opening`]).
    pub o: &'a crate::opening::Opening,
}

/// A scenario's Ids page.
#[derive(Template)]
#[template(path = "ids.html")]
pub struct IdsPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The report.
    pub r: &'a Report,
    /// The scenario header.
    pub nav: Option<Nav>,
}

/// One receipt's page.
#[derive(Template)]
#[template(path = "receipt.html")]
pub struct ReceiptPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The receipt.
    pub rc: &'a crate::report_view::ReceiptView,
    /// The run's published signer key.
    pub signer: &'a str,
    /// Its fingerprint, as `verify` prints it.
    pub fingerprint: &'a str,
    /// Per-run key or the project's stable key, in words.
    pub signer_label: &'a str,
    /// File name of the results JSON under `data/`.
    pub json_name: &'a str,
    /// Command line verifying the bundle.
    pub verify_receipt: String,
    /// Command line verifying the whole results file.
    pub verify_results: String,
    /// How the signer key was checked: `pinned`, `self-attested` or `none` (unsigned format).
    pub key_check: &'a str,
    /// The scenario header.
    pub nav: Option<Nav>,
}

fn render(page: &str, t: &impl Template) -> Result<String, SiteError> {
    t.render().map_err(|source| SiteError::Template {
        page: page.to_owned(),
        source,
    })
}

/// Render the front page.
pub fn index(
    reports: &[Report],
    caps: &[crate::shared_cap::IndexEntry],
    contracts: &[crate::scenarios::IndexEntry],
) -> Result<String, SiteError> {
    render(
        "index.html",
        &IndexPage {
            root: "",
            version: VERSION,
            reports: reports.iter().collect(),
            caps,
            contracts,
            nav: None,
            front: crate::opening::front(
                &reports
                    .iter()
                    .map(|r| (r.scenario.as_str(), r.title.as_str(), &r.opening))
                    .chain(
                        caps.iter()
                            .map(|c| (c.scenario.as_str(), c.title.as_str(), &c.opening)),
                    )
                    .chain(
                        contracts
                            .iter()
                            .map(|c| (c.folder.as_str(), c.title.as_str(), &c.opening)),
                    )
                    .collect::<Vec<_>>(),
            ),
        },
    )
}

/// Render a scenario report.
pub fn report(
    r: &Report,
    verdict: &Section,
    setup: &Section,
    rows: &RowsProse,
    chart: &[crate::chart::Panel],
) -> Result<String, SiteError> {
    let row_lines = r
        .rows
        .iter()
        .map(|row| {
            let wants = &row.wants;
            RowLine {
                crash: row.crash.clone(),
                outage: row.outage.clone(),
                crash_html: rows.crash.get(&row.crash).cloned().unwrap_or_default(),
                outage_html: rows.outage.get(&row.outage).cloned().unwrap_or_default(),
                want: if wants.is_empty() {
                    "no judged cell, so no".to_owned()
                } else {
                    wants
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(" or ")
                },
            }
        })
        .collect();
    render(
        &format!("{}/index.html", r.scenario),
        &ReportPage {
            root: "../",
            version: VERSION,
            r,
            verdict,
            setup,
            rows_intro: &rows.intro,
            row_lines,
            chart,
            candidates: &CANDIDATES,
            o: &r.opening,
            nav: Some(Nav::new(
                r,
                "",
                "report",
                vec![],
                format!("{} report", r.scenario),
            )),
        },
    )
}

/// Render a scenario's Ids page.
pub fn ids(r: &Report) -> Result<String, SiteError> {
    render(
        &format!("{}/ids.html", r.scenario),
        &IdsPage {
            root: "../",
            version: VERSION,
            r,
            nav: Some(Nav::new(r, "", "ids", vec![], "Ids and receipts".into())),
        },
    )
}

/// Render one receipt page.
pub fn receipt(r: &Report, rc: &crate::report_view::ReceiptView) -> Result<String, SiteError> {
    render(
        &format!("{}/receipts/{}", r.scenario, rc.page),
        &ReceiptPage {
            root: "../../",
            version: VERSION,
            rc,
            signer: &r.env.signer,
            fingerprint: &r.env.signer_fingerprint,
            signer_label: &r.env.signer_label,
            json_name: &r.json_name,
            verify_receipt: format!("verify {}", rc.json),
            verify_results: format!("verify --key KEY_FROM_THE_PUBLISHER {}", r.json_name),
            key_check: &rc.summary.key_check,
            nav: Some(Nav::new(
                r,
                "../",
                "receipt",
                vec![
                    ("../ids.html#receipts".into(), "Ids and receipts".into()),
                    (format!("../ids.html#{}", rc.cell_anchor), rc.cell.clone()),
                ],
                format!("Receipt {}", rc.effect_id),
            )),
        },
    )
}
