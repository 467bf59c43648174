//! The client's outcome by the step a session fails at, against a scripted server: a failure
//! before the message's text is settled (not sent), a failure after it is unknown.

use crate::fixture::email;
use crate::scripted::{Ending, Scripted};
use mailhost::client::{send, SendError, Step};
use std::time::Duration;

fn send_to(server: &Scripted, timeout: Duration) -> Result<mailhost::client::Accepted, SendError> {
    send("127.0.0.1", server.port, &email("c1", 1), timeout)
}

#[test]
fn a_250_after_the_final_dot_is_accepted_and_names_the_queue_id() {
    let server = Scripted::start(Ending::AnswerMessage("250 2.0.0 Ok: queued as 4F3A2B"));
    let accepted = send_to(&server, Duration::from_secs(5)).unwrap();
    assert_eq!(accepted.code, 250);
    assert_eq!(accepted.queue_id(), Some("4F3A2B"));
    let text = server.finish();
    assert!(text.contains("X-Interlock-Case: c1\r\n"), "{text}");
    assert!(
        text.contains("Message-ID: <refund-c1-1@interlock.test>\r\n"),
        "{text}"
    );
}

#[test]
fn a_permanent_failure_after_the_final_dot_is_a_refusal() {
    let server = Scripted::start(Ending::AnswerMessage("554 5.7.1 message rejected"));
    let e = send_to(&server, Duration::from_secs(5)).unwrap_err();
    match &e {
        SendError::Refused { step, code, text } => {
            assert_eq!((*step, *code), (Step::Message, 554));
            assert!(text.contains("message rejected"), "{text}");
        }
        other => panic!("{other}"),
    }
    assert!(e.settled_not_sent());
    server.finish();
}

#[test]
fn a_transient_failure_after_the_final_dot_leaves_the_outcome_unknown() {
    // Postfix answers 451 when its cleanup process fails, possibly after the queue file was
    // complete, and then delivers it: the client cannot take the 451 as "not sent".
    let server = Scripted::start(Ending::AnswerMessage("451 4.3.0 try again later"));
    let e = send_to(&server, Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(&e, SendError::Unknown { reason } if reason.contains("451")),
        "{e}"
    );
    assert!(!e.settled_not_sent());
    server.finish();
}

#[test]
fn a_refused_recipient_is_a_refusal_at_rcpt() {
    let server = Scripted::start(Ending::AnswerRcpt("554 5.7.1 Relay access denied"));
    let e = send_to(&server, Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(
            e,
            SendError::Refused {
                step: Step::Rcpt,
                code: 554,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(server.finish(), "");
}

#[test]
fn a_connection_closed_before_the_message_is_settled_not_sent() {
    let server = Scripted::start(Ending::CloseAfterGreeting);
    let e = send_to(&server, Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(
            e,
            SendError::NotSent {
                step: Step::Connect,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.settled_not_sent());
    server.finish();
}

#[test]
fn nothing_listening_is_settled_not_sent() {
    // a port that was free a moment ago
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = send("127.0.0.1", port, &email("c1", 1), Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(
            e,
            SendError::NotSent {
                step: Step::Connect,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_connection_closed_after_the_final_dot_is_unknown() {
    let server = Scripted::start(Ending::CloseAfterMessage);
    let e = send_to(&server, Duration::from_secs(5)).unwrap_err();
    assert!(matches!(e, SendError::Unknown { .. }), "{e}");
    assert!(!e.settled_not_sent());
    assert!(server.finish().contains("X-Interlock-Case: c1"));
}

#[test]
fn a_connection_closed_once_the_message_began_is_unknown() {
    let server = Scripted::start(Ending::CloseAfterDataCommand);
    let e = send_to(&server, Duration::from_secs(5)).unwrap_err();
    assert!(matches!(e, SendError::Unknown { .. }), "{e}");
    server.finish();
}

#[test]
fn no_answer_to_the_final_dot_within_the_timeout_is_unknown() {
    let server = Scripted::start(Ending::SilentAfterMessage);
    let e = send_to(&server, Duration::from_millis(300)).unwrap_err();
    assert!(matches!(e, SendError::Unknown { .. }), "{e}");
    server.finish();
}
