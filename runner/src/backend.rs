//! Where the Stripe calls go: the embedded emulator (default) or Stripe test mode.
//!
//! Emulator: started in-process on 127.0.0.1 port 0; every cell gets its own `sk_test_` key, so
//! its state (prices included) is private to the cell. Stripe test mode: `STRIPE_SECRET_KEY`,
//! which must be an `sk_test_` or `rk_test_` key; cells share the account and are kept apart by
//! their own test clocks, customers and case ids; the plan prices are ensured once per run.
//!
//! Timing settings: the credit target's `max_in_flight` is the backend's **server-side** in-flight
//! bound (how long after a request left its client it can still take effect), stated below with
//! its justification; the gate counts it from when recovery found the sender's claim free and
//! records it on every entry that rests on it. The claim TTL (backstop for a hung but alive
//! sender) is twice the client's request timeout plus slack. A SIGKILLed sender's claim is never
//! waited out: its lock dies with it.

use scenarios::billing_credit as bc;
use std::sync::OnceLock;
use std::time::Duration;

/// Request timeout of the Stripe client against the loopback emulator.
pub const EMULATOR_REQUEST_TIMEOUT: Duration =
    Duration::from_millis(verify::nemesis::draw::EMULATOR_REQUEST_TIMEOUT_MS);
/// Request timeout of the Stripe client against Stripe test mode.
pub const STRIPE_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The emulator's server-side in-flight bound. The emulator executes a request within
/// milliseconds of receiving it; only an injected `Delay` fault holds one longer, and the runner
/// injects none in the default matrix. Experiments that delay a request past this bound do so on
/// purpose and are reported as outside the gate's assumption (the bound is the scenario's rule:
/// `verify::scenarios::billing_credit::assumptions`).
pub const EMULATOR_MAX_IN_FLIGHT: Duration = Duration::from_millis(
    verify::scenarios::billing_credit::assumptions::EMULATOR_MAX_IN_FLIGHT_MS,
);
/// The bound assumed for Stripe test mode. Stripe publishes no server-side limit on how long a
/// request may execute after its client gave up, so this is an assumption (the client's 30 s
/// request timeout plus 500 ms), not a documented fact: it is written into the results'
/// environment and onto every journal entry that rests on it.
pub const STRIPE_ASSUMED_MAX_IN_FLIGHT: Duration = Duration::from_millis(30_500);
/// Environment variable with the Stripe test key.
pub const STRIPE_KEY_ENV: &str = "STRIPE_SECRET_KEY";
/// Environment variable that rate-limits the embedded emulator to this many requests per second
/// (all cells together, as a Stripe sandbox limits one account; Stripe's is about 25). Unset: no
/// limit. The Stripe client retries the 429s with backoff inside its request timeout.
pub const EMULATOR_RATE_LIMIT_ENV: &str = "INTERLOCK_EMULATOR_RATE_LIMIT";

/// Why the backend could not be started or used, and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// [`EMULATOR_RATE_LIMIT_ENV`] is set to something else than a positive number.
    #[error(
        "{EMULATOR_RATE_LIMIT_ENV} must be a positive number of requests per second, got {0:?}"
    )]
    RateLimit(String),
    /// The embedded emulator could not start.
    #[error("cannot start the embedded Stripe emulator: {0}")]
    Emulator(#[source] stripe::emulator::EmulatorError),
    /// `--backend stripe` without [`STRIPE_KEY_ENV`].
    #[error(
        "--backend stripe needs {STRIPE_KEY_ENV} set to a Stripe test-mode key \
         (sk_test_... or rk_test_...); or use the default --backend emulator"
    )]
    NoStripeKey,
    /// [`STRIPE_KEY_ENV`] is not a test-mode key; `shown` is its first 8 characters only.
    #[error(
        "{STRIPE_KEY_ENV} must be a Stripe TEST key (sk_test_... or rk_test_...); got a key \
         starting {shown:?}. The runner never uses live mode: use a test-mode key from the \
         Stripe dashboard, or the default --backend emulator, which needs no key"
    )]
    NotATestKey {
        /// The key's first 8 characters (never the whole key).
        shown: String,
    },
    /// A cell's Stripe client could not be built.
    #[error(transparent)]
    Client(#[from] stripe::StripeError),
    /// The plan prices could not be ensured.
    #[error(transparent)]
    Prices(#[from] bc::ScenarioError),
}

/// The emulator's rate limit from [`EMULATOR_RATE_LIMIT_ENV`], if set.
fn emulator_rate_limit() -> Result<Option<stripe::emulator::RateLimit>, BackendError> {
    match std::env::var(EMULATOR_RATE_LIMIT_ENV) {
        Err(_) => Ok(None),
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(Some(stripe::emulator::RateLimit::per_second(n))),
            _ => Err(BackendError::RateLimit(v)),
        },
    }
}

/// Which backend to run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// The project's Stripe emulator, embedded, on loopback (no network, no key).
    Emulator,
    /// Stripe test mode with STRIPE_SECRET_KEY (sk_test_/rk_test_ only).
    Stripe,
}

/// A started backend.
pub struct Backend {
    kind: BackendKind,
    base_url: String,
    run_id: String,
    stripe_key: Option<String>,
    request_timeout: Duration,
    settings: bc::ScenarioSettings,
    shared_prices: OnceLock<bc::Prices>,
    _emulator: Option<stripe::emulator::RunningEmulator>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .finish()
    }
}

/// Checks a Stripe key is a test key, with an error that says how to fix it.
pub fn check_stripe_key(key: &str) -> Result<(), BackendError> {
    let key = key.trim();
    if key.starts_with("sk_test_") || key.starts_with("rk_test_") {
        return Ok(());
    }
    Err(BackendError::NotATestKey {
        shown: key.chars().take(8).collect(),
    })
}

impl Backend {
    /// Starts the backend. `run_id` makes emulator keys unique to the run.
    pub fn start(kind: BackendKind, run_id: &str) -> Result<Backend, BackendError> {
        match kind {
            BackendKind::Emulator => {
                let rate_limit = emulator_rate_limit()?;
                // A rate-limited emulator stands for a Stripe sandbox: its clients get the budget
                // they get against Stripe, retries and backoff included.
                let request_timeout = if rate_limit.is_some() {
                    STRIPE_REQUEST_TIMEOUT
                } else {
                    EMULATOR_REQUEST_TIMEOUT
                };
                let config = stripe::emulator::EmulatorConfig {
                    rate_limit,
                    ..stripe::emulator::EmulatorConfig::default()
                };
                let emulator =
                    stripe::emulator::Emulator::start(config).map_err(BackendError::Emulator)?;
                let base_url = emulator.base_url();
                Ok(Backend {
                    kind,
                    base_url,
                    run_id: run_id.to_string(),
                    stripe_key: None,
                    request_timeout,
                    // The emulator executes what it admits within milliseconds, rate-limited
                    // or not: the server-side bound does not grow with the client's budget.
                    settings: bc::ScenarioSettings::new(EMULATOR_MAX_IN_FLIGHT, request_timeout),
                    shared_prices: OnceLock::new(),
                    _emulator: Some(emulator),
                })
            }
            BackendKind::Stripe => {
                let key = std::env::var(STRIPE_KEY_ENV).map_err(|_| BackendError::NoStripeKey)?;
                check_stripe_key(&key)?;
                Ok(Backend {
                    kind,
                    base_url: stripe::client::STRIPE_API_BASE.to_string(),
                    run_id: run_id.to_string(),
                    stripe_key: Some(key.trim().to_string()),
                    request_timeout: STRIPE_REQUEST_TIMEOUT,
                    settings: bc::ScenarioSettings::new(
                        STRIPE_ASSUMED_MAX_IN_FLIGHT,
                        STRIPE_REQUEST_TIMEOUT,
                    ),
                    shared_prices: OnceLock::new(),
                    _emulator: None,
                })
            }
        }
    }

    /// The embedded emulator (`None` against Stripe test mode).
    pub fn emulator(&self) -> Option<&stripe::emulator::RunningEmulator> {
        self._emulator.as_ref()
    }

    /// The embedded emulator's fault rules (`None` against Stripe test mode).
    pub fn faults(&self) -> Option<stripe::emulator::FaultHandle> {
        self._emulator.as_ref().map(|e| e.faults())
    }

    /// `emulator` or `stripe_test_mode` (`environment.backend`).
    pub fn name(&self) -> &'static str {
        match self.kind {
            BackendKind::Emulator => "emulator",
            BackendKind::Stripe => "stripe_test_mode",
        }
    }

    /// For a rate-limited emulator: the limit and how many requests it turned away (each one
    /// retried by the client), for the run's summary.
    pub fn rate_limit_note(&self) -> Option<String> {
        let limit = emulator_rate_limit().ok().flatten()?;
        let emulator = self._emulator.as_ref()?;
        Some(format!(
            "emulator rate limit {}/s: {} request(s) answered 429 rate_limit and retried by the client",
            limit.per_second,
            emulator.rate_limited()
        ))
    }

    /// The base URL workers use.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The Stripe client request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The gate settings given to workers.
    pub fn scenario_settings(&self) -> bc::ScenarioSettings {
        self.settings
    }

    /// The API key of cell `index`.
    pub fn api_key(&self, index: usize) -> String {
        match &self.stripe_key {
            Some(k) => k.clone(),
            None => crate::keys::cell_api_key(&self.run_id, index),
        }
    }

    /// A client for `api_key`.
    pub fn client(&self, api_key: &str) -> Result<stripe::Client, BackendError> {
        Ok(stripe::Client::new(
            stripe::ClientConfig::new(&self.base_url, api_key).with_timeout(self.request_timeout),
        )?)
    }

    /// The plan prices for a cell's client: per key on the emulator, once per run on Stripe.
    pub fn prices(&self, client: &stripe::Client) -> Result<bc::Prices, BackendError> {
        match self.kind {
            BackendKind::Emulator => Ok(bc::ensure_prices(client)?),
            BackendKind::Stripe => {
                if let Some(p) = self.shared_prices.get() {
                    return Ok(p.clone());
                }
                let p = bc::ensure_prices(client)?;
                Ok(self.shared_prices.get_or_init(|| p).clone())
            }
        }
    }

    /// On Stripe, ensures the prices once before cells run in parallel (no duplicate creation).
    pub fn prepare(&self) -> Result<(), BackendError> {
        if self.kind == BackendKind::Stripe {
            let client = self.client(&self.api_key(0))?;
            self.prices(&client)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_test_keys_are_accepted() {
        assert!(check_stripe_key("sk_test_abc").is_ok());
        assert!(check_stripe_key("rk_test_abc").is_ok());
        let e = check_stripe_key("sk_live_abcdefgh")
            .unwrap_err()
            .to_string();
        assert!(e.contains("TEST key") && e.contains("sk_live_"), "{e}");
        assert!(!e.contains("abcdefgh"), "never print the whole key: {e}");
        assert!(check_stripe_key("pk_test_abc").is_err());
    }
}
