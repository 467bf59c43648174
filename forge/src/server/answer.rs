//! Answers as GitHub shapes them: JSON bodies, and errors as `{"message", "documentation_url"}`.

use crate::ForgeError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The documentation page of "Get a pull request".
pub(crate) const DOC_GET_PULL: &str = "https://docs.github.com/rest/pulls/pulls#get-a-pull-request";
/// The documentation page of "Merge a pull request".
pub(crate) const DOC_MERGE: &str = "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request";
/// The documentation page of "List commits".
pub(crate) const DOC_COMMITS: &str = "https://docs.github.com/rest/commits/commits#list-commits";
/// The REST API's documentation, for paths it does not have.
pub(crate) const DOC_REST: &str = "https://docs.github.com/rest";

/// A JSON answer with `status`.
pub(crate) fn json(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}

/// An error answer: `status` with `{"message", "documentation_url"}`.
pub(crate) fn error(status: StatusCode, message: &str, documentation_url: &str) -> Response {
    json(
        status,
        &json!({ "message": message, "documentation_url": documentation_url }),
    )
}

/// GitHub's 404 for a repository or resource that does not exist.
pub(crate) fn not_found(documentation_url: &str) -> Response {
    error(StatusCode::NOT_FOUND, "Not Found", documentation_url)
}

/// The answer to an error of the service itself: a 404 for a repository that does not exist,
/// else a 500 (the change may or may not have been made).
pub(crate) fn failure(e: &ForgeError, documentation_url: &str) -> Response {
    match e {
        ForgeError::NoSuchRepo(_) | ForgeError::NoSuchPull { .. } => not_found(documentation_url),
        _ => server_error(documentation_url),
    }
}

/// A 500.
pub(crate) fn server_error(documentation_url: &str) -> Response {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Server Error",
        documentation_url,
    )
}
