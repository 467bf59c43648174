//! The harness's side: creating cases, and the order of the ground truth across both branches.

use crate::fixture::Case;
use forge::ForgeError;
use verify::scenarios::pr_merge::{Branch, RefUpdate};

#[test]
fn a_case_name_is_taken_once_and_never_a_path_with_git() {
    let case = Case::new();
    let again = case.forge.create_case(&case.name);
    assert!(matches!(again, Err(ForgeError::Exists(_))), "{again:?}");
    for bad in ["../escape", "a/b", ".hidden", ""] {
        let made = case.forge.create_case(bad);
        assert!(
            matches!(made, Err(ForgeError::InvalidName(_))),
            "{bad}: {made:?}"
        );
    }
    let other = case.forge.create_case("case-2").unwrap();
    assert_eq!(other.number, 1);
    // Another case's repository is its own: case-1 did not move.
    assert_eq!(case.main(), case.pull.base);
    let missing = case.forge.push_unreviewed("no-such-case", 1);
    assert!(
        matches!(missing, Err(ForgeError::NoSuchRepo(_))),
        "{missing:?}"
    );
    let missing = case.forge.push_unreviewed(&case.name, 2);
    assert!(
        matches!(missing, Err(ForgeError::NoSuchPull { .. })),
        "{missing:?}"
    );
}

#[test]
fn updates_of_both_branches_come_in_the_order_git_wrote_them_with_git() {
    let case = Case::new();
    let first = case.forge.push_unreviewed(&case.name, 1).unwrap();
    let base = case.forge.commit_on_base(&case.name).unwrap();
    let second = case.forge.push_unreviewed(&case.name, 1).unwrap();
    let merge = case.forge.merge_as_other(&case.name, 1).unwrap();
    assert_eq!(case.parents(&merge), vec![base.clone(), second.clone()]);
    let truth = case
        .forge
        .truth(&case.name, 1, &case.pull.head, Some(merge.clone()))
        .unwrap();
    let head = |commit: &str| RefUpdate {
        branch: Branch::Head,
        commit: commit.into(),
        merged_head: None,
    };
    let expected = vec![
        head(&first),
        RefUpdate {
            branch: Branch::Base,
            commit: base,
            merged_head: None,
        },
        head(&second),
        RefUpdate {
            branch: Branch::Base,
            commit: merge,
            merged_head: Some(second.clone()),
        },
    ];
    assert_eq!(truth.updates, expected);
    // A merged pull request cannot be merged again by anyone.
    let again = case.forge.merge_as_other(&case.name, 1);
    assert!(
        matches!(again, Err(ForgeError::NotMerged { .. })),
        "{again:?}"
    );
}
