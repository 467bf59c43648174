//! The PostgreSQL journal store left out: the crate was built without its `postgres` feature.
//! The same names as the store's module, none of whose values can exist, so the gate's code is
//! the same either way; opening or reading a `postgres://` location is refused with an error
//! that says so.

use crate::claim::ClaimRecord;
use crate::journal::{Index, JournalError};
use crate::target::SendDeadline;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Map, Value};
use std::marker::PhantomData;
use std::path::Path;
use std::time::Duration;
use verify::entry::Kind;

/// No value: nothing of a PostgreSQL store can be opened in this build.
enum Never {}

/// The error for any PostgreSQL location (the URL is not repeated: it may hold a password).
fn left_out() -> JournalError {
    JournalError::Database {
        what: "a PostgreSQL journal (postgres://…) cannot be opened".to_owned(),
        detail: "this build of interlock has no PostgreSQL store; build it with its `postgres` \
                 feature (on by default)"
            .to_owned(),
    }
}

/// An open PostgreSQL journal store: never, in this build.
pub(crate) struct PgStore {
    never: Never,
}

/// One effect of a PostgreSQL journal under its lock: never, in this build.
pub(crate) struct PgSection<'a> {
    never: Never,
    store: PhantomData<&'a PgStore>,
}

/// A claim of a PostgreSQL journal: never, in this build.
pub(crate) struct PgClaim<'a> {
    never: Never,
    store: PhantomData<&'a PgStore>,
}

/// Every row of the journal at `url`: refused, in this build.
pub(crate) fn read_rows(_url: &str) -> Result<Vec<Value>, JournalError> {
    Err(left_out())
}

impl PgStore {
    /// Refused, in this build.
    pub fn open(
        _url: &str,
        _trusted: Vec<VerifyingKey>,
        _lock_wait: Duration,
        _send_window: Duration,
    ) -> Result<PgStore, JournalError> {
        Err(left_out())
    }

    /// As the PostgreSQL store's `send_window`; unreachable, as no value of `Self` exists.
    pub fn send_window(&self) -> Duration {
        match self.never {}
    }

    /// As the PostgreSQL store's `shown`; unreachable, as no value of `Self` exists.
    pub fn shown(&self) -> &Path {
        match self.never {}
    }

    /// As the PostgreSQL store's `lock`; unreachable, as no value of `Self` exists.
    pub fn lock(&self, _effect_id: &str) -> Result<PgSection<'_>, JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `peek`; unreachable, as no value of `Self` exists.
    pub fn peek(&self) -> Result<PgSection<'_>, JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `try_claim`; unreachable, as no value of `Self` exists.
    pub fn try_claim(&self, _effect_id: &str) -> Result<Option<PgClaim<'_>>, JournalError> {
        match self.never {}
    }
}

impl PgSection<'_> {
    /// As the PostgreSQL store's `holds_lock`; unreachable, as no value of `Self` exists.
    pub(crate) fn holds_lock(&self) -> bool {
        match self.never {}
    }

    /// As the PostgreSQL store's `lock_budget`; unreachable, as no value of `Self` exists.
    pub(crate) fn lock_budget(&mut self, _id: &str) -> Result<(), JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `shown`; unreachable, as no value of `Self` exists.
    pub(crate) fn shown(&self) -> &Path {
        match self.never {}
    }

    /// As the PostgreSQL store's `record_gen`; unreachable, as no value of `Self` exists.
    pub fn record_gen(&self, _effect_id: &str) -> Result<u64, JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `with_index`; unreachable, as no value of `Self` exists.
    pub fn with_index<R>(&self, _f: impl FnOnce(&Index) -> R) -> R {
        match self.never {}
    }

    /// As the PostgreSQL store's `read_record`; unreachable, as no value of `Self` exists.
    pub fn read_record(&self, _effect_id: &str) -> Option<(ClaimRecord, bool)> {
        match self.never {}
    }

    /// As the PostgreSQL store's `entry`; unreachable, as no value of `Self` exists.
    pub fn entry(
        &self,
        _effect_id: &str,
        _index: usize,
    ) -> Result<Map<String, Value>, JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `append`; unreachable, as no value of `Self` exists.
    pub fn append(
        &mut self,
        _effect_id: &str,
        _kind: Kind,
        _fields: Map<String, Value>,
        _ts_ms: u64,
        _key: &SigningKey,
    ) -> Result<Map<String, Value>, JournalError> {
        match self.never {}
    }
}

impl PgClaim<'_> {
    /// As the PostgreSQL store's `write_record`; unreachable, as no value of `Self` exists.
    pub fn write_record(&self, _record: &ClaimRecord) -> Result<(), JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `release`; unreachable, as no value of `Self` exists.
    pub fn release(self, _key: &SigningKey) {
        match self.never {}
    }

    /// As the PostgreSQL store's `confirm`; unreachable, as no value of `Self` exists.
    pub fn confirm(&self) -> Result<SendDeadline, JournalError> {
        match self.never {}
    }

    /// As the PostgreSQL store's `remove`; unreachable, as no value of `Self` exists.
    pub fn remove(self) {
        match self.never {}
    }
}
