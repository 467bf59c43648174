//! A claim held on the PostgreSQL store's claims session: its record, confirming it right
//! before a send, and letting it go.

use super::{column, db_err, Claims, PgClaim};
use crate::claim::ClaimRecord;
use crate::journal::JournalError;
use crate::target::SendDeadline;
use ed25519_dalek::SigningKey;
use std::sync::MutexGuard;
use std::time::Instant;

impl PgClaim<'_> {
    /// The claims connection, if it is still the session this claim was taken on; else the
    /// claim is stale: an error saying so.
    fn own_session(&self) -> Result<MutexGuard<'_, Claims>, JournalError> {
        let claims = self.store.claims[self.slot]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let open = claims
            .session
            .as_ref()
            .is_some_and(|s| !s.client.is_closed());
        if claims.epoch == self.epoch && open {
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
        let session = claims.session()?;
        session
            .client
            .execute(&session.write, &[&self.effect_id, &text, &gen])
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
        let session = claims.session()?;
        let row = session
            .client
            .query_one(&session.confirm, &[&hi, &lo])
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
        let mut claims = self.store.claims[self.slot]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if claims.epoch != self.epoch {
            // Taken on a session that ended: its lock went with it, and the key may now be held
            // on the new session by another holder of this process.
            return;
        }
        if let Some(session) = claims.session.as_mut() {
            // Only an integer is spliced into the text.
            let _ = session
                .client
                .simple_query(&format!("SELECT pg_advisory_unlock({})", self.key));
        }
        claims.held.remove(&self.key);
    }
}
