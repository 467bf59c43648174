//! What a round trip of the PostgreSQL store carries, named from its statement text: the classes
//! a fault is aimed at ("the 3rd append of gate A's main session").

use super::wire::{self, Message, Statement};
use std::collections::HashMap;
use std::fmt;

/// Which of a gate's two sessions a connection is (the store names them in `application_name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Session {
    /// The main session: effect locks, catch-ups, appends.
    Main,
    /// The claims session: claim locks, their confirmation, claim records, single-row reads.
    Claims,
}

impl Session {
    /// From a StartupMessage's `application_name` (`interlock-claims <schema>` or
    /// `interlock-journal`): anything but the claims session is taken as a main session.
    pub fn of_application(name: Option<&str>) -> Session {
        match name {
            Some(n) if n.starts_with("interlock-claims") => Session::Claims,
            _ => Session::Main,
        }
    }

    /// The other session of the same gate.
    pub fn other(self) -> Session {
        match self {
            Session::Main => Session::Claims,
            Session::Claims => Session::Main,
        }
    }

    /// `main` or `claims`.
    pub fn as_str(self) -> &'static str {
        match self {
            Session::Main => "main",
            Session::Claims => "claims",
        }
    }
}

/// What a round trip does, read from its statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// The connection's startup (authentication up to the first ReadyForQuery).
    Connect,
    /// Session settings, schema migration, the older gates' shared lock.
    Setup,
    /// An effect's (or budget's) lock, with the catch-up sent with it.
    Lock,
    /// A catch-up without a lock (a lock-free view).
    CatchUp,
    /// An entry appended (INSERT of the row and its mark).
    Append,
    /// An advisory lock let go (an effect's section ending, or a claim dropped).
    Unlock,
    /// A claim tried (`pg_try_advisory_lock`).
    Claim,
    /// A claim confirmed right before a send or a settling entry (`pg_locks`).
    Confirm,
    /// A claim record written.
    Record,
    /// A single row read: a claim record, its generation, or an entry read back.
    Read,
    /// Anything else (e.g. a bare Sync).
    Other,
}

impl Class {
    /// Lowercase name, as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Connect => "connect",
            Class::Setup => "setup",
            Class::Lock => "lock",
            Class::CatchUp => "catch-up",
            Class::Append => "append",
            Class::Unlock => "unlock",
            Class::Claim => "claim",
            Class::Confirm => "confirm",
            Class::Record => "record",
            Class::Read => "read",
            Class::Other => "other",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of a statement of the store, from its text.
pub fn classify(sql: &str) -> Class {
    let has = |s: &str| sql.contains(s);
    if has("INSERT INTO interlock_entries") {
        Class::Append
    } else if has("pg_advisory_lock(") && !has("pg_advisory_lock_shared") {
        Class::Lock
    } else if has("pg_snapshot_xmin") {
        Class::CatchUp
    } else if has("pg_advisory_unlock") {
        Class::Unlock
    } else if has("pg_try_advisory_lock") {
        Class::Claim
    } else if has("pg_locks") {
        Class::Confirm
    } else if has("INSERT INTO interlock_claims") {
        Class::Record
    } else if has("FROM interlock_claims") || has("FROM interlock_entries WHERE seq") {
        Class::Read
    } else if sql.trim().is_empty() {
        Class::Other
    } else {
        Class::Setup
    }
}

/// Which step of a statement's life a round trip is: a prepared statement takes one round
/// trip to prepare, one to execute, and one to close; a simple query one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOf {
    /// Parse and Describe.
    Prepare,
    /// Bind and Execute, or a simple Query: the statement runs.
    Run,
    /// Close of a prepared statement.
    Close,
}

/// The class and step of a round trip from its messages; remembers prepared statements'
/// classes by name in `prepared`.
pub fn round_trip_class(
    messages: &[Message],
    prepared: &mut HashMap<String, Class>,
) -> (Class, StepOf) {
    let mut found: Option<(Class, StepOf)> = None;
    let mut keep = |class, step| {
        // A statement that runs names the round trip; else one prepared; else one closed.
        let rank = |s: StepOf| match s {
            StepOf::Run => 2,
            StepOf::Prepare => 1,
            StepOf::Close => 0,
        };
        if found.is_none_or(|(_, s)| rank(step) > rank(s)) {
            found = Some((class, step));
        }
    };
    for m in messages {
        match wire::statement(m) {
            Statement::Query(sql) => keep(classify(&sql), StepOf::Run),
            Statement::Parse { name, sql } => {
                let class = classify(&sql);
                prepared.insert(name, class);
                keep(class, StepOf::Prepare);
            }
            Statement::Bind { statement } => {
                keep(
                    prepared.get(&statement).copied().unwrap_or(Class::Other),
                    StepOf::Run,
                );
            }
            Statement::Close { kind: b'S', name } => {
                keep(
                    prepared.remove(&name).unwrap_or(Class::Other),
                    StepOf::Close,
                );
            }
            Statement::Close { .. } | Statement::Other => {}
        }
    }
    found.unwrap_or((Class::Other, StepOf::Run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_statements_fall_in_their_classes() {
        let cases = [
            (
                "SELECT pg_advisory_lock(42); SELECT h.x::text, e.seq::text FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x) h",
                Class::Lock,
            ),
            (
                "SELECT h.x::text FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x) h",
                Class::CatchUp,
            ),
            (
                "WITH mark AS (INSERT INTO interlock_marks (hash) VALUES ($3)) INSERT INTO interlock_entries (effect_id, prev, hash, line) VALUES ($1, $2, $3, $4)",
                Class::Append,
            ),
            ("SELECT pg_advisory_unlock($1)", Class::Unlock),
            ("SELECT pg_try_advisory_lock($1)", Class::Claim),
            (
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory')",
                Class::Confirm,
            ),
            (
                "INSERT INTO interlock_claims (effect_id, record, gen) VALUES ($1, $2, $3)",
                Class::Record,
            ),
            ("SELECT gen FROM interlock_claims WHERE effect_id = $1", Class::Read),
            ("SELECT line FROM interlock_entries WHERE seq = $1", Class::Read),
            ("SELECT pg_advisory_lock_shared($1, $2)", Class::Setup),
            ("SET synchronous_commit = on", Class::Setup),
            ("SHOW fsync", Class::Setup),
            ("", Class::Other),
        ];
        for (sql, class) in cases {
            assert_eq!(classify(sql), class, "{sql}");
        }
    }

    #[test]
    fn sessions_are_told_apart_by_application_name() {
        assert_eq!(
            Session::of_application(Some("interlock-claims public")),
            Session::Claims
        );
        assert_eq!(
            Session::of_application(Some("interlock-journal")),
            Session::Main
        );
        assert_eq!(Session::of_application(None), Session::Main);
        assert_eq!(Session::Main.other(), Session::Claims);
    }

    fn msg(tag: u8, body: &[u8]) -> Message {
        Message {
            tag: Some(tag),
            raw: wire::typed(tag, body),
        }
    }

    fn cstr(s: &str) -> Vec<u8> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    }

    #[test]
    fn a_prepared_statement_is_named_by_its_text_when_it_runs_and_closes() {
        let mut prepared = HashMap::new();
        let sql = "SELECT pg_try_advisory_lock($1)";
        let parse = msg(b'P', &[cstr("s3"), cstr(sql), vec![0, 0]].concat());
        let describe = msg(b'D', &[vec![b'S'], cstr("s3")].concat());
        let sync = msg(b'S', &[]);
        assert_eq!(
            round_trip_class(&[parse, describe, sync.clone()], &mut prepared),
            (Class::Claim, StepOf::Prepare)
        );
        let bind = msg(
            b'B',
            &[cstr(""), cstr("s3"), vec![0, 0, 0, 0, 0, 0]].concat(),
        );
        let execute = msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat());
        assert_eq!(
            round_trip_class(&[bind, execute, sync.clone()], &mut prepared),
            (Class::Claim, StepOf::Run)
        );
        let close = msg(b'C', &[vec![b'S'], cstr("s3")].concat());
        assert_eq!(
            round_trip_class(&[close, sync.clone()], &mut prepared),
            (Class::Claim, StepOf::Close)
        );
        assert!(prepared.is_empty());
        assert_eq!(
            round_trip_class(&[sync], &mut prepared),
            (Class::Other, StepOf::Run)
        );
    }

    #[test]
    fn a_simple_query_is_named_by_its_text() {
        let mut prepared = HashMap::new();
        let q = msg(
            b'Q',
            &cstr("SELECT pg_advisory_lock(7); SELECT h.x::text FROM t"),
        );
        assert_eq!(
            round_trip_class(&[q], &mut prepared),
            (Class::Lock, StepOf::Run)
        );
    }
}
