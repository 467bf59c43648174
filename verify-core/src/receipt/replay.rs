//! Replaying a receipt's entries in order (DESIGN §3.3): the protocol rules, and what the receipt
//! proves. One method per entry kind; each names the rule it enforces.

use super::{Format, VIAS};
use crate::canonical;
use crate::entry::Via;
use crate::entry::{self, Kind};
use crate::problem::{code, Listing, Problem};
use crate::report::{Happened, ReceiptReport, Refusal};
use crate::view::{Object, View};
use sha2::{Digest, Sha256};

/// One send that counts: the checks recorded right before it and the effect it sent.
struct Send<'a> {
    entry: usize,
    kind: &'static str,
    checks: Option<&'a View<'a>>,
    effect: Option<&'a View<'a>>,
}

/// The replay's state after each entry.
struct Replay<'a> {
    eid: &'a str,
    format: Format,
    problems: Listing,
    /// A DISPATCHED is not yet resolved.
    open: bool,
    authorized_seen: bool,
    commits: usize,
    ambiguous: bool,
    /// Never dispatched while open or after a commit, never committed twice.
    once: bool,
    /// The sends whose recorded checks must hold (see [`Replay::judge_sends`]).
    sends: Vec<Send<'a>>,
    /// The effect of the last DISPATCHED.
    current_effect: Option<&'a View<'a>>,
    first_proposed: Option<(usize, &'a Object<'a>)>,
    refused: Option<Refusal>,
    rechecked: Option<&'a View<'a>>,
    evidence: Option<&'a View<'a>>,
    via: Option<&'a str>,
}

/// Replay `entries` (each `None` when it was not an object) and fill the derived fields of
/// `report`; every rule that does not hold adds a problem.
pub(super) fn replay<'a>(
    eid: &'a str,
    format: Format,
    entries: &[Option<&'a Object<'a>>],
    report: &mut ReceiptReport,
) {
    let mut r = Replay {
        eid,
        format,
        problems: Listing::default(),
        open: false,
        authorized_seen: false,
        commits: 0,
        ambiguous: false,
        once: true,
        sends: Vec::new(),
        current_effect: None,
        first_proposed: None,
        refused: None,
        rechecked: None,
        evidence: None,
        via: None,
    };
    for (i, obj) in entries.iter().enumerate() {
        if let Some(obj) = obj {
            r.entry(i, obj);
        }
    }
    if format == Format::Current {
        r.check_effect_id();
    }
    r.finish(report);
}

impl<'a> Replay<'a> {
    fn put(&mut self, i: usize, kind: Option<&str>, code: &str, what: String) {
        let problem = Problem::in_entry(self.eid, i, kind, code, &what);
        self.problems.push(problem);
    }

    /// One entry: the first must be PROPOSED, the kind must be known, then the kind's rules.
    fn entry(&mut self, i: usize, obj: &'a Object<'a>) {
        let kind_str = obj.get("kind").and_then(View::as_str);
        let kind = kind_str.and_then(Kind::parse);
        if i == 0 && kind != Some(Kind::Proposed) {
            let what = "is not PROPOSED; a receipt starts with the proposal".into();
            self.put(i, kind_str, code::FIRST_NOT_PROPOSED, what);
        }
        if let Some(r) = obj.get("rechecked") {
            self.rechecked = Some(r);
        }
        let Some(kind) = kind else {
            let found = crate::text::shorten(kind_str.unwrap_or("(none)"), 40);
            let what = format!("has kind {found:?}, which this verifier does not know");
            self.put(i, kind_str, code::UNKNOWN_KIND, what);
            return;
        };
        if self.format == Format::Current
            && matches!(kind, Kind::Committed | Kind::Refused | Kind::Ambiguous)
        {
            if let Some(p) = super::answers::check(kind.as_str(), obj) {
                self.put(i, Some(kind.as_str()), p.code, p.what);
            }
            if let Some(p) = super::answers::waited(obj) {
                self.put(i, Some(kind.as_str()), p.code, p.what);
            }
        }
        match kind {
            Kind::Proposed => self.proposed(i, obj),
            Kind::Authorized => self.authorized_seen = true,
            Kind::Dispatched => self.dispatched(i, obj),
            Kind::Committed => self.committed(i, obj),
            Kind::Refused => self.refused(i, obj),
            Kind::Ambiguous => self.ambiguous(i, obj),
        }
    }

    /// PROPOSED carries an effect; the first one fixes the payload.
    fn proposed(&mut self, i: usize, obj: &'a Object<'a>) {
        if !obj.contains_key("effect") {
            self.put(
                i,
                Some("PROPOSED"),
                code::MALFORMED_ENTRY,
                "has no effect".into(),
            );
        }
        if self.first_proposed.is_none() {
            self.first_proposed = Some((i, obj));
        }
    }

    /// DISPATCHED: never after a commit, never while another is open, only after AUTHORIZED, and
    /// always the payload the first PROPOSED fixed.
    fn dispatched(&mut self, i: usize, obj: &'a Object<'a>) {
        let kind = Some("DISPATCHED");
        if self.commits > 0 {
            self.once = false;
            let what = "sends the effect again after it was committed".into();
            self.put(i, kind, code::DISPATCH_AFTER_COMMIT, what);
        }
        if self.open {
            self.once = false;
            let what = "sends the effect again while an earlier dispatch is unresolved".into();
            self.put(i, kind, code::DISPATCH_WHILE_OPEN, what);
        }
        if !self.authorized_seen {
            let what = "sends the effect with no AUTHORIZED before it".into();
            self.put(i, kind, code::DISPATCH_WITHOUT_AUTHORIZATION, what);
        }
        let effect = obj.get("effect");
        let proposed = self.first_proposed.and_then(|(_, p)| p.get("effect"));
        if effect.is_none() || effect != proposed {
            let what = "sends a payload other than the one the first PROPOSED fixed".into();
            self.put(i, kind, code::PAYLOAD_CHANGED, what);
        }
        self.open = true;
        self.current_effect = effect;
        self.sends.push(Send {
            entry: i,
            kind: "DISPATCHED",
            checks: obj.get("checks"),
            effect,
        });
    }

    /// COMMITTED: only with a dispatch open, at most once, with a known `via`. A resend (`via`
    /// retry-idempotent or recovery-reapply) is a send of its own, judged by its `rechecked`.
    fn committed(&mut self, i: usize, obj: &'a Object<'a>) {
        let kind = Some("COMMITTED");
        if !self.open {
            let what = "commits, but no dispatch is open (nothing was sent)".into();
            self.put(i, kind, code::COMMIT_WITHOUT_DISPATCH, what);
        }
        self.commits += 1;
        if self.commits > 1 {
            self.once = false;
            let what = "is a second COMMITTED for the same effect".into();
            self.put(i, kind, code::MULTIPLE_COMMITS, what);
        }
        let via = obj.get("via").and_then(View::as_str);
        let known = via.and_then(Via::parse).is_some()
            || (self.format == Format::Original && via.is_none());
        if !known {
            let shown = crate::text::shorten(via.unwrap_or("(none)"), 40);
            let what = format!("has via {shown:?}, which is not one of {}", VIAS.join(", "));
            self.put(i, kind, code::UNKNOWN_VIA, what);
        }
        if via.and_then(Via::parse).is_some_and(Via::is_resend) {
            self.sends.push(Send {
                entry: i,
                kind: "COMMITTED",
                checks: obj.get("rechecked"),
                effect: self.current_effect,
            });
        }
        self.via = via;
        self.evidence = match self.format {
            Format::Current => obj.get("evidence"),
            Format::Original => obj.get("result").or_else(|| obj.get("found")),
        };
        self.open = false;
    }

    /// REFUSED: a code and a reason (any code: the gate may add new ones); with `resolves: true`
    /// it closes the open dispatch, whose send then never landed and attests to nothing.
    fn refused(&mut self, i: usize, obj: &'a Object<'a>) {
        let kind = Some("REFUSED");
        let code_field = obj.get("code").and_then(View::as_str);
        let reason = match obj.get("reason") {
            Some(View::String(s)) => Some(s.as_ref().to_owned()),
            Some(View::Array(items)) if self.format == Format::Original => Some(
                items
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => None,
        };
        if self.format == Format::Current && (code_field.is_none() || reason.is_none()) {
            let what = "has no string code and reason".into();
            self.put(i, kind, code::MALFORMED_ENTRY, what);
        }
        self.refused = Some(Refusal {
            code: code_field.map(str::to_owned),
            reason: reason.unwrap_or_default(),
        });
        if !matches!(obj.get("resolves"), Some(View::Bool(true))) {
            return;
        }
        if self.open {
            self.sends.pop();
            self.open = false;
        } else {
            let what = "resolves a dispatch, but none is open".into();
            self.put(i, kind, code::RESOLVES_NOTHING, what);
        }
    }

    /// AMBIGUOUS: a code and a reason, and it closes an open dispatch.
    fn ambiguous(&mut self, i: usize, obj: &'a Object<'a>) {
        let kind = Some("AMBIGUOUS");
        self.ambiguous = true;
        let has = |field: &str| obj.get(field).is_some_and(View::is_string);
        if self.format == Format::Current && !(has("code") && has("reason")) {
            let what = "has no string code and reason".into();
            self.put(i, kind, code::MALFORMED_ENTRY, what);
        }
        if !self.open {
            let what = "declares the effect ambiguous, but no dispatch is open".into();
            self.put(i, kind, code::AMBIGUOUS_WITHOUT_DISPATCH, what);
        }
        self.open = false;
    }

    /// The effect id is the SHA-256 of the canonical JSON of what the first PROPOSED fixed: its
    /// `request_id`, or its `effect` when it has none (DESIGN §2.1).
    fn check_effect_id(&mut self) {
        let Some((i, p)) = self.first_proposed else {
            return;
        };
        let key = match p.get("request_id") {
            Some(r) if !r.is_null() => Some(r),
            _ => p.get("effect"),
        };
        let Some(key) = key else {
            return;
        };
        match canonical::to_vec(key) {
            Ok(bytes) => {
                let derived = Sha256::digest(&bytes);
                if !entry::is_lower_hex_of(self.eid, &derived) {
                    let derived = entry::lower_hex(&derived);
                    let what = format!(
                        "derives effect id {derived} from its request_id (or effect), not {}",
                        self.eid
                    );
                    self.put(i, Some("PROPOSED"), code::EFFECT_ID_MISMATCH, what);
                }
            }
            Err(e) => {
                let what = format!("has a request_id or effect with no canonical form: {e}");
                self.put(i, Some("PROPOSED"), code::UNCANONICAL_ENTRY, what);
            }
        }
    }

    /// Every send that counts recorded a live, covering grant (`authorized_when_fired`) and no
    /// premise violation (`assumptions_held`); `None` for both when nothing was sent.
    fn judge_sends(&mut self) -> (Option<bool>, Option<bool>) {
        if self.sends.is_empty() {
            return (None, None);
        }
        let grant_field = match self.format {
            Format::Current => "grant",
            Format::Original => "lease",
        };
        let unauthorized = self
            .sends
            .iter()
            .find(|s| !lease_held(s.checks, s.effect, grant_field))
            .map(|s| (s.entry, s.kind));
        let violated = self
            .sends
            .iter()
            .find(|s| !no_violations(s.checks))
            .map(|s| (s.entry, s.kind));
        if let Some((i, kind)) = unauthorized {
            let what = format!(
                "fires the effect without a live, unrevoked {grant_field} that covers its amount"
            );
            self.put(i, Some(kind), code::UNAUTHORIZED_SEND, what);
        }
        if let Some((i, kind)) = violated {
            let what =
                "fires the effect with premise violations recorded (or no premise check)".into();
            self.put(i, Some(kind), code::PREMISES_VIOLATED, what);
        }
        (Some(unauthorized.is_none()), Some(violated.is_none()))
    }

    /// Write what the receipt proves into the report.
    fn finish(mut self, report: &mut ReceiptReport) {
        let (authorized, held) = self.judge_sends();
        report.authorized_when_fired = authorized;
        report.assumptions_held = held;
        report.rechecked_at_recovery = self.rechecked.map(View::to_value);
        report.evidence = self.evidence.map(View::to_value);
        report.via = self.via.map(str::to_owned);
        report.entries_say = if self.commits > 0 {
            Happened::Yes
        } else if self.ambiguous || self.open {
            Happened::Unknown
        } else {
            Happened::No
        };
        // What the receipt proves is decided with its seal, in `Prepared::finish`.
        report.happened = report.entries_say;
        report.happened_once = self.once;
        if report.happened != Happened::Yes {
            report.refused = self.refused;
        }
        let problems = self.problems.into_problems(self.eid);
        report.problems.extend(problems);
    }
}

/// The recorded checks hold no premise violation: `violations` is an empty array.
fn no_violations(checks: Option<&View<'_>>) -> bool {
    checks
        .and_then(|c| c.get("violations"))
        .is_some_and(|v| v.as_array().is_some_and(<[View<'_>]>::is_empty))
}

/// The lease check recorded before a send covers it: `lease_live` exactly true; the grant (if an
/// object) not revoked and, if it has a cap, the effect's integer `amount` within it.
fn lease_held(checks: Option<&View<'_>>, effect: Option<&View<'_>>, grant_field: &str) -> bool {
    let Some(checks) = checks.and_then(View::as_object) else {
        return false;
    };
    if !matches!(checks.get("lease_live"), Some(View::Bool(true))) {
        return false;
    }
    let Some(View::Object(grant)) = checks.get(grant_field) else {
        return true;
    };
    if grant.get("revoked").is_some_and(|r| !r.is_null()) {
        return false;
    }
    match grant.get("max_cents") {
        None | Some(View::Null) => true,
        Some(cap) => {
            let amount = effect.and_then(|e| e.get("amount")).and_then(View::as_i64);
            matches!((cap.as_i64(), amount), (Some(c), Some(a)) if a <= c)
        }
    }
}
