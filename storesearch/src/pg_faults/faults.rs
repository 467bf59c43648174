//! Faults aimed at round trips, and the schedule a gate's proxy keeps: it counts each session's
//! round trips by class, says which fault (if any) a round trip gets, and records the faults
//! that fired.

use super::statements::{Class, Session, StepOf};
use std::collections::HashMap;
use std::fmt;
use std::time::Instant;

/// When in its round trip a fault strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// Before the request reaches the server (it never runs, unless the fault only delays it).
    Request,
    /// Once the server has answered, before the answer reaches the client (the statement ran
    /// and committed; the client does not know).
    Answer,
    /// Right after the answer reached the client.
    After,
}

impl At {
    /// `request`, `answer` or `after`.
    pub fn as_str(self) -> &'static str {
        match self {
            At::Request => "request",
            At::Answer => "answer",
            At::After => "after",
        }
    }
}

/// What a partition ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Both sides are closed.
    Close,
    /// Forwarding resumes; nothing was lost.
    Resume,
}

/// What a fault does to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Close both sides (each sees the connection end).
    Drop,
    /// Close both sides with a reset (SO_LINGER 0: an RST, not a FIN).
    Reset,
    /// Hold the request (or the answer) this many milliseconds, then go on.
    Delay(u64),
    /// Forward nothing either way for this many milliseconds, then close or resume.
    Partition(u64, Then),
}

/// A fault's kind, for the tallies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// [`Action::Drop`].
    Drop,
    /// [`Action::Reset`].
    Reset,
    /// [`Action::Delay`].
    Delay,
    /// [`Action::Partition`].
    Partition,
}

impl Kind {
    /// Every kind, in order.
    pub const ALL: [Kind; 4] = [Kind::Drop, Kind::Reset, Kind::Delay, Kind::Partition];

    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Drop => "drop",
            Kind::Reset => "reset",
            Kind::Delay => "delay",
            Kind::Partition => "partition",
        }
    }
}

impl Action {
    /// Its kind.
    pub fn kind(self) -> Kind {
        match self {
            Action::Drop => Kind::Drop,
            Action::Reset => Kind::Reset,
            Action::Delay(_) => Kind::Delay,
            Action::Partition(..) => Kind::Partition,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Drop => f.write_str("drop"),
            Action::Reset => f.write_str("reset"),
            Action::Delay(ms) => write!(f, "delay {ms}ms"),
            Action::Partition(ms, Then::Close) => write!(f, "partition {ms}ms, close"),
            Action::Partition(ms, Then::Resume) => write!(f, "partition {ms}ms, resume"),
        }
    }
}

/// A fault aimed at one round trip of one session of a gate: the `nth` round trip of `class`
/// that runs a statement (`None`: the `nth` round trip of any kind, preparing and closing
/// statements included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    /// The session it strikes.
    pub session: Session,
    /// The class of round trip it counts (`None`: every round trip).
    pub class: Option<Class>,
    /// Which one of them (from 1).
    pub nth: u32,
    /// When in that round trip.
    pub at: At,
    /// What it does.
    pub action: Action,
    /// When it fires, the other session's next round trip gets this at its request: one event
    /// of the network that the two sessions fare differently in.
    pub then_other: Option<Action>,
}

impl FaultSpec {
    fn aim(&self) -> String {
        match self.class {
            Some(c) => format!("{}#{}", c, self.nth),
            None => format!("round-trip#{}", self.nth),
        }
    }
}

/// The gate a proxy stands in front of: `A` or `B`.
pub type GateName = char;

/// A fault that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// Milliseconds since the schedule started.
    pub at_ms: u128,
    /// What it struck, in words (`A.claims confirm#2 after: reset`).
    pub what: String,
    /// Its kind.
    pub kind: Kind,
}

/// A fault a round trip gets: which spec, when and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    /// Index of the spec in the schedule (to record it when it strikes).
    pub spec: usize,
    /// When it strikes.
    pub at: At,
    /// What it does.
    pub action: Action,
}

/// One gate's faults, the round trips counted so far, and what fired.
#[derive(Debug)]
pub struct Schedule {
    gate: GateName,
    specs: Vec<FaultSpec>,
    /// Round trips counted per session and class (`None`: all of the session's).
    counts: HashMap<(Session, Option<Class>), u32>,
    fired: Vec<Fired>,
    started: Instant,
}

impl Schedule {
    /// The schedule of gate `gate` with these faults.
    pub fn new(gate: GateName, specs: Vec<FaultSpec>) -> Schedule {
        Schedule {
            gate,
            specs,
            counts: HashMap::new(),
            fired: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Count a round trip of `session` (its statement's class and step) and say which fault it
    /// gets, if any. A spec is planned once: when the round trip it counts to comes.
    pub fn round_trip(&mut self, session: Session, class: Class, step: StepOf) -> Option<Planned> {
        let any = bump(&mut self.counts, (session, None));
        let nth_of_class =
            (step == StepOf::Run).then(|| bump(&mut self.counts, (session, Some(class))));
        let hit = self.specs.iter().position(|s| {
            s.session == session
                && match s.class {
                    None => s.nth == any,
                    Some(c) => c == class && Some(s.nth) == nth_of_class,
                }
        })?;
        let spec = self.specs[hit];
        // A connection's startup has no answer to hold: its faults strike the request.
        let at = if class == Class::Connect {
            At::Request
        } else {
            spec.at
        };
        Some(Planned {
            spec: hit,
            at,
            action: spec.action,
        })
    }

    /// Record that `planned` struck, and aim its companion fault (if any) at the other
    /// session's next round trip.
    pub fn fire(&mut self, planned: Planned) {
        let Some(spec) = self.specs.get(planned.spec).copied() else {
            return;
        };
        self.fired.push(Fired {
            at_ms: self.started.elapsed().as_millis(),
            what: format!(
                "{}.{} {} {}: {}",
                self.gate,
                spec.session.as_str(),
                spec.aim(),
                planned.at.as_str(),
                planned.action
            ),
            kind: planned.action.kind(),
        });
        if let Some(action) = spec.then_other {
            let other = spec.session.other();
            let next = self.counts.get(&(other, None)).copied().unwrap_or(0) + 1;
            self.specs.push(FaultSpec {
                session: other,
                class: None,
                nth: next,
                at: At::Request,
                action,
                then_other: None,
            });
        }
    }

    /// The faults that struck, in order.
    pub fn fired(&self) -> &[Fired] {
        &self.fired
    }

    /// How many round trips each session made.
    pub fn round_trips(&self, session: Session) -> u32 {
        self.counts.get(&(session, None)).copied().unwrap_or(0)
    }
}

fn bump(counts: &mut HashMap<(Session, Option<Class>), u32>, key: (Session, Option<Class>)) -> u32 {
    let n = counts.entry(key).or_insert(0);
    *n += 1;
    *n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(session: Session, class: Option<Class>, nth: u32, at: At) -> FaultSpec {
        FaultSpec {
            session,
            class,
            nth,
            at,
            action: Action::Drop,
            then_other: None,
        }
    }

    #[test]
    fn a_fault_strikes_the_nth_round_trip_of_its_class_and_session() {
        let mut s = Schedule::new(
            'A',
            vec![spec(Session::Claims, Some(Class::Confirm), 2, At::After)],
        );
        assert_eq!(
            s.round_trip(Session::Claims, Class::Confirm, StepOf::Prepare),
            None
        );
        assert_eq!(
            s.round_trip(Session::Claims, Class::Confirm, StepOf::Run),
            None
        );
        assert_eq!(
            s.round_trip(Session::Main, Class::Confirm, StepOf::Run),
            None
        );
        let hit = s.round_trip(Session::Claims, Class::Confirm, StepOf::Run);
        assert_eq!(hit.map(|p| (p.spec, p.at)), Some((0, At::After)));
        assert_eq!(s.round_trips(Session::Claims), 3);
        assert!(s.fired().is_empty(), "planned is not yet fired");
    }

    #[test]
    fn a_fault_on_any_round_trip_counts_preparing_and_closing_too() {
        let mut s = Schedule::new('B', vec![spec(Session::Main, None, 3, At::Request)]);
        assert!(s
            .round_trip(Session::Main, Class::Append, StepOf::Prepare)
            .is_none());
        assert!(s
            .round_trip(Session::Main, Class::Append, StepOf::Run)
            .is_none());
        assert!(s
            .round_trip(Session::Main, Class::Append, StepOf::Close)
            .is_some());
    }

    #[test]
    fn a_connection_startup_is_struck_at_its_request() {
        let mut s = Schedule::new(
            'A',
            vec![spec(Session::Main, Some(Class::Connect), 1, At::After)],
        );
        let hit = s.round_trip(Session::Main, Class::Connect, StepOf::Run);
        assert_eq!(hit.map(|p| p.at), Some(At::Request));
    }

    #[test]
    fn a_companion_fault_strikes_the_other_sessions_next_round_trip() {
        let mut first = spec(Session::Claims, Some(Class::Confirm), 1, At::After);
        first.then_other = Some(Action::Delay(200));
        let mut s = Schedule::new('A', vec![first]);
        assert!(s
            .round_trip(Session::Main, Class::Lock, StepOf::Run)
            .is_none());
        let hit = s.round_trip(Session::Claims, Class::Confirm, StepOf::Run);
        let Some(hit) = hit else {
            panic!("the confirm was not struck");
        };
        s.fire(hit);
        let next = s.round_trip(Session::Main, Class::Append, StepOf::Prepare);
        assert_eq!(
            next.map(|p| (p.at, p.action)),
            Some((At::Request, Action::Delay(200)))
        );
        assert_eq!(s.fired().len(), 1);
        assert_eq!(s.fired()[0].what, "A.claims confirm#1 after: drop");
    }
}
