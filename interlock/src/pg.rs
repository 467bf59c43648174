//! The PostgreSQL journal store (DESIGN §2.7): one journal shared by gates on many hosts.
//!
//! - Schema created and migrated on open, versioned in `interlock_schema` (migrations run under
//!   an advisory lock, so two openers never race). Entries live in `interlock_entries`, append-only
//!   (triggers refuse UPDATE, DELETE and TRUNCATE), each row the entry's JSON line exactly as the file
//!   store writes it, plus `effect_id`, `prev` and `hash`. A unique `(effect_id, prev)` (nulls not
//!   distinct: PostgreSQL 15 or later) keeps every chain linear: two writers can never both
//!   extend the same hash.
//! - No journal-wide lock (DESIGN §2.7): a section locks one effect, with a session advisory lock
//!   of the store's main connection keyed by the effect, waited for at most the gate's lock wait
//!   (`lock_timeout`); a budget admission takes the budget's lock after it. Every append commits
//!   on its own before it returns (synchronous commit), so it is durable like an fsynced line;
//!   writers of other effects commit meanwhile and share WAL flushes.
//! - Catching up goes by transaction id (schema version 5 stamps each row with its own): one
//!   statement reads every row at or past the last horizon and its snapshot's horizon (the oldest
//!   transaction still in progress). A row that commits late has a transaction id past the
//!   horizon read before it, so it is read then; a `seq` cursor would skip it (rows of concurrent
//!   writers commit out of `seq` order).
//! - Claims are session advisory locks held by a second connection while a send can be in flight;
//!   a killed process's session ends at once, a partitioned host's when the server notices
//!   (the session sets `tcp_user_timeout` and keepalives, a few seconds). A claim is bound to the
//!   session it was taken on (an epoch bumped on every reconnect): before a send the holder
//!   confirms that this very session is still the claims connection and still holds the lock; if
//!   it cannot, it does not send. A claim whose session was lost is stale: its record is never
//!   written and its drop never touches a lock of a later session. A confirmed holder sends only
//!   within the store's send window of asking (the deadline is checked right before the request
//!   leaves), so a recoverer that takes over from a holder that may live knows by when its
//!   requests had left. Claim records live in `interlock_claims`.
//! - Reading checks every row as the file store checks every line (hash, chain, trusted signer,
//!   signature), into the same in-memory index; each lock acquisition reads only rows committed
//!   since (and the few past the horizon again, skipping those already indexed).

use crate::claim::ClaimRecord;
use crate::journal::{sealed_line, verify_signatures, EntryLoc, Index, JournalError};
use crate::target::SendDeadline;
use ed25519_dalek::{SigningKey, VerifyingKey};
use postgres::{Client, NoTls};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use verify::entry::Kind;

/// Holds the older gates' journal-wide lock shared on `client`'s session (bounded wait): gates
/// from before schema version 5 take it exclusive around each append, so they cannot append
/// while this session lives.
fn exclude_older_gates(client: &mut Client, shown: &str, ns: i32) -> Result<(), JournalError> {
    client
        .execute(
            "SELECT pg_advisory_lock_shared($1, $2)",
            &[&ns, &OLD_JOURNAL_LOCK],
        )
        .map_err(db_err(
            shown,
            "hold the older gates' journal lock shared (a gate from before schema version 5 \
             is appending: stop it)",
        ))?;
    Ok(())
}

/// Second key of the two-key advisory lock of migrations; the first is the journal's namespace.
/// Claims, effects and budgets use the one-key (bigint) form, each key a hash of what it locks.
const SCHEMA_LOCK: i32 = 2;
/// Second key of the journal-wide lock gates before schema version 5 took around every append.
/// Current gates hold it shared for their main session's life: an older gate then cannot
/// append (its exclusive lock times out, `Busy`) while a current one runs, instead of admitting
/// under a lock the current gates never take.
const OLD_JOURNAL_LOCK: i32 = 1;
const SCHEMA_VERSION: i32 = 5;

const MIGRATION_1: &str = "
CREATE TABLE interlock_entries (
    seq bigserial PRIMARY KEY,
    effect_id text NOT NULL,
    prev text,
    hash text NOT NULL UNIQUE,
    line text NOT NULL,
    CONSTRAINT interlock_entries_linear UNIQUE NULLS NOT DISTINCT (effect_id, prev)
);
CREATE TABLE interlock_claims (
    effect_id text PRIMARY KEY,
    record text NOT NULL
);
CREATE FUNCTION interlock_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'interlock_entries is append-only';
END $$;
CREATE TRIGGER interlock_entries_append_only BEFORE UPDATE OR DELETE ON interlock_entries
    FOR EACH ROW EXECUTE FUNCTION interlock_entries_append_only();
";

/// Version 2: TRUNCATE is refused too (a statement trigger: the row trigger of version 1 does
/// not fire for it), so the journal cannot be emptied and refilled with an older copy.
const MIGRATION_2: &str = "
CREATE FUNCTION interlock_entries_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'interlock_entries is append-only: TRUNCATE is refused';
END $$;
CREATE TRIGGER interlock_entries_no_truncate BEFORE TRUNCATE ON interlock_entries
    FOR EACH STATEMENT EXECUTE FUNCTION interlock_entries_no_truncate();
";

/// Version 3: claim records carry their generation in a column that only a later generation may
/// overwrite, and their rows are never removed (nor truncated), so an older record cannot be put
/// back: a record whose own generation is not its row's is not believed.
const MIGRATION_3: &str = "
ALTER TABLE interlock_claims ADD COLUMN gen bigint NOT NULL DEFAULT 0;
CREATE FUNCTION interlock_claims_forward_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'interlock_claims rows are never removed';
    END IF;
    IF NEW.effect_id <> OLD.effect_id OR NEW.gen <= OLD.gen THEN
        RAISE EXCEPTION 'a claim record can only be replaced by a later generation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER interlock_claims_forward_only BEFORE UPDATE OR DELETE ON interlock_claims
    FOR EACH ROW EXECUTE FUNCTION interlock_claims_forward_only();
CREATE FUNCTION interlock_claims_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'interlock_claims rows are never removed: TRUNCATE is refused';
END $$;
CREATE TRIGGER interlock_claims_no_truncate BEFORE TRUNCATE ON interlock_claims
    FOR EACH STATEMENT EXECUTE FUNCTION interlock_claims_no_truncate();
";

/// Version 4: every row a gate appends is marked, in the same statement, in a table of its own
/// (DESIGN §2.5). A row without its mark was not appended by a gate of this journal: rows of a
/// fork (a restored copy of the schema that a gate wrote to) inserted into the journal table are
/// refused, however they are signed. Rows already there are marked by the migration.
const MIGRATION_4: &str = "
CREATE TABLE interlock_marks (
    hash text PRIMARY KEY
);
INSERT INTO interlock_marks (hash) SELECT hash FROM interlock_entries;
CREATE FUNCTION interlock_marks_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'interlock_marks rows are never changed or removed';
END $$;
CREATE TRIGGER interlock_marks_kept BEFORE UPDATE OR DELETE ON interlock_marks
    FOR EACH ROW EXECUTE FUNCTION interlock_marks_kept();
CREATE TRIGGER interlock_marks_no_truncate BEFORE TRUNCATE ON interlock_marks
    FOR EACH STATEMENT EXECUTE FUNCTION interlock_marks_kept();
";

/// Version 5: no journal-wide lock (DESIGN §2.7). Rows of concurrent writers commit out of
/// `seq` order, so catching up goes by transaction id: every row records the transaction that
/// wrote it (stamped by a trigger, whatever the INSERT says), and a reader that has read every
/// row of the transactions before a snapshot's horizon (its oldest transaction still in
/// progress) never needs to look below it again: a row that commits later has a later id.
const MIGRATION_5: &str = "
ALTER TABLE interlock_entries ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX interlock_entries_xid ON interlock_entries (xid);
CREATE FUNCTION interlock_entries_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.xid := pg_current_xact_id();
    RETURN NEW;
END $$;
CREATE TRIGGER interlock_entries_stamp BEFORE INSERT ON interlock_entries
    FOR EACH ROW EXECUTE FUNCTION interlock_entries_stamp();
";

struct Main {
    client: Client,
    index: Index,
    /// Every row written by a transaction before this id (a snapshot's horizon) is indexed.
    horizon: i64,
    /// Rows at or past the horizon already indexed (seq → transaction id): read again by the
    /// next catch-up, and skipped.
    ahead: HashMap<i64, i64>,
}

struct Claims {
    client: Client,
    /// Which session `client` is: bumped on every reconnect. A claim remembers the session it
    /// was taken on; once this moved on, that claim is gone with its session, whatever the new
    /// session holds.
    epoch: u64,
    /// Claim keys this process holds on the current session (a session's advisory locks are
    /// re-entrant, so threads of one process are kept apart here).
    held: HashSet<i64>,
}

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
    main: Mutex<Main>,
    claims: Mutex<Claims>,
}

/// One effect under its lock (or a lock-free view), with every row committed before the lock
/// was taken indexed.
pub(crate) struct PgSection<'a> {
    main: MutexGuard<'a, Main>,
    store: &'a PgStore,
    /// The effect whose lock (a session advisory lock of the main connection) this holds;
    /// `None` for a lock-free view.
    effect: Option<(String, i64)>,
    /// The budget lock taken for an admission, released with the effect's.
    budget: Option<i64>,
}

/// A claim held by this process's claims session: the one current when it was taken. Once that
/// session is lost the claim is stale: it cannot be confirmed, its record cannot be written, and
/// dropping it touches nothing (the lock went with the session, and a lock of the same key on
/// a later session belongs to another holder).
pub(crate) struct PgClaim<'a> {
    store: &'a PgStore,
    key: i64,
    effect_id: String,
    /// The claims session it was taken on.
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

    /// The main connection: its lock waits (the journal lock included) are bounded by
    /// `lock_wait`.
    fn connect_main(url: &str, shown: &str, lock_wait: Duration) -> Result<Client, JournalError> {
        let mut client = PgStore::connect(url, shown, None)?;
        let ms = u64::try_from(lock_wait.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        client
            .batch_execute(&format!("SET lock_timeout = {ms}"))
            .map_err(db_err(shown, "set the lock timeout"))?;
        Ok(client)
    }

    /// Connect, create or migrate the schema, and read every entry.
    pub fn open(
        url: &str,
        trusted: Vec<VerifyingKey>,
        lock_wait: Duration,
        send_window: Duration,
    ) -> Result<PgStore, JournalError> {
        let shown = shown_url(url);
        let mut client = PgStore::connect_main(url, &shown, lock_wait)?;
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
        exclude_older_gates(&mut client, &shown, ns)?;
        let claims = PgStore::connect(url, &shown, Some(&schema))?;
        let store = PgStore {
            schema,
            url: url.to_owned(),
            shown: PathBuf::from(&shown),
            trusted,
            lock_wait,
            send_window,
            ns,
            main: Mutex::new(Main {
                client,
                index: Index::default(),
                horizon: 0,
                ahead: HashMap::new(),
            }),
            claims: Mutex::new(Claims {
                client: claims,
                epoch: 0,
                held: HashSet::new(),
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

    fn main(&self) -> Result<MutexGuard<'_, Main>, JournalError> {
        let mut main = self.main.lock().unwrap_or_else(|p| p.into_inner());
        if main.client.is_closed() {
            main.client = PgStore::connect_main(&self.url, &self.name(), self.lock_wait)?;
            exclude_older_gates(&mut main.client, &self.name(), self.ns)?;
        }
        Ok(main)
    }

    /// Take a session advisory lock on the main connection (bounded wait: `lock_timeout`).
    fn advisory_lock(&self, main: &mut Main, key: i64, what: &str) -> Result<(), JournalError> {
        let ms = u64::try_from(self.lock_wait.as_millis()).unwrap_or(u64::MAX);
        match main.client.execute("SELECT pg_advisory_lock($1)", &[&key]) {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {
                Err(JournalError::Busy {
                    path: self.shown.clone(),
                    waited_ms: ms,
                })
            }
            Err(e) => Err(db_err(&self.name(), &format!("take the lock of {what}"))(e)),
        }
    }

    /// Take the lock of one effect (bounded wait) and read the rows committed since the last
    /// look. No journal-wide lock: writers of other effects go on meanwhile.
    pub fn lock(&self, effect_id: &str) -> Result<PgSection<'_>, JournalError> {
        let main = self.main()?;
        let key = effect_key(&self.schema, effect_id);
        let mut section = PgSection {
            main,
            store: self,
            effect: None,
            budget: None,
        };
        // The lock and the catch-up in one round trip: two statements, so under read committed
        // (set at connect) the catch-up's snapshot is taken after the lock was granted (it sees
        // every row its last holder committed).
        match section.refresh_after(Some(key)) {
            Ok(()) => {
                section.effect = Some((effect_id.to_owned(), key));
                Ok(section)
            }
            Err(e) => {
                if !matches!(e, JournalError::Busy { .. }) {
                    // Granted or not: a session lock outlives the aborted statement.
                    section.unlock(key);
                }
                Err(e)
            }
        }
    }

    /// A lock-free view: read the rows committed since the last look, without a lock.
    pub fn peek(&self) -> Result<PgSection<'_>, JournalError> {
        let main = self.main()?;
        let mut section = PgSection {
            main,
            store: self,
            effect: None,
            budget: None,
        };
        section.refresh()?;
        Ok(section)
    }

    /// The claims connection, reconnected (as a new session) if the last one was lost.
    fn claims_session(&self) -> Result<MutexGuard<'_, Claims>, JournalError> {
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        if claims.client.is_closed() {
            // The session ended: every claim taken on it is gone, and its holders must not send.
            claims.client = PgStore::connect(&self.url, &self.name(), Some(&self.schema))?;
            claims.epoch = claims.epoch.wrapping_add(1);
            claims.held.clear();
        }
        Ok(claims)
    }

    /// Take the effect's claim if no session holds it.
    pub fn try_claim(&self, effect_id: &str) -> Result<Option<PgClaim<'_>>, JournalError> {
        let key = claim_key(&self.schema, effect_id);
        let mut claims = self.claims_session()?;
        if claims.held.contains(&key) {
            return Ok(None);
        }
        let name = self.name();
        let row = claims
            .client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .map_err(db_err(&name, "try the claim lock"))?;
        if !column::<bool>(&row, 0, &name, "the claim lock")? {
            return Ok(None);
        }
        claims.held.insert(key);
        Ok(Some(PgClaim {
            store: self,
            key,
            effect_id: effect_id.to_owned(),
            epoch: claims.epoch,
            written: Mutex::new(None),
        }))
    }

    /// The effect's claim record (read on the claims connection: callers may hold the journal
    /// lock, and the lock order is main, then claims).
    /// The effect's claim record and whether it is its row's latest generation (an older record
    /// written back over a later one is not).
    pub fn read_record(&self, effect_id: &str) -> Option<(ClaimRecord, bool)> {
        let mut claims = self.row_reader().ok()?;
        let row = claims
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
        let name = self.name();
        let mut claims = self.row_reader()?;
        let row = claims
            .client
            .query_opt(
                "SELECT gen FROM interlock_claims WHERE effect_id = $1",
                &[&effect_id],
            )
            .map_err(db_err(&name, "read a claim record's generation"))?;
        match row {
            None => Ok(0),
            Some(r) => {
                Ok(u64::try_from(column::<i64>(&r, 0, &name, "a claim generation")?).unwrap_or(0))
            }
        }
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

/// Create the schema, or migrate it to [`SCHEMA_VERSION`], under the schema lock.
fn migrate(client: &mut Client, shown: &str, ns: i32) -> Result<(), JournalError> {
    let mut tx = client
        .transaction()
        .map_err(db_err(shown, "begin the migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&ns, &SCHEMA_LOCK])
        .map_err(db_err(shown, "take the schema lock"))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS interlock_schema (version int NOT NULL)")
        .map_err(db_err(shown, "create the schema table"))?;
    let row = tx
        .query_opt("SELECT max(version) FROM interlock_schema", &[])
        .map_err(db_err(shown, "read the schema version"))?;
    let version = match row {
        Some(r) => column::<Option<i32>>(&r, 0, shown, "the schema version")?.unwrap_or(0),
        None => 0,
    };
    if version > SCHEMA_VERSION {
        return Err(JournalError::Database {
            what: format!("{shown}: schema version {version}"),
            detail: format!(
                "this build knows versions up to {SCHEMA_VERSION}; use a newer interlock"
            ),
        });
    }
    if version < 1 {
        tx.batch_execute(MIGRATION_1).map_err(db_err(
            shown,
            "create the journal tables (PostgreSQL 15 or later)",
        ))?;
        tx.execute("INSERT INTO interlock_schema (version) VALUES (1)", &[])
            .map_err(db_err(shown, "record the schema version"))?;
    }
    if version < 2 {
        tx.batch_execute(MIGRATION_2)
            .map_err(db_err(shown, "refuse TRUNCATE of the journal table"))?;
        tx.execute("INSERT INTO interlock_schema (version) VALUES (2)", &[])
            .map_err(db_err(shown, "record the schema version"))?;
    }
    if version < 3 {
        tx.batch_execute(MIGRATION_3)
            .map_err(db_err(shown, "make claim records forward-only"))?;
        tx.execute("INSERT INTO interlock_schema (version) VALUES (3)", &[])
            .map_err(db_err(shown, "record the schema version"))?;
    }
    if version < 4 {
        tx.batch_execute(MIGRATION_4)
            .map_err(db_err(shown, "mark the journal's rows"))?;
        tx.execute("INSERT INTO interlock_schema (version) VALUES (4)", &[])
            .map_err(db_err(shown, "record the schema version"))?;
    }
    if version < 5 {
        tx.batch_execute(MIGRATION_5)
            .map_err(db_err(shown, "record each row's transaction"))?;
        tx.execute("INSERT INTO interlock_schema (version) VALUES (5)", &[])
            .map_err(db_err(shown, "record the schema version"))?;
    }
    tx.commit().map_err(db_err(shown, "commit the migration"))
}

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

    fn unlock(&mut self, key: i64) {
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
    fn refresh(&mut self) -> Result<(), JournalError> {
        self.refresh_after(None)
    }

    /// Take session advisory lock `lock` first if one is given (bounded: `Busy` past the lock
    /// wait), then read and check the rows committed since the last look.
    fn refresh_after(&mut self, lock: Option<i64>) -> Result<(), JournalError> {
        if let Some(reason) = &self.main.index.poisoned {
            return Err(JournalError::Poisoned {
                path: self.store.shown.clone(),
                reason: reason.clone(),
            });
        }
        let name = self.store.name();
        let horizon = self.main.horizon;
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
                db_err(&name, "lock and read the journal")(e)
            }
        })?;
        let bad = |what: &str| JournalError::Database {
            what: format!("{name}: unexpected answer to reading the journal"),
            detail: format!("{what} is missing or not an integer"),
        };
        let int = |v: Option<&str>, what: &str| {
            v.and_then(|t| t.parse::<i64>().ok())
                .ok_or_else(|| bad(what))
        };
        let rows: Vec<postgres::SimpleQueryRow> = answer
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) if r.len() == 5 => Some(r),
                _ => None,
            })
            .collect();
        let mut sigs = Vec::with_capacity(rows.len());
        // Rows without a mark: (effect id, hash) of the first, and how many.
        let mut unmarked: Option<(String, String)> = None;
        let mut unmarked_count = 0;
        let mut next_horizon = horizon;
        for row in &rows {
            next_horizon = next_horizon.max(int(row.get(0), "the horizon")?);
            if row.get(1).is_none() {
                // No row past the horizon: the one line carries the horizon only.
                continue;
            }
            let seq = int(row.get(1), "a row's seq")?;
            let xid = int(row.get(4), "a row's transaction")?;
            if self.main.ahead.contains_key(&seq) {
                continue;
            }
            self.main.ahead.insert(seq, xid);
            let line: &str = row.get(2).ok_or_else(|| bad("a row's line"))?;
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
                        unmarked_count += 1;
                        if unmarked.is_none() {
                            let text = |e: &Value, k: &str| {
                                e.get(k)
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned()
                            };
                            let entry: Value = serde_json::from_str(line).unwrap_or_default();
                            unmarked = Some((text(&entry, "effect_id"), text(&entry, "hash")));
                        }
                    }
                }
                Err(reason) => {
                    let e = self.corrupt(line_no, format!("row {seq}: {reason}"));
                    self.main.index.poisoned.get_or_insert(e.to_string());
                    return Err(e);
                }
            }
            self.main.index.lines += 1;
        }
        self.main.horizon = next_horizon;
        self.main.ahead.retain(|_, xid| *xid >= next_horizon);
        if let Err(line) = verify_signatures(&sigs) {
            let e = self.corrupt(line, "its signature does not verify for its signer".into());
            self.main.index.poisoned.get_or_insert(e.to_string());
            return Err(e);
        }
        if let Some((effect_id, hash)) = unmarked {
            let e = JournalError::Unmarked {
                path: self.store.shown.clone(),
                effect_id,
                hash,
                count: unmarked_count,
            };
            self.main.index.poisoned.get_or_insert(e.to_string());
            return Err(e);
        }
        Ok(())
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

impl PgStore {
    /// A connection for reading single rows while a section holds the main one.
    fn row_reader(&self) -> Result<MutexGuard<'_, Claims>, JournalError> {
        self.claims_session()
    }
}

impl std::ops::Deref for Claims {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Claims {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
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

impl PgClaim<'_> {
    /// The claims connection, if it is still the session this claim was taken on; else the
    /// claim is stale: an error saying so.
    fn own_session(&self) -> Result<MutexGuard<'_, Claims>, JournalError> {
        let claims = self.store.claims.lock().unwrap_or_else(|p| p.into_inner());
        if claims.epoch == self.epoch && !claims.client.is_closed() {
            return Ok(claims);
        }
        Err(JournalError::Database {
            what: format!("{}: claim of effect {}", self.store.name(), self.effect_id),
            detail: "the session it was taken on has ended, and the claim with it; its holder \
                     must not send"
                .into(),
        })
    }

    /// Replace the claim's record (never on a later session: the record may be another
    /// holder's by then).
    pub fn write_record(&self, record: &ClaimRecord) -> Result<(), JournalError> {
        let text = serde_json::to_string(record).map_err(|e| JournalError::Database {
            what: format!("{}: could not encode a claim record", self.store.name()),
            detail: e.to_string(),
        })?;
        let gen = i64::try_from(record.gen).map_err(|_| JournalError::Database {
            what: format!("{}: could not write a claim record", self.store.name()),
            detail: format!("generation {} is out of range", record.gen),
        })?;
        let mut claims = self.own_session()?;
        claims
            .client
            .execute(
                "INSERT INTO interlock_claims (effect_id, record, gen) VALUES ($1, $2, $3) \
                 ON CONFLICT (effect_id) DO UPDATE SET record = EXCLUDED.record, gen = EXCLUDED.gen",
                &[&self.effect_id, &text, &gen],
            )
            .map_err(db_err(&self.store.name(), "write a claim record"))?;
        drop(claims);
        *self.written.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(record.clone()));
        Ok(())
    }

    /// Let the claim go, its record saying first that no send of this holder can still leave
    /// (signed again with `key`; if the record cannot be written, the next holder assumes one
    /// can).
    pub fn release(self, key: &SigningKey) {
        let written = self
            .written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(record) = written {
            let released = ClaimRecord {
                released: true,
                gen: record.gen.saturating_add(1),
                ..*record
            };
            let _ = self.write_record(&released.signed(key));
        }
        // Drop releases the lock.
    }

    /// Confirm, right before a send, that the session this claim was taken on is still the
    /// claims connection and still holds the lock: not merely that some session of this process
    /// holds the key (after a reconnect, another holder's claim on the new session would pass).
    /// The request must then leave within the send window of the instant before the question was
    /// asked: the session still held the lock after that instant, so a holder that takes the
    /// claim over once it is lost took it later, and waits the window from then.
    pub fn confirm(&self) -> Result<SendDeadline, JournalError> {
        let asked = Instant::now();
        let bits = u64::from_ne_bytes(self.key.to_ne_bytes());
        let (hi, lo) = (
            i64::try_from(bits >> 32).unwrap_or(0),
            i64::try_from(bits & 0xffff_ffff).unwrap_or(0),
        );
        let mut claims = self.own_session()?;
        let name = self.store.name();
        let row = claims
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
                 AND pid = pg_backend_pid() AND granted AND objsubid = 1 \
                 AND classid::bigint = $1 AND objid::bigint = $2)",
                &[&hi, &lo],
            )
            .map_err(db_err(&name, "confirm the claim's session"))?;
        if column::<bool>(&row, 0, &name, "confirming the claim")? {
            Ok(SendDeadline::by(asked + self.store.send_window))
        } else {
            Err(JournalError::Database {
                what: format!("{}: claim of effect {}", self.store.name(), self.effect_id),
                detail: "this process's session no longer holds it".into(),
            })
        }
    }

    /// The effect is settled: release the claim. Its record's row stays (rows are never
    /// removed, so no older record can take its place); nothing reads it once no dispatch is open.
    pub fn remove(self) {
        // Drop releases the lock.
    }
}

impl Drop for PgClaim<'_> {
    fn drop(&mut self) {
        let mut claims = self.store.claims.lock().unwrap_or_else(|p| p.into_inner());
        if claims.epoch != self.epoch {
            // Taken on a session that ended: its lock went with it, and the key may now be held
            // on the new session by another holder of this process.
            return;
        }
        let _ = claims
            .client
            .execute("SELECT pg_advisory_unlock($1)", &[&self.key]);
        claims.held.remove(&self.key);
    }
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
