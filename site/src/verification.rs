//! The one place where a results file is verified before anything is rendered from it.
//!
//! [`load_verified`] reads a file, calls the `verify` crate's checker of its format under the
//! build's key policy, and hands over what that checker accepted and derived, with each receipt's
//! report turned into the small, display-ready summary the pages need ([`summarize`]). Nothing
//! else in the site reads a results file or judges a receipt or a signature.

use crate::error::SiteError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use verify::check::ResultsReport;
use verify::entry::ReceiptBundle;
use verify::figures::billing_credit::{Checked, ResultsFigures};
use verify::figures::cap_nemesis::CapNemesisFigures;
use verify::figures::nemesis::NemesisFigures;
use verify::figures::shared_cap::CapFigures;
use verify::load::{load_document, Document};
use verify::nemesis::check::NemesisReport;
use verify::nemesis::{NemesisFile, NEMESIS_FORMAT};
use verify::problem::code;
use verify::receipt::{KeyCheck, ReceiptReport};
use verify::results::{ResultsFile, RESULTS_FORMAT};
use verify::shared_cap::check::CapReport;
use verify::shared_cap::nemesis::check::CapNemesisReport;
use verify::shared_cap::nemesis::record::CapNemesisFile;
use verify::shared_cap::record::CapResults;

/// A results file that passed verification, with every receipt's re-derived summary and the
/// figures `verify` derived from it. Built only here, from a file `verify` checked.
#[derive(Debug, Clone)]
pub struct Verified {
    file: ResultsFile,
    receipts: BTreeMap<String, ReceiptCheck>,
    checker: &'static str,
    figures: ResultsFigures,
}

impl Verified {
    /// Check `file` under `key` with `verify`'s checker of its format and keep what it derived,
    /// whether or not it found a problem ([`accept_results`] refuses a file that has one).
    fn checked(file: ResultsFile, key: &KeyCheck) -> (Verified, ResultsReport) {
        let Checked { report, figures } = verify::figures::billing_credit::check(&file, key);
        let signer = &file.environment.signer;
        let receipts = report
            .cell_reports
            .iter()
            .filter_map(|c| c.receipt.as_ref())
            .map(|r| (r.effect_id.clone(), summarize(r, signer)))
            .collect();
        let verified = Verified {
            file,
            receipts,
            checker: "verify::check::verify_results",
            figures,
        };
        (verified, report)
    }

    /// A file as `verify` checked it, its findings ignored: for tests of the views of files
    /// changed after signing.
    #[cfg(test)]
    pub(crate) fn checked_for_test(file: ResultsFile, checker: &'static str) -> Verified {
        let (mut verified, _) = Verified::checked(file, &KeyCheck::SelfAttested);
        verified.checker = checker;
        verified
    }

    /// The parsed file.
    pub fn file(&self) -> &ResultsFile {
        &self.file
    }

    /// Receipt summaries re-derived at build time, keyed by effect id.
    pub fn receipts(&self) -> &BTreeMap<String, ReceiptCheck> {
        &self.receipts
    }

    /// Which checker verified the file, for the pages to name.
    pub fn checker(&self) -> &'static str {
        self.checker
    }

    /// Every figure the pages print, as `verify` derived it (the per-column summary of its own
    /// judgements among them): the pages format these, never a count of their own.
    pub fn figures(&self) -> &ResultsFigures {
        &self.figures
    }
}

/// The summary of one receipt, re-derived at build time (never copied from the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptCheck {
    /// `verify` found no problem in the receipt.
    pub valid: bool,
    /// Hashes recompute and `prev` links hold.
    pub chain_consistent: bool,
    /// `true`, `false` or `unsigned`: every entry signed by the key the receipt is checked against.
    pub signed: String,
    /// `pinned` (checked against a key given to the build) or `self-attested` (the file's own key).
    pub key_check: String,
    /// `true`, `false` or `unknown`: whether the effect happened according to the receipt.
    pub happened: String,
    /// `true` or `false`.
    pub happened_once: String,
    /// `true`, `false` or `n/a` (no send counts).
    pub authorized_when_fired: String,
    /// `true`, `false` or `n/a` (no send counts).
    pub assumptions_held: String,
    /// Refusal code and reason, if the effect was refused.
    pub refused: Option<String>,
    /// What recovery re-checked, as compact JSON, if it did.
    pub rechecked_at_recovery: Option<String>,
    /// The COMMITTED entry's `via`, if any.
    pub via: Option<String>,
    /// The COMMITTED entry's evidence, as compact JSON, if any.
    pub evidence: Option<String>,
    /// The entries' kinds, in order, as read from the receipt itself.
    pub journal_kinds: Vec<String>,
    /// Problems found (empty when the receipt verifies).
    pub problems: Vec<String>,
    /// Each entry's hash, link and signature, as `verify` found them.
    pub entries: Vec<EntryCheck>,
}

impl ReceiptCheck {
    /// The receipt verifies: consistent chain, signed, no problem.
    pub fn ok(&self) -> bool {
        self.valid && self.problems.is_empty()
    }
}

/// Per-entry detail for a receipt page: does the hash recompute, does `prev` link, is the
/// signature valid and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryCheck {
    /// The stored hash equals the recomputed one.
    pub hash_ok: bool,
    /// `prev` names the previous entry's hash (`null` for the first).
    pub prev_ok: bool,
    /// Human-readable signature status.
    pub signature: String,
    /// The signature is valid and by the key the receipt was checked against.
    pub signature_ok: bool,
}

/// The key rule of a build: every receipt signed by the pinned key, or (none pinned) by the key
/// each file names itself.
pub fn key_check(pinned: Option<&ed25519_dalek::VerifyingKey>) -> KeyCheck {
    pinned.map_or(KeyCheck::SelfAttested, |k| KeyCheck::Pinned(*k))
}

/// Which kind of file a build expects at a path: it refuses any other before checking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// A scenario's results file: billing_credit's or shared_cap's.
    Results,
    /// A billing_credit nemesis campaign (`nemesis/<scenario>.json`), whole (not a shard).
    Nemesis,
    /// A shared_cap nemesis campaign (`nemesis/<run name>.json`).
    SharedCapNemesis,
    /// A reference run of the original implementation (`reference/<scenario>.original.json`).
    Reference,
}

/// A file `verify` accepted under the build's key policy: the file as `verify` read it, and
/// what `verify` derived from it.
pub enum Accepted {
    /// A file of a scenario on the contract (`interlock-scenario/1`): the scenario that renders
    /// it, which has `verify` read and check it ([`crate::scenarios::ScenarioSite::render`]).
    Contract(&'static dyn crate::scenarios::ScenarioSite),
    /// A billing_credit results file.
    Results(Box<Verified>),
    /// A billing_credit nemesis campaign.
    Nemesis {
        /// The file.
        file: Box<NemesisFile>,
        /// What `verify` found.
        report: NemesisReport,
        /// The figures `verify` derived from it.
        figures: Box<NemesisFigures>,
    },
    /// A shared_cap results file.
    SharedCap {
        /// The file.
        file: Box<CapResults>,
        /// What `verify` found and derived (the summary the pages show).
        report: CapReport,
        /// The figures `verify` derived from it.
        figures: Box<CapFigures>,
    },
    /// A shared_cap nemesis campaign.
    SharedCapNemesis {
        /// The file.
        file: Box<CapNemesisFile>,
        /// What `verify` found and derived (the summary the pages show).
        report: CapNemesisReport,
        /// The figures `verify` derived from it.
        figures: Box<CapNemesisFigures>,
    },
    /// A reference run of the original implementation (unsigned: accepted only self-attested).
    Reference(Value),
}

/// Read the file at `path`, refuse it unless it is the `wanted` kind, and check it with the
/// `verify` crate's checker of its format under `key` (the same code, and the same key rule, as
/// the `verify` binary); refuse, naming the first problems, a file that fails. Returns what was
/// accepted and the file's bytes as stored (to publish; a gzip file's compressed bytes, but the
/// text of a scenario file on the contract, which its pages read). The only place the site reads
/// or checks a file.
pub fn load_verified(
    path: &Path,
    wanted: Wanted,
    key: &KeyCheck,
) -> Result<(Accepted, Vec<u8>), SiteError> {
    // The bytes as stored (published as they are) and the text the checks read: the same, or
    // the decompressed text of a gzip file (by its first bytes, whatever its name), within
    // `verify`'s limits.
    let bytes = std::fs::read(path).map_err(|e| SiteError::io("reading", path, e))?;
    let stored = verify::input::is_gzip(&bytes).then(|| bytes.clone());
    let bytes = verify::input::decompressed(bytes).map_err(|e| SiteError::Unreadable {
        path: path.to_path_buf(),
        problem: e.to_string(),
    })?;
    let unreadable = |problem: String| SiteError::Unreadable {
        path: path.to_path_buf(),
        problem,
    };
    let unverified = |problem: String| SiteError::Unverified {
        path: path.to_path_buf(),
        problem,
    };
    let refused = |refusal: Refusal| unverified(refusal.to_string());
    if let Some(head) = verify::contract::read_head(&bytes) {
        if stored.is_some() {
            return Err(unreadable(verify::contract::COMPRESSED_REFUSED.to_owned()));
        }
        let site = crate::scenarios::registered(&head.scenario);
        return match (wanted, site) {
            (Wanted::Results, Some(site)) => Ok((Accepted::Contract(site), bytes)),
            (Wanted::Results, None) => Err(unreadable(format!(
                "scenario {:?} of {} is not one this site renders",
                verify::display::shorten(&head.scenario, 80),
                verify::contract::FORMAT
            ))),
            _ => Err(unreadable(format!(
                "a scenario results file ({}), not the kind wanted here",
                verify::contract::FORMAT
            ))),
        };
    }
    let doc = match (wanted, load_document(&bytes)) {
        (_, Ok(doc)) => doc,
        // As before, a reference that does not read is one that did not verify.
        (Wanted::Reference, Err(e)) => return Err(unverified(e.to_string())),
        (_, Err(e)) => return Err(unreadable(e.to_string())),
    };
    let accepted = match (wanted, doc) {
        (Wanted::Results, Document::Results(file)) => {
            Accepted::Results(Box::new(accept_results(*file, key).map_err(refused)?))
        }
        (Wanted::Results, Document::SharedCap(file)) => {
            let verify::figures::shared_cap::Checked { report, figures } =
                verify::figures::shared_cap::check(&file, key);
            first_lines(report.ok, &report.findings).map_err(refused)?;
            Accepted::SharedCap {
                file,
                report,
                figures: Box::new(figures),
            }
        }
        (Wanted::Nemesis, Document::Nemesis(file)) => {
            let checked = accept_nemesis(&file, key).map_err(refused)?;
            let origin = Origin::new(&file.environment.git_commit, &file.environment.signer);
            agrees_with_matrix(path, &origin, CommitRule::Same)?;
            Accepted::Nemesis {
                file,
                report: checked.report,
                figures: Box::new(checked.figures),
            }
        }
        (Wanted::SharedCapNemesis, Document::SharedCapNemesis(file)) => {
            let verify::figures::cap_nemesis::Checked { report, figures } =
                verify::figures::cap_nemesis::check(&file, key);
            first_lines(report.ok, &report.findings).map_err(refused)?;
            let origin = Origin::new(&file.environment.git_commit, &file.environment.public_key);
            agrees_with_matrix(path, &origin, CommitRule::Shown)?;
            Accepted::SharedCapNemesis {
                file,
                report,
                figures: Box::new(figures),
            }
        }
        (Wanted::Reference, Document::OriginalResults(value)) => {
            Accepted::Reference(accept_reference(value, key).map_err(refused)?)
        }
        (Wanted::Reference, _) => {
            return Err(unverified(
                "not a results file of the original implementation".into(),
            ))
        }
        (Wanted::Results, _) => {
            return Err(unreadable(format!(
                "not a results file ({RESULTS_FORMAT} or {})",
                verify::shared_cap::check::FORMAT
            )))
        }
        (Wanted::Nemesis, _) => {
            return Err(unreadable(format!(
                "not a nemesis results file ({NEMESIS_FORMAT})"
            )))
        }
        (Wanted::SharedCapNemesis, _) => {
            return Err(unreadable("not a shared_cap nemesis file".into()))
        }
    };
    Ok((accepted, stored.unwrap_or(bytes)))
}

/// Which code made a file and which key signed it: the two things a scenario's files must not
/// disagree on unseen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The commit the run recorded (`environment.git_commit`), if it did.
    pub commit: Option<String>,
    /// The public key (hex) the file is signed with.
    pub signer: String,
}

impl Origin {
    /// The origin of a file made at `commit` and signed by `signer`.
    pub fn new(commit: &Option<String>, signer: &str) -> Origin {
        Origin {
            commit: commit.clone(),
            signer: signer.to_owned(),
        }
    }
}

/// Whether a scenario's campaign may come from other code than its matrix file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitRule {
    /// No: the report puts the campaign's headline into the matrix's verdict, one sentence
    /// about one code (billing_credit).
    Same,
    /// Yes: every page that shows the campaign beside the run says the campaign's own commit
    /// (shared_cap: "For the campaign: Data made at commit …").
    Shown,
}

/// Why a scenario's campaign (`campaign`) cannot be shown with its matrix file (`matrix`):
/// made at another commit where `commits` is [`CommitRule::Same`] (both recorded one); or
/// signed by another key where either key is the project's stable key (`listed`: in the
/// results directory's `SIGNERS`), which would make one scenario half vouched for by the
/// project. Two per-run keys always differ (each run makes its own), and each page names its
/// file's key, so that alone is no disagreement. `None` when they agree.
pub fn disagreement(
    matrix: &Origin,
    campaign: &Origin,
    commits: CommitRule,
    listed: &dyn Fn(&str) -> bool,
) -> Option<String> {
    if let (CommitRule::Same, Some(m), Some(c)) = (commits, &matrix.commit, &campaign.commit) {
        if m != c {
            return Some(format!(
                "the campaign was made at commit {c} and the matrix at commit {m}: the report \
                 joins them in one verdict, so they must come from the same code; run the \
                 campaign again at the matrix's commit (or the matrix at the campaign's), or \
                 leave the campaign out of the results directory"
            ));
        }
    }
    let stable = [&matrix.signer, &campaign.signer]
        .into_iter()
        .filter(|k| listed(k))
        .count();
    if matrix.signer != campaign.signer && stable > 0 {
        return Some(format!(
            "the campaign is signed by the key {} and the matrix by {}, and {} the project's \
             stable key listed in SIGNERS: one scenario's files must be signed by the same \
             stable key, or by none; sign both with the project's key",
            fingerprint(&campaign.signer),
            fingerprint(&matrix.signer),
            if stable == 2 {
                "each is"
            } else {
                "one of them is"
            }
        ));
    }
    None
}

/// A key's fingerprint as `verify` prints it (the hex itself when it names no key).
fn fingerprint(signer: &str) -> String {
    verify::entry::decode_lower_hex::<32>(signer)
        .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
        .map_or_else(|| signer.to_owned(), |k| verify::fingerprint(&k))
}

/// The campaign at `path` (`DIR/nemesis/<stem>.json[.gz]`), made and signed as `campaign`
/// says, refused when it disagrees with its scenario's matrix file `DIR/<stem>.json`
/// ([`disagreement`]). A campaign without a matrix file beside it has nothing to disagree
/// with.
fn agrees_with_matrix(
    path: &Path,
    campaign: &Origin,
    commits: CommitRule,
) -> Result<(), SiteError> {
    /// The fields of a matrix file this check reads (billing_credit's `signer`, shared_cap's
    /// `public_key`); the build verifies the whole file where it renders it.
    #[derive(serde::Deserialize)]
    struct Head {
        environment: HeadEnvironment,
    }
    #[derive(serde::Deserialize)]
    struct HeadEnvironment {
        git_commit: Option<String>,
        signer: Option<String>,
        public_key: Option<String>,
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".json.gz")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name);
    let Some(results_dir) = path.parent().and_then(Path::parent) else {
        return Ok(());
    };
    let matrix_path = results_dir.join(format!("{stem}.json"));
    if !matrix_path.is_file() {
        return Ok(());
    }
    let bytes =
        std::fs::read(&matrix_path).map_err(|e| SiteError::io("reading", &matrix_path, e))?;
    let head: Head = serde_json::from_slice(&bytes).map_err(|e| SiteError::Unreadable {
        path: matrix_path.clone(),
        problem: e.to_string(),
    })?;
    let env = head.environment;
    let matrix = Origin {
        commit: env.git_commit,
        signer: env.signer.or(env.public_key).unwrap_or_default(),
    };
    let listed = |key: &str| crate::provenance::is_listed(results_dir, key);
    match disagreement(&matrix, campaign, commits, &listed) {
        Some(why) => Err(SiteError::Data {
            path: path.to_path_buf(),
            problem: format!("it disagrees with {}: {why}", matrix_path.display()),
        }),
        None => Ok(()),
    }
}

/// Where the campaign file `<stem>` is in `dir`: `<stem>.json.gz` (as the runner writes it) or
/// `<stem>.json` (as earlier runs wrote it), `None` when neither is there. Both at once are
/// refused, naming both: which one to publish would be a guess (the runner never leaves both).
pub fn campaign_file(dir: &Path, stem: &str) -> Result<Option<std::path::PathBuf>, SiteError> {
    let packed = dir.join(format!("{stem}.json.gz"));
    let plain = dir.join(format!("{stem}.json"));
    match (packed.is_file(), plain.is_file()) {
        (true, true) => Err(SiteError::Data {
            path: plain,
            problem: format!(
                "{} is there too: keep one of them (the runner writes the .json.gz and removes \
                 the plain file it replaces)",
                packed.display()
            ),
        }),
        (true, false) => Ok(Some(packed)),
        (false, true) => Ok(Some(plain)),
        (false, false) => Ok(None),
    }
}

/// The name a file is published under in `data/`: `<stem>.json`, or `<stem>.json.gz` when its
/// bytes are gzip (they are published as they are stored, so a download is the signed file).
pub fn data_name(stem: &str, bytes: &[u8]) -> String {
    if verify::input::is_gzip(bytes) {
        format!("{stem}.json.gz")
    } else {
        format!("{stem}.json")
    }
}

/// Why `verify` refused a file, as the site says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The findings of a report that is not `ok`, as one line: the first five (then how many
    /// more), or a nemesis campaign's first.
    #[error("{0}")]
    Findings(String),
    /// One shard of a nemesis campaign: its rates are of some trials only.
    #[error("it is shard {index} of {count} of a campaign, not the whole campaign; merge every shard with `runner merge --out DIR SHARD.json...` and publish the merged file")]
    Shard {
        /// Which slice, from 1.
        index: u32,
        /// How many slices the campaign was cut into.
        count: u32,
    },
    /// A reference run under a pinned key: its format carries no signatures.
    #[error(
        "the original Python format carries no signatures, so nothing in it is signed by the pinned key ({})",
        verify::cli::code::UNSIGNED_UNDER_PINNED_KEY
    )]
    UnsignedUnderPinnedKey,
    /// The first finding of the original format's check.
    #[error("{path}: {message} ({code})")]
    Original {
        /// JSON path of the value.
        path: String,
        /// The finding's sentence.
        message: String,
        /// Its code.
        code: String,
    },
}

/// The first five findings of a report that is not `ok`, as one line.
fn first_lines(ok: bool, findings: &[impl ToString]) -> Result<(), Refusal> {
    if ok {
        return Ok(());
    }
    let mut lines: Vec<String> = findings.iter().take(5).map(ToString::to_string).collect();
    if findings.len() > 5 {
        lines.push(format!("and {} more", findings.len() - 5));
    }
    Err(Refusal::Findings(lines.join("; ")))
}

/// A billing_credit results file checked by `verify::check::verify_results` (through
/// `verify::figures::billing_credit::check`, which derives its figures beside), with each
/// receipt's report as that check made it.
fn accept_results(file: ResultsFile, key: &KeyCheck) -> Result<Verified, Refusal> {
    let (verified, report) = Verified::checked(file, key);
    first_lines(report.ok, &report.first_findings())?;
    Ok(verified)
}

/// A whole nemesis campaign checked by `verify::nemesis::check::verify_nemesis` (through
/// `verify::figures::nemesis::check`, which derives its figures beside).
fn accept_nemesis(
    file: &NemesisFile,
    key: &KeyCheck,
) -> Result<verify::figures::nemesis::Checked, Refusal> {
    // One slice of a campaign is not the campaign: its rates are of some trials only.
    if let Some(shard) = file.plan.shard {
        return Err(Refusal::Shard {
            index: shard.index,
            count: shard.count,
        });
    }
    let checked = verify::figures::nemesis::check(file, key);
    match checked.report.findings.first() {
        Some(first) => Err(Refusal::Findings(first.to_string())),
        None => Ok(checked),
    }
}

/// A reference run: refused under a pinned key, as `verify --key` refuses it (its format carries
/// no signatures, so nothing in it is signed by that key); otherwise checked by
/// `verify::original::verify_original_results`.
fn accept_reference(value: Value, key: &KeyCheck) -> Result<Value, Refusal> {
    if let KeyCheck::Pinned(_) = key {
        return Err(Refusal::UnsignedUnderPinnedKey);
    }
    let report = verify::original::verify_original_results(&value);
    match report.findings.first() {
        Some(first) => Err(Refusal::Original {
            path: first.path.clone(),
            message: first.message.clone(),
            code: first.code.clone(),
        }),
        None => Ok(value),
    }
}

/// The display summary of one receipt checked by `verify::receipt::verify_bundle`, for a file
/// whose report does not hand over its receipts' reports (shared_cap's, a nemesis trial's);
/// `published` is the key the file names (hex).
pub fn receipt_check(bundle: &ReceiptBundle, key: &KeyCheck, published: &str) -> ReceiptCheck {
    summarize(&verify::receipt::verify_bundle(bundle, key), published)
}

fn yes_no_na(v: Option<bool>, none: &str) -> String {
    v.map_or(none.to_owned(), |b| b.to_string())
}

/// The display summary of a receipt report, each entry's status as `verify` found it;
/// `published` is the key the results file names (hex).
pub fn summarize(r: &ReceiptReport, published: &str) -> ReceiptCheck {
    ReceiptCheck {
        entries: entry_checks(r, published),
        valid: r.valid,
        chain_consistent: r.chain_consistent,
        signed: yes_no_na(r.signed, "unsigned"),
        key_check: r.key.clone(),
        happened: r.happened.to_string(),
        happened_once: r.happened_once.to_string(),
        authorized_when_fired: yes_no_na(r.authorized_when_fired, "n/a (nothing sent)"),
        assumptions_held: yes_no_na(r.assumptions_held, "n/a (nothing sent)"),
        refused: r.refused.as_ref().map(|f| match &f.code {
            Some(code) => format!("{code}: {}", f.reason),
            None => f.reason.clone(),
        }),
        rechecked_at_recovery: r.rechecked_at_recovery.as_ref().map(Value::to_string),
        via: r.via.clone(),
        evidence: r.evidence.as_ref().map(Value::to_string),
        journal_kinds: r.journal_kinds.clone(),
        problems: r.problems.iter().map(ToString::to_string).collect(),
    }
}

/// Per-entry hash, link and signature status, read from the problems `verify` reported for
/// each entry (its check is strict: weak and torsion keys refused, `verify_strict`). An entry
/// is marked only by what `verify` found; when `verify` left problems unlisted (a receipt with
/// very many), no entry is marked good.
fn entry_checks(r: &ReceiptReport, published: &str) -> Vec<EntryCheck> {
    let all_listed = !r
        .problems
        .iter()
        .any(|p| p.code == code::PROBLEMS_NOT_LISTED);
    let found = |i: usize, codes: &[&str]| {
        !all_listed
            || r.problems
                .iter()
                .any(|p| p.entry == Some(i) && codes.contains(&p.code.as_str()))
    };
    let by = match r.key.as_str() {
        "pinned" => "the pinned key",
        _ => "the run's published key",
    };
    let signed_format = r.key != "none";
    let signer_is_published = r.signer.as_deref() == Some(published);
    (0..r.journal_kinds.len())
        .map(|i| {
            let bad_signature = found(i, &[code::BAD_SIGNER, code::WEAK_KEY, code::BAD_SIGNATURE]);
            let other_signer =
                !signer_is_published || found(i, &[code::WRONG_SIGNER, code::MIXED_SIGNERS]);
            let (signature, signature_ok) = match (signed_format, bad_signature, other_signer) {
                (false, _, _) => ("unsigned".to_owned(), false),
                (true, true, _) => ("INVALID".to_owned(), false),
                (true, false, true) => {
                    ("valid, but by a key other than the run's".to_owned(), false)
                }
                (true, false, false) => (format!("valid, by {by}"), true),
            };
            EntryCheck {
                hash_ok: !found(
                    i,
                    &[
                        code::HASH_MISMATCH,
                        code::UNCANONICAL_ENTRY,
                        code::MALFORMED_ENTRY,
                    ],
                ),
                prev_ok: !found(i, &[code::BROKEN_LINK]),
                signature,
                signature_ok,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef01234567";
    const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

    fn origin(commit: Option<&str>, signer: &str) -> Origin {
        Origin {
            commit: commit.map(str::to_owned),
            signer: signer.to_owned(),
        }
    }

    #[test]
    fn a_campaign_of_other_code_is_a_disagreement_where_the_report_joins_them_in_one_verdict() {
        let none = |_: &str| false;
        let (m, c) = (origin(Some(A), "k1"), origin(Some(B), "k2"));
        let why = disagreement(&m, &c, CommitRule::Same, &none).unwrap_or_default();
        assert!(
            why.contains(&format!("made at commit {B} and the matrix at commit {A}")),
            "{why}"
        );
        // Where every page says the campaign's own commit, or a run did not record its commit,
        // or two per-run keys (each run makes its own): nothing to refuse.
        assert_eq!(disagreement(&m, &c, CommitRule::Shown, &none), None);
        let unrecorded = origin(None, "k2");
        assert_eq!(disagreement(&m, &unrecorded, CommitRule::Same, &none), None);
        assert_eq!(
            disagreement(&m, &origin(Some(A), "k2"), CommitRule::Same, &none),
            None
        );
    }

    #[test]
    fn a_stable_key_beside_another_key_in_one_scenario_is_a_disagreement() {
        let project = |k: &str| k == "project";
        let m = origin(Some(A), "project");
        for rule in [CommitRule::Same, CommitRule::Shown] {
            let why =
                disagreement(&m, &origin(Some(A), "per-run"), rule, &project).unwrap_or_default();
            assert!(
                why.contains("one of them is the project's stable key"),
                "{why}"
            );
            assert_eq!(
                disagreement(&m, &origin(Some(A), "project"), rule, &project),
                None
            );
        }
        let both = |_: &str| true;
        let why = disagreement(&m, &origin(Some(A), "other"), CommitRule::Shown, &both)
            .unwrap_or_default();
        assert!(why.contains("each is the project's stable key"), "{why}");
    }
}
