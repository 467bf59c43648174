//! One JSON line built in a fixed buffer on the stack: no allocation and no panic, so it can be
//! built inside an interposed `write` (which may run in a signal handler or under a lock).

/// A line's capacity in bytes.
pub(crate) const LINE_CAP: usize = 8192;

/// How many bytes of a line are kept for what follows a string: a string longer than the rest
/// of the buffer less this is cut (and the line says so).
const RESERVE: usize = 512;

/// A JSON object being written, one key at a time.
pub(crate) struct Line {
    /// The bytes so far.
    buf: [u8; LINE_CAP],
    /// How many of `buf` are used.
    len: usize,
    /// Whether something did not fit (the line is then not written).
    overflow: bool,
    /// Whether a key has been written (the next one needs a `,`).
    keyed: bool,
}

impl Line {
    /// An object with nothing in it yet.
    pub(crate) fn new() -> Self {
        let mut line = Line {
            buf: [0; LINE_CAP],
            len: 0,
            overflow: false,
            keyed: false,
        };
        line.raw(b"{");
        line
    }

    /// Appends bytes as they are.
    fn raw(&mut self, bytes: &[u8]) {
        let end = self.len.saturating_add(bytes.len());
        match self.buf.get_mut(self.len..end) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(bytes);
                self.len = end;
            }
            _ => self.overflow = true,
        }
    }

    /// Appends `"key":`.
    fn key(&mut self, key: &str) {
        if self.keyed {
            self.raw(b",");
        }
        self.keyed = true;
        self.raw(b"\"");
        self.raw(key.as_bytes());
        self.raw(b"\":");
    }

    /// Appends the decimal digits of `value`.
    fn digits(&mut self, mut value: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        while at > 0 {
            at -= 1;
            if let Some(d) = digits.get_mut(at) {
                // The remainder is below 10.
                *d = b'0' + (value % 10) as u8;
            }
            value /= 10;
            if value == 0 {
                break;
            }
        }
        self.raw(digits.get(at..).unwrap_or_default());
    }

    /// `"key":<unsigned integer>`.
    pub(crate) fn uint(&mut self, key: &str, value: u64) {
        self.key(key);
        self.digits(value);
    }

    /// `"key":<integer>`.
    pub(crate) fn int(&mut self, key: &str, value: i64) {
        self.key(key);
        if value < 0 {
            self.raw(b"-");
        }
        self.digits(value.unsigned_abs());
    }

    /// `"key":true` or `"key":false`.
    pub(crate) fn boolean(&mut self, key: &str, value: bool) {
        self.key(key);
        self.raw(if value { b"true" } else { b"false" });
    }

    /// `"key":"<bytes, escaped>"`: UTF-8 as it is (a byte that is not UTF-8 as U+FFFD), `"`,
    /// `\` and control characters escaped. Returns false when the string was cut to fit.
    pub(crate) fn string(&mut self, key: &str, value: &[u8]) -> bool {
        self.key(key);
        self.raw(b"\"");
        let limit = LINE_CAP.saturating_sub(RESERVE);
        let mut whole = true;
        'chunks: for chunk in value.utf8_chunks() {
            for c in chunk.valid().chars() {
                let mut utf8 = [0u8; 4];
                let mut esc = [0u8; 6];
                let bytes: &[u8] = match c {
                    '"' => b"\\\"",
                    '\\' => b"\\\\",
                    c if (c as u32) < 0x20 || c == '\u{7f}' => {
                        esc.copy_from_slice(b"\\u0000");
                        let v = c as u32;
                        esc[4] = HEX[((v >> 4) & 0xf) as usize];
                        esc[5] = HEX[(v & 0xf) as usize];
                        &esc
                    }
                    c => c.encode_utf8(&mut utf8).as_bytes(),
                };
                if self.len.saturating_add(bytes.len()) > limit {
                    whole = false;
                    break 'chunks;
                }
                self.raw(bytes);
            }
            if !chunk.invalid().is_empty() {
                if self.len.saturating_add(6) > limit {
                    whole = false;
                    break;
                }
                self.raw(b"\\ufffd");
            }
        }
        self.raw(b"\"");
        whole
    }

    /// The finished line (`}` and a newline appended), or `None` when something did not fit.
    pub(crate) fn finish(&mut self) -> Option<&[u8]> {
        self.raw(b"}\n");
        if self.overflow {
            return None;
        }
        self.buf.get(..self.len)
    }
}

/// Lower-case hexadecimal digits.
const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &mut Line) -> String {
        String::from_utf8(line.finish().unwrap().to_vec()).unwrap()
    }

    #[test]
    fn keys_of_each_type() {
        let mut line = Line::new();
        line.uint("n", 0);
        line.uint("big", u64::MAX);
        line.int("neg", -42);
        line.int("pos", 7);
        line.boolean("t", true);
        line.boolean("f", false);
        assert!(line.string("s", b"a\"b\\c\nd\x01\x7f\xc3\xa9\xff/e"));
        assert_eq!(
            text(&mut line),
            "{\"n\":0,\"big\":18446744073709551615,\"neg\":-42,\"pos\":7,\"t\":true,\"f\":false,\"s\":\"a\\\"b\\\\c\\u000ad\\u0001\\u007f\u{e9}\\ufffd/e\"}\n"
        );
    }

    #[test]
    fn a_long_string_is_cut_and_the_line_still_closes() {
        let mut line = Line::new();
        let long = vec![b'\n'; LINE_CAP];
        assert!(!line.string("path", &long));
        line.boolean("cut", true);
        let t = text(&mut line);
        assert!(
            t.len() <= LINE_CAP && t.ends_with(",\"cut\":true}\n"),
            "{t}"
        );
    }
}
