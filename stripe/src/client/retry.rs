//! When the client sends a request again, and how long it waits first.
//!
//! By default ([`RetryRule::Invited`]) retried: 429 (Stripe's rate limiter runs
//! before anything executes, so the request did not run) and any answer carrying
//! `Stripe-Should-Retry: true`. Never retried: an answer carrying
//! `Stripe-Should-Retry: false`, any other error answer, timeouts and dropped
//! connections (whether those landed is for the caller to settle, by a lookup or
//! by resending under the same key). [`RetryPolicy::stripe_sdk`] retries instead
//! as Stripe's official SDKs do by default. Every retry is the same request: same
//! parameters, same idempotency key.

use rand::RngExt;
use std::time::Duration;

/// How the client retries answers that invite a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// At most this many retries of answers other than 429 (0 turns every retry off).
    /// A 429 is refused before anything runs: it is retried, under every policy
    /// that retries it, for as long as the call's timeout allows. The default is
    /// high enough that the timeout, not this count, ends a run of retries.
    pub max_retries: u32,
    /// The wait before the first retry; each further wait doubles, up to
    /// `max_backoff`. Each wait is then drawn between half of it and all of it
    /// (jitter), so parallel clients do not retry in step.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts (a longer `Retry-After` is honoured).
    pub max_backoff: Duration,
    /// Which failures are retried.
    pub rule: RetryRule,
}

/// Which failed attempts a [`RetryPolicy`] sends again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryRule {
    /// Only answers that invite it: `Stripe-Should-Retry: true`, or a 429 without
    /// the header. What may have landed (a timeout, a dropped connection, a 409, a
    /// 5xx) is left to the caller.
    Invited,
    /// As Stripe's official SDKs do by default: the `Stripe-Should-Retry` header
    /// when the answer carries one, else a 429 or any 5xx (Stripe's rate-limit
    /// documentation) and a 409 (stripe-python 16.1's `HTTPClient._should_retry`);
    /// and timeouts and connection errors.
    StripeSdk,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 100,
            initial_backoff: Duration::from_millis(100),
            // Short enough that a request kept waiting by a busy rate limit keeps trying
            // often, rather than losing every token to requests that arrived later.
            max_backoff: Duration::from_secs(1),
            rule: RetryRule::Invited,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// Stripe's official SDKs' default client behaviour (stripe-python 16.1:
    /// `max_network_retries = 2`, waits of 0.5 s doubling to at most 5 s, each
    /// drawn between half of it and all of it and never under 0.5 s), with
    /// [`RetryRule::StripeSdk`]. One difference, for fairness between the
    /// columns: 429s are retried within the call's budget, as every client here
    /// retries them, rather than counted among the two. A caller that sends under an idempotency key, as
    /// the SDKs' users do, gets what such a user gets. The call's overall timeout
    /// still bounds every attempt and wait together.
    pub fn stripe_sdk() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(5),
            rule: RetryRule::StripeSdk,
        }
    }

    /// Whether an error answer is retried under this policy's rule.
    pub(crate) fn retries_answer(&self, status: u16, should_retry: Option<&str>) -> bool {
        match self.rule {
            RetryRule::Invited => invited(status, should_retry),
            RetryRule::StripeSdk => match should_retry {
                Some("true") => true,
                Some("false") => false,
                _ => status == 409 || status == 429 || status >= 500,
            },
        }
    }

    /// Whether a timeout or a connection error is retried under this policy's rule.
    pub(crate) fn retries_transport(&self) -> bool {
        self.rule == RetryRule::StripeSdk
    }

    /// The wait before retry number `retry` (0 for the first retry), with
    /// jitter, and at least `retry_after` when the service asked for it.
    pub fn backoff(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.min(30)));
        let capped = doubled.min(self.max_backoff);
        let mut jittered = capped.mul_f64(rand::rng().random_range(0.5..=1.0));
        if self.rule == RetryRule::StripeSdk {
            // The SDK never waits less than its initial delay.
            jittered = jittered.max(self.initial_backoff);
        }
        retry_after.map_or(jittered, |after| jittered.max(after))
    }
}

/// Whether an error answer invites a retry: the service's
/// `Stripe-Should-Retry` hint when it sent one, else only a 429.
pub(crate) fn invited(status: u16, should_retry: Option<&str>) -> bool {
    match should_retry {
        Some("true") => true,
        Some("false") => false,
        _ => status == 429,
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by Stripe).
pub(crate) fn retry_after(value: Option<&str>) -> Option<Duration> {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_decides_and_without_one_only_429_is_retried() {
        assert!(invited(429, None));
        assert!(invited(503, Some("true")));
        assert!(!invited(429, Some("false")));
        assert!(!invited(500, None));
        assert!(!invited(409, None));
        assert!(!invited(400, None));
    }

    #[test]
    fn the_sdk_rule_retries_conflicts_and_server_errors_unless_told_not_to() {
        let sdk = RetryPolicy::stripe_sdk();
        assert_eq!(sdk.max_retries, 2);
        assert!(sdk.retries_answer(409, None));
        assert!(sdk.retries_answer(500, None));
        assert!(sdk.retries_answer(503, None));
        assert!(!sdk.retries_answer(500, Some("false")));
        assert!(sdk.retries_answer(400, Some("true")));
        assert!(sdk.retries_answer(429, None));
        assert!(!sdk.retries_answer(429, Some("false")));
        assert!(!sdk.retries_answer(400, None));
        assert!(sdk.retries_transport());
        let default = RetryPolicy::default();
        assert!(!default.retries_answer(409, None));
        assert!(!default.retries_transport());
        for retry in 0..4 {
            let wait = sdk.backoff(retry, None);
            let full = Duration::from_millis(500 * 2u64.pow(retry)).min(Duration::from_secs(5));
            assert!(
                wait >= Duration::from_millis(500) && wait <= full,
                "{retry}: {wait:?}"
            );
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_is_capped_and_honours_retry_after() {
        let p = RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            rule: RetryRule::Invited,
        };
        for retry in 0..8 {
            let full = Duration::from_millis(100 * 2u64.pow(retry)).min(p.max_backoff);
            let wait = p.backoff(retry, None);
            assert!(wait >= full / 2 && wait <= full, "retry {retry}: {wait:?}");
        }
        let after = Duration::from_secs(3);
        assert_eq!(p.backoff(0, Some(after)), after);
        assert_eq!(retry_after(Some(" 2 ")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(Some("soon")), None);
    }
}
