//! Canonical JSON written straight from JSON text, without building a tree of values: the fast
//! path for hashing text that is already close to canonical.
//!
//! [`write`] reads the text once. Every scalar whose bytes already are its canonical form (an
//! integer in plain decimal within ±(2^53−1), a string without any backslash, `true`, `false`,
//! `null`) is copied as it stands; whitespace between tokens is dropped; the members of an object
//! whose keys are not in RFC 8785 order are put in that order. Anything else gives `None`, and
//! the caller falls back to the canonical writer of [`crate::canonical`] (through a full parse):
//! any backslash in a string (an escape has more than one spelling), a number with a fraction,
//! an exponent or beyond the safe range, `-0`, a key twice in one object, a string longer than
//! the caller's limit, nesting deeper than the caller's limit, and every text that is not JSON.
//!
//! So when it gives bytes they are exactly what [`crate::canonical::to_vec`] writes for the
//! value the text holds (the tests compare the two on many texts), and when it does not, nothing
//! is decided here.

use crate::canonical::{cmp_utf16, MAX_SAFE_INTEGER};
use std::cmp::Ordering;
use std::ops::Range;

/// What [`write`] accepts; past either limit it gives `None`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest string (value or key), in bytes.
    pub max_string_bytes: usize,
    /// The most arrays and objects open at once.
    pub max_depth: usize,
}

/// Buffers [`write`] reuses from one text to the next (so that hashing many texts allocates
/// nothing once they have grown).
#[derive(Default)]
pub struct Scratch {
    /// The members of the objects being read (each object's after its parent's): key, and where
    /// the member stands in the output.
    members: Vec<(Range<usize>, Range<usize>)>,
    /// An object's members while they are put in order.
    moved: Vec<u8>,
}

/// Append the canonical form of the JSON value `text` to `out`, or give `None` (then `out` holds
/// some of it: the caller discards it) where this fast path does not decide (see the module's
/// documentation).
pub fn write(text: &str, limits: Limits, scratch: &mut Scratch, out: &mut Vec<u8>) -> Option<()> {
    scratch.members.clear();
    let mut reader = Reader {
        text,
        at: 0,
        limits,
        scratch,
        out,
    };
    reader.value(0)?;
    reader.skip_space();
    (reader.at == reader.text.len()).then_some(())
}

struct Reader<'t, 's> {
    /// The text; every range kept of it starts and ends at an ASCII byte (a quote), so on a
    /// character boundary.
    text: &'t str,
    at: usize,
    limits: Limits,
    scratch: &'s mut Scratch,
    out: &'s mut Vec<u8>,
}

impl Reader<'_, '_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Consume `byte` after optional whitespace.
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    /// One value; `depth` arrays and objects are open around it.
    fn value(&mut self, depth: usize) -> Option<()> {
        self.skip_space();
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let range = self.string()?;
                self.copy(range.start - 1..range.end + 1)
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.integer(),
        }
    }

    fn copy(&mut self, range: Range<usize>) -> Option<()> {
        self.out.extend_from_slice(self.text.get(range)?.as_bytes());
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.text.as_bytes().get(self.at..end)? == word).then_some(())?;
        self.out.extend_from_slice(word);
        self.at = end;
        Some(())
    }

    /// An integer in plain decimal (`-?(0|[1-9][0-9]*)`, not `-0`) within ±(2^53−1), not
    /// followed by a fraction or an exponent.
    fn integer(&mut self) -> Option<()> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        let digits_from = start + usize::from(negative);
        let bytes = self.text.as_bytes();
        let mut end = digits_from;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let digits = bytes.get(digits_from..end)?;
        // At most 16 digits: 2^53 - 1 has 16, so more is out of range (or a leading zero).
        if digits.is_empty() || digits.len() > 16 || (digits[0] == b'0' && digits.len() > 1) {
            return None;
        }
        if matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let magnitude = digits
            .iter()
            .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        if magnitude > MAX_SAFE_INTEGER.unsigned_abs() || (negative && magnitude == 0) {
            return None;
        }
        self.at = end;
        self.copy(start..end)
    }

    /// A string without any backslash or control character, within the length limit: the
    /// range of its contents (without the quotes). The reader stands after its closing quote.
    fn string(&mut self) -> Option<Range<usize>> {
        let from = self.at + 1;
        let rest = self.text.as_bytes().get(from..)?;
        // Where the contents end: a quote (or a backslash, a control character or the end of
        // the text, all declined here).
        let len = crate::scan::plain_len(rest);
        if rest.get(len) != Some(&b'"') || len > self.limits.max_string_bytes {
            return None;
        }
        self.at = from + len + 1;
        Some(from..from + len)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > self.limits.max_depth {
            return None;
        }
        self.at += 1;
        self.out.push(b'[');
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            self.out.push(b']');
            return Some(());
        }
        loop {
            self.value(depth)?;
            self.skip_space();
            match self.peek()? {
                b',' => self.out.push(b','),
                b']' => break,
                _ => return None,
            }
            self.at += 1;
        }
        self.at += 1;
        self.out.push(b']');
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > self.limits.max_depth {
            return None;
        }
        self.at += 1;
        let (start, base) = (self.out.len(), self.scratch.members.len());
        self.out.push(b'{');
        self.skip_space();
        let mut in_order = true;
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.skip_space();
                if self.peek() != Some(b'"') {
                    return None;
                }
                let key = self.string()?;
                self.expect(b':')?;
                if self.scratch.members.len() > base {
                    self.out.push(b',');
                }
                let from = self.out.len();
                self.copy(key.start - 1..key.end + 1)?;
                self.out.push(b':');
                self.value(depth)?;
                let before = self
                    .scratch
                    .members
                    .last()
                    .filter(|_| self.scratch.members.len() > base);
                if let Some((previous, _)) = before {
                    in_order &= self.key_order(previous.clone(), key.clone())? == Ordering::Less;
                }
                self.scratch.members.push((key, from..self.out.len()));
                self.skip_space();
                match self.peek()? {
                    b',' => self.at += 1,
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        if !in_order {
            self.put_in_order(start, base)?;
        }
        self.scratch.members.truncate(base);
        self.out.push(b'}');
        Some(())
    }

    /// The order of two keys of the text (by UTF-16 code units, as RFC 8785 sorts them).
    fn key_order(&self, a: Range<usize>, b: Range<usize>) -> Option<Ordering> {
        Some(cmp_utf16(self.text.get(a)?, self.text.get(b)?))
    }

    /// Rewrite the members of the object opened at `start` in `out` (`members[base..]`) in key
    /// order; `None` when a key is there twice.
    fn put_in_order(&mut self, start: usize, base: usize) -> Option<()> {
        let mut members = std::mem::take(&mut self.scratch.members);
        let mine = members.get_mut(base..)?;
        let mut failed = false;
        mine.sort_unstable_by(|(a, _), (b, _)| {
            self.key_order(a.clone(), b.clone()).unwrap_or_else(|| {
                failed = true;
                Ordering::Equal
            })
        });
        let twice = mine
            .windows(2)
            .any(|w| self.text.get(w[0].0.clone()) == self.text.get(w[1].0.clone()));
        let moved = &mut self.scratch.moved;
        moved.clear();
        moved.extend_from_slice(self.out.get(start..)?);
        self.out.truncate(start + 1);
        for (i, (_, range)) in mine.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out
                .extend_from_slice(moved.get(range.start - start..range.end - start)?);
        }
        self.scratch.members = members;
        (!failed && !twice).then_some(())
    }
}

#[cfg(test)]
#[path = "trusted_tests/canonical_text.rs"]
mod tests;
