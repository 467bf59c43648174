//! The one effect: the email to the customer over SMTP, with the crash points around it, and
//! the one premise: the refund's status, read from Stripe.

use super::case::Decision;
use super::error::NotifyError;
use crate::billing_credit::{fire, Crash, CrashPoint};
use mailhost::client::{Accepted, Email, SendError};
use std::time::Duration;
use stripe::{Client, Params};
use verify::scenarios::notify::MAIL_DOMAIN;

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
/// anything recorded it.
pub(crate) fn send_email(
    server: &MailServer,
    decision: &Decision,
    message_id: &str,
    crash: Option<&Crash>,
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
    let accepted = mailhost::client::send(&server.host, server.port, &email, server.timeout)?;
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

/// A hand-written column's message id: the case, the column and the phase (each send is a new
/// message; nothing looks it up).
pub(crate) fn plain_message_id(decision: &Decision, column: &str, phase: &str) -> String {
    format!("<{}.{column}.{phase}@{MAIL_DOMAIN}>", decision.case)
}
