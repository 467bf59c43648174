//! The `stateright` model over the gate's world: its initial state, the actions enabled in a
//! state and the state each leads to; and the protocol left alone from a state.

use super::{Action, Activity, Proc, Recovery, State, Submit};
use crate::bounded::Bounded;
use crate::journal::Entry;
use crate::properties::properties;
use crate::service::{Outcome, Service};
use crate::{Bug, GateModel};
use interlock::decide::{SendAnswer, SubmitFacts};
use stateright::{Model, Property};

impl GateModel {
    /// Left alone from `s` — no more crashes, revocations, premise changes or replayed lines,
    /// no new proposals, the clock free to run past `max_time` — does the protocol settle the
    /// effect? Every process takes its steps, idle ones start recovery rounds, requests end in
    /// the first way the service allows; answers reach their process (`hostile`: every answer
    /// is lost). Checked where every process is between calls.
    pub fn settles_alone(&self, s: &State, hostile: bool) -> bool {
        self.continue_alone(s, hostile, None)
    }

    /// [`GateModel::settles_alone`], recording the steps taken into `path` when given.
    pub fn continue_alone(
        &self,
        s: &State,
        hostile: bool,
        mut path: Option<&mut Vec<(State, Option<Action>)>>,
    ) -> bool {
        if !s.procs.iter().all(Proc::is_idle) || self.fold(s).corrupt_at.is_some() {
            return true;
        }
        let mut s = *s;
        s.crashes_left = 0;
        s.revocations_left = 0;
        s.premise_changes_left = 0;
        s.replays_left = 0;
        s.losses_left = 0;
        let mut actions = Vec::new();
        let mut blocked = false;
        for _ in 0..400 {
            let f = self.fold(&s);
            if f.corrupt_at.is_some() || (f.open.is_none() && s.procs.iter().all(Proc::is_idle)) {
                if let Some(p) = path.as_deref_mut() {
                    p.push((s, None));
                }
                return true;
            }
            actions.clear();
            self.actions(&s, &mut actions);
            let pick = |want: &dyn Fn(&Action) -> bool| actions.iter().copied().find(|a| want(a));
            let next = pick(&|a| matches!(a, Action::End(..)))
                .or_else(|| {
                    pick(&|a| match a {
                        Action::Answer(_, ans) => hostile == (*ans == SendAnswer::Unknown),
                        _ => false,
                    })
                })
                .or_else(|| pick(&|a| matches!(a, Action::Answer(..))))
                .or_else(|| pick(&|a| matches!(a, Action::Step(_))))
                // A round that ended blocked is retried once the clock has moved on (the
                // gate's `recover_wait` sleeps until the instant it was told).
                .or_else(|| {
                    (!blocked)
                        .then(|| pick(&|a| matches!(a, Action::Recover(_))))
                        .flatten()
                })
                .unwrap_or(Action::Tick);
            let Some(n) = self.next_state(&s, next) else {
                return false;
            };
            let busy = |s: &State| s.procs.iter().any(|p| !p.is_idle());
            blocked = match next {
                Action::Tick => false,
                Action::Step(_) | Action::Answer(..) => busy(&s) && !busy(&n),
                _ => blocked,
            };
            if let Some(p) = path.as_deref_mut() {
                p.push((s, Some(next)));
            }
            s = n;
        }
        if let Some(p) = path {
            p.push((s, None));
        }
        false
    }
}

impl GateModel {
    /// One tick: the clock moves on, and every process told "in use" may ask again.
    fn tick(s: &mut State) {
        s.now += 1;
        for m in s.procs.iter_mut().filter_map(|p| p.memory.as_mut()) {
            m.told_in_use = false;
        }
    }
}

impl Model for GateModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            now: 0,
            procs: self
                .proposals
                .iter()
                .map(|&todo| Proc {
                    todo,
                    act: Activity::Idle,
                    memory: None,
                    lost: false,
                })
                .collect(),
            journal: Bounded::default(),
            claim: None,
            record: None,
            lease_live: true,
            premises_hold: true,
            service: Service::default(),
            crashes_left: self.crashes,
            revocations_left: self.revocations,
            premise_changes_left: self.premise_changes,
            replays_left: self.replayed_lines,
            losses_left: self.claim_losses,
            resends: 0,
            broken: 0,
            seen: 0,
            refused_after_in_use: 0,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let f = self.fold(s);
        // A journal found corrupt stops every gate process with an error naming the line.
        let usable = f.corrupt_at.is_none();
        for (i, proc) in s.procs.iter().enumerate() {
            let p = u8::try_from(i).unwrap_or(u8::MAX);
            if usable {
                match proc.act {
                    Activity::Idle => {
                        if proc.todo.is_some() {
                            actions.push(Action::Propose(p));
                        }
                        let holder_live = s.claim.is_some_and(|h| h != p);
                        // Told "in use" at this instant: it asks again once the clock moved on.
                        let told_in_use = proc.memory.is_some_and(|m| m.told_in_use);
                        if f.open.is_some()
                            && !told_in_use
                            && (s.claim.is_none()
                                || (holder_live && self.has(Bug::TakeOverLiveHolder)))
                        {
                            actions.push(Action::Recover(p));
                        }
                    }
                    Activity::Submitting(Submit { awaiting: true, .. })
                    | Activity::Recovering(Recovery {
                        awaiting: Some(_), ..
                    }) => {
                        if let Some(r) = s.service.awaited_by(p) {
                            if let Some(o) = r.outcome {
                                actions.push(Action::Answer(p, o.answer()));
                            }
                            if self.lost_answers
                                && r.outcome.map(Outcome::answer) != Some(SendAnswer::Unknown)
                            {
                                actions.push(Action::Answer(p, SendAnswer::Unknown));
                            }
                        }
                    }
                    Activity::Submitting(_) | Activity::Recovering(_) => {
                        actions.push(Action::Step(p));
                    }
                }
            }
            if s.crashes_left > 0 && (!proc.is_idle() || proc.memory.is_some()) {
                actions.push(Action::Crash(p));
            }
        }
        for (i, r) in s.service.requests.iter().enumerate() {
            if r.outcome.is_none() {
                for o in s
                    .service
                    .possible(i, self.dedup, self.failures, self.rejects)
                {
                    actions.push(Action::End(u8::try_from(i).unwrap_or(u8::MAX), o));
                }
            }
        }
        if s.revocations_left > 0 && s.lease_live {
            actions.push(Action::Revoke);
        }
        if s.premise_changes_left > 0 && s.premises_hold {
            actions.push(Action::ChangePremises);
        }
        if s.replays_left > 0
            && f.open.is_none()
            && s.journal
                .iter()
                .any(|l| matches!(l.entry, Entry::Dispatched { .. }))
        {
            actions.push(Action::ReplayLine);
        }
        if self.may_tick(s) {
            actions.push(Action::Tick);
        }
        if s.losses_left > 0 && s.claim.is_some() {
            actions.push(Action::LoseClaim);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = *last;
        match action {
            Action::Propose(p) => {
                let proc = s.procs.get_mut(usize::from(p))?;
                let payload = proc.todo.take()?;
                proc.act = Activity::Submitting(Submit {
                    payload,
                    facts: SubmitFacts::new(self.lookup),
                    dispatch: None,
                    awaiting: false,
                    deadline: None,
                });
                let Activity::Submitting(sub) = proc.act else {
                    return None;
                };
                self.step_submit(&mut s, p, sub);
            }
            Action::Step(p) => match s.procs.get(usize::from(p))?.act {
                Activity::Submitting(sub) => self.step_submit(&mut s, p, sub),
                Activity::Recovering(r) => self.step_recovery(&mut s, p, r),
                Activity::Idle => return None,
            },
            Action::Answer(p, answer) => {
                s.service.forget_waiter(p);
                match s.procs.get(usize::from(p))?.act {
                    Activity::Submitting(sub) => self.answer_submit(&mut s, p, sub, answer),
                    Activity::Recovering(r) => self.answer_recovery(&mut s, p, r, answer),
                    Activity::Idle => return None,
                }
            }
            Action::Recover(p) => {
                let at = self.fold(&s).open?;
                self.start_recovery(&mut s, p, at);
            }
            Action::Crash(p) => {
                s.crashes_left -= 1;
                if s.claim == Some(p) {
                    s.claim = None;
                }
                s.service.forget_waiter(p);
                // A process of this host known to be gone can no longer send.
                if let Some(r) = s.record.as_mut().filter(|r| r.owner == Some(p)) {
                    r.owner = None;
                }
                let proc = s.procs.get_mut(usize::from(p))?;
                proc.act = Activity::Idle;
                proc.memory = None;
                proc.lost = false;
            }
            Action::End(i, outcome) => s.service.resolve(usize::from(i), outcome, self.dedup),
            Action::Revoke => {
                s.revocations_left -= 1;
                s.lease_live = false;
            }
            Action::ChangePremises => {
                s.premise_changes_left -= 1;
                s.premises_hold = false;
            }
            Action::ReplayLine => {
                s.replays_left -= 1;
                let old = s
                    .journal
                    .iter()
                    .find(|l| matches!(l.entry, Entry::Dispatched { .. }))
                    .copied()?;
                s.journal.push(old);
            }
            Action::Tick => Self::tick(&mut s),
            Action::LoseClaim => {
                s.losses_left -= 1;
                let holder = s.claim.take()?;
                s.procs.get_mut(usize::from(holder))?.lost = true;
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties()
    }

    fn format_action(&self, action: &Action) -> String {
        format!("{action:?}")
    }
}
