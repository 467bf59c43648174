//! The synchronous Stripe client (`reqwest::blocking` with rustls, see [`crate::http`]).

mod error;
mod params;
mod retry;

pub use error::{ApiFailure, StripeError};
pub use params::Params;
pub use retry::{RetryPolicy, RetryRule};

use reqwest::blocking::Client as HttpClient;
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use std::time::{Duration, Instant};

/// Where and how to reach Stripe (or the emulator).
#[derive(Clone)]
pub struct ClientConfig {
    /// Scheme, host and port, e.g. `https://api.stripe.com` or
    /// `http://127.0.0.1:PORT`. A trailing `/` or `/v1` is ignored: request paths
    /// always start with `/v1/`.
    pub base_url: String,
    /// The secret key, sent as the HTTP Basic user name. Only test keys are used.
    pub api_key: String,
    /// Total time allowed for one call (connect, send, answer), retries and the
    /// waits between them included.
    pub timeout: std::time::Duration,
    /// When to retry an answer that invites it (429, `Stripe-Should-Retry: true`).
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &key_hint(&self.api_key))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Stripe's public API endpoint.
pub const STRIPE_API_BASE: &str = "https://api.stripe.com";

/// The request timeout used by [`ClientConfig::new`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl ClientConfig {
    /// A configuration for `base_url` and `api_key` with the default 30 s timeout.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> ClientConfig {
        ClientConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }

    /// A configuration for real Stripe (`https://api.stripe.com`). Only `sk_test_`
    /// and `rk_test_` keys are accepted by [`Client::new`].
    pub fn stripe(api_key: impl Into<String>) -> ClientConfig {
        ClientConfig::new(STRIPE_API_BASE, api_key)
    }

    /// The same configuration with another request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> ClientConfig {
        self.timeout = timeout;
        self
    }

    /// The same configuration with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> ClientConfig {
        self.retry = retry;
        self
    }
}

/// A successful answer.
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status (2xx).
    pub status: u16,
    /// The parsed JSON body.
    pub body: serde_json::Value,
    /// True when Stripe answered `Idempotent-Replayed: true`: this is the saved
    /// result of an earlier request with the same idempotency key, and nothing new
    /// was applied.
    pub replayed: bool,
    /// The `Request-Id` response header.
    pub request_id: Option<String>,
    /// On a replay, the `Original-Request` header: the `Request-Id` of the
    /// request whose saved answer this is.
    pub original_request: Option<String>,
    /// How many times the request was sent (1 unless it was retried).
    pub attempts: u32,
}

/// A blocking Stripe API client. Cheap to clone; safe to share between threads.
#[derive(Clone)]
pub struct Client {
    http: HttpClient,
    base_url: String,
    api_key: String,
    timeout: Duration,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url)
            .field("api_key", &key_hint(&self.api_key))
            .finish()
    }
}

/// The first characters of a key: enough to recognise it, never the secret.
fn key_hint(key: &str) -> String {
    let shown: String = key.chars().take(8).collect();
    if key.chars().count() > 8 {
        format!("{shown}...")
    } else {
        shown
    }
}

fn is_test_key(key: &str) -> bool {
    key.starts_with("sk_test_") || key.starts_with("rk_test_")
}

impl Client {
    /// Builds a client.
    ///
    /// Refuses live keys (`sk_live_`, `rk_live_`) everywhere, and any key that is
    /// not a test key (`sk_test_`, `rk_test_`) when the base URL is
    /// `api.stripe.com`. The base URL must be an `http` or `https` URL.
    pub fn new(config: ClientConfig) -> Result<Client, StripeError> {
        let key = config.api_key.trim().to_string();
        if key.is_empty() {
            return Err(StripeError::Config("the API key is empty".into()));
        }
        if key.starts_with("sk_live_") || key.starts_with("rk_live_") {
            return Err(StripeError::RefusedKey {
                key_hint: key_hint(&key),
                reason: "this is a live-mode key; Interlock only ever uses Stripe test mode \
                         (use an sk_test_ key)"
                    .into(),
            });
        }
        let mut base = config.base_url.trim().trim_end_matches('/').to_string();
        if let Some(stripped) = base.strip_suffix("/v1") {
            base = stripped.to_string();
        }
        let url = reqwest::Url::parse(&base).map_err(|e| {
            StripeError::Config(format!("base URL {:?} is not a URL: {e}", config.base_url))
        })?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(StripeError::Config(format!(
                "base URL {:?} must use http or https",
                config.base_url
            )));
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        if (host == "api.stripe.com" || host.ends_with(".stripe.com")) && !is_test_key(&key) {
            return Err(StripeError::RefusedKey {
                key_hint: key_hint(&key),
                reason: format!(
                    "{host} needs a test-mode secret key (sk_test_ or rk_test_); \
                     refusing anything else"
                ),
            });
        }
        if config.timeout.is_zero() {
            return Err(StripeError::Config(
                "the request timeout must be positive".into(),
            ));
        }
        let http = crate::http::client_builder()
            .map_err(|e| StripeError::Config(format!("cannot set up TLS: {e}")))?
            .timeout(config.timeout)
            .user_agent(concat!("interlock-stripe/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| StripeError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            base_url: base,
            api_key: key,
            timeout: config.timeout,
            retry: config.retry,
        })
    }

    /// The base URL requests go to (without a trailing `/`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `GET path?params`, e.g. `client.get("/v1/customers/cus_x", &Params::new())`.
    pub fn get(&self, path: &str, params: &Params) -> Result<Response, StripeError> {
        let mut url = format!("{}{}", self.base_url, path);
        if !params.is_empty() {
            url.push(if path.contains('?') { '&' } else { '?' });
            url.push_str(&params.encode());
        }
        self.send("GET", path, || self.http.get(&url))
    }

    /// `POST path` with `params` form-encoded in the body and, when given, an
    /// `Idempotency-Key` header.
    pub fn post(
        &self,
        path: &str,
        params: &Params,
        idempotency_key: Option<&str>,
    ) -> Result<Response, StripeError> {
        let url = format!("{}{}", self.base_url, path);
        let body = params.encode();
        // Every attempt is the same request under the same idempotency key.
        self.send("POST", path, || {
            let request = self
                .http
                .post(&url)
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(body.clone());
            match idempotency_key {
                Some(key) => request.header("Idempotency-Key", key),
                None => request,
            }
        })
    }

    /// `DELETE path`.
    pub fn delete(&self, path: &str) -> Result<Response, StripeError> {
        let url = format!("{}{}", self.base_url, path);
        self.send("DELETE", path, || self.http.delete(&url))
    }

    /// Every object of a list endpoint: pages through `has_more` with
    /// `starting_after=<last id>` (100 per page unless `params` sets `limit`) and
    /// returns the `data` entries of all pages in order (newest first for
    /// Stripe's lists).
    pub fn list_all(
        &self,
        path: &str,
        params: &Params,
    ) -> Result<Vec<serde_json::Value>, StripeError> {
        let mut params = params.clone();
        if params.get("limit").is_none() {
            params = params.set("limit", 100);
        }
        let mut out = Vec::new();
        loop {
            let page = self.get(path, &params)?;
            let data = page
                .body
                .get("data")
                .and_then(|d| d.as_array())
                .ok_or_else(|| StripeError::InvalidResponse {
                    method: "GET".into(),
                    path: path.into(),
                    status: page.status,
                    detail: "a list answer without a `data` array".into(),
                })?;
            let has_more = page
                .body
                .get("has_more")
                .and_then(|h| h.as_bool())
                .unwrap_or(false);
            let last_id = data
                .last()
                .and_then(|o| o.get("id"))
                .and_then(|i| i.as_str())
                .map(str::to_string);
            out.extend(data.iter().cloned());
            match (has_more, last_id) {
                (false, _) => return Ok(out),
                (true, Some(id)) => params = params.set("starting_after", id),
                (true, None) => {
                    return Err(StripeError::InvalidResponse {
                        method: "GET".into(),
                        path: path.into(),
                        status: page.status,
                        detail: "has_more is true but the page has no object with an id".into(),
                    })
                }
            }
        }
    }

    /// Sends the request built by `build`, retrying answers that invite it
    /// (see [`RetryPolicy`]) while the call's overall timeout allows. Each
    /// attempt gets what is left of the timeout.
    fn send(
        &self,
        method: &str,
        path: &str,
        build: impl Fn() -> reqwest::blocking::RequestBuilder,
    ) -> Result<Response, StripeError> {
        let deadline = Instant::now() + self.timeout;
        let mut attempts = 0u32;
        let mut other_retries = 0u32;
        loop {
            attempts += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = self.attempt(method, path, build().timeout(left));
            let (error, retry_after) = match answer {
                Ok(mut response) => {
                    response.attempts = attempts;
                    return Ok(response);
                }
                Err(Attempt::Final(e)) => return Err(e),
                Err(Attempt::Retryable { error, retry_after }) => (error, retry_after),
            };
            let wait = self.retry.backoff(attempts - 1, retry_after);
            // A 429 ran nothing: every policy retries it within the call's budget alone. The
            // policy's own count bounds the retries of answers that may have run.
            let rate_limited = error.api().is_some_and(|f| f.status == 429);
            if !rate_limited {
                other_retries += 1;
            }
            let retries_left =
                self.retry.max_retries > 0 && other_retries <= self.retry.max_retries;
            if !retries_left || Instant::now() + wait >= deadline {
                return Err(StripeError::Exhausted {
                    attempts,
                    budget_ms: self.timeout.as_millis(),
                    last: Box::new(error),
                });
            }
            std::thread::sleep(wait);
        }
    }

    /// One attempt: its answer, or an error saying whether a retry is invited.
    fn attempt(
        &self,
        method: &str,
        path: &str,
        request: reqwest::blocking::RequestBuilder,
    ) -> Result<Response, Attempt> {
        let transport = |e: reqwest::Error| self.transport_failure(method, path, &e);
        let answer = request
            .basic_auth(&self.api_key, Some(""))
            .header("Stripe-Version", crate::API_VERSION)
            .send()
            .map_err(transport)?;
        let status = answer.status().as_u16();
        let headers = answer.headers().clone();
        let bytes = answer.bytes().map_err(transport)?;
        let request_id = header(&headers, "request-id");
        let replayed = header(&headers, "idempotent-replayed").as_deref() == Some("true");
        let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
        if (200..300).contains(&status) {
            return match parsed {
                Ok(body) => Ok(Response {
                    status,
                    body,
                    replayed,
                    request_id,
                    original_request: header(&headers, "original-request"),
                    attempts: 1,
                }),
                Err(e) => Err(Attempt::Final(StripeError::InvalidResponse {
                    method: method.into(),
                    path: path.into(),
                    status,
                    detail: format!("body is not JSON: {e}"),
                })),
            };
        }
        let call = FailedCall {
            method,
            path,
            status,
            headers: &headers,
        };
        let error = call.error(parsed.ok(), &bytes);
        let should_retry = header(&headers, "stripe-should-retry");
        if self
            .retry
            .retries_answer(status, should_retry.as_deref().map(str::trim))
        {
            Err(Attempt::Retryable {
                error,
                retry_after: retry::retry_after(header(&headers, "retry-after").as_deref()),
            })
        } else {
            Err(Attempt::Final(error))
        }
    }

    /// A request that got no answer: a timeout or a connection failure,
    /// retried when the retry policy retries transport failures.
    fn transport_failure(&self, method: &str, path: &str, e: &reqwest::Error) -> Attempt {
        let error = if e.is_timeout() {
            StripeError::Timeout {
                method: method.into(),
                path: path.into(),
                timeout_ms: self.timeout.as_millis(),
            }
        } else {
            StripeError::Connection {
                method: method.into(),
                path: path.into(),
                detail: error_chain(e),
            }
        };
        if self.retry.retries_transport() {
            Attempt::Retryable {
                error,
                retry_after: None,
            }
        } else {
            Attempt::Final(error)
        }
    }
}

/// A request answered with a status outside 2xx.
struct FailedCall<'a> {
    method: &'a str,
    path: &'a str,
    status: u16,
    headers: &'a HeaderMap,
}

impl FailedCall<'_> {
    /// The error the answer holds: Stripe's error envelope in `body`, or, when
    /// there is none, the start of the raw body `bytes`.
    fn error(&self, body: Option<serde_json::Value>, bytes: &[u8]) -> StripeError {
        let (method, path, status, headers) = (self.method, self.path, self.status, self.headers);
        let envelope = body
            .and_then(|body| body.get("error").cloned())
            .filter(|e| e.is_object());
        let Some(e) = envelope else {
            return StripeError::InvalidResponse {
                method: method.into(),
                path: path.into(),
                status,
                detail: format!(
                    "no Stripe error envelope in the body: {:?}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                ),
            };
        };
        let field = |name: &str| e.get(name).and_then(|v| v.as_str()).map(str::to_string);
        StripeError::Api(Box::new(ApiFailure {
            method: method.into(),
            path: path.into(),
            status,
            error_type: field("type").unwrap_or_else(|| "unknown".into()),
            code: field("code"),
            param: field("param"),
            message: field("message").unwrap_or_default(),
            request_id: header(headers, "request-id"),
            replayed: header(headers, "idempotent-replayed").as_deref() == Some("true"),
            original_request: header(headers, "original-request"),
            should_retry: header(headers, "stripe-should-retry").map(|v| v.trim() == "true"),
        }))
    }
}

/// How one attempt failed.
enum Attempt {
    /// Give this error to the caller.
    Final(StripeError),
    /// The answer invites a retry (after at least `retry_after`, if given).
    Retryable {
        error: StripeError,
        retry_after: Option<Duration>,
    },
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
