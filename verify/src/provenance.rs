//! Who signed a file and when it was made, as every verdict names them (DESIGN §3.3): the
//! fingerprint of the key the file was checked against, whether that key was pinned, the run's
//! `generated` time (a lone receipt: the time its seal was signed) and commit. Two files that
//! print the same verdict line were checked against the same key; a file re-signed by anyone
//! else prints another fingerprint.
//!
//! Also the time arithmetic `--not-before` needs: RFC 3339 timestamps read into nanoseconds
//! since the Unix epoch, and Unix milliseconds written as RFC 3339, without a calendar library.

use crate::display::{shorten, shorten_shown};
use crate::finding::Finding;
use serde_json::{json, Value};

/// Finding codes of the checks every kind of file shares.
pub mod code {
    /// The file was made before `--not-before`, or states no time that shows it was not.
    pub const NOT_BEFORE: &str = "not_before";
}

/// Longest stated time or commit a verdict line repeats.
const SHOWN: usize = 80;

/// Which key a file was checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// A key the person verifying gave (`--key`, `--signers`), by fingerprint.
    Pinned(String),
    /// The key the file names itself, by fingerprint (`None`: it names no valid key).
    SelfAttested(Option<String>),
    /// The format carries no signatures (the original Python format).
    Unsigned,
}

/// When a file says it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Made {
    /// The run's `generated` member, as the file states it.
    Generated(String),
    /// A receipt's seal, signed at this time (Unix milliseconds).
    Sealed(u64),
    /// A receipt without a seal: nothing in it says when it was exported.
    Unsealed,
    /// The file states no time.
    Unstated,
}

/// Who signed a file, and when and from which commit it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The key the file was checked against.
    pub signer: Signer,
    /// When the file says it was made.
    pub made: Made,
    /// The commit the run names (`environment.git_commit`): `None` for formats without one,
    /// `Some(None)` when the file records none.
    pub commit: Option<Option<String>>,
}

impl Provenance {
    /// The fingerprint of the key the file was checked against, if it has one.
    pub fn fingerprint(&self) -> Option<&str> {
        match &self.signer {
            Signer::Pinned(fp) => Some(fp),
            Signer::SelfAttested(fp) => fp.as_deref(),
            Signer::Unsigned => None,
        }
    }

    /// The clause a verdict line ends with, before its verdict.
    pub fn text(&self) -> String {
        let mut out = match &self.signer {
            Signer::Pinned(fp) => format!("signer {fp} (pinned)"),
            Signer::SelfAttested(fp) => format!(
                "signer {} (self-attested: the key the file names itself; pin a key you got elsewhere with --key or --signers)",
                fp.as_deref().unwrap_or("no valid key")
            ),
            Signer::Unsigned => "unsigned".to_owned(),
        };
        match &self.made {
            Made::Generated(t) => {
                out.push_str(&format!(", generated {}", shorten_shown(t, SHOWN)));
            }
            Made::Sealed(ms) => out.push_str(&format!(", sealed {}", rfc3339_from_ms(*ms))),
            Made::Unsealed => out.push_str(", unsealed"),
            Made::Unstated => out.push_str(", no time stated"),
        }
        match &self.commit {
            Some(Some(c)) => out.push_str(&format!(", commit {}", shorten_shown(c, SHOWN))),
            Some(None) => out.push_str(", commit not recorded"),
            None => {}
        }
        out
    }

    /// The members a file's entry of the `--json` report carries: `fingerprint`, `pinned_key`,
    /// `generated` or `sealed_at`, and `commit` where the format has one.
    pub fn json(&self) -> Vec<(&'static str, Value)> {
        let mut out = vec![
            ("fingerprint", json!(self.fingerprint())),
            (
                "pinned_key",
                json!(matches!(self.signer, Signer::Pinned(_))),
            ),
        ];
        match &self.made {
            Made::Generated(t) => out.push(("generated", json!(t))),
            Made::Sealed(ms) => out.push(("sealed_at", json!(rfc3339_from_ms(*ms)))),
            Made::Unsealed => out.push(("sealed_at", Value::Null)),
            Made::Unstated => out.push(("generated", Value::Null)),
        }
        if let Some(c) = &self.commit {
            out.push(("commit", json!(c)));
        }
        out
    }

    /// `--not-before`: a finding when the file was made before `not_before` (nanoseconds since
    /// the Unix epoch), or states no time that shows it was not.
    pub fn check_not_before(&self, not_before: i128, shown: &str) -> Option<Finding> {
        let (path, made) = match &self.made {
            Made::Generated(t) => ("generated", parse_rfc3339(t)),
            Made::Sealed(ms) => ("head.ts_ms", Some(i128::from(*ms) * 1_000_000)),
            Made::Unsealed => ("head", None),
            Made::Unstated => ("generated", None),
        };
        let message = match made {
            Some(at) if at >= not_before => return None,
            Some(_) => format!("the file was made before --not-before {shown}"),
            None => format!(
                "the file states no RFC 3339 time it was made at, so nothing shows it is not older than --not-before {shown}"
            ),
        };
        let found = match &self.made {
            Made::Generated(t) => shorten(t, SHOWN),
            Made::Sealed(ms) => rfc3339_from_ms(*ms),
            Made::Unsealed => "no seal".to_owned(),
            Made::Unstated => "no time".to_owned(),
        };
        Some(Finding::mismatch(
            path,
            code::NOT_BEFORE,
            message,
            format!("{shown} or later"),
            found,
        ))
    }
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Unix milliseconds as RFC 3339 UTC, with milliseconds: `2026-11-30T20:11:39.123Z`.
pub fn rfc3339_from_ms(ms: u64) -> String {
    let secs = i64::try_from(ms / 1_000).unwrap_or(i64::MAX / 2);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60,
        ms % 1_000
    )
}

/// An RFC 3339 timestamp (`2026-11-30T20:11:39Z`, `2026-11-30t21:11:39.5+01:00`) as nanoseconds
/// since the Unix epoch; `None` for anything else (a date alone, a missing offset, a field out of
/// range). A leap second (`:60`) reads as the second after `:59`.
pub fn parse_rfc3339(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    };
    let sep = |at: usize, allowed: &[u8]| b.get(at).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let valid = (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day)
        && hour <= 23
        && minute <= 59
        && second <= 60;
    if !valid {
        return None;
    }
    let mut at = 19;
    let mut nanos: i128 = 0;
    if b.get(at) == Some(&b'.') {
        let digits = b
            .get(at + 1..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        for (k, c) in b.get(at + 1..at + 1 + digits)?.iter().enumerate() {
            if k < 9 {
                nanos += i128::from(c - b'0') * 10i128.pow(8 - k as u32);
            }
        }
        at += 1 + digits;
    }
    let offset_minutes = match b.get(at..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (num(at + 1, 2)?, num(at + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'+' {
                h * 60 + m
            } else {
                -(h * 60 + m)
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(i128::from(secs) * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_as_instants_and_other_shapes_do_not() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2026-11-30T20:11:39Z"),
            Some(1_796_069_499 * 1_000_000_000)
        );
        // One instant, three spellings.
        let utc = parse_rfc3339("2026-11-30T20:11:39.5Z");
        assert_eq!(parse_rfc3339("2026-11-30t21:11:39.500+01:00"), utc);
        assert_eq!(parse_rfc3339("2026-11-30 19:41:39.5-00:30"), utc);
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00.123456789Z").map(|n| n % 1_000_000_000),
            Some(123_456_789)
        );
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T20:11:39",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T20:11:39.Z",
            "2026-11-30T20:11:39+0100",
            "2026-09-13 22:40 UTC",
            "2026-11-30T20:11:39Zjunk",
            "+026-11-30T20:11:39Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn milliseconds_are_written_as_the_utc_time_they_are() {
        assert_eq!(rfc3339_from_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_from_ms(1_796_069_499_123),
            "2026-11-30T20:11:39.123Z"
        );
        assert_eq!(rfc3339_from_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        for ms in [0u64, 951_782_400_000, 1_796_069_499_123, 4_102_444_800_999] {
            assert_eq!(
                parse_rfc3339(&rfc3339_from_ms(ms)),
                Some(i128::from(ms) * 1_000_000)
            );
        }
    }

    #[test]
    fn not_before_fails_an_older_file_and_one_that_states_no_time() {
        let at = |made: Made| Provenance {
            signer: Signer::Unsigned,
            made,
            commit: None,
        };
        let limit = parse_rfc3339("2026-11-30T00:00:00Z").unwrap_or_default();
        let shown = "2026-11-30T00:00:00Z";
        let newer = at(Made::Generated("2026-11-30T20:11:39Z".into()));
        assert_eq!(newer.check_not_before(limit, shown), None);
        let older = at(Made::Generated("2026-11-29T23:59:59Z".into()));
        let f = older.check_not_before(limit, shown);
        assert_eq!(
            f.map(|f| (f.code, f.path)),
            Some((code::NOT_BEFORE.to_owned(), "generated".to_owned()))
        );
        let original = at(Made::Generated("2026-09-13 22:40 UTC".into()));
        assert!(original.check_not_before(limit, shown).is_some());
        assert!(at(Made::Unsealed).check_not_before(limit, shown).is_some());
        let sealed = at(Made::Sealed(1_796_069_499_123));
        assert_eq!(sealed.check_not_before(limit, shown), None);
    }
}
