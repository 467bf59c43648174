//! The per-entry checks of a receipt: shape, effect, version, hash, link, and the parts of the
//! signature, which are queued for batch verification ([`super::verify_group`]).

use super::{Format, PendingSig, SignerRule};
use crate::entry::{self, decode_lower_hex, lower_hex};
use crate::problem::{code, Listing, Problem};
use crate::text::shorten;
use crate::view::{Object, View};
use ed25519_dalek::Signature;

/// The members of an entry that the chain checks read, found in one pass over the entry (the
/// same as `obj.get(name)` for each; keys of a JSON object are unique).
#[derive(Default)]
struct Fields<'a> {
    kind: Option<&'a View<'a>>,
    effect_id: Option<&'a View<'a>>,
    v: Option<&'a View<'a>>,
    ts_ms: Option<&'a View<'a>>,
    ts: Option<&'a View<'a>>,
    hash: Option<&'a View<'a>>,
    prev: Option<&'a View<'a>>,
    signer: Option<&'a View<'a>>,
    sig: Option<&'a View<'a>>,
}

impl<'a> Fields<'a> {
    fn of(obj: &'a Object<'a>) -> Fields<'a> {
        let mut f = Fields::default();
        for (k, v) in obj.iter() {
            let slot = match k {
                "kind" => &mut f.kind,
                "effect_id" => &mut f.effect_id,
                "v" => &mut f.v,
                "ts_ms" => &mut f.ts_ms,
                "ts" => &mut f.ts,
                "hash" => &mut f.hash,
                "prev" => &mut f.prev,
                "signer" => &mut f.signer,
                "sig" => &mut f.sig,
                _ => continue,
            };
            *slot = Some(v);
        }
        f
    }
}

/// The per-entry checks: shape, effect, hash, link, and the signature's parts.
pub(super) struct ChainWalk<'r, 'a> {
    pub(super) eid: &'r str,
    pub(super) format: Format,
    pub(super) rule: &'r SignerRule,
    pub(super) problems: Listing,
    /// Every entry belongs to the effect, its hash recomputes and its `prev` links.
    pub(super) chain_ok: bool,
    pub(super) pending: Vec<PendingSig<'a>>,
    pub(super) first_signer: Option<[u8; 32]>,
    /// Some entry has no signature that could be checked (so the receipt is not signed).
    pub(super) unsigned: bool,
}

impl<'a> ChainWalk<'_, 'a> {
    fn problem(&mut self, i: usize, kind: Option<&str>, code: &str, what: impl Into<String>) {
        let problem = Problem::in_entry(self.eid, i, kind, code, &what.into());
        self.problems.push(problem);
    }

    fn chain_problem(&mut self, i: usize, kind: Option<&str>, code: &str, what: impl Into<String>) {
        self.chain_ok = false;
        self.problem(i, kind, code, what);
    }

    /// Every per-entry check of entry `i`, in order: shape, effect, version and time, hash,
    /// link, and the parts of its signature (queued in `pending`, verified in batches later).
    pub(super) fn check(
        &mut self,
        i: usize,
        raw: &'a View<'a>,
        before: Option<&View<'_>>,
    ) -> Option<&'a Object<'a>> {
        let Some(obj) = raw.as_object() else {
            self.unsigned = true;
            self.chain_problem(i, None, code::MALFORMED_ENTRY, "is not a JSON object");
            return None;
        };
        let f = Fields::of(obj);
        let kind = f.kind.and_then(View::as_str);
        if f.effect_id.and_then(View::as_str) != Some(self.eid) {
            let found = f.effect_id.and_then(View::as_str).unwrap_or("(none)");
            let what = format!(
                "belongs to effect {:?}, not to this receipt",
                shorten(found, 80)
            );
            self.chain_problem(i, kind, code::FOREIGN_ENTRY, what);
        }
        self.check_version_and_time(i, kind, &f);
        let stored = f.hash.and_then(View::as_str);
        self.check_hash(i, kind, obj, stored);
        self.check_link(i, kind, f.prev, before);
        if self.format == Format::Current {
            self.signature_parts(i, kind, &f, stored);
        }
        Some(obj)
    }

    /// `v` is 1 and `ts_ms` an integer (the original format: a numeric `ts`).
    fn check_version_and_time(&mut self, i: usize, kind: Option<&str>, f: &Fields<'a>) {
        if self.format == Format::Original {
            if !f.ts.is_some_and(View::is_number) {
                self.chain_problem(i, kind, code::MALFORMED_ENTRY, "has no numeric ts");
            }
            return;
        }
        if f.v.and_then(View::as_u64) != Some(entry::ENTRY_VERSION) {
            let found = f.v.map_or("(none)".into(), |v| shorten(&v.to_string(), 40));
            let what = format!("has version {found}, expected 1");
            self.chain_problem(i, kind, code::UNKNOWN_VERSION, what);
        }
        if !f.ts_ms.is_some_and(View::is_integer) {
            self.chain_problem(i, kind, code::MALFORMED_ENTRY, "has no integer ts_ms");
        }
    }

    /// The stored `hash` recomputes over exactly what is stored.
    fn check_hash(&mut self, i: usize, kind: Option<&str>, obj: &Object<'_>, stored: Option<&str>) {
        let computed = match self.format {
            // Compared as bytes; the hex text is only written for the report of a mismatch.
            Format::Current => entry::compute_view_digest(obj)
                .map(|d| match stored {
                    Some(s) if entry::is_lower_hex_of(s, &d) => None,
                    _ => Some(lower_hex(&d)),
                })
                .map_err(|e| e.to_string()),
            Format::Original => crate::pycompat::entry_hash(&obj.to_map())
                .map(|c| (stored != Some(c.as_str())).then_some(c))
                .map_err(|e| e.to_string()),
        };
        let (problem, what) = match (stored, computed) {
            (Some(_), Ok(None)) => return,
            (None, _) => (code::MALFORMED_ENTRY, "has no hash".to_owned()),
            (Some(_), Err(e)) => (
                code::UNCANONICAL_ENTRY,
                format!("cannot be put into canonical form: {e}"),
            ),
            (Some(s), Ok(Some(c))) => (
                code::HASH_MISMATCH,
                format!(
                    "was altered: its content hashes to {c}, but it says {}",
                    shorten(s, 80)
                ),
            ),
        };
        self.chain_problem(i, kind, problem, what);
    }

    /// `prev` is the stored hash of the entry before it (`null` for the first).
    fn check_link(
        &mut self,
        i: usize,
        kind: Option<&str>,
        prev: Option<&View<'_>>,
        before: Option<&View<'_>>,
    ) {
        let expected: Option<&View<'_>> = match before {
            None => Some(&View::Null),
            Some(b) => b.get("hash").filter(|h| h.is_string()),
        };
        // When the entry before has no hash, that entry is reported; nothing to link to.
        let Some(expected) = expected.filter(|e| prev != Some(*e)) else {
            return;
        };
        let shown = prev.map_or("(missing)".into(), |p| shorten(&p.to_string(), 80));
        let what = if i == 0 {
            format!("has prev {shown}, but the first entry must have prev null (an earlier entry is missing)")
        } else {
            let expected = shorten(&expected.to_string(), 80);
            format!(
                "has prev {shown}, but entry {} hashes to {expected} (an entry is missing or out of order)",
                i - 1
            )
        };
        self.chain_problem(i, kind, code::BROKEN_LINK, what);
    }

    /// The signer: one spelling (lowercase hex), the pinned or published key, the same for every
    /// entry; the signature: one spelling; then queued for batch verification.
    fn signature_parts(
        &mut self,
        i: usize,
        kind: Option<&str>,
        f: &Fields<'a>,
        hash: Option<&'a str>,
    ) {
        let signer = f
            .signer
            .and_then(View::as_str)
            .and_then(decode_lower_hex::<32>);
        let Some(signer) = signer else {
            self.unsigned = true;
            let what = "has no signer that is 64 lowercase hex characters";
            return self.problem(i, kind, code::BAD_SIGNER, what);
        };
        self.check_signer(i, kind, signer);
        let sig = f
            .sig
            .and_then(View::as_str)
            .and_then(decode_lower_hex::<64>);
        let Some(sig) = sig else {
            self.unsigned = true;
            let what = "has no sig that is 128 lowercase hex characters";
            return self.problem(i, kind, code::BAD_SIGNATURE, what);
        };
        let Some(hash) = hash else {
            // Already reported: no hash, so nothing to have signed.
            self.unsigned = true;
            return;
        };
        let signature = Signature::from_bytes(&sig);
        self.pending.push(PendingSig {
            entry: i,
            signer,
            hash,
            signature,
        });
    }

    /// The signer is the key the receipt must be signed by, and entry 0's signer.
    fn check_signer(&mut self, i: usize, kind: Option<&str>, signer: [u8; 32]) {
        if let SignerRule::Pinned(k) | SignerRule::Published(k) = self.rule {
            if k.as_bytes() != &signer {
                let whose = match self.rule {
                    SignerRule::Pinned(_) => "the pinned key",
                    _ => "the key the file publishes",
                };
                let (found, want) = (lower_hex(&signer), lower_hex(k.as_bytes()));
                let what = format!("is signed by {found}, not by {whose} {want}");
                self.problem(i, kind, code::WRONG_SIGNER, what);
            }
        }
        match self.first_signer {
            None => self.first_signer = Some(signer),
            Some(first) if first != signer => {
                let what = format!(
                    "is signed by {}, but entry 0 by {}",
                    lower_hex(&signer),
                    lower_hex(&first)
                );
                self.problem(i, kind, code::MIXED_SIGNERS, what);
            }
            _ => {}
        }
    }
}
