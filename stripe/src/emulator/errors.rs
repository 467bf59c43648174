//! Stripe-shaped API errors produced by the emulator.

use serde_json::{json, Map, Value};

/// One error answer: HTTP status plus the fields of Stripe's `error` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub kind: &'static str,
    pub code: Option<&'static str>,
    pub param: Option<String>,
    pub message: String,
    /// Whether the endpoint had begun executing when it failed. Stripe saves
    /// such an answer under the idempotency key and replays it; an error found
    /// while the parameters are validated (the default) is not saved.
    pub executed: bool,
    /// Further fields of the `error` object, in order: `decline_code`,
    /// `charge`, `payment_intent` (the object) on payment failures.
    pub extra: Vec<(&'static str, Value)>,
}

impl ApiError {
    fn new(status: u16, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            code: None,
            param: None,
            message: message.into(),
            executed: false,
            extra: Vec::new(),
        }
    }

    /// The same error, raised after the endpoint began executing (so it is
    /// saved under the idempotency key and replayed).
    pub fn executed(mut self) -> ApiError {
        self.executed = true;
        self
    }

    fn code(mut self, code: &'static str) -> ApiError {
        self.code = Some(code);
        self
    }

    fn param(mut self, param: impl Into<String>) -> ApiError {
        self.param = Some(param.into());
        self
    }

    /// A 400 about a parameter's value.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError::new(400, "invalid_request_error", message).param(param)
    }

    /// A 400 that is not about one parameter.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "invalid_request_error", message)
    }

    pub fn missing(param: &str) -> ApiError {
        ApiError::new(
            400,
            "invalid_request_error",
            format!("Missing required param: {param}."),
        )
        .code("parameter_missing")
        .param(param)
    }

    pub fn unknown_param(param: &str) -> ApiError {
        ApiError::new(
            400,
            "invalid_request_error",
            format!("Received unknown parameter: {param}"),
        )
        .code("parameter_unknown")
        .param(param)
    }

    pub fn invalid_integer(param: &str, value: &str) -> ApiError {
        ApiError::new(
            400,
            "invalid_request_error",
            format!("Invalid integer: {value}"),
        )
        .code("parameter_invalid_integer")
        .param(param)
    }

    pub fn invalid_enum(param: &str, value: &str, allowed: &[&str]) -> ApiError {
        ApiError::invalid(
            param,
            format!(
                "Invalid {param}: must be one of {} (got {value:?})",
                allowed.join(", ")
            ),
        )
    }

    /// 404 `resource_missing`: `No such customer: 'cus_x'`.
    pub fn no_such(object: &str, id: &str, param: &str) -> ApiError {
        ApiError::new(
            404,
            "invalid_request_error",
            format!("No such {object}: '{id}'"),
        )
        .code("resource_missing")
        .param(param)
    }

    pub fn unrecognized_url(method: &str, path: &str) -> ApiError {
        ApiError::new(
            404,
            "invalid_request_error",
            format!(
                "Unrecognized request URL ({method}: {path}). Please see https://stripe.com/docs \
                 or we can help at https://support.stripe.com/."
            ),
        )
    }

    /// 403 `permission_error`: the key may not do this.
    pub fn permission(message: impl Into<String>) -> ApiError {
        ApiError::new(403, "permission_error", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(401, "invalid_request_error", message)
    }

    pub fn idempotency_mismatch(key: &str) -> ApiError {
        ApiError::new(
            400,
            "idempotency_error",
            format!(
                "Keys for idempotent requests can only be used with the same parameters they \
                 were first used with. Try using a key other than '{key}' if you meant to \
                 execute a different request."
            ),
        )
    }

    /// 400 `idempotency_error`: the key was first used on another endpoint.
    pub fn idempotency_other_endpoint(key: &str, first: &str, now: &str) -> ApiError {
        ApiError::new(
            400,
            "idempotency_error",
            format!(
                "Keys for idempotent requests can only be used for the same endpoint they were \
                 first used for ('{first}' vs '{now}'). Try using a key other than '{key}' if you \
                 meant to execute a different request."
            ),
        )
    }

    /// 429 `rate_limit`: the request was turned away before anything ran.
    pub fn rate_limited() -> ApiError {
        ApiError::new(
            429,
            "invalid_request_error",
            "Request rate limit exceeded. You can learn more about rate limits here \
             https://stripe.com/docs/rate-limits.",
        )
        .code("rate_limit")
    }

    /// 400 for a `Stripe-Version` header that names no API version.
    pub fn unknown_version(version: &str) -> ApiError {
        ApiError::new(
            400,
            "invalid_request_error",
            format!(
                "Invalid Stripe API version: {version}. Versions look like {}; \
                 see https://docs.stripe.com/api/versioning.",
                super::versions::default_version().name
            ),
        )
    }

    /// 400 for a well-formed `Stripe-Version` the emulator does not answer;
    /// the message names the versions it does answer.
    pub fn unsupported_version(version: &str) -> ApiError {
        ApiError::new(
            400,
            "invalid_request_error",
            format!(
                "This emulator answers only in Stripe API versions {} (asked for {version}); it \
                 never answers in a shape other than the one requested.",
                super::versions::accepted_names()
            ),
        )
    }

    pub fn idempotency_in_use(key: &str) -> ApiError {
        ApiError::new(
            409,
            "invalid_request_error",
            format!(
                "There is currently another in-progress request using this Idempotent Key \
                 (that probably means you submitted twice, and the other request is still \
                 going through): {key}. Please try again later."
            ),
        )
        .code("idempotency_key_in_use")
    }

    pub fn server_error(status: u16) -> ApiError {
        ApiError::new(
            status,
            "api_error",
            "An unexpected error occurred on Stripe's end (injected by the emulator).",
        )
    }

    /// The answer when the endpoint ran (and its change stays applied) but the
    /// request failed afterwards: saved under the idempotency key.
    pub fn server_error_after_commit(status: u16) -> ApiError {
        ApiError::new(
            status,
            "api_error",
            "An unexpected error occurred on Stripe's end after the request was applied \
             (injected by the emulator).",
        )
        .executed()
    }

    /// The `{"error": {...}}` envelope of the answer to request `request_id`.
    pub fn body(&self, request_id: &str) -> Value {
        let mut error = Map::new();
        error.insert("type".into(), json!(self.kind));
        error.insert("message".into(), json!(self.message));
        if let Some(code) = self.code {
            error.insert("code".into(), json!(code));
            error.insert(
                "doc_url".into(),
                json!(format!(
                    "https://stripe.com/docs/error-codes/{}",
                    code.replace('_', "-")
                )),
            );
        }
        if let Some(param) = &self.param {
            error.insert("param".into(), json!(param));
        }
        for (name, value) in &self.extra {
            error.insert((*name).into(), value.clone());
        }
        error.insert("request_log_url".into(), json!(request_log_url(request_id)));
        json!({ "error": Value::Object(error) })
    }
}

/// Where Stripe would show the request in the Dashboard's logs. An emulator
/// placeholder: URL-shaped and naming the request, but nothing serves it.
fn request_log_url(request_id: &str) -> String {
    format!("https://emulator.invalid/test/logs/{request_id}")
}

impl ApiError {
    /// The same error with a `code`.
    pub fn with_code(self, code: &'static str) -> ApiError {
        self.code(code)
    }

    /// 402 `card_error` when an invoice cannot be collected.
    pub fn payment_failed(invoice: &str) -> ApiError {
        ApiError::new(
            402,
            "card_error",
            format!("The invoice {invoice} could not be paid: the customer has no payment method."),
        )
        .code("invoice_payment_intent_requires_action")
        .executed()
    }

    /// 402 `card_error`: the card was declined (`code` such as `card_declined`).
    pub fn card_error(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(402, "card_error", message).code(code)
    }

    /// The same error with one more field of the `error` object.
    pub fn with_field(mut self, name: &'static str, value: Value) -> ApiError {
        self.extra.push((name, value));
        self
    }
}
