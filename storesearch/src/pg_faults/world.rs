//! The world both gates send to: one in-memory target ([`MemTarget`]) whose record of what
//! landed is the truth the checks hold the answers against, with a drawn answer to each
//! effect's first send.

use super::plan::TargetTier;
use interlock::testing::{Fault, MemTarget};
use interlock::{Capabilities, SendDeadline, Target, TargetError, Tier};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// The shared target.
#[derive(Debug)]
pub struct World {
    target: MemTarget,
    /// The answer each effect's first send gets (taken by that send; later sends land).
    first_sends: Mutex<HashMap<String, Fault>>,
    /// One send at a time: the target's fault queue is set for each.
    sending: Mutex<()>,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl World {
    /// A target of `tier` (queryable) whose first send of each effect id gets its fault.
    pub fn new(tier: TargetTier, first_sends: HashMap<String, Fault>) -> World {
        let tier = match tier {
            TargetTier::One => Tier::One,
            TargetTier::Two => Tier::Two,
        };
        World {
            target: MemTarget::new(tier, true),
            first_sends: Mutex::new(first_sends),
            sending: Mutex::new(()),
        }
    }

    /// How many times the effect landed.
    pub fn landed(&self, effect_id: &str) -> usize {
        self.target.landed(effect_id)
    }

    /// How many sends of the effect reached the target.
    pub fn sends(&self, effect_id: &str) -> usize {
        self.target.anchors(effect_id).len()
    }
}

impl Target for World {
    fn capabilities(&self) -> Capabilities {
        self.target.capabilities()
    }

    fn check_premises(
        &self,
        effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        self.target.check_premises(effect_id, premises)
    }

    fn apply(&self, effect_id: &str, effect: &Value) -> Result<Value, TargetError> {
        self.apply_before(effect_id, effect, "", SendDeadline::none())
    }

    fn apply_before(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
        deadline: SendDeadline,
    ) -> Result<Value, TargetError> {
        let _one_at_a_time = guard(&self.sending);
        // Checked here first, so a send that does not leave takes no drawn answer.
        deadline.check()?;
        let fault = guard(&self.first_sends)
            .remove(effect_id)
            .unwrap_or(Fault::Ok);
        self.target.clear_faults();
        self.target.push_faults([fault]);
        self.target
            .apply_before(effect_id, effect, dispatch, deadline)
    }

    fn query(&self, effect_id: &str, effect: &Value) -> Result<Option<Value>, TargetError> {
        self.target.query(effect_id, effect)
    }
}
