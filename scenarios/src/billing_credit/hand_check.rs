//! The `hand_check` column: the idiomatic careful version a good engineer writes by hand.
//!
//! Before every send, first run and restart alike:
//! 1. look this case's credit up (balance transactions tagged with the case) → `FOUND_BY_LOOKUP`;
//! 2. the approval, re-read from `case.json`, is unrevoked and covers the amount → else
//!    `REFUSED:approval`;
//! 3. the premises, read afresh at this step, equal the ones saved in `decision.json` → else
//!    `REFUSED:stale_premise`;
//! 4. log `send`, POST under `goodwill-credit-<case>`, log `sent` → `CREDITED` or
//!    `REPLAYED_BY_STRIPE`.
//!
//! Every step is appended to `hand_check.log` (JSONL, fsync per line). The log is a plain file
//! written by the same worker: informative, not tamper-evident.

use super::approval::covers;
use super::reads::{facts, read_ledger};
use super::target::post_credit;
use super::{
    events::{announce_read, monotonic_us},
    fire, now_ms, CaseFile, Crash, CrashPoint, ScenarioError, AGENT, HAND_CHECK_LOG,
};
use serde_json::{json, Map, Value};
use std::ops::ControlFlow;
use std::path::Path;
use verify::protocol::{RefusalCode, Status};
use verify::results::{Approval, Decision};
use verify::scenarios::billing_credit::answer;

/// Which worker phase wrote a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Decide,
    Restart,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Decide => "decide",
            Phase::Restart => "restart",
        }
    }
}

/// A hand-written column's plain JSONL log: every line is
/// `{ts_ms, agent, <subject key>: <subject>, phase, step, ...fields}`, fsynced.
pub(crate) struct PlainLog<'a> {
    pub(crate) path: std::path::PathBuf,
    pub(crate) agent: &'static str,
    /// `("case_id", case)` for billing_credit, `("ticket", ticket)` for shared_cap.
    pub(crate) subject: (&'static str, &'a str),
    pub(crate) phase: Phase,
}

impl PlainLog<'_> {
    /// Appends one step's line and fsyncs it.
    pub(crate) fn step(&self, step: &str, fields: Value) -> Result<(), ScenarioError> {
        let mut line = Map::new();
        line.insert("ts_ms".into(), json!(now_ms()));
        line.insert("agent".into(), json!(self.agent));
        line.insert(self.subject.0.into(), json!(self.subject.1));
        line.insert("phase".into(), json!(self.phase.as_str()));
        line.insert("step".into(), json!(step));
        if let Value::Object(extra) = fields {
            line.extend(extra);
        }
        super::append_line_durably(&self.path, &Value::Object(line))
    }
}

/// A column's answer: its status and the credit id (found or sent), if any.
type Outcome = (String, Option<String>);

/// Runs the hand-written checks and, if they pass, sends. Returns the status and the credit id
/// (found or sent), if any. Each step's log line is durable before its crash point fires.
pub(crate) fn send(
    client: &stripe::Client,
    cell_dir: &Path,
    case: &CaseFile,
    decision: &Decision,
    phase: Phase,
    crash: Option<&Crash>,
) -> Result<Outcome, ScenarioError> {
    let log = PlainLog {
        path: cell_dir.join(HAND_CHECK_LOG),
        agent: AGENT,
        subject: ("case_id", &case.case_id),
        phase,
    };
    if let ControlFlow::Break(found) = lookup(client, case, &log)? {
        return Ok(found);
    }
    fire(crash, CrashPoint::Lookup);
    let approval = match check_approval(cell_dir, decision, &log)? {
        ControlFlow::Continue(approval) => approval,
        ControlFlow::Break(refused) => return Ok(refused),
    };
    fire(crash, CrashPoint::Approval);
    if let ControlFlow::Break(refused) = check_premises(client, case, decision, &log)? {
        return Ok(refused);
    }
    fire(crash, CrashPoint::Premises);
    send_logged(client, case, decision, &approval, &log, crash)
}

/// 1. Lookup: has this case's credit already landed? Stops with `FOUND_BY_LOOKUP` if so.
fn lookup(
    client: &stripe::Client,
    case: &CaseFile,
    log: &PlainLog<'_>,
) -> Result<ControlFlow<Outcome>, ScenarioError> {
    let ledger = read_ledger(client, case)?;
    if let Some(found) = ledger.case_credits.last() {
        log.step("lookup", json!({ "found": found.id }))?;
        return Ok(ControlFlow::Break((
            answer::FOUND_BY_LOOKUP.into(),
            Some(found.id.clone()),
        )));
    }
    log.step("lookup", json!({ "found": null }))?;
    Ok(ControlFlow::Continue(()))
}

/// 2. Approval, fresh from case.json: goes on with it when it covers the amount, else stops
///    with `REFUSED:approval`.
fn check_approval(
    cell_dir: &Path,
    decision: &Decision,
    log: &PlainLog<'_>,
) -> Result<ControlFlow<Outcome, Approval>, ScenarioError> {
    let started = monotonic_us();
    let approval = CaseFile::load(cell_dir)?.approval;
    announce_read("approval", started);
    if !covers(&approval, decision.amount) {
        log.step("approval", json!({ "refused": approval }))?;
        return Ok(ControlFlow::Break((answer::REFUSED_APPROVAL.into(), None)));
    }
    log.step("approval", json!({ "approval": approval }))?;
    Ok(ControlFlow::Continue(approval))
}

/// 3. Premises, read afresh at this step (the reference's `facts()`, the same reads the
///    gate's premise check makes), against the saved ones; stops with `REFUSED:stale_premise`
///    when they differ. The lookup's ledger is not reused: a change that lands between the
///    lookup and this step must be seen here.
fn check_premises(
    client: &stripe::Client,
    case: &CaseFile,
    decision: &Decision,
    log: &PlainLog<'_>,
) -> Result<ControlFlow<Outcome>, ScenarioError> {
    let now = facts(client, case)?;
    if now != decision.premises {
        log.step(
            "premises",
            json!({ "refused": { "was": decision.premises, "now": now } }),
        )?;
        return Ok(ControlFlow::Break((
            Status::Refused(RefusalCode::StalePremise).as_str().into(),
            None,
        )));
    }
    log.step("premises", json!({ "premises": now }))?;
    Ok(ControlFlow::Continue(()))
}

/// 4. Send, logged before and after: `CREDITED` or `REPLAYED_BY_STRIPE`.
fn send_logged(
    client: &stripe::Client,
    case: &CaseFile,
    decision: &Decision,
    approval: &Approval,
    log: &PlainLog<'_>,
    crash: Option<&Crash>,
) -> Result<Outcome, ScenarioError> {
    let key = case.idempotency_key();
    log.step(
        "send",
        json!({
            "key": key,
            "amount": decision.amount,
            "approval": approval,
            "premises": decision.premises,
        }),
    )?;
    fire(crash, CrashPoint::SendLogged);
    let posted = post_credit(
        client,
        case,
        &case.customer,
        decision.amount,
        &decision.description,
        &key,
        None,
        crash,
    )?;
    log.step(
        "sent",
        json!({ "credit": posted.id, "amount": posted.amount, "replayed": posted.replayed }),
    )?;
    fire(crash, CrashPoint::SentLogged);
    let status = if posted.replayed {
        answer::REPLAYED_BY_STRIPE
    } else {
        answer::CREDITED
    };
    Ok((status.into(), Some(posted.id)))
}

/// Every line of `<cell_dir>/hand_check.log`, in order (empty when the file does not exist).
/// A torn last line (no trailing newline, as a kill mid-write leaves) is skipped; any other line
/// that is not a JSON object is an error naming the line.
pub fn read_hand_check_log(cell_dir: &Path) -> Result<Vec<Value>, ScenarioError> {
    read_jsonl(&cell_dir.join(HAND_CHECK_LOG))
}

/// The complete lines of a plain JSONL log (an absent file is empty; a torn last line, without
/// its newline, is left out).
pub(crate) fn read_jsonl(path: &Path) -> Result<Vec<Value>, ScenarioError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ScenarioError::io("read", path)(e)),
    };
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    let mut out = Vec::new();
    for (i, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            ScenarioError::Invalid(format!(
                "{} line {}: not a JSON log line: {e}",
                path.display(),
                i + 1
            ))
        })?;
        out.push(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn log_lines_carry_the_common_fields_and_a_torn_tail_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = PlainLog {
            path: dir.path().join(HAND_CHECK_LOG),
            agent: AGENT,
            subject: ("case_id", "case-1"),
            phase: Phase::Restart,
        };
        log.step("lookup", json!({"found": null})).unwrap();
        log.step("sent", json!({"credit": "cbtxn_1", "replayed": false}))
            .unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(HAND_CHECK_LOG))
            .unwrap();
        f.write_all(b"{\"ts_ms\": 1, \"st").unwrap();
        let lines = read_hand_check_log(dir.path()).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["agent"], AGENT);
        assert_eq!(lines[0]["case_id"], "case-1");
        assert_eq!(lines[0]["phase"], "restart");
        assert_eq!(lines[0]["step"], "lookup");
        assert!(lines[0]["found"].is_null());
        assert_eq!(lines[1]["credit"], "cbtxn_1");
        assert!(lines[1]["ts_ms"].as_u64().unwrap() > 0);
        assert!(read_hand_check_log(&dir.path().join("none"))
            .unwrap()
            .is_empty());
    }
}
