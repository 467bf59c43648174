//! Listing commits page by page, and finding a merge by its trailer across pages.

use crate::fixture::Case;
use forge::client::MergeRequest;
use std::time::Duration;

#[test]
fn commits_come_newest_first_thirty_a_page_with_a_next_link_while_more_exist_with_git() {
    let case = Case::new();
    for _ in 0..33 {
        case.forge.commit_on_base(&case.name).unwrap();
    }
    let all: Vec<String> = case
        .git(&["rev-list", "refs/heads/main"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(all.len(), 34);
    let first = case.http("GET", "/repos/interlock/case-1/commits?sha=main", "");
    assert_eq!(first.status, 200);
    let shas = |a: &crate::fixture::Answer| -> Vec<String> {
        a.body
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|c| c["sha"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(shas(&first), all[..30].to_vec());
    let link = first.header("link").unwrap_or_default().to_string();
    let next = format!(
        "<{}/repos/interlock/case-1/commits?sha=main&per_page=30&page=2>; rel=\"next\"",
        case.forge.url()
    );
    assert_eq!(link, next);
    let second = case.http(
        "GET",
        "/repos/interlock/case-1/commits?sha=main&per_page=30&page=2",
        "",
    );
    assert_eq!(shas(&second), all[30..].to_vec());
    assert_eq!(second.header("link"), None);
    // Each commit carries its message and parents as git has them.
    let top = &first.body[0];
    assert_eq!(top["parents"][0]["sha"].as_str(), Some(all[1].as_str()));
    let message = case.git(&["show", "-s", "--format=%B", &all[0]]);
    assert_eq!(
        top["commit"]["message"].as_str().map(str::trim),
        Some(message.as_str())
    );
    // More than the maximum is the maximum: one page of all 34, no link.
    let capped = case.http(
        "GET",
        "/repos/interlock/case-1/commits?sha=main&per_page=1000",
        "",
    );
    assert_eq!(shas(&capped), all);
    assert_eq!(capped.header("link"), None);
}

#[test]
fn find_commit_finds_a_merge_by_its_trailer_across_pages_and_not_beyond_max_pages_with_git() {
    let case = Case::new();
    let client = case.client(Duration::from_secs(10)).with_page_size(5);
    let ask = MergeRequest {
        sha: Some(case.pull.head.clone()),
        commit_title: "Merge the reviewed feature".into(),
        commit_message: "Interlock-Effect: e-7".into(),
    };
    let merge = client.merge(1, &ask).unwrap();
    for _ in 0..12 {
        case.forge.commit_on_base(&case.name).unwrap();
    }
    // Newest first: 12 later commits, then the merge at position 13, on page 3 of 5 each.
    let found = client
        .find_commit("main", "Interlock-Effect: e-7", 3)
        .unwrap();
    let found = found.expect("found on page 3");
    assert_eq!(found.sha, merge);
    assert_eq!(
        found.parents,
        vec![case.pull.base.clone(), case.pull.head.clone()]
    );
    assert!(
        found.message.ends_with("Interlock-Effect: e-7\n"),
        "{:?}",
        found.message
    );
    assert_eq!(
        client
            .find_commit("main", "Interlock-Effect: e-7", 2)
            .unwrap(),
        None
    );
    assert_eq!(
        client
            .find_commit("main", "Interlock-Effect: e-8", 10)
            .unwrap(),
        None
    );
    // A trailer is a whole line: `e-7` does not find `e-70`'s merge, nor `e-` either.
    for prefix in ["Interlock-Effect: e-", "Interlock-Effect: e"] {
        assert_eq!(
            client.find_commit("main", prefix, 10).unwrap(),
            None,
            "{prefix}"
        );
    }
}
