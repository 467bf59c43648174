//! The one effect: the email to the customer over SMTP, with the crash points around it, and
//! the one premise: the refund's status, read from Stripe.

use super::case::Decision;
use super::error::NotifyError;
use crate::billing_credit::{fire, Crash, CrashPoint};
use mailhost::client::{Accepted, Email, SendError};
use std::time::Duration;
use stripe::{Client, Params};
use verify::scenarios::notify::MAIL_DOMAIN;

/// A hook called inside the SMTP `DATA`, with half of the message's text at the server
/// (`mailhost::client::send_with`): where a nemesis kills a worker mid-message.
pub type MidData = std::sync::Arc<dyn Fn() + Send + Sync>;

/// Where the mail server listens and how long the client waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailServer {
    /// Its host (127.0.0.1).
    pub host: String,
    /// Its SMTP port.
    pub port: u16,
    /// Connect and per-step timeout.
    pub timeout: Duration,
}

/// The sender of every email.
pub fn sender() -> String {
    format!("support@{MAIL_DOMAIN}")
}

/// Sends the decision's email with `message_id` (with angle brackets), the case's header set.
///
/// The crash hook fires right before the SMTP transaction ([`CrashPoint::BeforeSend`]) and
/// right after the server's `250` to the message's text ([`CrashPoint::AfterSend`]), before
/// anything recorded it; `mid_data` runs inside the `DATA`, between them.
pub(crate) fn send_email(
    server: &MailServer,
    decision: &Decision,
    message_id: &str,
    crash: Option<&Crash>,
    mid_data: Option<&MidData>,
) -> Result<Accepted, SendError> {
    let email = Email {
        from: sender(),
        to: decision.to.clone(),
        subject: decision.subject.clone(),
        body: decision.body.clone(),
        case: decision.case.clone(),
        message_id: message_id
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_owned(),
    };
    fire(crash, CrashPoint::BeforeSend);
    let hook = mid_data.map(|h| h.as_ref() as &dyn Fn());
    let accepted =
        mailhost::client::send_with(&server.host, server.port, &email, server.timeout, hook)?;
    fire(crash, CrashPoint::AfterSend);
    Ok(accepted)
}

/// The refund's `status` as Stripe answers now (`succeeded`, `pending`, `failed`, ...).
pub fn refund_status(stripe: &Client, refund: &str) -> Result<String, NotifyError> {
    let answer = stripe
        .get(&format!("/v1/refunds/{refund}"), &Params::new())
        .map_err(|source| NotifyError::Refund {
            refund: refund.to_owned(),
            source,
        })?;
    answer
        .body
        .get("status")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| NotifyError::NoStatus(refund.to_owned()))
}

/// A hand-written column's message id: the case, the column, the phase and the sending process
/// and instant, so that every send is a message of its own, as a mail client makes it (two
/// restarts that both send give the customer two messages with two ids; nothing looks them up).
pub(crate) fn plain_message_id(decision: &Decision, column: &str, phase: &str) -> String {
    format!(
        "<{}.{column}.{phase}.{}.{}@{MAIL_DOMAIN}>",
        decision.case,
        std::process::id(),
        crate::billing_credit::now_ms()
    )
}
