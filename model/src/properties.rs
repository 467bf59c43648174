//! What must hold in every reachable state (DESIGN §2.2 and issue 15), and what must be
//! reachable so that the checks are not vacuous.

use crate::journal::{as_entries, closing, fold, Entry};
use crate::{Bug, GateModel, Seen, State};
use interlock::{status_of, Status};
use stateright::Property;

/// The properties as bits of [`State::broken`] for the ones checked when a step happens (a
/// send, a DISPATCHED), and as names for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// I1.
    SendAfterDispatched = 1,
    /// I2, second half.
    NoConcurrentSend = 2,
    /// I3.
    PremisesRechecked = 4,
    /// I4.
    LeaseRechecked = 8,
    /// I5.
    FirstPayload = 16,
    /// A settled dispatch is never sent again.
    SettledNotResent = 32,
    /// A holder's dispatch is never closed by another process.
    HolderKeepsDispatch = 64,
}

impl Check {
    /// The property's name, as reported.
    pub fn name(self) -> &'static str {
        match self {
            Check::SendAfterDispatched => I1,
            Check::NoConcurrentSend => I2_SEND,
            Check::PremisesRechecked => I3,
            Check::LeaseRechecked => I4,
            Check::FirstPayload => I5,
            Check::SettledNotResent => SETTLED,
            Check::HolderKeepsDispatch => HOLDER,
        }
    }
}

/// I1.
pub const I1: &str = "I1: nothing is sent without a durable DISPATCHED";
/// I2, first half.
pub const I2_COMMIT: &str = "I2: at most one COMMITTED per effect";
/// I2, second half.
pub const I2_SEND: &str =
    "I2: no second send while another may still land (targets without dedupe)";
/// I3.
pub const I3: &str = "I3: premises re-checked and holding before DISPATCHED and before a resend";
/// I4.
pub const I4: &str = "I4: lease live when DISPATCHED is written, and re-checked live after taking the claim before a resend";
/// I5.
pub const I5: &str = "I5: every request carries the payload of the first PROPOSED";
/// Settled dispatches stay settled.
pub const SETTLED: &str = "a settled dispatch (COMMITTED, REFUSED, AMBIGUOUS) is never sent again";
/// The claim protects its holder.
pub const HOLDER: &str = "a holder's open dispatch is never closed by another process";
/// At most one landing.
pub const ONE_LANDING: &str = "at most one landing per effect";
/// REFUSED means not done.
pub const REFUSED_NOT_LANDED: &str = "no request of a dispatch settled REFUSED ever lands";
/// Told "in use", never refused.
pub const IN_USE_NOT_REFUSED: &str =
    "no dispatch refused by a process told 'in use' for it (and no replayed failure since) ever lands";
/// COMMITTED means done.
pub const COMMITTED_LANDED: &str = "a COMMITTED effect is at the service";
/// The journal's final word.
pub const AGREES: &str =
    "once quiet, the journal's status (interlock::status_of) agrees with the service";
/// P, as a bound.
pub const PROGRESS: &str = "P: recovery decides within a bounded number of resends";
/// P, as progress.
pub const SETTLES: &str =
    "P: left alone (answers delivered, or all lost), recovery settles every open dispatch";
/// Reachability.
pub const REACH_RETRY: &str = "reachable: COMMITTED by recovery";
/// Reachability.
pub const REACH_REFUSED: &str = "reachable: REFUSED at recovery after a trusted lookup";

/// Reachability.
pub const REACH_AMBIGUOUS: &str = "reachable: AMBIGUOUS";
/// Reachability.
pub const REACH_CORRUPT: &str = "reachable: a replayed line reported corrupt";
/// Reachability.
pub const REACH_CONFLICT: &str = "reachable: REFUSED:conflicting_payload";
/// Reachability.
pub const REACH_LOST_SENT: &str =
    "reachable: a request leaves a holder whose claim was lost (before its deadline)";
/// Reachability.
pub const REACH_DEADLINE: &str = "reachable: a send deadline passes before the request leaves";

/// The property a broken variant must violate.
pub fn expected_failure(bug: Bug) -> &'static str {
    match bug {
        Bug::LeaseOnlyBeforePremises => I4,
        Bug::InFlightFromDispatched => ONE_LANDING,
        Bug::UncheckedJournalLines => SETTLED,
        Bug::ResendWithoutLookup => SETTLES,
        Bug::TakeOverLiveHolder => I2_SEND,
        Bug::StaleNotFoundTrusted => ONE_LANDING,
        Bug::NoSendDeadline => I2_SEND,
        Bug::TakeOverWaitsOnlyInFlight => I2_SEND,
        Bug::InUseCountedAsUnknown => REFUSED_NOT_LANDED,
        Bug::UnknownAfterInUseGivesUp => IN_USE_NOT_REFUSED,
    }
}

fn bit(s: &State, c: Check) -> bool {
    s.broken & (c as u16) == 0
}

impl GateModel {
    /// Every property, in report order: the invariants, then the states that must be reachable.
    pub fn all_properties() -> Vec<Property<GateModel>> {
        let mut all = invariants();
        all.extend(reachable());
        all
    }

    /// Nothing can still change the effect: no process mid-step, no request in flight, no
    /// open dispatch.
    pub fn quiet(&self, s: &State) -> bool {
        s.procs.iter().all(|p| p.is_idle())
            && s.service.requests.is_empty()
            && fold(&s.journal, !self.has(Bug::UncheckedJournalLines))
                .open
                .is_none()
    }

    /// The status `interlock::status_of` reads from the journal agrees with the service.
    pub fn agrees(&self, s: &State) -> bool {
        let landed = s.service.landings.len();
        match status_of(&as_entries(&s.journal)) {
            Some(st) if st.is_committed() => landed >= 1,
            Some(Status::Refused(_)) => landed == 0,
            _ => true,
        }
    }
}

/// The properties that must hold in every state, in report order.
fn invariants() -> Vec<Property<GateModel>> {
    vec![
        Property::always(I1, |_: &GateModel, s: &State| {
            bit(s, Check::SendAfterDispatched)
        }),
        Property::always(I2_COMMIT, |_: &GateModel, s: &State| {
            s.journal
                .iter()
                .enumerate()
                .filter(|(i, l)| usize::from(l.id) == *i && matches!(l.entry, Entry::Committed(_)))
                .count()
                <= 1
        }),
        Property::always(I2_SEND, |_: &GateModel, s: &State| {
            bit(s, Check::NoConcurrentSend)
        }),
        Property::always(I3, |_: &GateModel, s: &State| {
            bit(s, Check::PremisesRechecked)
        }),
        Property::always(I4, |_: &GateModel, s: &State| bit(s, Check::LeaseRechecked)),
        Property::always(I5, |_: &GateModel, s: &State| bit(s, Check::FirstPayload)),
        Property::always(SETTLED, |_: &GateModel, s: &State| {
            bit(s, Check::SettledNotResent)
        }),
        Property::always(HOLDER, |_: &GateModel, s: &State| {
            bit(s, Check::HolderKeepsDispatch)
        }),
        Property::always(ONE_LANDING, |_: &GateModel, s: &State| {
            s.service.landings.len() <= 1
        }),
        Property::always(REFUSED_NOT_LANDED, |_: &GateModel, s: &State| {
            s.journal.iter().enumerate().all(|(i, l)| {
                !matches!(l.entry, Entry::Dispatched { .. })
                    || !matches!(
                        closing(&s.journal, i),
                        Some(Entry::Refused { resolves: true, .. })
                    )
                    || !s.service.landings.contains(&l.id)
            })
        }),
        Property::always(IN_USE_NOT_REFUSED, |_: &GateModel, s: &State| {
            s.service.landings.iter().all(|id| {
                s.refused_after_in_use & 1u8.checked_shl(u32::from(*id)).unwrap_or(0) == 0
            })
        }),
        Property::always(COMMITTED_LANDED, |_: &GateModel, s: &State| {
            !s.journal
                .iter()
                .any(|l| matches!(l.entry, Entry::Committed(_)))
                || s.service.found()
        }),
        Property::always(AGREES, |m: &GateModel, s: &State| {
            !m.quiet(s) || m.agrees(s)
        }),
        Property::always(PROGRESS, |m: &GateModel, s: &State| {
            s.resends <= m.resend_bound()
        }),
        Property::always(SETTLES, |m: &GateModel, s: &State| {
            m.settles_alone(s, false) && m.settles_alone(s, true)
        }),
    ]
}

/// The states some run must reach (so the checks above are not vacuous), in report order.
fn reachable() -> Vec<Property<GateModel>> {
    vec![
        Property::sometimes(REACH_RETRY, |_: &GateModel, s: &State| {
            s.journal.iter().any(|l| {
                matches!(
                    l.entry,
                    Entry::Committed(
                        interlock::Via::RetryIdempotent
                            | interlock::Via::RecoveryReapply
                            | interlock::Via::RecoveryQuery
                    )
                )
            })
        }),
        Property::sometimes(REACH_REFUSED, |_: &GateModel, s: &State| {
            s.journal.iter().any(|l| {
                matches!(
                    l.entry,
                    Entry::Refused {
                        code: interlock::RefusalCode::LeaseAtRecovery
                            | interlock::RefusalCode::StalePremiseAtRecovery
                            | interlock::RefusalCode::TargetFailedAtRecovery,
                        ..
                    }
                )
            })
        }),
        Property::sometimes(REACH_AMBIGUOUS, |_: &GateModel, s: &State| {
            s.journal.iter().any(|l| l.entry == Entry::Ambiguous)
        }),
        Property::sometimes(REACH_CORRUPT, |_: &GateModel, s: &State| {
            fold(&s.journal, true).corrupt_at.is_some()
        }),
        Property::sometimes(REACH_LOST_SENT, |_: &GateModel, s: &State| {
            s.seen & Seen::LostHolderSent as u8 != 0
        }),
        Property::sometimes(REACH_DEADLINE, |_: &GateModel, s: &State| {
            s.seen & Seen::DeadlineStopped as u8 != 0
        }),
        Property::sometimes(REACH_CONFLICT, |_: &GateModel, s: &State| {
            s.journal.iter().any(|l| {
                matches!(
                    l.entry,
                    Entry::Refused {
                        code: interlock::RefusalCode::ConflictingPayload,
                        ..
                    }
                )
            })
        }),
    ]
}

/// The properties are the model's (kept here so `Model::properties` stays one line).
pub(crate) fn properties() -> Vec<Property<GateModel>> {
    GateModel::all_properties()
}
