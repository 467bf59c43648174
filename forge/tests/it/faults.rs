//! The merge faults: each lands the merge in git whatever the client saw.

use crate::fixture::Case;
use forge::client::{ClientError, MergeRequest};
use forge::Fault;
use std::time::{Duration, Instant};
use verify::scenarios::pr_merge::{Branch, RefUpdate};

fn ask(sha: &str) -> MergeRequest {
    MergeRequest {
        sha: Some(sha.to_string()),
        commit_title: "Merge the reviewed feature".into(),
        commit_message: "Interlock-Effect: e-1".into(),
    }
}

/// The only update is a merge of the reviewed head, the commit `main` points at.
fn merged_once(case: &Case) -> String {
    let main = case.main();
    let truth = case
        .forge
        .truth(&case.name, 1, &case.pull.head, None)
        .unwrap();
    let merge = RefUpdate {
        branch: Branch::Base,
        commit: main.clone(),
        merged_head: Some(case.pull.head.clone()),
    };
    assert_eq!(truth.updates, vec![merge]);
    main
}

#[test]
fn a_held_merge_lands_after_the_hold_even_when_the_client_timed_out_first_with_git() {
    let case = Case::new();
    // Ten times the client's timeout: room to read git while the request is held.
    let hold = Duration::from_millis(3000);
    case.forge
        .set_fault(&case.name, 1, Fault::Hold { ms: 3000 });
    let client = case.client(Duration::from_millis(300));
    let sent = Instant::now();
    let answer = client.merge(1, &ask(&case.pull.head));
    assert!(
        matches!(answer, Err(ClientError::Unknown { .. })),
        "{answer:?}"
    );
    assert!(
        sent.elapsed() < hold,
        "the client gave up before the hold ended"
    );
    let during = case.main();
    assert!(sent.elapsed() < hold, "git was read during the hold");
    assert_eq!(during, case.pull.base, "nothing landed during the hold");
    let landed = case.wait_main_moves(&case.pull.base, Duration::from_secs(10));
    assert!(sent.elapsed() >= hold, "it landed only after the hold");
    assert_eq!(landed, Some(merged_once(&case)));
    // The fault was taken once: the next request is answered at once, and refused (merged).
    let again = case
        .client(Duration::from_secs(10))
        .merge(1, &ask(&case.pull.head));
    assert!(
        matches!(again, Err(ClientError::Refused { status: 405, .. })),
        "{again:?}"
    );
}

#[test]
fn fail_after_commit_answers_500_yet_the_merge_is_in_git_with_git() {
    let case = Case::new();
    case.forge.set_fault(&case.name, 1, Fault::FailAfterCommit);
    let client = case.client(Duration::from_secs(10));
    let answer = client.merge(1, &ask(&case.pull.head));
    match answer {
        Err(ClientError::Unknown { reason }) => assert!(reason.contains("500"), "{reason}"),
        other => panic!("expected an unknown outcome, got {other:?}"),
    }
    let merge = merged_once(&case);
    let view = client.pull(1).unwrap();
    assert!(view.merged);
    assert_eq!(view.merge_commit_sha, Some(merge));
}

#[test]
fn drop_after_commit_closes_the_connection_without_an_answer_yet_the_merge_is_in_git_with_git() {
    let case = Case::new();
    case.forge.set_fault(&case.name, 1, Fault::DropAfterCommit);
    let client = case.client(Duration::from_secs(10));
    let answer = client.merge(1, &ask(&case.pull.head));
    assert!(
        matches!(answer, Err(ClientError::Unknown { .. })),
        "{answer:?}"
    );
    let merge = merged_once(&case);
    let found = client
        .find_commit("main", "Interlock-Effect: e-1", 1)
        .unwrap();
    assert_eq!(found.map(|c| c.sha), Some(merge));
}

#[test]
fn a_merge_held_until_released_lands_when_released_and_not_before_with_git() {
    let case = Case::new();
    case.forge
        .set_fault(&case.name, 1, Fault::HoldUntilReleased);
    let client = case.client(Duration::from_millis(300));
    let answer = client.merge(1, &ask(&case.pull.head));
    assert!(
        matches!(answer, Err(ClientError::Unknown { .. })),
        "{answer:?}"
    );
    assert!(
        !case.forge.fault_waiting(&case.name, 1),
        "the request took it"
    );
    // Well past the client's timeout, nothing has landed: the request is still held.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        case.main(),
        case.pull.base,
        "nothing landed before the release"
    );
    let held = case
        .forge
        .release(&case.name, 1)
        .expect("a request was held");
    assert!(held >= Duration::from_millis(500), "{held:?}");
    // The release returns once the merge is in git.
    merged_once(&case);
    assert_eq!(case.forge.release(&case.name, 1), None, "released once");
}
