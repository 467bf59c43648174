//! The shared_cap nemesis file (`nemesis/shared_cap*.json.gz`, or `.json` from earlier runs):
//! the campaign's plan and every trial.

use super::draw::Draw;
use super::summary::NemesisSummary;
use crate::shared_cap::record::{CapCell, CapEnvironment};
use serde::{Deserialize, Serialize};

/// A whole campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapNemesisFile {
    /// [`super::FORMAT`].
    pub format: String,
    /// `shared_cap`.
    pub scenario: String,
    /// When the campaign finished (RFC 3339, UTC).
    pub generated_at: String,
    /// Where and how it ran (the matrix's record of it).
    pub environment: CapEnvironment,
    /// The invariant, in words.
    pub want: String,
    /// What was run.
    pub plan: Campaign,
    /// Every trial, in plan order: nemesis, then column, then index.
    pub trials: Vec<CapTrial>,
    /// Per nemesis and column, derived from the trials by [`super::summary::summarize`].
    pub summary: Vec<NemesisSummary>,
    /// The run key's ed25519 signature (hex) over [`super::check::signing_message`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// A campaign's plan: every nemesis × column × index below `trials`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// The seed every draw derives from.
    pub seed: u64,
    /// The nemeses run, in order.
    pub nemeses: Vec<String>,
    /// The columns run, in order.
    pub columns: Vec<String>,
    /// Trials per nemesis and column.
    pub trials: u32,
}

/// One trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapTrial {
    /// [`super::draw::trial_id`].
    pub id: String,
    /// The nemesis.
    pub nemesis: String,
    /// Its index among the trials of its nemesis and column.
    pub index: u32,
    /// What the plan drew for it.
    pub draw: Draw,
    /// The step worker `a`'s restart was SIGKILLed at, if it was.
    pub restart_killed_at: Option<String>,
    /// `kill_while_held`: what became of worker `a`'s held refund POST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldRefund>,
    /// The trial as a matrix cell records it: `crash_point` is the drawn kill of worker `a`
    /// (`none` when it has none), `repeat` the trial's index.
    pub cell: CapCell,
}

impl CapTrial {
    /// How many SIGKILLs landed (a step a worker passed before it finished).
    pub fn kills_landed(&self) -> u32 {
        let first = self
            .cell
            .tickets
            .iter()
            .filter(|t| t.killed_at.is_some())
            .count() as u32;
        first + u32::from(self.restart_killed_at.is_some())
    }
}

/// What the runner saw of a refund POST the service held (`kill_while_held`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldRefund {
    /// The service took worker `a`'s POST and held it (the rule fired).
    pub taken: bool,
    /// The held request had ended (applied and answered to nobody) when the runner read the
    /// ground truth: it waited for that before reading.
    pub landed: bool,
    /// From the runner seeing the service take the POST to its SIGKILL of `a`, ms (absent when
    /// `a` was not killed while it was held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_after_ms: Option<u64>,
}
