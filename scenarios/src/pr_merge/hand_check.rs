//! The `hand_check` column: the careful merge a good engineer writes by hand.
//!
//! Before every send, first run and restart alike, in the order the scenario defines it:
//! 1. look its own merge up: a commit on the base branch whose message carries the trailer
//!    `Merge-Ticket: <repo>#<pull>` → `FOUND_BY_LOOKUP`;
//! 2. re-read the pull request: still open and unmerged → else `REFUSED:already_merged` (or
//!    `REFUSED:closed`); its head is still the reviewed one → else `REFUSED:head_moved`;
//! 3. the approval, re-read from `case.json`, is unrevoked, unexpired and names the pull
//!    request → else `REFUSED:approval`;
//! 4. log `send`, merge with `sha = H` and the trailer, log `sent` → `MERGED`, or
//!    `REFUSED_BY_SERVICE:<status>` when the service refused.
//!
//! Every step is appended to `hand_check.log` (JSONL, fsync per line): a plain file written by
//! the same worker, informative and not tamper-evident.

use super::case::{CaseFile, Decision};
use super::error::MergeError;
use super::merge::{put_merge, refused_by_service, trailer, BASE, LOOKUP_PAGES, TICKET_TRAILER};
use super::AGENT;
use crate::billing_credit::hand_check::{Phase, PlainLog};
use crate::billing_credit::{fire, now_ms, Crash, CrashPoint};
use forge::client::{Client, ClientError};
use serde_json::json;
use std::path::Path;
use verify::billing_credit::{FOUND_BY_LOOKUP, REFUSED_APPROVAL};
use verify::scenarios::pr_merge::MERGED;

/// The hand-written log's file name in the cell directory.
pub const LOG_FILE: &str = "hand_check.log";

/// The ticket a case's merge is tagged with: `<repo>#<pull>`.
pub fn ticket(case: &CaseFile) -> String {
    format!("{}#{}", case.repo, case.pull)
}

/// Runs the checks and, if they pass, merges. Each step's log line is durable before its crash
/// point fires.
pub(crate) fn send(
    client: &Client,
    cell_dir: &Path,
    decision: &Decision,
    phase: Phase,
    crash: Option<&Crash>,
) -> Result<String, MergeError> {
    let case = CaseFile::load(cell_dir)?;
    let ticket = ticket(&case);
    let log = PlainLog {
        path: cell_dir.join(LOG_FILE),
        agent: AGENT,
        subject: ("ticket", &ticket),
        phase,
    };
    let needle = trailer(TICKET_TRAILER, &ticket);
    let found = client
        .find_commit(BASE, &needle, LOOKUP_PAGES)
        .map_err(MergeError::forge(format!("look up the merge of {ticket}")))?;
    log.step(
        "lookup",
        json!({ "found": found.as_ref().map(|c| c.sha.clone()) }),
    )?;
    fire(crash, CrashPoint::Lookup);
    if found.is_some() {
        return Ok(FOUND_BY_LOOKUP.to_owned());
    }
    let pull = client
        .pull(decision.pull)
        .map_err(MergeError::forge(format!(
            "read pull request #{}",
            decision.pull
        )))?;
    let refusal = if pull.merged {
        Some("already_merged")
    } else if pull.state != "open" {
        Some("closed")
    } else if pull.head_sha != decision.sha {
        Some("head_moved")
    } else {
        None
    };
    if let Some(why) = refusal {
        log.step("refused", json!({ "why": why, "head": pull.head_sha }))?;
        return Ok(format!("REFUSED:{why}"));
    }
    log.step(
        "premises",
        json!({ "head": pull.head_sha, "state": pull.state }),
    )?;
    fire(crash, CrashPoint::Premises);
    // The approval, read afresh at this step: it may have been revoked since the case was read.
    let approval = CaseFile::load(cell_dir)?.approval;
    if !approval.covers(decision.pull, now_ms()) {
        log.step(
            "refused",
            json!({ "why": "approval", "approval": approval }),
        )?;
        return Ok(REFUSED_APPROVAL.to_owned());
    }
    log.step("approval", json!({ "approval": approval.id }))?;
    fire(crash, CrashPoint::Approval);
    log.step("send", json!({ "sha": decision.sha }))?;
    fire(crash, CrashPoint::SendLogged);
    let status = match put_merge(
        client,
        decision,
        Some(&decision.sha),
        &[(TICKET_TRAILER, &ticket)],
        crash,
    ) {
        Ok(merge) => {
            log.step("sent", json!({ "merge_commit": merge }))?;
            MERGED.to_owned()
        }
        Err(ClientError::Refused { status, message }) => {
            log.step("sent", json!({ "refused": status, "message": message }))?;
            refused_by_service(status)
        }
        Err(e) => {
            return Err(MergeError::Forge {
                what: format!("merge pull request #{}", decision.pull),
                source: e,
            })
        }
    };
    fire(crash, CrashPoint::SentLogged);
    Ok(status)
}
