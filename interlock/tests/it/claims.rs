//! Claims between threads of one process (each opens its own claim file descriptor, so the
//! flock excludes them exactly as it excludes processes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use interlock::testing::{Fault, MemTarget};
use interlock::{RecoveryOutcome, Status, Tier};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A target whose `apply` blocks (once armed) until released.
struct Gatekeeper {
    armed: AtomicBool,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

fn blocking_target(
    tier: Tier,
    queryable: bool,
) -> (MemTarget, Arc<Gatekeeper>, Receiver<()>, Sender<()>) {
    let (entered_tx, entered_rx) = channel();
    let (release_tx, release_rx) = channel();
    let gk = Arc::new(Gatekeeper {
        armed: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let g = gk.clone();
    let target = MemTarget::new(tier, queryable).with_apply_hook(Box::new(move |_| {
        if g.armed.swap(false, Ordering::SeqCst) {
            g.entered.lock().unwrap().send(()).unwrap();
            g.release.lock().unwrap().recv().unwrap();
        }
    }));
    (target, gk, entered_rx, release_tx)
}

#[test]
fn a_live_sender_blocks_recovery_until_its_claim_expires_and_is_never_overridden() {
    let (target, gk, entered, release) = blocking_target(Tier::One, true);
    let s = setup_with(target);
    gk.armed.store(true, Ordering::SeqCst);
    std::thread::scope(|scope| {
        let sender = scope.spawn(|| s.gate.submit(&proposal(1000)).unwrap());
        entered.recv_timeout(Duration::from_secs(10)).unwrap();
        let eid = s.gate.open_effects().unwrap().pop().unwrap();
        let dispatched = s.gate.entries(&eid).unwrap()[2]["ts_ms"].as_u64().unwrap();
        match s.gate.recover_effect(&eid).unwrap() {
            Some(RecoveryOutcome::Blocked {
                holder,
                until_ms,
                reason,
            }) => {
                assert_eq!(holder, interlock::Holder::Process(s.gate.owner().clone()));
                assert!(reason.contains("sending"), "{reason}");
                assert_eq!(until_ms, dispatched + 40_000);
            }
            other => panic!("expected Blocked, got {other:?}"),
        }
        assert_eq!(
            s.gate.submit(&proposal(1000)).unwrap().status,
            Status::InFlight
        );
        // Past the TTL the sender is alive but hung: still Blocked, never a second send.
        s.advance(41_000);
        match s.gate.recover_effect(&eid).unwrap() {
            Some(RecoveryOutcome::Blocked {
                until_ms, reason, ..
            }) => {
                assert!(reason.contains("hung"), "{reason}");
                assert_eq!(until_ms, s.now() + 1_000);
            }
            other => panic!("expected Blocked, got {other:?}"),
        }
        assert_eq!(
            s.target.apply_calls(),
            0,
            "the one send is still inside apply"
        );
        release.send(()).unwrap();
        assert_eq!(sender.join().unwrap().status, Status::Committed);
    });
    assert!(s.gate.recover().unwrap().is_empty());
    assert_eq!(s.target.apply_calls(), 1);
    assert_eq!(s.target.landed_total(), 1);
}

#[test]
fn two_recoverers_one_takes_it_the_other_is_blocked() {
    let (target, gk, entered, release) = blocking_target(Tier::One, false);
    let s = setup_with(target);
    s.target.push_faults([Fault::Unknown]);
    let eid = s.gate.submit(&proposal(1000)).unwrap().effect_id;
    gk.armed.store(true, Ordering::SeqCst);
    std::thread::scope(|scope| {
        let first = scope.spawn(|| s.gate.recover_effect(&eid).unwrap());
        entered.recv_timeout(Duration::from_secs(10)).unwrap();
        match s.gate.recover().unwrap().pop().map(|r| r.outcome) {
            Some(RecoveryOutcome::Blocked { holder, reason, .. }) => {
                assert_eq!(holder, interlock::Holder::Process(s.gate.owner().clone()));
                assert!(reason.contains("recovering"), "{reason}");
            }
            other => panic!("expected Blocked, got {other:?}"),
        }
        release.send(()).unwrap();
        assert_eq!(
            first.join().unwrap(),
            Some(RecoveryOutcome::Resolved(Status::CommittedByRetry))
        );
    });
    assert_eq!(s.target.apply_calls(), 2);
    assert_eq!(s.target.landed(&eid), 1);
}
