//! What the worker's client sends lands in the Maildir once, under its case; what the server
//! refuses does not land at all.

use crate::fixture::{email, Host};
use mailhost::client::{SendError, Step};
use mailhost::{MailError, MESSAGE_SIZE_LIMIT};

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn an_accepted_message_is_delivered_once_with_its_headers() {
    let Some(h) = Host::start() else { return };
    let accepted = h.send(&email("case-1", 1)).unwrap();
    let queue_id = accepted.queue_id().expect("Postfix names the queue id");
    let delivered = h.delivered("case-1");
    assert_eq!(delivered.len(), 1);
    let d = &delivered[0];
    assert_eq!(
        d.message_id.as_deref(),
        Some("<refund-case-1-1@interlock.test>")
    );
    assert_eq!(d.delivered_to.as_deref(), Some("customer@interlock.test"));
    assert_eq!(d.subject.as_deref(), Some("Your refund is on its way"));
    let log = std::fs::read_to_string(h.host.log_path()).unwrap();
    assert!(log.contains(&format!("{queue_id}: to=<customer@interlock.test>")));
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_second_send_is_a_second_message() {
    let Some(h) = Host::start() else { return };
    let notice = email("twice", 1);
    h.send(&notice).unwrap();
    h.send(&notice).unwrap();
    let delivered = h.delivered("twice");
    assert_eq!(delivered.len(), 2);
    assert_eq!(delivered[0].message_id, delivered[1].message_id);
    assert_ne!(delivered[0].file, delivered[1].file);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn cases_are_told_apart_by_their_header() {
    let Some(h) = Host::start() else { return };
    h.send(&email("left", 1)).unwrap();
    h.send(&email("right", 1)).unwrap();
    h.send(&email("right", 2)).unwrap();
    assert_eq!(h.delivered("left").len(), 1);
    assert_eq!(h.delivered("right").len(), 2);
    assert!(h.delivered("neither").is_empty());
    assert!(matches!(
        h.host.messages("not a case"),
        Err(MailError::InvalidCase(_))
    ));
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_recipient_outside_the_domain_is_refused_at_rcpt_and_nothing_is_queued() {
    let Some(h) = Host::start() else { return };
    let outside = mailhost::client::Email {
        to: "customer@example.com".into(),
        ..email("relay", 1)
    };
    let e = h.send(&outside).unwrap_err();
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
    assert!(h.delivered("relay").is_empty());
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_message_over_the_size_limit_is_refused_at_the_end_of_data() {
    let Some(h) = Host::start() else { return };
    let big = mailhost::client::Email {
        body: "0123456789abcdef\n".repeat(MESSAGE_SIZE_LIMIT as usize / 16),
        ..email("big", 1)
    };
    let e = h.send(&big).unwrap_err();
    assert!(
        matches!(
            e,
            SendError::Refused {
                step: Step::Message,
                code: 552,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.settled_not_sent());
    assert!(h.delivered("big").is_empty());
}
