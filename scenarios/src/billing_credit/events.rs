//! What a worker announces as it goes, for a harness that builds a trial's timeline from it: a
//! line `INTERLOCK-EVENT read <fact> <start> <end>` on stdout right after each read of a fact a
//! column checks or decides on, `INTERLOCK-EVENT post <at>` right before each credit POST leaves,
//! and `INTERLOCK-EVENT answered <at> [replayed]` when its answer (or error) is back (`replayed`:
//! answered from the service's idempotency cache). Off unless the process
//! turns it on ([`announce_events`]). The instants are the machine's monotonic clock in
//! microseconds ([`monotonic_us`]), read in the worker itself, so a harness on the same machine
//! (same boot, same time namespace) orders them exactly against its own.

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

/// The machine's monotonic clock (`CLOCK_MONOTONIC`, what `std::time::Instant` reads on Linux),
/// in microseconds.
pub fn monotonic_us() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000).saturating_add(nanos / 1_000)
}

/// A read of `fact` that began at `started` ([`monotonic_us`]) just finished.
pub fn announce_read(fact: &str, started: u64) {
    announce(&format!("read {fact} {started} {}", monotonic_us()));
}

/// A credit POST is about to leave.
pub fn announce_post() {
    announce(&format!("post {}", monotonic_us()));
}

/// The credit POST's answer (or its error) is back; `replayed`: the service answered it from
/// its idempotency cache (the request applied nothing).
pub fn announce_answered(replayed: bool) {
    let tail = if replayed { " replayed" } else { "" };
    announce(&format!("answered {}{tail}", monotonic_us()));
}

/// A step line's stamp: ` <monotonic µs>`, appended to the step's name so a harness orders the
/// step on the worker's own clock, not when it read the line.
pub fn stamp() -> String {
    format!(" {}", monotonic_us())
}

fn announce(what: &str) {
    if !ANNOUNCE.load(Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{EVENT_LINE_PREFIX}{what}");
    let _ = out.flush();
}
