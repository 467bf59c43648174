//! A recording of the file store's operations (DESIGN §2.5), for the search of its crash states:
//! while a [`Recording`] is active, every write, truncation, sync, creation, rename and removal
//! the store makes under the recording's root is logged, in the order the calls happen (each is
//! made and logged under one lock), with the workload's own events ([`note`]) between them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One operation, its paths relative to the recording's root.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A file was created (by an open that created it).
    Create {
        /// The file.
        path: String,
    },
    /// An existing file was opened (no change to what a crash leaves; kept for reading a
    /// recording).
    Open {
        /// The file.
        path: String,
    },
    /// An exclusive `flock` was taken on the file (no change to what a crash leaves).
    Lock {
        /// The file.
        path: String,
    },
    /// `bytes` were written at offset `at`.
    Write {
        /// The file.
        path: String,
        /// The offset.
        at: u64,
        /// What was written.
        bytes: Vec<u8>,
    },
    /// The file was cut (or extended) to `len` bytes.
    SetLen {
        /// The file.
        path: String,
        /// The new length.
        len: u64,
    },
    /// The file's data was made durable (`fsync` or `fdatasync`).
    Sync {
        /// The file.
        path: String,
    },
    /// A directory's entries were made durable.
    SyncDir {
        /// The directory (`""` for the root itself).
        dir: String,
    },
    /// `from` was renamed to `to`, replacing it.
    Rename {
        /// The old name.
        from: String,
        /// The new name.
        to: String,
    },
    /// The file was removed.
    Remove {
        /// The file.
        path: String,
    },
    /// A directory was created.
    Mkdir {
        /// The directory.
        path: String,
    },
    /// An event of the workload (a send that landed, an answer given), in its own words.
    Note {
        /// The event.
        text: String,
    },
}

struct Log {
    root: PathBuf,
    ops: Vec<Op>,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static SYNCS_OFF: AtomicBool = AtomicBool::new(false);

/// Make every sync of the file store a no-op (`true`) or real again (`false`): for benchmarks
/// that measure the store against its ceiling without durability, in the same run. Never for a
/// gate anyone relies on: nothing it writes survives a power loss.
pub fn skip_syncs(off: bool) {
    SYNCS_OFF.store(off, Ordering::SeqCst);
}

/// Whether syncs are skipped (see [`skip_syncs`]).
pub(crate) fn syncs_skipped() -> bool {
    SYNCS_OFF.load(Ordering::Relaxed)
}
static LOG: Mutex<Option<Log>> = Mutex::new(None);

fn log() -> MutexGuard<'static, Option<Log>> {
    LOG.lock().unwrap_or_else(|p| p.into_inner())
}

/// An active recording; [`Recording::finish`] (or dropping it) ends it. One at a time per
/// process.
#[derive(Debug)]
pub struct Recording {
    _private: (),
}

/// Why a recording could not start.
#[derive(Debug, thiserror::Error)]
#[error("a recording of file operations is already active in this process")]
pub struct AlreadyRecording;

impl Recording {
    /// Record the operations under `root` (give it canonical: paths are matched as given).
    pub fn start(root: &Path) -> Result<Recording, AlreadyRecording> {
        let mut log = log();
        if log.is_some() {
            return Err(AlreadyRecording);
        }
        *log = Some(Log {
            root: root.to_owned(),
            ops: Vec::new(),
        });
        ACTIVE.store(true, Ordering::SeqCst);
        Ok(Recording { _private: () })
    }

    /// End the recording and return its operations, in order.
    pub fn finish(self) -> Vec<Op> {
        take()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = take();
    }
}

fn take() -> Vec<Op> {
    let mut log = log();
    ACTIVE.store(false, Ordering::SeqCst);
    log.take().map(|l| l.ops).unwrap_or_default()
}

/// Log a workload's event (a send that landed, an answer given) between the store's operations.
pub fn note(text: impl Into<String>) {
    if let Some(l) = log().as_mut() {
        l.ops.push(Op::Note { text: text.into() });
    }
}

/// Whether a recording is active.
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

fn relative_to(root: &Path, path: &Path) -> Option<String> {
    path.strip_prefix(root)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// `path` relative to the active recording's root, if it is under it.
pub(crate) fn relative(path: &Path) -> Option<String> {
    let log = log();
    relative_to(&log.as_ref()?.root, path)
}

/// Make `call` and log `op` of it (when it succeeded and `path` is under the root), under the
/// log's lock so that the log's order is the calls' order.
pub(crate) fn around<R>(
    path: &Path,
    call: impl FnOnce() -> std::io::Result<R>,
    op: impl FnOnce(String) -> Op,
) -> std::io::Result<R> {
    around_maybe(path, call, |p, _| Some(op(p)))
}

/// [`around`], for a call that logs an operation only sometimes (depending on what it
/// returned, or on what was there before).
pub(crate) fn around_maybe<R>(
    path: &Path,
    call: impl FnOnce() -> std::io::Result<R>,
    op: impl FnOnce(String, &R) -> Option<Op>,
) -> std::io::Result<R> {
    let mut log = log();
    let rel = log.as_ref().and_then(|l| relative_to(&l.root, path));
    let out = call();
    if let (Some(l), Some(rel), Ok(r)) = (log.as_mut(), rel, &out) {
        if let Some(op) = op(rel, r) {
            l.ops.push(op);
        }
    }
    out
}
