//! When the client sends a request again, and how long it waits first.
//!
//! Retried: 429 (Stripe's rate limiter runs before anything executes, so the
//! request did not run) and any answer carrying `Stripe-Should-Retry: true`.
//! Never retried: an answer carrying `Stripe-Should-Retry: false`, any other
//! error answer, timeouts and dropped connections (whether those landed is for
//! the caller to settle, by a lookup or by resending under the same key).
//! Every retry is the same request: same parameters, same idempotency key.

use rand::Rng;
use std::time::Duration;

/// How the client retries answers that invite a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// At most this many retries after the first attempt (0 turns retries off).
    pub max_retries: u32,
    /// The wait before the first retry; each further wait doubles, up to
    /// `max_backoff`. Each wait is then drawn between half of it and all of it
    /// (jitter), so parallel clients do not retry in step.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts (a longer `Retry-After` is honoured).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
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

    /// The wait before retry number `retry` (0 for the first retry), with
    /// jitter, and at least `retry_after` when the service asked for it.
    pub fn backoff(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.min(30)));
        let capped = doubled.min(self.max_backoff);
        let jittered = capped.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
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
    fn backoff_doubles_with_jitter_is_capped_and_honours_retry_after() {
        let p = RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
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
