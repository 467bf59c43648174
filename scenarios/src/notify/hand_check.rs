//! The hand-written columns: `hand_check`, the careful version, and `hand_resend`, the common
//! variant that sends again when unsure.
//!
//! Both keep a plain log (`hand_check.log`, JSONL, fsync per line) with a line before the send
//! (`send`) and one after it (`sent`). On restart, a log whose last `send` has no `sent` after
//! it shows a send begun and never ended: the email may or may not have gone out, and nothing
//! can be asked. `hand_check` does not guess: it logs `escalated` and answers `ESCALATED` (a
//! person decides). `hand_resend` logs `unsure` and goes on as if nothing was sent. Otherwise
//! (and in the first run), before the send both re-read the refund (still `succeeded`, else
//! `REFUSED:refund_not_succeeded`) and the approval (else `REFUSED:approval`).

use super::case::{CaseFile, Decision};
use super::error::NotifyError;
use super::mail::{plain_message_id, refund_status, send_email};
use super::Worker;
use super::AGENT;
use crate::billing_credit::hand_check::{read_jsonl, Phase, PlainLog};
use crate::billing_credit::{fire, now_ms, Crash, CrashPoint};
use serde_json::{json, Value};
use verify::scenarios::notify::{ESCALATED, REFUSED_APPROVAL, REFUSED_REFUND, SENT};

/// The hand-written log's file name in the cell directory.
pub const LOG_FILE: &str = "hand_check.log";

/// What the log says of the last send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LastSend {
    /// No send was begun.
    None,
    /// The last send was begun and ended (`sent` after `send`).
    Ended,
    /// The last send was begun and never ended: it may have gone out.
    Unfinished,
}

/// Reads what the log's lines say of the last send.
pub(crate) fn last_send(lines: &[Value]) -> LastSend {
    let step = |l: &Value| l.get("step").and_then(Value::as_str).map(str::to_owned);
    let steps: Vec<String> = lines.iter().filter_map(step).collect();
    match steps.iter().rposition(|s| s == "send") {
        None => LastSend::None,
        Some(i) if steps[i + 1..].iter().any(|s| s == "sent") => LastSend::Ended,
        Some(_) => LastSend::Unfinished,
    }
}

/// Runs the column: on restart, first what the log says; then the checks and the send. Each
/// log line is durable before the next step.
pub(crate) fn send(
    w: &Worker<'_>,
    decision: &Decision,
    phase: Phase,
    resend: bool,
    crash: Option<&Crash>,
) -> Result<String, NotifyError> {
    let (stripe, server, cell_dir) = (w.stripe, w.server, w.cell_dir);
    let column = if resend { "hand_resend" } else { "hand_check" };
    let log = PlainLog {
        path: cell_dir.join(LOG_FILE),
        agent: AGENT,
        subject: ("case", &decision.case),
        phase,
    };
    if phase == Phase::Restart {
        // A missing log shows no send begun. A log that exists but cannot be read (a damaged
        // line) cannot show that none was: it is as unsure as a send begun and never ended.
        let last = match read_jsonl(&log.path) {
            Ok(lines) => last_send(&lines),
            Err(_) => LastSend::Unfinished,
        };
        match last {
            LastSend::Ended => return Ok(SENT.to_owned()),
            LastSend::Unfinished if !resend => {
                log.step(
                    "escalated",
                    json!({ "why": "a send was begun and never ended" }),
                )?;
                return Ok(ESCALATED.to_owned());
            }
            LastSend::Unfinished => log.step("unsure", json!({ "resending": true }))?,
            LastSend::None => {}
        }
    }
    let status = refund_status(stripe, &decision.refund)?;
    if status != "succeeded" {
        log.step(
            "refused",
            json!({ "why": "refund", "refund_status": status }),
        )?;
        return Ok(REFUSED_REFUND.to_owned());
    }
    fire(crash, CrashPoint::Premises);
    // The approval, read afresh at this step: it may have been revoked since the case was read.
    let approval = CaseFile::load(cell_dir)?.approval;
    if !approval.covers(&decision.case, now_ms()) {
        log.step(
            "refused",
            json!({ "why": "approval", "approval": approval }),
        )?;
        return Ok(REFUSED_APPROVAL.to_owned());
    }
    fire(crash, CrashPoint::Approval);
    let message_id = plain_message_id(decision, column, phase_name(phase));
    log.step("send", json!({ "message_id": message_id }))?;
    fire(crash, CrashPoint::SendLogged);
    let accepted = send_email(server, decision, &message_id, crash, w.mid_data.as_ref()).map_err(
        |source| NotifyError::Mail {
            case: decision.case.clone(),
            source,
        },
    )?;
    log.step("sent", json!({ "reply": accepted.text }))?;
    fire(crash, CrashPoint::SentLogged);
    Ok(SENT.to_owned())
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Decide => "decide",
        Phase::Restart => "restart",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(names: &[&str]) -> Vec<Value> {
        names.iter().map(|s| json!({ "step": s })).collect()
    }

    #[test]
    fn a_send_begun_and_never_ended_is_told_from_one_that_ended_and_from_none() {
        assert_eq!(last_send(&steps(&[])), LastSend::None);
        assert_eq!(last_send(&steps(&["refused"])), LastSend::None);
        assert_eq!(last_send(&steps(&["send"])), LastSend::Unfinished);
        assert_eq!(last_send(&steps(&["send", "sent"])), LastSend::Ended);
        // A second send begun after an ended one is unfinished again.
        assert_eq!(
            last_send(&steps(&["send", "sent", "unsure", "send"])),
            LastSend::Unfinished
        );
    }
}
