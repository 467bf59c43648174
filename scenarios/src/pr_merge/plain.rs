//! `no_check` and `native`: the saved decision sent as it is, first run and restart alike.
//! `no_check` sends it without `sha`, so the service merges whatever the head is then;
//! `native` passes `sha = H`, the service's own precondition, and checks nothing else.

use super::case::Decision;
use super::error::MergeError;
use super::merge::{put_merge, refused_by_service};
use crate::billing_credit::Crash;
use forge::client::{Client, ClientError};
use verify::scenarios::pr_merge::MERGED;

/// Sends the decision's merge, with the reviewed head as `sha` when `native`; `MERGED`, or
/// `REFUSED_BY_SERVICE:<status>` when the service refused. An answer that never came is an
/// error: neither column can tell what happened.
pub(crate) fn send(
    client: &Client,
    decision: &Decision,
    native: bool,
    crash: Option<&Crash>,
) -> Result<String, MergeError> {
    let sha = native.then_some(decision.sha.as_str());
    match put_merge(client, decision, sha, &[], crash) {
        Ok(_) => Ok(MERGED.to_owned()),
        Err(ClientError::Refused { status, .. }) => Ok(refused_by_service(status)),
        Err(e) => Err(MergeError::Forge {
            what: format!("merge pull request #{}", decision.pull),
            source: e,
        }),
    }
}
