//! A section of the PostgreSQL journal: one effect under its lock (or a lock-free view) on a
//! connection of its own, catching up on the rows committed since the last look, reading
//! entries back and appending. The index is shared by every section of the store and locked
//! only while rows are folded in or read out, so sections of different effects go on in
//! parallel, each waiting only for its own round trips.

use super::{budget_key, column, db_err, Conn, PgSection, Shared};
use crate::claim::ClaimRecord;
use crate::journal::{
    read_check, sealed_line, verify_signatures, EntryLoc, Index, JournalError, PendingSig,
};
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};
use std::cell::RefMut;
use std::path::Path;
use verify::entry::Kind;

impl PgSection<'_> {
    /// True under an effect's lock, false for a lock-free view.
    pub(crate) fn holds_lock(&self) -> bool {
        self.effect.is_some()
    }

    /// Whether this section's connection was lost (or closed after a failed unlock).
    pub(super) fn lost(&self) -> bool {
        self.conn
            .borrow()
            .as_ref()
            .is_none_or(|c| c.client.is_closed())
    }

    /// This section's connection.
    fn conn(&self) -> Result<RefMut<'_, Conn>, JournalError> {
        RefMut::filter_map(self.conn.borrow_mut(), |c| c.as_deref_mut()).map_err(|_| {
            JournalError::Poisoned {
                path: self.store.shown.clone(),
                reason: "a section was used after its connection was given back".into(),
            }
        })
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
        if self.budget == Some(key) {
            return self.refresh();
        }
        if let Some(other) = self.budget.take() {
            self.unlock(&[other]);
        }
        // As for the effect's lock: the lock and the catch-up in one round trip.
        match self.refresh_after(Some(key)) {
            Ok(()) => {
                self.budget = Some(key);
                Ok(())
            }
            Err(e) => {
                // Even after `Busy`: the lock can be granted while its statement still fails
                // (the timeout firing as the holder lets go, or the catch-up waiting on a
                // table lock). Letting go of a lock not held only answers false.
                self.unlock(&[key]);
                Err(e)
            }
        }
    }

    /// Let session locks `keys` go, in one round trip. If that fails the connection is closed
    /// here (its session's locks go with it), so it never goes back to the pool holding one.
    pub(super) fn unlock(&self, keys: &[i64]) {
        if keys.is_empty() {
            return;
        }
        let calls: Vec<String> = keys
            .iter()
            .map(|k| format!("pg_advisory_unlock({k})"))
            .collect();
        let mut slot = self.conn.borrow_mut();
        // Only integers are spliced into the text.
        let sql = format!("SELECT {}", calls.join(", "));
        if let Some(conn) = slot.as_mut() {
            if conn.client.simple_query(&sql).is_err() {
                drop(slot.take());
            }
        }
    }

    /// The database, without credentials.
    pub(crate) fn shown(&self) -> &Path {
        &self.store.shown
    }

    /// Call `f` on the index of checked entries (locked for the call only).
    pub fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        f(&self.store.shared().index)
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
    /// wait), then read and check the rows committed since the last look (by any section of
    /// this store: each row is indexed once, by whichever section folds it in first).
    ///
    /// The rows are checked (trusted signer, signatures in a batch, marks) before any is
    /// folded in, and all of it under the index's lock: no section ever reads a row that did not
    /// pass, and a section whose rows another section folded in first still fails once that
    /// section poisoned the index.
    pub(super) fn refresh_after(&mut self, lock: Option<i64>) -> Result<(), JournalError> {
        let horizon = {
            let shared = self.store.shared();
            self.healthy(&shared)?;
            shared.horizon
        };
        let name = self.store.name();
        let rows = self.read_since(lock, horizon, &name)?;
        let mut shared = self.store.shared();
        self.healthy(&shared)?;
        let mut next_horizon = shared.horizon;
        let mut fresh = Vec::new();
        let mut sigs = Vec::with_capacity(rows.len());
        let mut unmarked = Unmarked::default();
        for row in &rows {
            next_horizon = next_horizon.max(int(row.get(0), &name, "the horizon")?);
            if let Some(r) = self.check_row(&mut shared, row, &name, &mut sigs, &mut unmarked)? {
                fresh.push(r);
            }
        }
        self.check_caught_up(&mut shared, &sigs, unmarked)?;
        for r in fresh {
            let line_no = shared.index.lines + 1;
            if let Err(reason) = shared.index.fold(&r.effect_id, &r.entry, r.loc) {
                let e = self.corrupt(line_no, format!("row {}: {reason}", r.seq));
                return Err(poison(&mut shared, e));
            }
            shared.index.lines += 1;
            shared.ahead.insert(r.seq, r.xid);
        }
        // Every row of a transaction before this snapshot's horizon was committed when it was
        // taken, and read by it (or, before the horizon read at the start, indexed earlier).
        shared.horizon = next_horizon;
        shared.ahead.retain(|_, xid| *xid >= next_horizon);
        Ok(())
    }

    /// An error if the index is poisoned (by this section or another).
    fn healthy(&self, shared: &Shared) -> Result<(), JournalError> {
        match &shared.index.poisoned {
            Some(reason) => Err(JournalError::Poisoned {
                path: self.store.shown.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Take `lock` first if one is given, then read every row at or past `horizon`, in one
    /// statement; each row of the answer carries the statement's horizon first.
    fn read_since(
        &self,
        lock: Option<i64>,
        horizon: i64,
        name: &str,
    ) -> Result<Vec<postgres::SimpleQueryRow>, JournalError> {
        // One statement, so one snapshot: its horizon (the oldest transaction still in
        // progress) and every row committed before it. Rows at or past the last horizon are
        // read again until the horizon passes them (those already indexed are skipped). Only
        // integers are spliced into the text.
        // Each row's mark is looked up by its key (a lateral probe the planner cannot turn into
        // a hash of the whole marks table, which it did while the statistics of a young table
        // lagged: every catch-up then read every mark).
        let take = lock.map_or(String::new(), |k| format!("SELECT pg_advisory_lock({k}); "));
        let sql = format!(
            "{take}SELECT h.x::text, e.seq::text, e.line, (m.marked IS NOT NULL)::text, \
             e.xid::text \
             FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x) h \
             LEFT JOIN (interlock_entries e LEFT JOIN LATERAL \
             (SELECT true AS marked FROM interlock_marks k WHERE k.hash = e.hash LIMIT 1) m \
             ON true) ON e.xid >= '{horizon}'::xid8 \
             ORDER BY e.seq"
        );
        let answer = self.conn()?.client.simple_query(&sql).map_err(|e| {
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

    /// Check one row of a catch-up, without folding it in: `None` when the row carries the
    /// horizon only, or is indexed already; else the row to fold once the whole batch passed.
    /// Its signature is left in `sigs`, a row without its mark is noted in `unmarked`; a row
    /// that does not parse, or whose signer is not trusted, poisons the index.
    fn check_row(
        &self,
        shared: &mut Shared,
        row: &postgres::SimpleQueryRow,
        name: &str,
        sigs: &mut Vec<PendingSig>,
        unmarked: &mut Unmarked,
    ) -> Result<Option<Checked>, JournalError> {
        if row.get(1).is_none() {
            // No row past the horizon: the one line carries the horizon only.
            return Ok(None);
        }
        let seq = int(row.get(1), name, "a row's seq")?;
        let xid = int(row.get(4), name, "a row's transaction")?;
        if shared.has(seq, xid) {
            return Ok(None);
        }
        let line: &str = row.get(2).ok_or_else(|| bad(name, "a row's line"))?;
        let line_no = shared.index.lines + 1 + sigs.len() as u64;
        let checked = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(entry)) => read_check(&entry, &self.store.trusted, line_no)
                .map(|(sig, eid)| (sig, eid.to_owned()))
                .map(|(sig, effect_id)| (sig, effect_id, entry)),
            Ok(_) => Err("not a JSON object".to_owned()),
            Err(e) => Err(format!("not JSON: {e}")),
        };
        let (sig, effect_id, entry) = match checked {
            Ok(c) => c,
            Err(reason) => {
                let e = self.corrupt(line_no, format!("row {seq}: {reason}"));
                return Err(poison(shared, e));
            }
        };
        sigs.push(sig);
        if row.get(3) != Some("true") {
            unmarked.note(line);
        }
        let loc = EntryLoc {
            tag: 0,
            offset: u64::try_from(seq).unwrap_or(0),
            len: 0,
        };
        Ok(Some(Checked {
            seq,
            xid,
            effect_id,
            entry,
            loc,
        }))
    }

    /// The end of a catch-up: every signature read verifies and every row carries its mark,
    /// else the index is poisoned. Checked before the index is let go, so no section reads a
    /// row whose signature was not verified.
    fn check_caught_up(
        &self,
        shared: &mut Shared,
        sigs: &[PendingSig],
        unmarked: Unmarked,
    ) -> Result<(), JournalError> {
        if let Err(line) = verify_signatures(sigs) {
            let e = self.corrupt(line, "its signature does not verify for its signer".into());
            return Err(poison(shared, e));
        }
        if let Some((effect_id, hash)) = unmarked.first {
            let e = JournalError::Unmarked {
                path: self.store.shown.clone(),
                effect_id,
                hash,
                count: unmarked.count,
            };
            return Err(poison(shared, e));
        }
        Ok(())
    }

    /// The `index`-th entry of an effect, read back from its row.
    pub fn entry(&self, effect_id: &str, index: usize) -> Result<Map<String, Value>, JournalError> {
        let Some(loc) = self.with_index(|i| i.loc(effect_id, index)) else {
            return Err(self.corrupt(0, format!("effect {effect_id} has no entry #{index}")));
        };
        let seq = i64::try_from(loc.offset).unwrap_or(i64::MAX);
        let name = self.store.name();
        let row = self
            .conn()?
            .client
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

    /// The effect's claim record and whether it is its row's latest generation (an older record
    /// written back over a later one is not).
    pub fn read_record(&self, effect_id: &str) -> Option<(ClaimRecord, bool)> {
        let row = self
            .conn()
            .ok()?
            .client
            .query_opt(
                "SELECT record, gen FROM interlock_claims WHERE effect_id = $1",
                &[&effect_id],
            )
            .ok()??;
        let record: ClaimRecord = serde_json::from_str(row.try_get::<_, &str>(0).ok()?).ok()?;
        let gen = row.try_get::<_, i64>(1).ok()?;
        let latest = i64::try_from(record.gen).is_ok_and(|g| g == gen);
        Some((record, latest))
    }

    /// The generation of the effect's claim record (0 before the first).
    pub fn record_gen(&self, effect_id: &str) -> Result<u64, JournalError> {
        let name = self.store.name();
        let row = {
            let mut conn = self.conn()?;
            let conn = &mut *conn;
            conn.client
                .query_opt(&conn.gen, &[&effect_id])
                .map_err(db_err(&name, "read a claim record's generation"))?
        };
        match row {
            None => Ok(0),
            Some(r) => {
                Ok(u64::try_from(column::<i64>(&r, 0, &name, "a claim generation")?).unwrap_or(0))
            }
        }
    }

    /// Append one sealed entry of the locked effect: one committed INSERT (one round trip, the
    /// statement prepared when the connection was opened). The unique `(effect_id, prev)`
    /// refuses a second row after the same hash, were two writers ever to hold one effect's
    /// lock at once.
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
        // Under the effect's lock no other section changes this effect's tip.
        let tip = {
            let shared = self.store.shared();
            if let Some(reason) = &shared.index.poisoned {
                return Err(JournalError::Poisoned {
                    path: self.store.shown.clone(),
                    reason: reason.clone(),
                });
            }
            shared.index.tip(effect_id)
        };
        let prev = tip.0.clone();
        let (entry, line) = sealed_line(tip, effect_id, kind, fields, ts_ms, key)?;
        let line = String::from_utf8(line).map_err(|e| self.corrupt(0, e.to_string()))?;
        let hash = entry
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = self.store.name();
        let row = {
            let mut conn = self.conn()?;
            let conn = &mut *conn;
            conn.client
                .query_one(&conn.append, &[&effect_id, &prev, &hash, &line])
                .map_err(db_err(&name, "append to the journal"))?
        };
        let seq: i64 = column(&row, 0, &name, "appending to the journal")?;
        let xid: i64 = column(&row, 1, &name, "appending to the journal")?;
        let mut shared = self.store.shared();
        if shared.has(seq, xid) {
            // Committed, and already read back by another section's catch-up.
            return Ok(entry);
        }
        let line_no = shared.index.lines + 1;
        let loc = EntryLoc {
            offset: u64::try_from(seq).unwrap_or(0),
            len: 0,
            tag: 0,
        };
        let folded = shared.index.fold(effect_id, &entry, loc);
        shared.index.lines += 1;
        // Read again by catch-ups until the horizon passes it: skipped there.
        shared.ahead.insert(seq, xid);
        if let Err(reason) = folded {
            let e = self.corrupt(line_no, reason);
            return Err(poison(&mut shared, e));
        }
        Ok(entry)
    }
}

/// Poison the index with `e` (a reason given earlier stays) and give `e` back.
fn poison(shared: &mut Shared, e: JournalError) -> JournalError {
    shared.index.poisoned.get_or_insert(e.to_string());
    e
}

impl Drop for PgSection<'_> {
    fn drop(&mut self) {
        let keys: Vec<i64> = self
            .budget
            .take()
            .into_iter()
            .chain(self.effect.take().map(|(_, k)| k))
            .collect();
        self.unlock(&keys);
        if let Some(conn) = self.conn.get_mut().take() {
            self.store.give_back(conn);
        }
    }
}

/// A row of a catch-up that passed its own checks, to fold in once its batch passed.
struct Checked {
    seq: i64,
    xid: i64,
    effect_id: String,
    entry: Map<String, Value>,
    loc: EntryLoc,
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
