//! The worker's SMTP client: one message to one recipient over plain SMTP, with an outcome that
//! says whether the message can have been accepted.
//!
//! Built on lettre's blocking connection (`SmtpConnection`) rather than its `SmtpTransport`, so
//! that each step of the transaction is taken here and a failure is known by its step: a
//! failure before the message's text was sent leaves nothing at the server, while one after
//! may have left a message the server accepted (RFC 5321 section 6.1; `docs/smtp.md`).

use crate::maildir::{is_case_name, CASE_HEADER};
use lettre::address::Envelope;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::Mailbox;
use lettre::transport::smtp::client::SmtpConnection;
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, MailBodyParameter, MailParameter};
use lettre::transport::smtp::response::Response;
use lettre::Message;
use std::fmt;
use std::time::Duration;

/// The name the client greets with (`EHLO`).
const CLIENT_NAME: &str = "worker.interlock.test";

/// One message to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// The sender's address (`From` and the envelope's `MAIL FROM`).
    pub from: String,
    /// The one recipient's address (`To` and the envelope's `RCPT TO`).
    pub to: String,
    /// The subject.
    pub subject: String,
    /// The text of the message.
    pub body: String,
    /// The case it belongs to, sent as the [`CASE_HEADER`] field.
    pub case: String,
    /// Its message id without the angle brackets (`local@domain`), sent as `Message-ID`.
    pub message_id: String,
}

/// The step of the SMTP transaction a failure happened at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Connecting, the server's greeting and `EHLO`.
    Connect,
    /// `MAIL FROM`.
    Mail,
    /// `RCPT TO`.
    Rcpt,
    /// The `DATA` command, before any of the message's text.
    Data,
    /// The message's text, its final `.` and the server's answer to it.
    Message,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Connect => "connect",
            Step::Mail => "MAIL",
            Step::Rcpt => "RCPT",
            Step::Data => "DATA",
            Step::Message => "end of DATA",
        })
    }
}

/// The server took responsibility for the message: its `250` answer after the final `.`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The reply's code (250).
    pub code: u16,
    /// The reply's text (Postfix's reads `2.0.0 Ok: queued as <id>`).
    pub text: String,
}

impl Accepted {
    /// The queue id Postfix names in its reply, if it does.
    pub fn queue_id(&self) -> Option<&str> {
        queue_id(&self.text)
    }
}

/// Why a message was not accepted, and whether it may have been.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The message cannot be sent as given (an address that does not parse, a case name or
    /// message id with characters a header cannot carry). Nothing was sent.
    #[error("the message cannot be sent: {0}")]
    Invalid(String),
    /// The server answered with a failure code (4xx or 5xx): the message was not accepted.
    /// Settled: it is not sent.
    #[error("the server refused it at {step}: {code} {text}")]
    Refused {
        /// The step the refusal answered.
        step: Step,
        /// The reply code.
        code: u16,
        /// The reply's text.
        text: String,
    },
    /// The connection failed, or the server answered out of protocol, before any of the
    /// message's text was sent. Settled: it is not sent.
    #[error("no message was sent: {step} failed: {reason}")]
    NotSent {
        /// The step that failed.
        step: Step,
        /// What failed.
        reason: String,
    },
    /// The connection failed or timed out after the message's text began, without the
    /// server's answer to it. The server may have accepted it (and will then deliver it).
    #[error("outcome unknown: the connection failed after the message's text began: {reason}")]
    Unknown {
        /// What failed.
        reason: String,
    },
}

impl SendError {
    /// Whether the message is known not to be accepted (everything but [`SendError::Unknown`]).
    pub fn settled_not_sent(&self) -> bool {
        !matches!(self, SendError::Unknown { .. })
    }
}

/// Sends `email` to the server on `host:port` over plain SMTP, `timeout` for connecting and for
/// each read and write. `Ok` only when the server answered `250` after the final `.`.
pub fn send(
    host: &str,
    port: u16,
    email: &Email,
    timeout: Duration,
) -> Result<Accepted, SendError> {
    send_with(host, port, email, timeout, None)
}

/// As [`send`], calling `mid_data` once inside the transaction: after `DATA` was answered `354`
/// and the first half of the message's text was written and flushed, before the rest and the
/// final `.` (the place a client killed mid-message leaves a transaction the server discards).
pub fn send_with(
    host: &str,
    port: u16,
    email: &Email,
    timeout: Duration,
    mid_data: Option<&dyn Fn()>,
) -> Result<Accepted, SendError> {
    let message = build(email)?;
    let envelope = message.envelope().clone();
    let text = message.formatted();
    let hello = ClientId::Domain(CLIENT_NAME.to_string());
    let mut conn = SmtpConnection::connect((host, port), Some(timeout), &hello, None, None)
        .map_err(|e| before_text(Step::Connect, &e))?;
    let accepted = transaction(&mut conn, &envelope, &text, mid_data);
    // The outcome is known by now. QUIT is a courtesy whose failure changes nothing, said only
    // to a server that is answering; a broken or silent connection is just closed (dropped).
    if matches!(accepted, Ok(_) | Err(SendError::Refused { .. })) {
        let _ = conn.quit();
    }
    accepted
}

/// MAIL, RCPT, DATA and the message, each failure classified by its step.
fn transaction(
    conn: &mut SmtpConnection,
    envelope: &Envelope,
    text: &[u8],
    mid_data: Option<&dyn Fn()>,
) -> Result<Accepted, SendError> {
    let mut params = Vec::new();
    if !text.is_ascii() {
        params.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    conn.command(Mail::new(envelope.from().cloned(), params))
        .map_err(|e| before_text(Step::Mail, &e))?;
    for to in envelope.to() {
        conn.command(Rcpt::new(to.clone(), Vec::new()))
            .map_err(|e| before_text(Step::Rcpt, &e))?;
    }
    let data = conn
        .command(Data)
        .map_err(|e| before_text(Step::Data, &e))?;
    if !data.has_code(354) {
        return Err(SendError::NotSent {
            step: Step::Data,
            reason: format!("answered {} instead of 354", reply_text(&data)),
        });
    }
    // From here on the server holds part of the message: only its answer settles the outcome.
    // lettre writes and flushes each part before it asks for the next, so the hook runs with
    // the first half at the server and the rest, and the final `.`, not yet sent.
    let (first, rest) = text.split_at(text.len() / 2);
    let parts = [first, rest].into_iter().enumerate().map(|(i, part)| {
        if i == 1 {
            if let Some(hook) = mid_data {
                hook();
            }
        }
        part
    });
    match conn.message_iter(parts) {
        Ok(reply) if u16::from(reply.code()) == 250 => Ok(Accepted {
            code: 250,
            text: reply_text(&reply),
        }),
        // a positive answer that is not 250 has no meaning after DATA: treat as no answer
        Ok(reply) => Err(SendError::Unknown {
            reason: format!(
                "answered {} {}",
                u16::from(reply.code()),
                reply_text(&reply)
            ),
        }),
        Err(e) => Err(match e.status() {
            Some(code) => after_text(code.into(), answer_text(&e)),
            None => SendError::Unknown {
                reason: e.to_string(),
            },
        }),
    }
}

/// A failure code answering the message's text. A permanent refusal (5xx) is the server's
/// verdict on the message before it took it: settled, not sent. A transient one (4xx) can come
/// from the server's own failure after its queue file was already complete (Postfix answers
/// `451 4.3.0 Error: queue file write error` when its cleanup process dies after marking the
/// file ready, and the queue manager still delivers that file): the message may have been
/// accepted, so the outcome is unknown (`docs/smtp.md`).
fn after_text(code: u16, text: String) -> SendError {
    if (500..600).contains(&code) {
        SendError::Refused {
            step: Step::Message,
            code,
            text,
        }
    } else {
        SendError::Unknown {
            reason: format!("answered {code} {text} after the message's text"),
        }
    }
}

/// A failure before the message's text: a refusal if the server answered, else not sent.
fn before_text(step: Step, e: &lettre::transport::smtp::Error) -> SendError {
    match e.status() {
        Some(code) => SendError::Refused {
            step,
            code: code.into(),
            text: answer_text(e),
        },
        None => SendError::NotSent {
            step,
            reason: e.to_string(),
        },
    }
}

/// The text of a failure answer (lettre keeps it as the error's source).
fn answer_text(e: &lettre::transport::smtp::Error) -> String {
    std::error::Error::source(e)
        .map(|text| text.to_string())
        .unwrap_or_default()
}

/// The reply's lines joined with spaces.
fn reply_text(reply: &Response) -> String {
    reply.message().collect::<Vec<_>>().join(" ")
}

/// The message with its headers; refuses values a header cannot carry.
fn build(email: &Email) -> Result<Message, SendError> {
    let invalid = |what: &str, value: &str| SendError::Invalid(format!("{what} {value:?}"));
    let from: Mailbox = email
        .from
        .parse()
        .map_err(|_| invalid("sender", &email.from))?;
    let to: Mailbox = email
        .to
        .parse()
        .map_err(|_| invalid("recipient", &email.to))?;
    if !is_case_name(&email.case) {
        return Err(invalid("case name", &email.case));
    }
    if !is_message_id(&email.message_id) {
        return Err(invalid("message id", &email.message_id));
    }
    let case_header = HeaderName::new_from_ascii_str(CASE_HEADER);
    Message::builder()
        .from(from)
        .to(to)
        .subject(email.subject.clone())
        .message_id(Some(format!("<{}>", email.message_id)))
        .raw_header(HeaderValue::new(case_header, email.case.clone()))
        .body(email.body.clone())
        .map_err(|e| SendError::Invalid(e.to_string()))
}

/// A message id's inside (`local@domain`, RFC 5322 section 3.6.4, kept to `A-Z a-z 0-9 . _ - +`
/// on both sides of one `@`).
fn is_message_id(id: &str) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
    };
    id.split_once('@')
        .is_some_and(|(local, domain)| part(local) && part(domain))
}

/// The queue id in Postfix's reply to the end of DATA (`2.0.0 Ok: queued as 2B3DD98C6D9`).
fn queue_id(reply: &str) -> Option<&str> {
    let (_, rest) = reply.split_once("queued as ")?;
    let id = rest.split_whitespace().next()?;
    id.bytes().all(|b| b.is_ascii_alphanumeric()).then_some(id)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_transient_failure_after_the_text_is_unknown_and_a_permanent_one_is_settled() {
        let transient = super::after_text(451, "4.3.0 Error: queue file write error".into());
        assert!(!transient.settled_not_sent(), "{transient}");
        let permanent = super::after_text(552, "5.3.4 Message size exceeds limit".into());
        assert!(permanent.settled_not_sent(), "{permanent}");
        assert!(matches!(
            permanent,
            super::SendError::Refused {
                step: super::Step::Message,
                code: 552,
                ..
            }
        ));
    }
    use super::*;

    fn email() -> Email {
        Email {
            from: "agent@interlock.test".into(),
            to: "customer@interlock.test".into(),
            subject: "Your refund is on its way".into(),
            body: "Hello,\nthe money is on its way.\n".into(),
            case: "case-7".into(),
            message_id: "refund-7@interlock.test".into(),
        }
    }

    #[test]
    fn the_message_carries_the_case_header_and_the_message_id() {
        let message = build(&email()).unwrap();
        let text = String::from_utf8(message.formatted()).unwrap();
        let fields = crate::maildir::headers(text.as_bytes());
        let field = |name| crate::maildir::header(&fields, name);
        assert_eq!(field(CASE_HEADER), Some("case-7"));
        assert_eq!(field("Message-ID"), Some("<refund-7@interlock.test>"));
        assert_eq!(field("To"), Some("customer@interlock.test"));
        assert_eq!(message.envelope().to().len(), 1);
    }

    #[test]
    fn values_a_header_cannot_carry_are_refused_before_any_connection() {
        let cases = [
            Email {
                case: "a\r\nBcc: x@y".into(),
                ..email()
            },
            Email {
                case: String::new(),
                ..email()
            },
            Email {
                message_id: "no-at-sign".into(),
                ..email()
            },
            Email {
                message_id: "a@b>\r\nX: y".into(),
                ..email()
            },
            Email {
                to: "not an address".into(),
                ..email()
            },
        ];
        for bad in cases {
            // port 9 on loopback: were anything sent, this would fail as NotSent instead
            let e = send("127.0.0.1", 9, &bad, Duration::from_millis(200)).unwrap_err();
            assert!(matches!(e, SendError::Invalid(_)), "{bad:?}: {e}");
            assert!(e.settled_not_sent());
        }
    }

    #[test]
    fn postfix_queue_ids_are_read_from_the_reply() {
        assert_eq!(
            queue_id("2.0.0 Ok: queued as 2B3DD98C6D9"),
            Some("2B3DD98C6D9")
        );
        assert_eq!(
            queue_id("2.0.0 Ok: queued as 4RQ4Vd2Qm7z9sWL extra"),
            Some("4RQ4Vd2Qm7z9sWL")
        );
        assert_eq!(queue_id("2.0.0 Ok"), None);
        assert_eq!(queue_id("2.0.0 Ok: queued as <x>"), None);
    }

    #[test]
    fn only_an_unknown_outcome_is_unsettled() {
        let refused = SendError::Refused {
            step: Step::Message,
            code: 552,
            text: String::new(),
        };
        let not_sent = SendError::NotSent {
            step: Step::Connect,
            reason: String::new(),
        };
        let unknown = SendError::Unknown {
            reason: String::new(),
        };
        assert!(refused.settled_not_sent() && not_sent.settled_not_sent());
        assert!(!unknown.settled_not_sent());
    }
}
