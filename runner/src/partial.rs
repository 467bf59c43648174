//! A long run's finished cells, kept as they complete: an append-only partial file beside the
//! results, so that an interrupted run (Ctrl-C, SIGTERM, a SIGKILL, a full disk) loses only the
//! cells that were running, and `--resume` runs only the rest.
//!
//! The file is JSON lines. The first line is the [`Header`]: the scenario, the run's plan (any
//! serializable value, compared as JSON), its seed, and the public key its cells were signed with
//! (and whether that key outlives the run). Every further line is one finished cell: its place in
//! the plan, its id and the cell itself. Every line, the header too, ends with `sig`: the run key's
//! ed25519 signature over the line's JSON without it, checked on resume, so that a resumed run
//! never signs into its final file a cell (or a plan) changed after it was written. Each line is
//! written whole and fsynced before the next.
//! A last line without its newline (a writer killed or a disk filled mid-append) is dropped on
//! reading and cut before the next append, so that cell runs again; any other line that does not
//! read is an error naming it, never skipped.
//!
//! Generic over the plan and the cell types: a scenario's campaign loop creates the file when its
//! first cell may finish ([`PartialFile::create`]) or reopens it for a resume
//! ([`PartialFile::resume`]), appends each cell as it finishes ([`PartialFile::append`]) and
//! removes the file once the final results are written ([`PartialFile::remove`]).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The format of a partial file's header.
pub const PARTIAL_FORMAT: &str = "interlock-partial/2";

/// The field every line ends with: its signature.
const SIG: &str = "sig";

/// The first line of a partial file: what run its cells belong to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header<P> {
    /// [`PARTIAL_FORMAT`].
    pub format: String,
    /// The scenario (`billing_credit`).
    pub scenario: String,
    /// The run's seed.
    pub seed: u64,
    /// The public key (hex) the run's cells were signed with.
    pub signer: String,
    /// Whether that key outlives the run (`--signing-key` or the environment's key); a per-run
    /// key ends with its runner, and a run signed with one cannot be resumed.
    pub stable_key: bool,
    /// When the run started (RFC 3339).
    pub started: String,
    /// The scenario's plan, whatever it holds; a resume must give the same.
    pub plan: P,
}

/// One finished cell, as a line of the file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<I, C> {
    /// Its place in the plan.
    at: usize,
    /// Its id (the plan's id at that place).
    id: I,
    /// The cell.
    cell: C,
}

/// Why a partial file could not be created, read, resumed or appended to.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    /// The file could not be created, read, cut, written or removed.
    #[error("cannot {action} the partial file {}: {source}", .path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `--resume` with no partial file there.
    #[error(
        "{} is not there: no unfinished run to resume in this --out (run without --resume to \
         start one)",
        .0.display()
    )]
    Missing(PathBuf),
    /// A fresh run where an unfinished one's partial file is.
    #[error(
        "{} holds the finished cells of an unfinished run: continue it with --resume, or remove \
         the file to start again",
        .0.display()
    )]
    Unfinished(PathBuf),
    /// The header line was never written whole (a writer killed or a disk filled while it was
    /// written): the file holds no cell.
    #[error(
        "{}: its first line was never written whole, so it holds no finished cell; run without \
         --resume, which replaces it",
        .0.display()
    )]
    TornHeader(PathBuf),
    /// The header line is missing or does not read.
    #[error("{}: its first line is not a partial file's header ({problem}); remove it to start again", .path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// Why.
        problem: String,
    },
    /// The header names another run than the one asked for.
    #[error(
        "{} is the partial file of another run: its {field} is {recorded}, this run's is {given}; \
         resume with the command line the run started with, or remove the file to start again",
        .path.display()
    )]
    OtherRun {
        /// The file.
        path: PathBuf,
        /// The first field that differs (`scenario`, `seed`, or a dotted path in the plan).
        field: String,
        /// The recorded value, as JSON.
        recorded: String,
        /// The value of this run, as JSON.
        given: String,
    },
    /// The run's cells were signed with a per-run key, which ended with its runner.
    #[error(
        "{} was signed by a per-run key ({signer}) that ended with its runner, so the receipts \
         of its finished cells cannot be signed again by one file's key: remove it and start the \
         run again with --signing-key FILE (`runner keygen FILE` makes one), which makes it \
         resumable",
        .path.display()
    )]
    PerRunKeyGone {
        /// The file.
        path: PathBuf,
        /// The per-run key's fingerprint.
        signer: String,
    },
    /// The run was signed with a stable key, and this resume was given none.
    #[error(
        "{} was signed by the stable key {signer}: resume with that key (--signing-key FILE or \
         INTERLOCK_SIGNING_KEY)",
        .path.display()
    )]
    KeyNeeded {
        /// The file.
        path: PathBuf,
        /// The key's fingerprint.
        signer: String,
    },
    /// The run was signed with another stable key than this resume's.
    #[error(
        "{} was signed by the key {recorded}, not by the key given ({given}): resume with the \
         key the run started with",
        .path.display()
    )]
    OtherKey {
        /// The file.
        path: PathBuf,
        /// The recorded key's fingerprint.
        recorded: String,
        /// The given key's fingerprint.
        given: String,
    },
    /// A complete line that does not read, or names no place of the plan.
    #[error("{} line {line}: {problem}; the file is damaged (remove it to start again)", .path.display())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Why.
        problem: String,
    },
}

impl PartialError {
    /// Whether the error is a full disk (or quota): the run stopped because nothing more could
    /// be written, not because of what it was asked.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, PartialError::Io { source, .. } if disk_full(source))
    }
}

/// Whether `e` says the disk (or the user's quota) is full.
pub fn disk_full(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull
        || e.kind() == std::io::ErrorKind::QuotaExceeded
        || matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// An open partial file, appended to by any thread of the run.
pub struct PartialFile {
    path: PathBuf,
    file: Mutex<File>,
    /// The run's key, which signs every line.
    key: SigningKey,
}

impl std::fmt::Debug for PartialFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartialFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The cells a resumed run found finished, by their place in the plan, and whether a torn last
/// line was dropped.
#[derive(Debug)]
pub struct Finished<C> {
    /// `(place, cell)`, in the order they were written.
    pub cells: Vec<(usize, C)>,
    /// A last line without its newline was cut off (its cell runs again).
    pub dropped_torn_line: bool,
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PartialError {
    let path = path.to_owned();
    move |source| PartialError::Io {
        action,
        path,
        source,
    }
}

impl PartialFile {
    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the file at `path` with `header` as its first line, signed by `key` (written and
    /// fsynced, and the directory too). Refuses a file already there
    /// ([`PartialError::Unfinished`]).
    pub fn create<P: Serialize>(
        path: &Path,
        header: &Header<P>,
        key: &SigningKey,
    ) -> Result<Self, PartialError> {
        let line = sealed(key, header).map_err(|e| PartialError::Header {
            path: path.to_owned(),
            problem: e.to_string(),
        })?;
        let mut file = match OpenOptions::new().append(true).create_new(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(PartialError::Unfinished(path.to_owned()))
            }
            Err(e) => return Err(io_error("create", path)(e)),
        };
        let written = file.write_all(&line).and_then(|()| file.sync_all());
        if let Err(e) = written {
            // A header that did not get written whole must not stay to block the next run.
            let _ = std::fs::remove_file(path);
            return Err(io_error("write", path)(e));
        }
        sync_dir(path).map_err(io_error("sync the directory of", path))?;
        Ok(PartialFile {
            path: path.to_owned(),
            file: Mutex::new(file),
            key: key.clone(),
        })
    }

    /// Reads only the header of the file at `path` (for a resume to learn the run's seed or
    /// key before it plans): `None` when there is no file.
    pub fn read_header<P: DeserializeOwned>(
        path: &Path,
    ) -> Result<Option<Header<P>>, PartialError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("read", path)(e)),
        };
        let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        parse_header(path, first, bytes.contains(&b'\n')).map(Some)
    }

    /// Reopens the file at `path` to continue the run `expected` describes, whose plan has the
    /// cells `ids` in order, signed by `key`. Refuses a file of another run (scenario, seed,
    /// plan) or key (see [`PartialError`]); drops a torn last line (cut from the file before
    /// anything is appended); refuses a complete line that does not read, is not signed by
    /// `key` or names no place of the plan. `expected.started` is not compared.
    pub fn resume<P: Serialize, C: DeserializeOwned>(
        path: &Path,
        expected: &Header<P>,
        ids: &[String],
        key: &SigningKey,
    ) -> Result<(Self, Finished<C>), PartialError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(PartialError::Missing(path.to_owned()))
            }
            Err(e) => return Err(io_error("read", path)(e)),
        };
        // Everything up to the last newline is complete; what follows it is a torn line.
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut lines = bytes[..complete].split(|b| *b == b'\n');
        let first = lines.next().unwrap_or_default();
        let header: Header<Value> = parse_header(path, first, complete > 0)?;
        check_same_run(path, &header, expected)?;
        let public = key.verifying_key();
        opened(&public, first).map_err(|problem| PartialError::BadLine {
            path: path.to_owned(),
            line: 1,
            problem,
        })?;
        let mut cells = Vec::new();
        let mut seen = vec![false; ids.len()];
        for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
            let bad = |problem: String| PartialError::BadLine {
                path: path.to_owned(),
                line: i + 2,
                problem,
            };
            let line: Line<String, C> = serde_json::from_value(opened(&public, line).map_err(bad)?)
                .map_err(|e| bad(format!("does not read: {e}")))?;
            match ids.get(line.at) {
                Some(id) if *id == line.id => {}
                Some(id) => {
                    return Err(bad(format!(
                        "cell {} at place {} of the plan, where the plan has {id}",
                        line.id, line.at
                    )))
                }
                None => {
                    return Err(bad(format!(
                        "place {} is beyond the plan's {} cells",
                        line.at,
                        ids.len()
                    )))
                }
            }
            if std::mem::replace(&mut seen[line.at], true) {
                return Err(bad(format!("cell {} is there twice", line.id)));
            }
            cells.push((line.at, line.cell));
        }
        let dropped_torn_line = complete < bytes.len();
        let mut file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_error("open", path))?;
        if dropped_torn_line {
            file.set_len(complete as u64)
                .and_then(|()| file.sync_all())
                .map_err(io_error("cut the torn last line of", path))?;
        }
        file.seek(SeekFrom::End(0))
            .map_err(io_error("open", path))?;
        Ok((
            PartialFile {
                path: path.to_owned(),
                file: Mutex::new(file),
                key: key.clone(),
            },
            Finished {
                cells,
                dropped_torn_line,
            },
        ))
    }

    /// Appends the finished cell `id` at place `at` of the plan as one line, fsynced before it
    /// returns. A line that could not be written whole is cut off again (as far as the disk
    /// lets it: a resume drops a torn last line anyway).
    pub fn append<C: Serialize>(&self, at: usize, id: &str, cell: &C) -> Result<(), PartialError> {
        let line =
            sealed(&self.key, &Line { at, id, cell }).map_err(|e| PartialError::BadLine {
                path: self.path.clone(),
                line: 0,
                problem: format!("cell {id} cannot be serialized: {e}"),
            })?;
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = file
            .stream_position()
            .map_err(io_error("append to", &self.path))?;
        let written = file.write_all(&line).and_then(|()| file.sync_data());
        if let Err(e) = written {
            let _ = file
                .set_len(before)
                .and_then(|()| file.seek(SeekFrom::Start(before)).map(|_| ()));
            return Err(io_error("append to", &self.path)(e));
        }
        Ok(())
    }

    /// Removes the file: the run's final results are written.
    pub fn remove(self) -> Result<(), PartialError> {
        drop(self.file);
        std::fs::remove_file(&self.path).map_err(io_error("remove", &self.path))?;
        sync_dir(&self.path).map_err(io_error("sync the directory of", &self.path))
    }
}

/// The header in `line` (`complete`: the line ended in a newline).
fn parse_header<P: DeserializeOwned>(
    path: &Path,
    line: &[u8],
    complete: bool,
) -> Result<Header<P>, PartialError> {
    let header_error = |problem: String| PartialError::Header {
        path: path.to_owned(),
        problem,
    };
    if !complete {
        return Err(PartialError::TornHeader(path.to_owned()));
    }
    let mut value: Value = serde_json::from_slice(line).map_err(|e| header_error(e.to_string()))?;
    if let Value::Object(map) = &mut value {
        map.remove(SIG);
    }
    let header: Header<P> =
        serde_json::from_value(value).map_err(|e| header_error(e.to_string()))?;
    if header.format != PARTIAL_FORMAT {
        return Err(header_error(format!(
            "format {:?}, not {PARTIAL_FORMAT:?}",
            header.format
        )));
    }
    Ok(header)
}

/// `value` as a line of the file: its JSON with a last field [`SIG`], `key`'s signature (hex)
/// over the JSON without it, and a newline.
fn sealed<T: Serialize>(key: &SigningKey, value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut value = serde_json::to_value(value)?;
    let signature = key.sign(&serde_json::to_vec(&value)?);
    if let Value::Object(map) = &mut value {
        map.insert(SIG.to_owned(), hex::encode(signature.to_bytes()).into());
    }
    let mut line = serde_json::to_vec(&value)?;
    line.push(b'\n');
    Ok(line)
}

/// The value of a line written by [`sealed`], without its signature, when `key` signed it;
/// else why not, as a clause.
fn opened(key: &VerifyingKey, line: &[u8]) -> Result<Value, String> {
    let mut value: Value =
        serde_json::from_slice(line).map_err(|e| format!("does not read: {e}"))?;
    let signature = match &mut value {
        Value::Object(map) => map.remove(SIG),
        _ => return Err("is not a JSON object".to_owned()),
    };
    let signature = signature
        .as_ref()
        .and_then(Value::as_str)
        .and_then(verify::entry::decode_lower_hex::<64>)
        .map(|b| Signature::from_bytes(&b))
        .ok_or_else(|| format!("carries no signature (a `{SIG}` of 128 hex digits)"))?;
    let body = serde_json::to_vec(&value).map_err(|e| format!("does not read: {e}"))?;
    key.verify_strict(&body, &signature).map_err(|_| {
        "is not signed by the run's key: it was changed after the run wrote it".to_owned()
    })?;
    Ok(value)
}

/// Refuses a recorded header of another run (scenario, seed, key, then plan) than `expected`.
fn check_same_run<P: Serialize>(
    path: &Path,
    recorded: &Header<Value>,
    expected: &Header<P>,
) -> Result<(), PartialError> {
    let other = |field: &str, recorded: String, given: String| PartialError::OtherRun {
        path: path.to_owned(),
        field: field.to_owned(),
        recorded,
        given,
    };
    if recorded.scenario != expected.scenario {
        return Err(other(
            "scenario",
            recorded.scenario.clone(),
            expected.scenario.clone(),
        ));
    }
    if recorded.seed != expected.seed {
        return Err(other(
            "seed",
            recorded.seed.to_string(),
            expected.seed.to_string(),
        ));
    }
    let recorded_key = fingerprint(&recorded.signer);
    if !recorded.stable_key {
        return Err(PartialError::PerRunKeyGone {
            path: path.to_owned(),
            signer: recorded_key,
        });
    }
    if !expected.stable_key {
        return Err(PartialError::KeyNeeded {
            path: path.to_owned(),
            signer: recorded_key,
        });
    }
    if recorded.signer != expected.signer {
        return Err(PartialError::OtherKey {
            path: path.to_owned(),
            recorded: recorded_key,
            given: fingerprint(&expected.signer),
        });
    }
    let plan = serde_json::to_value(&expected.plan).map_err(|e| PartialError::Header {
        path: path.to_owned(),
        problem: e.to_string(),
    })?;
    if let Some((field, was, is)) = first_difference(&recorded.plan, &plan, "") {
        return Err(other(&field, was, is));
    }
    Ok(())
}

/// The first place (a dotted JSON path under `at`, empty at the top) where `a` and `b` differ,
/// with both values there as JSON; `None` when they are equal.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<(String, String, String)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let here = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, &here) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some((here, shown(p), shown(q))),
                }
            }
            None
        }
        _ if a == b => None,
        _ => Some((
            if at.is_empty() { "plan" } else { at }.to_owned(),
            shown(Some(a)),
            shown(Some(b)),
        )),
    }
}

/// A value as an error shows it: compact JSON, at most 200 characters; `absent` for none.
fn shown(v: Option<&Value>) -> String {
    match v {
        None => "absent".to_owned(),
        Some(v) => verify::display::shorten(&v.to_string(), 200).to_string(),
    }
}

/// A key's fingerprint as `verify` prints it (the hex itself when it names no key).
fn fingerprint(signer: &str) -> String {
    verify::entry::decode_lower_hex::<32>(signer)
        .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
        .map_or_else(|| signer.to_owned(), |k| verify::fingerprint(&k))
}

/// Fsyncs the directory holding `path`, so that its creation or removal is durable.
fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Plan {
        cells: u32,
        mode: String,
    }

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7; 32])
    }

    fn header(stable_key: bool) -> Header<Plan> {
        Header {
            format: PARTIAL_FORMAT.into(),
            scenario: "demo".into(),
            seed: 7,
            signer: hex::encode(key().verifying_key().to_bytes()),
            stable_key,
            started: "2026-01-01T00:00:00Z".into(),
            plan: Plan {
                cells: 3,
                mode: "x".into(),
            },
        }
    }

    fn ids() -> Vec<String> {
        ["a", "b", "c"].map(String::from).to_vec()
    }

    #[test]
    fn cells_appended_come_back_on_resume_and_a_torn_last_line_is_dropped_and_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.partial.jsonl");
        let file = PartialFile::create(&path, &header(true), &key()).unwrap();
        file.append(2, "c", &30u32).unwrap();
        file.append(0, "a", &10u32).unwrap();
        drop(file);
        // A writer killed mid-append.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"at\":1,\"id\":\"b\",\"ce").unwrap();
        drop(f);
        let (file, finished) =
            PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap();
        assert_eq!(finished.cells, vec![(2, 30), (0, 10)]);
        assert!(finished.dropped_torn_line);
        file.append(1, "b", &20u32).unwrap();
        drop(file);
        let (_, finished) =
            PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap();
        assert_eq!(finished.cells, vec![(2, 30), (0, 10), (1, 20)]);
        assert!(!finished.dropped_torn_line);
    }

    #[test]
    fn a_resume_of_another_plan_seed_or_key_is_refused_naming_what_differs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        drop(PartialFile::create(&path, &header(true), &key()).unwrap());
        let mut other = header(true);
        other.plan.mode = "y".into();
        let e = PartialFile::resume::<Plan, u32>(&path, &other, &ids(), &key()).unwrap_err();
        assert!(
            matches!(&e, PartialError::OtherRun { field, recorded, given, .. }
                if field == "mode" && recorded == "\"x\"" && given == "\"y\""),
            "{e}"
        );
        let mut seed = header(true);
        seed.seed = 8;
        let e = PartialFile::resume::<Plan, u32>(&path, &seed, &ids(), &key()).unwrap_err();
        assert!(matches!(&e, PartialError::OtherRun { field, .. } if field == "seed"));
        let e =
            PartialFile::resume::<Plan, u32>(&path, &header(false), &ids(), &key()).unwrap_err();
        assert!(matches!(e, PartialError::KeyNeeded { .. }), "{e}");
        let mut other_key = header(true);
        other_key.signer = "cd".repeat(32);
        let e = PartialFile::resume::<Plan, u32>(&path, &other_key, &ids(), &key()).unwrap_err();
        assert!(matches!(e, PartialError::OtherKey { .. }), "{e}");
        // A run signed with a per-run key cannot be resumed, whatever key is given now.
        let per_run = dir.path().join("q.jsonl");
        drop(PartialFile::create(&per_run, &header(false), &key()).unwrap());
        let e =
            PartialFile::resume::<Plan, u32>(&per_run, &header(true), &ids(), &key()).unwrap_err();
        assert!(matches!(e, PartialError::PerRunKeyGone { .. }), "{e}");
        assert!(e.to_string().contains("--signing-key FILE"), "{e}");
    }

    #[test]
    fn a_damaged_line_a_cell_of_another_plan_or_a_second_run_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let file = PartialFile::create(&path, &header(true), &key()).unwrap();
        file.append(0, "a", &1u32).unwrap();
        drop(file);
        assert!(matches!(
            PartialFile::create(&path, &header(true), &key()),
            Err(PartialError::Unfinished(_))
        ));
        let clean = std::fs::read_to_string(&path).unwrap();
        let mut text = clean.clone();
        text.push_str("not json\n");
        std::fs::write(&path, &text).unwrap();
        let e = PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap_err();
        assert!(matches!(e, PartialError::BadLine { line: 3, .. }), "{e}");
        // A line written by the run, naming a cell the plan does not have there.
        std::fs::write(&path, &clean).unwrap();
        let (file, _) =
            PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap();
        file.append(1, "z", &2u32).unwrap();
        drop(file);
        let e = PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap_err();
        assert!(e.to_string().contains("where the plan has b"), "{e}");
        let missing = dir.path().join("none.jsonl");
        assert!(matches!(
            PartialFile::resume::<Plan, u32>(&missing, &header(true), &ids(), &key()),
            Err(PartialError::Missing(_))
        ));
        assert!(PartialFile::read_header::<Plan>(&missing)
            .unwrap()
            .is_none());
        assert_eq!(
            PartialFile::read_header::<Plan>(&path)
                .unwrap()
                .unwrap()
                .seed,
            7
        );
    }

    #[test]
    fn a_line_changed_after_it_was_written_is_refused_and_never_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let file = PartialFile::create(&path, &header(true), &key()).unwrap();
        file.append(0, "a", &10u32).unwrap();
        drop(file);
        let clean = std::fs::read_to_string(&path).unwrap();
        assert!(clean.lines().all(|l| l.contains("\"sig\":\"")), "{clean}");
        // A cell's value changed, its signature kept.
        std::fs::write(&path, clean.replace("\"cell\":10", "\"cell\":11")).unwrap();
        let e = PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap_err();
        assert!(
            matches!(&e, PartialError::BadLine { line: 2, problem, .. }
                if problem.contains("not signed by the run's key")),
            "{e}"
        );
        // The header's start time changed: not compared with this run's, but signed.
        std::fs::write(&path, clean.replace("2026-01-01", "2026-01-02")).unwrap();
        let e = PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap_err();
        assert!(matches!(&e, PartialError::BadLine { line: 1, .. }), "{e}");
        // A line without its signature.
        let unsigned = format!("{}{{\"at\":1,\"id\":\"b\",\"cell\":2}}\n", clean);
        std::fs::write(&path, unsigned).unwrap();
        let e = PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap_err();
        assert!(e.to_string().contains("carries no signature"), "{e}");
        std::fs::write(&path, &clean).unwrap();
        let (_, finished) =
            PartialFile::resume::<Plan, u32>(&path, &header(true), &ids(), &key()).unwrap();
        assert_eq!(finished.cells, vec![(0, 10)]);
    }
}
