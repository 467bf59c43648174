//! `GET /repos/{owner}/{repo}/commits?sha=&per_page=&page=`: the commits reachable from a branch
//! or commit, newest first, a page at a time, with a `Link` header naming the next page while
//! there is one.

use super::answer::{self, DOC_COMMITS};
use super::{blocking, App};
use crate::git::{is_object_name, CommitInfo};
use crate::repos::valid_name;
use crate::{ForgeError, OWNER};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Arc;

/// Results per page when the request does not say (GitHub's default).
pub(crate) const DEFAULT_PER_PAGE: u64 = 30;
/// The most results per page (GitHub's maximum); more is capped to this.
pub(crate) const MAX_PER_PAGE: u64 = 100;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listing {
    /// Branch name or full commit name (default `main`).
    sha: String,
    per_page: u64,
    page: u64,
}

/// Reads `sha`, `per_page` and `page` from the query. A missing, unreadable or zero `per_page`
/// is the default, one above the maximum the maximum; a missing, unreadable or zero `page` is 1.
fn listing(query: Option<&str>) -> Listing {
    let url = reqwest::Url::parse(&format!("http://query.invalid/?{}", query.unwrap_or("")));
    let pairs: Vec<(String, String)> = url
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let number = |name: &str| {
        get(name)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&n| n > 0)
    };
    Listing {
        sha: get("sha").unwrap_or_else(|| crate::case::BASE.to_string()),
        per_page: number("per_page").map_or(DEFAULT_PER_PAGE, |n| n.min(MAX_PER_PAGE)),
        page: number("page").unwrap_or(1),
    }
}

/// One commit as the list shows the fields this subset has.
fn view(c: &CommitInfo) -> Value {
    json!({
        "sha": c.sha,
        "commit": { "message": c.message },
        "parents": c.parents.iter().map(|p| json!({ "sha": p })).collect::<Vec<_>>(),
    })
}

/// `GET /repos/{owner}/{repo}/commits`.
pub(crate) async fn list(
    State(app): State<Arc<App>>,
    Path((owner, repo)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    if owner != OWNER {
        return answer::not_found(DOC_COMMITS);
    }
    let ask = listing(query.as_deref());
    let base_url = app.base_url.clone();
    let name = repo.clone();
    let asked = ask.clone();
    let read = blocking(move || app.repos.with(&name, |r| page_of(r, &asked))).await;
    match read {
        Ok(Some((commits, more))) => {
            let body = Value::Array(commits.iter().map(view).collect());
            let mut response = answer::json(StatusCode::OK, &body);
            if more {
                if let Some(link) = next_link(&base_url, &repo, &ask) {
                    response.headers_mut().insert(header::LINK, link);
                }
            }
            response
        }
        Ok(None) => answer::error(
            StatusCode::NOT_FOUND,
            &format!("No commit found for SHA: {}", ask.sha),
            DOC_COMMITS,
        ),
        Err(e) => answer::failure(&e, DOC_COMMITS),
    }
}

/// The asked page, and whether a page follows it; `None` when `sha` names no commit.
fn page_of(
    repo: &crate::repos::Repo,
    ask: &Listing,
) -> Result<Option<(Vec<CommitInfo>, bool)>, ForgeError> {
    let git = &repo.git;
    let start = if is_object_name(&ask.sha) {
        git.resolve(&ask.sha)?
    } else if valid_name(&ask.sha) {
        git.resolve(&format!("refs/heads/{}", ask.sha))?
    } else {
        None
    };
    let Some(start) = start else {
        return Ok(None);
    };
    let skip = (ask.page - 1).saturating_mul(ask.per_page);
    let mut commits = git.log(&start, skip, ask.per_page + 1)?;
    let more = commits.len() as u64 > ask.per_page;
    commits.truncate(usize::try_from(ask.per_page).unwrap_or(usize::MAX));
    Ok(Some((commits, more)))
}

/// `<…page=K+1>; rel="next"`.
fn next_link(base_url: &str, repo: &str, ask: &Listing) -> Option<HeaderValue> {
    let mut url = reqwest::Url::parse(base_url).ok()?;
    url.path_segments_mut()
        .ok()?
        .extend(["repos", OWNER, repo, "commits"]);
    url.query_pairs_mut()
        .append_pair("sha", &ask.sha)
        .append_pair("per_page", &ask.per_page.to_string())
        .append_pair("page", &(ask.page + 1).to_string());
    HeaderValue::from_str(&format!("<{url}>; rel=\"next\"")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_parameters_fall_back_to_githubs_default_and_cap() {
        let l = listing(None);
        assert_eq!((l.sha.as_str(), l.per_page, l.page), ("main", 30, 1));
        let l = listing(Some("sha=feature&per_page=1000&page=3"));
        assert_eq!((l.sha.as_str(), l.per_page, l.page), ("feature", 100, 3));
        let l = listing(Some("per_page=zero&page=0"));
        assert_eq!((l.per_page, l.page), (30, 1));
    }

    #[test]
    fn the_next_link_names_the_following_page() {
        let ask = listing(Some("sha=main&per_page=5&page=2"));
        let link = next_link("http://127.0.0.1:9", "case-1", &ask);
        let text = link.as_ref().and_then(|l| l.to_str().ok());
        assert_eq!(
            text,
            Some("<http://127.0.0.1:9/repos/interlock/case-1/commits?sha=main&per_page=5&page=3>; rel=\"next\"")
        );
    }
}
