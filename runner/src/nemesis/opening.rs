//! Opening a trial: its directory and case at the service, and the emulator rules it sets (the
//! drawn service fault on the credit POST, the slow outage advance).

use super::faults::{Draw, ServiceFault, DISK_KIB};
use super::storage::SmallDisk;
use super::trial::{TrialContext, TrialSpec};
use super::trial_error::TrialError;
use super::Nemesis;
use rand::{rngs::StdRng, SeedableRng};
use scenarios::billing_credit as bc;
use std::fs;
use std::path::PathBuf;
use stripe::emulator::{FaultAction, FaultHandle, FaultId, FaultRule};
use verify::nemesis::{Fault, Trial};

/// What a trial works on once its case is open.
pub(super) struct Opened {
    /// The case's directory (on a small tmpfs for disk_full).
    pub(super) dir: PathBuf,
    /// Where the workers' stderr goes.
    pub(super) logs: PathBuf,
    /// The case's own API key.
    pub(super) api_key: String,
    /// A client with that key.
    pub(super) client: stripe::Client,
    /// The case as opened.
    pub(super) case: bc::CaseFile,
    /// disk_full's tmpfs, unmounted when the trial is done.
    pub(super) disk: Option<SmallDisk>,
}

/// The trial's directory (naming the journal store, if any) and its case, opened at the service.
/// For disk_full the case's directory is a small tmpfs inside it, filled once the case is saved.
pub(super) fn open(
    ctx: &TrialContext<'_>,
    spec: TrialSpec,
    id: &str,
    plan: &Draw,
) -> Result<Opened, TrialError> {
    let opening = || TrialError::opening(id);
    let logs = ctx.run_dir.join(format!("trial{:05}", spec.slot));
    fs::create_dir_all(&logs).map_err(|e| opening()(e.into()))?;
    let (dir, disk) = match plan.disk_free_pages {
        Some(_) => {
            let dir = logs.join("disk");
            fs::create_dir_all(&dir).map_err(|e| opening()(e.into()))?;
            let disk = SmallDisk::mount(&dir, DISK_KIB).map_err(|e| opening()(e.into()))?;
            (dir, Some(disk))
        }
        // The write-fault library counts the calls under a directory of the case's own, so
        // the workers' stderr files and its log, in `logs`, are not among them.
        None if plan.write_fault.is_some() => {
            let dir = logs.join("disk");
            fs::create_dir_all(&dir).map_err(|e| opening()(e.into()))?;
            (dir, None)
        }
        None => (logs.clone(), None),
    };
    if let Some(url) = ctx.journal {
        fs::write(dir.join(bc::JOURNAL_LOCATION_FILE), url)
            .map_err(|e| opening()(TrialError::NameJournal(e)))?;
    }
    let api_key = ctx.backend.api_key(spec.slot);
    let client = ctx.backend.client(&api_key)?;
    let prices = ctx.backend.prices(&client)?;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let case = bc::open_case(
        &client,
        &prices,
        &format!("nemesis {id}"),
        ctx.clock_start,
        &mut rng,
    )
    .map_err(|e| opening()(TrialError::OpenCase(e)))?;
    case.save(&dir).map_err(|e| opening()(e.into()))?;
    if let (Some(disk), Some(pages)) = (&disk, plan.disk_free_pages) {
        disk.fill_until(pages).map_err(|e| opening()(e.into()))?;
    }
    Ok(Opened {
        dir,
        logs,
        api_key,
        client,
        case,
        disk,
    })
}

/// Sets the drawn service fault on the case's credit POST. A timed kill with no service fault
/// still watches the POST arrive (a zero hold), so the trial can say whether the request had
/// reached the service when the worker died.
pub(super) fn service_rule(
    plan: &Draw,
    faults: Option<&FaultHandle>,
    api_key: &str,
) -> Result<Option<FaultId>, TrialError> {
    let action = match plan.service {
        Some(fault) => super::faults::action(fault),
        None if plan.decide_kill_ms.is_some() => FaultAction::Delay { ms: 0 },
        None => return Ok(None),
    };
    let handle = faults.ok_or(TrialError::NeedsEmulator("service nemeses need"))?;
    let times = if plan.service.is_some() {
        plan.service_times
    } else {
        1
    };
    let rule = FaultRule::new("POST", "/v1/customers/*/balance_transactions", action)
        .for_key(api_key)
        .times(times);
    Ok(Some(handle.add(rule)))
}

/// How long the trial's outage advance takes: at least `--outage-ms`, and for a trial whose
/// credit POST is held at the service, longer than the hold (Stripe's advances take seconds, so
/// a held request lands before the outage is over there too) — except for late_beyond_bound,
/// whose point is a request that lands after recovery has run. Sets the rule and records it.
pub(super) fn advance_rule(
    ctx: &TrialContext<'_>,
    nemesis: Nemesis,
    plan: &Draw,
    faults: Option<&FaultHandle>,
    api_key: &str,
    trial: &mut Trial,
) -> Result<Option<FaultId>, TrialError> {
    let hold = match plan.service {
        Some(ServiceFault::Delay { ms }) if ms > 0 && nemesis != Nemesis::LateBeyondBound => {
            Some(ms + 500)
        }
        _ => None,
    };
    let Some(ms) = hold.max(ctx.outage_ms) else {
        return Ok(None);
    };
    let handle = faults.ok_or(TrialError::NeedsEmulator(
        "--outage-ms and held requests need",
    ))?;
    let why = match hold {
        Some(h) if Some(h) == Some(ms) => {
            "longer than the held request, as a Stripe advance of seconds would be"
        }
        _ => "as --outage-ms asked",
    };
    trial.faults.push(Fault {
        kind: "slow_advance".into(),
        detail: format!("the outage's test-clock advance took {ms} ms ({why})"),
        fired: 0,
        held_ms: None,
    });
    Ok(Some(
        handle.add(crate::cell::slow_advance_rule(api_key, ms)),
    ))
}
