//! Where the cases' test clocks start: a fixed instant the run records (`--clock-start`), never
//! the day the run is made, so a run and every replay of it have one test-clock timeline.

use std::fmt;
use std::str::FromStr;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The instant every case's test clock is created frozen at, in Unix seconds; read and shown
/// as RFC 3339 UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockStart(i64);

impl ClockStart {
    /// The default: [`verify::scenarios::billing_credit::DEFAULT_CLOCK_START`].
    pub const DEFAULT: ClockStart =
        ClockStart(verify::scenarios::billing_credit::DEFAULT_CLOCK_START);

    /// Unix seconds.
    pub fn unix(self) -> i64 {
        self.0
    }
}

impl fmt::Display for ClockStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match OffsetDateTime::from_unix_timestamp(self.0)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
        {
            Some(text) => f.write_str(&text),
            None => write!(f, "@{}", self.0),
        }
    }
}

/// Why a `--clock-start` value was refused.
#[derive(Debug, thiserror::Error)]
pub enum ClockStartError {
    /// Not an RFC 3339 date and time.
    #[error("{0:?} is not an RFC 3339 date and time (e.g. 2027-02-01T00:00:00Z): {1}")]
    NotRfc3339(String, String),
    /// Stripe's `frozen_time` is whole seconds.
    #[error("{0:?} has a fraction of a second; a test clock's frozen_time is whole seconds")]
    Fraction(String),
    /// Before the Unix epoch.
    #[error("{0:?} is before 1970-01-01T00:00:00Z; a test clock's frozen_time is Unix seconds")]
    BeforeEpoch(String),
    /// A leap second (`:60`), which Unix time has no second for.
    #[error(
        "{0:?} is a leap second; Unix time, which a test clock's frozen_time is, has no second :60"
    )]
    LeapSecond(String),
    /// So late that a renewal (a month or two ahead) would pass the year 9999.
    #[error("{0:?} is too late: a case's renewal must fall before the year 10000 (start before {LAST_START_YEAR}-01-01)")]
    TooLate(String),
}

/// Starts from this year on are refused: a case's clock is advanced through one renewal (at most
/// two monthly intervals), and calendar arithmetic ends with the year 9999.
const LAST_START_YEAR: i32 = 9999;

impl FromStr for ClockStart {
    type Err = ClockStartError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|e| ClockStartError::NotRfc3339(s.to_owned(), e.to_string()))?;
        // RFC 3339 allows `:60`; the parser reads it as the last instant of `:59`.
        if s.get(17..19) == Some("60") {
            return Err(ClockStartError::LeapSecond(s.to_owned()));
        }
        if t.to_offset(time::UtcOffset::UTC).year() >= LAST_START_YEAR {
            return Err(ClockStartError::TooLate(s.to_owned()));
        }
        if t.nanosecond() != 0 {
            return Err(ClockStartError::Fraction(s.to_owned()));
        }
        let unix = t.unix_timestamp();
        if unix < 0 {
            return Err(ClockStartError::BeforeEpoch(s.to_owned()));
        }
        Ok(ClockStart(unix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_reference_runs_instant_and_round_trips() {
        assert_eq!(ClockStart::DEFAULT.to_string(), "2026-09-13T22:40:00Z");
        assert_eq!(
            "2026-09-13T22:40:00Z".parse::<ClockStart>().unwrap(),
            ClockStart::DEFAULT
        );
    }

    #[test]
    fn offsets_are_read_as_the_instant_they_name() {
        let a: ClockStart = "2027-01-01T01:00:00+01:00".parse().unwrap();
        let b: ClockStart = "2027-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.unix(), 1_798_761_600);
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        let e = "tomorrow".parse::<ClockStart>().unwrap_err().to_string();
        assert!(e.starts_with("\"tomorrow\" is not an RFC 3339"), "{e}");
        let e = "2027-01-01T00:00:00.5Z"
            .parse::<ClockStart>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("whole seconds"), "{e}");
        let e = "1969-12-31T23:59:59Z"
            .parse::<ClockStart>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("before 1970"), "{e}");
        let e = "2016-12-31T23:59:60Z"
            .parse::<ClockStart>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("leap second"), "{e}");
        let e = "9999-12-01T00:00:00Z"
            .parse::<ClockStart>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("too late"), "{e}");
        assert!("9998-12-01T00:00:00Z".parse::<ClockStart>().is_ok());
    }
}
