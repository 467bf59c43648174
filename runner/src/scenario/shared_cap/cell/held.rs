//! `kill_while_held`: the emulator holds worker `a`'s refund POST (the rule of billing_credit's
//! held-request nemeses, on the refunds endpoint), the runner SIGKILLs `a` once the service has
//! taken it, and before the ground truth is read it waits for the held request to land.

use crate::cell::CellAbort;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use stripe::emulator::{FaultAction, FaultHandle, FaultId, FaultRule};
use verify::shared_cap::nemesis::record::HeldRefund;

/// The emulator rule holding the cell's first refund POST, and what the runner saw of it.
pub(crate) struct HeldRule {
    handle: FaultHandle,
    id: FaultId,
    hold: Duration,
    /// From the service taking the POST to the SIGKILL, once `a` was killed while it was held.
    killed_after: Mutex<Option<Duration>>,
}

impl HeldRule {
    /// Holds the first refund POST of the cell's account `ms` milliseconds (the account is the
    /// cell's own, so only this cell's workers are affected; worker `a` runs first).
    pub(crate) fn install(
        faults: Option<FaultHandle>,
        api_key: &str,
        ms: u64,
    ) -> Result<HeldRule, CellAbort> {
        let handle = faults.ok_or_else(|| {
            CellAbort::Setup(
                "kill_while_held needs the emulator: the service must hold the refund".into(),
            )
        })?;
        let rule = FaultRule::new("POST", "/v1/refunds", FaultAction::Delay { ms })
            .for_key(api_key)
            .times(1);
        let id = handle.add(rule);
        Ok(HeldRule {
            handle,
            id,
            hold: Duration::from_millis(ms),
            killed_after: Mutex::new(None),
        })
    }

    /// Whether the service has taken the POST (and is holding it, or held it).
    pub(crate) fn taken(&self) -> bool {
        self.handle.fired(self.id) > 0
    }

    /// Whether the held request has ended: applied, and answered to whoever was left.
    pub(crate) fn landed(&self) -> bool {
        self.handle.ended(self.id) > 0
    }

    /// Records that worker `a` was SIGKILLed `after` the service took its POST, while held.
    pub(crate) fn killed(&self, after: Duration) {
        if let Ok(mut k) = self.killed_after.lock() {
            *k = Some(after);
        }
    }

    /// Waits until the held request has landed (the service applies it when its hold ends),
    /// at most the hold and `patience` more; gives the record of the hold and removes the rule.
    pub(crate) fn settle(self, patience: Duration) -> HeldRefund {
        let deadline = Instant::now() + self.hold + patience;
        while self.taken() && !self.landed() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let record = HeldRefund {
            taken: self.taken(),
            landed: self.landed(),
            killed_after_ms: self
                .killed_after
                .lock()
                .ok()
                .and_then(|k| *k)
                .map(|d| d.as_millis() as u64),
        };
        self.handle.remove(self.id);
        record
    }
}
