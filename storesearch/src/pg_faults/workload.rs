//! The two gates' work, one thread each: their operations in order, then (for a gate that keeps
//! recovering) recovery round after round until the other gate is done. Every answer a caller
//! gets and every durable step a gate reports is recorded for the checks.

use super::checks::{Acked, Answer, Call};
use super::plan::{gate_name, Op, Workload};
use super::world::World;
use interlock::testing::AllLive;
use interlock::{Gate, Proposal, RecoveryOutcome};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A gate of the run.
pub type RunGate = Gate<Arc<World>, AllLive>;

/// How long the workload may take in all: past it, no gate starts another operation.
const WORKLOAD_LIMIT: Duration = Duration::from_secs(30);
/// A gate that keeps recovering waits this long between rounds, so it does not take the whole
/// machine from the gate it races.
const ROUND_PAUSE: Duration = Duration::from_millis(1);

thread_local! {
    /// The effect this thread is submitting, for the observer's reports.
    static SUBMITTING: Cell<Option<usize>> = const { Cell::new(None) };
}

/// What the workload recorded.
#[derive(Debug, Default)]
pub struct Record {
    /// Every answer given, in order.
    pub answers: Vec<Answer>,
    /// Every durable step reported while submitting.
    pub acked: Vec<Acked>,
    /// Calls that failed with an error (no answer given): not failures, but told with a
    /// failing run.
    pub errors: Vec<String>,
    /// Recovery rounds run.
    pub rounds: usize,
}

/// The recording shared by both gates' threads.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Record>>,
    started: Instant,
}

impl Recorder {
    /// A fresh recording.
    pub fn new() -> Recorder {
        Recorder {
            inner: Arc::new(Mutex::new(Record::default())),
            started: Instant::now(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Record) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Milliseconds since the recording started.
    pub fn elapsed_ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }

    /// Report each durable step `gate` makes while submitting (on the submitting thread).
    pub fn observe(&self, gate: char, g: &mut RunGate) {
        let me = self.clone();
        g.set_observer(Box::new(move |step| {
            if let Some(effect) = SUBMITTING.with(Cell::get) {
                me.with(|r| r.acked.push(Acked { gate, effect, step }));
            }
        }));
    }

    /// Record the answers of a recovery round by `gate` (effects named by id in `ids`).
    pub fn recovered(&self, gate: char, ids: &[String], out: &[interlock::Recovered]) {
        let at_ms = self.elapsed_ms();
        self.with(|r| {
            r.rounds += 1;
            for rec in out {
                let (Some(effect), RecoveryOutcome::Resolved(status)) =
                    (ids.iter().position(|id| *id == rec.effect_id), &rec.outcome)
                else {
                    continue;
                };
                r.answers.push(Answer {
                    gate,
                    call: Call::Recover,
                    effect,
                    status: *status,
                    detail: None,
                    at_ms,
                });
            }
        });
    }

    fn error(&self, gate: char, what: String) {
        let at = self.elapsed_ms();
        self.with(|r| r.errors.push(format!("{at}ms gate {gate}: {what}")));
    }

    /// The recording so far.
    pub fn take(&self) -> Record {
        self.with(std::mem::take)
    }
}

/// Run the workload on the gates that opened (`None`: that gate could not open). A gate that
/// keeps recovering does so until the other gate's operations are done.
pub fn run(
    gates: [Option<&RunGate>; 2],
    workload: &Workload,
    proposals: &[Proposal],
    ids: &[String],
    rec: &Recorder,
) {
    let done = [AtomicBool::new(false), AtomicBool::new(false)];
    let deadline = Instant::now() + WORKLOAD_LIMIT;
    std::thread::scope(|s| {
        for (i, gate) in gates.iter().enumerate() {
            let done = &done;
            s.spawn(move || {
                if let Some(g) = gate {
                    let name = gate_name(i);
                    for op in &workload.ops[i] {
                        if Instant::now() > deadline {
                            break;
                        }
                        run_op(g, name, *op, proposals, ids, rec);
                    }
                    done[i].store(true, Ordering::SeqCst);
                    if workload.keeps_recovering[i] {
                        while !done[1 - i].load(Ordering::SeqCst) && Instant::now() < deadline {
                            run_op(g, name, Op::Recover, proposals, ids, rec);
                            std::thread::sleep(ROUND_PAUSE);
                        }
                    }
                }
                done[i].store(true, Ordering::SeqCst);
            });
        }
    });
}

fn run_op(g: &RunGate, name: char, op: Op, proposals: &[Proposal], ids: &[String], rec: &Recorder) {
    match op {
        Op::Submit(n) => {
            SUBMITTING.with(|c| c.set(Some(n)));
            let answer = g.submit(&proposals[n]);
            SUBMITTING.with(|c| c.set(None));
            match answer {
                Ok(s) => {
                    let at_ms = rec.elapsed_ms();
                    rec.with(|r| {
                        r.answers.push(Answer {
                            gate: name,
                            call: Call::Submit,
                            effect: n,
                            status: s.status,
                            detail: s.detail,
                            at_ms,
                        });
                    });
                }
                Err(e) => rec.error(name, format!("submit #{n}: {e}")),
            }
        }
        Op::Recover => match g.recover() {
            Ok(out) => rec.recovered(name, ids, &out),
            Err(e) => rec.error(name, format!("recover: {e}")),
        },
    }
}
