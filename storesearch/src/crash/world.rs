//! The world the workloads act on: a target that records every send that lands, in the
//! recording (so a crash state knows which sends happened before it) and in memory (so the
//! checks count what recovery sends after it).

use interlock::testing::record;
use interlock::{Capabilities, Target, TargetError, Tier};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// What one send of an effect does (the first send of each effect; later ones land).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Send {
    /// Lands and answers.
    Lands,
    /// Lands; the answer is lost.
    LandsUnanswered,
    /// Does not land; the answer is lost.
    Lost,
    /// Does not land; the service says no.
    Rejected,
}

/// A target of tier 1 (dedupes on the effect id), 2 (no dedupe, lookup) or 3 (neither).
#[derive(Debug)]
pub struct World {
    tier: Tier,
    /// Each landed send's effect id, in order.
    landed: Mutex<Vec<String>>,
    first_sends: Mutex<HashMap<String, Send>>,
    /// Note each landing in the active recording.
    recording: bool,
}

impl World {
    /// A world of this tier where nothing has landed; `first_sends` says what an effect's first
    /// send does (by effect id; others land). `recording`: note each landing.
    pub fn new(tier: Tier, first_sends: HashMap<String, Send>, recording: bool) -> World {
        World {
            tier,
            landed: Mutex::new(Vec::new()),
            first_sends: Mutex::new(first_sends),
            recording,
        }
    }

    /// The world as a crash left it: these sends had landed.
    pub fn after(tier: Tier, landed: Vec<String>) -> World {
        World {
            tier,
            landed: Mutex::new(landed),
            first_sends: Mutex::new(HashMap::new()),
            recording: false,
        }
    }

    /// How many sends of `effect_id` landed.
    pub fn count(&self, effect_id: &str) -> usize {
        self.landed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|e| *e == effect_id)
            .count()
    }

    fn land(&self, effect_id: &str) {
        let mut landed = self.landed.lock().unwrap_or_else(|p| p.into_inner());
        if self.tier == Tier::One && landed.iter().any(|e| e == effect_id) {
            return;
        }
        landed.push(effect_id.to_owned());
        if self.recording {
            record::note(format!("land {effect_id}"));
        }
    }
}

impl Target for World {
    fn capabilities(&self) -> Capabilities {
        let (dedup, lookup) = match self.tier {
            Tier::One => (Some(None), true),
            Tier::Two => (None, true),
            Tier::Three => (None, false),
        };
        Capabilities {
            dedup,
            lookup,
            // A request is over a second after it was sent: recovery may trust "not found"
            // once that has passed since the dispatch (by the recovering gate's clock).
            max_in_flight: Some(std::time::Duration::from_secs(1)),
        }
    }

    fn check_premises(&self, _: &str, _: &Value) -> Result<Vec<String>, TargetError> {
        Ok(Vec::new())
    }

    fn apply(&self, effect_id: &str, _: &Value) -> Result<Value, TargetError> {
        // The request is on its way: other threads may run (a recovery on another gate).
        super::threads::yield_now();
        let send = self
            .first_sends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(effect_id)
            .unwrap_or(Send::Lands);
        match send {
            Send::Lands => {
                self.land(effect_id);
                Ok(json!({"landed": effect_id}))
            }
            Send::LandsUnanswered => {
                self.land(effect_id);
                Err(TargetError::Unknown {
                    reason: "the answer was lost".into(),
                })
            }
            Send::Lost => Err(TargetError::Unknown {
                reason: "the request was lost".into(),
            }),
            Send::Rejected => Err(TargetError::Rejected {
                reason: "the service said no".into(),
            }),
        }
    }

    fn query(&self, effect_id: &str, _: &Value) -> Result<Option<Value>, TargetError> {
        if self.tier == Tier::Three {
            return Err(TargetError::Unknown {
                reason: "this service cannot be asked".into(),
            });
        }
        Ok((self.count(effect_id) > 0).then(|| json!({"landed": effect_id})))
    }
}
