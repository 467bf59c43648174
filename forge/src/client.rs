//! A blocking client of the forge's subset for the worker processes (`reqwest::blocking`, one
//! timeout per request).
//!
//! Every failure says what the caller may conclude: [`ClientError::Refused`] is a definite "no"
//! (nothing was changed), [`ClientError::Unknown`] may have landed (settle it by a lookup, such
//! as [`Client::find_commit`]), [`ClientError::Malformed`] is an answer that could not be read.

use crate::OWNER;
use reqwest::blocking::{Client as Http, Response};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Commits per page [`Client::find_commit`] asks for unless told otherwise (GitHub's maximum).
pub const PAGE_SIZE: u32 = 100;

/// Why a call did not give its result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The service answered with this status: a definite answer (404, 405, 409, 422).
    #[error("refused with HTTP {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The answer's `message` (or its text).
        message: String,
    },
    /// No usable answer: timeout, connection closed, 5xx — the request may have landed.
    #[error("no usable answer (the request may have landed): {reason}")]
    Unknown {
        /// What happened.
        reason: String,
    },
    /// The answer could not be read (bad JSON etc.).
    #[error("unreadable answer: {reason}")]
    Malformed {
        /// What was wrong.
        reason: String,
    },
}

/// A pull request as the client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullView {
    /// Its number.
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    /// Whether it is merged.
    pub merged: bool,
    /// Whether its head merges cleanly (`None` when the service does not say, e.g. once merged).
    pub mergeable: Option<bool>,
    /// The commit its branch points at.
    pub head_sha: String,
    /// Its merge commit, once merged.
    pub merge_commit_sha: Option<String>,
}

/// A merge to ask for (merge method `merge`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRequest {
    /// The head the pull request must be at (else 409), if any.
    pub sha: Option<String>,
    /// The merge commit's first line.
    pub commit_title: String,
    /// The rest of its message (trailers at its end stay trailers).
    pub commit_message: String,
}

/// A commit as the client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitView {
    /// Its object name.
    pub sha: String,
    /// Its whole message.
    pub message: String,
    /// Its parents, first parent first.
    pub parents: Vec<String>,
}

/// A client of one repository.
#[derive(Debug, Clone)]
pub struct Client {
    http: Http,
    base_url: String,
    repo: String,
    page_size: u32,
}

#[derive(Deserialize)]
struct WireRef {
    sha: String,
}

#[derive(Deserialize)]
struct WirePull {
    number: u64,
    state: String,
    merged: bool,
    mergeable: Option<bool>,
    head: WireRef,
    merge_commit_sha: Option<String>,
}

#[derive(Deserialize)]
struct WireMerged {
    sha: String,
    merged: bool,
}

#[derive(Deserialize)]
struct WireCommitBody {
    message: String,
}

#[derive(Deserialize)]
struct WireCommit {
    sha: String,
    commit: WireCommitBody,
    parents: Vec<WireRef>,
}

/// A `reqwest` client for plain HTTP: reqwest is built here without a process-wide TLS provider,
/// so it is handed a TLS configuration that trusts no roots (no HTTPS is ever spoken).
fn http_client(timeout: Duration) -> Result<Http, ClientError> {
    let config = |reason: String| ClientError::Malformed { reason };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| config(format!("cannot set up the HTTP client: {e}")))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    Http::builder()
        .tls_backend_preconfigured(tls)
        .timeout(timeout)
        .user_agent(concat!("interlock-forge/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| config(format!("cannot build the HTTP client: {e}")))
}

impl Client {
    /// A client of repository `repo` at `base_url` (`http://127.0.0.1:PORT`), each request
    /// allowed `timeout`.
    pub fn new(base_url: &str, repo: &str, timeout: Duration) -> Result<Client, ClientError> {
        let base_url = base_url.trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base_url).map_err(|e| ClientError::Malformed {
            reason: format!("base URL {base_url:?}: {e}"),
        })?;
        if parsed.scheme() != "http" || timeout.is_zero() {
            return Err(ClientError::Malformed {
                reason: format!("base URL {base_url:?} must be http, the timeout positive"),
            });
        }
        Ok(Client {
            http: http_client(timeout)?,
            base_url,
            repo: repo.to_string(),
            page_size: PAGE_SIZE,
        })
    }

    /// The same client reading `n` commits per page in [`Client::find_commit`] (1 to 100).
    pub fn with_page_size(mut self, n: u32) -> Client {
        self.page_size = n.clamp(1, PAGE_SIZE);
        self
    }

    fn url(&self, tail: &str) -> String {
        format!("{}/repos/{OWNER}/{}/{tail}", self.base_url, self.repo)
    }

    /// Pull request `number`.
    pub fn pull(&self, number: u64) -> Result<PullView, ClientError> {
        let response = self.http.get(self.url(&format!("pulls/{number}"))).send();
        let wire: WirePull = read(response)?.1;
        Ok(PullView {
            number: wire.number,
            state: wire.state,
            merged: wire.merged,
            mergeable: wire.mergeable,
            head_sha: wire.head.sha,
            merge_commit_sha: wire.merge_commit_sha,
        })
    }

    /// Merges pull request `number` (merge method `merge`); the merge commit.
    pub fn merge(&self, number: u64, req: &MergeRequest) -> Result<String, ClientError> {
        let mut body = json!({
            "merge_method": "merge",
            "commit_title": req.commit_title,
            "commit_message": req.commit_message,
        });
        if let Some(sha) = &req.sha {
            body["sha"] = json!(sha);
        }
        let response = self
            .http
            .put(self.url(&format!("pulls/{number}/merge")))
            .json(&body)
            .send();
        let wire: WireMerged = read(response)?.1;
        if !wire.merged {
            return Err(ClientError::Malformed {
                reason: "a 200 answer to a merge with merged: false".into(),
            });
        }
        Ok(wire.sha)
    }

    /// Pages through the commits of `branch` (newest first) and returns the first whose message
    /// has `needle` as one whole line (a trailer line such as `Interlock-Effect: <id>`: a line
    /// that only begins with it, `... #10` for `... #1`, is another), reading at most `max_pages`
    /// pages (following the `Link` header's `next`).
    pub fn find_commit(
        &self,
        branch: &str,
        needle: &str,
        max_pages: u32,
    ) -> Result<Option<CommitView>, ClientError> {
        let mut url =
            reqwest::Url::parse(&self.url("commits")).map_err(|e| ClientError::Malformed {
                reason: e.to_string(),
            })?;
        url.query_pairs_mut()
            .append_pair("sha", branch)
            .append_pair("per_page", &self.page_size.to_string());
        let mut next = Some(url.to_string());
        for _ in 0..max_pages {
            let Some(page) = next.take() else {
                break;
            };
            let (headers, commits): (_, Vec<WireCommit>) = read(self.http.get(&page).send())?;
            if let Some(found) = commits
                .into_iter()
                .find(|c| c.commit.message.lines().any(|l| l.trim_end() == needle))
            {
                return Ok(Some(CommitView {
                    sha: found.sha,
                    message: found.commit.message,
                    parents: found.parents.into_iter().map(|p| p.sha).collect(),
                }));
            }
            next = next_page(&headers, &self.base_url)?;
        }
        Ok(None)
    }
}

/// The answer's headers and body for a 2xx; the error the status or transport says otherwise.
fn read<T: DeserializeOwned>(
    sent: reqwest::Result<Response>,
) -> Result<(reqwest::header::HeaderMap, T), ClientError> {
    let response = sent.map_err(|e| ClientError::Unknown {
        reason: describe(&e),
    })?;
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().map_err(|e| ClientError::Unknown {
        reason: format!("HTTP {status}, then the body was lost: {}", describe(&e)),
    })?;
    if status.is_success() {
        let body = serde_json::from_str(&text).map_err(|e| ClientError::Malformed {
            reason: format!("HTTP {status}: {e}"),
        })?;
        return Ok((headers, body));
    }
    let message = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            v.get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| text.chars().take(200).collect());
    if status.is_server_error() {
        Err(ClientError::Unknown {
            reason: format!("HTTP {}: {message}", status.as_u16()),
        })
    } else if status.is_client_error() {
        Err(ClientError::Refused {
            status: status.as_u16(),
            message,
        })
    } else {
        Err(ClientError::Malformed {
            reason: format!("unexpected HTTP {status}"),
        })
    }
}

/// A transport error in one line, with its causes.
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else {
        "transport error"
    };
    let mut text = format!("{kind}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// The `rel="next"` URL of a `Link` header, if any; it must be on `base_url`.
fn next_page(
    headers: &reqwest::header::HeaderMap,
    base_url: &str,
) -> Result<Option<String>, ClientError> {
    let Some(link) = headers.get(reqwest::header::LINK) else {
        return Ok(None);
    };
    let link = link.to_str().map_err(|_| ClientError::Malformed {
        reason: "a Link header that is not text".into(),
    })?;
    let next = link.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    });
    match next {
        Some(url) if !url.starts_with(&format!("{base_url}/")) => Err(ClientError::Malformed {
            reason: format!("a next page outside the service: {url}"),
        }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue, LINK};

    #[test]
    fn the_next_page_is_read_from_the_link_header_on_the_service_only() {
        let base = "http://127.0.0.1:9";
        let mut headers = HeaderMap::new();
        assert_eq!(next_page(&headers, base), Ok(None));
        headers.insert(
            LINK,
            HeaderValue::from_static(
                "<http://127.0.0.1:9/x?page=1>; rel=\"prev\", <http://127.0.0.1:9/x?page=3>; rel=\"next\"",
            ),
        );
        assert_eq!(
            next_page(&headers, base),
            Ok(Some("http://127.0.0.1:9/x?page=3".to_string()))
        );
        headers.insert(
            LINK,
            HeaderValue::from_static("<http://elsewhere/x>; rel=\"next\""),
        );
        assert!(matches!(
            next_page(&headers, base),
            Err(ClientError::Malformed { .. })
        ));
    }
}
