//! The Nemesis page: a scenario's randomized trials (`results/nemesis/<scenario>.json`), one table
//! row per nemesis × column, where the kills landed, and one page (with its timeline and replay
//! command) per trial that is not a plain pass: a violation, a wrong answer, an unresolved
//! restart or AMBIGUOUS.
//!
//! The file is re-verified (plan completeness, every judgement, every summary, its signature)
//! before anything from it is shown; a scenario without one gets no page.

use crate::error::SiteError;
use crate::pages::VERSION;
use crate::prose::Section;
use crate::verification::{load_verified, Accepted, Wanted};
use askama::Template;
use std::path::{Path, PathBuf};
use verify::figures::nemesis::{Listed, NemesisFigures};
use verify::nemesis::{NemesisFile, NemesisSummary, Trial};

mod facts;
mod tables;

pub use facts::facts;
use tables::{heat_rows, kill_histogram_rows, kill_rows, table_rows, timeline_rows};
pub use tables::{HeatCell, HeatRow, KillRow, Row, TimelineRow};

/// File name of the page, beside the scenario's report.
pub const PAGE: &str = "nemesis.html";
/// Folder of the per-nemesis pages, beside the scenario's report.
pub const NEMESES_DIR: &str = "nemesis";
/// Folder of the trial pages, beside the scenario's report.
pub const TRIALS_DIR: &str = "trials";

/// The page.
#[derive(Template)]
#[template(path = "nemesis.html")]
pub struct NemesisPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The file.
    pub f: &'a NemesisFile,
    /// Trials in the file, as `verify` counted them.
    pub trials: u32,
    /// The rows, in plan order.
    pub rows: Vec<Row<'a>>,
    /// The heat map, one row per nemesis.
    pub heat: Vec<HeatRow>,
    /// The run in one sentence.
    pub headline: &'a str,
    /// The scenario header.
    pub nav: Option<crate::pages::Nav>,
    /// Where the decide worker's timed and step kills landed, per column.
    pub kills: Vec<KillRow>,
    /// The run's signer fingerprint.
    pub fingerprint: String,
    /// A merged file's shard signers' fingerprints, in slice order, as verify checked them.
    pub shard_signers: Vec<String>,
    /// Per-run key or the project's stable key, in words.
    pub signer_label: &'a str,
    /// The `gh attestation verify` command for the published nemesis file.
    pub attest_command: String,
    /// Name of the JSON under `data/`.
    pub json_name: String,
    /// The page's prose (`nemesis.md`), numbers and claims checked against the file.
    pub prose: Section,
}

/// One nemesis's page: its rows, where its kills landed, its settle times, its trials.
#[derive(Template)]
#[template(path = "nemesis_one.html")]
pub struct OneNemesisPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The nemesis.
    pub nemesis: &'a str,
    /// Its rows (one per column), in plan order.
    pub rows: Vec<&'a Row<'a>>,
    /// The kill histogram (SVG), when its trials had kills.
    pub kills_svg: Option<String>,
    /// The settle-time chart (SVG).
    pub settle_svg: String,
    /// Per-run key or the project's stable key, in words.
    pub signer_label: &'a str,
    /// The scenario header.
    pub nav: Option<crate::pages::Nav>,
}

/// A trial's page (every trial that is not a plain pass).
#[derive(Template)]
#[template(path = "trial.html")]
pub struct TrialPage<'a> {
    /// Relative path to the site root.
    pub root: &'a str,
    /// Crate version.
    pub version: &'a str,
    /// The trial.
    pub t: &'a Trial,
    /// Its credits as `id: cents at created`.
    pub credits: Vec<String>,
    /// Its timeline.
    pub timeline: Vec<TimelineRow>,
    /// What the trial is: violation, wrong answer, unresolved or AMBIGUOUS.
    pub kind: &'static str,
    /// The run's settings a replay must repeat (`--clock-start`, `--outage-ms`), as arguments.
    pub replay_args: String,
    /// Per-run key or the project's stable key, in words.
    pub signer_label: &'a str,
    /// The timeline as a chart (SVG).
    pub timeline_svg: String,
    /// The receipt, re-derived at build time (interlock trials).
    pub receipt: Option<crate::verification::ReceiptCheck>,
    /// The scenario header.
    pub nav: Option<crate::pages::Nav>,
}

/// The rendered page, its trial pages and the JSON to publish.
pub struct Rendered {
    /// The page's HTML.
    pub html: String,
    /// (file name, HTML) of each trial that is not a plain pass.
    pub trials: Vec<(String, String)>,
    /// (file name, HTML) of each nemesis's page.
    pub nemeses: Vec<(String, String)>,
    /// File name under `data/`.
    pub json_name: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The run in one sentence ([`crate::overview::nemesis_line`]).
    pub headline: String,
    /// What the report's opening needs of the campaign: the figures `verify` derived.
    pub campaign: crate::opening::results::Campaign,
    /// The public key (hex) the campaign is signed with.
    pub signer: String,
}

/// A scenario's nemesis file, compressed (`nemesis/<scenario>.json.gz`) or plain, if there is
/// one; both at once is an error naming them
/// ([`crate::verification::campaign_file`]).
pub fn nemesis_path(results_dir: &Path, scenario: &str) -> Result<Option<PathBuf>, SiteError> {
    crate::verification::campaign_file(&results_dir.join("nemesis"), scenario)
}

/// A trial page's file name (ids hold `:`, which some file systems refuse).
pub fn trial_file(id: &str) -> String {
    format!("{}.html", id.replace(':', "-"))
}

/// What a trial is when it is not a plain pass (judged trials only), in words
/// ([`verify::figures::nemesis::listed`] decides).
pub fn listed_kind(t: &Trial) -> Option<&'static str> {
    verify::figures::nemesis::listed(t).map(kind_words)
}

/// A kind of listed trial in words.
pub(crate) fn kind_words(kind: Listed) -> &'static str {
    match kind {
        Listed::NotFired => "fault never fired",
        Listed::Violation => "violation",
        Listed::UnderCredit => "under-credit",
        Listed::Unresolved => "unresolved",
        Listed::Ambiguous => "AMBIGUOUS",
        Listed::WrongAnswer => "wrong answer",
    }
}

/// A bound over `n` trials, as a percentage with two decimals rounded up, or `n/a` when there
/// were none.
pub fn bound(ppm: u32, n: u32) -> String {
    if n == 0 {
        "n/a".into()
    } else {
        percent(ppm)
    }
}

/// A bound in ppm as a percentage with two decimals, rounded up (it is an upper bound).
fn percent(ppm: u32) -> String {
    let hundredths = ppm.div_ceil(100);
    format!("{}.{:02}%", hundredths / 100, hundredths % 100)
}

/// What every page of a campaign shares: the file as verify accepted it, where its pages
/// hang, how its signer reads, and the key its receipts were checked against.
struct Campaign<'a> {
    /// Where the file was read from.
    path: &'a Path,
    /// The file, accepted by `verify`.
    file: &'a NemesisFile,
    /// The figures `verify` derived from it.
    figures: &'a NemesisFigures,
    /// The scenario's report (its header links).
    report: &'a crate::report_view::Report,
    /// What the nemesis run ran against, in one line (its own file's, not the matrix's).
    ran: String,
    /// Per-run key or the project's stable key, in words.
    signer_label: String,
    /// The key the build checks receipts against.
    key: verify::receipt::KeyCheck,
}

impl Campaign<'_> {
    /// The scenario header of one of the campaign's pages.
    fn nav(
        &self,
        current: &'static str,
        crumbs: Vec<(String, String)>,
        here: String,
        up: &str,
    ) -> Option<crate::pages::Nav> {
        let mut nav = crate::pages::Nav::new(self.report, up, current, crumbs, here);
        nav.ran = self.ran.clone();
        Some(nav)
    }
}

fn template_err(page: String) -> impl FnOnce(askama::Error) -> SiteError {
    move |source| SiteError::Template { page, source }
}

/// Reads, re-verifies and renders the nemesis file of `scenario`, if there is one: step 1
/// loads what `verify` accepts; steps 2–4 render the campaign's page, one page per nemesis and
/// one per trial that is not a plain pass.
pub fn render(
    results_dir: &Path,
    report: &crate::report_view::Report,
    pinned: Option<&ed25519_dalek::VerifyingKey>,
    prose: &(String, String),
    options: &crate::BuildOptions,
) -> Result<Option<Rendered>, SiteError> {
    let Some(path) = nemesis_path(results_dir, &report.scenario)? else {
        return Ok(None);
    };
    let key = crate::verification::key_check(pinned);
    let (accepted, bytes) = load_verified(&path, Wanted::Nemesis, &key)?;
    let Accepted::Nemesis {
        file,
        report: checked,
        figures,
    } = accepted
    else {
        return Err(SiteError::Unreadable {
            path,
            problem: "not a nemesis results file".into(),
        });
    };
    let policy = crate::provenance::KeyPolicy::of(pinned.is_some());
    let campaign = Campaign {
        path: &path,
        file: &file,
        figures: &figures,
        report,
        ran: options.built_from.after(
            crate::report_view::ran_line(&file.environment).map_err(|e| SiteError::Data {
                path: path.clone(),
                problem: e.to_string(),
            })?,
            file.environment.git_commit.as_ref(),
        ),
        signer_label: signer_label(results_dir, &file, policy),
        key,
    };
    let rows = table_rows(&file, &figures);
    let page_facts = facts(&file, &figures);
    let headline = crate::overview::nemesis_line(
        &file.plan.columns,
        &file.plan.nemeses,
        &page_facts,
        figures.judged(),
    );
    let prose = crate::prose::render(&prose.0, &prose.1, &page_facts)?;
    let kills = kill_rows(&file);
    let nemeses = nemesis_pages(&campaign, &rows, &kills)?;
    let json_name = crate::verification::data_name(&format!("{}.nemesis", report.scenario), &bytes);
    let page = NemesisPage {
        prose,
        root: "../",
        version: VERSION,
        f: &file,
        trials: figures.trials(),
        heat: heat_rows(&file, &rows),
        rows,
        headline: &headline,
        nav: campaign.nav("nemesis", vec![], "Nemesis".into(), ""),
        kills,
        fingerprint: fingerprint(&file.environment.signer),
        shard_signers: checked.merged_from.clone().unwrap_or_default(),
        signer_label: &campaign.signer_label,
        attest_command: crate::provenance::attest_command(
            &json_name,
            options.repository.as_deref(),
        ),
        json_name: json_name.clone(),
    };
    let html = page
        .render()
        .map_err(template_err(format!("{}/{PAGE}", report.scenario)))?;
    let trials = trial_pages(&campaign)?;
    Ok(Some(Rendered {
        html,
        trials,
        nemeses,
        json_name,
        bytes,
        headline,
        signer: file.environment.signer.clone(),
        campaign: crate::opening::results::Campaign {
            columns: file.plan.columns.clone(),
            max_in_flight_ms: file.environment.claim.max_in_flight_ms,
            figures: *figures,
        },
    }))
}

/// A signer's fingerprint as `verify` prints it, or `?` when the hex names no key.
fn fingerprint(signer: &str) -> String {
    verify::entry::decode_lower_hex::<32>(signer)
        .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
        .map_or_else(|| "?".to_owned(), |k| verify::fingerprint(&k))
}

/// The campaign's signer in words; a merge key vouches for the merge, not for trials its
/// shards' own keys signed, and the label says so when a shard's key is not listed.
fn signer_label(
    results_dir: &Path,
    file: &NemesisFile,
    policy: crate::provenance::KeyPolicy,
) -> String {
    let label = crate::provenance::signer_label(results_dir, &file.environment.signer, policy);
    let Some(m) = &file.plan.merged else {
        return label;
    };
    let unlisted = m
        .parts
        .iter()
        .filter(|p| !crate::provenance::is_listed(results_dir, &p.environment.signer))
        .count();
    if unlisted == 0 {
        return label;
    }
    format!(
        "{label}. That key merged the campaign; {unlisted} of its {} shards were \
         signed by keys not in results/{}, so it does not vouch for their trials",
        m.parts.len(),
        crate::provenance::SIGNERS_FILE
    )
}

/// Step 3: one page per nemesis, its rows, kill histogram and settle chart: (file name, HTML).
fn nemesis_pages(
    campaign: &Campaign<'_>,
    rows: &[Row<'_>],
    kills: &[KillRow],
) -> Result<Vec<(String, String)>, SiteError> {
    let file = campaign.file;
    let mut nemeses = Vec::new();
    for (i, n) in file.plan.nemeses.iter().enumerate() {
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(SiteError::Unverified {
                path: campaign.path.to_path_buf(),
                problem: format!("nemesis name {n:?} cannot be a file name"),
            });
        }
        let mine: Vec<&Row<'_>> = rows.iter().filter(|r| &r.s.nemesis == n).collect();
        let hist = kill_histogram_rows(n, kills);
        let summaries: Vec<&NemesisSummary> = mine.iter().map(|r| r.s).collect();
        let html = OneNemesisPage {
            root: "../../",
            version: VERSION,
            nemesis: n,
            kills_svg: (!hist.is_empty()).then(|| {
                crate::nemesis_figures::kill_histogram(
                    &format!("kills-{i}"),
                    &file.plan.columns,
                    &hist,
                )
            }),
            settle_svg: crate::nemesis_figures::settle_chart(&format!("settle-{i}"), &summaries),
            rows: mine,
            signer_label: &campaign.signer_label,
            nav: campaign.nav(
                "nemesis-one",
                vec![("../nemesis.html".into(), "Nemesis".into())],
                n.clone(),
                "../",
            ),
        }
        .render()
        .map_err(template_err(format!(
            "{}/{NEMESES_DIR}/{n}.html",
            campaign.report.scenario
        )))?;
        nemeses.push((format!("{n}.html"), html));
    }
    Ok(nemeses)
}

/// The run's settings a replay must repeat (`--clock-start`, `--outage-ms`, a recorded
/// `--exposure-span-ms`), as arguments.
fn replay_args(env: &verify::results::Environment, plan: &verify::nemesis::NemesisPlan) -> String {
    let mut args = String::new();
    if let Some(start) = env
        .clock_start
        .filter(|s| *s != verify::scenarios::billing_credit::DEFAULT_CLOCK_START)
    {
        args.push_str(&format!(
            " --clock-start {}",
            crate::report_view::clock_start_label(Some(start))
        ));
    }
    if let Some(ms) = env.outage_ms {
        args.push_str(&format!(" --outage-ms {ms}"));
    }
    if let Some(e) = &plan.exposure {
        args.push_str(&format!(" --exposure-span-ms {}", e.span_ms));
    }
    args
}

/// Step 4: one page per trial that is not a plain pass, with its timeline, replay command and
/// receipt as `verify` checks it: (file name, HTML).
fn trial_pages(campaign: &Campaign<'_>) -> Result<Vec<(String, String)>, SiteError> {
    let file = campaign.file;
    let replay_args = replay_args(&file.environment, &file.plan);
    let mut trials = Vec::new();
    for (t, kind) in campaign
        .figures
        .listed()
        .iter()
        .filter_map(|(i, k)| file.trials.get(*i).map(|t| (t, kind_words(*k))))
    {
        let credits = t
            .ground_truth
            .case_credits
            .iter()
            .map(|c| format!("{}: {} cents at {}", c.id, -c.amount, c.created))
            .collect();
        let name = trial_file(&t.id);
        let html = TrialPage {
            root: "../../",
            version: VERSION,
            t,
            credits,
            timeline: timeline_rows(t),
            kind,
            replay_args: replay_args.clone(),
            signer_label: &campaign.signer_label,
            timeline_svg: crate::nemesis_figures::trial_timeline(t),
            receipt: t.receipt.as_ref().map(|b| {
                crate::verification::receipt_check(b, &campaign.key, &file.environment.signer)
            }),
            nav: campaign.nav(
                "trial",
                vec![
                    ("../nemesis.html".into(), "Nemesis".into()),
                    (
                        format!("../{NEMESES_DIR}/{}.html", t.nemesis),
                        t.nemesis.clone(),
                    ),
                ],
                format!("Trial {}", t.id),
                "../",
            ),
        }
        .render()
        .map_err(template_err(format!(
            "{}/{TRIALS_DIR}/{name}",
            campaign.report.scenario
        )))?;
        trials.push((name, html));
    }
    Ok(trials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_file_names() {
        assert_eq!(percent(14_868), "1.49%");
        assert_eq!(percent(1_000_000), "100.00%");
        assert_eq!(percent(0), "0.00%");
        assert_eq!(percent(139_951), "14.00%");
        assert_eq!(
            trial_file("kill_random:interlock:0011223344aabb"),
            "kill_random-interlock-0011223344aabb.html"
        );
    }
}
