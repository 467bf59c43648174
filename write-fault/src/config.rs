//! `INTERLOCK_WRITE_FAULT`, parsed strictly: `dir=<absolute dir>;fail=write|fsync;nth=<N>;log=<absolute file>`.
//!
//! The four keys each appear exactly once, in any order, separated by `;` with nothing else
//! (no spaces, no empty field, no trailing `;`). A value runs from the key's `=` to the next `;`,
//! so neither path can hold a `;`. `dir` is absolute with no empty, `.` or `..` component (the
//! paths it is compared with come from `/proc/self/fd`, which has none, so such a `dir` would
//! never match); a trailing `/` is dropped. `nth` is a decimal integer from 1, without sign or
//! leading zeros.

/// Which calls a configuration counts and fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `write`, `pwrite`, `writev`, `pwritev` and their 64-bit names: fail with `ENOSPC`.
    Write,
    /// `fsync` and `fdatasync`: fail with `EIO`.
    Sync,
}

impl Kind {
    /// The name the variable gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Write => "write",
            Kind::Sync => "fsync",
        }
    }
}

/// A well-formed configuration.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    /// The directory whose files' calls count (absolute, no trailing `/` unless it is `/`).
    pub(crate) dir: Vec<u8>,
    /// Which calls count.
    pub(crate) kind: Kind,
    /// The count (from 1) of the call that fails.
    pub(crate) nth: u64,
    /// The log file (absolute).
    pub(crate) log: Vec<u8>,
}

/// Why a value is malformed, and the log file it named if that much of it was well formed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    /// One sentence.
    pub(crate) why: String,
    /// The `log` value, when it was present once and absolute.
    pub(crate) log: Option<Vec<u8>>,
}

/// Parses the variable's value.
pub(crate) fn parse(value: &[u8]) -> Result<Spec, Malformed> {
    let log = log_field(value);
    parse_fields(value).map_err(|Why(why)| Malformed { why, log })
}

/// The `log` value, if the value has exactly one `log=` field and it is absolute.
fn log_field(value: &[u8]) -> Option<Vec<u8>> {
    let mut logs = value
        .split(|&b| b == b';')
        .filter_map(|field| field.strip_prefix(b"log="));
    let log = logs.next()?;
    if logs.next().is_some() || !log.starts_with(b"/") {
        return None;
    }
    Some(log.to_vec())
}

/// Why one part of the value is malformed: one sentence.
struct Why(String);

impl From<String> for Why {
    fn from(why: String) -> Why {
        Why(why)
    }
}

impl From<&str> for Why {
    fn from(why: &str) -> Why {
        Why(why.to_owned())
    }
}

/// The value's text for a message (lossy, for non-UTF-8 bytes).
fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses the fields, or says why not.
fn parse_fields(value: &[u8]) -> Result<Spec, Why> {
    if value.is_empty() {
        return Err("the value is empty".to_owned().into());
    }
    let mut dir = None;
    let mut kind = None;
    let mut nth = None;
    let mut log = None;
    for field in value.split(|&b| b == b';') {
        if field.is_empty() {
            return Err("a field is empty (two `;` together, or one at an end)"
                .to_owned()
                .into());
        }
        let Some(eq) = field.iter().position(|&b| b == b'=') else {
            return Err(Why::from(format!("the field `{}` has no `=`", show(field))));
        };
        let (key, rest) = field.split_at(eq);
        let val = rest.get(1..).unwrap_or_default();
        let slot_taken = match key {
            b"dir" => dir.replace(parse_dir(val)?).is_some(),
            b"fail" => kind.replace(parse_kind(val)?).is_some(),
            b"nth" => nth.replace(parse_nth(val)?).is_some(),
            b"log" => log.replace(parse_log(val)?).is_some(),
            _ => {
                return Err(Why::from(format!(
                    "unknown key `{}` (the keys are dir, fail, nth, log)",
                    show(key)
                )))
            }
        };
        if slot_taken {
            return Err(Why::from(format!("the key `{}` is given twice", show(key))));
        }
    }
    let missing = |name: &str| format!("the key `{name}` is missing");
    Ok(Spec {
        dir: dir.ok_or_else(|| missing("dir"))?,
        kind: kind.ok_or_else(|| missing("fail"))?,
        nth: nth.ok_or_else(|| missing("nth"))?,
        log: log.ok_or_else(|| missing("log"))?,
    })
}

/// `dir`: absolute, no empty, `.` or `..` component; a trailing `/` dropped.
fn parse_dir(val: &[u8]) -> Result<Vec<u8>, Why> {
    let Some(rest) = val.strip_prefix(b"/") else {
        return Err(Why::from(format!(
            "dir must be an absolute path, not `{}`",
            show(val)
        )));
    };
    let rest = rest.strip_suffix(b"/").unwrap_or(rest);
    if rest.is_empty() {
        return Ok(b"/".to_vec());
    }
    if rest
        .split(|&b| b == b'/')
        .any(|c| c.is_empty() || c == b"." || c == b"..")
    {
        return Err(Why::from(format!(
            "dir must have no empty, `.` or `..` component, not `{}`",
            show(val)
        )));
    }
    // `rest` is `val` less its first byte and perhaps its last: the leading `/` and `rest`.
    Ok(val.get(..=rest.len()).unwrap_or(val).to_vec())
}

/// `fail`: `write` or `fsync`.
fn parse_kind(val: &[u8]) -> Result<Kind, Why> {
    match val {
        b"write" => Ok(Kind::Write),
        b"fsync" => Ok(Kind::Sync),
        _ => Err(Why::from(format!(
            "fail must be `write` or `fsync`, not `{}`",
            show(val)
        ))),
    }
}

/// `nth`: a decimal integer from 1, no sign, no leading zeros.
fn parse_nth(val: &[u8]) -> Result<u64, Why> {
    let bad = || {
        format!(
            "nth must be a decimal integer from 1 (no sign, no leading zeros), not `{}`",
            show(val)
        )
    };
    if val.is_empty() || val.first() == Some(&b'0') || !val.iter().all(u8::is_ascii_digit) {
        return Err(Why::from(bad()));
    }
    val.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .ok_or_else(|| Why::from(bad()))
    })
}

/// `log`: absolute.
fn parse_log(val: &[u8]) -> Result<Vec<u8>, Why> {
    if !val.starts_with(b"/") || val.ends_with(b"/") {
        return Err(Why::from(format!(
            "log must be an absolute file path, not `{}`",
            show(val)
        )));
    }
    Ok(val.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_value_parses_in_any_order() {
        let want = Spec {
            dir: b"/data/case".to_vec(),
            kind: Kind::Write,
            nth: 12,
            log: b"/logs/w.jsonl".to_vec(),
        };
        assert_eq!(
            parse(b"dir=/data/case;fail=write;nth=12;log=/logs/w.jsonl"),
            Ok(want)
        );
        let spec = parse(b"log=/l;nth=1;fail=fsync;dir=/d/").unwrap();
        assert_eq!(
            (spec.dir.as_slice(), spec.kind, spec.nth),
            (&b"/d"[..], Kind::Sync, 1)
        );
        assert_eq!(parse(b"dir=/;fail=write;nth=3;log=/l").unwrap().dir, b"/");
    }

    #[test]
    fn malformed_values_say_why_and_keep_the_log_when_they_can() {
        let cases: &[(&[u8], &str, bool)] = &[
            (b"", "empty", false),
            (b"dir=/d;fail=write;nth=3", "`log` is missing", false),
            (b"dir=/d;fail=write;log=/l", "`nth` is missing", true),
            (b"dir=/d;fail=write;nth=3;log=/l;", "a field is empty", true),
            (b"dir=/d;;fail=write;nth=3;log=/l", "a field is empty", true),
            (b"dir=/d;fail=write;nth=0;log=/l", "nth must be", true),
            (b"dir=/d;fail=write;nth=03;log=/l", "nth must be", true),
            (b"dir=/d;fail=write;nth=+3;log=/l", "nth must be", true),
            (b"dir=/d;fail=write;nth=3x;log=/l", "nth must be", true),
            (
                b"dir=/d;fail=write;nth=99999999999999999999;log=/l",
                "nth must be",
                true,
            ),
            (b"dir=/d;fail=read;nth=3;log=/l", "fail must be", true),
            (b"dir=/d;fail=Write;nth=3;log=/l", "fail must be", true),
            (
                b"dir=d;fail=write;nth=3;log=/l",
                "dir must be an absolute",
                true,
            ),
            (b"dir=/d/../e;fail=write;nth=3;log=/l", "component", true),
            (b"dir=/d//e;fail=write;nth=3;log=/l", "component", true),
            (b"dir=/d;fail=write;nth=3;log=l", "log must be", false),
            (b"dir=/d;fail=write;nth=3;log=/l;log=/m", "twice", false),
            (b"dir=/d;dir=/e;fail=write;nth=3;log=/l", "twice", true),
            (
                b"dir=/d;fail=write;nth=3;log=/l;when=now",
                "unknown key `when`",
                true,
            ),
            (b"dir=/d;fail=write;nth 3;log=/l", "has no `=`", true),
            (
                b" dir=/d;fail=write;nth=3;log=/l",
                "unknown key ` dir`",
                true,
            ),
        ];
        for (value, why, has_log) in cases {
            let m = parse(value).unwrap_err();
            assert!(
                m.why.contains(why),
                "{:?}: {} lacks {why}",
                String::from_utf8_lossy(value),
                m.why
            );
            assert_eq!(
                m.log.is_some(),
                *has_log,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }
}
