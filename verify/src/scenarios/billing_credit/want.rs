//! The want rule (DESIGN §4.6): how many credits, of how many cents, a case may end with.

use super::ground_truth::{first_compensation, first_judged_credit};
use crate::results::{Approval, GroundTruth, Want};

/// Whether the want rule's same-second tie-break decides this case: billing's first compensation
/// and the case's first credit share one test-clock second. The runner advances the clock one
/// second after the outage, so no default cell should ever be decided this way; the check says
/// so from the data.
pub fn decided_by_tie(truth: &GroundTruth, incident: &str) -> bool {
    matches!(
        (first_compensation(truth, incident), first_judged_credit(truth)),
        (Some(comp), Some(first)) if comp == first
    )
}

/// The want rule: this case may credit once (`approved_cents`), unless billing compensated this
/// incident (an issued credit note tagged with it) before this case's first credit, or at all if
/// the case never credited; then zero. The case's credits are the judged ones
/// ([`is_judged_credit`]): every credit billing did not make, whatever its tags.
///
/// Times are Stripe `created` values in test-clock seconds. A compensation created in the same
/// second as the case's first credit counts as before it: the clock cannot order them, and the
/// invariant must not be judged held on a guess ([`decided_by_tie`] says when that happened; the
/// runner's one-second clock advance after the outage keeps it out of the default matrix).
pub fn want(truth: &GroundTruth, _case_id: &str, incident: &str, approved_cents: i64) -> Want {
    let compensated_first = match (
        first_compensation(truth, incident),
        first_judged_credit(truth),
    ) {
        (Some(comp), Some(first)) => comp <= first,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if compensated_first {
        Want { count: 0, cents: 0 }
    } else {
        Want {
            count: 1,
            cents: approved_cents,
        }
    }
}

/// The test-clock instant (seconds) at which the approval was revoked, when its `revoked` record
/// carries one (`{"by": ..., "clock_time": T}`, as the runner writes it).
pub fn revoked_at(approval: &Approval) -> Option<i64> {
    approval.revoked.as_ref().and_then(|r| r.clock_time)
}

/// The want rule with the approval's revocation (DESIGN §4.6): as [`want`], and no case credit may
/// be created after the revocation. A credit created at or before the revocation's instant stands;
/// with none, the revoked approval allows nothing. The runner advances the clock one second past
/// the revocation, so "after" is an order Stripe's `created` shows. Without a revocation instant
/// it is [`want`] exactly.
pub fn want_under_approval(
    truth: &GroundTruth,
    case_id: &str,
    incident: &str,
    approval: &Approval,
) -> Want {
    let w = want(truth, case_id, incident, approval.max_cents);
    match revoked_at(approval) {
        Some(at) if w.count > 0 && first_judged_credit(truth).is_none_or(|first| first > at) => {
            Want { count: 0, cents: 0 }
        }
        _ => w,
    }
}

/// The want rule for a cell or trial whose decision proposed `decided` cents (`None` when no
/// decision was saved): [`want_under_approval`], and a decision the approval never covered (not
/// `0 < decided <= max_cents`) may not be sent at all, so it allows nothing. A covered decision
/// allows one credit of the decided amount.
pub fn want_for_decision(
    truth: &GroundTruth,
    case_id: &str,
    incident: &str,
    approval: &Approval,
    decided: Option<i64>,
) -> Want {
    let w = want_under_approval(truth, case_id, incident, approval);
    match decided {
        Some(amount) if amount <= 0 || amount > approval.max_cents => Want { count: 0, cents: 0 },
        Some(amount) if w.count > 0 => Want {
            count: w.count,
            cents: amount,
        },
        _ => w,
    }
}

/// Whether a decision of `decided` cents is one the approval covers (`0 < decided <= max_cents`).
pub fn approval_covers(approval: &Approval, decided: i64) -> bool {
    decided > 0 && decided <= approval.max_cents
}
