//! Small, exact formatters for the numbers the pages show.

/// Milliseconds as seconds: three decimals under 1 s, two under 10 s, one above
/// (`0.012 s`, `5.54 s`, `41.8 s`).
pub fn seconds(ms: u64) -> String {
    if ms < 1_000 {
        format!("0.{ms:03} s")
    } else if ms < 10_000 {
        let hundredths = (ms + 5) / 10;
        format!("{}.{:02} s", hundredths / 100, hundredths % 100)
    } else {
        let tenths = (ms + 50) / 100;
        format!("{}.{} s", tenths / 10, tenths % 10)
    }
}

/// Cents as dollars: `$10`, `$10.50`, `-$0.25`.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    if abs.is_multiple_of(100) {
        format!("{sign}${}", abs / 100)
    } else {
        format!("{sign}${}.{:02}", abs / 100, abs % 100)
    }
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS.mmm UTC` (or the raw number if out of range).
pub fn utc_ms(ts_ms: i64) -> String {
    let nanos = i128::from(ts_ms) * 1_000_000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => format!("{ts_ms} ms"),
    }
}

/// An interval on a rate, from ppm, as percentages with one decimal: the lower end rounded down
/// and the upper up, so the text never claims more than the interval; `n/a` over no trials.
pub fn interval(lower_ppm: u32, upper_ppm: u32, n: u32) -> String {
    if n == 0 {
        return "n/a".into();
    }
    let (lo, hi) = (lower_ppm / 1_000, upper_ppm.div_ceil(1_000));
    format!("{}.{}–{}.{}%", lo / 10, lo % 10, hi / 10, hi % 10)
}

/// `k/n`.
pub fn ratio(k: u32, n: u32) -> String {
    format!("{k}/{n}")
}

/// `n` and the noun for it: `one` when `n` is 1, `many` otherwise ("1 report", "2 reports").
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_one_takes_the_singular() {
        assert_eq!(count(1, "report", "reports"), "1 report");
        assert_eq!(count(0, "report", "reports"), "0 reports");
        assert_eq!(count(4, "report", "reports"), "4 reports");
    }

    #[test]
    fn an_interval_is_rounded_outwards() {
        assert_eq!(interval(621_073, 967_930, 20), "62.1–96.8%");
        assert_eq!(interval(831_566, 1_000_000, 20), "83.1–100.0%");
        assert_eq!(interval(0, 1_000_000, 0), "n/a");
    }

    #[test]
    fn formats() {
        assert_eq!(seconds(0), "0.000 s");
        assert_eq!(seconds(12), "0.012 s");
        assert_eq!(seconds(424), "0.424 s");
        assert_eq!(seconds(5_537), "5.54 s");
        assert_eq!(seconds(9_999), "10.00 s");
        assert_eq!(seconds(41_849), "41.8 s");
        assert_eq!(dollars(1000), "$10");
        assert_eq!(dollars(1050), "$10.50");
        assert_eq!(dollars(-25), "-$0.25");
        assert_eq!(utc_ms(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(ratio(5, 6), "5/6");
    }
}
