//! The PostgreSQL journal store (DESIGN §2.7): one journal shared by gates on many hosts.
//!
//! - Schema created and migrated on open, versioned in `interlock_schema` (migrations run under
//!   an advisory lock, so two openers never race). Entries live in `interlock_entries`, append-only
//!   (triggers refuse UPDATE, DELETE and TRUNCATE), each row the entry's JSON line exactly as the file
//!   store writes it, plus `effect_id`, `prev` and `hash`. A unique `(effect_id, prev)` (nulls not
//!   distinct: PostgreSQL 15 or later) keeps every chain linear: two writers can never both
//!   extend the same hash.
//! - No journal-wide lock (DESIGN §2.7): a section locks one effect, with a session advisory lock
//!   keyed by the effect, waited for at most the gate's lock wait (`lock_timeout`); a budget
//!   admission takes the budget's lock after it. Each section has a main connection to itself
//!   from the store's pool (threads of one gate go on in parallel, and a lock-free reader never
//!   waits for a section's connection); the checked index is shared and locked only between
//!   round trips. Every append commits on its own before it returns (synchronous commit), so it
//!   is durable like an fsynced line; writers of other effects commit meanwhile and share WAL
//!   flushes.
//! - Catching up goes by transaction id (schema version 5 stamps each row with its own): one
//!   statement reads every row at or past the last horizon and its snapshot's horizon (the oldest
//!   transaction still in progress). A row that commits late has a transaction id past the
//!   horizon read before it, so it is read then; a `seq` cursor would skip it (rows of concurrent
//!   writers commit out of `seq` order).
//! - Claims are session advisory locks held by a claims connection (one of [`CLAIM_SESSIONS`],
//!   picked by the claim's key) while a send can be in flight; a killed process's session ends
//!   at once, a partitioned host's when the server notices (the session sets `tcp_user_timeout`
//!   and keepalives, a few seconds). A claim is bound to the session it was taken on (an epoch
//!   per claims connection, bumped on every reconnect): before a send the holder confirms that
//!   this very session is still its claims connection and still holds the lock; if it cannot,
//!   it does not send. A claim whose session was lost is stale: its record is never
//!   written and its drop never touches a lock of a later session. A confirmed holder sends only
//!   within the store's send window of asking (the deadline is checked right before the request
//!   leaves), so a recoverer that takes over from a holder that may live knows by when its
//!   requests had left. Claim records live in `interlock_claims`.
//! - Reading checks every row as the file store checks every line (hash, chain, trusted signer,
//!   signature), into the same in-memory index; each lock acquisition reads only rows committed
//!   since (and the few past the horizon again, skipping those already indexed).

use crate::claim::ClaimRecord;
use crate::journal::{Index, JournalError};
use ed25519_dalek::VerifyingKey;
use postgres::{Client, NoTls, Statement};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

mod claim;
mod schema;
mod section;

use schema::{exclude_older_gates, migrate};

/// What every section of this store reads: the index of checked entries and how far it has
/// caught up. Locked only while rows are folded in or read out, never across a round trip.
struct Shared {
    index: Index,
    /// Every row written by a transaction before this id (a snapshot's horizon) is indexed.
    horizon: i64,
    /// Rows at or past the horizon already indexed (seq → transaction id): read again by the
    /// next catch-up, and skipped.
    ahead: HashMap<i64, i64>,
}

impl Shared {
    /// Whether the row `seq` of transaction `xid` is indexed already: written before the
    /// horizon (every such row is), or indexed past it.
    fn has(&self, seq: i64, xid: i64) -> bool {
        xid < self.horizon || self.ahead.contains_key(&seq)
    }
}

/// A main connection (its lock waits bounded by the gate's lock wait) and its prepared
/// statements (each then one round trip).
struct Conn {
    client: Client,
    /// Insert an entry's row and its mark (`effect_id`, `prev`, `hash`, `line`).
    append: Statement,
    /// A claim record's generation (`effect_id`).
    gen: Statement,
}

/// A session holding claims: one of [`CLAIM_SESSIONS`], chosen by the claim's key.
struct Claims {
    /// `None` until first needed.
    session: Option<ClaimSession>,
    /// Which session `client` is: bumped on every reconnect. A claim remembers the session it
    /// was taken on; once this moved on, that claim is gone with its session, whatever the new
    /// session holds.
    epoch: u64,
    /// Claim keys this process holds on the current session (a session's advisory locks are
    /// re-entrant, so threads of one process are kept apart here).
    held: HashSet<i64>,
}

/// A claims connection and its prepared statements (each then one round trip).
struct ClaimSession {
    client: Client,
    /// `pg_try_advisory_lock($1)`.
    try_lock: Statement,
    /// Insert or replace a claim record (`effect_id`, `record`, `gen`).
    write: Statement,
    /// Whether this session holds the advisory lock of key (`hi`, `lo`).
    confirm: Statement,
}

/// The append: an entry's row and its mark, one committed statement (`effect_id`, `prev`,
/// `hash`, `line`), answering the row's `seq` and transaction id.
pub(crate) const APPEND_SQL: &str =
    "WITH mark AS (INSERT INTO interlock_marks (hash) VALUES ($3)) \
     INSERT INTO interlock_entries (effect_id, prev, hash, line) \
     VALUES ($1, $2, $3, $4) RETURNING seq, xid::text::bigint";

/// How many sessions hold a process's claims (a claim's key picks one): claim records are
/// written on the session that holds the claim, and a session commits one record at a time.
const CLAIM_SESSIONS: usize = 4;

/// An open PostgreSQL journal store.
pub(crate) struct PgStore {
    /// The schema the journal's tables live in.
    schema: String,
    url: String,
    shown: PathBuf,
    trusted: Vec<VerifyingKey>,
    lock_wait: Duration,
    /// How long after confirming a claim its holder may still send (L).
    send_window: Duration,
    /// The journal's advisory-lock namespace (first key of the two-key locks).
    ns: i32,
    shared: Mutex<Shared>,
    /// Main connections no section uses now. A section takes one (or opens a new one), so
    /// threads of one gate lock, read and append in parallel, each on its own session.
    idle: Mutex<Vec<Conn>>,
    claims: [Mutex<Claims>; CLAIM_SESSIONS],
}

/// One effect under its lock (or a lock-free view), with every row committed before the lock
/// was taken indexed. It has a main connection of its own for its life.
pub(crate) struct PgSection<'a> {
    store: &'a PgStore,
    /// `None` only once given back, or closed after a failed unlock.
    conn: RefCell<Option<Box<Conn>>>,
    /// The effect whose lock (a session advisory lock of this section's connection) this
    /// holds; `None` for a lock-free view.
    effect: Option<(String, i64)>,
    /// The budget lock taken for an admission, released with the effect's.
    budget: Option<i64>,
}

/// A claim held by one of this process's claims sessions: the one current when it was taken.
/// Once that session is lost the claim is stale: it cannot be confirmed, its record cannot be
/// written, and dropping it touches nothing (the lock went with the session, and a lock of the
/// same key on a later session belongs to another holder).
pub(crate) struct PgClaim<'a> {
    store: &'a PgStore,
    key: i64,
    effect_id: String,
    /// Which claims session holds it, and which session that was when it was taken.
    slot: usize,
    epoch: u64,
    /// The record this holder wrote last (rewritten as released when it lets the claim go).
    written: Mutex<Option<Box<ClaimRecord>>>,
}

fn db_err(store: &str, what: &str) -> impl FnOnce(postgres::Error) -> JournalError {
    let what = format!("{store}: could not {what}");
    move |e| JournalError::Database {
        what,
        detail: e.to_string(),
    }
}

/// Column `i` of `row` as a `T`, or an error saying that the database answered something else
/// (a NULL, another type) to `what`.
fn column<'r, T: postgres::types::FromSql<'r>>(
    row: &'r postgres::Row,
    i: usize,
    store: &str,
    what: &str,
) -> Result<T, JournalError> {
    row.try_get(i).map_err(|e| JournalError::Database {
        what: format!("{store}: unexpected answer to {what}"),
        detail: e.to_string(),
    })
}

/// The URL without its password, for messages.
fn shown_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// The first 8 bytes of SHA-256 of `parts`, as a bigint.
/// The advisory-lock namespace of the journal in `schema` (the first key of its two-key locks).
pub(crate) fn journal_namespace(schema: &str) -> i32 {
    i32::try_from(key_of(&["interlock-journal", schema]) & 0x7fff_ffff).unwrap_or(0)
}

fn key_of(parts: &[&str]) -> i64 {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let d = h.finalize();
    let bits = d[..8]
        .iter()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    i64::from_ne_bytes(bits.to_ne_bytes())
}

/// The claim key of an effect in the journal of `schema`.
fn claim_key(schema: &str, effect_id: &str) -> i64 {
    key_of(&["interlock-claim", schema, effect_id])
}

/// The key of an effect's append lock (held on the main connection while a section of that
/// effect reads and appends) in the journal of `schema`.
pub(crate) fn effect_key(schema: &str, effect_id: &str) -> i64 {
    key_of(&["interlock-effect", schema, effect_id])
}

/// The key of a budget's admission lock in the journal of `schema`.
fn budget_key(schema: &str, budget_id: &str) -> i64 {
    key_of(&["interlock-budget", schema, budget_id])
}

impl PgStore {
    /// Connect (with keepalives and a user timeout on both sides). `claims_of`: the schema of
    /// the journal whose claims this session will hold (named `interlock-claims <schema>`).
    fn connect(url: &str, shown: &str, claims_of: Option<&str>) -> Result<Client, JournalError> {
        let name = match claims_of {
            Some(schema) => format!("interlock-claims {schema}"),
            None => "interlock-journal".to_owned(),
        };
        let mut config: postgres::Config = url.parse().map_err(db_err(shown, "parse the URL"))?;
        config
            .connect_timeout(Duration::from_secs(10))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(2))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(3)
            // A request unanswered this long fails on this side too: a partitioned holder's
            // confirmation fails instead of hanging.
            .tcp_user_timeout(Duration::from_secs(5))
            .application_name(&name);
        let mut client = config.connect(NoTls).map_err(db_err(shown, "connect"))?;
        // A commit must be durable before the server acknowledges it (a URL option or a role's
        // setting may turn that off: a lost DISPATCHED is a second send). Every statement reads
        // what committed before it started (read committed): an effect's lock and its catch-up
        // go in one round trip, and under repeatable read or serializable (a URL option or a
        // role's default) the catch-up's snapshot would be taken before the lock was granted,
        // missing the entry its last holder committed while this session waited (a dispatch
        // settled REFUSED looked open, and recovery resent it).
        client
            .batch_execute(
                "SET synchronous_commit = on; SET default_transaction_isolation = 'read committed'",
            )
            .map_err(db_err(
                shown,
                "turn synchronous commit on and set read-committed isolation",
            ))?;
        let fsync = client
            .query_one("SHOW fsync", &[])
            .map_err(db_err(shown, "read the server's fsync setting"))?;
        if column::<String>(&fsync, 0, shown, "fsync")? != "on" {
            return Err(JournalError::Database {
                what: format!("{shown}: the server runs with fsync off"),
                detail: "a commit it acknowledges can be lost in a crash, and the gate would then \
                         send an effect a second time; run the journal's server with fsync on"
                    .into(),
            });
        }
        // The server drops this session a few seconds after the host stops answering: a
        // partitioned holder loses its claims, and the effect locks its main session holds or
        // waits for (else another host's recovery of that effect stays blocked by them until
        // the server's TCP gives up, which can take hours).
        client
            .batch_execute(
                "SET tcp_keepalives_idle = 2; SET tcp_keepalives_interval = 1; \
                     SET tcp_keepalives_count = 3; SET tcp_user_timeout = 5000",
            )
            .map_err(db_err(shown, "set the session's keepalives"))?;
        Ok(client)
    }

    /// A main connection: its lock waits (the journal lock included) are bounded by
    /// `lock_wait`; it holds the older gates' journal lock shared, and has the append prepared.
    fn connect_main(
        url: &str,
        shown: &str,
        lock_wait: Duration,
        ns: i32,
    ) -> Result<Conn, JournalError> {
        let mut client = PgStore::connect(url, shown, None)?;
        let ms = u64::try_from(lock_wait.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        client
            .batch_execute(&format!("SET lock_timeout = {ms}"))
            .map_err(db_err(shown, "set the lock timeout"))?;
        exclude_older_gates(&mut client, shown, ns)?;
        let append = client
            .prepare(APPEND_SQL)
            .map_err(db_err(shown, "prepare the append"))?;
        let gen = client
            .prepare("SELECT gen FROM interlock_claims WHERE effect_id = $1")
            .map_err(db_err(shown, "prepare the claim generation's read"))?;
        Ok(Conn {
            client,
            append,
            gen,
        })
    }

    /// Connect, create or migrate the schema, and read every entry.
    pub fn open(
        url: &str,
        trusted: Vec<VerifyingKey>,
        lock_wait: Duration,
        send_window: Duration,
    ) -> Result<PgStore, JournalError> {
        let shown = shown_url(url);
        let mut client = PgStore::connect(url, &shown, None)?;
        let row = client
            .query_one("SELECT current_schema()::text", &[])
            .map_err(db_err(&shown, "read the current schema"))?;
        // NULL when no schema on the search path exists.
        let Some(schema) = column::<Option<String>>(&row, 0, &shown, "the current schema")? else {
            return Err(JournalError::Database {
                what: format!("{shown}: no schema to keep the journal in"),
                detail: "no schema named on the search_path exists; create it, or name an \
                         existing one"
                    .into(),
            });
        };
        let ns = journal_namespace(&schema);
        migrate(&mut client, &shown, ns)?;
        drop(client);
        let first = PgStore::connect_main(url, &shown, lock_wait, ns)?;
        let store = PgStore {
            schema,
            url: url.to_owned(),
            shown: PathBuf::from(&shown),
            trusted,
            lock_wait,
            send_window,
            ns,
            shared: Mutex::new(Shared {
                index: Index::default(),
                horizon: 0,
                ahead: HashMap::new(),
            }),
            idle: Mutex::new(vec![first]),
            claims: std::array::from_fn(|_| {
                Mutex::new(Claims {
                    session: None,
                    epoch: 0,
                    held: HashSet::new(),
                })
            }),
        };
        drop(store.peek()?);
        Ok(store)
    }

    /// How long after confirming a claim its holder may still send.
    pub fn send_window(&self) -> Duration {
        self.send_window
    }

    /// The database, without credentials.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    fn name(&self) -> String {
        self.shown.to_string_lossy().into_owned()
    }

    /// The index and catch-up position (a thread that panicked holding it left it as it was:
    /// every change to it is made whole before the lock is let go, or poisons the index).
    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A main connection no section uses (and `true`), or a new one (and `false`): a section
    /// never waits for another's.
    fn take_conn(&self) -> Result<(Box<Conn>, bool), JournalError> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match idle {
                Some(conn) if !conn.client.is_closed() => return Ok((Box::new(conn), true)),
                // Lost while idle: its session's locks are gone with it; try the next.
                Some(_) => continue,
                None => {
                    let conn =
                        PgStore::connect_main(&self.url, &self.name(), self.lock_wait, self.ns)?;
                    return Ok((Box::new(conn), false));
                }
            }
        }
    }

    /// Give a connection back for the next section, unless it was lost.
    fn give_back(&self, conn: Box<Conn>) {
        if !conn.client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(*conn);
        }
    }

    /// A section on a connection of its own: take `lock` (an effect and its key) if given, then
    /// catch up. An idle connection that this first use finds lost (the server restarted, or
    /// ended the session while it sat in the pool) is let go, and the section opened once more
    /// on a new one: the lost session's locks went with it.
    fn open_section(&self, lock: Option<(&str, i64)>) -> Result<PgSection<'_>, JournalError> {
        let mut retried = false;
        loop {
            let (conn, pooled) = self.take_conn()?;
            let mut section = PgSection {
                store: self,
                conn: RefCell::new(Some(conn)),
                effect: None,
                budget: None,
            };
            // The lock and the catch-up in one round trip: two statements, so under read
            // committed (set at connect) the catch-up's snapshot is taken after the lock was
            // granted (it sees every row its last holder committed).
            match section.refresh_after(lock.map(|(_, key)| key)) {
                Ok(()) => {
                    section.effect = lock.map(|(effect_id, key)| (effect_id.to_owned(), key));
                    return Ok(section);
                }
                Err(e) => {
                    if let Some((_, key)) = lock {
                        // Granted or not (even after `Busy`: the lock can be granted while its
                        // statement still fails, the timeout firing as the holder lets go or
                        // the catch-up waiting on a table lock), a session lock outlives the
                        // aborted statement. Letting go of one not held only answers false.
                        section.unlock(&[key]);
                    }
                    if pooled && !retried && section.lost() {
                        retried = true;
                        continue;
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Take the lock of one effect (bounded wait) and read the rows committed since the last
    /// look. No journal-wide lock: writers of other effects go on meanwhile, each on its own
    /// connection.
    pub fn lock(&self, effect_id: &str) -> Result<PgSection<'_>, JournalError> {
        self.open_section(Some((effect_id, effect_key(&self.schema, effect_id))))
    }

    /// A lock-free view: read the rows committed since the last look, without a lock, on a
    /// connection no section waits on.
    pub fn peek(&self) -> Result<PgSection<'_>, JournalError> {
        self.open_section(None)
    }

    /// The claims session a claim key belongs to, reconnected (as a new session) if the last
    /// one was lost.
    fn claims_session(&self, slot: usize) -> Result<MutexGuard<'_, Claims>, JournalError> {
        let mut claims = self.claims[slot].lock().unwrap_or_else(|p| p.into_inner());
        if claims.session.as_ref().is_none_or(|s| s.client.is_closed()) {
            self.renew_claims(&mut claims)?;
        }
        Ok(claims)
    }

    /// The claims session ended: every claim taken on it is gone, and its holders must not
    /// send. Open a new one.
    fn renew_claims(&self, claims: &mut Claims) -> Result<(), JournalError> {
        claims.session = None;
        claims.epoch = claims.epoch.wrapping_add(1);
        claims.held.clear();
        claims.session = Some(self.connect_claims()?);
        Ok(())
    }

    /// A new claims session, its statements prepared.
    fn connect_claims(&self) -> Result<ClaimSession, JournalError> {
        let name = self.name();
        let mut client = PgStore::connect(&self.url, &name, Some(&self.schema))?;
        let mut prepare = |sql: &str| {
            client
                .prepare(sql)
                .map_err(db_err(&name, "prepare the claims session's statements"))
        };
        let try_lock = prepare("SELECT pg_try_advisory_lock($1)")?;
        let write = prepare(
            "INSERT INTO interlock_claims (effect_id, record, gen) VALUES ($1, $2, $3) \
             ON CONFLICT (effect_id) DO UPDATE SET record = EXCLUDED.record, gen = EXCLUDED.gen",
        )?;
        let confirm = prepare(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
             AND pid = pg_backend_pid() AND granted AND objsubid = 1 \
             AND classid::bigint = $1 AND objid::bigint = $2)",
        )?;
        Ok(ClaimSession {
            client,
            try_lock,
            write,
            confirm,
        })
    }

    /// Take the effect's claim if no session holds it.
    pub fn try_claim(&self, effect_id: &str) -> Result<Option<PgClaim<'_>>, JournalError> {
        let key = claim_key(&self.schema, effect_id);
        let slot = claim_slot(key);
        let mut claims = self.claims_session(slot)?;
        if claims.held.contains(&key) {
            // Another thread of this process holds it on this session, unless the session
            // ended unnoticed (the connection notices only when used): then that claim is gone.
            let alive = claims
                .session()?
                .client
                .is_valid(Duration::from_secs(5))
                .is_ok();
            if alive {
                return Ok(None);
            }
            self.renew_claims(&mut claims)?;
        }
        let name = self.name();
        let session = claims.session()?;
        let row = session
            .client
            .query_one(&session.try_lock, &[&key])
            .map_err(db_err(&name, "try the claim lock"))?;
        if !column::<bool>(&row, 0, &name, "the claim lock")? {
            return Ok(None);
        }
        claims.held.insert(key);
        Ok(Some(PgClaim {
            store: self,
            key,
            effect_id: effect_id.to_owned(),
            slot,
            epoch: claims.epoch,
            written: Mutex::new(None),
        }))
    }
}

/// Which claims session holds the claim of `key`: always the same one, so a second thread of
/// this process asking for a claim its session holds is told so by `held`, and one asking on
/// another session is refused by the server.
fn claim_slot(key: i64) -> usize {
    usize::try_from(key.rem_euclid(CLAIM_SESSIONS as i64)).unwrap_or(0)
}

impl Claims {
    /// The connected session (connected by [`PgStore::claims_session`]).
    fn session(&mut self) -> Result<&mut ClaimSession, JournalError> {
        self.session.as_mut().ok_or_else(|| JournalError::Database {
            what: "the claims session".into(),
            detail: "not connected".into(),
        })
    }
}

/// Every entry of the journal at `url`, in append order, without checking or writing anything
/// (for tests and tools).
pub(crate) fn read_rows(url: &str) -> Result<Vec<Value>, JournalError> {
    let shown = shown_url(url);
    let mut client = PgStore::connect(url, &shown, None)?;
    let rows = client
        .query("SELECT line FROM interlock_entries ORDER BY seq", &[])
        .map_err(db_err(&shown, "read the journal"))?;
    rows.iter()
        .map(|r| {
            let line: &str = column(r, 0, &shown, "reading the journal")?;
            serde_json::from_str::<Value>(line).map_err(|e| JournalError::Corrupt {
                path: PathBuf::from(&shown),
                line: 0,
                reason: format!("not JSON: {e}"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_left_out_of_messages() {
        assert_eq!(
            shown_url("postgres://u:secret@h:5432/db"),
            "postgres://u@h:5432/db"
        );
        assert_eq!(shown_url("postgres://h/db"), "postgres://h/db");
    }

    #[test]
    fn claim_keys_differ_by_effect_and_by_journal() {
        assert_ne!(claim_key("public", "a"), claim_key("public", "b"));
        assert_ne!(claim_key("public", "a"), claim_key("other", "a"));
        assert_eq!(claim_key("public", "a"), claim_key("public", "a"));
    }
}
