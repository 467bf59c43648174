//! The ground truth: the messages in the Maildir, read from their files.
//!
//! A delivered message is one file in `new/` (or `cur/`, had a reader moved it); `tmp/` holds
//! deliveries still being written, which are not delivered yet (the Maildir convention Postfix
//! follows: write in `tmp/`, then rename into `new/`).

use crate::error::MailError;
use crate::layout::io;
use std::path::Path;

/// The header naming the case a message belongs to.
pub const CASE_HEADER: &str = "X-Interlock-Case";

/// Whether `name` can name a case: `A-Z a-z 0-9 . _ -`, 1 to 100 characters (so it is a
/// header value as it stands).
pub(crate) fn is_case_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// One message as delivered into the Maildir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The file's name in the Maildir: one per delivery, never reused.
    pub file: String,
    /// The `Message-ID` header's value, as written (with its angle brackets).
    pub message_id: Option<String>,
    /// The `Delivered-To` header Postfix adds: the recipient this copy was delivered for.
    pub delivered_to: Option<String>,
    /// The `Subject` header's value, as written (not decoded).
    pub subject: Option<String>,
}

/// The messages of `case` in the Maildir `inbox`, ordered by file name (Postfix names a
/// delivery by its time first, so this is delivery order to the second).
pub(crate) fn read(inbox: &Path, case: &str) -> Result<Vec<Delivered>, MailError> {
    let mut found = Vec::new();
    for sub in ["new", "cur"] {
        let dir = inbox.join(sub);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // no delivery has made the Maildir yet
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io(&dir))?;
            let path = entry.path();
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            let headers = headers(&bytes);
            if header(&headers, CASE_HEADER) != Some(case) {
                continue;
            }
            found.push(Delivered {
                file: entry.file_name().to_string_lossy().into_owned(),
                message_id: header(&headers, "Message-ID").map(str::to_string),
                delivered_to: header(&headers, "Delivered-To").map(str::to_string),
                subject: header(&headers, "Subject").map(str::to_string),
            });
        }
    }
    found.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(found)
}

/// The header fields of a message (RFC 5322 section 2.2): name and unfolded value, in order,
/// up to the first empty line. A line that is neither a field nor a continuation ends them.
pub(crate) fn headers(message: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(message);
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            // a folded line continues the field before it (section 2.2.3: unfolding removes
            // only the line break)
            match fields.last_mut() {
                Some((_, value)) => value.push_str(line),
                None => break,
            }
            continue;
        }
        match line.split_once(':') {
            Some((name, value)) if is_field_name(name) => {
                fields.push((name.to_string(), value.to_string()));
            }
            _ => break,
        }
    }
    for (_, value) in &mut fields {
        *value = value.trim().to_string();
    }
    fields
}

/// The first field named `name` (names compare without regard to case).
pub(crate) fn header<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// A field name: printable US-ASCII but the colon (RFC 5322 section 3.6.8).
fn is_field_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| (33..=126).contains(&b) && b != b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELIVERED: &str = "Return-Path: <agent@interlock.test>\n\
X-Original-To: customer@interlock.test\n\
Delivered-To: customer@interlock.test\n\
Received: from worker.interlock.test (unknown [127.0.0.1])\n\
\tby mailhost.interlock.test (Postfix) with ESMTP id 2B3DD98C6D9\n\
\tfor <customer@interlock.test>; Fri,  4 Dec 2026 17:22:22 +0000 (UTC)\n\
Subject: Your refund\n\
x-interlock-case: case-7\n\
Message-ID: <refund-7@interlock.test>\n\
\n\
X-Interlock-Case: not-a-header\n";

    #[test]
    fn fields_are_read_up_to_the_empty_line_and_unfolded() {
        let fields = headers(DELIVERED.as_bytes());
        assert_eq!(fields.len(), 7);
        assert_eq!(
            header(&fields, "received"),
            Some(
                "from worker.interlock.test (unknown [127.0.0.1])\tby mailhost.interlock.test \
                 (Postfix) with ESMTP id 2B3DD98C6D9\tfor <customer@interlock.test>; \
                 Fri,  4 Dec 2026 17:22:22 +0000 (UTC)"
            )
        );
        assert_eq!(header(&fields, CASE_HEADER), Some("case-7"));
        assert_eq!(
            header(&fields, "Message-Id"),
            Some("<refund-7@interlock.test>")
        );
    }

    #[test]
    fn crlf_line_ends_read_as_lf_ones() {
        let crlf = DELIVERED.replace('\n', "\r\n");
        assert_eq!(headers(crlf.as_bytes()), headers(DELIVERED.as_bytes()));
    }

    #[test]
    fn case_names_are_short_plain_words() {
        assert!(is_case_name("notify-3.a_b"));
        assert!(!is_case_name(""));
        assert!(!is_case_name(&"a".repeat(101)));
        assert!(!is_case_name("a b"));
        assert!(!is_case_name("a\r\nb"));
    }

    #[test]
    fn a_body_line_is_never_a_header() {
        let fields = headers(b"Subject: a\n\nX-Interlock-Case: c\n");
        assert_eq!(header(&fields, CASE_HEADER), None);
    }

    #[test]
    fn a_line_that_is_no_field_ends_the_header() {
        let fields = headers(b"Subject: a\nnot a field\nX-Interlock-Case: c\n");
        assert_eq!(fields, [("Subject".to_string(), "a".to_string())]);
        assert!(headers(b" folded first\nSubject: a\n").is_empty());
    }

    #[test]
    fn the_first_of_two_fields_of_one_name_counts() {
        let fields = headers(b"X-Interlock-Case: a\nX-Interlock-Case: b\n\n");
        assert_eq!(header(&fields, CASE_HEADER), Some("a"));
    }

    #[test]
    fn the_maildir_is_read_from_new_and_cur_but_not_tmp() {
        let root = tempfile::tempdir().unwrap();
        for sub in ["new", "cur", "tmp"] {
            std::fs::create_dir(root.path().join(sub)).unwrap();
        }
        let message = |case: &str, id: &str| {
            format!("Delivered-To: c@interlock.test\nX-Interlock-Case: {case}\nMessage-ID: <{id}>\n\nbody\n")
        };
        std::fs::write(root.path().join("new/2.a"), message("c1", "two")).unwrap();
        std::fs::write(root.path().join("cur/1.b:2,S"), message("c1", "one")).unwrap();
        std::fs::write(root.path().join("new/3.c"), message("c2", "other")).unwrap();
        std::fs::write(root.path().join("tmp/4.d"), message("c1", "unfinished")).unwrap();
        let found = read(root.path(), "c1").unwrap();
        let ids: Vec<_> = found.iter().map(|d| d.message_id.as_deref()).collect();
        assert_eq!(ids, [Some("<one>"), Some("<two>")]);
        assert_eq!(found[0].delivered_to.as_deref(), Some("c@interlock.test"));
        assert!(read(&root.path().join("absent"), "c1").unwrap().is_empty());
    }
}
