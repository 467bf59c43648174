//! shared_cap's nemesis (DESIGN §5.1): randomized trials of the two bots with kills the
//! matrix's rows never make: worker `b` killed, both workers killed, worker `a`'s restart killed,
//! each at a step drawn from the steps its column passes, with the overlap drawn too. Every draw
//! derives from the campaign's seed and the trial's place in the plan ([`draw`]), so verify
//! re-derives each trial's kills and refuses a file whose trials are not exactly its plan.
//!
//! Every trial is judged by the matrix's rules ([`super::judge`]), from what Stripe holds after
//! every killed worker was restarted. `kill_while_held` holds worker `a`'s refund POST at the
//! service (the emulator applies it after a drawn hold inside the declared in-flight bound,
//! whether or not its client is still there), SIGKILLs `a` while it is held, then runs `b`: the
//! one place where a lock released at its holder's death (`hand_lock`, `hand_pg_lock`) differs
//! from a reservation that outlives its sender (`interlock`). Nobody outside the two bots
//! changes the order. The one stated assumption a campaign can break is `hand_lock`'s (one
//! host): on a two-host campaign its lock orders nothing across the hosts. No rule here labels
//! trials within or beyond an assumption; the pages say which assumption a run breaks.

pub mod check;
pub mod draw;
pub mod record;
pub mod summary;

/// The `format` of a shared_cap nemesis file.
pub const FORMAT: &str = "interlock-shared-cap-nemesis/1";
/// Domain separation of the file's signature.
pub const SIGNATURE_CONTEXT: &str = "interlock-shared-cap-nemesis-v1:";

/// The nemeses, in run order.
pub const NEMESES: [&str; 4] = ["kill_at_step", "kill_both", "kill_restart", KILL_WHILE_HELD];

/// The nemesis that holds worker `a`'s refund at the service and SIGKILLs `a` while it is held.
pub const KILL_WHILE_HELD: &str = "kill_while_held";

/// Where `kill_while_held` kills worker `a`: its refund POST held at the service (the runner
/// sees the service take it; the worker announces nothing there).
pub const HELD_STEP: &str = "request_held";

/// What each nemesis does, in words (the page and `--help` say it).
pub fn describe(nemesis: &str) -> &'static str {
    match nemesis {
        "kill_at_step" => {
            "one worker, a or b (drawn), is SIGKILLed at a step drawn from its column's steps, \
             then restarted"
        }
        "kill_both" => {
            "both workers are SIGKILLed, each at a step drawn from its column's steps; both \
             restarts are released together"
        }
        "kill_restart" => {
            "worker a is SIGKILLed at a drawn step, its restart is SIGKILLed at a step drawn from \
             the steps a restart passes, then a final restart finishes"
        }
        KILL_WHILE_HELD => {
            "worker a runs alone; the service holds its refund POST for a drawn time inside the \
             declared in-flight bound and the runner SIGKILLs a while it is held; then b runs, \
             a is restarted, and the held refund lands whenever its hold ends"
        }
        _ => "",
    }
}
