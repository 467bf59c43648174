//! A stateful Stripe emulator for the billing scenario's subset of the API.
//!
//! Start it in-process with [`Emulator::start`] (it runs on its own thread with
//! its own tokio runtime, so plain synchronous code and `#[test]` functions can
//! use it), or run the `stripe-emulator` binary. It binds `127.0.0.1` only.
//!
//! ```no_run
//! use stripe::emulator::{Emulator, EmulatorConfig};
//! use stripe::{Client, ClientConfig, Params};
//!
//! let emulator = Emulator::start(EmulatorConfig::default()).unwrap();
//! let client = Client::new(ClientConfig::new(emulator.base_url(), "sk_test_cell1")).unwrap();
//! let customer = client.post("/v1/customers", &Params::new().set("name", "A"), None).unwrap();
//! assert_eq!(customer.body["balance"], 0);
//! ```

mod billing;
mod clock;
mod errors;
mod faults;
mod form;
mod idempotency;
mod payments;
mod ratelimit;
mod render;
mod routes;
mod server;
mod state;
mod versions;

pub use faults::{FaultAction, FaultHandle, FaultId, FaultRule};
pub use payments::RefundCannotFail;
pub use ratelimit::{EndpointLimit, RateLimit};
pub use versions::{AcceptedVersion, ACCEPTED_VERSIONS};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How to start an emulator.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// TCP port on 127.0.0.1; 0 (the default) picks a free one.
    pub port: u16,
    /// How long a saved idempotent result is kept (wall time). Stripe keeps
    /// keys for at least 24 hours, which is the default.
    pub idempotency_ttl: Duration,
    /// Rate limit for the whole emulator, or `None` (the default) for none.
    /// [`RateLimit::stripe_sandbox`] is Stripe's sandbox limit.
    pub rate_limit: Option<RateLimit>,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            port: 0,
            idempotency_ttl: Duration::from_secs(24 * 3600),
            rate_limit: None,
        }
    }
}

/// Why the emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// The listening socket could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The requested port.
        port: u16,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The tokio runtime or its thread could not be created.
    #[error("cannot start the emulator's runtime: {0}")]
    Runtime(std::io::Error),
}

/// A test clock the account does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no test clock {0} in this account")]
pub struct NoSuchClock(pub String);

/// Entry point: see [`Emulator::start`].
#[derive(Debug)]
pub struct Emulator;

impl Emulator {
    /// Binds 127.0.0.1 and serves on a background thread until the returned
    /// handle is dropped or [`RunningEmulator::shutdown`] is called.
    pub fn start(config: EmulatorConfig) -> Result<RunningEmulator, EmulatorError> {
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", config.port)).map_err(|source| {
                EmulatorError::Bind {
                    port: config.port,
                    source,
                }
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| EmulatorError::Bind {
                port: config.port,
                source,
            })?;
        listener
            .set_nonblocking(true)
            .map_err(EmulatorError::Runtime)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("stripe-emulator")
            .enable_all()
            .build()
            .map_err(EmulatorError::Runtime)?;
        let faults = FaultHandle::default();
        let limiter = ratelimit::Limiter::default();
        limiter.set(config.rate_limit.clone());
        let app = Arc::new(server::App::new(
            faults.clone(),
            limiter.clone(),
            config.idempotency_ttl,
            server::seed(),
        ));
        let app_handle = app.clone();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
        let thread = std::thread::Builder::new()
            .name("stripe-emulator".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => {
                            let _ = ready_tx.send(Ok(()));
                            l
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let router = axum::Router::new()
                        .fallback(server::handle)
                        .with_state(app)
                        .into_make_service_with_connect_info::<server::Conn>();
                    let serve = axum::serve(server::KillableListener(listener), router);
                    tokio::select! {
                        _ = serve => {}
                        _ = stop_rx => {}
                    }
                });
                runtime.shutdown_timeout(Duration::from_millis(500));
            })
            .map_err(EmulatorError::Runtime)?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(EmulatorError::Runtime(e)),
            Err(_) => {
                return Err(EmulatorError::Runtime(std::io::Error::other(
                    "the emulator thread stopped during start-up",
                )))
            }
        }
        Ok(RunningEmulator {
            addr,
            app: app_handle,
            faults,
            limiter,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }
}

/// A running emulator. Stops when dropped.
#[derive(Debug)]
pub struct RunningEmulator {
    addr: SocketAddr,
    app: Arc<server::App>,
    faults: FaultHandle,
    limiter: ratelimit::Limiter,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningEmulator {
    /// `http://127.0.0.1:PORT`, to use as the client's base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Runs `change` (a change in the world outside the service, such as a revoked approval),
    /// given the clock's time, then moves the test clock `clock_id` of the account of `api_key` one second forward, with
    /// that account locked throughout, so every object it creates is ordered exactly against
    /// `change` by its `created` second: before it, in the clock's old second; after it, in a
    /// later one. Returns what `change` returned and the clock's time before the step. A tool
    /// for an experiment harness; Stripe has no such control.
    pub fn step_clock_around<R>(
        &self,
        api_key: &str,
        clock_id: &str,
        change: impl FnOnce(i64) -> R,
    ) -> Result<(R, i64), NoSuchClock> {
        self.app.step_clock_around(api_key, clock_id, change)
    }

    /// Makes refund `refund_id` of the account of `api_key` fail, as Stripe does some time
    /// after a refund of a payment made with the refund-failure test card
    /// (`pm_card_refundFail`): from then on the refund reads `status: failed` with
    /// `failure_reason: expired_or_canceled_card`. Stripe decides when; here the harness does.
    /// Refunds of other payments cannot fail. A tool for an experiment harness; Stripe has no
    /// such control.
    pub fn fail_refund(&self, api_key: &str, refund_id: &str) -> Result<(), RefundCannotFail> {
        self.app.fail_refund(api_key, refund_id)
    }

    /// Adds and clears fault rules while the emulator runs.
    pub fn faults(&self) -> FaultHandle {
        self.faults.clone()
    }

    /// Sets the rate limit while the emulator runs (`None` lifts it). The
    /// buckets start full.
    pub fn set_rate_limit(&self, limit: Option<RateLimit>) {
        self.limiter.set(limit);
    }

    /// How many requests the rate limit has answered with 429 so far (fault
    /// rules not counted).
    pub fn rate_limited(&self) -> u64 {
        self.limiter.refused()
    }

    /// Stops serving and waits for the server thread to end.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningEmulator {
    fn drop(&mut self) {
        self.stop_now();
    }
}
