//! What the runner changes around a trial's workers: the world change made while the decide
//! worker is paused or exposed (a revocation, billing's credit note), the outage while it is
//! dead, and what it does to a dead worker's files and to the service's memory.

use super::faults::{Draw, ServiceFault, WorldFault};
use super::opening::Opened;
use super::storage;
use super::timeline::Timeline;
use super::trial_error::TrialError;
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit as bc;
use std::time::{Duration, Instant};
use stripe::emulator::FaultHandle;
use verify::nemesis::{Fault, Trial};

/// Mixed into a trial's seed for the outage's own random choices.
const OUTAGE_SEED: u64 = 0x5eed;

/// What the runner does to a dead (or stopped) worker's files and to the service's memory, as
/// drawn: torn_tail cuts the record's last line, dedup_expired lets the service forget its keys
/// and returns the environment that runs the restart's wall clock as far ahead.
pub(super) fn after_the_kill(
    plan: &Draw,
    o: &Opened,
    faults: Option<&FaultHandle>,
    trial: &mut Trial,
    timeline: &Timeline,
) -> Result<Vec<(&'static str, String)>, TrialError> {
    if let Some(permille) = plan.tear_permille {
        let record = match trial.column.as_str() {
            "interlock" => Some(bc::JOURNAL_FILE),
            "hand_check" => Some(bc::HAND_CHECK_LOG),
            _ => None,
        };
        let torn = match record {
            Some(name) => storage::tear_last_line(&o.dir.join(name), permille)?.map(|t| (name, t)),
            None => None,
        };
        if let (Some(name @ bc::JOURNAL_FILE), Some((_, (_, _, Some(hash))))) = (record, &torn) {
            // A line cut mid-write was never durable, so the gate never marked it (the mark
            // follows the entry's fsync): take its mark back as that crash leaves it.
            interlock::marks::unmark_torn_entry(&o.dir.join(name), hash)
                .map_err(TrialError::Unmark)?;
        }
        let detail = match torn {
            Some((name, (line, kept, _))) => {
                timeline.runner_fault("tear", name);
                format!("after the kill the last line of {name} ({line} bytes) was cut to {kept} bytes, as a crash mid-append leaves it")
            }
            None => "after the kill there was no record line to cut (no_check keeps only its decision, written whole by a rename; or the record was empty)".to_owned(),
        };
        trial.faults.push(Fault {
            kind: "torn_tail".into(),
            detail,
            fired: u32::from(torn.is_some()),
            held_ms: None,
        });
    }
    let Some(seconds) = plan.dedup_passed_s else {
        return Ok(Vec::new());
    };
    let handle = faults.ok_or(TrialError::NeedsEmulator("dedup_expired needs"))?;
    let library = storage::faketime_library().ok_or(TrialError::NoFaketime)?;
    handle.pass_idempotency_time(&o.api_key);
    timeline.runner_fault("dedup", "the service forgot the account's idempotency keys");
    trial.faults.push(Fault {
        kind: "dedup_expired".into(),
        detail: format!(
            "while the worker was dead {seconds} s passed: the service forgot every idempotency key of the account, and the final restart's wall clock ran {seconds} s ahead (libfaketime; its monotonic clock untouched)"
        ),
        fired: 1,
        held_ms: None,
    });
    Ok(storage::clock_ahead_env(&library, seconds))
}

/// The drawn world change, made while the worker is paused: the fault to record and, for a
/// revocation, the case as it now stands.
pub(super) fn change_world(
    plan: &Draw,
    seed: u64,
    o: &Opened,
    (timeline, from): (&Timeline, Instant),
    emulator: Option<&stripe::emulator::RunningEmulator>,
) -> Result<(Fault, Option<bc::CaseFile>), TrialError> {
    let paused = match (plan.pause_at, plan.world_at_us) {
        (Some(step), _) => format!("while the worker was paused at {step}"),
        (None, Some(us)) => format!(
            "{}.{:03} ms after the decide worker saved its decision, while the worker ran",
            us / 1000,
            us % 1000
        ),
        (None, None) => "?".to_owned(),
    };
    match plan.world {
        Some(WorldFault::Revoke) => {
            let (revoked, at) =
                clock_now(&o.client, &o.case).and_then(|at| revoke(o, emulator, at, timeline))?;
            let what = format!("support revoked the approval {paused}, at test-clock {at}");
            Ok((world_fault("revocation", what), Some(revoked)))
        }
        Some(WorldFault::CreditNote) => {
            let mut outage_rng = StdRng::seed_from_u64(seed ^ OUTAGE_SEED);
            let outage = bc::Outage::BillingCredit;
            let (_, changes) = bc::run_outage_timed(&o.client, &o.case, outage, &mut outage_rng)?;
            timeline.outage(outage.as_str(), from);
            for c in changes {
                timeline.changed(c.fact, c.from, c.until);
            }
            let what =
                format!("billing's renewal and credit note for the case's incident ran {paused}");
            Ok((world_fault("credit_note", what), None))
        }
        None => Err(TrialError::NoWorldFault),
    }
}

/// The outage while the worker is dead (none when a credit note mid-check was this trial's
/// outage), then the drawn revocation. `Err`: why the trial is a HARNESS_ERROR.
pub(super) fn outage(
    plan: &Draw,
    seed: u64,
    o: &Opened,
    trial: &mut Trial,
    (timeline, emulator): (&Timeline, Option<&stripe::emulator::RunningEmulator>),
) -> Result<(), TrialError> {
    if plan.world == Some(WorldFault::CreditNote) {
        return Ok(());
    }
    let mut outage_rng = StdRng::seed_from_u64(seed ^ OUTAGE_SEED);
    let from = Instant::now();
    let drawn = bc::Outage::parse(plan.outage).map_err(TrialError::Outage)?;
    let (record, changes) = bc::run_outage_timed(&o.client, &o.case, drawn, &mut outage_rng)
        .map_err(TrialError::Outage)?;
    timeline.outage(plan.outage, from);
    for c in changes {
        timeline.changed(c.fact, c.from, c.until);
    }
    if plan.revoke_in_outage {
        let at = record.clock_time.ok_or(TrialError::NoClockTime)?;
        let (revoked, at) =
            revoke(o, emulator, at, timeline).map_err(|e| TrialError::Revocation(Box::new(e)))?;
        trial.case = revoked.to_results_case();
        trial.faults.push(world_fault(
            "revocation",
            format!("support revoked the approval during the outage, at test-clock {at}"),
        ));
    }
    Ok(())
}

/// A request held at the service may still be on its way: let it land before reading, so the
/// ground truth is the final state (the hold is the runner's own fault, of known length, and
/// began no later than `held_from`).
pub(super) fn wait_for_held_request(plan: &Draw, held_from: Instant) {
    if let Some(ServiceFault::Delay { ms: held }) = plan.service {
        let until = held_from + Duration::from_millis(held + 200);
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
    }
}

/// Revokes the approval in `case.json` (the file renamed into place is the change, recorded on
/// the timeline) and moves the test clock a second past it, so a credit created after the
/// revocation is after it in Stripe's `created`. On the embedded emulator both happen with the
/// case's account locked (`step_clock_around`): every credit is created wholly before the
/// change, in the revocation's second, or after the clock moved, in a later one, so the
/// verdict's test-clock order and the timeline's order agree exactly, even for a worker that is
/// sending meanwhile. Elsewhere: the clock's time `at`, the rename, then an advance.
fn revoke(
    o: &Opened,
    emulator: Option<&stripe::emulator::RunningEmulator>,
    at: i64,
    timeline: &Timeline,
) -> Result<(bc::CaseFile, i64), TrialError> {
    let mut case = bc::CaseFile::load(&o.dir)?;
    let mut write = |at: i64| {
        case.approval.revoked = Some(verify::results::Revocation {
            by: bc::APPROVER.to_owned(),
            clock_time: Some(at),
        });
        case.save_timed(&o.dir)
    };
    let at = match emulator {
        Some(emu) => {
            let (written, at) = emu
                .step_clock_around(&o.api_key, &o.case.clock, &mut write)
                .map_err(TrialError::EmulatorClock)?;
            let (from, until) = written?;
            timeline.changed("approval", from, until);
            at
        }
        None => {
            let (from, until) = write(at)?;
            timeline.changed("approval", from, until);
            bc::advance_one_second(&o.client, &o.case, at)?;
            at
        }
    };
    Ok((case, at))
}

/// A world change made while the worker was paused (the clock is always advanced a second after
/// it, so whatever the worker creates next is later in Stripe's `created`).
fn world_fault(kind: &str, what: String) -> Fault {
    Fault {
        kind: kind.into(),
        detail: format!("{what}; the clock was then advanced one second"),
        fired: 1,
        held_ms: None,
    }
}

/// The case's test-clock time now.
fn clock_now(client: &stripe::Client, case: &bc::CaseFile) -> Result<i64, TrialError> {
    Ok(bc::clock_time(client, case)?)
}
