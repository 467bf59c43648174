//! The journal's high-water marks (DESIGN §2.5): a file beside the journal, `<journal>.marks`,
//! holding two lines per journal entry, written under the journal lock: an **intent**
//! (`i <hash> "<effect id>"`, fsynced before the entry is written) and a **mark** (`<hash>
//! "<effect id>"`, written after the entry's fsync, made durable by the next fsync of the file).
//!
//! An older copy of the journal is a valid prefix of every chain, so the journal alone cannot
//! tell it was rolled back. Its marks can: a journal whose entries end before its marks do
//! (restored from a backup, or emptied) is refused, naming the effect whose entries are missing;
//! so is one whose lines differ from their marks (rewritten), and one holding any line that no
//! intent announced (merged in from elsewhere: another journal, or a fork of this one that a
//! gate appended to). What a crash leaves is told apart by the intent:
//! - an intent with neither its entry nor its mark: the crash came before the entry was durable
//!   (a torn line, cut before the next append); the dispatch it would have opened never happened;
//! - an intent and its entry without the mark: the crash came after the entry; the next holder
//!   of the lock writes the mark.
//!
//! Marks written before intents existed (one mark line per entry, no intent) are still read as
//! marks: a journal keeps working across the upgrade, and its last entry must be marked.
//!
//! The marks also hold, per effect, the generation of the latest claim record written (an `r`
//! line, written under the lock after the record): a record put back from an older copy of its
//! claim file carries an older generation and is not believed.
//!
//! What the marks cannot see: someone who restores (or deletes) the journal *and* its marks
//! together, or who writes intents for the lines they merge. A journal found without a marks
//! file adopts its lines as they are (the first open after an upgrade, or after such a
//! deletion); the target anchor of every send (§3.4) still shows what was sent. After a power
//! loss the last entry's mark may be lost with it (it is not fsynced on its own): that entry is
//! then announced by its intent only, and removing it too is not seen.

use crate::fsio;
use crate::journal::{io_err, JournalError};
use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The marks of one journal, read (and checked against its entries) as far as the entries go.
pub(crate) struct Marks {
    file: File,
    path: PathBuf,
    /// Bytes of complete mark lines consumed.
    len: u64,
    /// Bytes read past `len` that do not yet end a line.
    pending: Vec<u8>,
    /// Journal entries (hash, effect id) whose intent has not been read yet, oldest first.
    unmarked: VecDeque<(String, String)>,
    /// Entries matched with their intents whose marks have not been read yet, oldest first
    /// (a group commit writes the intents of several entries, then their marks).
    awaiting_mark: VecDeque<(String, String)>,
    /// Intents read before their entries, oldest first: a crash before the entry, or (without
    /// the lock) an entry not read yet.
    announced: VecDeque<(String, String)>,
    /// Entries this process announced and is appending, oldest first: each gets its mark, in
    /// this order, once the fsync that covered it returned.
    own: VecDeque<(String, String)>,
    /// The marks file was created by this open: the journal's existing lines are adopted.
    adopting: bool,
    /// The latest claim-record generation written for each effect (from the `r` lines).
    records: HashMap<String, u64>,
}

/// The marks file of the journal whose canonical path is `canonical_journal`.
pub(crate) fn path_of(canonical_journal: &Path) -> PathBuf {
    let mut s = canonical_journal.as_os_str().to_owned();
    s.push(".marks");
    PathBuf::from(s)
}

fn adopting_path(marks: &Path) -> PathBuf {
    let mut s = marks.as_os_str().to_owned();
    s.push(".adopting");
    PathBuf::from(s)
}

/// `<hash> "<effect id>"`, as a mark or after an intent's `i `.
fn parse_mark(body: &str) -> Option<(String, String)> {
    let (h, e) = body.split_once(' ')?;
    Some((h.to_owned(), serde_json::from_str::<String>(e).ok()?))
}

/// The effect id as a JSON string: any id the low-level API accepts stays on one line.
fn quoted(effect_id: &str) -> String {
    serde_json::Value::String(effect_id.to_owned()).to_string()
}

fn intent_line(hash: &str, effect_id: &str) -> Vec<u8> {
    format!("i {hash} {}\n", quoted(effect_id)).into_bytes()
}

fn mark_line(hash: &str, effect_id: &str) -> Vec<u8> {
    format!("{hash} {}\n", quoted(effect_id)).into_bytes()
}

/// A claim record's mark: `r <generation> "<effect id>"` (an entry's hash never starts `r`).
fn record_line(gen: u64, effect_id: &str) -> Vec<u8> {
    format!("r {gen} {}\n", quoted(effect_id)).into_bytes()
}

impl Marks {
    /// Open (creating if missing) the marks of the journal at `canonical_journal`. Call with
    /// the journal lock held: a file created here adopts the journal's lines, and no other
    /// process may mark them meanwhile.
    pub(crate) fn open(canonical_journal: &Path) -> Result<Marks, JournalError> {
        let path = path_of(canonical_journal);
        let adopting = !path.exists();
        // Adopted marks are written aside and put in place whole: a crash while adopting leaves
        // no marks file rather than one that stops halfway.
        let opened = if adopting {
            adopting_path(&path)
        } else {
            path.clone()
        };
        let file = fsio::open(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(adopting),
            &opened,
        )
        .map_err(io_err("open the marks file", &opened))?;
        Ok(Marks {
            file,
            path,
            len: 0,
            pending: Vec::new(),
            unmarked: VecDeque::new(),
            awaiting_mark: VecDeque::new(),
            announced: VecDeque::new(),
            own: VecDeque::new(),
            adopting,
            records: HashMap::new(),
        })
    }

    fn behind(&self, effect_id: String, hash: String, why: String) -> JournalError {
        JournalError::RolledBack {
            path: self.path.clone(),
            effect_id,
            hash,
            why,
        }
    }

    /// A journal entry was read (and checked): match it with its mark, if that was written.
    /// `locked`: the journal lock is held (a crashed writer's missing mark is then written).
    pub(crate) fn seen(
        &mut self,
        hash: &str,
        effect_id: &str,
        locked: bool,
    ) -> Result<(), JournalError> {
        if self.adopting && locked {
            self.write(&mark_line(hash, effect_id), false)?;
            return Ok(());
        }
        self.unmarked
            .push_back((hash.to_owned(), effect_id.to_owned()));
        self.match_marks(false)
    }

    /// Every entry has been read: under the lock, the marks must end where the entries do
    /// (every entry announced by its intent; the last one's missing mark is then written);
    /// without it, marks written for entries not read yet are left for the next look.
    pub(crate) fn caught_up(&mut self, locked: bool) -> Result<(), JournalError> {
        if !locked {
            return self.match_marks(false);
        }
        if self.adopting {
            self.sync()?;
            fsio::rename(&adopting_path(&self.path), &self.path)
                .map_err(io_err("put the adopted marks file in place", &self.path))?;
            fsio::sync_parent(&self.path);
            self.adopting = false;
            return Ok(());
        }
        self.match_marks(true)?;
        if let Some((hash, eid)) = self.unmarked.front().cloned() {
            return Err(JournalError::Unmarked {
                path: self.path.clone(),
                effect_id: eid,
                hash,
                count: self.unmarked.len(),
            });
        }
        // An intent without its entry: the crash came before the entry was durable. The next
        // intent supersedes it.
        self.announced.clear();
        if self.awaiting_mark.is_empty() {
            return Ok(());
        }
        while let Some((hash, eid)) = self.awaiting_mark.pop_front() {
            self.write(&mark_line(&hash, &eid), false)?;
        }
        self.sync()
    }

    /// Announce, under the lock, the entry this process is about to append. Not fsynced here:
    /// the journal's group commit fsyncs the marks (so every intent of its batch) before it
    /// writes the batch's entries.
    pub(crate) fn intend(&mut self, hash: &str, effect_id: &str) -> Result<(), JournalError> {
        if let Some((h, e)) = self.unmarked.front().cloned() {
            // `caught_up` under the same lock left nothing unmarked; anything else is a bug
            // worth stopping for rather than a mark written out of order.
            return Err(JournalError::Unmarked {
                path: self.path.clone(),
                effect_id: e,
                hash: h,
                count: self.unmarked.len(),
            });
        }
        self.write(&intent_line(hash, effect_id), false)?;
        self.own.push_back((hash.to_owned(), effect_id.to_owned()));
        Ok(())
    }

    /// Mark an entry this process just appended (and fsynced), under the lock, in the order of
    /// their intents. Not fsynced on its own: every reader sees it at once, and the next group
    /// commit's fsync of the marks makes it durable.
    pub(crate) fn appended(&mut self, hash: &str, effect_id: &str) -> Result<(), JournalError> {
        if self.own.front() != Some(&(hash.to_owned(), effect_id.to_owned())) {
            return Err(self.behind(
                effect_id.to_owned(),
                hash.to_owned(),
                "an entry was appended without its intent".into(),
            ));
        }
        self.own.pop_front();
        self.write(&mark_line(hash, effect_id), false)
    }

    /// A handle that makes every mark line written so far durable, usable without the journal's
    /// mutex (the group commit's first step).
    pub(crate) fn sync_handle(&self) -> Result<SyncHandle, JournalError> {
        let file = self
            .file
            .try_clone()
            .map_err(io_err("open the marks file again", &self.path))?;
        Ok(SyncHandle {
            file,
            path: self.path.clone(),
        })
    }

    /// The latest claim-record generation marked for `effect_id` (as far as the marks were read:
    /// all of them under the lock).
    pub(crate) fn record_gen(&self, effect_id: &str) -> Option<u64> {
        self.records.get(effect_id).copied()
    }

    /// Mark that the claim record of generation `gen` of `effect_id` was written, under the lock
    /// (after [`Marks::caught_up`], so every earlier mark was read). Not fsynced here: the caller
    /// waits for the journal's next group commit, which fsyncs the marks.
    pub(crate) fn record_written(&mut self, effect_id: &str, gen: u64) -> Result<(), JournalError> {
        self.write(&record_line(gen, effect_id), false)?;
        self.records.insert(effect_id.to_owned(), gen);
        Ok(())
    }

    /// Read mark lines and match them with the entries read, oldest first; `to_end`: read
    /// every complete mark line (one for an entry the journal does not hold means the journal is
    /// behind its marks).
    fn match_marks(&mut self, to_end: bool) -> Result<(), JournalError> {
        loop {
            self.match_announced();
            if !(to_end || !self.unmarked.is_empty() || !self.awaiting_mark.is_empty()) {
                break;
            }
            let Some(line) = self.next_line()? else {
                return Ok(());
            };
            let text = String::from_utf8_lossy(&line).into_owned();
            if let Some(record) = text.strip_prefix("r ") {
                let (gen, eid) = self.parse_record(record, &text)?;
                self.records.insert(eid, gen);
                continue;
            }
            let (is_intent, body) = match text.strip_prefix("i ") {
                Some(body) => (true, body),
                None => (false, text.as_str()),
            };
            let mark = parse_mark(body).ok_or_else(|| JournalError::Corrupt {
                path: self.path.clone(),
                line: 0,
                reason: format!("a mark is not `[i ]<hash> \"<effect id>\"`: {text:?}"),
            })?;
            if is_intent {
                self.intent_read(mark)?;
            } else {
                self.mark_read(mark)?;
            }
        }
        Ok(())
    }

    fn parse_record(&self, record: &str, text: &str) -> Result<(u64, String), JournalError> {
        record
            .split_once(' ')
            .and_then(|(g, e)| {
                Some((
                    g.parse::<u64>().ok()?,
                    serde_json::from_str::<String>(e).ok()?,
                ))
            })
            .ok_or_else(|| JournalError::Corrupt {
                path: self.path.clone(),
                line: 0,
                reason: format!("a record mark is not `r <generation> \"<effect id>\"`: {text:?}"),
            })
    }

    /// An intent: it announces an entry, read already or still to come.
    fn intent_read(&mut self, intent: (String, String)) -> Result<(), JournalError> {
        self.announced.push_back(intent);
        self.match_announced();
        Ok(())
    }

    /// Match entries read with the intents read before them. Entries are appended in the order
    /// of their intents, so an announced intent before the one naming the next entry announced
    /// an entry that never came (a crash before it).
    fn match_announced(&mut self) {
        while let Some(front) = self.unmarked.front() {
            let Some(at) = self.announced.iter().position(|a| a == front) else {
                return;
            };
            self.announced.drain(..=at);
            if let Some(entry) = self.unmarked.pop_front() {
                self.awaiting_mark.push_back(entry);
            }
        }
    }

    /// A mark: the entry it names was durable. It must be the entry its intent matched, or
    /// (marks from before intents) the next entry read.
    fn mark_read(&mut self, mark: (String, String)) -> Result<(), JournalError> {
        if self.awaiting_mark.front() == Some(&mark) {
            self.awaiting_mark.pop_front();
            return Ok(());
        }
        // A mark from before intents: it names the next entry read (entries and marks are in
        // the same order, so the entry is always read before its mark is looked for).
        if self.awaiting_mark.is_empty()
            && self.announced.is_empty()
            && self.unmarked.front() == Some(&mark)
        {
            self.unmarked.pop_front();
            return Ok(());
        }
        let (mark_hash, mark_eid) = mark;
        let why = match self.unmarked.front() {
            None => "the journal ends before its marks do: its later entries were removed \
                     (an older copy restored, or the file emptied)"
                .to_owned(),
            Some((hash, eid)) => format!(
                "where its marks have this entry the journal has entry {hash} of effect {eid}: \
                 the journal was rewritten"
            ),
        };
        Err(self.behind(mark_eid, mark_hash, why))
    }
    /// The next complete mark line (without its newline), if one was written.
    ///
    /// A line holding a NUL byte is where a crash dropped an unsynced write while keeping a
    /// later one (the file was extended past a hole): no fsync came after that write, so
    /// nothing after it is durable either, and like a torn last line it is left unread and cut
    /// before the next write. Mark lines never hold a NUL.
    fn next_line(&mut self) -> Result<Option<Vec<u8>>, JournalError> {
        loop {
            let first_line = self
                .pending
                .split(|b| *b == b'\n')
                .next()
                .unwrap_or_default();
            if first_line.contains(&0) {
                return Ok(None);
            }
            if let Some(i) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                self.len += line.len() as u64;
                return Ok(Some(line[..line.len() - 1].to_vec()));
            }
            let mut chunk = vec![0u8; 1 << 16];
            let at = self.len + self.pending.len() as u64;
            let n = self
                .file
                .read_at(&mut chunk, at)
                .map_err(io_err("read the marks file", &self.path))?;
            if n == 0 {
                return Ok(None);
            }
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }

    /// Write `line` after the last complete mark (cutting a torn one a crash left there).
    fn write(&mut self, line: &[u8], sync: bool) -> Result<(), JournalError> {
        let at = self.len;
        fsio::write_at(&self.file, &self.path, line, at)
            .map_err(io_err("write the marks file", &self.path))?;
        self.len += line.len() as u64;
        if !self.pending.is_empty() {
            self.pending.clear();
            fsio::set_len(&self.file, &self.path, self.len)
                .map_err(io_err("cut the torn tail of the marks file", &self.path))?;
        }
        if sync {
            self.sync()?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), JournalError> {
        fsio::sync(&self.file, &self.path, false).map_err(io_err("sync the marks file", &self.path))
    }
}

/// A second descriptor of the marks file, to sync it with the journal's mutex let go.
pub(crate) struct SyncHandle {
    file: File,
    path: PathBuf,
}

impl SyncHandle {
    /// Make every mark line written so far durable.
    pub(crate) fn sync(&self) -> std::io::Result<()> {
        fsio::sync(&self.file, &self.path, false)
    }
}

/// Remove the mark of the entry `hash` of the journal at `journal`, if it is the last entry
/// marked, with the claim-record marks after it, keeping its intent: what a crash after that
/// entry's bytes were written but before they were durable leaves (the intent is durable before
/// the entry is written, the mark is written only after the entry's fsync). For harnesses that
/// tear a journal's last line to stand for such a crash. Returns whether a mark was removed.
pub fn unmark_torn_entry(journal: &Path, hash: &str) -> Result<bool, JournalError> {
    let canonical =
        std::fs::canonicalize(journal).map_err(io_err("resolve the path of", journal))?;
    let path = path_of(&canonical);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_err("read the marks file", &path)(e)),
    };
    // The entry's mark, and whatever was marked after it (the claim record the same step wrote
    // next): a crash mid-entry comes before both.
    let wanted = format!("{hash} ");
    let mut start = None;
    let mut at = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if line.starts_with(wanted.as_bytes()) {
            start = Some(at);
        }
        at += line.len();
    }
    let Some(start) = start else {
        return Ok(false);
    };
    let after = &bytes[start..];
    let only_records_follow = after
        .split_inclusive(|b| *b == b'\n')
        .skip(1)
        .all(|l| l.starts_with(b"r "));
    if !only_records_follow {
        return Ok(false);
    }
    let file = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(io_err("open the marks file", &path))?;
    file.set_len(start as u64)
        .and_then(|()| file.sync_data())
        .map_err(io_err("cut the marks file", &path))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_without_the_lock_matches_a_group_commits_intents_and_marks_as_entries_arrive() {
        // A group commit of two entries: both intents, then (after the fsyncs) both marks. A
        // reader that sees the first entry before the second is written, and the second mark
        // only later, matches each entry with its own intent and mark.
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.jsonl");
        let marks = path_of(&journal);
        let mut text = Vec::new();
        text.extend(intent_line("aa", "e1"));
        text.extend(intent_line("bb", "e2"));
        text.extend(mark_line("aa", "e1"));
        std::fs::write(&marks, &text).unwrap();
        let mut m = Marks::open(&journal).unwrap();
        m.seen("aa", "e1", false).unwrap();
        m.caught_up(false).unwrap();
        let more = mark_line("bb", "e2");
        let file = OpenOptions::new().append(true).open(&marks).unwrap();
        file.write_all_at(&more, text.len() as u64).unwrap();
        m.seen("bb", "e2", false).unwrap();
        m.caught_up(false).unwrap();
        assert!(m.unmarked.is_empty() && m.awaiting_mark.is_empty());
    }

    #[test]
    fn under_the_lock_a_batch_cut_short_by_a_crash_gets_the_marks_of_the_entries_it_wrote() {
        // Intents of three entries were durable, the first two entries were written, then the
        // process died before any mark: the next holder marks those two and drops the third
        // intent (its entry never came).
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.jsonl");
        let marks = path_of(&journal);
        let mut text = Vec::new();
        for (h, e) in [("aa", "e1"), ("bb", "e2"), ("cc", "e3")] {
            text.extend(intent_line(h, e));
        }
        std::fs::write(&marks, &text).unwrap();
        let mut m = Marks::open(&journal).unwrap();
        m.seen("aa", "e1", true).unwrap();
        m.seen("bb", "e2", true).unwrap();
        m.caught_up(true).unwrap();
        let after = std::fs::read_to_string(&marks).unwrap();
        assert!(after.ends_with("aa \"e1\"\nbb \"e2\"\n"), "{after}");
        assert!(m.announced.is_empty());
    }

    #[test]
    fn a_hole_a_crash_left_in_the_unsynced_marks_is_cut_like_a_torn_tail() {
        // Found by the crash-state search: an entry's mark (not synced on its own) was dropped by
        // the crash while the next intent, written after it, was kept: the file holds zeros
        // where the mark was. The entry is durable and announced; the next holder marks it
        // again and the hole is cut, rather than the journal being refused as corrupt.
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.jsonl");
        let marks = path_of(&journal);
        let mut text = intent_line("aa", "e1");
        text.extend(vec![0u8; mark_line("aa", "e1").len()]);
        text.extend(intent_line("bb", "e2"));
        std::fs::write(&marks, &text).unwrap();
        let mut m = Marks::open(&journal).unwrap();
        m.seen("aa", "e1", true).unwrap();
        m.caught_up(true).unwrap();
        let after = std::fs::read(&marks).unwrap();
        let mut want = intent_line("aa", "e1");
        want.extend(mark_line("aa", "e1"));
        assert_eq!(
            String::from_utf8_lossy(&after),
            String::from_utf8_lossy(&want)
        );
    }
}
