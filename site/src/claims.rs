//! Checkable claims in prose. A line `claim: ...` in a Markdown file is evaluated against the
//! facts of the verified data; a false claim fails the build with the claim and the data that
//! contradicts it, and a claim the build cannot understand fails it too.
//!
//! Two forms:
//!
//! - **Comparison**: `LEFT OP RIGHT`, with `OP` one of `=`, `!=`, `<`, `<=`, `>`, `>=` (spaces
//!   around it) and each side a fact name or a literal: an integer (`5`), a ratio (`5/6`), a
//!   duration (`40s`, `1.5s`, `300ms`), money (`$10`, `$10.50`) or quoted text (`"none"`). Both
//!   sides must have the same type; text compares only with `=` and `!=`.
//!   Example: `claim: held.no_check = 5/6`, `claim: max_crash.interlock < 40s`.
//! - **Sentences** (column names in place of `A`, `B`):
//!   - `A and B agree on every row` (no row where their invariant results differ);
//!   - `A held the invariant in every cell`;
//!   - `A violated the invariant in some cell`;
//!   - `A could prove what happened in every cell`;
//!   - `every crash was a SIGKILL` (every judged cell's worker ended by signal 9);
//!   - `every receipt verified` (at least one receipt, all verified at build time).

use crate::facts::{Fact, Facts};
use crate::placeholders::suggest;
use std::cmp::Ordering;

/// Why a claim failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimError {
    /// The claim could not be understood (unknown fact, unknown sentence, type mismatch).
    Invalid(String),
    /// The claim is false; the text is the contradicting data.
    False(String),
}

/// A claim that held, with the data it was checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The claim as written.
    pub claim: String,
    /// The values it was checked against, e.g. `held.no_check is 5/6`.
    pub evidence: String,
}

const OPS: [&str; 6] = ["<=", ">=", "!=", "=", "<", ">"];

/// Evaluate one claim (the text after `claim:`).
pub fn evaluate(claim: &str, facts: &Facts) -> Result<Checked, ClaimError> {
    let claim = claim.trim();
    let words = tokens(claim)?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let checked = |evidence: String| Checked {
        claim: claim.to_owned(),
        evidence,
    };
    match words.as_slice() {
        [a, "and", b, "agree", "on", "every", "row"] => {
            let n = int(facts, &format!("differ.{a}.{b}"))?;
            let rows = text(facts, &format!("differ_rows.{a}.{b}"))?;
            if n == 0 {
                Ok(checked(format!("rows where {a} and {b} differ on the invariant: {rows}")))
            } else {
                Err(ClaimError::False(format!("{a} and {b} differ on the invariant in {n} row(s): {rows}")))
            }
        }
        [a, "held", "the", "invariant", "in", "every", "cell"] => {
            let cells = int(facts, &format!("cells.{a}"))?;
            let violated = int(facts, &format!("violated.{a}"))?;
            let rows = text(facts, &format!("violated_rows.{a}"))?;
            if cells > 0 && violated == 0 {
                Ok(checked(format!("held.{a} is {}", get(facts, &format!("held.{a}"))?)))
            } else if cells == 0 {
                Err(ClaimError::False(format!("{a} has no judged cell")))
            } else {
                Err(ClaimError::False(format!("{a} violated the invariant in {violated} of {cells} cells: {rows}")))
            }
        }
        [a, "could", "prove", "what", "happened", "in", "every", "cell"] => {
            let cells = int(facts, &format!("cells.{a}"))?;
            let proved = int(facts, &format!("proof_count.{a}"))?;
            if cells > 0 && proved == cells {
                Ok(checked(format!("proof.{a} is {}", get(facts, &format!("proof.{a}"))?)))
            } else {
                Err(ClaimError::False(format!(
                    "{a} could prove what happened in {proved} of {cells} judged cells"
                )))
            }
        }
        [a, "violated", "the", "invariant", "in", "some", "cell"] => {
            let violated = int(facts, &format!("violated.{a}"))?;
            let rows = text(facts, &format!("violated_rows.{a}"))?;
            if violated > 0 {
                Ok(checked(format!("violated_rows.{a} is {rows}")))
            } else {
                Err(ClaimError::False(format!("{a} held the invariant in every judged cell (held.{a} is {})", get(facts, &format!("held.{a}"))?)))
            }
        }
        ["every", "crash", "was", "a", "SIGKILL"] => {
            let judged = int(facts, "judged")?;
            let killed = int(facts, "sigkills")?;
            if judged > 0 && killed == judged {
                Ok(checked(format!("{killed} of {judged} judged cells record worker_exit_signal 9")))
            } else {
                Err(ClaimError::False(format!("{killed} of {judged} judged cells record worker_exit_signal 9")))
            }
        }
        ["every", "receipt", "verified"] => {
            let all = int(facts, "receipts")?;
            let ok = int(facts, "receipts_verified")?;
            if all > 0 && ok == all {
                Ok(checked(format!("{ok} of {all} receipts verified at build time")))
            } else {
                Err(ClaimError::False(format!("{ok} of {all} receipts verified at build time")))
            }
        }
        [left, op, right] if OPS.contains(op) => compare(claim, left, op, right, facts),
        _ => Err(ClaimError::Invalid(
            "not a claim the build understands: expected `LEFT OP RIGHT` or one of the documented sentences".into(),
        )),
    }
}

/// Split on whitespace, keeping a double-quoted literal (with its quotes) as one token.
fn tokens(claim: &str) -> Result<Vec<String>, ClaimError> {
    let mut out = Vec::new();
    let mut chars = claim.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            let mut t = String::from('"');
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(ch) => t.push(ch),
                    None => return Err(ClaimError::Invalid("unclosed quote".into())),
                }
            }
            t.push('"');
            out.push(t);
        } else {
            let mut t = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                t.push(ch);
                chars.next();
            }
            out.push(t);
        }
    }
    Ok(out)
}

fn get<'a>(facts: &'a Facts, name: &str) -> Result<&'a Fact, ClaimError> {
    facts.get(name).ok_or_else(|| {
        ClaimError::Invalid(format!("unknown fact `{name}`{}", suggest(name, facts)))
    })
}

fn int(facts: &Facts, name: &str) -> Result<i64, ClaimError> {
    match get(facts, name)? {
        Fact::Int(n) => Ok(*n),
        other => Err(ClaimError::Invalid(format!(
            "fact `{name}` is a {}, not an integer",
            other.type_name()
        ))),
    }
}

fn text(facts: &Facts, name: &str) -> Result<String, ClaimError> {
    get(facts, name).map(ToString::to_string)
}

/// A term: a fact (with its name) or a literal.
fn term(s: &str, facts: &Facts) -> Result<(Fact, Option<String>), ClaimError> {
    if let Some(lit) = literal(s) {
        return Ok((lit, None));
    }
    if s.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
    {
        return get(facts, s).map(|f| (f.clone(), Some(s.to_owned())));
    }
    Err(ClaimError::Invalid(format!(
        "`{s}` is neither a fact name nor a literal"
    )))
}

/// Parse a literal: `"text"`, `$10.50`, `1.5s`, `300ms`, `5/6`, `12`.
pub fn literal(s: &str) -> Option<Fact> {
    if let Some(t) = s.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return Some(Fact::Text(t.to_owned()));
    }
    if let Some(d) = s.strip_prefix('$') {
        return decimal(d, 2).map(|c| Fact::Cents(c as i64));
    }
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.parse().ok().map(Fact::Ms);
    }
    if let Some(sec) = s.strip_suffix('s') {
        return decimal(sec, 3).map(Fact::Ms);
    }
    if let Some((k, n)) = s.split_once('/') {
        return Some(Fact::Ratio(k.parse().ok()?, n.parse().ok()?));
    }
    s.parse().ok().map(Fact::Int)
}

/// `12.5` with `places` decimals as an integer scaled by 10^places.
fn decimal(s: &str, places: u32) -> Option<u64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > places as usize
        || whole.is_empty()
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let scale = 10u64.pow(places);
    let w: u64 = whole.parse().ok()?;
    let f: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<width$}", width = places as usize)
            .parse()
            .ok()?
    };
    w.checked_mul(scale)?.checked_add(f)
}

fn compare(claim: &str, l: &str, op: &str, r: &str, facts: &Facts) -> Result<Checked, ClaimError> {
    let (lv, ln) = term(l, facts)?;
    let (rv, rn) = term(r, facts)?;
    let ord = match (&lv, &rv) {
        (Fact::Int(a), Fact::Int(b)) => a.cmp(b),
        (Fact::Ms(a), Fact::Ms(b)) => a.cmp(b),
        (Fact::Cents(a), Fact::Cents(b)) => a.cmp(b),
        (Fact::Ratio(a, n), Fact::Ratio(b, m)) => {
            if op == "=" || op == "!=" {
                if (a, n) == (b, m) {
                    Ordering::Equal
                } else {
                    Ordering::Less
                }
            } else {
                (u64::from(*a) * u64::from(*m)).cmp(&(u64::from(*b) * u64::from(*n)))
            }
        }
        (Fact::Text(a), Fact::Text(b)) if op == "=" || op == "!=" => {
            if a == b {
                Ordering::Equal
            } else {
                Ordering::Less
            }
        }
        _ => {
            return Err(ClaimError::Invalid(format!(
                "cannot compare a {} with a {} using `{op}`",
                lv.type_name(),
                rv.type_name()
            )))
        }
    };
    let holds = match op {
        "=" => ord == Ordering::Equal,
        "!=" => ord != Ordering::Equal,
        "<" => ord == Ordering::Less,
        "<=" => ord != Ordering::Greater,
        ">" => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    };
    let describe = |v: &Fact, n: &Option<String>| match n {
        Some(name) => format!("{name} is {v}"),
        None => String::new(),
    };
    let evidence: Vec<String> = [describe(&lv, &ln), describe(&rv, &rn)]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    let evidence = evidence.join(", ");
    if holds {
        Ok(Checked {
            claim: claim.to_owned(),
            evidence,
        })
    } else {
        Err(ClaimError::False(format!("the data says {evidence}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        let mut f = Facts::new();
        f.insert("held.no_check".into(), Fact::Ratio(5, 6));
        f.insert("held.interlock".into(), Fact::Ratio(6, 6));
        f.insert("cells.interlock".into(), Fact::Int(6));
        f.insert("violated.interlock".into(), Fact::Int(0));
        f.insert("violated_rows.interlock".into(), Fact::Text("none".into()));
        f.insert("differ.hand_check.interlock".into(), Fact::Int(1));
        f.insert(
            "differ_rows.hand_check.interlock".into(),
            Fact::Text("before_send / renewal".into()),
        );
        f.insert("max_crash.interlock".into(), Fact::Ms(1_500));
        f.insert("approved".into(), Fact::Cents(1000));
        f
    }

    #[test]
    fn comparisons() {
        let f = facts();
        assert!(evaluate("held.no_check = 5/6", &f).is_ok());
        assert!(evaluate("held.interlock > held.no_check", &f).is_ok());
        assert!(evaluate("max_crash.interlock < 40s", &f).is_ok());
        assert!(evaluate("max_crash.interlock <= 1500ms", &f).is_ok());
        assert!(evaluate("approved = $10", &f).is_ok());
        let e = evaluate("held.no_check = 6/6", &f).unwrap_err();
        assert_eq!(
            e,
            ClaimError::False("the data says held.no_check is 5/6".into())
        );
        assert!(matches!(
            evaluate("held.no_check = 5", &f),
            Err(ClaimError::Invalid(_))
        ));
        assert!(matches!(
            evaluate("held.nobody = 5/6", &f),
            Err(ClaimError::Invalid(_))
        ));
    }

    #[test]
    fn sentences() {
        let f = facts();
        assert!(evaluate("interlock held the invariant in every cell", &f).is_ok());
        let e = evaluate("hand_check and interlock agree on every row", &f).unwrap_err();
        assert!(
            matches!(e, ClaimError::False(ref s) if s.contains("before_send / renewal")),
            "{e:?}"
        );
        assert!(matches!(
            evaluate("interlock is great", &f),
            Err(ClaimError::Invalid(_))
        ));
    }

    #[test]
    fn literals() {
        assert_eq!(literal("1.5s"), Some(Fact::Ms(1500)));
        assert_eq!(literal("$10.5"), Some(Fact::Cents(1050)));
        assert_eq!(literal("\"none\""), Some(Fact::Text("none".into())));
        assert_eq!(literal("abc"), None);
    }
}
