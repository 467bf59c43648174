//! The client's error type.

/// Everything that can go wrong with a Stripe call.
///
/// The important question for a caller that must never apply a side effect twice
/// is *did it land?* [`StripeError::is_rejected`] means the service answered and
/// said no: nothing was applied and resending the same request will not help.
/// [`StripeError::outcome_unknown`] means the request may or may not have been
/// applied (timeouts, dropped connections, 5xx, 409 while an identical idempotent
/// request is still running, 429, retries given up): only a retry under the same
/// idempotency key or a lookup can tell.
#[derive(Debug, thiserror::Error)]
pub enum StripeError {
    /// The service answered with an error envelope (`{"error": {...}}`).
    #[error("{0}")]
    Api(Box<ApiFailure>),
    /// No answer within the configured timeout. The request may have landed.
    #[error("{method} {path}: timed out after {timeout_ms} ms (outcome unknown)")]
    Timeout {
        /// HTTP method of the request.
        method: String,
        /// Request path.
        path: String,
        /// The timeout that expired, in milliseconds.
        timeout_ms: u128,
    },
    /// The connection failed or was dropped before a complete answer arrived.
    /// The request may have landed.
    #[error("{method} {path}: connection error (outcome unknown): {detail}")]
    Connection {
        /// HTTP method of the request.
        method: String,
        /// Request path.
        path: String,
        /// What the transport reported.
        detail: String,
    },
    /// An answer arrived but its body is not the JSON Stripe sends. Treated as
    /// an unknown outcome: the request may have been applied.
    #[error("{method} {path}: HTTP {status} with an unreadable body (outcome unknown): {detail}")]
    InvalidResponse {
        /// HTTP method of the request.
        method: String,
        /// Request path.
        path: String,
        /// HTTP status code.
        status: u16,
        /// Why the body could not be used.
        detail: String,
    },
    /// Every attempt was answered with an invitation to retry (429, or
    /// `Stripe-Should-Retry: true`) until the retries or the call's timeout ran
    /// out. The outcome is unknown: report it as such, and settle it by a lookup
    /// or a later resend under the same idempotency key.
    #[error("gave up after {attempts} attempts within the {budget_ms} ms budget (outcome unknown); last answer: {last}")]
    Exhausted {
        /// How many times the request was sent.
        attempts: u32,
        /// The call's overall timeout, in milliseconds.
        budget_ms: u128,
        /// The last attempt's error.
        last: Box<StripeError>,
    },
    /// The client refuses to run with this key (a live key, or a non-test key
    /// against api.stripe.com).
    #[error("refusing Stripe key {key_hint}: {reason}")]
    RefusedKey {
        /// The first characters of the key, never the whole key.
        key_hint: String,
        /// Why it was refused.
        reason: String,
    },
    /// The configuration is unusable (bad base URL, empty key, ...).
    #[error("invalid Stripe client configuration: {0}")]
    Config(String),
}

/// The details of an error answer from the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiFailure {
    /// HTTP method of the request.
    pub method: String,
    /// Request path, e.g. `/v1/customers/cus_x`.
    pub path: String,
    /// HTTP status code.
    pub status: u16,
    /// Stripe's `error.type` (`invalid_request_error`, `idempotency_error`, `api_error`, ...).
    pub error_type: String,
    /// Stripe's `error.code`, e.g. `resource_missing` or `idempotency_key_in_use`.
    pub code: Option<String>,
    /// Stripe's `error.param`: the parameter that was wrong, if any.
    pub param: Option<String>,
    /// Stripe's human-readable `error.message`.
    pub message: String,
    /// The `Request-Id` response header.
    pub request_id: Option<String>,
    /// True when this is the saved answer of an earlier request with the same
    /// idempotency key (`Idempotent-Replayed: true`): that request ran and
    /// ended with this error, and nothing new was applied.
    pub replayed: bool,
    /// On a replay, the `Original-Request` header: the `Request-Id` of the
    /// request that ended with this error.
    pub original_request: Option<String>,
    /// The `Stripe-Should-Retry` hint, when the service sent one.
    pub should_retry: Option<bool>,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: HTTP {} {}",
            self.method, self.path, self.status, self.error_type
        )?;
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        if let Some(param) = &self.param {
            write!(f, " [param {param}]")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl StripeError {
    /// The service's error details, when it answered with an error envelope.
    pub fn api(&self) -> Option<&ApiFailure> {
        match self {
            StripeError::Api(failure) => Some(failure),
            StripeError::Exhausted { last, .. } => last.api(),
            _ => None,
        }
    }

    /// True when the request may have been applied and nobody can say yet:
    /// timeouts, connection errors, unreadable answers, HTTP 5xx, 409 (an
    /// identical idempotent request is still running, or a lock conflict) and 429.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            StripeError::Api(f) => f.status >= 500 || f.status == 409 || f.status == 429,
            StripeError::Timeout { .. }
            | StripeError::Connection { .. }
            | StripeError::InvalidResponse { .. }
            | StripeError::Exhausted { .. } => true,
            StripeError::RefusedKey { .. } | StripeError::Config(_) => false,
        }
    }

    /// True when the service said an earlier request under the same idempotency key is still
    /// executing (HTTP 409 `idempotency_key_in_use`), as the last answer when retries ran out
    /// too: nothing of this request was applied, and the earlier one was in flight when the
    /// service answered.
    pub fn key_in_use(&self) -> bool {
        self.api()
            .is_some_and(|f| f.status == 409 && f.code.as_deref() == Some("idempotency_key_in_use"))
    }

    /// True when the service answered and said no (HTTP 4xx other than 409 and
    /// 429): the request was not applied and resending it unchanged will not help.
    pub fn is_rejected(&self) -> bool {
        match self {
            StripeError::Api(f) => {
                (400..500).contains(&f.status) && f.status != 409 && f.status != 429
            }
            _ => false,
        }
    }

    /// True when the error is the saved answer of an earlier request under the same
    /// idempotency key (`Idempotent-Replayed: true`): that first request has
    /// finished, and resending under the key will only replay this error again.
    /// Whether it changed anything is for a lookup to tell.
    pub fn is_replayed(&self) -> bool {
        self.api().is_some_and(|f| f.replayed)
    }

    /// True for configuration errors (refused key, bad URL): no request was sent.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            StripeError::RefusedKey { .. } | StripeError::Config(_)
        )
    }

    /// The HTTP status, when the service answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            StripeError::Api(f) => Some(f.status),
            StripeError::InvalidResponse { status, .. } => Some(*status),
            StripeError::Exhausted { last, .. } => last.status(),
            _ => None,
        }
    }

    /// Stripe's `error.code`, when the service answered with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            StripeError::Api(f) => f.code.as_deref(),
            StripeError::Exhausted { last, .. } => last.code(),
            _ => None,
        }
    }

    /// Stripe's `error.type`, when the service answered with an error envelope.
    pub fn error_type(&self) -> Option<&str> {
        match self {
            StripeError::Api(f) => Some(&f.error_type),
            StripeError::Exhausted { last, .. } => last.error_type(),
            _ => None,
        }
    }

    /// Stripe's `error.param`, when the service named one.
    pub fn param(&self) -> Option<&str> {
        match self {
            StripeError::Api(f) => f.param.as_deref(),
            StripeError::Exhausted { last, .. } => last.param(),
            _ => None,
        }
    }

    /// Stripe's `error.message` (or this error's own text for non-API errors).
    pub fn message(&self) -> String {
        match self {
            StripeError::Api(f) => f.message.clone(),
            other => other.to_string(),
        }
    }
}
