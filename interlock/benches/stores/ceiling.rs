//! The ceiling of the PostgreSQL protocol the throughput issue asks for, measured on the server
//! in the same run as the raw commit rate: each append one round trip, a call of a server-side
//! function that takes the effect's lock for its transaction, reads the rows committed since
//! the caller's horizon (the catch-up, sent back to the caller), inserts the row and its mark
//! and commits, the commit letting the lock go. A submit is four such calls on the journal's
//! session and the claim on a claims session of its own: taken, its record written, let go.
//! Nothing else: no signing, no JSON read or written by a gate, no check of a row read back, no
//! budget. What a gate could reach with that protocol is below this.
//!
//! Two ways, each a [`Claim`]: the record written on the claims session as the store writes it
//! (five commits a submit), or within DISPATCHED's call (four: the fewest a submit of four
//! entries can commit one at a time).

use super::{gate_schema, round2, session_rate, WRITERS};
use serde_json::json;
use std::sync::atomic::Ordering;

/// The one-round-trip append, created in the bench's schema (the journal's own tables). With a
/// `record`, the claim's record is written in the same transaction.
const ONE_SHOT_FN: &str = "
CREATE FUNCTION bench_one_shot(effect bigint, prev text, hash text, line text, since xid8,
                               record text)
RETURNS TABLE (horizon xid8, seen text) LANGUAGE plpgsql
-- Planned for each call's horizon, as the store's catch-up is (a generic plan guesses a third
-- of the table past any horizon, and scans it).
SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(effect);
    -- A statement of its own, so a snapshot taken once the lock is held.
    RETURN QUERY SELECT h.x, e.line
        FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x) h
        LEFT JOIN interlock_entries e ON e.xid >= since;
    INSERT INTO interlock_marks (hash) VALUES (hash);
    INSERT INTO interlock_entries (effect_id, prev, hash, line)
        VALUES (effect::text, prev, hash, line);
    IF record IS NOT NULL THEN
        INSERT INTO interlock_claims (effect_id, record, gen) VALUES (effect::text, record, 1)
            ON CONFLICT (effect_id) DO UPDATE SET record = excluded.record,
            gen = interlock_claims.gen + 1;
    END IF;
END $$;
";

/// The ceiling at each writer count of [`WRITERS`], each on a fresh journal, printed as a row
/// with its ratio to `raw` (the raw commit rates at the same counts); appends per second.
pub(crate) fn rows(url: &str, seconds: f64, raw: &[f64], claim: Claim) -> Vec<f64> {
    let bench = match claim {
        Claim::RecordApart => "pg_one_shot_ceiling",
        Claim::RecordInDispatch => "pg_one_shot_ceiling_record_in_dispatch",
    };
    WRITERS
        .iter()
        .zip(raw)
        .map(|(&sessions, &raw)| {
            let r = one_shot_rate(&gate_schema(url), sessions, seconds, claim);
            println!(
                "{}",
                json!({"bench": bench, "sessions": sessions, "appends_per_s": r.round(),
                       "vs_raw": round2(r / raw.max(1.0))})
            );
            r
        })
        .collect()
}

/// Where a submit's claim record is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// On the claims session, a commit of its own (as the store writes it).
    RecordApart,
    /// In DISPATCHED's transaction.
    RecordInDispatch,
}

/// Appends per second of `sessions` writers over the one-round-trip protocol (see the module
/// docs), on the journal whose schema `url` names (made by a gate).
fn one_shot_rate(url: &str, sessions: usize, seconds: f64, claim: Claim) -> f64 {
    let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
    admin.batch_execute(ONE_SHOT_FN).unwrap();
    session_rate(url, sessions, seconds, |s, c, stop| {
        let mut claims = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let append = c
            .prepare(
                "SELECT horizon::text, seen \
                 FROM bench_one_shot($1, $2, $3, $4, $5::text::xid8, $6)",
            )
            .unwrap();
        let take = claims.prepare("SELECT pg_try_advisory_lock($1)").unwrap();
        let record_apart = claims
            .prepare(
                "INSERT INTO interlock_claims (effect_id, record, gen) VALUES ($1, $2, 1) \
                 ON CONFLICT (effect_id) DO UPDATE SET record = excluded.record, \
                 gen = interlock_claims.gen + 1",
            )
            .unwrap();
        let let_go = claims.prepare("SELECT pg_advisory_unlock($1)").unwrap();
        let pad = "x".repeat(700);
        let (mut horizon, mut appends, mut n) = (String::from("0"), 0u64, 0i64);
        while !stop.load(Ordering::Relaxed) {
            let effect = ((s as i64) << 40) | n;
            // The claim's lock is another key than the effect's (the store keeps them apart too).
            let key = effect | (1 << 62);
            let mut prev: Option<String> = None;
            for step in 0..4 {
                let dispatch = step == 2;
                if dispatch {
                    let taken: bool = claims.query_one(&take, &[&key]).unwrap().get(0);
                    assert!(taken, "nobody else takes this effect's claim");
                }
                let hash = format!("{:032x}{:032x}", rand::random::<u128>(), appends);
                let line = format!("{{\"effect\":{effect},\"hash\":\"{hash}\",\"pad\":\"{pad}\"}}");
                let record = (dispatch && claim == Claim::RecordInDispatch).then_some(&line);
                let rows = c
                    .query(&append, &[&effect, &prev, &hash, &line, &horizon, &record])
                    .unwrap();
                if let Some(h) = rows.first().and_then(|r| r.get::<_, Option<String>>(0)) {
                    horizon = h;
                }
                if dispatch && claim == Claim::RecordApart {
                    claims
                        .execute(&record_apart, &[&effect.to_string(), &line])
                        .unwrap();
                }
                prev = Some(hash);
                appends += 1;
            }
            claims.execute(&let_go, &[&key]).unwrap();
            n += 1;
        }
        appends
    })
}
