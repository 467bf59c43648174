//! A shared_cap run's Nemesis page (`<run name>/nemesis.html`), from
//! `nemesis/<run name>.json` (`interlock-shared-cap-nemesis/1`) beside the run's results file:
//! per nemesis what it does and a row per column (cap held, over the cap, every kill landed,
//! answers matched, the 95% bound on the violation rate), where the kills landed, every trial
//! that broke the cap, how the trials were run and judged, and the re-run command.
//!
//! The file is checked with `verify::shared_cap::nemesis::check` before anything from it is
//! shown, and must be a campaign of the same run name (one host or two) as the page it joins.
//! Every figure is the file's data or the summary that check re-derived.

use crate::error::SiteError;
use crate::facts::{Fact, Facts};
use crate::pages::{Nav, VERSION};
use crate::prose::Section;
use crate::shared_cap::{page, receipt_pages, ReceiptsOf};
use crate::verification::{load_verified, Accepted, Wanted};
use askama::Template;
use std::path::{Path, PathBuf};
use verify::figures::cap_nemesis::CapNemesisFigures;
use verify::shared_cap::nemesis::describe;
use verify::shared_cap::nemesis::record::{CapNemesisFile, CapTrial};
use verify::shared_cap::nemesis::summary::NemesisSummary;
use verify::shared_cap::record::run_name;

/// File name of the page, beside the run's report.
pub const PAGE: &str = "nemesis.html";

/// Where a run's nemesis file is: `nemesis/<run name>.json.gz` (or, from earlier runs,
/// `nemesis/<run name>.json`) in the results directory; `None` when there is none, an error
/// when both are there ([`crate::verification::campaign_file`]).
pub fn nemesis_path(results_dir: &Path, name: &str) -> Result<Option<PathBuf>, SiteError> {
    crate::verification::campaign_file(&results_dir.join("nemesis"), name)
}

/// The published copy's name under `data/`, as billing_credit's campaign is published:
/// `<run name>.nemesis.json`, `.json.gz` when the file is compressed (published as it is).
pub fn json_name(name: &str, bytes: &[u8]) -> String {
    crate::verification::data_name(&format!("{name}.nemesis"), bytes)
}

/// Everything written for one campaign.
pub struct Rendered {
    /// The page's HTML.
    pub html: String,
    /// File name under `data/` ([`json_name`]).
    pub json_name: String,
    /// The file's bytes, published as they are.
    pub bytes: Vec<u8>,
    /// The campaign in one sentence (the report and the front page repeat it).
    pub headline: String,
    /// At which commit the campaign's data was made and how that stands to the site's, in one
    /// sentence (the front page gives it beside the headline: the matrix's may differ).
    pub data_commit: String,
    /// Pages of the receipts of the trials that broke the cap: (effect id, page, bundle JSON).
    pub receipts: Vec<(String, String, String)>,
    /// The figures `verify` derived from the campaign (the report's opening uses them).
    pub figures: CapNemesisFigures,
}

/// One nemesis × column, formatted.
struct RowView<'a> {
    s: &'a NemesisSummary,
    /// Judged trials in which the cap did not hold.
    not_held: u32,
    /// The 95% upper bound on the violation rate ([`crate::nemesis_page::bound`]).
    bound: String,
    /// The heat map's class of the violation rate.
    heat: &'static str,
    /// Distinct configurations among the counted trials, and those that held in every trial.
    configurations: u32,
    configurations_held: u32,
    /// The 95% upper bound over configurations, each counted once.
    configurations_bound: String,
}

/// One nemesis: what it does and its rows.
struct NemesisView<'a> {
    name: &'a str,
    /// What it does, as a sentence ([`describe`]).
    what: String,
    rows: Vec<RowView<'a>>,
}

/// Where kills landed for one column and step.
struct KillRow {
    column: String,
    step: String,
    a: u32,
    b: u32,
    restart: u32,
}

/// One trial that broke the cap.
struct ViolationView<'a> {
    t: &'a CapTrial,
    anchor: String,
    draw: String,
    refunded: String,
    tickets: Vec<(String, String, Option<String>)>,
}

#[derive(Template)]
#[template(path = "cap_nemesis.html")]
struct NemesisPage<'a> {
    root: &'a str,
    version: &'a str,
    nav: Option<Nav>,
    title: &'a str,
    headline: &'a str,
    f: &'a CapNemesisFile,
    hosts: bool,
    nemeses: Vec<NemesisView<'a>>,
    kills: Vec<KillRow>,
    violations: Vec<ViolationView<'a>>,
    prose: Section,
    json_name: &'a str,
    /// How the signer key was checked.
    key: crate::provenance::KeyPolicy,
}

fn int(n: u32) -> Fact {
    Fact::Int(i64::from(n))
}

/// The facts the page's prose (`nemesis.md`) may use, from the verified file (`C` a column,
/// `N` a nemesis):
///
/// | fact | type | meaning |
/// |---|---|---|
/// | `cap`, `refund` | money | the policy's cap per order, each ticket's approved refund |
/// | `confidence` | text | the confidence of the upper bounds (`95%`) |
/// | `nemesis.trials`, `nemesis.per_cell`, `nemesis.kinds` | integer | trials in all, per nemesis and column, nemeses run |
/// | `judged.C`, `violations.C`, `over_cap.C`, `harness_errors.C` | integer | over every nemesis |
/// | `held.C`, `answers.C` | ratio | over the counted trials (every drawn kill landed): cap held, every answer matched Stripe |
/// | `landed.C` | ratio | of every judged trial, those in which every drawn kill landed (the counted ones) |
/// | `held.N.C`, `violations.N.C` | ratio, integer | the same per nemesis |
/// | `not_landed` | integer | judged trials in which some drawn kill did not land |
pub fn facts(file: &CapNemesisFile, figures: &CapNemesisFigures) -> Facts {
    let mut f = Facts::new();
    f.insert("cap".into(), Fact::Cents(verify::shared_cap::CAP_CENTS));
    f.insert(
        "refund".into(),
        Fact::Cents(verify::shared_cap::REFUND_CENTS),
    );
    f.insert("confidence".into(), Fact::Text("95%".into()));
    f.insert("nemesis.trials".into(), int(figures.trials()));
    f.insert("nemesis.per_cell".into(), int(file.plan.trials));
    f.insert("nemesis.kinds".into(), int(figures.nemeses()));
    f.insert("not_landed".into(), int(figures.not_landed()));
    for c in figures.columns() {
        let column = c.column();
        f.insert(format!("judged.{column}"), int(c.judged()));
        f.insert(format!("violations.{column}"), int(c.violations()));
        f.insert(format!("over_cap.{column}"), int(c.over_cap()));
        f.insert(format!("harness_errors.{column}"), int(c.harness_errors()));
        f.insert(format!("held.{column}"), Fact::Ratio(c.held(), c.judged()));
        f.insert(
            format!("landed.{column}"),
            Fact::Ratio(c.all_kills_landed(), c.judged() + c.not_landed()),
        );
        f.insert(
            format!("answers.{column}"),
            Fact::Ratio(c.answers_matched(), c.judged()),
        );
        for r in c.rows() {
            let s = r.summary();
            f.insert(
                format!("held.{}.{column}", s.nemesis),
                Fact::Ratio(s.held, s.judged),
            );
            f.insert(
                format!("violations.{}.{column}", s.nemesis),
                int(r.not_held()),
            );
        }
    }
    f
}

/// The campaign in one sentence: trials, then per column the cap held over judged trials.
fn headline(file: &CapNemesisFile, figures: &CapNemesisFigures) -> String {
    let per: Vec<String> = figures
        .columns()
        .iter()
        .map(|c| format!("{} {}/{}", c.column(), c.held(), c.judged()))
        .collect();
    format!(
        "Nemesis: {} randomized trials ({} nemeses, {} per nemesis and column); the cap held in {}.",
        figures.trials(),
        figures.nemeses(),
        file.plan.trials,
        per.join(", ")
    )
}

/// Where the kills landed, per column and step, as `verify` counted them; then per column the
/// drawn kills that did not land.
fn kill_rows(figures: &CapNemesisFigures) -> Vec<KillRow> {
    figures
        .kills()
        .iter()
        .map(|k| KillRow {
            column: k.column.clone(),
            step: k
                .step
                .map_or("(drawn, never reached: did not land)".into(), str::to_owned),
            a: k.a,
            b: k.b,
            restart: k.restart,
        })
        .collect()
}

/// A trial's draw in words, each kill marked when it did not land.
fn draw_words(t: &CapTrial) -> String {
    let mut parts = vec![t.draw.overlap.clone()];
    let landed = |i: usize| t.cell.tickets.get(i).is_some_and(|x| x.killed_at.is_some());
    let mark = |ok: bool| if ok { "" } else { " (did not land)" };
    if let Some(ms) = t.draw.hold_a_ms {
        let fate = match &t.held {
            Some(h) if h.landed => "; it landed after the kill",
            _ => "; it did not land",
        };
        parts.push(format!("a's refund held {ms} ms at the service{fate}"));
    }
    if let Some(k) = &t.draw.kill_a {
        parts.push(format!("kill a at {k}{}", mark(landed(0))));
    }
    if let Some(k) = &t.draw.kill_b {
        parts.push(format!("kill b at {k}{}", mark(landed(1))));
    }
    if let Some(k) = &t.draw.kill_restart {
        parts.push(format!(
            "kill a's restart at {k}{}",
            mark(t.restart_killed_at.is_some())
        ));
    }
    parts.join("; ")
}

/// `text` with its first letter upper case.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The anchor of a trial on the page.
fn anchor(t: &CapTrial) -> String {
    format!("trial-{}", t.id)
}

/// Per nemesis, what it does and its row of each column: the trials over the cap, of those
/// judged, and the bound.
fn nemesis_views(figures: &CapNemesisFigures) -> Vec<NemesisView<'_>> {
    figures
        .by_nemesis()
        .iter()
        .map(|n| NemesisView {
            name: &n.nemesis,
            what: sentence(describe(&n.nemesis)),
            rows: n
                .rows
                .iter()
                .map(|r| RowView {
                    s: r.summary(),
                    not_held: r.not_held(),
                    bound: crate::nemesis_page::bound(
                        r.summary().violation_upper95_ppm,
                        r.summary().judged,
                    ),
                    heat: crate::nemesis_figures::heat_band(r.not_held_ppm()),
                    configurations: r.configurations(),
                    configurations_held: r.configurations_held(),
                    configurations_bound: crate::nemesis_page::bound(
                        r.configurations_upper95_ppm(),
                        r.configurations(),
                    ),
                })
                .collect(),
        })
        .collect()
}

/// One page per receipt of the trials in which the cap did not hold (each checked by `verify`
/// against `key`), linked back to the trial on the campaign's page.
fn trial_receipts(
    name: &str,
    broke: &[&CapTrial],
    public_key: &str,
    key: &verify::receipt::KeyCheck,
    json_name: &str,
    nav: &crate::shared_cap::NavFn<'_>,
) -> Result<Vec<crate::shared_cap::ReceiptFiles>, SiteError> {
    let of: Vec<ReceiptsOf<'_>> = broke
        .iter()
        .map(|t| ReceiptsOf {
            cell: &t.cell,
            of: "trial",
            href: format!("../{PAGE}#{}", anchor(t)),
            label: t.id.clone(),
            crumb: (format!("../{PAGE}"), "Nemesis".into()),
        })
        .collect();
    receipt_pages(name, &of, public_key, key, json_name, nav)
}

/// A trial in which the cap did not hold, as the page lists it.
fn violation_view<'a>(t: &'a CapTrial) -> ViolationView<'a> {
    ViolationView {
        t,
        anchor: anchor(t),
        draw: draw_words(t),
        refunded: crate::format::dollars(t.cell.truth.refunded_cents()),
        tickets: t
            .cell
            .tickets
            .iter()
            .map(|x| {
                (
                    x.name.clone(),
                    x.status.clone(),
                    x.receipt.as_ref().map(|r| r.effect_id.clone()),
                )
            })
            .collect(),
    }
}

/// The page's header: the run's, saying what the campaign ran against (its own file, not the
/// matrix) and at which commit.
fn header(
    nav: &crate::shared_cap::NavFn<'_>,
    env: &verify::shared_cap::record::CapEnvironment,
    path: &Path,
    built_from: &crate::built_from::BuiltFrom,
) -> Result<Option<crate::pages::Nav>, SiteError> {
    let mut header = nav("", "nemesis", Vec::new(), "Nemesis".into());
    if let Some(h) = header.as_mut() {
        let ran = crate::shared_cap::ran_line(env).map_err(|e| SiteError::Data {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        h.ran = built_from.after(ran, env.git_commit.as_ref());
    }
    Ok(header)
}

/// Reads, checks and renders the campaign of the run `name`, if `nemesis/<name>.json.gz` (or
/// `.json`) exists;
/// `nav` builds the run's header (as its other pages have it).
pub fn render(
    results_dir: &Path,
    name: &str,
    pinned: Option<&ed25519_dalek::VerifyingKey>,
    prose: &(String, String),
    nav: &crate::shared_cap::NavFn<'_>,
    built_from: &crate::built_from::BuiltFrom,
) -> Result<Option<Rendered>, SiteError> {
    let Some(path) = nemesis_path(results_dir, name)? else {
        return Ok(None);
    };
    let key = crate::verification::key_check(pinned);
    let (accepted, bytes) = load_verified(&path, Wanted::SharedCapNemesis, &key)?;
    let Accepted::SharedCapNemesis { file, figures, .. } = accepted else {
        return Err(SiteError::Unreadable {
            path,
            problem: "not a shared_cap nemesis file".into(),
        });
    };
    if run_name(&file.environment) != name {
        return Err(SiteError::Data {
            path,
            problem: format!(
                "a campaign of the run {:?} cannot join the pages of {name:?}",
                run_name(&file.environment)
            ),
        });
    }
    let page_facts = facts(&file, &figures);
    let prose = crate::prose::render(&prose.0, &prose.1, &page_facts)?;
    let headline = headline(&file, &figures);
    let nemeses = nemesis_views(&figures);
    let broke: Vec<&CapTrial> = figures
        .broke()
        .iter()
        .filter_map(|i| file.trials.get(*i))
        .collect();
    let violations = broke.iter().map(|t| violation_view(t)).collect();
    let json_name = json_name(name, &bytes);
    let receipts = trial_receipts(
        name,
        &broke,
        &file.environment.public_key,
        &key,
        &json_name,
        nav,
    )?;
    let header = header(nav, &file.environment, &path, built_from)?;
    let html = page(
        &format!("{name}/{PAGE}"),
        &NemesisPage {
            root: "../",
            version: VERSION,
            nav: header,
            title: crate::shared_cap::title(name),
            headline: &headline,
            f: &file,
            hosts: file.environment.hosts == Some(2),
            nemeses,
            kills: kill_rows(&figures),
            violations,
            prose,
            json_name: &json_name,
            key: crate::provenance::KeyPolicy::of(pinned.is_some()),
        },
    )?;
    Ok(Some(Rendered {
        html,
        json_name,
        bytes,
        headline,
        receipts,
        data_commit: built_from.words(file.environment.git_commit.as_deref()),
        figures: *figures,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use verify::receipt::KeyCheck;
    use verify::shared_cap::nemesis::summary::all_kills_landed;

    fn fixture() -> CapNemesisFile {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/shared_cap/nemesis/shared_cap.json");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_kill_that_landed_is_counted_once_and_every_drawn_kill_that_did_not_is_counted_apart() {
        let file = fixture();
        let figures = verify::figures::cap_nemesis::check(&file, &KeyCheck::SelfAttested).figures;
        let rows = kill_rows(&figures);
        let (missed, landed): (Vec<&KillRow>, Vec<&KillRow>) =
            rows.iter().partition(|r| r.step.starts_with('('));
        let total = |rs: &[&KillRow]| rs.iter().map(|r| r.a + r.b + r.restart).sum::<u32>();
        let landed_in_trials: u32 = file.trials.iter().map(CapTrial::kills_landed).sum();
        assert_eq!(total(&landed), landed_in_trials);
        let drawn: u32 = file
            .trials
            .iter()
            .map(|t| {
                [&t.draw.kill_a, &t.draw.kill_b, &t.draw.kill_restart]
                    .iter()
                    .filter(|k| k.is_some())
                    .count() as u32
            })
            .sum();
        assert_eq!(total(&missed), drawn - landed_in_trials);
        assert!(rows.iter().all(|r| r.a + r.b + r.restart > 0));
    }

    #[test]
    fn a_draw_reads_as_words_with_each_kill_that_did_not_land_marked() {
        let file = fixture();
        for t in &file.trials {
            let words = draw_words(t);
            assert!(words.starts_with(&t.draw.overlap), "{words}");
            let marked = words.matches("(did not land)").count() as u32;
            assert_eq!(marked > 0, !all_kills_landed(t), "{}: {words}", t.id);
        }
        assert_eq!(sentence("both workers"), "Both workers");
        assert_eq!(sentence(""), "");
    }
}
