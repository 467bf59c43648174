//! Crash states of the file store, enumerated (DESIGN §2.5): a workload runs with every file
//! operation of the store recorded (`interlock::testing::record`); every crash state the
//! recording allows ([`model`]) is written out and checked by a gate that opens it ([`checks`]).

pub mod checks;
pub mod model;
pub mod threads;
pub mod workloads;
pub mod world;

use checks::Told;
use interlock::testing::record::{Op, Recording};
use model::TearStride;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use workloads::Workload;
use world::World;

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A temporary directory could not be made.
    #[error("could not make a temporary directory: {0}")]
    Temp(#[from] std::io::Error),
    /// Another recording is active in this process.
    #[error(transparent)]
    Recording(#[from] interlock::testing::record::AlreadyRecording),
}

/// A search of one recording stops checking after this many failing states (it still counts
/// the states built).
pub const MAX_FAILURES: usize = 20;

/// One crash state that failed a check.
#[derive(Debug, Clone)]
pub struct Failure {
    /// After how many operations the crash came.
    pub cut: usize,
    /// Which unsynced operations survived.
    pub variant: String,
    /// What failed.
    pub what: Vec<String>,
}

/// What one workload's search found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The workload.
    pub workload: &'static str,
    /// Operations recorded (the store's and the workload's events).
    pub ops: usize,
    /// Crash states built.
    pub states: usize,
    /// Distinct ones among them (each checked once).
    pub distinct: usize,
    /// Answers and acknowledgements the workload was given (none: it did nothing to check).
    pub answers: usize,
    /// The states that failed.
    pub failures: Vec<Failure>,
}

/// Run `w` recorded, then check every crash state of its recording.
pub fn search(w: &Workload, stride: TearStride) -> Result<Report, SearchError> {
    let ops = record(w)?;
    Ok(check_all(w, &ops, stride))
}

/// Run `w` once in a fresh directory with its file operations recorded.
pub fn record(w: &Workload) -> Result<Vec<Op>, SearchError> {
    let dir = tempfile::tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    let world = Arc::new(World::new(w.tier, workloads::first_sends(w), true));
    let recording = Recording::start(&root)?;
    workloads::run(w, &root, world);
    Ok(recording.finish())
}

/// Check every distinct crash state of the recording `ops` of `w`.
pub fn check_all(w: &Workload, ops: &[Op], stride: TearStride) -> Report {
    let mut seen = HashSet::new();
    let mut report = Report {
        workload: w.name,
        ops: ops.len(),
        states: 0,
        distinct: 0,
        answers: 0,
        failures: Vec::new(),
    };
    // The world's events up to each cut.
    let mut told_at = Vec::with_capacity(ops.len() + 1);
    let mut told = Told::default();
    told_at.push(told.clone());
    for op in ops {
        if let Op::Note { text } = op {
            told.take(text);
            if !text.starts_with("land ") {
                report.answers += 1;
            }
        }
        told_at.push(told.clone());
    }
    model::crash_states(ops, stride, &mut |state| {
        report.states += 1;
        if report.failures.len() >= MAX_FAILURES {
            // Enough to replay and read; checking the rest would only take time.
            return;
        }
        let told = &told_at[state.cut];
        let mut h = DefaultHasher::new();
        (&state.files, &state.dirs, told).hash(&mut h);
        if !seen.insert(h.finish()) {
            return;
        }
        report.distinct += 1;
        let failed = match tempfile::tempdir() {
            Ok(dir) => checks::check(w, &state, told, dir.path()),
            Err(e) => vec![format!("could not make a directory for the state: {e}")],
        };
        if !failed.is_empty() {
            report.failures.push(Failure {
                cut: state.cut,
                variant: state.variant.clone(),
                what: failed,
            });
        }
    });
    if report.answers == 0 {
        report.failures.push(Failure {
            cut: ops.len(),
            variant: "the whole recording".into(),
            what: vec![
                "the workload was given no answer and no acknowledgement: it checked nothing"
                    .into(),
            ],
        });
    }
    report
}
