//! The journal's schema: its migrations, applied in order on open under the schema lock, and
//! the lock that keeps gates from before schema version 5 from appending.

use super::{column, db_err};
use crate::journal::JournalError;
use postgres::Client;

/// Holds the older gates' journal-wide lock shared on `client`'s session (bounded wait): gates
/// from before schema version 5 take it exclusive around each append, so they cannot append
/// while this session lives.
pub(super) fn exclude_older_gates(
    client: &mut Client,
    shown: &str,
    ns: i32,
) -> Result<(), JournalError> {
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

/// Create the schema, or migrate it to [`SCHEMA_VERSION`], under the schema lock.
pub(super) fn migrate(client: &mut Client, shown: &str, ns: i32) -> Result<(), JournalError> {
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
