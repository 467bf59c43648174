//! What the emulator answers (status, body and the headers Stripe sends
//! besides `Request-Id`), and its HTTP response.

use super::super::errors::ApiError;
use super::super::idempotency::Saved;
use super::super::versions::AcceptedVersion;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// Everything an answer carries besides `Request-Id`.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Value,
    /// Echoed `Idempotency-Key`.
    pub(super) idempotency_key: Option<String>,
    /// For a replay: the `Request-Id` of the request whose answer this is.
    pub(super) original_request: Option<String>,
    /// `Stripe-Should-Retry`, when the emulator knows whether a retry can help.
    pub(super) should_retry: Option<bool>,
    /// `Retry-After` in seconds.
    pub(super) retry_after_s: Option<u64>,
}

impl Answer {
    pub(super) fn new(status: u16, body: Value) -> Answer {
        Answer {
            status,
            body,
            idempotency_key: None,
            original_request: None,
            should_retry: None,
            retry_after_s: None,
        }
    }

    /// The answer to request `request_id` that failed with `e`.
    pub(super) fn error(e: &ApiError, idempotency_key: Option<&str>, request_id: &str) -> Answer {
        Answer {
            idempotency_key: idempotency_key.map(str::to_string),
            ..Answer::new(e.status, e.body(request_id))
        }
    }

    pub(super) fn replay(saved: Saved, key: &str) -> Answer {
        Answer {
            status: saved.status,
            body: saved.body,
            idempotency_key: Some(key.to_string()),
            original_request: Some(saved.request_id),
            should_retry: saved.should_retry,
            retry_after_s: None,
        }
    }
}

/// The HTTP response for an answer in API version `version`.
pub(super) fn respond(a: &Answer, request_id: &str, version: AcceptedVersion) -> Response {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, a.body.to_string()).into_response();
    let h = response.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("stripe-version", HeaderValue::from_static(version.name));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("request-id", v);
    }
    if let Some(v) = a
        .idempotency_key
        .as_deref()
        .and_then(|k| HeaderValue::from_str(k).ok())
    {
        h.insert("idempotency-key", v);
    }
    if let Some(original) = &a.original_request {
        h.insert("idempotent-replayed", HeaderValue::from_static("true"));
        if let Ok(v) = HeaderValue::from_str(original) {
            h.insert("original-request", v);
        }
    }
    if let Some(retry) = a.should_retry {
        h.insert(
            "stripe-should-retry",
            HeaderValue::from_static(if retry { "true" } else { "false" }),
        );
    }
    if let Some(v) = a
        .retry_after_s
        .and_then(|s| HeaderValue::from_str(&s.to_string()).ok())
    {
        h.insert("retry-after", v);
    }
    response
}
