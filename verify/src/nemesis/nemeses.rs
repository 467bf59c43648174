//! The billing_credit nemeses: each kind of fault a trial injects, by the name its trials and
//! plans record. The runner runs them; [`super::draw`] draws each trial's faults from its seed.

use std::fmt;

/// A kind of fault a trial injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nemesis {
    /// SIGKILL at a uniformly random instant of the decide worker's life, unannounced.
    KillRandom,
    /// The credit POST is held at the service (100-2000 ms, inside the declared bound) and the
    /// worker is SIGKILLed while it is held: the request lands after its client is dead.
    KillInFlight,
    /// The credit POST is held past the client's request timeout (5 s) but inside the declared
    /// 5.5 s bound, and nobody is killed: the client gives up, the worker ends with its error,
    /// and the request lands afterwards.
    LateAfterTimeout,
    /// As [`Nemesis::KillInFlight`] but held 7-9 s, beyond the emulator's declared 5.5 s bound:
    /// outside every column's assumptions, reported as measured.
    LateBeyondBound,
    /// The service commits the credit, then answers 500; the error is saved under the key and
    /// replayed to any retry with that key.
    CommitThen500,
    /// The service commits the credit, then drops the connection without an answer.
    CommitThenDrop,
    /// The decide worker is killed right before the send; then the restart itself is killed 1-3
    /// times, each at a step drawn from the restart's own announced steps, before a final
    /// restart.
    KillRecovery,
    /// Two decide workers for one case start at once (two agents, or a retry racing the first).
    TwoWorkers,
    /// The decide worker is killed right before the send; during the outage support revokes the
    /// approval (recorded at a test-clock instant, the clock then advanced a second past it).
    RevokeInOutage,
    /// The decide worker is paused at a step drawn from its column's checks (or just after
    /// them), support revokes the approval, and the worker goes on: a revocation during the
    /// premise reads must be seen.
    RevokeMidCheck,
    /// As [`Nemesis::RevokeMidCheck`] but the world change is billing's credit note for the
    /// case's incident (the renewal, then the note): the outage lands mid-check.
    NoteMidCheck,
    /// The service answers the credit POST with 1-4 consecutive 429s before letting it through.
    RateLimitBurst,
    /// SIGKILL at a step drawn from the column's own steps (interlock: after each journal entry
    /// and after the POST's response; hand_check: after each log line and the response;
    /// no_check: after the saved decision and the response), or while the credit POST is held
    /// at the service (mid-request). The worker announces each step and blocks at the drawn one,
    /// so the kill lands there exactly and a replay repeats it.
    KillAtStep,
    /// Window exposure: nobody is killed or paused; support revokes the approval at an instant
    /// drawn uniformly over one span after the decide worker saved its decision (before issue
    /// 35: after the decision read the approval), the same for every column. A
    /// column violates only when the revocation lands in its unguarded window (after its last
    /// read of the approval, before its POST is applied), so its violation rate measures that
    /// window's length.
    Exposure,
    /// A live holder stopped: SIGSTOP the decide worker at its last step before the POST, for
    /// 12-14 s (past the 11 s claim TTL); the outage and the final restart run meanwhile; then
    /// SIGCONT, and the stopped sender goes on with what it had checked before it stopped.
    StopHolder,
    /// A torn tail: SIGKILL at a step whose own write is the last line of the column's record
    /// (interlock's journal, hand_check's log), then the runner cuts that line at a drawn byte,
    /// as a crash in the middle of the append would leave it.
    TornTail,
    /// A full disk: the trial's directory is a 512 KiB tmpfs filled until 0-8 pages are free, so
    /// the decide worker's writes fail with ENOSPC wherever they do; the space is freed before
    /// the final restart, as an operator would.
    DiskFull,
    /// The dedup window passes while the worker is dead: the service forgets the account's
    /// idempotency keys and the restart's wall clock runs 24-25 h ahead.
    DedupExpired,
    /// The restarted worker decides again, proposing 30-90 % of the first amount; the trial is
    /// judged against the first decision.
    DecidesAgain,
    /// The disk fills at a drawn write: the decide worker's N-th write under the case's
    /// directory (N drawn over the writes its column makes, [`crate::nemesis::draw::column_writes`])
    /// and every later one fail with ENOSPC, injected at the C library by the `write-fault`
    /// library the runner preloads; the final restart runs without it (the space freed). The
    /// record says at which write it fired, or that it never did.
    WriteEnospc,
    /// A sync fails: the decide worker's N-th `fsync`/`fdatasync` under the case's directory
    /// fails with EIO (N drawn over its column's syncs), the others succeed; as
    /// [`Nemesis::WriteEnospc`] otherwise.
    FsyncEio,
}

impl Nemesis {
    /// Every nemesis, in run order.
    pub const ALL: [Nemesis; 21] = [
        Nemesis::KillRandom,
        Nemesis::KillInFlight,
        Nemesis::LateAfterTimeout,
        Nemesis::LateBeyondBound,
        Nemesis::CommitThen500,
        Nemesis::CommitThenDrop,
        Nemesis::KillRecovery,
        Nemesis::TwoWorkers,
        Nemesis::RevokeInOutage,
        Nemesis::RevokeMidCheck,
        Nemesis::NoteMidCheck,
        Nemesis::RateLimitBurst,
        Nemesis::KillAtStep,
        Nemesis::Exposure,
        Nemesis::StopHolder,
        Nemesis::TornTail,
        Nemesis::DiskFull,
        Nemesis::DedupExpired,
        Nemesis::DecidesAgain,
        Nemesis::WriteEnospc,
        Nemesis::FsyncEio,
    ];

    /// The name used on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Nemesis::KillRandom => "kill_random",
            Nemesis::KillInFlight => "kill_in_flight",
            Nemesis::LateAfterTimeout => "late_after_timeout",
            Nemesis::LateBeyondBound => "late_beyond_bound",
            Nemesis::CommitThen500 => "commit_then_500",
            Nemesis::CommitThenDrop => "commit_then_drop",
            Nemesis::KillRecovery => "kill_recovery",
            Nemesis::TwoWorkers => "two_workers",
            Nemesis::RevokeInOutage => "revoke_in_outage",
            Nemesis::RevokeMidCheck => "revoke_mid_check",
            Nemesis::NoteMidCheck => "note_mid_check",
            Nemesis::RateLimitBurst => "rate_limit_burst",
            Nemesis::KillAtStep => "kill_at_step",
            Nemesis::Exposure => "exposure",
            Nemesis::StopHolder => "stop_holder",
            Nemesis::TornTail => "torn_tail",
            Nemesis::DiskFull => "disk_full",
            Nemesis::DedupExpired => "dedup_expired",
            Nemesis::DecidesAgain => "decides_again",
            Nemesis::WriteEnospc => "write_enospc",
            Nemesis::FsyncEio => "fsync_eio",
        }
    }

    /// The nemesis named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Nemesis> {
        Nemesis::ALL.into_iter().find(|n| n.as_str() == name)
    }
}

impl fmt::Display for Nemesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
