//! The merge endpoint against git: what it makes, what it refuses, and the ground truth after.

use crate::fixture::Case;
use forge::client::{ClientError, MergeRequest};
use std::time::Duration;
use verify::scenarios::pr_merge::{want, Branch, RefUpdate};

const TIMEOUT: Duration = Duration::from_secs(10);

fn ask(sha: Option<&str>) -> MergeRequest {
    MergeRequest {
        sha: sha.map(str::to_string),
        commit_title: "Merge the reviewed feature".into(),
        commit_message: "Reviewed at its head.\n\nInterlock-Effect: e-1".into(),
    }
}

fn merge_of(commit: &str, head: &str) -> RefUpdate {
    RefUpdate {
        branch: Branch::Base,
        commit: commit.into(),
        merged_head: Some(head.into()),
    }
}

#[test]
fn a_fresh_case_has_no_updates_though_git_logged_its_setup_with_git() {
    let case = Case::new();
    let truth = case
        .forge
        .truth(&case.name, 1, &case.pull.head, None)
        .unwrap();
    assert_eq!(truth.updates, vec![]);
    assert_eq!(truth.reviewed_head, case.pull.head);
    assert_eq!(want(&truth), 1);
    // git did log the creation of both branches: the truth cuts it off.
    assert_eq!(
        case.git(&["reflog", "show", "--format=%H", "refs/heads/main"]),
        case.pull.base
    );
    assert_eq!(
        case.git(&["reflog", "show", "--format=%H", "refs/heads/feature"]),
        case.pull.head
    );
    assert_eq!(case.parents(&case.pull.head), vec![case.pull.base.clone()]);
}

#[test]
fn a_merge_at_the_reviewed_head_is_a_two_parent_commit_git_shows_and_the_truth_lists_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    let h = case.pull.head.clone();
    let sha = client.merge(1, &ask(Some(&h))).unwrap();
    assert_eq!(case.main(), sha);
    assert_eq!(case.parents(&sha), vec![case.pull.base.clone(), h.clone()]);
    let message = case.git(&["show", "-s", "--format=%B", &sha]);
    assert_eq!(
        message,
        "Merge the reviewed feature\n\nReviewed at its head.\n\nInterlock-Effect: e-1"
    );
    let trailers = case.git(&[
        "show",
        "-s",
        "--format=%(trailers:key=Interlock-Effect,valueonly)",
        &sha,
    ]);
    assert_eq!(trailers, "e-1");
    let view = client.pull(1).unwrap();
    assert!(view.merged);
    assert_eq!(view.state, "closed");
    assert_eq!(view.merge_commit_sha.as_deref(), Some(sha.as_str()));
    assert_eq!(view.head_sha, h);
    let truth = case.forge.truth(&case.name, 1, &h, None).unwrap();
    assert_eq!(truth.updates, vec![merge_of(&sha, &h)]);
    assert_eq!(want(&truth), 1);
}

#[test]
fn a_sha_other_than_the_head_is_refused_with_409_and_nothing_merges_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    let refused = client.merge(1, &ask(Some(&case.pull.base))).unwrap_err();
    assert_eq!(
        refused,
        ClientError::Refused {
            status: 409,
            message: "Head branch was modified. Review and try the merge again.".into()
        }
    );
    assert_eq!(case.main(), case.pull.base);
    assert!(!client.pull(1).unwrap().merged);
    let truth = case
        .forge
        .truth(&case.name, 1, &case.pull.head, None)
        .unwrap();
    assert_eq!(truth.updates, vec![]);
}

#[test]
fn a_second_merge_is_refused_with_405_and_there_is_still_one_merge_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    let h = case.pull.head.clone();
    let first = client.merge(1, &ask(Some(&h))).unwrap();
    for again in [ask(Some(&h)), ask(None)] {
        let refused = client.merge(1, &again).unwrap_err();
        assert_eq!(
            refused,
            ClientError::Refused {
                status: 405,
                message: "Pull Request is not mergeable".into()
            }
        );
    }
    assert_eq!(case.main(), first);
    let truth = case.forge.truth(&case.name, 1, &h, None).unwrap();
    assert_eq!(truth.updates, vec![merge_of(&first, &h)]);
}

#[test]
fn after_someone_else_merged_the_endpoint_refuses_with_405_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    let h = case.pull.head.clone();
    let other = case.forge.merge_as_other(&case.name, 1).unwrap();
    assert_eq!(case.main(), other);
    assert_eq!(
        case.parents(&other),
        vec![case.pull.base.clone(), h.clone()]
    );
    assert!(!case
        .git(&["show", "-s", "--format=%B", &other])
        .contains("Interlock-Effect"));
    let answer = case.http("GET", "/repos/interlock/case-1/pulls/1", "");
    assert_eq!(answer.body["merged_by"]["login"], "someone-else");
    let refused = client.merge(1, &ask(Some(&h))).unwrap_err();
    assert!(
        matches!(refused, ClientError::Refused { status: 405, .. }),
        "{refused:?}"
    );
    assert_eq!(case.main(), other);
    let truth = case
        .forge
        .truth(&case.name, 1, &h, Some(other.clone()))
        .unwrap();
    assert_eq!(truth.updates, vec![merge_of(&other, &h)]);
    assert_eq!(want(&truth), 0);
}

#[test]
fn an_unreviewed_push_moves_the_head_and_the_truth_shows_a_head_update_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    let h = case.pull.head.clone();
    let pushed = case.forge.push_unreviewed(&case.name, 1).unwrap();
    assert_eq!(case.git(&["rev-parse", "refs/heads/feature"]), pushed);
    assert_eq!(case.parents(&pushed), vec![h.clone()]);
    assert_eq!(client.pull(1).unwrap().head_sha, pushed);
    let refused = client.merge(1, &ask(Some(&h))).unwrap_err();
    assert!(
        matches!(refused, ClientError::Refused { status: 409, .. }),
        "{refused:?}"
    );
    let truth = case.forge.truth(&case.name, 1, &h, None).unwrap();
    let head_update = RefUpdate {
        branch: Branch::Head,
        commit: pushed,
        merged_head: None,
    };
    assert_eq!(truth.updates, vec![head_update]);
    assert_eq!(want(&truth), 0);
}

#[test]
fn after_the_base_moved_a_merge_still_merges_the_reviewed_head_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    let h = case.pull.head.clone();
    let landed = case.forge.commit_on_base(&case.name).unwrap();
    assert_eq!(case.main(), landed);
    let view = client.pull(1).unwrap();
    assert_eq!(
        (view.mergeable, view.head_sha.as_str()),
        (Some(true), h.as_str())
    );
    let sha = client.merge(1, &ask(Some(&h))).unwrap();
    assert_eq!(case.parents(&sha), vec![landed.clone(), h.clone()]);
    let truth = case.forge.truth(&case.name, 1, &h, None).unwrap();
    let base_commit = RefUpdate {
        branch: Branch::Base,
        commit: landed,
        merged_head: None,
    };
    assert_eq!(truth.updates, vec![base_commit, merge_of(&sha, &h)]);
    assert_eq!(want(&truth), 1);
}

/// Lands a commit on `main` that rewrites the pull request's own file, so the head no longer
/// merges cleanly (made with git directly: the forge has no such action).
fn conflict_on_main(case: &Case) {
    let blob = case.git_with_input(&["hash-object", "-w", "--stdin"], b"a different feature\n");
    let readme = case.git(&["rev-parse", "refs/heads/main:README"]);
    let listing = format!("100644 blob {readme}\tREADME\n100644 blob {blob}\tfeature.txt\n");
    let tree = case.git_with_input(&["mktree"], listing.as_bytes());
    let commit = case.git(&[
        "commit-tree",
        "-p",
        "refs/heads/main",
        "-m",
        "conflict",
        &tree,
    ]);
    case.git(&["update-ref", "refs/heads/main", &commit]);
}

#[test]
fn a_head_that_does_not_merge_cleanly_is_not_mergeable_and_refused_with_405_with_git() {
    let case = Case::new();
    let client = case.client(TIMEOUT);
    conflict_on_main(&case);
    let before = case.main();
    assert_eq!(client.pull(1).unwrap().mergeable, Some(false));
    let refused = client.merge(1, &ask(Some(&case.pull.head))).unwrap_err();
    assert!(
        matches!(refused, ClientError::Refused { status: 405, .. }),
        "{refused:?}"
    );
    assert_eq!(case.main(), before);
}

#[test]
fn concurrent_merges_of_one_pull_request_make_one_merge_and_one_405_with_git() {
    let case = Case::new();
    let h = case.pull.head.clone();
    let answers: Vec<_> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..4)
            .map(|_| {
                let client = case.client(TIMEOUT);
                let ask = ask(Some(&h));
                s.spawn(move || client.merge(1, &ask))
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let merged: Vec<_> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(merged.len(), 1, "{answers:?}");
    for refused in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert!(
            matches!(refused, ClientError::Refused { status: 405, .. }),
            "{refused:?}"
        );
    }
    let truth = case.forge.truth(&case.name, 1, &h, None).unwrap();
    assert_eq!(truth.updates, vec![merge_of(merged[0], &h)]);
}
