//! Ordered request parameters in Stripe's bracket form.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::fmt::Display;

/// Characters left as they are in a form-encoded key or value: ASCII letters and
/// digits plus `-`, `_`, `.` and `~`. Everything else (brackets included) is
/// percent-encoded, as the official stripe-python client does.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Request parameters as ordered `(key, value)` pairs, keys already in Stripe's
/// bracket form (`metadata[case_id]`, `items[0][price]`, `expand[]`).
///
/// ```
/// use stripe::Params;
/// let p = Params::new()
///     .set("amount", -1000)
///     .set("currency", "usd")
///     .set("metadata[case_id]", "case-1")
///     .push("expand[]", "customer");
/// assert_eq!(
///     p.encode(),
///     "amount=-1000&currency=usd&metadata%5Bcase_id%5D=case-1&expand%5B%5D=customer"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// An empty parameter list.
    pub fn new() -> Params {
        Params::default()
    }

    /// Sets `key` to `value`, replacing an earlier value of the same key in place
    /// (or appending when the key is new). Use [`Params::push`] for array entries.
    pub fn set(mut self, key: &str, value: impl Display) -> Params {
        let value = value.to_string();
        match self.pairs.iter_mut().find(|(k, _)| k == key) {
            Some(pair) => pair.1 = value,
            None => self.pairs.push((key.to_string(), value)),
        }
        self
    }

    /// Appends `key=value` even if `key` is already present (for `expand[]` and
    /// other array parameters).
    pub fn push(mut self, key: &str, value: impl Display) -> Params {
        self.pairs.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of the first pair with this key, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// `application/x-www-form-urlencoded` text: keys and values percent-encoded,
    /// pairs joined with `&` in insertion order.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                out.push('&');
            }
            out.extend(utf8_percent_encode(k, FORM));
            out.push('=');
            out.extend(utf8_percent_encode(v, FORM));
        }
        out
    }
}
