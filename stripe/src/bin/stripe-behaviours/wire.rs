//! The probe's own HTTP layer: one request, its whole answer kept (status, headers, JSON body),
//! no retries. `stripe::Client` hides what the probe has to see (every header of an answer,
//! a 409 next to a 200), so the probe sends with the same TLS set-up, authentication and
//! `Stripe-Version` as the client, but keeps everything.

use anyhow::{anyhow, Context};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::time::{Duration, Instant};
use stripe::Params;

/// Where the probe sends its requests, and with which key.
pub struct Wire {
    http: reqwest::blocking::Client,
    base: String,
    key: String,
}

/// One request as the probe sends it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// `/v1/...`.
    pub path: String,
    /// Query (GET) or form body (POST) parameters.
    pub params: Params,
    /// The `Idempotency-Key` header, if any.
    pub key: Option<String>,
}

impl Request {
    /// `POST path` with `params` and no idempotency key.
    pub fn post(path: impl Into<String>, params: Params) -> Request {
        Request {
            method: "POST",
            path: path.into(),
            params,
            key: None,
        }
    }

    /// `GET path` with `params` as the query.
    pub fn get(path: impl Into<String>, params: Params) -> Request {
        Request {
            method: "GET",
            path: path.into(),
            params,
            key: None,
        }
    }

    /// `DELETE path`.
    pub fn delete(path: impl Into<String>) -> Request {
        Request {
            method: "DELETE",
            path: path.into(),
            params: Params::new(),
            key: None,
        }
    }

    /// The same request under an idempotency key.
    pub fn keyed(mut self, key: &str) -> Request {
        self.key = Some(key.to_owned());
        self
    }
}

/// An answer, whatever its status.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Every response header.
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
}

impl Answer {
    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `Idempotent-Replayed: true`.
    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed").map(str::trim) == Some("true")
    }

    /// The object's `id`, on a success.
    pub fn id(&self) -> Option<&str> {
        self.body.get("id").and_then(Value::as_str)
    }

    /// A field of the error envelope (`type`, `code`, `param`, `message`).
    pub fn error(&self, field: &str) -> Option<&str> {
        self.body
            .get("error")
            .and_then(|e| e.get(field))
            .and_then(Value::as_str)
    }

    /// An integer field of the body.
    pub fn int(&self, field: &str) -> Option<i64> {
        self.body.get(field).and_then(Value::as_i64)
    }

    /// True for a 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A short account of the answer: `200 cbtxn_1`, `200 cbtxn_1 (replayed)`, or
    /// `409 invalid_request_error/idempotency_key_in_use`.
    pub fn summary(&self) -> String {
        if self.ok() {
            let id = self.id().unwrap_or("(no id)");
            let replayed = if self.replayed() { " (replayed)" } else { "" };
            return format!("{} {id}{replayed}", self.status);
        }
        let kind = self.error("type").unwrap_or("(no error type)");
        let code = self
            .error("code")
            .map(|c| format!("/{c}"))
            .unwrap_or_default();
        let param = self
            .error("param")
            .map(|p| format!(" param={p}"))
            .unwrap_or_default();
        let replayed = if self.replayed() { " (replayed)" } else { "" };
        format!("{} {kind}{code}{param}{replayed}", self.status)
    }
}

impl Wire {
    /// A sender for `base` (scheme, host and port; a trailing `/` or `/v1` is dropped) and
    /// `key`, each request allowed `timeout`.
    pub fn new(base: &str, key: &str, timeout: Duration) -> anyhow::Result<Wire> {
        let mut base = base.trim().trim_end_matches('/').to_owned();
        if let Some(stripped) = base.strip_suffix("/v1") {
            base = stripped.to_owned();
        }
        let http = stripe::http::client_builder()
            .map_err(|e| anyhow!("cannot set up TLS: {e}"))?
            .timeout(timeout)
            .user_agent(concat!(
                "interlock-stripe-behaviours/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Wire {
            http,
            base,
            key: key.to_owned(),
        })
    }

    /// The base URL requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends one request and returns its answer, whatever its status. An error means no
    /// answer came (connection refused, TLS, timeout): the caller stops the probe.
    pub fn send(&self, request: &Request) -> anyhow::Result<Answer> {
        let url = format!("{}{}", self.base, request.path);
        let encoded = request.params.encode();
        let builder = match request.method {
            "GET" if encoded.is_empty() => self.http.get(&url),
            "GET" => self.http.get(format!("{url}?{encoded}")),
            "DELETE" => self.http.delete(&url),
            _ => self
                .http
                .post(&url)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(encoded),
        };
        let builder = match &request.key {
            Some(key) => builder.header("Idempotency-Key", key),
            None => builder,
        };
        let started = Instant::now();
        let answer = builder
            .basic_auth(&self.key, Some(""))
            .header("Stripe-Version", stripe::API_VERSION)
            .send()
            .map_err(|e| {
                anyhow!(
                    "{} {url}: no answer after {} ms: {}",
                    request.method,
                    started.elapsed().as_millis(),
                    chain(&e)
                )
            })?;
        let status = answer.status().as_u16();
        let headers = answer.headers().clone();
        let bytes = answer.bytes().map_err(|e| {
            anyhow!(
                "{} {url}: the answer broke off: {}",
                request.method,
                chain(&e)
            )
        })?;
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// Sends `first`, waits `stagger`, sends `second` while `first` may still be running
    /// (each on its own connection), and returns both answers in that order.
    pub fn at_once(
        &self,
        first: &Request,
        second: &Request,
        stagger: Duration,
    ) -> anyhow::Result<(Answer, Answer)> {
        std::thread::scope(|scope| {
            let a = scope.spawn(|| self.send(first));
            std::thread::sleep(stagger);
            let b = scope.spawn(|| self.send(second));
            let a = a
                .join()
                .map_err(|_| anyhow!("the thread sending the first request panicked"))?;
            let b = b
                .join()
                .map_err(|_| anyhow!("the thread sending the second request panicked"))?;
            Ok((a?, b?))
        })
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let said = s.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = s.source();
    }
    text
}
