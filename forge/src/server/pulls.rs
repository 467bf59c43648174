//! `GET /repos/{owner}/{repo}/pulls/{n}` and `PUT /repos/{owner}/{repo}/pulls/{n}/merge`.

use super::answer::{self, DOC_GET_PULL, DOC_MERGE};
use super::listener::Cut;
use super::{blocking, target, App};
use crate::faults::RELEASE_LIMIT;
use crate::git::Actor;
use crate::pulls::{self, MergeAsk, PullState, Refusal};
use crate::Fault;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The pull request as GitHub's "Get a pull request" shows the fields this subset has.
fn view(state: &PullState) -> Value {
    let merged = state.merged.as_ref();
    json!({
        "number": state.number,
        "state": if merged.is_some() { "closed" } else { "open" },
        "merged": merged.is_some(),
        "mergeable": state.mergeable,
        "head": { "ref": state.head.0, "sha": state.head.1 },
        "base": { "ref": state.base.0, "sha": state.base.1 },
        "merge_commit_sha": merged.map(|m| m.commit.clone()),
        "merged_by": merged.map(|m| json!({ "login": m.merged_by })),
    })
}

/// `GET /repos/{owner}/{repo}/pulls/{n}`.
pub(crate) async fn get(
    State(app): State<Arc<App>>,
    Path((owner, repo, number)): Path<(String, String, String)>,
) -> Response {
    let Some(number) = target(&owner, &number) else {
        return answer::not_found(DOC_GET_PULL);
    };
    let read = blocking(move || app.repos.with(&repo, |r| pulls::state(r, number))).await;
    match read {
        Ok(Some(state)) => answer::json(StatusCode::OK, &view(&state)),
        Ok(None) => answer::not_found(DOC_GET_PULL),
        Err(e) => answer::failure(&e, DOC_GET_PULL),
    }
}

/// `PUT /repos/{owner}/{repo}/pulls/{n}/merge`. The work runs in a task of its own, so a client
/// that gives up (a timeout, a closed connection) does not stop a merge that arrived.
pub(crate) async fn merge(
    State(app): State<Arc<App>>,
    ConnectInfo(cut): ConnectInfo<Cut>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let work = tokio::spawn(merge_to_end(app, cut, owner, repo, number, body));
    work.await
        .unwrap_or_else(|_| answer::server_error(DOC_MERGE))
}

async fn merge_to_end(
    app: Arc<App>,
    cut: Cut,
    owner: String,
    repo: String,
    number: String,
    body: Bytes,
) -> Response {
    let Some(number) = target(&owner, &number) else {
        return answer::not_found(DOC_MERGE);
    };
    let fault = app.faults.take(&repo, number);
    let ask = match parse_merge(&body) {
        Ok(ask) => ask,
        Err(bad) => return answer::error(bad.status, &bad.message, DOC_MERGE),
    };
    let mut landed = None;
    match fault {
        Some(Fault::Hold { ms }) => tokio::time::sleep(Duration::from_millis(ms)).await,
        Some(Fault::HoldUntilReleased) => {
            let release = app.faults.hold(&repo, number);
            if let Ok(Ok(tell)) = tokio::time::timeout(RELEASE_LIMIT, release).await {
                landed = Some(tell);
            }
        }
        _ => {}
    }
    let done = blocking(move || {
        app.repos
            .with(&repo, |r| pulls::merge(r, number, &ask, Actor::Agent))
    })
    .await;
    if let Some(tell) = landed {
        // Applied or refused: the harness that released the request may go on.
        let _ = tell.send(());
    }
    match done {
        Ok(Ok(sha)) => match fault {
            Some(Fault::FailAfterCommit) => answer::server_error(DOC_MERGE),
            Some(Fault::DropAfterCommit) => {
                cut.cut();
                answer::server_error(DOC_MERGE)
            }
            Some(Fault::Hold { .. } | Fault::HoldUntilReleased) | None => answer::json(
                StatusCode::OK,
                &json!({ "sha": sha, "merged": true, "message": "Pull Request successfully merged" }),
            ),
        },
        Ok(Err(refusal)) => refused(&refusal),
        Err(e) => answer::failure(&e, DOC_MERGE),
    }
}

/// The answer to a refused merge.
fn refused(refusal: &Refusal) -> Response {
    match refusal {
        Refusal::NoSuchPull => answer::not_found(DOC_MERGE),
        Refusal::AlreadyMerged | Refusal::Conflict => answer::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Pull Request is not mergeable",
            DOC_MERGE,
        ),
        Refusal::HeadModified => answer::error(
            StatusCode::CONFLICT,
            "Head branch was modified. Review and try the merge again.",
            DOC_MERGE,
        ),
    }
}

/// A merge request's body the service cannot take: its status (400 or 422) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BadInput {
    status: StatusCode,
    message: String,
}

impl BadInput {
    fn invalid(message: String) -> BadInput {
        BadInput {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message,
        }
    }
}

/// The merge request's body: empty, or a JSON object whose `sha`, `commit_title` and
/// `commit_message` are strings and whose `merge_method` is `merge` when given. Malformed JSON or
/// a body that is not an object is a 400, a field of the wrong type or value a 422.
fn parse_merge(body: &[u8]) -> Result<MergeAsk, BadInput> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(MergeAsk::default());
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| BadInput {
        status: StatusCode::BAD_REQUEST,
        message: "Problems parsing JSON".into(),
    })?;
    let Value::Object(fields) = value else {
        return Err(BadInput {
            status: StatusCode::BAD_REQUEST,
            message: "Body should be a JSON object".into(),
        });
    };
    let text = |name: &str| -> Result<Option<String>, BadInput> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(BadInput::invalid(format!(
                "Invalid request.\n\nFor 'properties/{name}', {other} is not a string."
            ))),
        }
    };
    match text("merge_method")?.as_deref() {
        None | Some("merge") => {}
        Some(other) => {
            return Err(BadInput::invalid(format!(
                "Invalid request.\n\nmerge_method {other:?} is not supported here: only \"merge\"."
            )))
        }
    }
    Ok(MergeAsk {
        sha: text("sha")?,
        title: text("commit_title")?,
        message: text("commit_message")?,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_merge;

    #[test]
    fn a_merge_body_is_checked_field_by_field() {
        let status = |body: &str| {
            parse_merge(body.as_bytes())
                .err()
                .map(|b| b.status.as_u16())
        };
        assert_eq!(status(""), None);
        assert_eq!(
            status(r#"{"sha":"abc","commit_title":"t","commit_message":"m"}"#),
            None
        );
        assert_eq!(status(r#"{"merge_method":"merge"}"#), None);
        assert_eq!(status("{"), Some(400));
        assert_eq!(status("[]"), Some(400));
        assert_eq!(status(r#"{"sha":1}"#), Some(422));
        assert_eq!(status(r#"{"merge_method":"squash"}"#), Some(422));
    }
}
