//! A client that disappears: before the final `.` the server keeps nothing; after the final `.`
//! the message is the server's and is delivered once, answer read or not.

use crate::fixture::{email, message_start, Host, CLIENT_TIMEOUT};

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_client_gone_in_the_middle_of_data_leaves_no_message() {
    let Some(h) = Host::start() else { return };
    let mut session = h.session();
    session.begin();
    session.write(&message_start("half"));
    session.write("the money is on its");
    // the transaction has a queue file from the accepted recipient on
    let queued = h.host.queued().unwrap();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].queue, "incoming");
    drop(session);
    assert!(h.delivered("half").is_empty());
    assert!(h.host.queued().unwrap().is_empty());
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_client_gone_after_the_250_leaves_one_delivered_message() {
    let Some(h) = Host::start() else { return };
    let mut session = h.session();
    session.begin();
    session.write(&message_start("answered"));
    session.write("the money is on its way.\r\n.\r\n");
    assert_eq!(session.reply(), 250);
    drop(session);
    assert_eq!(h.delivered("answered").len(), 1);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_client_gone_right_after_the_final_dot_leaves_one_delivered_message() {
    let Some(h) = Host::start() else { return };
    let mut session = h.session();
    session.begin();
    session.write(&message_start("unanswered"));
    session.write("the money is on its way.\r\n.\r\n");
    drop(session);
    assert_eq!(h.delivered("unanswered").len(), 1);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn the_mid_data_hook_runs_once_with_the_message_begun_at_the_server_and_not_yet_ended() {
    let Some(h) = Host::start() else { return };
    let calls = std::cell::Cell::new(0);
    let seen_queued = std::cell::RefCell::new(Vec::new());
    let hook = || {
        calls.set(calls.get() + 1);
        // The first half is at the server: its transaction has a queue file, and nothing is
        // delivered yet.
        let queued = h.host.queued().unwrap();
        seen_queued.replace(queued.into_iter().map(|q| q.queue).collect());
        assert!(h.host.messages("hooked").unwrap().is_empty());
    };
    let sent = mailhost::client::send_with(
        "127.0.0.1",
        h.host.port(),
        &email("hooked", 1),
        CLIENT_TIMEOUT,
        Some(&hook),
    );
    assert!(sent.is_ok(), "{sent:?}");
    assert_eq!(calls.get(), 1);
    assert_eq!(*seen_queued.borrow(), vec!["incoming".to_owned()]);
    assert_eq!(h.delivered("hooked").len(), 1);
}
