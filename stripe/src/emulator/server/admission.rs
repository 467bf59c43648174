//! The checks in front of the API, before anything is saved: the API key
//! (restricted keys read only), the `Stripe-Version`, the parameters and the
//! rate limit.

use super::super::errors::ApiError;
use super::super::form::parse_into;
use super::super::versions::{self, AcceptedVersion};
use super::App;
use axum::body::Bytes;
use axum::http::{HeaderMap, Uri};
use serde_json::{Map, Value};

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.trim().bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// A restricted key (`rk_test_<rest>`) is the read-only key of the account of `sk_test_<rest>`:
/// it reads that account's objects and may not write (403 `permission_error`, as Stripe answers
/// a restricted key without the write permission). Returns the account's key.
fn read_only_account(key: &str, method: &str) -> Result<String, ApiError> {
    let Some(rest) = key.strip_prefix("rk_test_") else {
        return Ok(key.to_owned());
    };
    if method != "GET" {
        let shown: String = key.chars().take(12).collect();
        return Err(ApiError::permission(format!(
            "The provided key '{shown}****' is a restricted key with read permissions only; \
                 use the account's secret key (sk_test_...) to {method} here."
        )));
    }
    Ok(format!("sk_test_{rest}"))
}

/// The API key from `Authorization: Basic` (key as user name) or `Bearer`.
fn api_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(value) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return Err(ApiError::unauthorized(
            "You did not provide an API key. You need to provide your API key in the \
             Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
        ));
    };
    let key = if let Some(token) = value.strip_prefix("Bearer ") {
        token.trim().to_string()
    } else if let Some(encoded) = value.strip_prefix("Basic ") {
        let decoded = base64_decode(encoded)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ApiError::unauthorized("Invalid Basic authorization header."))?;
        decoded.split(':').next().unwrap_or_default().to_string()
    } else {
        return Err(ApiError::unauthorized(
            "Invalid Authorization header: use Bearer or Basic authentication.",
        ));
    };
    let test_key = ["sk_test_", "rk_test_"]
        .iter()
        .any(|p| key.starts_with(p) && key.len() > p.len());
    if test_key {
        Ok(key)
    } else {
        let hint: String = key.chars().take(8).collect();
        Err(ApiError::unauthorized(format!(
            "Invalid API Key provided: {hint}****. This emulator accepts any sk_test_ or rk_test_ key."
        )))
    }
}

/// The `Stripe-Version` a request asks for: absent means the account default;
/// a version the emulator does not answer (see [`versions::ACCEPTED_VERSIONS`])
/// is refused rather than answered in a shape the caller did not ask for.
pub(super) fn check_version(headers: &HeaderMap) -> Result<AcceptedVersion, ApiError> {
    let Some(asked) = headers.get("stripe-version") else {
        return Ok(versions::default_version());
    };
    let asked = asked.to_str().unwrap_or_default().trim();
    if let Some(version) = versions::accepted(asked) {
        return Ok(version);
    }
    let (date, name) = asked.split_once('.').unwrap_or((asked, ""));
    let date_ok = date.len() == 10
        && date.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    if date_ok && name.chars().all(|c| c.is_ascii_lowercase()) {
        Err(ApiError::unsupported_version(asked))
    } else {
        Err(ApiError::unknown_version(asked))
    }
}

/// A request's parameters: query string, and for other methods than GET the
/// form body.
fn params(uri: &Uri, method: &str, body: &Bytes) -> Result<Map<String, Value>, ApiError> {
    let mut params = Map::new();
    parse_into(&mut params, uri.query().unwrap_or_default())?;
    if method != "GET" {
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("The request body is not valid UTF-8."))?;
        parse_into(&mut params, text)?;
    }
    Ok(params)
}

/// The checks in front of the API, in Stripe's order: the API key (a
/// restricted key reads its account), the asked version (its refusal, if
/// any), the parameters, the rate limit. Returns the account's key and the
/// parameters.
pub(super) fn admit(
    app: &App,
    headers: &HeaderMap,
    version_refused: Option<ApiError>,
    method: &str,
    uri: &Uri,
    body: &Bytes,
) -> Result<(String, Map<String, Value>), ApiError> {
    let api_key = read_only_account(&api_key(headers)?, method)?;
    if let Some(e) = version_refused {
        return Err(e);
    }
    let params = params(uri, method, body)?;
    if !app.limiter.admit(method, uri.path()) {
        return Err(ApiError::rate_limited());
    }
    Ok((api_key, params))
}
