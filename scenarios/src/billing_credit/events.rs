//! What a worker announces as it goes, for a harness that builds a trial's timeline from it: a
//! line `INTERLOCK-EVENT read <fact>` on stdout right after each read of a fact a column checks
//! or decides on, `INTERLOCK-EVENT post` right before each credit POST leaves, and
//! `INTERLOCK-EVENT answered` when its answer (or error) is back. Off unless the
//! process turns it on ([`announce_events`]); the harness stamps each line with its own monotonic
//! clock when it arrives.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Prefix of every event line.
pub const EVENT_LINE_PREFIX: &str = "INTERLOCK-EVENT ";

/// The facts a read can be of: the approval (the gate's lease) and the two premises.
pub const FACTS: [&str; 3] = ["approval", "subscription_status", "incident_compensation"];

static ANNOUNCE: AtomicBool = AtomicBool::new(false);

/// Turns the announcements on (or off) for this process.
pub fn announce_events(on: bool) {
    ANNOUNCE.store(on, Ordering::SeqCst);
}

/// A read of `fact` just finished.
pub fn announce_read(fact: &str) {
    announce(&format!("read {fact}"));
}

/// A credit POST is about to leave.
pub fn announce_post() {
    announce("post");
}

/// The credit POST's answer (or its error) is back.
pub fn announce_answered() {
    announce("answered");
}

fn announce(what: &str) {
    if !ANNOUNCE.load(Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{EVENT_LINE_PREFIX}{what}");
    let _ = out.flush();
}
