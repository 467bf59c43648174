//! The journal: one JSONL file of signed entries of every effect, interleaved (DESIGN §2.5).
//!
//! - Every append is fsynced before it returns.
//! - Appends (and the dispatch step of the gate) run under one exclusive `flock` on the sidecar
//!   `<journal>.lock`, so they are atomic across processes; a mutex makes them atomic across
//!   threads of one process.
//! - A last line without a trailing newline is a write that never returned: it is ignored on read
//!   and cut off before the next append. A malformed complete line is an error naming its line
//!   number; it is never skipped.
//! - Appends cost O(1) in the journal's size: the journal keeps an index (per effect: entry
//!   offsets, last hash, derived state) and, on each lock acquisition, reads only the bytes other
//!   processes appended since it last looked.

use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use verify::canonical::{self, CanonicalError};
use verify::entry::{seal, Kind, ENTRY_VERSION};

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
    /// A complete line in the journal is not a valid entry.
    #[error("{path}, line {line}: corrupt journal entry: {reason}")]
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number.
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
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Where one entry sits in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryLoc {
    offset: u64,
    len: u32,
}

/// The open DISPATCHED of an effect.
#[derive(Debug, Clone)]
pub(crate) struct OpenDispatch {
    /// Index into the effect's entries.
    pub index: usize,
    /// The DISPATCHED entry's hash.
    pub hash: String,
}

/// What the index knows about one effect, derived from its entries.
#[derive(Debug, Default)]
pub(crate) struct EffectState {
    entries: Vec<EntryLoc>,
    last_hash: Option<String>,
    last_ts: u64,
    /// Canonical JSON of the effect of the first PROPOSED.
    pub first_effect: Option<String>,
    /// (canonical lease, premises) of the first PROPOSED under each lease.
    premises_by_lease: Vec<(String, Value)>,
    /// The open dispatch, if any.
    pub open: Option<OpenDispatch>,
    /// Any COMMITTED.
    pub committed: bool,
    /// Any AMBIGUOUS.
    pub ambiguous: bool,
    /// A resolving REFUSED with code `target_error` was written: the target rejected it.
    pub target_rejected: bool,
}

impl EffectState {
    /// The premises of the first PROPOSED under this (canonical) lease.
    pub fn premises_for(&self, lease_canonical: &str) -> Option<&Value> {
        self.premises_by_lease
            .iter()
            .find(|(l, _)| l == lease_canonical)
            .map(|(_, p)| p)
    }

    fn apply(&mut self, entry: &Map<String, Value>, loc: EntryLoc) -> Result<(), String> {
        let kind_text = entry
            .get("kind")
            .and_then(Value::as_str)
            .ok_or("no string `kind`")?;
        let kind = Kind::parse(kind_text).ok_or_else(|| format!("unknown kind {kind_text:?}"))?;
        let hash = entry
            .get("hash")
            .and_then(Value::as_str)
            .ok_or("no string `hash`")?;
        let ts = entry
            .get("ts_ms")
            .and_then(Value::as_u64)
            .ok_or("no integer `ts_ms`")?;
        let index = self.entries.len();
        match kind {
            Kind::Proposed => {
                let effect = entry.get("effect").ok_or("PROPOSED without `effect`")?;
                let lease = entry.get("lease").ok_or("PROPOSED without `lease`")?;
                let premises = entry.get("premises").cloned().unwrap_or(Value::Null);
                let effect_c = canonical::to_string(effect).map_err(|e| e.to_string())?;
                let lease_c = canonical::to_string(lease).map_err(|e| e.to_string())?;
                if self.first_effect.is_none() {
                    self.first_effect = Some(effect_c);
                }
                if self.premises_for(&lease_c).is_none() {
                    self.premises_by_lease.push((lease_c, premises));
                }
            }
            Kind::Authorized => {}
            Kind::Dispatched => {
                self.open = Some(OpenDispatch {
                    index,
                    hash: hash.to_owned(),
                });
            }
            Kind::Committed => {
                self.open = None;
                self.committed = true;
            }
            Kind::Ambiguous => {
                self.open = None;
                self.ambiguous = true;
            }
            Kind::Refused => {
                if entry.get("resolves").and_then(Value::as_bool) == Some(true) {
                    self.open = None;
                    if entry.get("code").and_then(Value::as_str) == Some("target_error") {
                        self.target_rejected = true;
                    }
                }
            }
        }
        self.entries.push(loc);
        self.last_hash = Some(hash.to_owned());
        self.last_ts = self.last_ts.max(ts);
        Ok(())
    }
}

struct Inner {
    file: File,
    lock: File,
    /// Bytes of complete lines already indexed.
    len: u64,
    /// Lines already indexed (for numbering).
    lines: u64,
    effects: HashMap<String, EffectState>,
    /// Effect ids in first-seen order.
    order: Vec<String>,
}

/// A journal file opened for reading and appending.
pub struct Journal {
    path: PathBuf,
    lock_path: PathBuf,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

/// The sidecar lock file of a journal: `<journal>.lock`.
pub fn lock_path(journal: &Path) -> PathBuf {
    let mut s = journal.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

impl Journal {
    /// Open (creating if missing) the journal at `path` and index every entry in it.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_err("open", path))?;
        if !existed {
            // Make the new file's directory entry durable too.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                if let Ok(d) = File::open(dir) {
                    let _ = d.sync_all();
                }
            }
        }
        let lock_path = lock_path(path);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io_err("open", &lock_path))?;
        let journal = Journal {
            path: path.to_owned(),
            lock_path,
            inner: Mutex::new(Inner {
                file,
                lock,
                len: 0,
                lines: 0,
                effects: HashMap::new(),
                order: Vec::new(),
            }),
        };
        drop(journal.lock()?);
        Ok(journal)
    }

    /// Append one entry `{v, ts_ms, kind, effect_id, <fields>, prev}` sealed with `key` (prev is
    /// the effect's last hash), fsynced before returning. Low level: it checks nothing about the
    /// effect's state — [`Gate`](crate::Gate) is the normal writer. Returns the sealed entry.
    pub fn append_entry(
        &self,
        effect_id: &str,
        kind: Kind,
        fields: Map<String, Value>,
        ts_ms: u64,
        key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        self.lock()?.append(effect_id, kind, fields, ts_ms, key)
    }

    /// Every entry of one effect, in journal order, exactly as stored.
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, JournalError> {
        self.lock()?.entries(effect_id)
    }

    /// Every effect id, in first-seen order.
    pub fn effect_ids(&self) -> Result<Vec<String>, JournalError> {
        Ok(self.lock()?.effect_ids())
    }

    /// The journal file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Take the journal lock (thread mutex, then the cross-process flock) and read what other
    /// processes appended since the last time.
    pub(crate) fn lock(&self) -> Result<Locked<'_>, JournalError> {
        // A poisoned mutex only means another thread panicked while holding it; the index is
        // rebuilt from the file's bytes, never half-updated (updates follow a durable write).
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.lock.lock().map_err(io_err("lock", &self.lock_path))?;
        let mut locked = Locked {
            inner,
            path: &self.path,
        };
        locked.refresh()?;
        Ok(locked)
    }
}

/// The journal while its lock is held. Dropping it releases the lock.
pub(crate) struct Locked<'a> {
    inner: MutexGuard<'a, Inner>,
    path: &'a Path,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // Closing never happens here (the file stays open), so unlock explicitly. If unlock
        // fails the lock is still released when the process exits.
        let _ = self.inner.lock.unlock();
    }
}

impl Locked<'_> {
    /// Index the complete lines appended since the last look.
    fn refresh(&mut self) -> Result<(), JournalError> {
        let path = self.path;
        let inner = &mut *self.inner;
        let size = inner
            .file
            .metadata()
            .map_err(io_err("inspect", path))?
            .len();
        if size < inner.len {
            return Err(JournalError::Shrunk {
                path: path.to_owned(),
                known: inner.len,
                found: size,
            });
        }
        if size == inner.len {
            return Ok(());
        }
        let mut reader = BufReader::with_capacity(1 << 16, &inner.file);
        reader
            .seek(SeekFrom::Start(inner.len))
            .map_err(io_err("read", path))?;
        let mut line = Vec::with_capacity(1024);
        let mut offset = inner.len;
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(io_err("read", path))?;
            if n == 0 || line.last() != Some(&b'\n') {
                // End of file, or a torn last line: leave it unconsumed.
                break;
            }
            let line_no = inner.lines + 1;
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
                let eid = entry
                    .get("effect_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| corrupt("no string `effect_id`".into()))?
                    .to_owned();
                let state = match inner.effects.get_mut(&eid) {
                    Some(s) => s,
                    None => {
                        inner.order.push(eid.clone());
                        inner.effects.entry(eid).or_default()
                    }
                };
                state
                    .apply(&entry, EntryLoc { offset, len })
                    .map_err(corrupt)?;
            }
            inner.lines += 1;
            offset += n as u64;
            inner.len = offset;
        }
        Ok(())
    }

    /// What the index knows about one effect.
    pub fn state(&self, effect_id: &str) -> Option<&EffectState> {
        self.inner.effects.get(effect_id)
    }

    /// Effect ids with an open dispatch, in first-seen order.
    pub fn open_effects(&self) -> Vec<String> {
        self.inner
            .order
            .iter()
            .filter(|e| self.inner.effects.get(*e).is_some_and(|s| s.open.is_some()))
            .cloned()
            .collect()
    }

    /// Every effect id, in first-seen order.
    pub fn effect_ids(&self) -> Vec<String> {
        self.inner.order.clone()
    }

    /// The `index`-th entry of an effect, read back from the file.
    pub fn entry(&self, effect_id: &str, index: usize) -> Result<Map<String, Value>, JournalError> {
        let loc = self
            .inner
            .effects
            .get(effect_id)
            .and_then(|s| s.entries.get(index))
            .copied()
            .ok_or_else(|| JournalError::Corrupt {
                path: self.path.to_owned(),
                line: 0,
                reason: format!("effect {effect_id} has no entry #{index}"),
            })?;
        let mut buf = vec![0u8; loc.len as usize];
        self.inner
            .file
            .read_exact_at(&mut buf, loc.offset)
            .map_err(io_err("read", self.path))?;
        match serde_json::from_slice::<Value>(&buf) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(JournalError::Corrupt {
                path: self.path.to_owned(),
                line: 0,
                reason: format!("entry at byte {} changed since it was indexed", loc.offset),
            }),
        }
    }

    /// Every entry of an effect, in journal order.
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, JournalError> {
        let n = self
            .inner
            .effects
            .get(effect_id)
            .map_or(0, |s| s.entries.len());
        (0..n)
            .map(|i| self.entry(effect_id, i).map(Value::Object))
            .collect()
    }

    /// Append one entry: `{v, ts_ms, kind, effect_id, <fields>, prev}`, sealed with `key`,
    /// written at the end of the last complete line and fsynced. Returns the sealed entry.
    pub fn append(
        &mut self,
        effect_id: &str,
        kind: Kind,
        fields: Map<String, Value>,
        ts_ms: u64,
        key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        let path = self.path;
        let inner = &mut *self.inner;
        let (prev, last_ts) = inner
            .effects
            .get(effect_id)
            .map_or((None, 0), |s| (s.last_hash.clone(), s.last_ts));
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
        let mut line = serde_json::to_vec(&entry).map_err(|e| JournalError::Canonical {
            kind: kind.as_str(),
            effect_id: effect_id.to_owned(),
            source: CanonicalError::Float(e.to_string()),
        })?;
        line.push(b'\n');
        // Cut off a torn tail left by a writer that died mid-line.
        let size = inner
            .file
            .metadata()
            .map_err(io_err("inspect", path))?
            .len();
        if size != inner.len {
            inner
                .file
                .set_len(inner.len)
                .map_err(io_err("truncate the torn tail of", path))?;
            inner.file.sync_all().map_err(io_err("sync", path))?;
        }
        inner
            .file
            .write_all_at(&line, inner.len)
            .map_err(io_err("append to", path))?;
        inner.file.sync_data().map_err(io_err("sync", path))?;
        let loc = EntryLoc {
            offset: inner.len,
            len: line.len() as u32,
        };
        let state = match inner.effects.get_mut(effect_id) {
            Some(s) => s,
            None => {
                inner.order.push(effect_id.to_owned());
                inner.effects.entry(effect_id.to_owned()).or_default()
            }
        };
        let line_no = inner.lines + 1;
        state
            .apply(&entry, loc)
            .map_err(|reason| JournalError::Corrupt {
                path: path.to_owned(),
                line: line_no,
                reason,
            })?;
        inner.len += line.len() as u64;
        inner.lines += 1;
        Ok(entry)
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

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[3u8; 32])
    }

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn appends_chain_per_effect_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let j = Journal::open(&path).unwrap();
        let mut l = j.lock().unwrap();
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
        let j2 = Journal::open(&path).unwrap();
        let l2 = j2.lock().unwrap();
        assert_eq!(
            l2.entries("a").unwrap(),
            vec![Value::Object(a1), Value::Object(a2)]
        );
        assert_eq!(l2.effect_ids(), vec!["a".to_owned(), "b".to_owned()]);
        assert_eq!(read_all(&path).unwrap().len(), 3);
    }

    #[test]
    fn a_second_handle_sees_what_the_first_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let j1 = Journal::open(&path).unwrap();
        let j2 = Journal::open(&path).unwrap();
        j1.lock()
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
            .lock()
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
        assert_eq!(j1.lock().unwrap().entries("a").unwrap().len(), 2);
    }
}
