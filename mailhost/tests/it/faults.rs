//! A client that disappears: before the final `.` the server keeps nothing; after the final `.`
//! the message is the server's and is delivered once, answer read or not.

use crate::fixture::{message_start, Host};

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
