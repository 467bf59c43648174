//! A section of the PostgreSQL journal: one effect under its lock (or a lock-free view),
//! catching up on the rows committed since the last look, reading entries back and appending.

use super::{budget_key, column, db_err, PgSection};
use crate::journal::{sealed_line, verify_signatures, EntryLoc, Index, JournalError, PendingSig};
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};
use std::path::Path;
use verify::entry::Kind;

impl PgSection<'_> {
    /// True under an effect's lock, false for a lock-free view.
    pub(crate) fn holds_lock(&self) -> bool {
        self.effect.is_some()
    }

    /// Take budget `id`'s admission lock (after the effect's: the order is always effect, then
    /// budget) and read every row committed before it was taken: every DISPATCHED of the budget
    /// and every entry that resolved one, since those are written under it. Held until the
    /// section ends, so the entry that decides is committed before another admission reads.
    pub(crate) fn lock_budget(&mut self, id: &str) -> Result<(), JournalError> {
        if self.effect.is_none() {
            return Err(JournalError::Poisoned {
                path: self.store.shown.clone(),
                reason: format!("budget {id:?} was to be locked without an effect's lock"),
            });
        }
        let key = budget_key(&self.store.schema, id);
        if self.budget != Some(key) {
            if let Some(other) = self.budget.take() {
                self.unlock(other);
            }
            self.store
                .advisory_lock(&mut self.main, key, &format!("budget {id}"))?;
            self.budget = Some(key);
        }
        self.refresh()
    }

    pub(super) fn unlock(&mut self, key: i64) {
        // If the unlock fails the connection is broken, and its session's locks are gone.
        let _ = self
            .main
            .client
            .execute("SELECT pg_advisory_unlock($1)", &[&key]);
    }

    /// The database, without credentials.
    pub(crate) fn shown(&self) -> &Path {
        &self.store.shown
    }

    /// The generation of the effect's claim record (0 before the first).
    pub fn record_gen(&self, effect_id: &str) -> Result<u64, JournalError> {
        self.store.record_gen(effect_id)
    }

    /// The index of checked entries.
    pub fn index(&self) -> &Index {
        &self.main.index
    }

    fn corrupt(&self, line: u64, reason: String) -> JournalError {
        JournalError::Corrupt {
            path: self.store.shown.clone(),
            line,
            reason,
        }
    }

    /// Read and check the rows committed since the last look.
    pub(super) fn refresh(&mut self) -> Result<(), JournalError> {
        self.refresh_after(None)
    }

    /// Take session advisory lock `lock` first if one is given (bounded: `Busy` past the lock
    /// wait), then read and check the rows committed since the last look.
    pub(super) fn refresh_after(&mut self, lock: Option<i64>) -> Result<(), JournalError> {
        if let Some(reason) = &self.main.index.poisoned {
            return Err(JournalError::Poisoned {
                path: self.store.shown.clone(),
                reason: reason.clone(),
            });
        }
        let name = self.store.name();
        let horizon = self.main.horizon;
        let rows = self.read_since(lock, horizon, &name)?;
        let mut sigs = Vec::with_capacity(rows.len());
        let mut unmarked = Unmarked::default();
        let mut next_horizon = horizon;
        for row in &rows {
            next_horizon = next_horizon.max(int(row.get(0), &name, "the horizon")?);
            self.ingest_row(row, &name, &mut sigs, &mut unmarked)?;
        }
        self.main.horizon = next_horizon;
        self.main.ahead.retain(|_, xid| *xid >= next_horizon);
        self.check_caught_up(&sigs, unmarked)
    }

    /// Take `lock` first if one is given, then read every row at or past `horizon`, in one
    /// statement; each row of the answer carries the statement's horizon first.
    fn read_since(
        &mut self,
        lock: Option<i64>,
        horizon: i64,
        name: &str,
    ) -> Result<Vec<postgres::SimpleQueryRow>, JournalError> {
        // One statement, so one snapshot: its horizon (the oldest transaction still in
        // progress) and every row committed before it. Rows at or past the last horizon are
        // read again until the horizon passes them (those already indexed are skipped). Only
        // integers are spliced into the text.
        let take = lock.map_or(String::new(), |k| format!("SELECT pg_advisory_lock({k}); "));
        let sql = format!(
            "{take}SELECT h.x::text, e.seq::text, e.line, (m.hash IS NOT NULL)::text, e.xid::text \
             FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x) h \
             LEFT JOIN (interlock_entries e LEFT JOIN interlock_marks m ON m.hash = e.hash) \
             ON e.xid >= '{horizon}'::xid8 \
             ORDER BY e.seq"
        );
        let answer = self.main.client.simple_query(&sql).map_err(|e| {
            if lock.is_some() && e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
                JournalError::Busy {
                    path: self.store.shown.clone(),
                    waited_ms: u64::try_from(self.store.lock_wait.as_millis()).unwrap_or(u64::MAX),
                }
            } else {
                db_err(name, "lock and read the journal")(e)
            }
        })?;
        Ok(answer
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) if r.len() == 5 => Some(r),
                _ => None,
            })
            .collect())
    }

    /// Check and index one row of a catch-up (none when it carries the horizon only, or was
    /// indexed already): its signature is left in `sigs`, a row without its mark is noted in
    /// `unmarked`; a row that does not check poisons the index.
    fn ingest_row(
        &mut self,
        row: &postgres::SimpleQueryRow,
        name: &str,
        sigs: &mut Vec<PendingSig>,
        unmarked: &mut Unmarked,
    ) -> Result<(), JournalError> {
        if row.get(1).is_none() {
            // No row past the horizon: the one line carries the horizon only.
            return Ok(());
        }
        let seq = int(row.get(1), name, "a row's seq")?;
        let xid = int(row.get(4), name, "a row's transaction")?;
        if self.main.ahead.contains_key(&seq) {
            return Ok(());
        }
        self.main.ahead.insert(seq, xid);
        let line: &str = row.get(2).ok_or_else(|| bad(name, "a row's line"))?;
        let marked = row.get(3) == Some("true");
        let line_no = self.main.index.lines + 1;
        let checked = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(entry)) => {
                let loc = EntryLoc {
                    tag: 0,
                    offset: u64::try_from(seq).unwrap_or(0),
                    len: 0,
                };
                let trusted = &self.store.trusted;
                self.main.index.ingest(&entry, loc, trusted)
            }
            Ok(_) => Err("not a JSON object".to_owned()),
            Err(e) => Err(format!("not JSON: {e}")),
        };
        match checked {
            Ok(sig) => {
                sigs.push(sig);
                if !marked {
                    unmarked.note(line);
                }
            }
            Err(reason) => {
                let e = self.corrupt(line_no, format!("row {seq}: {reason}"));
                return Err(self.poison(e));
            }
        }
        self.main.index.lines += 1;
        Ok(())
    }

    /// The end of a catch-up: every signature read verifies and every row carries its mark,
    /// else the index is poisoned.
    fn check_caught_up(
        &mut self,
        sigs: &[PendingSig],
        unmarked: Unmarked,
    ) -> Result<(), JournalError> {
        if let Err(line) = verify_signatures(sigs) {
            let e = self.corrupt(line, "its signature does not verify for its signer".into());
            return Err(self.poison(e));
        }
        if let Some((effect_id, hash)) = unmarked.first {
            let e = JournalError::Unmarked {
                path: self.store.shown.clone(),
                effect_id,
                hash,
                count: unmarked.count,
            };
            return Err(self.poison(e));
        }
        Ok(())
    }

    /// Poison the index with `e` (a reason given earlier stays) and give `e` back.
    fn poison(&mut self, e: JournalError) -> JournalError {
        self.main.index.poisoned.get_or_insert(e.to_string());
        e
    }

    /// The `index`-th entry of an effect, read back from its row.
    pub fn entry(&self, effect_id: &str, index: usize) -> Result<Map<String, Value>, JournalError> {
        let Some(loc) = self.main.index.loc(effect_id, index) else {
            return Err(self.corrupt(0, format!("effect {effect_id} has no entry #{index}")));
        };
        let seq = i64::try_from(loc.offset).unwrap_or(i64::MAX);
        // Reading through the section's guard: a shared borrow of the client is not enough for
        // the driver, so the row is fetched with the same connection under the same guard.
        let mut client = self.store.row_reader()?;
        let name = self.store.name();
        let row = client
            .query_one("SELECT line FROM interlock_entries WHERE seq = $1", &[&seq])
            .map_err(db_err(&name, "read an entry"))?;
        let line: &str = column(&row, 0, &name, "reading an entry")?;
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) if crate::journal::reread_matches(&m, loc) => Ok(m),
            _ => Err(self.corrupt(
                0,
                format!("row {seq} changed since it was checked (edited past the triggers)"),
            )),
        }
    }

    /// Append one sealed entry of the locked effect: one committed INSERT. The unique
    /// `(effect_id, prev)` refuses a second row after the same hash, were two writers ever to
    /// hold one effect's lock at once.
    pub fn append(
        &mut self,
        effect_id: &str,
        kind: Kind,
        fields: Map<String, Value>,
        ts_ms: u64,
        key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        if self.effect.as_ref().map(|(e, _)| e.as_str()) != Some(effect_id) {
            return Err(JournalError::Poisoned {
                path: self.store.shown.clone(),
                reason: format!("an append to effect {effect_id} was attempted without its lock"),
            });
        }
        let tip = self.main.index.tip(effect_id);
        let prev = tip.0.clone();
        let (entry, line) = sealed_line(tip, effect_id, kind, fields, ts_ms, key)?;
        let line = String::from_utf8(line).map_err(|e| self.corrupt(0, e.to_string()))?;
        let hash = entry
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = self.store.name();
        let row = self
            .main
            .client
            .query_one(
                "WITH mark AS (INSERT INTO interlock_marks (hash) VALUES ($3)) \
                 INSERT INTO interlock_entries (effect_id, prev, hash, line) \
                 VALUES ($1, $2, $3, $4) RETURNING seq, xid::text::bigint",
                &[&effect_id, &prev, &hash, &line],
            )
            .map_err(db_err(&name, "append to the journal"))?;
        let seq: i64 = column(&row, 0, &name, "appending to the journal")?;
        let xid: i64 = column(&row, 1, &name, "appending to the journal")?;
        let line_no = self.main.index.lines + 1;
        let loc = EntryLoc {
            offset: u64::try_from(seq).unwrap_or(0),
            len: 0,
            tag: 0,
        };
        let folded = self.main.index.fold(effect_id, &entry, loc);
        self.main.index.lines += 1;
        // Read again by catch-ups until the horizon passes it: skipped there.
        self.main.ahead.insert(seq, xid);
        if let Err(reason) = folded {
            let e = self.corrupt(line_no, reason);
            self.main.index.poisoned.get_or_insert(e.to_string());
            return Err(e);
        }
        Ok(entry)
    }
}

impl Drop for PgSection<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.budget.take() {
            self.unlock(key);
        }
        if let Some((_, key)) = self.effect.take() {
            self.unlock(key);
        }
    }
}

/// Rows of a catch-up without their mark: the first one's effect id and hash, and how many.
#[derive(Default)]
struct Unmarked {
    first: Option<(String, String)>,
    count: usize,
}

impl Unmarked {
    /// Count the row whose line is `line`, and keep its effect id and hash if it is the first.
    fn note(&mut self, line: &str) {
        self.count += 1;
        if self.first.is_none() {
            let text = |e: &Value, k: &str| {
                e.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let entry: Value = serde_json::from_str(line).unwrap_or_default();
            self.first = Some((text(&entry, "effect_id"), text(&entry, "hash")));
        }
    }
}

/// The error for an answer to reading the journal whose `what` is missing or not an integer.
fn bad(name: &str, what: &str) -> JournalError {
    JournalError::Database {
        what: format!("{name}: unexpected answer to reading the journal"),
        detail: format!("{what} is missing or not an integer"),
    }
}

/// A catch-up row's column `v` as an integer.
fn int(v: Option<&str>, name: &str, what: &str) -> Result<i64, JournalError> {
    v.and_then(|t| t.parse::<i64>().ok())
        .ok_or_else(|| bad(name, what))
}
