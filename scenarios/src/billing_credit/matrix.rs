//! The experiment matrix's three axes: the [`Column`]s compared, the [`CrashPoint`]s a worker
//! is killed at and the [`Outage`]s run while it is dead, with their names and the reference
//! page's rows ([`default_rows`]).

use super::ScenarioError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The three ways of sending the credit that the experiment compares (DESIGN §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    /// Save the decision, POST with a fixed idempotency key; the restart re-sends it.
    NoCheck,
    /// The idiomatic careful version: lookup, approval and premise checks before every send,
    /// with a plain JSONL log.
    HandCheck,
    /// The Interlock gate over [`CreditTarget`](super::CreditTarget) with a signed journal.
    Interlock,
}

impl Column {
    /// Every column, in display order.
    pub const ALL: [Column; 3] = [Column::NoCheck, Column::HandCheck, Column::Interlock];

    /// `no_check`, `hand_check` or `interlock`.
    pub fn as_str(self) -> &'static str {
        match self {
            Column::NoCheck => "no_check",
            Column::HandCheck => "hand_check",
            Column::Interlock => "interlock",
        }
    }

    /// The kind of record the column leaves: `none`, `plain_log` or `signed_chain`.
    pub fn record(self) -> &'static str {
        verify::scenarios::billing_credit::proof::record_kind(self.as_str())
    }
}

/// Where the decide worker is killed (DESIGN §4.4), or, for the nemesis (DESIGN §5.1), any step
/// a column passes in its decide phase. The default matrix uses only [`CrashPoint::ALL`]
/// (`before_send`, `after_send`); [`CrashPoint::STEPS`] are every step a hook can fire at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CrashPoint {
    /// Right before the credit POST.
    BeforeSend,
    /// Right after the POST's response was parsed, before anything recorded it.
    AfterSend,
    /// The worker started; nothing read yet (fired by the worker itself).
    Started,
    /// `decision.json` is durable; the column has not started its send.
    DecisionSaved,
    /// hand_check: the lookup found no credit and its log line is durable.
    Lookup,
    /// hand_check: the approval check passed and its log line is durable.
    Approval,
    /// hand_check: the premise check passed and its log line is durable.
    Premises,
    /// hand_check: the `send` log line is durable (the POST is next).
    SendLogged,
    /// hand_check: the `sent` log line is durable.
    SentLogged,
    /// interlock: PROPOSED is durable.
    Proposed,
    /// interlock: AUTHORIZED is durable.
    Authorized,
    /// interlock: DISPATCHED is durable and the claim held (the send is next).
    Dispatched,
    /// interlock: COMMITTED is durable.
    Committed,
    /// Registered as a hook's point: the hook is called at every step (it decides what to do).
    Every,
}

impl CrashPoint {
    /// The default matrix's crash points; the only names [`CrashPoint::parse`] accepts.
    pub const ALL: [CrashPoint; 2] = [CrashPoint::BeforeSend, CrashPoint::AfterSend];

    /// Every step a hook registered at [`CrashPoint::Every`] is called at.
    pub const STEPS: [CrashPoint; 13] = [
        CrashPoint::Started,
        CrashPoint::DecisionSaved,
        CrashPoint::Lookup,
        CrashPoint::Approval,
        CrashPoint::Premises,
        CrashPoint::SendLogged,
        CrashPoint::Proposed,
        CrashPoint::Authorized,
        CrashPoint::Dispatched,
        CrashPoint::BeforeSend,
        CrashPoint::AfterSend,
        CrashPoint::SentLogged,
        CrashPoint::Committed,
    ];

    /// The point's name (`before_send`, `after_send`, `decision_saved`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CrashPoint::BeforeSend => "before_send",
            CrashPoint::AfterSend => "after_send",
            CrashPoint::Started => "started",
            CrashPoint::DecisionSaved => "decision_saved",
            CrashPoint::Lookup => "lookup",
            CrashPoint::Approval => "approval",
            CrashPoint::Premises => "premises",
            CrashPoint::SendLogged => "send_logged",
            CrashPoint::SentLogged => "sent_logged",
            CrashPoint::Proposed => "proposed",
            CrashPoint::Authorized => "authorized",
            CrashPoint::Dispatched => "dispatched",
            CrashPoint::Committed => "committed",
            CrashPoint::Every => "every",
        }
    }

    /// A step by name (any of [`CrashPoint::STEPS`]).
    pub fn step(name: &str) -> Result<CrashPoint, ScenarioError> {
        CrashPoint::STEPS
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| ScenarioError::UnknownName {
                what: "step",
                got: name.to_owned(),
                expected: CrashPoint::STEPS.map(CrashPoint::as_str).join(", "),
            })
    }
}

/// What happens at Stripe while the worker is dead (DESIGN §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outage {
    /// The test clock advances through the renewal: Stripe invoices, applies the balance, charges.
    Renewal,
    /// The renewal, then billing's SLA automation credits the renewal invoice for the same incident.
    BillingCredit,
    /// A mid-cycle downgrade $30 → $20 with prorations, then the renewal.
    Proration,
    /// As [`Outage::BillingCredit`] but for a different incident.
    UnrelatedCredit,
}

impl Outage {
    /// Every outage.
    pub const ALL: [Outage; 4] = [
        Outage::Renewal,
        Outage::BillingCredit,
        Outage::Proration,
        Outage::UnrelatedCredit,
    ];

    /// `renewal`, `billing_credit`, `proration` or `unrelated_credit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outage::Renewal => "renewal",
            Outage::BillingCredit => "billing_credit",
            Outage::Proration => "proration",
            Outage::UnrelatedCredit => "unrelated_credit",
        }
    }

    /// One sentence saying what the outage does, for pages and logs.
    pub fn describe(self) -> &'static str {
        match self {
            Outage::Renewal => {
                "test clock advanced through the renewal: Stripe invoices, applies any customer \
                 balance, charges the card"
            }
            Outage::BillingCredit => {
                "renewal, then billing's SLA automation issues a $10 credit note on the renewal \
                 invoice for the same incident (credited to the customer balance)"
            }
            Outage::Proration => {
                "the customer downgrades $30 -> $20 with proration (credit line for unused time), \
                 then the renewal"
            }
            Outage::UnrelatedCredit => {
                "renewal, then billing's SLA automation issues a $10 credit note on the renewal \
                 invoice for a DIFFERENT incident"
            }
        }
    }
}

/// The reference page's six rows, in its order: verify's plan
/// ([`verify::scenarios::billing_credit::REFERENCE_ROWS`]) in this crate's typed names.
pub fn default_rows() -> Vec<(CrashPoint, Outage)> {
    verify::scenarios::billing_credit::REFERENCE_ROWS
        .iter()
        .filter_map(|(c, o)| Some((c.parse().ok()?, o.parse().ok()?)))
        .collect()
}

macro_rules! string_enum {
    ($t:ident, $what:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $t {
            type Err = ScenarioError;

            fn from_str(s: &str) -> Result<Self, ScenarioError> {
                $t::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| ScenarioError::UnknownName {
                        what: $what,
                        got: s.to_owned(),
                        expected: $t::ALL
                            .iter()
                            .map(|v| v.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            }
        }

        impl $t {
            /// Parses the name returned by `as_str`.
            pub fn parse(s: &str) -> Result<Self, ScenarioError> {
                s.parse()
            }
        }

        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_enum!(Column, "column");
string_enum!(CrashPoint, "crash point");
string_enum!(Outage, "outage");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Column::ALL {
            assert_eq!(Column::parse(c.as_str()).unwrap(), c);
        }
        for c in CrashPoint::ALL {
            assert_eq!(CrashPoint::parse(c.as_str()).unwrap(), c);
        }
        for o in Outage::ALL {
            assert_eq!(Outage::parse(o.as_str()).unwrap(), o);
        }
        let err = Outage::parse("renewl").unwrap_err().to_string();
        assert!(
            err.contains("renewl") && err.contains("unrelated_credit"),
            "{err}"
        );
        assert_eq!(
            serde_json::to_string(&CrashPoint::AfterSend).unwrap(),
            "\"after_send\""
        );
    }

    #[test]
    fn default_rows_follow_the_reference_page() {
        let names: Vec<String> = default_rows()
            .iter()
            .map(|(c, o)| format!("{c}/{o}"))
            .collect();
        // Every column of verify's plan is one of this crate's, in its order.
        let columns: Vec<&str> = Column::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            columns,
            verify::scenarios::billing_credit::REFERENCE_COLUMNS
        );
        assert_eq!(
            names,
            [
                "before_send/renewal",
                "before_send/billing_credit",
                "before_send/proration",
                "after_send/renewal",
                "after_send/proration",
                "before_send/unrelated_credit"
            ]
        );
    }
}
