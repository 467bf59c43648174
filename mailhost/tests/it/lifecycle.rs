//! Starting, stopping and restarting an instance, and two at once.

use crate::fixture::{email, living_in_group, Host};
use mailhost::client::{SendError, Step};
use mailhost::{MailError, MailHost};
use std::net::TcpStream;

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_started_instance_greets_on_loopback_and_a_dropped_one_leaves_no_process() {
    let Some(Host { host, _root }) = Host::start() else {
        return;
    };
    let port = host.port();
    assert!(host.is_running());
    let master = host.master_pid().expect("a master pid file");
    assert!(!living_in_group(master).is_empty());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
    drop(host);
    assert_eq!(living_in_group(master), Vec::<i32>::new());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_stopped_instance_refuses_connections_and_a_restarted_one_delivers_on_the_same_port() {
    let Some(mut h) = Host::start() else { return };
    let port = h.host.port();
    h.host.stop().unwrap();
    assert!(!h.host.is_running());
    h.host.stop().unwrap();
    let e = h.send(&email("outage", 1)).unwrap_err();
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
    h.host.restart().unwrap();
    assert_eq!(h.host.port(), port);
    h.send(&email("outage", 2)).unwrap();
    let delivered = h.delivered("outage");
    assert_eq!(delivered.len(), 1);
    assert_eq!(
        delivered[0].message_id.as_deref(),
        Some("<refund-outage-2@interlock.test>")
    );
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_message_accepted_before_a_stop_is_delivered_once_after_the_restart() {
    let Some(mut h) = Host::start() else { return };
    h.send(&email("stopped", 1)).unwrap();
    h.host.stop().unwrap();
    h.host.restart().unwrap();
    assert_eq!(h.delivered("stopped").len(), 1);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn two_instances_run_at_once_each_with_its_own_port_and_maildir() {
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(Host::start);
        let b = s.spawn(Host::start);
        (a.join().unwrap(), b.join().unwrap())
    });
    let (Some(a), Some(b)) = (a, b) else { return };
    assert_ne!(a.host.port(), b.host.port());
    a.send(&email("shared-name", 1)).unwrap();
    b.send(&email("shared-name", 2)).unwrap();
    b.send(&email("shared-name", 3)).unwrap();
    assert_eq!(a.delivered("shared-name").len(), 1);
    assert_eq!(b.delivered("shared-name").len(), 2);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_second_start_on_a_running_root_fails_and_leaves_the_first_running() {
    let Some(mut h) = Host::start() else { return };
    let e = MailHost::start(h.host.root()).unwrap_err();
    assert!(matches!(e, MailError::AlreadyRunning(_)), "{e}");
    h.send(&email("still-up", 1)).unwrap();
    assert_eq!(h.delivered("still-up").len(), 1);
    // its configuration was left alone: a restart greets as itself on its port
    h.host.stop().unwrap();
    h.host.restart().unwrap();
    h.send(&email("still-up", 2)).unwrap();
    assert_eq!(h.delivered("still-up").len(), 2);
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_closed_listener_refuses_connections_while_accepted_mail_is_still_delivered() {
    let Some(mut h) = Host::start() else { return };
    h.send(&email("front-door", 1)).unwrap();
    h.host.refuse_connections().unwrap();
    assert!(h.host.is_running());
    let e = h.send(&email("front-door", 2)).unwrap_err();
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
    assert_eq!(h.delivered("front-door").len(), 1);
    h.host.accept_connections().unwrap();
    h.send(&email("front-door", 3)).unwrap();
    let ids: Vec<_> = h
        .delivered("front-door")
        .into_iter()
        .map(|d| d.message_id.unwrap_or_default())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&"<refund-front-door-3@interlock.test>".to_string()));
}

#[test]
#[ignore = "needs postfix (apt-get install postfix)"]
fn a_restart_after_a_closed_listener_listens_again() {
    let Some(mut h) = Host::start() else { return };
    h.host.refuse_connections().unwrap();
    h.host.stop().unwrap();
    h.host.restart().unwrap();
    h.send(&email("reopened", 1)).unwrap();
    assert_eq!(h.delivered("reopened").len(), 1);
}
