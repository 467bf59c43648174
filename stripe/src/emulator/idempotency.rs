//! Stripe's idempotency layer (per API key): saved results, replay, parameter
//! and endpoint mismatch, in-progress conflicts and retention.
//!
//! As Stripe documents it, a result is saved once the endpoint has begun
//! executing, whatever it was: a success, a business error, or a 500. Requests
//! turned away before that (parameter validation, rate limiting, a conflicting
//! request in flight) leave nothing behind and the key stays free.

use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The answer saved under a key and replayed for later requests with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Saved {
    /// HTTP status of the first answer.
    pub status: u16,
    /// Its JSON body.
    pub body: Value,
    /// `Request-Id` of the first request, sent back as `Original-Request`.
    pub request_id: String,
    /// The `Stripe-Should-Retry` hint of the first answer, if it had one.
    pub should_retry: Option<bool>,
}

#[derive(Debug)]
enum Slot {
    InProgress,
    Done(Saved),
}

#[derive(Debug)]
struct Entry {
    endpoint: String,
    params: String,
    slot: Slot,
    at: Instant,
}

/// What to do with a request that carries an idempotency key.
#[derive(Debug, PartialEq)]
pub(crate) enum Begin {
    /// First use (or the old result expired): run it; the key is now in progress.
    Run,
    /// Same key, same request, finished: answer with the saved result.
    Replay(Saved),
    /// Same key and endpoint, different parameters.
    ParamsMismatch,
    /// Same key first used on another endpoint (named here).
    EndpointMismatch {
        /// `POST /v1/...` of the first use.
        first: String,
    },
    /// Same key while the first request is still running.
    InUse,
}

/// Saved results of one account, by key.
#[derive(Debug, Default)]
pub(crate) struct IdempotencyStore {
    entries: HashMap<String, Entry>,
}

impl IdempotencyStore {
    /// Looks the key up; reserves it when the request should run.
    /// `endpoint` is `METHOD /path`, `params` the canonical parameters.
    pub fn begin(
        &mut self,
        key: &str,
        endpoint: &str,
        params: &str,
        now: Instant,
        ttl: Duration,
    ) -> Begin {
        if let Some(entry) = self.entries.get(key) {
            let expired = matches!(entry.slot, Slot::Done(_))
                && now.saturating_duration_since(entry.at) >= ttl;
            if !expired {
                return match &entry.slot {
                    Slot::InProgress => Begin::InUse,
                    Slot::Done(_) if entry.endpoint != endpoint => Begin::EndpointMismatch {
                        first: entry.endpoint.clone(),
                    },
                    Slot::Done(_) if entry.params != params => Begin::ParamsMismatch,
                    Slot::Done(saved) => Begin::Replay(saved.clone()),
                };
            }
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                endpoint: endpoint.to_string(),
                params: params.to_string(),
                slot: Slot::InProgress,
                at: now,
            },
        );
        Begin::Run
    }

    /// Saves the answer of a request whose endpoint began executing.
    pub fn finish(&mut self, key: &str, saved: Saved, now: Instant) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.slot = Slot::Done(saved);
            entry.at = now;
        }
    }

    /// Forgets every finished result saved at or before `before`, as Stripe does once its
    /// retention window has passed (a key in progress is kept: its request is still running).
    pub fn forget_finished_before(&mut self, before: Instant) {
        self.entries
            .retain(|_, e| matches!(e.slot, Slot::InProgress) || e.at > before);
    }

    /// Forgets a reserved key whose request was turned away before the
    /// endpoint began executing (nothing saved: the key can be used again).
    pub fn abandon(&mut self, key: &str) {
        if matches!(
            self.entries.get(key).map(|e| &e.slot),
            Some(Slot::InProgress)
        ) {
            self.entries.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn saved(status: u16) -> Saved {
        Saved {
            status,
            body: json!({"n": status}),
            request_id: "req_1".into(),
            should_retry: None,
        }
    }

    #[test]
    fn a_saved_error_replays_and_other_uses_are_told_apart() {
        let mut store = IdempotencyStore::default();
        let (t, ttl) = (Instant::now(), Duration::from_secs(60));
        assert_eq!(store.begin("k", "POST /v1/a", "x=1", t, ttl), Begin::Run);
        assert_eq!(store.begin("k", "POST /v1/a", "x=1", t, ttl), Begin::InUse);
        store.finish("k", saved(500), t);
        assert_eq!(
            store.begin("k", "POST /v1/a", "x=1", t, ttl),
            Begin::Replay(saved(500))
        );
        assert_eq!(
            store.begin("k", "POST /v1/a", "x=2", t, ttl),
            Begin::ParamsMismatch
        );
        assert_eq!(
            store.begin("k", "POST /v1/b", "x=1", t, ttl),
            Begin::EndpointMismatch {
                first: "POST /v1/a".into()
            }
        );
        // Expired: the key runs again.
        assert_eq!(
            store.begin("k", "POST /v1/a", "x=1", t + ttl, ttl),
            Begin::Run
        );
    }

    #[test]
    fn results_saved_before_the_retention_passed_are_forgotten_and_the_key_runs_again() {
        let mut store = IdempotencyStore::default();
        let (t, ttl) = (Instant::now(), Duration::from_secs(60));
        store.begin("old", "POST /v1/a", "x=1", t, ttl);
        store.finish("old", saved(200), t);
        store.begin("running", "POST /v1/a", "x=1", t, ttl);
        let later = t + Duration::from_millis(5);
        store.begin("new", "POST /v1/a", "x=1", later, ttl);
        store.finish("new", saved(200), later);
        store.forget_finished_before(t);
        assert_eq!(store.begin("old", "POST /v1/a", "x=2", t, ttl), Begin::Run);
        assert_eq!(
            store.begin("running", "POST /v1/a", "x=1", t, ttl),
            Begin::InUse
        );
        assert!(matches!(
            store.begin("new", "POST /v1/a", "x=1", later, ttl),
            Begin::Replay(_)
        ));
    }

    #[test]
    fn an_abandoned_key_is_free_again_but_a_finished_one_is_not_dropped() {
        let mut store = IdempotencyStore::default();
        let (t, ttl) = (Instant::now(), Duration::from_secs(60));
        store.begin("k", "POST /v1/a", "", t, ttl);
        store.abandon("k");
        assert_eq!(store.begin("k", "POST /v1/b", "", t, ttl), Begin::Run);
        store.finish("k", saved(200), t);
        store.abandon("k");
        assert!(matches!(
            store.begin("k", "POST /v1/b", "", t, ttl),
            Begin::Replay(_)
        ));
    }
}
