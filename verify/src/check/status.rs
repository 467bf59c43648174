//! The statuses a receipt allows a column's outcome to end in (a matrix cell's and a nemesis
//! trial's alike), read through the protocol's vocabulary.

use crate::protocol::{Kind, Status, Via};
use crate::receipt::ReceiptReport;

/// The status strings a column may end in, for the receipt's final entry (a matrix cell's and a
/// nemesis trial's outcome alike).
pub(crate) fn outcomes_for_final(
    report: &ReceiptReport,
    final_refused_code: Option<&str>,
) -> Vec<String> {
    // A later submit of an effect already committed (a second worker, or a worker that decided
    // again with another payload) writes its PROPOSED and AUTHORIZED, finds the COMMITTED at
    // dispatch and stops, or is refused as a conflicting payload: the chain then ends in them,
    // and the effect's status is still the commit's (as `interlock::status_of` derives it: no
    // dispatch opens after a COMMITTED, so nothing after it can settle the effect again).
    let trailing_submit = matches!(
        report.final_kind.as_deref().and_then(Kind::parse),
        Some(Kind::Proposed | Kind::Authorized | Kind::Refused)
    ) && report
        .journal_kinds
        .iter()
        .any(|k| k == Kind::Committed.as_str());
    let final_kind = if trailing_submit {
        Some(Kind::Committed)
    } else {
        report.final_kind.as_deref().and_then(Kind::parse)
    };
    let status = |s: Status| s.as_str().to_owned();
    match final_kind {
        Some(Kind::Committed) => {
            let Some(via) = report.via.as_deref().and_then(Via::parse) else {
                return vec![];
            };
            // A later submit of an already committed effect answers DUPLICATE_IGNORED.
            vec![
                status(Status::committed_via(via)),
                status(Status::DuplicateIgnored),
            ]
        }
        Some(Kind::Refused) => final_refused_code
            .map(|c| vec![format!("REFUSED:{c}")])
            .unwrap_or_default(),
        Some(Kind::Ambiguous) => vec![status(Status::Ambiguous)],
        Some(Kind::Dispatched) => vec![status(Status::InFlight)],
        _ => vec![],
    }
}
