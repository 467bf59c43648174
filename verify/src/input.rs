//! Reading an input file from disk: its bytes as they are, or, when it starts with the gzip
//! magic bytes (`1f 8b`) whatever its name, its decompressed bytes. The large results files are
//! stored as `<name>.json.gz`; the checks see the same JSON text either way.
//!
//! Decompression is bounded so that a small file cannot make the checker hold much more than its
//! own size: the decompressed text may be at most [`MAX_RATIO`] times the compressed file (at
//! least [`FLOOR_BYTES`], which the resource promises cover whatever the ratio), and never more
//! than [`MAX_DECOMPRESSED_BYTES`]. The size is counted in a first pass that keeps nothing, so a
//! file past its limit (a gzip bomb) is refused before any of its text is held; only a file
//! within it is decompressed, into a buffer of exactly its size.
//!
//! This is not part of the trusted core (`verify-core`): it only turns a file into the bytes the
//! strict reader ([`crate::load`]) is given.

use std::io::Read;
use std::path::Path;

mod parallel;

pub use parallel::{read as read_bytes, PARALLEL_FROM_BYTES};

/// The first two bytes of every gzip file (RFC 1952).
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Most times its own size a compressed file may expand to. The runner's campaign files compress
/// 9 to 12 times (billing_credit's 87 MB to 9.5 MB, shared_cap's 7.5 MB to 0.7 MB); 16 leaves
/// room for more repetitive runs and keeps a compressed file under 1 MB under 16 MB of text,
/// which the checks read in under 64 MB (a forger's review: at 32, 30 MB of text shaped to
/// build a large tree took 860 MB).
pub const MAX_RATIO: u64 = 16;

/// Decompressed size any compressed file may reach whatever its ratio: text under 1 MB is what
/// the resource promises (64 MB of memory, 1 MB printed) cover for a plain file already.
pub const FLOOR_BYTES: u64 = 1024 * 1024;

/// Largest decompressed size of any file: 1 GiB, over ten times the largest campaign committed
/// (87 MB). Checking holds about 1.25 times a file's text in memory (verify's README), so past
/// this a compressed file alone could ask for well over a gigabyte.
pub const MAX_DECOMPRESSED_BYTES: u64 = 1024 * 1024 * 1024;

/// Why an input file could not be read (the command's exit code 2: could not check).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be read at all (shown as the system's error alone: callers say what
    /// they could not read).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file starts as gzip but does not decompress: truncated, corrupt, or not gzip after all.
    #[error(
        "starts with the gzip magic bytes (1f 8b) but does not decompress: {why}; the file is \
         truncated or corrupt (`gzip -t FILE` says the same): copy or download it again"
    )]
    Gzip {
        /// What the decompressor said.
        why: String,
    },
    /// The gzip wrapper holds more than the compressed text: a file name, a comment, extra
    /// fields, a header checksum, or a second member. None of it is signed, and a download of
    /// the file would carry it, so it is refused.
    #[error(
        "is gzip with {what}, which no signature covers; the runner writes one member with none          of these: recompress it (`gunzip -c FILE | gzip -n > NEW`) and check that"
    )]
    Wrapper {
        /// What the wrapper holds.
        what: String,
    },
    /// The file decompresses past its limit: a gzip bomb, or a file much larger than any run
    /// writes.
    #[error(
        "its {compressed} bytes of gzip decompress past the limit of {limit} bytes ({why}); \
         refused before any of it was checked. If the file is genuine, decompress it yourself \
         (`gunzip -k FILE`) and check the plain file"
    )]
    TooLarge {
        /// The compressed file's size.
        compressed: u64,
        /// The limit it went past.
        limit: u64,
        /// Which limit, in words.
        why: String,
    },
}

/// Whether `bytes` start with the gzip magic bytes.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// The most a compressed file of `compressed` bytes may decompress to, and the rule that set it.
pub fn limit_for(compressed: u64) -> (u64, String) {
    let by_ratio = compressed.saturating_mul(MAX_RATIO).max(FLOOR_BYTES);
    if by_ratio < MAX_DECOMPRESSED_BYTES {
        (
            by_ratio,
            format!(
                "{MAX_RATIO} times the compressed size, at least {FLOOR_BYTES} bytes: the runner's \
                 files compress about 10 times"
            ),
        )
    } else {
        (
            MAX_DECOMPRESSED_BYTES,
            "the largest decompressed size any file may have".to_owned(),
        )
    }
}

/// The header flags (RFC 1952) a file the runner writes never sets: FTEXT, FHCRC, FEXTRA, FNAME,
/// FCOMMENT (every defined one).
const HEADER_FLAGS: [(u8, &str); 5] = [
    (0x01, "a text flag"),
    (0x02, "a header checksum"),
    (0x04, "extra fields"),
    (0x08, "a file name"),
    (0x10, "a comment"),
];

/// The bytes of an input file as the checks read them: `bytes` as they are, or, when they start
/// with the gzip magic bytes, decompressed within [`limit_for`] their size. The gzip must be one
/// member with no name, comment, extra field or header checksum ([`InputError::Wrapper`]): what
/// is signed is the text, and a wrapper can carry what no signature covers.
pub fn decompressed(bytes: Vec<u8>) -> Result<Vec<u8>, InputError> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let flags = bytes.get(3).copied().unwrap_or(0);
    let set: Vec<&str> = HEADER_FLAGS
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, what)| *what)
        .collect();
    if !set.is_empty() || flags & 0xE0 != 0 {
        let what = if set.is_empty() {
            "reserved header flags".to_owned()
        } else {
            set.join(", ")
        };
        return Err(InputError::Wrapper { what });
    }
    let compressed = bytes.len() as u64;
    let (limit, why) = limit_for(compressed);
    let gzip_error = |e: std::io::Error| InputError::Gzip { why: e.to_string() };
    // First pass: count, keeping nothing. One byte past the limit is enough to refuse.
    let mut decoder = flate2::bufread::GzDecoder::new(bytes.as_slice());
    let size = std::io::copy(&mut (&mut decoder).take(limit + 1), &mut std::io::sink())
        .map_err(gzip_error)?;
    if size > limit {
        return Err(InputError::TooLarge {
            compressed,
            limit,
            why,
        });
    }
    if !decoder.into_inner().is_empty() {
        return Err(InputError::Wrapper {
            what: "bytes after its one member (a second member, or trailing data)".into(),
        });
    }
    // Second pass: the text, into a buffer of exactly its size.
    let capacity = usize::try_from(size).map_err(|_| InputError::TooLarge {
        compressed,
        limit: size,
        why: "larger than this machine can address".to_owned(),
    })?;
    let mut text = Vec::with_capacity(capacity);
    flate2::bufread::GzDecoder::new(bytes.as_slice())
        .take(size)
        .read_to_end(&mut text)
        .map_err(gzip_error)?;
    Ok(text)
}

/// Read the file at `path` as the checks read it ([`decompressed`]).
pub fn read_file(path: &Path) -> Result<Vec<u8>, InputError> {
    decompressed(read_bytes(path)?)
}

/// `text` compressed as the runner writes its large files: gzip at the default level, with no
/// file name, no modification time and no comment in the header, so the same text always gives
/// the same bytes.
pub fn compress(text: &[u8]) -> Result<Vec<u8>, std::io::Error> {
    use std::io::Write;
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    encoder.write_all(text)?;
    encoder.finish()
}

/// The committed campaign `results/nemesis/<stem>.json.gz`, or `.json` where it is not
/// compressed yet, as the checks read it (for this crate's tests; empty when neither reads).
#[cfg(test)]
pub(crate) fn committed_campaign(stem: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/nemesis");
    let packed = dir.join(format!("{stem}.json.gz"));
    let path = if packed.is_file() {
        packed
    } else {
        dir.join(format!("{stem}.json"))
    };
    read_file(&path).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gz(text: &[u8]) -> Vec<u8> {
        compress(text).unwrap_or_default()
    }

    #[test]
    fn plain_bytes_pass_through_and_gzip_is_decompressed() {
        let text = br#"{"format":"interlock-receipt/1"}"#.to_vec();
        assert_eq!(decompressed(text.clone()).ok(), Some(text.clone()));
        assert_eq!(decompressed(gz(&text)).ok(), Some(text.clone()));
        // Two members one after another: gunzip reads one text, but the second is no part of
        // what was written and signed as one file (a forger's review), so it is refused.
        let mut two = gz(b"{\"a\":");
        two.extend(gz(b"1}"));
        let e = decompressed(two).err();
        assert!(matches!(e, Some(InputError::Wrapper { .. })), "{e:?}");
    }

    #[test]
    fn the_same_text_gives_the_same_bytes() {
        let text = b"{\"x\": [1, 2, 3]}".repeat(100);
        let a = gz(&text);
        assert_eq!(a, gz(&text));
        // Header: magic, deflate, no flags (no name, no comment), mtime 0.
        assert_eq!(a.get(..8), Some(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0][..]));
    }

    #[test]
    fn truncated_corrupt_and_trailing_bytes_are_refused() {
        let full = gz(&b"{\"x\": \"abcdefghij\"}".repeat(1000));
        for cut in [2, 10, full.len() / 2, full.len() - 4, full.len() - 1] {
            let e = decompressed(full[..cut].to_vec()).err();
            assert!(matches!(e, Some(InputError::Gzip { .. })), "{cut}: {e:?}");
        }
        let mut corrupt = full.clone();
        if let Some(b) = corrupt.get_mut(full.len() / 2) {
            *b ^= 0x55;
        }
        let e = decompressed(corrupt).err();
        assert!(matches!(e, Some(InputError::Gzip { .. })), "{e:?}");
        let mut trailing = full.clone();
        trailing.extend_from_slice(b"not gzip");
        let e = decompressed(trailing).err();
        assert!(matches!(e, Some(InputError::Wrapper { .. })), "{e:?}");
        // A name, a comment or extra fields in the header: none is signed.
        for (flag, what) in [
            (0x08u8, "a file name"),
            (0x10, "a comment"),
            (0x04, "extra fields"),
        ] {
            let mut flagged = full.clone();
            if let Some(b) = flagged.get_mut(3) {
                *b = flag;
            }
            match decompressed(flagged).err() {
                Some(InputError::Wrapper { what: w }) => assert!(w.contains(what), "{w}"),
                e => panic!("{flag:#x}: {e:?}"),
            }
        }
    }

    #[test]
    fn limits() {
        assert_eq!(limit_for(10).0, FLOOR_BYTES);
        assert_eq!(limit_for(1_000_000).0, 16_000_000);
        assert_eq!(limit_for(u64::MAX).0, MAX_DECOMPRESSED_BYTES);
        // A bomb: a few KB of zeros that expand to 8 MB, past 16 times its size.
        let bomb = gz(&vec![0u8; 8 * 1024 * 1024]);
        assert!(bomb.len() < 16 * 1024, "{}", bomb.len());
        let e = decompressed(bomb).err();
        assert!(
            matches!(e, Some(InputError::TooLarge { limit, .. }) if limit == FLOOR_BYTES),
            "{e:?}"
        );
        // Text within the floor passes, whatever its ratio.
        let fine = gz(&vec![b' '; 1024 * 1024]);
        assert_eq!(decompressed(fine).map(|t| t.len()).ok(), Some(1024 * 1024));
    }
}
