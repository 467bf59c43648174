//! Stripe's idempotency layer (per API key): saved results, replay, parameter
//! mismatch, in-progress conflicts and retention.

use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug)]
enum Slot {
    InProgress,
    Done { status: u16, body: Value },
}

#[derive(Debug)]
struct Entry {
    fingerprint: String,
    slot: Slot,
    at: Instant,
}

/// What to do with a request that carries an idempotency key.
#[derive(Debug, PartialEq)]
pub(crate) enum Begin {
    /// First use (or the old result expired): run it; the key is now in progress.
    Run,
    /// Same key, same request, finished: answer with the saved result.
    Replay { status: u16, body: Value },
    /// Same key, different parameters or endpoint.
    Mismatch,
    /// Same key while the first request is still running.
    InUse,
}

#[derive(Debug, Default)]
pub(crate) struct IdempotencyStore {
    entries: HashMap<String, Entry>,
}

impl IdempotencyStore {
    /// Looks the key up; reserves it when the request should run.
    /// `fingerprint` covers method, path and canonical parameters.
    pub fn begin(&mut self, key: &str, fingerprint: &str, now: Instant, ttl: Duration) -> Begin {
        if let Some(entry) = self.entries.get(key) {
            let expired = matches!(entry.slot, Slot::Done { .. })
                && now.saturating_duration_since(entry.at) >= ttl;
            if !expired {
                return match &entry.slot {
                    Slot::InProgress => Begin::InUse,
                    Slot::Done { .. } if entry.fingerprint != fingerprint => Begin::Mismatch,
                    Slot::Done { status, body } => Begin::Replay {
                        status: *status,
                        body: body.clone(),
                    },
                };
            }
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                fingerprint: fingerprint.to_string(),
                slot: Slot::InProgress,
                at: now,
            },
        );
        Begin::Run
    }

    /// Saves the result of a request that ran.
    pub fn finish(&mut self, key: &str, status: u16, body: Value, now: Instant) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.slot = Slot::Done { status, body };
            entry.at = now;
        }
    }

    /// Forgets a reserved key whose request failed validation (nothing saved).
    pub fn abandon(&mut self, key: &str) {
        if matches!(
            self.entries.get(key).map(|e| &e.slot),
            Some(Slot::InProgress)
        ) {
            self.entries.remove(key);
        }
    }
}
