//! The one effect: the merge request (`PUT .../pulls/{n}/merge`), with the crash points around
//! it, the trailers the lookups search by, and the statuses the hand-written columns answer.

use super::case::Decision;
use crate::billing_credit::{fire, Crash, CrashPoint};
use forge::client::{Client, ClientError, MergeRequest};

/// The branch every pull request merges into.
pub const BASE: &str = "main";
/// The trailer `hand_check` writes into its merge commit and looks its own merge up by.
pub const TICKET_TRAILER: &str = "Merge-Ticket";
/// The trailer the gate writes into its merge commit and looks the effect up by.
pub const EFFECT_TRAILER: &str = "Interlock-Effect";
/// The trailer naming the gate's DISPATCHED entry the merge was sent under.
pub const DISPATCH_TRAILER: &str = "Interlock-Dispatch";
/// Pages of the base branch's commits a lookup reads (newest first) before it gives up.
pub const LOOKUP_PAGES: u32 = 20;

/// A hand-written column's status when the service refused the merge: the HTTP status it
/// answered (405 not mergeable or already merged, 409 head moved, 422 bad input).
pub fn refused_by_service(status: u16) -> String {
    format!("REFUSED_BY_SERVICE:{status}")
}

/// A trailer line: `Key: value`.
pub fn trailer(key: &str, value: &str) -> String {
    format!("{key}: {value}")
}

/// Sends the merge of `decision` with `sha` as the service's precondition (`None`: none) and
/// `trailers` in the commit message; returns the merge commit.
///
/// The crash hook fires right before the request ([`CrashPoint::BeforeSend`]) and right after
/// its answer was read ([`CrashPoint::AfterSend`]), before anything recorded it.
pub(crate) fn put_merge(
    client: &Client,
    decision: &Decision,
    sha: Option<&str>,
    trailers: &[(&str, &str)],
    crash: Option<&Crash>,
) -> Result<String, ClientError> {
    let lines: Vec<String> = trailers.iter().map(|(k, v)| trailer(k, v)).collect();
    let request = MergeRequest {
        sha: sha.map(str::to_owned),
        commit_title: decision.title.clone(),
        commit_message: lines.join("\n"),
    };
    fire(crash, CrashPoint::BeforeSend);
    let merged = client.merge(decision.pull, &request)?;
    fire(crash, CrashPoint::AfterSend);
    Ok(merged)
}
