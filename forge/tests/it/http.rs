//! Answers as GitHub shapes them: the pull request's fields, 404s and invalid input.

use crate::fixture::Case;
use forge::client::ClientError;
use serde_json::json;
use std::time::Duration;

#[test]
fn an_open_pull_request_shows_its_branches_mergeable_and_no_merge_with_git() {
    let case = Case::new();
    let answer = case.http("GET", "/repos/interlock/case-1/pulls/1", "");
    assert_eq!(answer.status, 200);
    assert!(answer
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json")));
    assert_eq!(
        answer.body,
        json!({
            "number": 1,
            "state": "open",
            "merged": false,
            "mergeable": true,
            "head": { "ref": "feature", "sha": case.pull.head },
            "base": { "ref": "main", "sha": case.pull.base },
            "merge_commit_sha": null,
            "merged_by": null,
        })
    );
}

#[test]
fn an_unknown_owner_repository_pull_or_path_is_a_404_in_githubs_shape_with_git() {
    let case = Case::new();
    for (method, path) in [
        ("GET", "/repos/someone/case-1/pulls/1"),
        ("GET", "/repos/interlock/no-such-case/pulls/1"),
        ("GET", "/repos/interlock/case-1/pulls/2"),
        ("GET", "/repos/interlock/case-1/pulls/one"),
        ("PUT", "/repos/interlock/case-1/pulls/2/merge"),
        ("PUT", "/repos/interlock/no-such-case/pulls/1/merge"),
        ("GET", "/repos/interlock/..%2Fcase-1/pulls/1"),
        ("GET", "/repos/interlock/no-such-case/commits"),
        ("GET", "/repos/interlock/case-1/commits?sha=no-such-branch"),
        ("GET", "/elsewhere"),
        ("DELETE", "/repos/interlock/case-1/pulls/1"),
        ("POST", "/repos/interlock/case-1/pulls/1/merge"),
    ] {
        let answer = case.http(method, path, "");
        assert_eq!(answer.status, 404, "{method} {path}");
        assert!(answer.body["message"].is_string(), "{method} {path}");
        assert!(
            answer.body["documentation_url"].is_string(),
            "{method} {path}"
        );
    }
    let client = case.client(Duration::from_secs(10));
    let missing = client.pull(2).unwrap_err();
    assert_eq!(
        missing,
        ClientError::Refused {
            status: 404,
            message: "Not Found".into()
        }
    );
    assert_eq!(case.main(), case.pull.base);
}

#[test]
fn invalid_merge_fields_are_a_422_a_body_that_is_no_json_object_a_400_and_nothing_merges_with_git()
{
    let case = Case::new();
    let path = "/repos/interlock/case-1/pulls/1/merge";
    for (body, status) in [
        (r#"{"merge_method":"squash"}"#, 422),
        (r#"{"merge_method":"rebase"}"#, 422),
        (r#"{"sha":42}"#, 422),
        (r#"{"commit_title":["t"]}"#, 422),
        ("[]", 400),
        ("{", 400),
    ] {
        let answer = case.http("PUT", path, body);
        assert_eq!(answer.status, status, "{body}");
        assert!(answer.body["message"].is_string(), "{body}");
        assert!(answer.body["documentation_url"].is_string(), "{body}");
    }
    assert_eq!(case.main(), case.pull.base);
    // An empty body merges (every field is optional), with GitHub's default title.
    let answer = case.http("PUT", path, "");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["merged"], true);
    assert_eq!(answer.body["message"], "Pull Request successfully merged");
    let sha = answer.body["sha"].as_str().unwrap_or_default().to_string();
    assert_eq!(case.main(), sha);
    assert_eq!(
        case.git(&["show", "-s", "--format=%B", &sha]),
        "Merge pull request #1 from interlock/feature"
    );
}
