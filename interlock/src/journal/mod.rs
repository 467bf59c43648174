//! The journal: one JSONL file of signed entries of every effect, interleaved (DESIGN §2.5).
//!
//! - Every append is fsynced before it returns. If the write or the fsync fails, the line is cut
//!   back and the journal refuses further appends until it is reopened (and so re-read and
//!   re-checked): a line that may or may not survive a crash is never reported "not written"
//!   and then acted on.
//! - Appends (and the dispatch step of the gate) run under an exclusive `flock` on the journal
//!   file itself, taken on a descriptor of its own, so every spelling of the path (a symlink, a
//!   relative path) is excluded alike; threads of one process queue on a mutex, and the process
//!   holds the `flock` while any of them is in a section or has a line not yet durable. The wait
//!   for the lock is bounded: past it the caller gets [`JournalError::Busy`] (recovery reports it
//!   as `Blocked`).
//! - **Group commit** among the threads of one process: an append indexes its line and writes
//!   its intent, then a leader fsyncs the marks once, writes every waiting line, fsyncs the
//!   journal once and marks them; each appender returns only after the fsync that covered its
//!   line. Across processes nothing is shared: each holds the `flock` for its own fsyncs.
//! - A last line without a trailing newline is a write that never returned: it is ignored on read
//!   and cut off before the next append — only when the bytes cut hold no newline.
//! - **The gate acts only on lines it has checked.** Every line read, at open and when catching up
//!   with other processes, must recompute its `hash`, link its `prev` to the effect's last hash,
//!   name a trusted `signer` and carry a valid signature (verified in one batch per read), or the
//!   journal is corrupt at that line: the error names it, the journal refuses all further use
//!   until reopened, and no effect is acted on. A replayed or merged old line therefore cannot
//!   reopen a settled effect.
//! - Appends cost O(1) in the journal's size: the journal keeps an index (per effect: entry
//!   offsets, last hash, derived state) and, on each lock acquisition, reads only the bytes other
//!   processes appended since it last looked.
//!
//! An effect's state, and the check of each entry as the next link of its chain, are in
//! `state`.

use crate::fsio;
use crate::marks::Marks;
use crate::sync::{Condvar, Mutex, MutexGuard};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use verify::budget::Counted;
use verify::canonical::CanonicalError;
use verify::entry::{seal, Kind, ENTRY_VERSION};

mod state;

pub(crate) use state::EffectState;

/// Fields the journal writes itself; a caller's fields may not set them.
const RESERVED_FIELDS: [&str; 8] = [
    "v",
    "ts_ms",
    "kind",
    "effect_id",
    "prev",
    "signer",
    "hash",
    "sig",
];

/// Why the journal could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A file operation failed.
    #[error("could not {action} {path}: {source}")]
    Io {
        /// What was being done ("open", "read", "append to", "lock", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A complete line in the journal is not a valid, checked entry.
    #[error("{path}, line {line}: corrupt journal entry: {reason}")]
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number (0 when the place is not a line).
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The journal became shorter than what was already read: someone removed written entries.
    #[error(
        "{path} shrank from {known} to {found} bytes while open: written entries were removed"
    )]
    Shrunk {
        /// The journal file.
        path: PathBuf,
        /// Bytes already read.
        known: u64,
        /// Current size.
        found: u64,
    },
    /// An entry could not be put in canonical form (a float or an out-of-range integer).
    #[error("cannot write a {kind} entry for effect {effect_id}: {source}")]
    Canonical {
        /// The entry kind.
        kind: &'static str,
        /// The effect.
        effect_id: String,
        /// The canonical-form error.
        source: CanonicalError,
    },
    /// A caller's fields tried to set a field the journal writes itself.
    #[error("cannot write a {kind} entry for effect {effect_id}: field `{field}` is set by the journal, not by the caller")]
    ReservedField {
        /// The entry kind.
        kind: &'static str,
        /// The effect.
        effect_id: String,
        /// The field.
        field: String,
    },
    /// The database failed or could not be reached.
    #[error("{what}: {detail}")]
    Database {
        /// What was being done, naming the database (without credentials).
        what: String,
        /// The database's or the driver's error.
        detail: String,
    },
    /// Another process held the journal lock for longer than the configured wait.
    #[error("{path}: another process has held the journal lock for over {waited_ms} ms")]
    Busy {
        /// The journal file.
        path: PathBuf,
        /// How long this process waited.
        waited_ms: u64,
    },
    /// The journal is behind its high-water marks (DESIGN §2.5): entries it once held are gone
    /// or were replaced — an older copy restored, the file emptied or rewritten.
    #[error("{path}: the journal was rolled back: effect {effect_id} is missing its entry {hash}: {why}; restore the journal's latest copy (a rollback can resend what was settled)")]
    RolledBack {
        /// The marks file.
        path: PathBuf,
        /// The effect whose entry is missing.
        effect_id: String,
        /// The hash of the missing entry (the first one, in journal order).
        hash: String,
        /// How the journal differs from its marks.
        why: String,
    },
    /// More than one journal entry was never marked: they were not appended by a gate of this
    /// journal (chains merged in from elsewhere), or the marks file lost lines.
    #[error("{path}: {count} journal entries have no mark, from entry {hash} of effect {effect_id} on: they were not appended here (merged in from elsewhere?); remove them or restore the journal's own copy")]
    Unmarked {
        /// The marks file.
        path: PathBuf,
        /// The effect of the first unmarked entry.
        effect_id: String,
        /// The first unmarked entry's hash.
        hash: String,
        /// How many entries have no mark.
        count: usize,
    },
    /// The journal file can be reached by another name that its claims and marks do not follow
    /// (a hard link, or the file bind-mounted over another path): two gates opened through two
    /// names would share the journal lock but not the claims, and could both send.
    #[error("{path}: the journal file {why}; its claims and marks are placed by its path, so a gate opened through another name would not see them: {fix}")]
    OtherName {
        /// The journal file, as given.
        path: PathBuf,
        /// What gives it another name.
        why: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// An earlier failure left the journal in a state this handle can no longer vouch for.
    #[error("{path}: refusing to use the journal until it is reopened: {reason}")]
    Poisoned {
        /// The journal file.
        path: PathBuf,
        /// The earlier failure.
        reason: String,
    },
}

pub(crate) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Refuse a journal file that another name reaches without its claims and marks (DESIGN §2.5):
/// one with more than one hard link, or one that is itself a mount point (a file bind-mounted
/// over another path). A directory bind-mounted elsewhere is fine: the claims and marks beside
/// the journal come along with it.
pub(crate) fn check_one_name(file: &File, path: &Path) -> Result<(), JournalError> {
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if meta.nlink() > 1 {
        return Err(JournalError::OtherName {
            path: path.to_owned(),
            why: format!("has {} hard links", meta.nlink()),
            fix: "remove the other links (hard-link backups must copy the journal instead)",
        });
    }
    let attrs = rustix::fs::statx(
        file,
        "",
        rustix::fs::AtFlags::EMPTY_PATH,
        rustix::fs::StatxFlags::empty(),
    );
    // A kernel without statx, or without the mount-root attribute, cannot tell; hard links are
    // still refused above.
    if let Ok(x) = attrs {
        let root = rustix::fs::StatxAttributes::MOUNT_ROOT;
        if x.stx_attributes_mask.contains(root) && x.stx_attributes.contains(root) {
            return Err(JournalError::OtherName {
                path: path.to_owned(),
                why: "is a mount point (a file bind-mounted over this path)".into(),
                fix: "bind-mount the directory that holds the journal instead of the file",
            });
        }
    }
    Ok(())
}

/// Where one entry sits: its byte offset and length in the file, or (PostgreSQL) its row's
/// sequence number in `offset`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryLoc {
    pub offset: u64,
    pub len: u32,
    /// The first 8 bytes of the entry's checked hash (set when it is indexed): a re-read entry
    /// must recompute to the hash it was checked with, so bytes edited in place after the check
    /// (same length, same file) are never acted on.
    pub tag: u64,
}

fn hash_tag(hash: &str) -> u64 {
    hash.get(..16)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}

/// Check an entry read back from the store against what was checked when it was indexed: its
/// hash recomputes and is the indexed one.
pub(crate) fn reread_matches(entry: &Map<String, Value>, loc: EntryLoc) -> bool {
    let Some(hash) = entry.get("hash").and_then(Value::as_str) else {
        return false;
    };
    hash_tag(hash) == loc.tag
        && verify::entry::compute_hash(entry).is_ok_and(|computed| computed == hash)
}

/// A signature still to be verified, and the line it came from.
pub(crate) struct PendingSig {
    line: u64,
    key: VerifyingKey,
    message: Vec<u8>,
    sig: Signature,
}

/// What a journal store knows about its entries: per effect, where its entries are and the state
/// they derive, built only from lines that passed every check. Shared by both stores.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Lines (or rows) already indexed (for numbering).
    pub lines: u64,
    effects: HashMap<String, EffectState>,
    /// Effect ids in first-seen order.
    order: Vec<String>,
    /// Per budget id, every effect ever dispatched against it.
    by_budget: HashMap<String, BTreeSet<String>>,
    /// Set by a failure after which this handle no longer vouches for the store.
    pub poisoned: Option<String>,
}

impl Index {
    /// Check one entry read from the store (signer trusted, hash, chain, state transition) and
    /// fold it in; returns its signature, still to be verified (in a batch by the caller).
    pub(crate) fn ingest(
        &mut self,
        entry: &Map<String, Value>,
        loc: EntryLoc,
        trusted: &[VerifyingKey],
    ) -> Result<PendingSig, String> {
        let (sig, eid) = read_check(entry, trusted, self.lines + 1)?;
        self.fold(eid, entry, loc)?;
        Ok(sig)
    }

    /// Fold an entry of `eid` into its effect's state (checking hash, chain and transition).
    pub(crate) fn fold(
        &mut self,
        eid: &str,
        entry: &Map<String, Value>,
        loc: EntryLoc,
    ) -> Result<(), String> {
        let state = match self.effects.get_mut(eid) {
            Some(s) => s,
            None => {
                self.order.push(eid.to_owned());
                self.effects.entry(eid.to_owned()).or_default()
            }
        };
        state.apply(entry, loc)?;
        if let Some(b) = &state.admitted_budget {
            let effects = self.by_budget.entry(b.id.clone()).or_default();
            if !effects.contains(eid) {
                effects.insert(eid.to_owned());
            }
        }
        Ok(())
    }

    /// Every effect of budget `id` other than `except` that holds a reservation of it
    /// ([`EffectState::budget_held`]), with the amount it holds, in effect-id order.
    pub(crate) fn budget_holders(&self, id: &str, except: &str) -> Vec<Counted> {
        let Some(effects) = self.by_budget.get(id) else {
            return Vec::new();
        };
        effects
            .iter()
            .filter(|e| e.as_str() != except)
            .filter_map(|e| {
                let held = self.effects.get(e)?.budget_held()?;
                (held.id == id).then(|| Counted {
                    effect_id: e.clone(),
                    amount: held.amount,
                })
            })
            .collect()
    }

    /// What the index knows about one effect.
    pub fn state(&self, effect_id: &str) -> Option<&EffectState> {
        self.effects.get(effect_id)
    }

    /// The effect's last hash and latest timestamp (for the next append).
    pub(crate) fn tip(&self, effect_id: &str) -> (Option<String>, u64) {
        self.effects
            .get(effect_id)
            .map_or((None, 0), |s| (s.last_hash.clone(), s.last_ts))
    }

    /// Where the `index`-th entry of an effect is.
    pub(crate) fn loc(&self, effect_id: &str, index: usize) -> Option<EntryLoc> {
        self.effects
            .get(effect_id)
            .and_then(|s| s.entries.get(index))
            .copied()
    }

    /// How many entries an effect has.
    pub(crate) fn count(&self, effect_id: &str) -> usize {
        self.effects.get(effect_id).map_or(0, |s| s.entries.len())
    }

    /// Effect ids with an open dispatch, in first-seen order.
    pub fn open_effects(&self) -> Vec<String> {
        self.order
            .iter()
            .filter(|e| self.effects.get(*e).is_some_and(|s| s.open.is_some()))
            .cloned()
            .collect()
    }

    /// Every effect id, in first-seen order.
    pub fn effect_ids(&self) -> Vec<String> {
        self.order.clone()
    }
}

/// A line indexed (and its intent written) but not yet written to the file: the next group
/// commit writes it.
struct Queued {
    /// Where it goes in the file.
    offset: u64,
    /// The line, newline included.
    bytes: Vec<u8>,
    hash: String,
    effect_id: String,
    /// Its durability request: the line may be written once the marks sync that covers this
    /// request has ended (its intent is then durable).
    ticket: u64,
}

struct Inner {
    file: File,
    /// Bytes of complete lines indexed: those in the file and those still queued.
    len: u64,
    /// Bytes of complete lines written to the file (`len` minus the queued lines).
    on_disk: u64,
    /// Lines indexed but not yet written, in order (each at the offset it will be written at).
    queue: VecDeque<Queued>,
    index: Index,
    /// The high-water marks, opened at the first lock (they may have to be created under it).
    marks: Option<Marks>,
    /// The descriptor holding the journal's `flock` for this process, while any of its threads
    /// is inside a section or has a line that is not yet durable.
    flock: Option<File>,
    /// Sections (of any thread of this process) that hold the journal lock right now.
    holders: usize,
    /// Durability requests made (one per append or claim-record mark), the last one whose
    /// marks (an append's intent, a claim record's mark) a completed marks sync covered, and
    /// the last one a completed group commit covered (its line written and fsynced too).
    requested: u64,
    marks_synced: u64,
    durable: u64,
    /// A thread is syncing the marks (the first stage of a group commit).
    syncing_marks: bool,
    /// A thread is writing and fsyncing lines whose marks are synced (the second stage). The
    /// two stages of consecutive group commits overlap: one batch's marks sync while the batch
    /// before it is written and fsynced.
    writing: bool,
    /// The last request of the batch the second stage is writing (while `writing`): its
    /// outcome, not another stage's failure meanwhile, answers the appenders of that batch.
    writing_batch: u64,
    /// The appenders of this process waiting for a group commit, each with its request and the
    /// condition it sleeps on: a stage's end wakes those it made durable and, if a stage is
    /// free and has work, the one with the earliest request to lead it, not all of them.
    sleepers: Vec<(u64, Arc<Condvar>)>,
    /// A thread is waiting for the `flock` (with the mutex let go); the others wait for it.
    acquiring: bool,
    /// Per effect, the durability request of its last queued line or claim-record mark, while
    /// not yet covered: a section of that effect waits for it before it reads the effect, so no
    /// answer rests on a line a crash could still take away.
    pending: HashMap<String, u64>,
    /// Waits for a group commit begun so far (for tests that order threads by them).
    #[cfg(test)]
    waits: usize,
}

/// A journal file opened for reading and appending.
pub struct Journal {
    path: PathBuf,
    canonical: PathBuf,
    identity: (u64, u64),
    trusted: Vec<VerifyingKey>,
    lock_wait: Duration,
    /// A second descriptor of the journal file, for the group commit's fsync outside `inner`.
    sync_file: File,
    inner: Mutex<Inner>,
    /// Signalled when a group commit ends, or an attempt to take the `flock` does.
    committed: Condvar,
    /// Called by a group commit's leader while it syncs the marks, its mutex let go (for tests
    /// that order threads around that instant).
    #[cfg(test)]
    on_marks_sync: Mutex<Option<SyncHook>>,
    /// Called by a group commit's second stage before it fsyncs the journal, its mutex let go.
    #[cfg(test)]
    on_journal_sync: Mutex<Option<SyncHook>>,
    /// Makes the next marks sync fail (for tests of a stage failing while another runs).
    #[cfg(test)]
    fail_next_marks_sync: std::sync::atomic::AtomicBool,
    /// Makes that many of the next sleeps of appenders end at once, without a wakeup, as a
    /// condition variable's wait may (for tests of the sleepers' list).
    #[cfg(test)]
    spurious_wakeups: std::sync::atomic::AtomicUsize,
}

/// See [`Journal::on_marks_sync`].
#[cfg(test)]
type SyncHook = Box<dyn Fn(&Journal) + Send>;

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

impl Journal {
    /// Open (creating if missing) the journal at `path` and index every entry in it, checking
    /// each line (hash, `prev`, a signer among `trusted`, signature). `lock_wait` bounds every
    /// wait for the journal lock.
    pub fn open(
        path: &Path,
        trusted: Vec<VerifyingKey>,
        lock_wait: Duration,
    ) -> Result<Journal, JournalError> {
        let existed = path.exists();
        let file = fsio::open(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
            path,
        )
        .map_err(io_err("open", path))?;
        if !existed {
            // Make the new file's directory entry durable too.
            fsio::sync_parent(path);
        }
        let meta = file.metadata().map_err(io_err("inspect", path))?;
        check_one_name(&file, path)?;
        let canonical = std::fs::canonicalize(path).map_err(io_err("resolve the path of", path))?;
        let sync_file = file.try_clone().map_err(io_err("open again", path))?;
        let journal = Journal {
            path: path.to_owned(),
            canonical,
            identity: (meta.dev(), meta.ino()),
            trusted,
            lock_wait,
            sync_file,
            inner: Mutex::new(Inner {
                file,
                len: 0,
                on_disk: 0,
                queue: VecDeque::new(),
                index: Index::default(),
                marks: None,
                flock: None,
                holders: 0,
                requested: 0,
                marks_synced: 0,
                durable: 0,
                syncing_marks: false,
                writing: false,
                writing_batch: 0,
                sleepers: Vec::new(),
                acquiring: false,
                pending: HashMap::new(),
                #[cfg(test)]
                waits: 0,
            }),
            committed: Condvar::new(),
            #[cfg(test)]
            on_marks_sync: Mutex::new(None),
            #[cfg(test)]
            on_journal_sync: Mutex::new(None),
            #[cfg(test)]
            fail_next_marks_sync: std::sync::atomic::AtomicBool::new(false),
            #[cfg(test)]
            spurious_wakeups: std::sync::atomic::AtomicUsize::new(0),
        };
        drop(journal.lock(None)?);
        Ok(journal)
    }

    /// Append one entry `{v, ts_ms, kind, effect_id, <fields>, prev}` sealed with `key` (prev is
    /// the effect's last hash), fsynced before returning. Low level: it checks nothing about the
    /// effect's state — [`Gate`](crate::Gate) is the normal writer. `fields` may not set the
    /// fields the journal writes (`v`, `ts_ms`, `kind`, `effect_id`, `prev`, `signer`, `hash`,
    /// `sig`). Returns the sealed entry. Threads appending at once share fsyncs (group commit).
    pub fn append_entry(
        &self,
        effect_id: &str,
        kind: Kind,
        fields: Map<String, Value>,
        ts_ms: u64,
        key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        self.lock(Some(effect_id))?
            .append(effect_id, kind, fields, ts_ms, key)
    }

    /// Every entry of one effect, in journal order, exactly as stored.
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, JournalError> {
        self.lock(Some(effect_id))?.entries(effect_id)
    }

    /// Every effect id, in first-seen order.
    pub fn effect_ids(&self) -> Result<Vec<String>, JournalError> {
        Ok(self.lock(None)?.index().effect_ids())
    }

    /// The journal file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The journal file's canonical path (symlinks and relative parts resolved at open).
    pub fn canonical_path(&self) -> &Path {
        &self.canonical
    }

    fn index(&self) -> MutexGuard<'_, Inner> {
        // A poisoned mutex only means another thread panicked while holding it; the index is
        // only updated after the bytes it describes were read or durably written.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take the journal lock: unless another thread of this process holds it already, the
    /// `flock` on a fresh descriptor of the journal file, waited for at most the configured
    /// bound counted from this call (however many threads of the process wait too), with this
    /// process's mutex let go meanwhile (one thread tries for the `flock`, the others wait for
    /// it; lock-free readers go on); then read and check what other processes appended since. Then wait until what this process queued for `effect` is
    /// durable (for `None`, what it had queued on arrival; see [`owed`]): another thread's line
    /// may be indexed and not yet written, and an answer that writes nothing (a duplicate, a
    /// status) must not rest on it.
    pub(crate) fn lock(&self, effect: Option<&str>) -> Result<Locked<'_>, JournalError> {
        let started = Instant::now();
        let mut inner = self.index();
        loop {
            if inner.flock.is_some() {
                // Held on by another thread's section: the path must still name the file
                // opened, as each fresh acquisition checks.
                let meta = std::fs::metadata(&self.path).map_err(io_err("inspect", &self.path))?;
                if (meta.dev(), meta.ino()) != self.identity {
                    return Err(JournalError::Poisoned {
                        path: self.path.clone(),
                        reason: "the path now names a different file than the one opened (replaced or moved)"
                            .into(),
                    });
                }
                break;
            }
            if !inner.acquiring {
                // This thread waits for the `flock` with the mutex let go: readers of this
                // process go on meanwhile, and its other threads wait for this acquisition
                // rather than start their own.
                inner.acquiring = true;
                drop(inner);
                let taken = self.take_file_lock(started);
                inner = self.index();
                inner.acquiring = false;
                self.committed.notify_all();
                inner.flock = Some(taken?);
                break;
            }
            // Another thread of this process is acquiring it: wait for that, within this
            // call's own bound (it may fail, and this thread then tries with what is left).
            let left = self.lock_wait.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(self.busy(started));
            }
            inner = match self.committed.wait_timeout(inner, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        inner.holders += 1;
        let mut locked = Locked {
            hold: Hold {
                journal: self,
                guard: Some(inner),
            },
            locked: true,
            path: &self.path,
            trusted: &self.trusted,
        };
        if locked.hold.marks.is_none() {
            locked.hold.marks = Some(Marks::open(&self.canonical)?);
        }
        locked.refresh()?;
        let owed_on_arrival = locked.hold.requested;
        loop {
            if owed(&locked.hold, effect, owed_on_arrival) <= locked.hold.durable {
                return Ok(locked);
            }
            locked.wait_durable(owed(&locked.hold, effect, owed_on_arrival))?;
        }
    }

    /// Read, without the journal lock, what was appended since the last look (complete lines
    /// only, each checked as under the lock), and return a view of the index. Never waits for
    /// another process's lock: for [`Gate::status`](crate::Gate::status) and other readers.
    pub(crate) fn view(&self, effect: Option<&str>) -> Result<Locked<'_>, JournalError> {
        let inner = self.index();
        let mut view = Locked {
            hold: Hold {
                journal: self,
                guard: Some(inner),
            },
            locked: false,
            path: &self.path,
            trusted: &self.trusted,
        };
        view.refresh()?;
        // A reader sees only what is durable of what it reads: wait for the group commits under
        // way (it never leads one: it holds no lock), as a section does.
        let owed_on_arrival = view.hold.requested;
        loop {
            if view.hold.durable >= owed(&view.hold, effect, owed_on_arrival) {
                break;
            }
            if let Some(e) = view.poisoned() {
                return Err(e);
            }
            view.hold.wait_for_commit();
        }
        Ok(view)
    }

    /// Call a test's hook (one of [`Journal::on_marks_sync`], [`Journal::on_journal_sync`]), if
    /// it set one.
    #[cfg(test)]
    fn call_hook(&self, hook: &Mutex<Option<SyncHook>>) {
        if let Some(hook) = hook.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            hook(self);
        }
    }

    /// The journal lock was not had within the bound, counted from `started`.
    fn busy(&self, started: Instant) -> JournalError {
        JournalError::Busy {
            path: self.path.clone(),
            waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The `flock` on a fresh descriptor, tried until the bound counted from `started` (when
    /// the caller asked for the journal lock) runs out.
    fn take_file_lock(&self, started: Instant) -> Result<File, JournalError> {
        let file = fsio::open(OpenOptions::new().read(true), &self.path)
            .map_err(io_err("open for locking", &self.path))?;
        let meta = file.metadata().map_err(io_err("inspect", &self.path))?;
        if (meta.dev(), meta.ino()) != self.identity {
            return Err(JournalError::Poisoned {
                path: self.path.clone(),
                reason:
                    "the path now names a different file than the one opened (replaced or moved)"
                        .into(),
            });
        }
        check_one_name(&file, &self.path)?;
        let mut nap = Duration::from_millis(1);
        loop {
            match fsio::try_lock(&file, &self.path) {
                Ok(()) => return Ok(file),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => return Err(io_err("lock", &self.path)(e)),
            }
            let waited = started.elapsed();
            if waited >= self.lock_wait {
                return Err(self.busy(started));
            }
            crate::sync::nap(nap.min(self.lock_wait.saturating_sub(waited)));
            nap = (nap * 2).min(Duration::from_millis(50));
        }
    }
}

/// The durability request a section (or reader) of `effect` waits for before it reads.
/// For one effect: the request of its last queued line, asked again after every wait (the
/// mutex is let go while waiting, and another thread may meanwhile queue a later line of the
/// effect, such as its COMMITTED, that the commit waited for did not cover); an effect has a
/// handful of lines, so this ends. For the whole journal (`None`): what was requested when the
/// section arrived, so that threads appending without pause cannot keep it waiting; what is
/// queued during its wait is waited for by whoever then reads that effect.
fn owed(inner: &Inner, effect: Option<&str>, owed_on_arrival: u64) -> u64 {
    match effect {
        Some(e) => inner.pending.get(e).copied().unwrap_or(0),
        None => owed_on_arrival,
    }
}

/// This process's hold of the journal's state: the mutex guard, let go only while a group
/// commit waits for an fsync (see [`Locked::wait_durable`]).
struct Hold<'a> {
    journal: &'a Journal,
    /// `None` only inside [`Hold::unlocked`], which puts it back before returning.
    guard: Option<MutexGuard<'a, Inner>>,
}

impl std::ops::Deref for Hold<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        match &self.guard {
            Some(g) => g,
            None => unreachable!("the journal's guard is put back before anything reads it"),
        }
    }
}

impl std::ops::DerefMut for Hold<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        match &mut self.guard {
            Some(g) => g,
            None => unreachable!("the journal's guard is put back before anything reads it"),
        }
    }
}

impl Hold<'_> {
    /// Run `f` with this process's mutex let go (other threads' sections may run meanwhile;
    /// other processes stay excluded by the `flock`), then take it back.
    fn unlocked<R>(&mut self, f: impl FnOnce() -> R) -> R {
        drop(self.guard.take());
        let out = f();
        self.guard = Some(self.journal.index());
        out
    }

    /// Sleep, the mutex let go, until a stage's end wakes this appender of request `ticket`
    /// (see [`Hold::wake_after_stage`]).
    fn sleep(&mut self, ticket: u64) {
        if let Some(mut g) = self.guard.take() {
            #[cfg(test)]
            {
                g.waits += 1;
            }
            let wake = Arc::new(Condvar::new());
            g.sleepers.push((ticket, Arc::clone(&wake)));
            #[cfg(test)]
            let spurious = self
                .journal
                .spurious_wakeups
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok();
            #[cfg(not(test))]
            let spurious = false;
            let mut g = if spurious {
                g
            } else {
                wake.wait(g).unwrap_or_else(|p| p.into_inner())
            };
            // Gone already if it was woken; not if the wait ended spuriously.
            g.sleepers.retain(|(_, c)| !Arc::ptr_eq(c, &wake));
            self.guard = Some(g);
        }
    }

    /// After a stage of a group commit ends: wake every sleeping appender whose request is now
    /// durable (all of them if the journal is poisoned) and, if a stage is free and has work,
    /// the one with the earliest request still waiting, to lead it; and every reader waiting
    /// for a commit. A woken appender is taken off the list. An appender sleeps only while a
    /// stage is under way (else it would lead one), so every sleeper is reached by the end of
    /// a stage: the one that makes it durable, or one that wakes it to lead.
    fn wake_after_stage(&mut self) {
        let inner = &mut **self;
        let poisoned = inner.index.poisoned.is_some();
        let work = (!inner.writing && inner.durable < inner.marks_synced)
            || (!inner.syncing_marks && inner.marks_synced < inner.requested);
        let durable = inner.durable;
        inner.sleepers.retain(|(ticket, wake)| {
            let woken = poisoned || *ticket <= durable;
            if woken {
                wake.notify_one();
            }
            !woken
        });
        if work {
            if let Some(first) = (0..inner.sleepers.len()).min_by_key(|&i| inner.sleepers[i].0) {
                let (_, wake) = inner.sleepers.swap_remove(first);
                wake.notify_one();
            }
        }
        self.journal.committed.notify_all();
    }

    /// Wait, the mutex let go, until the next group commit ends.
    fn wait_for_commit(&mut self) {
        if let Some(g) = self.guard.take() {
            #[cfg(test)]
            let g = {
                let mut g = g;
                g.waits += 1;
                g
            };
            let g = self
                .journal
                .committed
                .wait(g)
                .unwrap_or_else(|p| p.into_inner());
            self.guard = Some(g);
        }
    }
}

/// The journal while its lock is held (or, from [`Journal::peek`], a lock-free view). Dropping
/// it releases the lock.
pub(crate) struct Locked<'a> {
    hold: Hold<'a>,
    /// Holds the journal lock (counted in `holders`); false for a peek.
    locked: bool,
    path: &'a Path,
    trusted: &'a [VerifyingKey],
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if !self.locked || self.hold.guard.is_none() {
            return;
        }
        let inner = &mut *self.hold;
        inner.holders = inner.holders.saturating_sub(1);
        let settled = inner.queue.is_empty() && inner.durable >= inner.requested;
        if inner.holders == 0 && (settled || inner.index.poisoned.is_some()) {
            // Closing the descriptor releases the `flock`: other processes may append.
            inner.flock = None;
        }
    }
}

impl Locked<'_> {
    /// True under the journal lock, false for a lock-free view.
    pub(crate) fn holds_lock(&self) -> bool {
        self.locked
    }

    /// The journal file, as given.
    pub(crate) fn path(&self) -> &Path {
        self.path
    }

    fn poison(&mut self, reason: String) {
        self.hold.index.poisoned.get_or_insert(reason);
    }

    fn poisoned(&self) -> Option<JournalError> {
        self.hold
            .index
            .poisoned
            .as_ref()
            .map(|reason| JournalError::Poisoned {
                path: self.path.to_owned(),
                reason: reason.clone(),
            })
    }

    /// Index (and check) the complete lines appended since the last look.
    fn refresh(&mut self) -> Result<(), JournalError> {
        if let Some(e) = self.poisoned() {
            return Err(e);
        }
        match self.read_new_lines() {
            Ok(()) => Ok(()),
            Err(e) => {
                if matches!(
                    e,
                    JournalError::Corrupt { .. }
                        | JournalError::Shrunk { .. }
                        | JournalError::RolledBack { .. }
                        | JournalError::Unmarked { .. }
                ) {
                    self.poison(e.to_string());
                }
                Err(e)
            }
        }
    }

    fn read_new_lines(&mut self) -> Result<(), JournalError> {
        let path = self.path;
        let trusted = self.trusted;
        let locked = self.locked;
        let inner = &mut *self.hold;
        let size = inner
            .file
            .metadata()
            .map_err(io_err("inspect", path))?
            .len();
        if size < inner.on_disk {
            return Err(JournalError::Shrunk {
                path: path.to_owned(),
                known: inner.on_disk,
                found: size,
            });
        }
        // While lines of this process wait for their group commit, this process holds the
        // journal lock: no other process can have appended.
        if size == inner.on_disk || !inner.queue.is_empty() {
            return match inner.marks.as_mut() {
                Some(marks) if inner.queue.is_empty() => marks.caught_up(locked),
                _ => Ok(()),
            };
        }
        let mut reader = BufReader::with_capacity(1 << 16, &inner.file);
        reader
            .seek(SeekFrom::Start(inner.on_disk))
            .map_err(io_err("read", path))?;
        let mut line = Vec::with_capacity(1024);
        let mut offset = inner.on_disk;
        let mut sigs = Vec::new();
        // (hash, effect id) of every entry read, matched with its marks once all are checked.
        let mut read = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(io_err("read", path))?;
            if n == 0 || line.last() != Some(&b'\n') {
                // End of file, or a torn last line: leave it unconsumed.
                break;
            }
            let line_no = inner.index.lines + 1;
            let body = &line[..line.len() - 1];
            if !body.iter().all(u8::is_ascii_whitespace) {
                let corrupt = |reason: String| JournalError::Corrupt {
                    path: path.to_owned(),
                    line: line_no,
                    reason,
                };
                let len = u32::try_from(n).map_err(|_| corrupt("line longer than 4 GiB".into()))?;
                let value: Value =
                    serde_json::from_slice(body).map_err(|e| corrupt(format!("not JSON: {e}")))?;
                let Value::Object(entry) = value else {
                    return Err(corrupt("not a JSON object".into()));
                };
                let sig = inner
                    .index
                    .ingest(
                        &entry,
                        EntryLoc {
                            offset,
                            len,
                            tag: 0,
                        },
                        trusted,
                    )
                    .map_err(corrupt)?;
                sigs.push(sig);
                let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default();
                read.push((text("hash").to_owned(), text("effect_id").to_owned()));
            }
            inner.index.lines += 1;
            offset += n as u64;
            inner.len = offset;
            inner.on_disk = offset;
        }
        verify_signatures(&sigs).map_err(|line| JournalError::Corrupt {
            path: path.to_owned(),
            line,
            reason: "its signature does not verify for its signer".into(),
        })?;
        let Some(marks) = inner.marks.as_mut() else {
            return Ok(());
        };
        for (hash, eid) in &read {
            marks.seen(hash, eid, locked)?;
        }
        marks.caught_up(locked)
    }

    /// The index of checked entries.
    pub fn index(&self) -> &Index {
        &self.hold.index
    }

    /// Run `f` (slow I/O on a file only this holder writes, such as its claim file) with this
    /// process's mutex let go, as an append does while it waits for its fsync: other threads'
    /// sections may run meanwhile; other processes stay excluded.
    pub(crate) fn without_mutex<R>(&mut self, f: impl FnOnce() -> R) -> R {
        self.hold.unlocked(f)
    }

    /// The latest claim-record generation marked for `effect_id`, if one was.
    pub(crate) fn record_gen(&self, effect_id: &str) -> Option<u64> {
        self.hold.marks.as_ref()?.record_gen(effect_id)
    }

    /// Mark the claim record of generation `gen` of `effect_id` as written (under the lock),
    /// durable before this returns.
    pub(crate) fn record_written(&mut self, effect_id: &str, gen: u64) -> Result<(), JournalError> {
        if !self.locked {
            return Err(JournalError::Poisoned {
                path: self.path.to_owned(),
                reason: "a claim record was marked without the journal lock".into(),
            });
        }
        let inner = &mut *self.hold;
        let Some(marks) = inner.marks.as_mut() else {
            return Ok(());
        };
        marks.record_written(effect_id, gen)?;
        inner.requested += 1;
        let ticket = inner.requested;
        inner.pending.insert(effect_id.to_owned(), ticket);
        self.wait_durable(ticket)
    }

    /// The `index`-th entry of an effect, read back from the file (or from the queue of lines
    /// waiting for their group commit).
    pub fn entry(&self, effect_id: &str, index: usize) -> Result<Map<String, Value>, JournalError> {
        let loc = self
            .hold
            .index
            .loc(effect_id, index)
            .ok_or_else(|| JournalError::Corrupt {
                path: self.path.to_owned(),
                line: 0,
                reason: format!("effect {effect_id} has no entry #{index}"),
            })?;
        let mut buf = vec![0u8; loc.len as usize];
        match self.hold.queue.iter().find(|q| q.offset == loc.offset) {
            Some(q) => buf = q.bytes.clone(),
            None => self
                .hold
                .file
                .read_exact_at(&mut buf, loc.offset)
                .map_err(io_err("read", self.path))?,
        }
        match serde_json::from_slice::<Value>(&buf) {
            Ok(Value::Object(m)) if reread_matches(&m, loc) => Ok(m),
            _ => Err(JournalError::Corrupt {
                path: self.path.to_owned(),
                line: 0,
                reason: format!(
                    "entry at byte {} changed since it was checked (edited in place); reopen the journal to check it again",
                    loc.offset
                ),
            }),
        }
    }

    /// Every entry of an effect, in journal order.
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, JournalError> {
        let n = self.hold.index.count(effect_id);
        (0..n)
            .map(|i| self.entry(effect_id, i).map(Value::Object))
            .collect()
    }

    /// Append one entry: `{v, ts_ms, kind, effect_id, <fields>, prev}`, sealed with `key`,
    /// indexed at once, then written at the end of the last complete line and fsynced by a group
    /// commit. Returns the sealed entry once it is durable.
    ///
    /// While the line waits for its fsync this process's mutex is let go (the `flock` is not):
    /// other threads' sections may run between this append and the rest of the caller's
    /// section, and they see the entry (indexed, not yet durable). None of them can act on it
    /// outside the journal before it is durable: what they append comes later in the same file,
    /// so the fsync that makes theirs durable makes this one durable first.
    pub fn append(
        &mut self,
        effect_id: &str,
        kind: Kind,
        fields: Map<String, Value>,
        ts_ms: u64,
        key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        if !self.locked {
            return Err(JournalError::Poisoned {
                path: self.path.to_owned(),
                reason: "an append was attempted without the journal lock".into(),
            });
        }
        if let Some(e) = self.poisoned() {
            return Err(e);
        }
        let path = self.path;
        let (entry, mut line) = sealed_line(
            self.hold.index.tip(effect_id),
            effect_id,
            kind,
            fields,
            ts_ms,
            key,
        )?;
        line.push(b'\n');
        let len = u32::try_from(line.len()).map_err(|_| JournalError::Corrupt {
            path: path.to_owned(),
            line: 0,
            reason: format!(
                "a {kind} entry of {} bytes is too long to index",
                line.len()
            ),
        })?;
        if self.hold.queue.is_empty() {
            self.cut_torn_tail()?;
        }
        let hash = entry
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(marks) = self.hold.marks.as_mut() {
            // Announced before it is written: a line no intent announced was not appended here.
            if let Err(e) = marks.intend(&hash, effect_id) {
                self.poison(format!("an entry's intent could not be written ({e})"));
                return Err(e);
            }
        }
        let inner = &mut *self.hold;
        let at = inner.len;
        let line_no = inner.index.lines + 1;
        let applied = inner.index.fold(
            effect_id,
            &entry,
            EntryLoc {
                offset: at,
                len,
                tag: 0,
            },
        );
        if let Err(reason) = applied {
            self.poison(reason.clone());
            return Err(JournalError::Corrupt {
                path: path.to_owned(),
                line: line_no,
                reason,
            });
        }
        inner.len += line.len() as u64;
        inner.index.lines += 1;
        inner.requested += 1;
        let ticket = inner.requested;
        inner.pending.insert(effect_id.to_owned(), ticket);
        inner.queue.push_back(Queued {
            offset: at,
            bytes: line,
            hash,
            effect_id: effect_id.to_owned(),
            ticket,
        });
        self.wait_durable(ticket)?;
        Ok(entry)
    }

    /// Return once durability request `ticket` is covered by a completed group commit. A group
    /// commit has two stages, each led by one thread at a time, any waiting thread leading
    /// whichever is free and has work: sync the marks (so every intent and claim-record mark
    /// written so far), then write the lines whose intents that made durable, fsync the
    /// journal and mark them. The second stage of one batch runs while the next batch's marks
    /// sync; a line is never written before its intent is durable, and a batch is durable
    /// only once every line before it is (the second stage runs one batch at a time, in order).
    fn wait_durable(&mut self, ticket: u64) -> Result<(), JournalError> {
        loop {
            if self.hold.durable >= ticket {
                return Ok(());
            }
            if let Some(e) = self.poisoned() {
                // A line the second stage is writing may still become durable: its appender
                // is answered by that stage's outcome (the error if its write or fsync fails,
                // then cut back), never by another stage's failure meanwhile.
                if self.hold.writing && ticket <= self.hold.writing_batch {
                    self.hold.sleep(ticket);
                    continue;
                }
                return Err(e);
            }
            if !self.hold.writing && self.hold.durable < self.hold.marks_synced {
                let led = self.write_synced();
                self.hold.writing = false;
                self.hold.wake_after_stage();
                led?;
            } else if !self.hold.syncing_marks && self.hold.marks_synced < self.hold.requested {
                let led = self.sync_marks();
                self.hold.syncing_marks = false;
                let h = &self.hold;
                if led.is_ok()
                    && h.durable < ticket
                    && !h.writing
                    && h.durable < h.marks_synced
                    && h.marks_synced >= h.requested
                {
                    // This thread leads the second stage next, whose end wakes whoever it
                    // makes durable, and no other has a marks sync to lead meanwhile: nobody
                    // needs waking now.
                    continue;
                }
                self.hold.wake_after_stage();
                led?;
            } else {
                self.hold.sleep(ticket);
            }
        }
    }

    /// A group commit's first stage: sync the marks, for every request made so far.
    fn sync_marks(&mut self) -> Result<(), JournalError> {
        let path = self.path;
        let inner = &mut *self.hold;
        inner.syncing_marks = true;
        let batch = inner.requested;
        let marks = match inner.marks.as_ref().map(Marks::sync_handle).transpose() {
            Ok(m) => m,
            Err(e) => {
                // Like a failed sync: the queued lines must not be written by a later commit
                // after their appends were answered with this error.
                self.poison(format!("the marks could not be opened for syncing ({e})"));
                return Err(e);
            }
        };
        #[cfg(test)]
        let journal = self.hold.journal;
        let synced = self.hold.unlocked(|| match &marks {
            Some(m) => {
                #[cfg(test)]
                journal.call_hook(&journal.on_marks_sync);
                #[cfg(test)]
                if journal
                    .fail_next_marks_sync
                    .swap(false, std::sync::atomic::Ordering::SeqCst)
                {
                    return Err(io_err("sync the marks file of", path)(
                        std::io::Error::other("a test made this sync fail"),
                    ));
                }
                m.sync().map_err(io_err("sync the marks file of", path))
            }
            None => Ok(()),
        });
        if let Err(e) = synced {
            self.poison(format!("the marks could not be synced ({e})"));
            return Err(e);
        }
        let inner = &mut *self.hold;
        inner.marks_synced = inner.marks_synced.max(batch);
        Ok(())
    }

    /// A group commit's second stage: write the queued lines whose intents are durable, fsync
    /// the journal, mark them; then every request up to the marks sync is durable.
    fn write_synced(&mut self) -> Result<(), JournalError> {
        let path = self.path;
        let inner = &mut *self.hold;
        inner.writing = true;
        let batch = inner.marks_synced;
        inner.writing_batch = batch;
        let at = inner.on_disk;
        let lines = inner.queue.iter().take_while(|q| q.ticket <= batch).count();
        let batch_lines: Vec<Queued> = inner.queue.drain(..lines).collect();
        if !batch_lines.is_empty() {
            let bytes: Vec<u8> = batch_lines
                .iter()
                .flat_map(|q| q.bytes.iter().copied())
                .collect();
            let written =
                fsio::write_at(&inner.file, path, &bytes, at).map_err(io_err("append to", path));
            inner.on_disk = at + bytes.len() as u64;
            let journal = self.hold.journal;
            let synced = written.and_then(|()| {
                self.hold.unlocked(|| {
                    #[cfg(test)]
                    journal.call_hook(&journal.on_journal_sync);
                    fsio::sync(&journal.sync_file, path, false).map_err(io_err("sync", path))
                })
            });
            if let Err(e) = synced {
                // The lines may or may not survive a crash: cut them back and stop using this
                // handle (every waiter gets the error; the journal is re-read when reopened).
                let inner = &mut *self.hold;
                let _ = fsio::set_len(&inner.file, path, at);
                let _ = fsio::sync(&inner.file, path, true);
                self.poison(format!("an append failed ({e})"));
                return Err(e);
            }
        }
        let inner = &mut *self.hold;
        if let Some(m) = inner.marks.as_mut() {
            for q in &batch_lines {
                if let Err(e) = m.appended(&q.hash, &q.effect_id) {
                    // The entries are durable; their marks are not. The next holder marks them.
                    self.poison(format!("an entry's mark could not be written ({e})"));
                    return Err(e);
                }
            }
        }
        self.hold.durable = batch;
        self.hold.pending.retain(|_, ticket| *ticket > batch);
        Ok(())
    }

    /// Cut off a torn tail left by a writer that died mid-line — only if the bytes to cut hold
    /// no newline (complete lines are never cut). Only with no line of this process queued.
    fn cut_torn_tail(&mut self) -> Result<(), JournalError> {
        let path = self.path;
        let inner = &mut *self.hold;
        let size = inner
            .file
            .metadata()
            .map_err(io_err("inspect", path))?
            .len();
        if size == inner.on_disk {
            return Ok(());
        }
        let tail_len = usize::try_from(size.saturating_sub(inner.on_disk)).unwrap_or(usize::MAX);
        let mut tail = vec![0u8; tail_len.min(64 << 20)];
        inner
            .file
            .read_exact_at(&mut tail, inner.on_disk)
            .map_err(io_err("read the tail of", path))?;
        if size < inner.on_disk || tail_len > tail.len() || tail.contains(&b'\n') {
            return Err(JournalError::Corrupt {
                path: path.to_owned(),
                line: inner.index.lines + 1,
                reason: format!(
                    "{} bytes after the last checked line hold a complete line that was not read; not cutting them",
                    size.saturating_sub(inner.on_disk)
                ),
            });
        }
        fsio::set_len(&inner.file, path, inner.on_disk)
            .map_err(io_err("truncate the torn tail of", path))?;
        fsio::sync(&inner.file, path, true).map_err(io_err("sync", path))
    }
}

/// A new entry `{v, ts_ms, kind, effect_id, <fields>, prev}` after the effect's `tip` (its last
/// hash and latest timestamp), sealed with `key`, and its JSON line (without the newline).
pub(crate) fn sealed_line(
    tip: (Option<String>, u64),
    effect_id: &str,
    kind: Kind,
    fields: Map<String, Value>,
    ts_ms: u64,
    key: &SigningKey,
) -> Result<(Map<String, Value>, Vec<u8>), JournalError> {
    if let Some(field) = fields
        .keys()
        .find(|k| RESERVED_FIELDS.contains(&k.as_str()))
    {
        return Err(JournalError::ReservedField {
            kind: kind.as_str(),
            effect_id: effect_id.to_owned(),
            field: field.clone(),
        });
    }
    let (prev, last_ts) = tip;
    let mut entry = Map::with_capacity(fields.len() + 8);
    entry.insert("v".into(), Value::from(ENTRY_VERSION));
    // Never earlier than the effect's previous entry, even if the wall clock stepped back.
    entry.insert("ts_ms".into(), Value::from(ts_ms.max(last_ts)));
    entry.insert("kind".into(), Value::from(kind.as_str()));
    entry.insert("effect_id".into(), Value::from(effect_id));
    for (k, v) in fields {
        entry.insert(k, v);
    }
    entry.insert("prev".into(), prev.map_or(Value::Null, Value::String));
    seal(&mut entry, key).map_err(|source| JournalError::Canonical {
        kind: kind.as_str(),
        effect_id: effect_id.to_owned(),
        source,
    })?;
    let line = serde_json::to_vec(&entry).map_err(|e| JournalError::Canonical {
        kind: kind.as_str(),
        effect_id: effect_id.to_owned(),
        source: CanonicalError::Float(e.to_string()),
    })?;
    Ok((entry, line))
}

/// What every store checks of an entry it reads before folding it in: its signature to verify
/// (its signer trusted) and its effect id.
pub(crate) fn read_check<'e>(
    entry: &'e Map<String, Value>,
    trusted: &[VerifyingKey],
    line: u64,
) -> Result<(PendingSig, &'e str), String> {
    let sig = pending_signature(entry, trusted, line)?;
    let eid = entry
        .get("effect_id")
        .and_then(Value::as_str)
        .ok_or("no string `effect_id`")?;
    Ok((sig, eid))
}

/// The signature of `entry` to verify, after checking that its signer is trusted.
fn pending_signature(
    entry: &Map<String, Value>,
    trusted: &[VerifyingKey],
    line: u64,
) -> Result<PendingSig, String> {
    let signer = entry
        .get("signer")
        .and_then(Value::as_str)
        .ok_or("no string `signer`")?;
    let key = trusted
        .iter()
        .find(|k| verify::entry::is_lower_hex_of(signer, k.as_bytes()))
        .ok_or_else(|| format!("its signer {signer} is not a key this gate trusts"))?;
    let hash = entry
        .get("hash")
        .and_then(Value::as_str)
        .ok_or("no string `hash`")?;
    let sig = entry
        .get("sig")
        .and_then(Value::as_str)
        .and_then(verify::entry::decode_lower_hex::<64>)
        .ok_or("no `sig` of 128 lowercase hex characters")?;
    Ok(PendingSig {
        line,
        key: *key,
        message: verify::entry::signing_message(hash),
        sig: Signature::from_bytes(&sig),
    })
}

/// Verify every pending signature (one batch; on failure, one by one to name the first bad
/// line). `Err(line)` names it.
pub(crate) fn verify_signatures(sigs: &[PendingSig]) -> Result<(), u64> {
    if sigs.is_empty() {
        return Ok(());
    }
    let messages: Vec<&[u8]> = sigs.iter().map(|p| p.message.as_slice()).collect();
    let signatures: Vec<Signature> = sigs.iter().map(|p| p.sig).collect();
    let keys: Vec<VerifyingKey> = sigs.iter().map(|p| p.key).collect();
    if ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok() {
        return Ok(());
    }
    match sigs
        .iter()
        .find(|p| p.key.verify_strict(&p.message, &p.sig).is_err())
    {
        Some(p) => Err(p.line),
        None => Ok(()),
    }
}

/// Read every entry of the journal at `path` (all effects, file order) without writing anything.
///
/// A missing file reads as an empty journal; a torn last line is ignored; a corrupt complete line
/// is an error naming its line number.
pub fn read_all(path: &Path) -> Result<Vec<Value>, JournalError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("open", path)(e)),
    };
    let mut reader = BufReader::new(file);
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(io_err("read", path))?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        line_no += 1;
        let body = &line[..n - 1];
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let corrupt = |reason: String| JournalError::Corrupt {
            path: path.to_owned(),
            line: line_no,
            reason,
        };
        match serde_json::from_slice::<Value>(body) {
            Ok(v @ Value::Object(_)) => out.push(v),
            Ok(_) => return Err(corrupt("not a JSON object".into())),
            Err(e) => return Err(corrupt(format!("not JSON: {e}"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use verify::budget::Budget;

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[3u8; 32])
    }

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// Yield until `done` or for 10 s, and say whether it came: for hooks, which must let the
    /// stage they hold go on either way (a hook that failed would leave other threads waiting
    /// for ever).
    fn within_10_s(done: &dyn Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        done()
    }

    /// Yield until `done`, failing the test after 30 s (a step that never comes).
    fn until(what: &str, done: &dyn Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "never happened: {what}");
            std::thread::yield_now();
        }
    }

    /// Call `hook` with the group commit's number (from 0) each time a leader syncs the marks,
    /// its mutex let go; returns the count of such syncs.
    fn on_marks_sync(
        j: &Journal,
        hook: impl Fn(usize, &Journal) + Send + 'static,
    ) -> Arc<AtomicUsize> {
        let syncs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&syncs);
        *j.on_marks_sync.lock().unwrap() = Some(Box::new(move |j: &Journal| {
            hook(counted.fetch_add(1, Ordering::SeqCst), j);
        }));
        syncs
    }

    /// Call `hook` with the count of journal fsyncs before it and the journal, at each.
    fn on_journal_sync(j: &Journal, hook: impl Fn(usize, &Journal) + Send + 'static) {
        let syncs = AtomicUsize::new(0);
        *j.on_journal_sync.lock().unwrap() = Some(Box::new(move |j: &Journal| {
            hook(syncs.fetch_add(1, Ordering::SeqCst), j);
        }));
    }

    /// Hold the first group commit at its marks sync until `release` (asked with the journal)
    /// holds; the flag returned is set once it is held there.
    fn hold_first_commit_until(
        j: &Journal,
        what: &'static str,
        release: impl Fn(&Journal) -> bool + Send + 'static,
    ) -> Arc<AtomicBool> {
        let paused = Arc::new(AtomicBool::new(false));
        let held = Arc::clone(&paused);
        on_marks_sync(j, move |n, j| {
            if n == 0 {
                held.store(true, Ordering::SeqCst);
                until(what, &|| release(j));
            }
        });
        paused
    }

    /// A journal in a fresh directory (kept alive by the returned guard).
    fn fresh_journal() -> (tempfile::TempDir, PathBuf, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let j = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
        (dir, path, j)
    }

    fn proposed(effect: u64) -> Map<String, Value> {
        fields(json!({"agent": "x", "lease": "l", "premises": {}, "effect": effect}))
    }

    /// The effect ids of the lines in the file now.
    fn written_ids(path: &Path) -> Vec<String> {
        read_all(path)
            .unwrap()
            .iter()
            .filter_map(|e| e["effect_id"].as_str().map(str::to_owned))
            .collect()
    }

    /// A whole-journal reader (`None`) arriving while an effect's first line waits for its
    /// commit does not list the effect until the line is written.
    #[test]
    fn a_whole_journal_reader_lists_no_effect_whose_line_is_not_yet_written() {
        let readers: [fn(&Journal) -> Vec<String>; 2] = [
            |j| j.effect_ids().unwrap(),
            |j| j.view(None).unwrap().index().effect_ids(),
        ];
        for read in readers {
            let (_dir, path, j) = fresh_journal();
            let reported = Arc::new(AtomicBool::new(false));
            let paused = {
                let reported = Arc::clone(&reported);
                hold_first_commit_until(&j, "the reader answers or waits", move |j| {
                    reported.load(Ordering::SeqCst) || j.index().waits >= 1
                })
            };
            let (listed, written) = std::thread::scope(|s| {
                let reader = s.spawn(|| {
                    until("the first commit pauses", &|| paused.load(Ordering::SeqCst));
                    let listed = read(&j);
                    let written = written_ids(&path);
                    reported.store(true, Ordering::SeqCst);
                    (listed, written)
                });
                j.append_entry("x", Kind::Proposed, proposed(1), 1, &key())
                    .unwrap();
                reader.join().unwrap()
            });
            assert!(
                listed.iter().all(|id| written.contains(id)),
                "listed {listed:?} while the file held {written:?}"
            );
        }
    }

    /// A thread joining the `flock` another thread of the process holds still checks that the
    /// path names the journal opened: a file put in its place meanwhile is refused, not read.
    #[test]
    fn joining_the_held_lock_refuses_a_journal_replaced_meanwhile() {
        let (dir, path, j) = fresh_journal();
        let answered = Arc::new(AtomicBool::new(false));
        let paused = {
            let answered = Arc::clone(&answered);
            hold_first_commit_until(&j, "the other thread's lock answers", move |_| {
                answered.load(Ordering::SeqCst)
            })
        };
        let joined = std::thread::scope(|s| {
            let other = s.spawn(|| {
                until("the first commit pauses", &|| paused.load(Ordering::SeqCst));
                let aside = dir.path().join("other.jsonl");
                std::fs::write(&aside, b"").unwrap();
                std::fs::rename(&aside, &path).unwrap();
                let joined = j.lock(Some("y")).map(|_| ());
                answered.store(true, Ordering::SeqCst);
                joined
            });
            // The append fails or not (its file was replaced under it); what matters is the
            // other thread's answer.
            let _ = j.append_entry("x", Kind::Proposed, proposed(1), 1, &key());
            other.join().unwrap()
        });
        assert!(
            matches!(joined, Err(JournalError::Poisoned { ref reason, .. }) if reason.contains("different file")),
            "{joined:?}"
        );
    }

    /// A group commit writes only the lines whose intents its marks sync covered: a line queued
    /// while the leader synced the marks waits for the next commit (after a power loss, an
    /// entry whose intent was not durable would stop the journal from opening).
    #[test]
    fn a_line_queued_during_the_marks_sync_waits_for_the_next_commit() {
        let (_dir, path, j) = fresh_journal();
        let paused = Arc::new(AtomicBool::new(false));
        let at_second_sync = Arc::new(Mutex::new(Vec::new()));
        let syncs = {
            let (paused, at_second_sync, path) = (
                Arc::clone(&paused),
                Arc::clone(&at_second_sync),
                path.clone(),
            );
            on_marks_sync(&j, move |n, j| match n {
                0 => {
                    paused.store(true, Ordering::SeqCst);
                    until("the second line is queued and waits", &|| {
                        j.index().waits >= 1
                    });
                }
                1 => *at_second_sync.lock().unwrap() = written_ids(&path),
                _ => {}
            })
        };
        std::thread::scope(|s| {
            let second = s.spawn(|| {
                until("the first commit pauses", &|| paused.load(Ordering::SeqCst));
                j.append_entry("y", Kind::Proposed, proposed(2), 2, &key())
                    .unwrap();
            });
            j.append_entry("x", Kind::Proposed, proposed(1), 1, &key())
                .unwrap();
            second.join().unwrap();
        });
        assert_eq!(syncs.load(Ordering::SeqCst), 2);
        assert_eq!(*at_second_sync.lock().unwrap(), vec!["x".to_owned()]);
        assert_eq!(written_ids(&path), vec!["x".to_owned(), "y".to_owned()]);
    }

    /// The marks sync of a line queued while the line before it is fsynced runs during that
    /// fsync (the two stages of consecutive group commits overlap), and still ends before the
    /// later line is written.
    #[test]
    fn the_next_batch_syncs_its_marks_while_the_batch_before_it_is_fsynced() {
        let (_dir, path, j) = fresh_journal();
        let paused = Arc::new(AtomicBool::new(false));
        let at_second_marks_sync = Arc::new(Mutex::new(None));
        let marks_syncs = {
            let at = Arc::clone(&at_second_marks_sync);
            let path = path.clone();
            on_marks_sync(&j, move |n, j| {
                if n == 1 {
                    *at.lock().unwrap() = Some((j.index().durable, written_ids(&path)));
                }
            })
        };
        let overlapped = Arc::new(AtomicBool::new(false));
        {
            let (paused, marks_syncs, overlapped) = (
                Arc::clone(&paused),
                Arc::clone(&marks_syncs),
                Arc::clone(&overlapped),
            );
            on_journal_sync(&j, move |n, _| {
                if n == 0 {
                    paused.store(true, Ordering::SeqCst);
                    let began = within_10_s(&|| marks_syncs.load(Ordering::SeqCst) >= 2);
                    overlapped.store(began, Ordering::SeqCst);
                }
            });
        }
        std::thread::scope(|s| {
            let second = s.spawn(|| {
                until("the first fsync pauses", &|| paused.load(Ordering::SeqCst));
                j.append_entry("y", Kind::Proposed, proposed(2), 2, &key())
                    .unwrap();
            });
            j.append_entry("x", Kind::Proposed, proposed(1), 1, &key())
                .unwrap();
            second.join().unwrap();
        });
        assert!(
            overlapped.load(Ordering::SeqCst),
            "the second line's marks sync did not begin during the first line's fsync"
        );
        // At the second marks sync the first line was written, not yet durable, and the
        // second not written.
        assert_eq!(
            *at_second_marks_sync.lock().unwrap(),
            Some((0, vec!["x".to_owned()]))
        );
        assert_eq!(written_ids(&path), vec!["x".to_owned(), "y".to_owned()]);
    }

    /// A line queued while the marks sync before it runs syncs its own marks during the fsync
    /// of the batch before it: the end of the first marks sync wakes it to lead the next.
    #[test]
    fn a_line_queued_during_a_marks_sync_syncs_its_marks_during_the_fsync_before_it() {
        assert!(
            queued_during_marks_sync_overlaps(0),
            "the second line's marks sync did not begin during the first line's fsync"
        );
    }

    /// The same when the second appender's first sleep ends without a wakeup: it sleeps
    /// again under a fresh entry, and the stale one is gone (else the wakeup to lead would go
    /// to an entry nobody sleeps on).
    #[test]
    fn an_appender_whose_sleep_ends_spuriously_is_still_woken_to_lead() {
        assert!(
            queued_during_marks_sync_overlaps(1),
            "the second line's marks sync did not begin during the first line's fsync"
        );
    }

    /// Whether a line queued during the first marks sync led its own marks sync during the
    /// first line's fsync, with `spurious` of the appenders' sleeps ending without a wakeup.
    fn queued_during_marks_sync_overlaps(spurious: usize) -> bool {
        let (_dir, _path, j) = fresh_journal();
        j.spurious_wakeups.store(spurious, Ordering::SeqCst);
        let paused = Arc::new(AtomicBool::new(false));
        let marks_syncs = {
            let paused = Arc::clone(&paused);
            on_marks_sync(&j, move |n, j| {
                if n == 0 {
                    paused.store(true, Ordering::SeqCst);
                    // Every sleep of the second appender, the spurious ones and the real one.
                    until("the second line is queued and sleeps", &|| {
                        j.index().waits > spurious
                    });
                }
            })
        };
        let overlapped = Arc::new(AtomicBool::new(false));
        {
            let (marks_syncs, overlapped) = (Arc::clone(&marks_syncs), Arc::clone(&overlapped));
            on_journal_sync(&j, move |n, _| {
                if n == 0 {
                    let began = within_10_s(&|| marks_syncs.load(Ordering::SeqCst) >= 2);
                    overlapped.store(began, Ordering::SeqCst);
                }
            });
        }
        std::thread::scope(|s| {
            let second = s.spawn(|| {
                until("the first marks sync pauses", &|| {
                    paused.load(Ordering::SeqCst)
                });
                j.append_entry("y", Kind::Proposed, proposed(2), 2, &key())
                    .unwrap();
            });
            j.append_entry("x", Kind::Proposed, proposed(1), 1, &key())
                .unwrap();
            second.join().unwrap();
        });
        overlapped.load(Ordering::SeqCst)
    }

    /// Every appender waiting on a marks sync that fails is answered with the error (none
    /// sleeps for ever), and none of their lines is written.
    #[test]
    fn every_appender_waiting_on_a_failed_marks_sync_is_answered() {
        let (_dir, path, j) = fresh_journal();
        let j = Arc::new(j);
        let paused = Arc::new(AtomicBool::new(false));
        {
            let paused = Arc::clone(&paused);
            on_marks_sync(&j, move |n, j| {
                if n == 0 {
                    paused.store(true, Ordering::SeqCst);
                    until("three more lines are queued and sleep", &|| {
                        j.index().waits >= 3
                    });
                    j.fail_next_marks_sync.store(true, Ordering::SeqCst);
                }
            });
        }
        // Threads of their own, not scoped: an appender left sleeping fails the test at its
        // bound below instead of hanging it.
        let answers = Arc::new(Mutex::new(Vec::new()));
        for n in 1..=4u64 {
            let (j, paused, answers) = (Arc::clone(&j), Arc::clone(&paused), Arc::clone(&answers));
            std::thread::spawn(move || {
                if n > 1 {
                    until("the first marks sync pauses", &|| {
                        paused.load(Ordering::SeqCst)
                    });
                }
                let r = j.append_entry(&format!("e{n}"), Kind::Proposed, proposed(n), n, &key());
                answers.lock().unwrap().push(r.is_ok());
            });
        }
        until("every appender is answered", &|| {
            answers.lock().unwrap().len() == 4
        });
        assert_eq!(*answers.lock().unwrap(), vec![false; 4]);
        assert!(written_ids(&path).is_empty());
    }

    /// A later batch's failed marks sync does not answer the appenders of the batch being
    /// written meanwhile: their lines become durable, and they are told so.
    #[test]
    fn a_batch_being_written_is_answered_by_its_own_fsync_not_by_a_later_failure() {
        let (_dir, path, j) = fresh_journal();
        let first_paused = Arc::new(AtomicBool::new(false));
        {
            let first_paused = Arc::clone(&first_paused);
            on_marks_sync(&j, move |n, j| {
                if n == 0 {
                    first_paused.store(true, Ordering::SeqCst);
                    until("two more lines are queued and wait", &|| {
                        j.index().waits >= 2
                    });
                }
            });
        }
        let second_write_paused = Arc::new(AtomicBool::new(false));
        let saw_failure = Arc::new(AtomicBool::new(false));
        {
            let (paused, saw) = (Arc::clone(&second_write_paused), Arc::clone(&saw_failure));
            on_journal_sync(&j, move |n, j| {
                if n == 1 {
                    paused.store(true, Ordering::SeqCst);
                    let failed = within_10_s(&|| j.index().index.poisoned.is_some());
                    saw.store(failed, Ordering::SeqCst);
                }
            });
        }
        let answers = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for (id, n) in [("x", 2), ("z", 3)] {
                let (j, first_paused, answers) = (&j, &first_paused, &answers);
                s.spawn(move || {
                    until("the first marks sync pauses", &|| {
                        first_paused.load(Ordering::SeqCst)
                    });
                    let r = j.append_entry(id, Kind::Proposed, proposed(n), n, &key());
                    answers.lock().unwrap().push((id, r.is_ok()));
                });
            }
            let (j, paused, answers) = (&j, &second_write_paused, &answers);
            s.spawn(move || {
                until("the second batch's fsync pauses", &|| {
                    paused.load(Ordering::SeqCst)
                });
                j.fail_next_marks_sync.store(true, Ordering::SeqCst);
                let r = j.append_entry("y", Kind::Proposed, proposed(4), 4, &key());
                answers.lock().unwrap().push(("y", r.is_ok()));
            });
            let r = j.append_entry("w", Kind::Proposed, proposed(1), 1, &key());
            answers.lock().unwrap().push(("w", r.is_ok()));
        });
        assert!(
            saw_failure.load(Ordering::SeqCst),
            "the later marks sync did not fail during the second batch's fsync"
        );
        let mut answers = answers.into_inner().unwrap();
        answers.sort_unstable();
        assert_eq!(
            answers,
            vec![("w", true), ("x", true), ("y", false), ("z", true)]
        );
        let mut written = written_ids(&path);
        written.sort_unstable();
        assert_eq!(written, vec!["w", "x", "z"]);
    }

    #[test]
    fn a_dispatch_without_an_admission_still_spends_its_proposed_budget() {
        // A gate that predates budgets writes DISPATCHED with no `budget` record: the effect's
        // proposed amount is held all the same, so current gates count it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let j = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
        let mut l = j.lock(None).unwrap();
        let proposed = json!({"agent": "x", "lease": "l", "premises": {}, "effect": {"n": 1},
            "budget": {"id": "order-1", "amount": 2000}});
        l.append("a", Kind::Proposed, fields(proposed), 1, &key())
            .unwrap();
        l.append(
            "a",
            Kind::Authorized,
            fields(json!({"lease": "l"})),
            2,
            &key(),
        )
        .unwrap();
        l.append(
            "a",
            Kind::Dispatched,
            fields(json!({"effect": {"n": 1}, "lease": "l", "premises": {}})),
            3,
            &key(),
        )
        .unwrap();
        let held = l.index().state("a").and_then(EffectState::budget_held);
        assert_eq!(
            held,
            Some(&Budget {
                id: "order-1".into(),
                amount: 2000
            })
        );
        assert_eq!(l.index().budget_holders("order-1", "b").len(), 1);
    }

    #[test]
    fn appends_chain_per_effect_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let j = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
        let mut l = j.lock(None).unwrap();
        let a1 = l
            .append(
                "a",
                Kind::Proposed,
                fields(json!({"agent": "x", "lease": "l", "premises": {}, "effect": {"n": 1}})),
                5,
                &key(),
            )
            .unwrap();
        let b1 = l
            .append(
                "b",
                Kind::Proposed,
                fields(json!({"agent": "x", "lease": "l", "premises": {}, "effect": {"n": 2}})),
                6,
                &key(),
            )
            .unwrap();
        let a2 = l
            .append(
                "a",
                Kind::Authorized,
                fields(json!({"lease": "l"})),
                4,
                &key(),
            )
            .unwrap();
        assert_eq!(a1["prev"], Value::Null);
        assert_eq!(b1["prev"], Value::Null);
        assert_eq!(a2["prev"], a1["hash"]);
        assert_eq!(
            a2["ts_ms"],
            json!(5),
            "ts never goes backwards within an effect"
        );
        drop(l);
        let j2 = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
        let l2 = j2.lock(None).unwrap();
        assert_eq!(
            l2.entries("a").unwrap(),
            vec![Value::Object(a1), Value::Object(a2)]
        );
        assert_eq!(
            l2.index().effect_ids(),
            vec!["a".to_owned(), "b".to_owned()]
        );
        assert_eq!(read_all(&path).unwrap().len(), 3);
    }

    /// A section that waited for one group commit of its effect asks again before it reads:
    /// while it slept, another thread indexed a later line of the same effect that the next
    /// commit has not written yet (in CI: a duplicate was answered from a queued COMMITTED, and
    /// a SIGKILL then left the effect ending in DISPATCHED). The threads are ordered by the
    /// leader's pause while it syncs the marks, its mutex let go; no timing is assumed.
    #[test]
    fn a_section_never_reads_a_line_of_its_effect_that_is_not_yet_written() {
        never_reads_an_unwritten_line(|j| j.lock(Some("e")).unwrap().index().count("e"));
    }

    /// The same for a lock-free reader ([`Journal::view`]).
    #[test]
    fn a_view_never_reads_a_line_of_its_effect_that_is_not_yet_written() {
        never_reads_an_unwritten_line(|j| j.view(Some("e")).unwrap().index().count("e"));
    }

    /// Effect `e` gets a line and a claim-record mark; `read` (the entries of `e` that a reader
    /// sees) runs while the mark's commit is under way, and a second line is appended before
    /// the reader wakes.
    fn never_reads_an_unwritten_line(read: impl Fn(&Journal) -> usize + Send + Sync) {
        let (_dir, path, j) = fresh_journal();
        let proposed = json!({"agent": "x", "lease": "l", "premises": {}, "effect": 1});
        let mut a = j.lock(Some("e")).unwrap();
        a.append("e", Kind::Proposed, fields(proposed), 1, &key())
            .unwrap();
        let first_sync = Arc::new(AtomicBool::new(false));
        let reported = Arc::new(AtomicBool::new(false));
        let syncs = {
            let (first_sync, reported) = (Arc::clone(&first_sync), Arc::clone(&reported));
            on_marks_sync(&j, move |n, j| {
                let waits = || j.index().waits;
                match n {
                    // The claim-record mark's commit: held until the other thread waits for it.
                    0 => {
                        first_sync.store(true, Ordering::SeqCst);
                        until("the reader waits for the first commit", &|| waits() >= 1);
                    }
                    // AUTHORIZED's commit, before the line is written: held until the reader
                    // either answered or waits again.
                    1 => until("the reader answers or waits again", &|| {
                        reported.load(Ordering::SeqCst) || waits() >= 2
                    }),
                    _ => {}
                }
            })
        };
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                while !first_sync.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                let indexed = read(&j);
                let written = read_all(&path).unwrap().len();
                reported.store(true, Ordering::SeqCst);
                (indexed, written)
            });
            a.record_written("e", 1).unwrap();
            a.append(
                "e",
                Kind::Authorized,
                fields(json!({"lease": "l"})),
                2,
                &key(),
            )
            .unwrap();
            drop(a);
            let (indexed, written) = reader.join().unwrap();
            assert_eq!(
                indexed, written,
                "the reader saw {indexed} entries of the effect while {written} were written"
            );
        });
        assert_eq!(syncs.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_second_handle_sees_what_the_first_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let j1 = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
        let j2 = Journal::open(&path, vec![key().verifying_key()], Duration::from_secs(5)).unwrap();
        j1.lock(None)
            .unwrap()
            .append(
                "a",
                Kind::Proposed,
                fields(json!({"agent": "x", "lease": "l", "premises": {}, "effect": 1})),
                1,
                &key(),
            )
            .unwrap();
        let e = j2
            .lock(None)
            .unwrap()
            .append(
                "a",
                Kind::Authorized,
                fields(json!({"lease": "l"})),
                2,
                &key(),
            )
            .unwrap();
        assert!(e["prev"].is_string());
        assert_eq!(j1.lock(None).unwrap().entries("a").unwrap().len(), 2);
    }
}
