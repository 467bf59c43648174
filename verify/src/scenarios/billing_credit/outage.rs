//! The outages of the matrix (DESIGN §4.5): what each one's record must show.

use crate::results::OutageRecord;

/// Why an outage record does not fit the outage named by the cell's label (DESIGN §4.5), or `None`
/// when it fits or the outage is not one of the four this rule knows.
pub fn outage_misfit(outage: &str, record: &OutageRecord, incident: &str) -> Option<&'static str> {
    let note_incident = record.credit_note_incident.as_deref();
    match outage {
        "renewal" if record.credit_note.is_some() || record.downgraded_to_price.is_some() => {
            Some("a renewal outage issues no credit note and changes no price")
        }
        "billing_credit" if record.credit_note.is_none() || note_incident != Some(incident) => {
            Some("a billing_credit outage issues a credit note for the case's own incident")
        }
        "unrelated_credit" if record.credit_note.is_none() || note_incident == Some(incident) => {
            Some("an unrelated_credit outage issues a credit note for another incident")
        }
        "proration" if record.downgraded_to_price.is_none() || record.credit_note.is_some() => {
            Some("a proration outage downgrades the price and issues no credit note")
        }
        _ => None,
    }
}
