//! The run's environment in words: its backend, decider, journal and clock start, labelled
//! truthfully, and the line every page of a run carries under its header.

use super::ViewError;
use crate::format::seconds;
use verify::results::ResultsFile;

/// The run's environment, labelled truthfully.
#[derive(Debug, Clone)]
pub struct EnvView {
    /// `emulator` or `stripe_test_mode`.
    pub backend: String,
    /// What the backend was, in words.
    pub backend_label: String,
    /// Where the interlock column's journal was kept, in words.
    pub journal_label: String,
    /// How often the decider was asked, in words (empty for the policy asked per cell).
    pub decide_label: String,
    /// `policy` or `anthropic`.
    pub decider_kind: String,
    /// What decided, in words (names the model only when a model ran).
    pub decider_label: String,
    /// Pinned Stripe API version.
    pub stripe_api_version: String,
    /// When the run finished, as stated in the file.
    pub generated: String,
    /// Git commit of the code that ran.
    pub git_commit: String,
    /// Runner version.
    pub runner_version: String,
    /// Hex ed25519 public key that signed the run's journals and the file's manifest.
    pub signer: String,
    /// Its fingerprint (`verify::fingerprint`), as `verify` prints it.
    pub signer_fingerprint: String,
    /// Per-run key or the project's stable key, in words ([`crate::provenance::signer_label`]).
    pub signer_label: String,
    /// How the signer key was checked: pinned by the build or named by the file.
    pub key: crate::provenance::KeyPolicy,
    /// The `gh attestation verify` command for the published results file.
    pub attest_command: String,
    /// The command that reproduces the run.
    pub command: String,
    /// Seed.
    pub seed: u64,
    /// Worker parallelism.
    pub jobs: u32,
    /// Claim settings in words.
    pub claim: String,
    /// Where the cases' test clocks started, in words ([`clock_start_label`]).
    pub clock_start_label: String,
}

/// Where a run's test clocks started, in words: the recorded instant (RFC 3339 UTC), or, for a
/// file made before clocks had a fixed start, that each started at the wall time of its case.
pub fn clock_start_label(clock_start: Option<i64>) -> String {
    match clock_start {
        Some(s) => match time::OffsetDateTime::from_unix_timestamp(s)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }) {
            Some(text) => text,
            None => format!("Unix time {s}"),
        },
        None => {
            "the wall time its case was opened (this run predates recorded clock starts)".into()
        }
    }
}

/// What a run's backend was, in words; an error for a backend the site does not know.
pub fn backend_words(backend: &str) -> Result<String, ViewError> {
    match backend {
        "emulator" => {
            Ok("the project's Stripe emulator on loopback (not Stripe itself)".to_owned())
        }
        "stripe_test_mode" => Ok("Stripe test mode with test clocks".to_owned()),
        other => Err(ViewError::UnknownBackend(other.to_owned())),
    }
}

/// The line every page of a run carries under its header: what the run ran against and who
/// decided, so that a page's "Stripe" is never read as Stripe itself when it was the emulator.
pub fn ran_line(e: &verify::results::Environment) -> Result<String, ViewError> {
    let decider = match (e.decider.kind.as_str(), e.decider.model.as_deref()) {
        ("anthropic", None) => return Err(ViewError::ModelUnnamed),
        (kind, model) => decider_words(kind, model),
    };
    Ok(format!(
        "Ran against {}; decided by {decider}. Where a page says Stripe, it means that backend.",
        backend_words(&e.backend)?
    ))
}

/// The run's environment, labelled; an error for a backend, decider or journal the site does
/// not know, or a model decider without a model name. `replayed` is how many cells replayed
/// another cell's decision, as `verify` counted them.
pub(super) fn env_view(f: &ResultsFile, replayed: u32) -> Result<EnvView, ViewError> {
    let e = &f.environment;
    let backend_label = backend_words(&e.backend)?;
    let decider_label = match e.decider.kind.as_str() {
        "policy" => decider_words("policy", None),
        "anthropic" => match &e.decider.model {
            Some(m) => decider_words("anthropic", Some(m)),
            None => return Err(ViewError::ModelUnnamed),
        },
        other => return Err(ViewError::UnknownDecider(other.to_owned())),
    };
    let decide_label = match (replayed, e.decider.kind.as_str()) {
        (0, "policy") => String::new(),
        (0, _) => " It was asked in every cell, so a difference between columns may come from it.".into(),
        (n, _) => format!(
            " It was asked once per row; the row's other columns replayed that decision with their own case's ids ({n} cells, each naming the cell that decided)."
        ),
    };
    let journal_label = match e.journal.as_deref() {
        None => "one signed JSONL file per cell, on this machine".to_owned(),
        Some("postgresql") => {
            "PostgreSQL, one schema for the run shared by every worker (`--journal`)".to_owned()
        }
        Some(other) => return Err(ViewError::UnknownJournal(other.to_owned())),
    };
    let c = &e.claim;
    Ok(EnvView {
        journal_label,
        decide_label,
        backend: e.backend.clone(),
        backend_label,
        decider_kind: e.decider.kind.clone(),
        decider_label,
        stripe_api_version: e.stripe_api_version.clone(),
        generated: f.generated.clone(),
        git_commit: e.git_commit.clone().unwrap_or_else(|| "unknown".into()),
        runner_version: e.runner_version.clone(),
        signer: e.signer.clone(),
        signer_fingerprint: verify::entry::decode_lower_hex::<32>(&e.signer)
            .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
            .map_or_else(|| "no valid key".into(), |k| verify::fingerprint(&k)),
        // Filled by the build, which knows the results directory and the repository.
        signer_label: String::new(),
        key: crate::provenance::KeyPolicy::SelfAttested,
        attest_command: String::new(),
        command: e.command.clone(),
        seed: e.seed,
        jobs: e.jobs,
        clock_start_label: clock_start_label(e.clock_start),
        claim: format!(
            "max in flight {}, claim TTL backstop {}, dedup window {}, dedup margin {}",
            seconds(c.max_in_flight_ms),
            seconds(c.claim_ttl_ms),
            seconds(c.dedup_window_ms),
            seconds(c.dedup_margin_ms)
        ),
    })
}

/// The decider in words; a model is named only when one ran.
pub fn decider_words(kind: &str, model: Option<&str>) -> String {
    match (kind, model) {
        ("anthropic", Some(m)) => format!("model {m} (Anthropic Messages API)"),
        ("policy", _) => "the deterministic policy decider (no model)".to_owned(),
        (other, _) => format!("decider {other}"),
    }
}
