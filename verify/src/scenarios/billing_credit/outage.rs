//! The outages of the matrix (DESIGN §4.5): what each one's record must show.

use crate::results::OutageRecord;

/// The outage that renews the subscription while the worker is dead.
pub const RENEWAL: &str = "renewal";
/// The outage in which billing credits the case's own incident (the name is the outage's, not
/// the scenario's).
pub const BILLING_CREDIT: &str = "billing_credit";
/// The outage in which billing credits another incident of the same customer.
pub const UNRELATED_CREDIT: &str = "unrelated_credit";
/// The outage that downgrades the customer's price, prorated.
pub const PRORATION: &str = "proration";

/// Why an outage record does not fit the outage named by the cell's label (DESIGN §4.5), or `None`
/// when it fits or the outage is not one of the four this rule knows.
pub fn outage_misfit(outage: &str, record: &OutageRecord, incident: &str) -> Option<&'static str> {
    let note_incident = record.credit_note_incident.as_deref();
    match outage {
        RENEWAL if record.credit_note.is_some() || record.downgraded_to_price.is_some() => {
            Some("a renewal outage issues no credit note and changes no price")
        }
        BILLING_CREDIT if record.credit_note.is_none() || note_incident != Some(incident) => {
            Some("a billing_credit outage issues a credit note for the case's own incident")
        }
        UNRELATED_CREDIT if record.credit_note.is_none() || note_incident == Some(incident) => {
            Some("an unrelated_credit outage issues a credit note for another incident")
        }
        PRORATION if record.downgraded_to_price.is_none() || record.credit_note.is_some() => {
            Some("a proration outage downgrades the price and issues no credit note")
        }
        _ => None,
    }
}
