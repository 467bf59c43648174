//! The email as the gate's target ([`MailTarget`], tier 3: the mail server keeps no idempotency
//! key and nothing can look a sent message up) and the approval as its lease store
//! ([`CaseApproval`]).

use super::case::{CaseFile, Decision};
use super::mail::{refund_status, send_email, MailServer, MidData};
use crate::billing_credit::target::premise_violations;
use crate::billing_credit::{fire, now_ms, Crash, CrashPoint};
use ::interlock::{Capabilities, LeaseCheck, LeaseError, LeaseStore, Target, TargetError};
use mailhost::client::SendError;
use serde_json::{json, Value};
use std::path::PathBuf;
use verify::scenarios::notify::gate_message_id;

/// The premises an email is decided on: the refund it announces has succeeded.
pub(crate) fn premises() -> Value {
    json!({ "refund_status": "succeeded" })
}

/// The email to the customer for the gate: tier 3. SMTP has no idempotency key, and a sender
/// cannot ask a mail server whether it accepted a message (nor take one back), so the target
/// states no dedupe, no lookup and no in-flight bound. Premise: the refund's status, read from
/// Stripe. Every email carries the `Message-ID` naming the DISPATCHED entry it was sent under
/// ([`gate_message_id`]).
pub struct MailTarget {
    stripe: stripe::Client,
    server: MailServer,
    refund: String,
    crash: Option<Crash>,
    mid_data: Option<MidData>,
}

impl std::fmt::Debug for MailTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailTarget")
            .field("server", &self.server)
            .field("refund", &self.refund)
            .finish()
    }
}

impl MailTarget {
    /// A target sending through `server`, its premise the status of `refund` read with
    /// `stripe`; `crash` fires around the SMTP transaction (`before_send`, `after_send`).
    pub fn new(
        stripe: stripe::Client,
        server: MailServer,
        refund: String,
        crash: Option<Crash>,
    ) -> MailTarget {
        MailTarget {
            stripe,
            server,
            refund,
            crash,
            mid_data: None,
        }
    }

    /// The same target, running `hook` inside each send's SMTP `DATA` (half of the message's
    /// text at the server).
    pub fn with_mid_data(mut self, hook: Option<MidData>) -> MailTarget {
        self.mid_data = hook;
        self
    }
}

/// A send's failure in the gate's words: a refusal, or a failure before the message's text, is
/// a settled "not sent"; a failure after the text began may have left an accepted message.
fn to_target_error(e: SendError) -> TargetError {
    if e.settled_not_sent() {
        TargetError::Rejected {
            reason: e.to_string(),
        }
    } else {
        TargetError::Unknown {
            reason: e.to_string(),
        }
    }
}

impl Target for MailTarget {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dedup: None,
            lookup: false,
            max_in_flight: None,
        }
    }

    fn check_premises(
        &self,
        _effect_id: &str,
        premises: &Value,
    ) -> Result<Vec<String>, TargetError> {
        let status =
            refund_status(&self.stripe, &self.refund).map_err(|e| TargetError::Unknown {
                reason: e.to_string(),
            })?;
        let live = json!({ "refund_status": status });
        let recorded = json!({
            "refund_status": premises.get("refund_status").cloned().unwrap_or(Value::Null),
        });
        // The refund was read: a nemesis may kill or pause the sender here, as it does after
        // the hand-written columns' premise read.
        fire(self.crash.as_ref(), CrashPoint::Premises);
        Ok(premise_violations(&recorded, &live))
    }

    fn apply(&self, effect_id: &str, _effect: &Value) -> Result<Value, TargetError> {
        Err(TargetError::Rejected {
            reason: format!(
                "effect {effect_id}: an email is sent only with its DISPATCHED entry's hash"
            ),
        })
    }

    fn apply_dispatched(
        &self,
        effect_id: &str,
        effect: &Value,
        dispatch: &str,
    ) -> Result<Value, TargetError> {
        let decision: Decision =
            serde_json::from_value(effect.clone()).map_err(|e| TargetError::Rejected {
                reason: format!("effect {effect_id} is not an email payload: {e}"),
            })?;
        let message_id = gate_message_id(dispatch, &decision.case);
        let accepted = send_email(
            &self.server,
            &decision,
            &message_id,
            self.crash.as_ref(),
            self.mid_data.as_ref(),
        )
        .map_err(to_target_error)?;
        Ok(json!({
            "status": "accepted",
            "reply": accepted.text,
            "message_id": message_id,
        }))
    }

    fn query(&self, _effect_id: &str, _effect: &Value) -> Result<Option<Value>, TargetError> {
        Err(TargetError::Unknown {
            reason: "a mail server cannot be asked whether it accepted a message".into(),
        })
    }
}

/// The case's approval as the gate's lease store, re-read from `case.json` at every check (the
/// runner revokes it while the worker is dead): live when unrevoked, unexpired and naming the
/// effect's case.
#[derive(Debug, Clone)]
pub(crate) struct CaseApproval {
    pub(crate) cell_dir: PathBuf,
}

impl LeaseStore for CaseApproval {
    fn check(&self, lease: &Value, effect: &Value) -> Result<LeaseCheck, LeaseError> {
        let case = CaseFile::load(&self.cell_dir).map_err(|e| LeaseError {
            reason: format!("cannot read the approval: {e}"),
        })?;
        let named = effect.get("case").and_then(Value::as_str);
        let live = lease.as_str() == Some(case.approval.id.as_str())
            && named.is_some_and(|c| case.approval.covers(c, now_ms()));
        let grant = serde_json::to_value(&case.approval).map_err(|e| LeaseError {
            reason: format!("cannot render the approval: {e}"),
        })?;
        Ok(LeaseCheck {
            live,
            grant: Some(grant),
        })
    }
}
