//! A billing_credit campaign's finished trials, kept as they finish in its partial file
//! ([`crate::partial`]) beside where its results go: the file's name, what its header records
//! (the plan with the exposure span the run sized, and the environment), how a resume checks
//! that it continues that campaign, and the words an interruption or a full disk says (where the
//! trials are, and the command that resumes the campaign).
//!
//! The key: every trial's receipt is signed by the run's key and checked against the one key of
//! the final file, so a resumed campaign must sign with the key its finished trials were signed
//! with. A stable key (`--signing-key FILE`, `INTERLOCK_SIGNING_KEY`) outlives the run: a resume
//! given the same key continues. A per-run key ends with its runner (it is never written to
//! disk), so a campaign signed by one cannot be resumed: its partial file still keeps the
//! finished trials, the interruption says so, and a fresh run replaces it.

use super::run_error::NemesisRunError;
use crate::keys::RunKey;
use crate::partial::{Header, PartialError, PartialFile, PARTIAL_FORMAT};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use verify::nemesis::{NemesisPlan, Shard, Trial};
use verify::results::Environment;
use verify::scenarios::Scenario;

/// What a campaign's partial file records as its plan: the campaign's plan (with its exposure
/// span, sized or given) and its environment, which the final file carries unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CampaignRecord {
    /// The plan.
    pub plan: NemesisPlan,
    /// The environment, the command that runs the campaign again among it.
    pub environment: Environment,
}

/// Where the partial file of the campaign (or of its shard) is, in `DIR/nemesis`.
pub(super) fn partial_path(nemesis_dir: &Path, shard: Option<Shard>) -> PathBuf {
    let stem = match shard {
        Some(s) => super::run::shard_file_stem(s),
        None => Scenario::BillingCredit.as_str().to_owned(),
    };
    nemesis_dir.join(format!("{stem}.partial.jsonl"))
}

/// The seed of the campaign whose partial file is at `path` (a resume without `--seed`
/// continues with it); `None` when there is no file.
pub(super) fn recorded_seed(path: &Path) -> Result<Option<u64>, PartialError> {
    Ok(PartialFile::read_header::<serde_json::Value>(path)?.map(|h| h.seed))
}

/// The finished trials of a campaign, kept in its partial file as they finish; the first
/// write that fails stops the campaign (no new trial starts).
#[derive(Debug)]
pub(super) struct Kept {
    file: PartialFile,
    /// How many trials the file holds.
    count: AtomicUsize,
    /// The first append that failed.
    failure: Mutex<Option<PartialError>>,
    /// What to do next, after the file's name: the command that resumes the campaign, or why
    /// it cannot be resumed.
    next: String,
}

impl Kept {
    /// Appends `trial`, at place `at` of the plan; a failure is kept for
    /// [`Kept::take_failure`] and stops further appends.
    pub(super) fn keep(&self, at: usize, trial: &Trial) {
        if self.failed() {
            return;
        }
        match self.file.append(at, &trial.id, trial) {
            Ok(()) => {
                self.count.fetch_add(1, Ordering::SeqCst);
                crate::run::note_kept(Some(self.words()));
            }
            Err(e) => {
                let mut failure = self
                    .failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                failure.get_or_insert(e);
            }
        }
    }

    /// Whether an append failed: no new trial should start.
    pub(super) fn failed(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    /// The first append that failed, if one did.
    pub(super) fn take_failure(&self) -> Option<PartialError> {
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Where the trials are kept, how many, and what to do next, as a clause.
    pub(super) fn words(&self) -> String {
        let n = self.count.load(Ordering::SeqCst);
        format!(
            "{n} finished trial{} kept in {}; {}",
            if n == 1 { " is" } else { "s are" },
            self.file.path().display(),
            self.next
        )
    }

    /// The campaign stopped because `failure` (an append) or `error` (writing `path`) happened:
    /// a full disk is [`NemesisRunError::DiskFull`], naming where and what is kept.
    pub(super) fn stopped_by(&self, path: &Path, error: std::io::Error) -> NemesisRunError {
        if crate::partial::disk_full(&error) {
            NemesisRunError::DiskFull {
                path: path.to_owned(),
                kept: self.words(),
            }
        } else {
            NemesisRunError::Write {
                path: path.to_owned(),
                error,
            }
        }
    }

    /// The append that failed, as the error that stops the campaign.
    pub(super) fn append_failed(&self, failure: PartialError) -> NemesisRunError {
        match failure {
            PartialError::Io { path, source, .. } => self.stopped_by(&path, source),
            other => NemesisRunError::Partial(other),
        }
    }

    /// The final file is written: the partial file goes.
    pub(super) fn finished(self) -> Result<(), PartialError> {
        crate::run::note_kept(None);
        self.file.remove()
    }
}

/// The header a campaign `record` signed by `key` has.
fn header<'a>(record: &'a CampaignRecord, key: &RunKey) -> Header<&'a CampaignRecord> {
    Header {
        format: PARTIAL_FORMAT.to_owned(),
        scenario: Scenario::BillingCredit.as_str().to_owned(),
        seed: record.plan.seed,
        signer: key.public_hex(),
        stable_key: key.is_stable(),
        started: crate::results::now_rfc3339(),
        plan: record,
    }
}

/// What to do next, after an interruption or a full disk: `resume` (the command that
/// continues the campaign) when the key outlives the run, else why it cannot be resumed.
pub(super) fn next_words(key: &RunKey, resume: String) -> String {
    if key.is_stable() {
        format!("continue the campaign with: {resume}")
    } else {
        "they were signed by this run's per-run key, which ends with it, so the campaign cannot \
         be resumed (a campaign started with --signing-key FILE can be)"
            .to_owned()
    }
}

/// Before a fresh campaign runs anything (its calibration included): refuses a partial file at
/// `path` whose campaign can be resumed (a stable key), and removes one whose header was never
/// written whole (it holds no trial). A per-run key's file is replaced by [`create`].
pub(super) fn check_fresh(path: &Path) -> Result<(), NemesisRunError> {
    match PartialFile::read_header::<serde_json::Value>(path) {
        Ok(Some(old)) if old.stable_key => Err(PartialError::Unfinished(path.to_owned()).into()),
        Ok(_) => Ok(()),
        Err(PartialError::TornHeader(_)) => {
            std::fs::remove_file(path).map_err(|source| PartialError::Io {
                action: "replace",
                path: path.to_owned(),
                source,
            })?;
            say!(
                "removed {}: a partial file whose first line was never written whole (it held \
                 no trial)",
                path.display()
            );
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Starts keeping the trials of a fresh campaign at `path`. A partial file already there is
/// refused when its campaign can be resumed (a stable key), and replaced when it cannot (a
/// per-run key).
pub(super) fn create(
    path: &Path,
    record: &CampaignRecord,
    key: &RunKey,
    next: String,
) -> Result<Kept, NemesisRunError> {
    if let Some(old) = PartialFile::read_header::<serde_json::Value>(path)? {
        if old.stable_key {
            return Err(PartialError::Unfinished(path.to_owned()).into());
        }
        std::fs::remove_file(path).map_err(|source| PartialError::Io {
            action: "replace",
            path: path.to_owned(),
            source,
        })?;
        say!(
            "removed {}: the finished trials of an unfinished campaign signed by a per-run key, \
             which cannot be resumed",
            path.display()
        );
    }
    let file = PartialFile::create(path, &header(record, key), key.signing_key())?;
    crate::run::note_kept(None);
    Ok(Kept {
        file,
        count: AtomicUsize::new(0),
        failure: Mutex::new(None),
        next,
    })
}

/// Reopens the partial file at `path` to continue its campaign: `record` is this run's, made
/// the recorded campaign's where a resume may differ (the exposure span it sized when none is
/// given, the jobs and the command that says them) and then required to equal it, with the
/// key ([`PartialFile::resume`]). Returns the trials already finished, at their places in the
/// plan of `ids`.
pub(super) fn resume(
    path: &Path,
    record: &mut CampaignRecord,
    exposure_given: bool,
    key: &RunKey,
    ids: &[String],
    next: String,
) -> Result<(Kept, Vec<(usize, Trial)>), NemesisRunError> {
    let recorded: Header<CampaignRecord> =
        PartialFile::read_header(path)?.ok_or_else(|| PartialError::Missing(path.to_owned()))?;
    let was = &recorded.plan;
    if !exposure_given {
        record.plan.exposure.clone_from(&was.plan.exposure);
    }
    record.environment.jobs = was.environment.jobs;
    record
        .environment
        .command
        .clone_from(&was.environment.command);
    let (file, finished) =
        PartialFile::resume::<_, Trial>(path, &header(record, key), ids, key.signing_key())?;
    let n = finished.cells.len();
    eprintln!(
        "runner: resuming from {}: {n} of {} trials finished{}; running the other {}",
        path.display(),
        ids.len(),
        if finished.dropped_torn_line {
            " (a torn last line was dropped: its trial runs again)"
        } else {
            ""
        },
        ids.len() - n
    );
    let kept = Kept {
        file,
        count: AtomicUsize::new(n),
        failure: Mutex::new(None),
        next,
    };
    crate::run::note_kept(Some(kept.words()));
    Ok((kept, finished.cells))
}
