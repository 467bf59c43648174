//! Fault injection: rules that make matching requests fail, stall, or land and
//! then lose their answer.

use std::sync::{Arc, Mutex, PoisonError};

/// What happens to a request that matches a [`FaultRule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Answer with this HTTP status (5xx) and a Stripe-shaped `api_error` body
    /// *before* the endpoint runs: nothing is applied and nothing is saved under
    /// the idempotency key (a failure in front of the API, not inside it). No
    /// `Stripe-Should-Retry` hint is sent, so a client cannot tell it apart from
    /// a failure after the change was applied.
    Error {
        /// The HTTP status to answer with, e.g. 500 or 503.
        status: u16,
    },
    /// Wait this long after the idempotency key is reserved and before the
    /// change is applied. While it waits, a second request with the same key gets
    /// 409 `idempotency_key_in_use`; if the client gives up (timeout), the change
    /// still lands afterwards, as it can at Stripe.
    Delay {
        /// Milliseconds to wait.
        ms: u64,
    },
    /// Apply the change (and save it under the idempotency key), then close the
    /// connection without sending any answer.
    CommitThenDrop,
    /// Apply the change, then answer with this 5xx status and an `api_error`
    /// body. As at Stripe, the error is the saved result of the key: a retry
    /// under the same key gets the same error again (`Idempotent-Replayed:
    /// true`, `Original-Request`), never a second change. Sent with
    /// `Stripe-Should-Retry: false`, since a retry cannot succeed.
    CommitThenError {
        /// The HTTP status to answer with, e.g. 500.
        status: u16,
    },
    /// Like [`FaultAction::Error`] (nothing applied, nothing saved) but sent with
    /// `Stripe-Should-Retry: true`: the service says a retry is safe and may
    /// succeed.
    Retryable {
        /// The HTTP status to answer with, e.g. 503.
        status: u16,
    },
    /// Answer 429 `rate_limit` before anything runs, as the rate limiter does
    /// (nothing applied, nothing saved), optionally with `Retry-After`.
    RateLimit {
        /// Seconds to send as `Retry-After`, if any.
        retry_after_s: Option<u64>,
    },
    /// For a test-clock advance: the advance takes this long, as Stripe's take
    /// seconds. The clock reads `advancing` and nothing of the advance happens
    /// (no renewal, no invoice) until `ms` after it was asked for; the first read
    /// of the clock after that runs the advance's events and reads `ready`.
    SlowAdvance {
        /// Milliseconds the advance takes.
        ms: u64,
    },
}

/// A rule: which requests it matches, what it does, and how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    /// HTTP method to match (`"POST"`), or `None` for any.
    pub method: Option<String>,
    /// Path pattern: exact path, or a glob where `*` matches any run of
    /// characters (`/v1/customers/*/balance_transactions`, `/v1/*`).
    pub path: String,
    /// Only requests made with this API key, or `None` for any key.
    pub api_key: Option<String>,
    /// What to do.
    pub action: FaultAction,
    /// How many matching requests to affect; `None` for all of them.
    pub times: Option<u32>,
}

impl FaultRule {
    /// A rule for every `method` request whose path matches `path`.
    pub fn new(method: &str, path: &str, action: FaultAction) -> FaultRule {
        FaultRule {
            method: Some(method.to_ascii_uppercase()),
            path: path.to_string(),
            api_key: None,
            action,
            times: None,
        }
    }

    /// Only the first `n` matching requests.
    pub fn times(mut self, n: u32) -> FaultRule {
        self.times = Some(n);
        self
    }

    /// Only requests made with `api_key`.
    pub fn for_key(mut self, api_key: &str) -> FaultRule {
        self.api_key = Some(api_key.to_string());
        self
    }

    pub(crate) fn matches(&self, method: &str, path: &str, api_key: Option<&str>) -> bool {
        self.method.as_deref().is_none_or(|m| m == method)
            && self.api_key.as_deref().is_none_or(|k| Some(k) == api_key)
            && glob(&self.path, path)
    }
}

/// `*` matches any run of characters (including `/`); everything else literally.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// Identifies a rule added with [`FaultHandle::add`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FaultId(u64);

#[derive(Debug)]
struct Active {
    id: FaultId,
    rule: FaultRule,
    fired: u32,
    /// Requests the rule affected whose handling ended (applied and answered, or turned away).
    ended: u32,
}

#[derive(Debug, Default)]
struct Rules {
    next: u64,
    active: Vec<Active>,
    /// Per API key: idempotency results saved at or before this instant are forgotten.
    forgotten: std::collections::HashMap<String, std::time::Instant>,
}

/// Adds and removes fault rules of a running emulator, from any thread.
/// Rules are checked in the order they were added; the first match applies.
#[derive(Debug, Clone, Default)]
pub struct FaultHandle {
    inner: Arc<Mutex<Rules>>,
}

impl FaultHandle {
    fn rules(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a rule and returns its id.
    pub fn add(&self, rule: FaultRule) -> FaultId {
        let mut rules = self.rules();
        rules.next += 1;
        let id = FaultId(rules.next);
        rules.active.push(Active {
            id,
            rule,
            fired: 0,
            ended: 0,
        });
        id
    }

    /// Removes one rule (no-op if it is gone).
    pub fn remove(&self, id: FaultId) {
        self.rules().active.retain(|a| a.id != id);
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.rules().active.clear();
    }

    /// Lets Stripe's idempotency retention (24 h) pass for one account: every result it saved
    /// until now is forgotten, so a request reusing one of those keys runs again, as it would at
    /// Stripe a day later. The account's other state (and its test clocks) stay as they are.
    pub fn pass_idempotency_time(&self, api_key: &str) {
        self.rules()
            .forgotten
            .insert(api_key.to_owned(), std::time::Instant::now());
    }

    /// Until when `api_key`'s saved idempotency results count as forgotten.
    pub(crate) fn keys_forgotten_before(&self, api_key: &str) -> Option<std::time::Instant> {
        self.rules().forgotten.get(api_key).copied()
    }

    /// How many requests the rule has affected so far (0 once removed).
    pub fn fired(&self, id: FaultId) -> u32 {
        self.rules()
            .active
            .iter()
            .find(|a| a.id == id)
            .map_or(0, |a| a.fired)
    }

    /// How many requests the rule affected have been handled to their end: applied (or turned
    /// away) and answered, whether or not their client was still there to read the answer. A
    /// request held by [`FaultAction::Delay`] counts once it has landed (0 once removed).
    pub fn ended(&self, id: FaultId) -> u32 {
        self.rules()
            .active
            .iter()
            .find(|a| a.id == id)
            .map_or(0, |a| a.ended)
    }

    /// The rule and action for this request, if a rule with uses left matches it.
    pub(crate) fn take(
        &self,
        method: &str,
        path: &str,
        api_key: Option<&str>,
    ) -> Option<(FaultId, FaultAction)> {
        let mut rules = self.rules();
        let active = rules.active.iter_mut().find(|a| {
            a.rule.matches(method, path, api_key) && a.rule.times.is_none_or(|n| a.fired < n)
        })?;
        active.fired += 1;
        Some((active.id, active.rule.action.clone()))
    }

    /// Records that a request rule `id` affected has been handled to its end.
    pub(crate) fn end(&self, id: FaultId) {
        if let Some(a) = self.rules().active.iter_mut().find(|a| a.id == id) {
            a.ended += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn glob_matches() {
        assert!(glob("/v1/customers", "/v1/customers"));
        assert!(!glob("/v1/customers", "/v1/customers/x"));
        assert!(glob("/v1/*", "/v1/customers/x"));
        assert!(glob(
            "/v1/customers/*/balance_transactions",
            "/v1/customers/cus_1/balance_transactions"
        ));
        assert!(!glob(
            "/v1/customers/*/balance_transactions",
            "/v1/customers/cus_1"
        ));
        assert!(glob("*", ""));
    }
}
