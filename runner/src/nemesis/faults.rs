//! A trial's random choices as the runner uses them: verify draws them from the trial's seed
//! alone ([`verify::nemesis::draw`], so a replay and the checker draw the same); here they become
//! the emulator's rules, a replay's moved kill, and the words a trial records of its faults.

use super::trial_error::{ReplayError, TrialError};
use super::Nemesis;
use scenarios::billing_credit::Column;
use stripe::emulator::FaultAction;
pub use verify::nemesis::draw::{Draw, ServiceFault, WorldFault, WriteFault};
use verify::nemesis::steps::POSITIONS;

/// Draws a trial's plan from its seed (verify's draw, for one of the runner's columns), in a run
/// whose exposure span is `span_ms`.
pub fn draw_for(
    nemesis: Nemesis,
    column: Column,
    seed: u64,
    span_ms: u64,
) -> Result<Draw, TrialError> {
    verify::nemesis::draw::draw_for_span(nemesis, column.as_str(), seed, span_ms).ok_or(
        TrialError::NotDrawn {
            nemesis: nemesis.as_str(),
            column: column.as_str(),
        },
    )
}

/// The emulator's rule for a drawn service fault.
pub fn action(fault: ServiceFault) -> FaultAction {
    match fault {
        ServiceFault::Delay { ms } => FaultAction::Delay { ms },
        ServiceFault::CommitThenError { status } => FaultAction::CommitThenError { status },
        ServiceFault::CommitThenDrop => FaultAction::CommitThenDrop,
        ServiceFault::RateLimit => FaultAction::RateLimit {
            retry_after_s: None,
        },
    }
}

/// Where stop_holder stops the sender: its last step before the credit POST leaves, in every
/// column (interlock holds the claim there, DISPATCHED durable).
pub const STOP_AT: &str = "before_send";

/// The size of disk_full's tmpfs, KiB.
pub const DISK_KIB: u64 = 512;

/// The same trial with its decide kill moved to `position` (`runner --replay ID --at STEP`): the
/// faults stay as drawn; a timed kill becomes a kill at that step (`finished`: no kill).
pub fn replayed_at(mut plan: Draw, position: &str) -> Result<Draw, ReplayError> {
    let Some(at) = POSITIONS.into_iter().find(|p| *p == position) else {
        return Err(ReplayError::NotAStep {
            position: position.to_owned(),
            expected: POSITIONS.join(", "),
        });
    };
    if plan.pause_at.is_some()
        || plan.decide_at_before_send
        || plan.world_at_us.is_some()
        || plan.stop_ms.is_some()
    {
        return Err(ReplayError::FixedPoint);
    }
    if at == "request_held" && !matches!(plan.service, Some(ServiceFault::Delay { .. })) {
        return Err(ReplayError::NotHeld);
    }
    plan.decide_kill_ms = None;
    plan.kill_jitter_us = 0;
    plan.kill_after = "start";
    plan.kill_at_step = (at != "finished").then_some(at);
    Ok(plan)
}

/// One line naming a service fault.
pub fn describe(fault: ServiceFault) -> (String, String) {
    let kind = fault.kind().to_owned();
    match fault {
        ServiceFault::Delay { ms } => (
            kind,
            format!("the first credit POST is held {ms} ms before it is applied (it lands whether or not its client is still there)"),
        ),
        ServiceFault::CommitThenError { status } => (
            kind,
            format!("the first credit POST is applied, then answered {status}; the error is saved under its idempotency key"),
        ),
        ServiceFault::CommitThenDrop => (
            kind,
            "the first credit POST is applied, then its connection is closed without an answer".into(),
        ),
        ServiceFault::RateLimit => (
            kind,
            "the first credit POSTs are answered 429 rate_limit before anything runs".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_kill_replays_at_a_named_step_and_nowhere_else() {
        let timed = draw_for(
            Nemesis::KillRandom,
            Column::HandCheck,
            3,
            verify::nemesis::draw::EXPOSURE_SPAN_MS,
        )
        .unwrap();
        let at = replayed_at(timed.clone(), "premises").unwrap();
        assert_eq!(
            (at.kill_at_step, at.decide_kill_ms),
            (Some("premises"), None)
        );
        assert!(replayed_at(timed.clone(), "request_held").is_err());
        assert!(replayed_at(timed, "nowhere").is_err());
    }

    #[test]
    fn the_draws_outages_are_the_scenarios_in_its_order() {
        assert_eq!(
            scenarios::billing_credit::Outage::ALL.map(|o| o.as_str()),
            verify::nemesis::draw::OUTAGES
        );
    }
}
