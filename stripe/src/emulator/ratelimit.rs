//! Rate limiting, off by default: token buckets in front of the API, as
//! Stripe's limiter runs before its idempotency layer (a 429 saves nothing).
//!
//! One bucket holds for the whole emulator, all API keys together: the
//! emulator stands for one Stripe sandbox, and parallel cells of a live run
//! share one account and so one limit, even though the emulator gives each of
//! them its own key. Endpoint limits add a bucket per path pattern.

use super::faults::glob;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// A limit on how fast requests are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained requests per second for the whole emulator (Stripe's sandbox
    /// default is about 25).
    pub per_second: u32,
    /// How many requests may arrive at once after a quiet spell; defaults to
    /// `per_second`.
    pub burst: u32,
    /// Extra, tighter limits on some endpoints, checked as well.
    pub endpoints: Vec<EndpointLimit>,
}

impl RateLimit {
    /// `per_second` requests per second, bursts of the same size, no endpoint
    /// limits.
    pub fn per_second(per_second: u32) -> RateLimit {
        RateLimit {
            per_second,
            burst: per_second,
            endpoints: Vec::new(),
        }
    }

    /// Stripe's documented sandbox default: about 25 requests per second.
    pub fn stripe_sandbox() -> RateLimit {
        RateLimit::per_second(25)
    }

    /// The same limit with another burst size.
    pub fn with_burst(mut self, burst: u32) -> RateLimit {
        self.burst = burst;
        self
    }

    /// The same limit plus a limit on one endpoint.
    pub fn with_endpoint(mut self, limit: EndpointLimit) -> RateLimit {
        self.endpoints.push(limit);
        self
    }
}

/// A limit on the requests whose method and path match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointLimit {
    /// HTTP method, or `None` for any.
    pub method: Option<String>,
    /// Path glob, `*` matching any run of characters.
    pub path: String,
    /// Sustained requests per second on this endpoint (also its burst).
    pub per_second: u32,
}

#[derive(Debug)]
struct Bucket {
    rate: f64,
    capacity: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(per_second: u32, burst: u32, now: Instant) -> Bucket {
        let capacity = f64::from(burst.max(1));
        Bucket {
            rate: f64::from(per_second.max(1)),
            capacity,
            tokens: capacity,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
        self.at = now;
    }
}

#[derive(Debug)]
struct Active {
    limit: RateLimit,
    global: Bucket,
    endpoints: Vec<Bucket>,
}

/// The emulator's limiter; changed while it runs through
/// [`super::RunningEmulator::set_rate_limit`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Limiter {
    inner: Arc<Mutex<Option<Active>>>,
    refused: Arc<AtomicU64>,
}

impl Limiter {
    /// Sets (or with `None` lifts) the limit; buckets start full.
    pub fn set(&self, limit: Option<RateLimit>) {
        let now = Instant::now();
        let active = limit.map(|limit| Active {
            global: Bucket::new(limit.per_second, limit.burst, now),
            endpoints: limit
                .endpoints
                .iter()
                .map(|e| Bucket::new(e.per_second, e.per_second, now))
                .collect(),
            limit,
        });
        *self.inner.lock().unwrap_or_else(PoisonError::into_inner) = active;
    }

    /// Takes a token for this request from every bucket that applies, or
    /// answers false (and takes none) when one of them is empty.
    pub fn admit(&self, method: &str, path: &str) -> bool {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(active) = guard.as_mut() else {
            return true;
        };
        let now = Instant::now();
        let matching: Vec<usize> = active
            .limit
            .endpoints
            .iter()
            .enumerate()
            .filter(|(_, e)| e.method.as_deref().is_none_or(|m| m == method) && glob(&e.path, path))
            .map(|(i, _)| i)
            .collect();
        active.global.refill(now);
        for &i in &matching {
            active.endpoints[i].refill(now);
        }
        let free = active.global.tokens >= 1.0
            && matching.iter().all(|&i| active.endpoints[i].tokens >= 1.0);
        if free {
            active.global.tokens -= 1.0;
            for &i in &matching {
                active.endpoints[i].tokens -= 1.0;
            }
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        free
    }

    /// How many requests the limit has turned away so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_admits_everything_and_an_empty_bucket_refuses() {
        let limiter = Limiter::default();
        assert!((0..1000).all(|_| limiter.admit("GET", "/v1/customers")));
        // One per second with a burst of two: a third request at once is refused.
        limiter.set(Some(RateLimit::per_second(1).with_burst(2)));
        assert!(limiter.admit("GET", "/v1/customers"));
        assert!(limiter.admit("POST", "/v1/customers"));
        assert!(!limiter.admit("GET", "/v1/customers"));
        assert_eq!(limiter.refused(), 1);
        limiter.set(None);
        assert!(limiter.admit("GET", "/v1/customers"));
    }

    #[test]
    fn an_endpoint_limit_applies_only_to_its_endpoint() {
        let limiter = Limiter::default();
        limiter.set(Some(RateLimit::per_second(1000).with_endpoint(
            EndpointLimit {
                method: Some("POST".into()),
                path: "/v1/test_helpers/test_clocks/*/advance".into(),
                per_second: 1,
            },
        )));
        assert!(limiter.admit("POST", "/v1/test_helpers/test_clocks/clock_1/advance"));
        assert!(!limiter.admit("POST", "/v1/test_helpers/test_clocks/clock_1/advance"));
        assert!(limiter.admit("GET", "/v1/test_helpers/test_clocks/clock_1/advance"));
        assert!(limiter.admit("POST", "/v1/customers"));
    }
}
