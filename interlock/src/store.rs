//! Journal stores behind one API (DESIGN §2.7): the JSONL file with `flock` claims (default,
//! one host) and PostgreSQL with session-bound claims (many hosts).
//!
//! The gate sees a [`Store`]: a locked [`Section`] of one effect to read and append (the file
//! store's journal lock; PostgreSQL's lock of that effect alone), a lock-free view for readers,
//! and per-effect [`Claim`]s bound to the holder's life. Both stores check every entry they read
//! the same way ([`crate::journal::Index`]).

use crate::claim::{ClaimDir, ClaimRecord, HeldClaim};
use crate::journal::{EffectState, Index, Journal, JournalError, Locked};
use crate::pg::{PgClaim, PgSection, PgStore};
use crate::target::SendDeadline;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use verify::entry::Kind;

/// Where a gate's journal lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A JSONL file on this host (claims are `flock`s beside it).
    File(PathBuf),
    /// A PostgreSQL database (`postgres://…`), shared by gates on many hosts.
    Postgres(String),
}

impl Location {
    /// A `postgres://` or `postgresql://` URL is a database; anything else is a file path.
    pub fn parse(text: &str) -> Location {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Location::Postgres(text.to_owned())
        } else {
            Location::File(PathBuf::from(text))
        }
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::parse(&p.to_string_lossy())
    }
}

/// Every entry of the journal at `location`, in append order, without checking or writing
/// anything (for tests and tools). A missing file is an empty journal.
pub fn read_entries(location: &Location) -> Result<Vec<Value>, JournalError> {
    match location {
        Location::File(path) => crate::journal::read_all(path),
        Location::Postgres(url) => crate::pg::read_rows(url),
    }
}

/// An open journal store.
// One per gate, never moved in a hot path: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Store {
    /// The JSONL file and its claim directory.
    File {
        /// The journal.
        journal: Journal,
        /// Its claims.
        claims: ClaimDir,
    },
    /// PostgreSQL.
    Pg(PgStore),
}

/// The journal under its lock (or, from [`Store::peek`], a lock-free view).
pub(crate) enum Section<'a> {
    File(Locked<'a>),
    Pg(PgSection<'a>),
}

/// A claim this process holds; dropping it releases it.
pub(crate) enum Claim<'a> {
    File(HeldClaim),
    Pg(PgClaim<'a>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("at", &self.path()).finish()
    }
}

impl Store {
    /// Open the store at `location`, checking every entry already in it. `send_window`: the
    /// send window of claims that can be lost while their holder lives (PostgreSQL's).
    pub fn open(
        location: &Location,
        trusted: Vec<VerifyingKey>,
        lock_wait: Duration,
        send_window: Duration,
    ) -> Result<Store, JournalError> {
        match location {
            Location::File(path) => {
                let journal = Journal::open(path, trusted, lock_wait)?;
                let claims = ClaimDir::beside(journal.canonical_path())?;
                Ok(Store::File { journal, claims })
            }
            Location::Postgres(url) => Ok(Store::Pg(PgStore::open(
                url,
                trusted,
                lock_wait,
                send_window,
            )?)),
        }
    }

    /// The store's send window L (DESIGN §2.4): how long after confirming its claim a holder may
    /// still send. `None` where a claim cannot be lost while its holder lives (a file lock is
    /// released only by its holder or its death), so no live holder needs fencing.
    pub fn send_window(&self) -> Option<Duration> {
        match self {
            Store::File { .. } => None,
            Store::Pg(pg) => Some(pg.send_window()),
        }
    }

    /// The journal file, or the database (credentials left out), for messages.
    pub fn path(&self) -> &Path {
        match self {
            Store::File { journal, .. } => journal.path(),
            Store::Pg(pg) => pg.shown(),
        }
    }

    /// Lock effect `effect_id` for reading and appending, and catch up with what others
    /// appended: the file store takes its journal lock (every effect), PostgreSQL the effect's
    /// own lock (writers of other effects go on).
    pub fn lock(&self, effect_id: &str) -> Result<Section<'_>, JournalError> {
        match self {
            Store::File { journal, .. } => journal.lock(Some(effect_id)).map(Section::File),
            Store::Pg(pg) => pg.lock(effect_id).map(Section::Pg),
        }
    }

    /// Catch up without waiting for another process's lock and call `f` on the view, once what
    /// this process queued for `effect` is durable (for `None`: what it had queued for any
    /// effect when the view was asked for).
    pub fn peek<R>(
        &self,
        effect: Option<&str>,
        f: impl FnOnce(&Section<'_>) -> R,
    ) -> Result<R, JournalError> {
        match self {
            Store::File { journal, .. } => {
                let view = journal.view(effect)?;
                Ok(f(&Section::File(view)))
            }
            Store::Pg(pg) => {
                let view = pg.peek()?;
                Ok(f(&Section::Pg(view)))
            }
        }
    }

    /// Take the effect's claim if nobody holds it; `None` if someone does.
    pub fn try_take(&self, effect_id: &str) -> Result<Option<Claim<'_>>, JournalError> {
        match self {
            Store::File { claims, .. } => Ok(claims.try_take(effect_id)?.map(Claim::File)),
            Store::Pg(pg) => Ok(pg.try_claim(effect_id)?.map(Claim::Pg)),
        }
    }

    /// The generation the effect's next claim record gets: one more than the latest the store
    /// knows of, or than the record in the claim file if that is later (marks adopted afresh
    /// start empty; a generation must never be handed out twice).
    pub fn next_record_gen(&self, j: &Section<'_>, effect_id: &str) -> Result<u64, JournalError> {
        let next = j.next_record_gen(effect_id)?;
        match self {
            Store::File { claims, .. } => Ok(claims
                .read_record(effect_id)
                .map_or(next, |r| next.max(r.gen.saturating_add(1)))),
            Store::Pg(_) => Ok(next),
        }
    }

    /// The effect's claim record, if there is a readable one, and whether it is the latest
    /// generation the store knows of (read under the lock, `j`): a record put back from an
    /// older copy is not.
    pub fn read_record(&self, j: &Section<'_>, effect_id: &str) -> Option<(ClaimRecord, bool)> {
        match (self, j) {
            (Store::File { claims, .. }, Section::File(l)) => {
                let record = claims.read_record(effect_id)?;
                let latest = l.record_gen(effect_id) == Some(record.gen);
                Some((record, latest))
            }
            (Store::Pg(_), Section::Pg(p)) => p.read_record(effect_id),
            (Store::File { .. }, Section::Pg(_)) | (Store::Pg(_), Section::File(_)) => None,
        }
    }
}

impl Section<'_> {
    /// Call `f` on the index of checked entries (on PostgreSQL it is shared by the store's
    /// sections and locked for the call only).
    fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        match self {
            Section::File(l) => f(l.index()),
            Section::Pg(p) => p.with_index(f),
        }
    }

    /// Call `f` on what the index knows about one effect.
    pub fn with_state<R>(&self, effect_id: &str, f: impl FnOnce(Option<&EffectState>) -> R) -> R {
        self.with_index(|index| f(index.state(effect_id)))
    }

    /// True under an effect's lock (the file store's journal lock); false for a lock-free view
    /// ([`Store::peek`]).
    pub fn holds_lock(&self) -> bool {
        match self {
            Section::File(l) => l.holds_lock(),
            Section::Pg(p) => p.holds_lock(),
        }
    }

    /// Take budget `id`'s admission lock and catch up with every entry written under it: on
    /// PostgreSQL the budget's own lock, after the effect's; the file store's journal lock
    /// already covers every effect.
    pub(crate) fn lock_budget(&mut self, id: &str) -> Result<(), JournalError> {
        match self {
            Section::File(_) => Ok(()),
            Section::Pg(p) => p.lock_budget(id),
        }
    }

    /// The journal file, or the database (credentials left out), for messages.
    pub fn shown_path(&self) -> PathBuf {
        match self {
            Section::File(l) => l.path().to_owned(),
            Section::Pg(p) => p.shown().to_owned(),
        }
    }

    /// Every effect of budget `id` other than `except` holding a reservation of it, with its
    /// amount. Only [`crate::budget::reckon_under_budget_lock`] reads it, under the lock.
    pub(crate) fn budget_holders(&self, id: &str, except: &str) -> Vec<verify::budget::Counted> {
        self.with_index(|i| i.budget_holders(id, except))
    }

    /// Effect ids with an open dispatch, first-seen order.
    pub fn open_effects(&self) -> Vec<String> {
        self.with_index(Index::open_effects)
    }

    /// Every effect id, first-seen order.
    pub fn effect_ids(&self) -> Vec<String> {
        self.with_index(Index::effect_ids)
    }

    /// The `index`-th entry of an effect, exactly as stored.
    pub fn entry(&self, effect_id: &str, index: usize) -> Result<Map<String, Value>, JournalError> {
        match self {
            Section::File(l) => l.entry(effect_id, index),
            Section::Pg(p) => p.entry(effect_id, index),
        }
    }

    /// Every entry of an effect, in journal order.
    pub fn entries(&self, effect_id: &str) -> Result<Vec<Value>, JournalError> {
        (0..self.with_index(|i| i.count(effect_id)))
            .map(|i| self.entry(effect_id, i).map(Value::Object))
            .collect()
    }

    /// One more than the latest claim-record generation this section knows of (see
    /// [`Store::next_record_gen`]).
    fn next_record_gen(&self, effect_id: &str) -> Result<u64, JournalError> {
        let latest = match self {
            Section::File(l) => l.record_gen(effect_id).unwrap_or(0),
            Section::Pg(p) => p.record_gen(effect_id)?,
        };
        Ok(latest.saturating_add(1))
    }

    /// Replace the claim's record (durable before this returns), and remember its generation
    /// where an older record cannot be put back.
    pub fn write_record(
        &mut self,
        claim: &Claim<'_>,
        effect_id: &str,
        record: &ClaimRecord,
    ) -> Result<(), JournalError> {
        match self {
            // The claim file is this holder's alone: its fsync need not hold up other threads.
            Section::File(l) => {
                l.without_mutex(|| claim.write_record(record))?;
                l.record_written(effect_id, record.gen)
            }
            // The row's generation column is written with the record.
            Section::Pg(_) => claim.write_record(record),
        }
    }

    /// Append one sealed entry, durable before this returns.
    pub fn append(
        &mut self,
        effect_id: &str,
        kind: Kind,
        fields: Map<String, Value>,
        ts_ms: u64,
        key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        match self {
            Section::File(l) => l.append(effect_id, kind, fields, ts_ms, key),
            Section::Pg(p) => p.append(effect_id, kind, fields, ts_ms, key),
        }
    }
}

impl Claim<'_> {
    /// Replace the claim's record (durable before this returns); [`Section::write_record`]
    /// also remembers its generation.
    fn write_record(&self, record: &ClaimRecord) -> Result<(), JournalError> {
        match self {
            Claim::File(c) => c.write_record(record),
            Claim::Pg(c) => c.write_record(record),
        }
    }

    /// Confirm, right before a send, that this process still holds the claim, and get the
    /// deadline the request must leave by: a database session can be lost (a restart, an
    /// operator, a partition) while the process lives, so its holder may send only within the
    /// store's send window of confirming. A file claim cannot be lost while its holder lives
    /// unless its file is replaced or removed, which this checks: no deadline.
    pub fn confirm(&self) -> Result<SendDeadline, JournalError> {
        match self {
            Claim::File(c) => c.confirm().map(|()| SendDeadline::none()),
            Claim::Pg(c) => c.confirm(),
        }
    }

    /// Let the claim go with its dispatch still open, saying in its record (where a claim can be
    /// lost while its holder lives) that no send of this holder can still leave. Only for a
    /// holder whose sends have all returned and that waits out no earlier holder's send window;
    /// dropping the claim instead lets it go without saying so. `key` signs the record again.
    pub fn release(self, key: &SigningKey) {
        match self {
            Claim::File(c) => drop(c),
            Claim::Pg(c) => c.release(key),
        }
    }

    /// The effect is settled: remove the claim's record, then release it.
    pub fn remove(self) {
        match self {
            Claim::File(c) => c.remove(),
            Claim::Pg(c) => c.remove(),
        }
    }
}
