//! `hand_pg_lock`'s lock: a session-level PostgreSQL advisory lock on the order, in the database
//! the interlock column's journal is in (the run's `--journal`, as this host reaches it).
//!
//! Session-level (`pg_advisory_lock`, released by `pg_advisory_unlock`) rather than
//! `pg_advisory_xact_lock`: the lock spans HTTP calls to the service (the lookup, the cap's
//! listing, the POST and its answer), and a transaction held open across them would sit idle in
//! transaction for as long as the service takes. The session holds no transaction; it holds the
//! lock until the column releases it after the POST's answer is logged, or until the session
//! ends. A SIGKILLed holder's connection closes with its process, so PostgreSQL ends the session
//! and releases the lock: the same behaviour as `hand_lock`'s `flock`, across hosts.

use super::JOURNAL_LOCATION_FILE;
use crate::billing_credit::ScenarioError;
use std::path::Path;
use std::time::Duration;

/// The SQL of the lock's key: one 64-bit key per order and journal schema (advisory locks are
/// database-wide; the run's schema keeps two runs on one database apart).
const KEY_SQL: &str = "hashtextextended('hand_pg_lock ' || current_schema() || ' ' || $1, 0)";

/// The order's advisory lock, held by this session until [`PgOrderLock::release`] or until the
/// session ends (the process dies, or the value is dropped and the connection closes).
pub(crate) struct PgOrderLock {
    client: postgres::Client,
    order_id: String,
}

/// The PostgreSQL URL the cell names for its journal; an error when it names none (the column
/// needs the run's database).
fn database_url(cell_dir: &Path) -> Result<String, ScenarioError> {
    let path = cell_dir.join(JOURNAL_LOCATION_FILE);
    let text = std::fs::read_to_string(&path).map_err(ScenarioError::io(
        "read the journal's location (hand_pg_lock needs the run's PostgreSQL, --journal)",
        &path,
    ))?;
    let url = text.trim();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(url.to_owned())
    } else {
        Err(ScenarioError::Invalid(
            "hand_pg_lock needs the run's PostgreSQL (--journal postgres://...); the cell's \
             journal is not in a database"
                .into(),
        ))
    }
}

impl PgOrderLock {
    /// Connects to the cell's database and waits for the order's lock.
    pub(crate) fn take(cell_dir: &Path, order_id: &str) -> Result<PgOrderLock, ScenarioError> {
        let url = database_url(cell_dir)?;
        let mut config: postgres::Config = url
            .parse()
            .map_err(ScenarioError::database("parse the journal's URL"))?;
        config
            .connect_timeout(Duration::from_secs(10))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(2))
            .application_name("hand_pg_lock");
        let mut client = config
            .connect(postgres::NoTls)
            .map_err(ScenarioError::database("connect"))?;
        client
            .execute(&format!("SELECT pg_advisory_lock({KEY_SQL})"), &[&order_id])
            .map_err(ScenarioError::database("take the order's advisory lock"))?;
        Ok(PgOrderLock {
            client,
            order_id: order_id.to_owned(),
        })
    }

    /// Releases the lock and closes the session.
    pub(crate) fn release(mut self) -> Result<(), ScenarioError> {
        let row = self
            .client
            .query_one(
                &format!("SELECT pg_advisory_unlock({KEY_SQL})"),
                &[&self.order_id],
            )
            .map_err(ScenarioError::database("release the order's advisory lock"))?;
        let released: bool = row
            .try_get(0)
            .map_err(ScenarioError::database("read the unlock's answer"))?;
        if !released {
            return Err(ScenarioError::Invalid(
                "the order's advisory lock was not held by this session at release".into(),
            ));
        }
        Ok(())
    }
}
