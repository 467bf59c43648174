//! `no_check`: the saved decision sent as it is, first run and restart alike. It re-checks
//! nothing and remembers nothing of a send, so a restart after a crash sends the email again.

use super::case::Decision;
use super::error::NotifyError;
use super::mail::{plain_message_id, send_email, MailServer, MidData};
use crate::billing_credit::Crash;
use verify::scenarios::notify::SENT;

/// Sends the decision's email; `SENT` once the server accepted it. A send the server refused,
/// or whose outcome is unknown, is an error: the column cannot tell what happened.
pub(crate) fn send(
    server: &MailServer,
    decision: &Decision,
    phase: &str,
    crash: Option<&Crash>,
    mid_data: Option<&MidData>,
) -> Result<String, NotifyError> {
    let message_id = plain_message_id(decision, "no_check", phase);
    send_email(server, decision, &message_id, crash, mid_data).map_err(|source| {
        NotifyError::Mail {
            case: decision.case.clone(),
            source,
        }
    })?;
    Ok(SENT.to_owned())
}
