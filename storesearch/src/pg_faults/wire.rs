//! The PostgreSQL wire protocol (version 3), read just enough to count round trips: messages
//! framed out of a byte stream, the startup packet's parameters, and the statement text a
//! client's Query, Parse, Bind or Close carries.
//!
//! A client message is a type byte and a 4-byte big-endian length that counts itself; the first
//! messages of a connection (the startup packet, an SSL or GSS encryption request, a cancel
//! request) have no type byte. Every server message is typed. A client's Sync (`S`) or simple
//! Query (`Q`) ends a round trip: the server answers each with one ReadyForQuery (`Z`).

/// The protocol version a StartupMessage names (3.0).
const PROTOCOL_3: u32 = 196_608;
/// The code of an SSLRequest (sent in place of a startup packet).
pub const SSL_REQUEST: u32 = 80_877_103;
/// The code of a GSSENCRequest.
pub const GSSENC_REQUEST: u32 = 80_877_104;
/// No message of this protocol between the gate and its server comes near this size: a longer
/// length means the stream was misread.
const MAX_MESSAGE: usize = 64 << 20;

/// One message, with its bytes exactly as they came (to be forwarded unchanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The type byte; `None` for an untyped startup-phase packet.
    pub tag: Option<u8>,
    /// The whole message: type byte (if any), length and body.
    pub raw: Vec<u8>,
}

impl Message {
    /// The body: what follows the type byte and the length.
    pub fn body(&self) -> &[u8] {
        let header = if self.tag.is_some() { 5 } else { 4 };
        &self.raw[header.min(self.raw.len())..]
    }

    /// The code of an untyped packet (protocol version or request code), if this is one.
    pub fn startup_code(&self) -> Option<u32> {
        if self.tag.is_some() {
            return None;
        }
        be_u32(self.body())
    }

    /// True for a client message that ends a round trip: Sync or simple Query.
    pub fn ends_round_trip(&self) -> bool {
        matches!(self.tag, Some(b'S' | b'Q'))
    }
}

/// The stream was not PostgreSQL's protocol as read here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// Frames messages out of one direction of a connection, however its bytes are split.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// Still in the startup phase (client side only): packets are untyped.
    startup: bool,
}

impl Framer {
    /// For what the client sends: untyped packets until the StartupMessage, typed after it.
    pub fn client() -> Framer {
        Framer {
            buf: Vec::new(),
            startup: true,
        }
    }

    /// For what the server sends: typed from the first byte.
    pub fn server() -> Framer {
        Framer {
            buf: Vec::new(),
            startup: false,
        }
    }

    /// Add bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, if the bytes so far hold one.
    pub fn next_message(&mut self) -> Result<Option<Message>, WireError> {
        let header = if self.startup { 4 } else { 5 };
        if self.buf.len() < header {
            return Ok(None);
        }
        let len_at = header - 4;
        let declared = be_u32(&self.buf[len_at..]).unwrap_or(0) as usize;
        if !(4..=MAX_MESSAGE).contains(&declared) {
            return Err(WireError(format!(
                "a message declares {declared} bytes: not PostgreSQL's protocol as expected"
            )));
        }
        let total = len_at + declared;
        if self.buf.len() < total {
            return Ok(None);
        }
        let raw: Vec<u8> = self.buf.drain(..total).collect();
        let message = if self.startup {
            let m = Message { tag: None, raw };
            if m.startup_code() == Some(PROTOCOL_3) {
                self.startup = false;
            }
            m
        } else {
            Message {
                tag: Some(raw[0]),
                raw,
            }
        };
        Ok(Some(message))
    }
}

fn be_u32(b: &[u8]) -> Option<u32> {
    let bytes: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(bytes))
}

/// Split a NUL-terminated string off the front of `b`: the string and what follows it.
fn cstring(b: &[u8]) -> Option<(String, &[u8])> {
    let end = b.iter().position(|&c| c == 0)?;
    Some((
        String::from_utf8_lossy(&b[..end]).into_owned(),
        &b[end + 1..],
    ))
}

/// A StartupMessage's parameters (`user`, `database`, `application_name`, …), in order.
pub fn startup_params(m: &Message) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(mut rest) = m.body().get(4..) else {
        return out;
    };
    while let Some((key, after)) = cstring(rest) {
        if key.is_empty() {
            break;
        }
        let Some((value, after)) = cstring(after) else {
            break;
        };
        out.push((key, value));
        rest = after;
    }
    out
}

/// What one client message says about the statement it runs or prepares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// A simple Query: its text.
    Query(String),
    /// Parse: the prepared statement's name and text.
    Parse { name: String, sql: String },
    /// Bind: the prepared statement it executes.
    Bind { statement: String },
    /// Close of a prepared statement (`S`) or portal (`P`), by name.
    Close { kind: u8, name: String },
    /// Any other message.
    Other,
}

/// Read a client message's statement, if it carries one.
pub fn statement(m: &Message) -> Statement {
    let body = m.body();
    let parsed = match m.tag {
        Some(b'Q') => cstring(body).map(|(sql, _)| Statement::Query(sql)),
        Some(b'P') => cstring(body)
            .and_then(|(name, rest)| cstring(rest).map(|(sql, _)| Statement::Parse { name, sql })),
        Some(b'B') => cstring(body)
            .and_then(|(_portal, rest)| cstring(rest))
            .map(|(statement, _)| Statement::Bind { statement }),
        Some(b'C') => body
            .split_first()
            .and_then(|(kind, rest)| cstring(rest).map(|(name, _)| (*kind, name)))
            .map(|(kind, name)| Statement::Close { kind, name }),
        _ => None,
    };
    parsed.unwrap_or(Statement::Other)
}

/// Build a typed message.
#[cfg(test)]
pub fn typed(tag: u8, body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len() + 4).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(tag);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Build an untyped startup-phase packet with `code` and `rest` after it.
#[cfg(test)]
pub fn untyped(code: u32, rest: &[u8]) -> Vec<u8> {
    let len = u32::try_from(rest.len() + 8).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(rest.len() + 8);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn startup(params: &[(&str, &str)]) -> Vec<u8> {
        let mut rest = Vec::new();
        for (k, v) in params {
            rest.extend_from_slice(k.as_bytes());
            rest.push(0);
            rest.extend_from_slice(v.as_bytes());
            rest.push(0);
        }
        rest.push(0);
        untyped(PROTOCOL_3, &rest)
    }

    fn cstr(s: &str) -> Vec<u8> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    }

    fn all(f: &mut Framer) -> Vec<Message> {
        let mut out = Vec::new();
        while let Some(m) = f.next_message().unwrap() {
            out.push(m);
        }
        out
    }

    #[test]
    fn the_startup_packet_is_untyped_and_what_follows_is_typed() {
        let mut bytes = startup(&[("user", "u"), ("application_name", "interlock-journal")]);
        bytes.extend(typed(b'Q', &cstr("SELECT 1")));
        let mut f = Framer::client();
        f.push(&bytes);
        let got = all(&mut f);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].tag, None);
        assert_eq!(got[0].startup_code(), Some(PROTOCOL_3));
        assert_eq!(
            startup_params(&got[0]),
            vec![
                ("user".to_owned(), "u".to_owned()),
                (
                    "application_name".to_owned(),
                    "interlock-journal".to_owned()
                )
            ]
        );
        assert_eq!(got[1].tag, Some(b'Q'));
        assert!(got[1].ends_round_trip());
        assert_eq!(statement(&got[1]), Statement::Query("SELECT 1".into()));
        let forwarded: Vec<u8> = got.iter().flat_map(|m| m.raw.clone()).collect();
        assert_eq!(forwarded, bytes, "messages keep their bytes exactly");
    }

    #[test]
    fn messages_split_anywhere_are_framed_the_same() {
        let mut bytes = startup(&[("user", "u")]);
        bytes.extend(typed(
            b'P',
            &[cstr("s1"), cstr("SELECT $1"), vec![0, 0]].concat(),
        ));
        bytes.extend(typed(
            b'D',
            &[b'S'].iter().copied().chain(cstr("s1")).collect::<Vec<_>>(),
        ));
        bytes.extend(typed(b'S', &[]));
        for cut in 0..bytes.len() {
            let mut f = Framer::client();
            f.push(&bytes[..cut]);
            let mut got = all(&mut f);
            f.push(&bytes[cut..]);
            got.extend(all(&mut f));
            let tags: Vec<_> = got.iter().map(|m| m.tag).collect();
            assert_eq!(
                tags,
                vec![None, Some(b'P'), Some(b'D'), Some(b'S')],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_encryption_request_keeps_the_stream_untyped() {
        let mut bytes = untyped(SSL_REQUEST, &[]);
        bytes.extend(startup(&[("user", "u")]));
        let mut f = Framer::client();
        f.push(&bytes);
        let got = all(&mut f);
        assert_eq!(got[0].startup_code(), Some(SSL_REQUEST));
        assert_eq!(got[1].startup_code(), Some(PROTOCOL_3));
    }

    #[test]
    fn server_messages_are_typed_from_the_first_byte() {
        let mut bytes = typed(b'R', &0u32.to_be_bytes());
        bytes.extend(typed(b'Z', b"I"));
        let mut f = Framer::server();
        f.push(&bytes);
        let tags: Vec<_> = all(&mut f).iter().map(|m| m.tag).collect();
        assert_eq!(tags, vec![Some(b'R'), Some(b'Z')]);
    }

    #[test]
    fn a_length_below_four_is_an_error() {
        let mut f = Framer::server();
        f.push(&[b'Z', 0, 0, 0, 2]);
        assert!(f.next_message().is_err());
    }

    #[test]
    fn parse_bind_and_close_name_their_statement() {
        let parse = Message {
            tag: Some(b'P'),
            raw: typed(b'P', &[cstr("s7"), cstr("SELECT 2"), vec![0, 0]].concat()),
        };
        assert_eq!(
            statement(&parse),
            Statement::Parse {
                name: "s7".into(),
                sql: "SELECT 2".into()
            }
        );
        let bind = Message {
            tag: Some(b'B'),
            raw: typed(
                b'B',
                &[cstr(""), cstr("s7"), vec![0, 0, 0, 0, 0, 0]].concat(),
            ),
        };
        assert_eq!(
            statement(&bind),
            Statement::Bind {
                statement: "s7".into()
            }
        );
        let close = Message {
            tag: Some(b'C'),
            raw: typed(b'C', &[vec![b'S'], cstr("s7")].concat()),
        };
        assert_eq!(
            statement(&close),
            Statement::Close {
                kind: b'S',
                name: "s7".into()
            }
        );
        let sync = Message {
            tag: Some(b'S'),
            raw: typed(b'S', &[]),
        };
        assert!(sync.ends_round_trip());
        assert_eq!(statement(&sync), Statement::Other);
    }

    #[test]
    fn a_truncated_body_reads_as_no_statement() {
        let m = Message {
            tag: Some(b'P'),
            raw: typed(b'P', b"s1"),
        };
        assert_eq!(statement(&m), Statement::Other);
    }
}
