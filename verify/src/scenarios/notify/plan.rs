//! Which cells a notify run has.

use crate::contract::PlanError;
use serde::{Deserialize, Serialize};

/// Where the worker is SIGKILLed: right before the SMTP transaction, or right after the server
/// answered `250` to the message's text, before anything recorded it.
pub const CRASH_POINTS: [&str; 2] = ["before_send", "after_send"];
/// What happens while the worker is dead: nothing; the refund fails (its status turns
/// `failed`, as a refund to an expired card does at Stripe some time after it was made); the
/// approval to send the email is revoked.
pub const OUTAGES: [&str; 3] = ["none", "refund_failed", "approval_revoked"];
/// The columns, in display order: the saved decision re-sent on restart; the careful
/// hand-written version that hands an unfinished send to a person; the common hand-written
/// variant that re-checks and sends again when unsure; the gate over a tier-3 target.
pub const COLUMNS: [&str; 4] = ["no_check", "hand_check", "hand_resend", "interlock"];

/// What decides a run's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Crash points, each one of [`CRASH_POINTS`].
    pub crash_points: Vec<String>,
    /// Outages, each one of [`OUTAGES`].
    pub outages: Vec<String>,
    /// Columns, each one of [`COLUMNS`].
    pub columns: Vec<String>,
    /// Repeats of every crash point × outage × column (at least 1).
    pub repeats: u32,
}

impl Default for Params {
    /// The default matrix: every crash point, outage and column, once.
    fn default() -> Params {
        let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        Params {
            crash_points: owned(&CRASH_POINTS),
            outages: owned(&OUTAGES),
            columns: owned(&COLUMNS),
            repeats: 1,
        }
    }
}

/// One planned cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Planned {
    /// One of [`CRASH_POINTS`].
    pub crash_point: String,
    /// One of [`OUTAGES`].
    pub outage: String,
    /// One of [`COLUMNS`].
    pub column: String,
    /// Repeat index.
    pub repeat: u32,
}

/// Every repeat × crash point × outage × column, in that nesting (columns innermost, so a row's
/// columns sit together); `Err` names a value that is not known or listed twice, or a plan of
/// more than `at_most` cells (refused before it is built).
pub fn plan(p: &Params, at_most: usize) -> Result<Vec<Planned>, PlanError> {
    PlanError::check_names("crash_points", &p.crash_points, &CRASH_POINTS)?;
    PlanError::check_names("outages", &p.outages, &OUTAGES)?;
    PlanError::check_names("columns", &p.columns, &COLUMNS)?;
    if p.repeats == 0 {
        return Err(PlanError::NoRepeats);
    }
    let repeats = usize::try_from(p.repeats).unwrap_or(usize::MAX);
    let factors = [
        repeats,
        p.crash_points.len(),
        p.outages.len(),
        p.columns.len(),
    ];
    let mut out = Vec::with_capacity(PlanError::count_within(&factors, at_most)?);
    for repeat in 0..p.repeats {
        for crash_point in &p.crash_points {
            for outage in &p.outages {
                for column in &p.columns {
                    out.push(Planned {
                        crash_point: crash_point.clone(),
                        outage: outage.clone(),
                        column: column.clone(),
                        repeat,
                    });
                }
            }
        }
    }
    Ok(out)
}
