//! Prose that cannot lie: the Verdict, Setup and Rows text of a scenario, written in Markdown
//! under `scenarios/<scenario>/` and rendered against the verified data.
//!
//! Rules, enforced on every build:
//! - numbers appear only through placeholders (`{{ fact }}`, see [`crate::placeholders`]); a digit
//!   typed anywhere else (outside inline code and fenced code blocks) fails the build;
//! - a line `claim: ...` is evaluated against the data ([`crate::claims`]); a false or unknown
//!   claim fails the build. Checked claims are listed under the section they belong to;
//! - `requires: fact fact ...` lines name facts a file needs; when the data lacks one (a partial
//!   matrix), the section is replaced by a note naming what is missing;
//! - `rows.md` describes every crash point and outage in the data, under headings
//!   `## crash <name>` and `## outage <name>`; a missing description fails the build.

use crate::claims::{evaluate, Checked, ClaimError};
use crate::error::SiteError;
use crate::facts::Facts;
use crate::placeholders::{fill, handwritten};
use pulldown_cmark::{html, Options, Parser};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use verify::scenarios::shared_cap::record::SCENARIO as SHARED_CAP;
use verify::scenarios::Scenario::{self, BillingCredit, SharedCap};

/// Where the Markdown prose comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProseSource {
    /// The files of `scenarios/<scenario>/` compiled into the binary (the default).
    Embedded,
    /// A directory holding one subdirectory per scenario (like the workspace's `scenarios/`).
    Dir(PathBuf),
}

/// The three prose files of a scenario.
#[derive(Debug, Clone)]
pub struct ProseFiles {
    /// `verdict.md`.
    pub verdict: (String, String),
    /// `setup.md`.
    pub setup: (String, String),
    /// `rows.md`.
    pub rows: (String, String),
    /// `nemesis.md`: the Nemesis page's text (empty when a scenario has none).
    pub nemesis: (String, String),
}

/// A rendered prose section.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The HTML.
    pub html: String,
    /// Claims that were checked and held.
    pub claims: Vec<Checked>,
}

/// `rows.md` rendered: the intro and one description per crash point and outage.
#[derive(Debug, Clone, Default)]
pub struct RowsProse {
    /// Text before the first description heading.
    pub intro: Section,
    /// Crash point name → HTML (inline).
    pub crash: BTreeMap<String, String>,
    /// Outage name → HTML (inline).
    pub outage: BTreeMap<String, String>,
}

const EMBEDDED_SHARED_CAP: [(&str, &str); 4] = [
    (
        "verdict.md",
        include_str!("../../scenarios/shared_cap/verdict.md"),
    ),
    (
        "setup.md",
        include_str!("../../scenarios/shared_cap/setup.md"),
    ),
    (
        "rows.md",
        include_str!("../../scenarios/shared_cap/rows.md"),
    ),
    (
        "nemesis.md",
        include_str!("../../scenarios/shared_cap/nemesis.md"),
    ),
];

/// The two-host run's prose: only what differs from `shared_cap`'s ([`FALLBACKS`]).
const EMBEDDED_SHARED_CAP_TWO_HOSTS: [(&str, &str); 2] = [
    (
        "verdict.md",
        include_str!("../../scenarios/shared_cap_two_hosts/verdict.md"),
    ),
    (
        "setup.md",
        include_str!("../../scenarios/shared_cap_two_hosts/setup.md"),
    ),
];

/// Prose folders that hold only what differs from another's: (folder, the folder a file
/// missing from it is read from).
pub const FALLBACKS: [(&str, &str); 1] = [(SHARED_CAP_TWO_HOSTS, SHARED_CAP)];

/// The prose folder of a shared_cap run on two hosts (`verify`'s run name for it).
const SHARED_CAP_TWO_HOSTS: &str = "shared_cap_two_hosts";

fn embedded(scenario: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match Scenario::named(scenario) {
        Some(BillingCredit) => Some(&EMBEDDED_BILLING_CREDIT),
        Some(SharedCap) => Some(&EMBEDDED_SHARED_CAP),
        None if scenario == SHARED_CAP_TWO_HOSTS => Some(&EMBEDDED_SHARED_CAP_TWO_HOSTS),
        None => None,
    }
}

/// The folder whose copy of `name` a `scenario` without one of its own uses: itself when it has
/// the file (or has no fallback), else its fallback's.
fn folder_for(scenario: &str, has: impl Fn(&str) -> bool) -> &str {
    match FALLBACKS.iter().find(|(from, _)| *from == scenario) {
        Some((_, to)) if !has(scenario) => to,
        _ => scenario,
    }
}

const EMBEDDED_BILLING_CREDIT: [(&str, &str); 4] = [
    (
        "verdict.md",
        include_str!("../../scenarios/billing_credit/verdict.md"),
    ),
    (
        "setup.md",
        include_str!("../../scenarios/billing_credit/setup.md"),
    ),
    (
        "rows.md",
        include_str!("../../scenarios/billing_credit/rows.md"),
    ),
    (
        "nemesis.md",
        include_str!("../../scenarios/billing_credit/nemesis.md"),
    ),
];

/// Load the prose files of `scenario`; a file missing from a folder named in [`FALLBACKS`] is
/// read from the folder it falls back to (and named so in errors).
pub fn load(scenario: &str, source: &ProseSource) -> Result<ProseFiles, SiteError> {
    let exists = |folder: &str, name: &str| match source {
        ProseSource::Embedded => {
            embedded(folder).is_some_and(|e| e.iter().any(|(n, _)| *n == name))
        }
        ProseSource::Dir(dir) => dir.join(folder).join(name).is_file(),
    };
    let get = |name: &str| -> Result<(String, String), SiteError> {
        let folder = folder_for(scenario, |f| exists(f, name));
        let shown = format!("scenarios/{folder}/{name}");
        match source {
            ProseSource::Embedded => {
                let Some(embedded) = embedded(folder) else {
                    return Err(SiteError::Prose {
                        file: shown,
                        line: 0,
                        problem:
                            "no prose is compiled in for this scenario; pass a prose directory"
                                .into(),
                    });
                };
                let text = embedded
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| (*t).to_owned())
                    .unwrap_or_default();
                Ok((shown, text))
            }
            ProseSource::Dir(dir) => {
                let path: PathBuf = dir.join(folder).join(name);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| SiteError::io("reading", &path, e))?;
                Ok((path.display().to_string(), text))
            }
        }
    };
    let optional = |name: &str| match source {
        ProseSource::Dir(_) if !exists(folder_for(scenario, |f| exists(f, name)), name) => {
            Ok((format!("scenarios/{scenario}/{name}"), String::new()))
        }
        _ => get(name),
    };
    Ok(ProseFiles {
        verdict: get("verdict.md")?,
        setup: get("setup.md")?,
        rows: get("rows.md")?,
        nemesis: optional("nemesis.md")?,
    })
}

/// Render one prose file (placeholders filled, claims checked) to HTML.
///
/// A file may start with `requires:` lines naming facts it needs (space-separated). When the data
/// lacks one (a run of part of the matrix, say), the section is replaced by a note naming what is
/// missing, instead of failing the build or saying anything about rows that did not run.
pub fn render(file: &str, text: &str, facts: &Facts) -> Result<Section, SiteError> {
    let missing: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("requires:"))
        .flat_map(str::split_whitespace)
        .filter(|name| !facts.contains_key(*name))
        .collect();
    if !missing.is_empty() {
        return Ok(Section {
            html: format!(
                "<p class=\"muted\">This section was written for a run that covers what it discusses; this run lacks {}, so it is not shown.</p>\n",
                missing
                    .iter()
                    .map(|m| format!("<code>{}</code>", html_escape(m)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            claims: Vec::new(),
        });
    }
    let (markdown, claims) = preprocess(file, text, 0, facts)?;
    Ok(Section {
        html: to_html(&markdown),
        claims,
    })
}

/// Render `rows.md`, requiring a description of every crash point and outage in `needed`.
pub fn render_rows(
    file: &str,
    text: &str,
    facts: &Facts,
    crashes: &[String],
    outages: &[String],
) -> Result<RowsProse, SiteError> {
    let (intro, blocks) = split_rows(file, text)?;
    let (md, claims) = preprocess(file, &intro, 0, facts)?;
    let mut out = RowsProse {
        intro: Section {
            html: to_html(&md),
            claims,
        },
        ..RowsProse::default()
    };
    for block in blocks {
        describe(&mut out, file, block, facts)?;
    }
    require_descriptions(&out, file, crashes, outages)?;
    Ok(out)
}

/// One `## crash <name>` or `## outage <name>` section of `rows.md`.
struct RowsBlock {
    /// `crash` or `outage`.
    kind: String,
    /// The crash point's or outage's name.
    name: String,
    /// Line number of the heading.
    line: usize,
    /// The lines under the heading.
    body: String,
}

/// `rows.md` cut into the text before the first heading and one block per heading; any other
/// `## ` heading is an error.
fn split_rows(file: &str, text: &str) -> Result<(String, Vec<RowsBlock>), SiteError> {
    let mut intro = String::new();
    let mut blocks: Vec<RowsBlock> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(h) = line.strip_prefix("## ") {
            let parts: Vec<&str> = h.split_whitespace().collect();
            match parts.as_slice() {
                [kind @ ("crash" | "outage"), name] => {
                    blocks.push(RowsBlock {
                        kind: (*kind).to_owned(),
                        name: (*name).to_owned(),
                        line: i + 1,
                        body: String::new(),
                    });
                    continue;
                }
                _ => {
                    return Err(SiteError::Prose {
                        file: file.to_owned(),
                        line: i + 1,
                        problem: "rows.md headings must be `## crash <name>` or `## outage <name>`"
                            .into(),
                    })
                }
            }
        }
        let target = match blocks.last_mut() {
            Some(b) => &mut b.body,
            None => &mut intro,
        };
        target.push_str(line);
        target.push('\n');
    }
    Ok((intro, blocks))
}

/// Render one block as inline HTML into its crash or outage map (its claims join the intro's);
/// a name described twice is an error.
fn describe(
    out: &mut RowsProse,
    file: &str,
    block: RowsBlock,
    facts: &Facts,
) -> Result<(), SiteError> {
    let RowsBlock {
        kind,
        name,
        line,
        body,
    } = block;
    let (md, claims) = preprocess(file, &body, line, facts)?;
    out.intro.claims.extend(claims);
    let html = to_html(&md);
    let inline = html
        .trim()
        .strip_prefix("<p>")
        .and_then(|s| s.strip_suffix("</p>"))
        .map(str::to_owned)
        .unwrap_or(html);
    let map = if kind == "crash" {
        &mut out.crash
    } else {
        &mut out.outage
    };
    if map.insert(name.clone(), inline).is_some() {
        return Err(SiteError::Prose {
            file: file.to_owned(),
            line,
            problem: format!("{kind} {name} is described twice"),
        });
    }
    Ok(())
}

/// Every crash point and outage the data has must be described.
fn require_descriptions(
    out: &RowsProse,
    file: &str,
    crashes: &[String],
    outages: &[String],
) -> Result<(), SiteError> {
    for (kind, needed, have) in [
        ("crash", crashes, &out.crash),
        ("outage", outages, &out.outage),
    ] {
        for n in needed {
            if !have.contains_key(n) {
                return Err(SiteError::Prose {
                    file: file.to_owned(),
                    line: 0,
                    problem: format!(
                        "the data has {kind} `{n}` but there is no `## {kind} {n}` description"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Check numbers and claims, fill placeholders. `offset` is the line number before `text` starts.
fn preprocess(
    file: &str,
    text: &str,
    offset: usize,
    facts: &Facts,
) -> Result<(String, Vec<Checked>), SiteError> {
    let mut out = String::with_capacity(text.len());
    let mut claims = Vec::new();
    let mut fence: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = offset + i + 1;
        let err = |problem: String| SiteError::Prose {
            file: file.to_owned(),
            line: line_no,
            problem,
        };
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed[..3].to_owned());
        } else if trimmed.starts_with("requires:") {
            continue;
        } else if let Some(claim) = trimmed.strip_prefix("claim:") {
            match evaluate(claim, facts) {
                Ok(c) => claims.push(c),
                Err(ClaimError::Invalid(problem)) => {
                    return Err(err(format!(
                        "cannot check claim `{}`: {problem}",
                        claim.trim()
                    )))
                }
                Err(ClaimError::False(evidence)) => {
                    return Err(SiteError::FalseClaim {
                        file: file.to_owned(),
                        line: line_no,
                        claim: claim.trim().to_owned(),
                        evidence,
                    })
                }
            }
            continue;
        } else if let Some(d) = handwritten(line).chars().find(char::is_ascii_digit) {
            return Err(err(format!(
                "the digit `{d}` is written by hand; numbers may only come from placeholders ({{{{ fact }}}}) or code spans"
            )));
        }
        out.push_str(&fill(line, facts).map_err(|e| err(e.to_string()))?);
        out.push('\n');
    }
    Ok((out, claims))
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn to_html(markdown: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let mut html_out = String::new();
    html::push_html(&mut html_out, Parser::new_ext(markdown, opts));
    html_out
}

/// Where the workspace's `scenarios/` directory is, for a `--prose` default in development.
pub fn workspace_scenarios_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_host_run_has_its_own_verdict_and_setup_and_shared_caps_other_files() {
        for source in [
            ProseSource::Embedded,
            ProseSource::Dir(workspace_scenarios_dir().to_path_buf()),
        ] {
            let two = load("shared_cap_two_hosts", &source).unwrap_or_else(|e| panic!("{e}"));
            let one = load("shared_cap", &source).unwrap_or_else(|e| panic!("{e}"));
            assert!(two.verdict.0.contains("shared_cap_two_hosts/verdict.md"));
            assert!(two.setup.0.contains("shared_cap_two_hosts/setup.md"));
            assert_ne!(two.verdict.1, one.verdict.1);
            assert!(two.rows.0.contains("shared_cap/rows.md"), "{}", two.rows.0);
            assert_eq!(two.rows.1, one.rows.1);
            assert_eq!(two.nemesis.1, one.nemesis.1);
            assert!(!one.nemesis.1.is_empty());
        }
        assert!(load("no_such_scenario", &ProseSource::Embedded).is_err());
    }
}
