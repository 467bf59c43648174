//! A large file read on several threads at once, each into its own part of one buffer.
//!
//! Reading a large file into fresh memory is mostly the kernel's work of giving the buffer its
//! pages (each one zeroed on first touch) and copying the file's cached bytes into them; threads
//! that each read one part of the file into their part of the buffer share that work. The bytes
//! are those [`std::fs::read`] gives: the parts are read at their offsets, whatever may follow
//! the size the file had when it was opened is read after them, and a file that turns out
//! shorter than that size is read again by [`std::fs::read`].

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Files smaller than this are read on one thread: the threads would cost more than they save.
pub const PARALLEL_FROM_BYTES: u64 = 16 * 1024 * 1024;

/// Most threads one file is read on.
const MAX_READERS: usize = 4;

/// The whole file at `path`, as [`std::fs::read`] gives it; a regular file of at least
/// [`PARALLEL_FROM_BYTES`] is read in parts on several threads.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let readers = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_READERS));
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let size = usize::try_from(meta.len()).ok();
    match size {
        Some(size) if readers > 1 && meta.is_file() && meta.len() >= PARALLEL_FROM_BYTES => {
            match in_parts(&file, size, readers) {
                Some(bytes) => bytes,
                // Shorter than its size said (changed while being read): read it as one.
                None => std::fs::read(path),
            }
        }
        _ => std::fs::read(path),
    }
}

/// The first `size` bytes of `file` read in `parts` parts at once, then whatever follows them;
/// `None` when the file ends before `size`.
#[cfg(unix)]
fn in_parts(file: &std::fs::File, size: usize, parts: usize) -> Option<io::Result<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0u8; size];
    let part = size.div_ceil(parts).max(1);
    let read: Vec<io::Result<()>> = std::thread::scope(|s| {
        let readers: Vec<_> = bytes
            .chunks_mut(part)
            .enumerate()
            .map(|(i, chunk)| s.spawn(move || file.read_exact_at(chunk, (i * part) as u64)))
            .collect();
        readers
            .into_iter()
            .map(|r| {
                r.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a reader failed")))
            })
            .collect()
    });
    for r in read {
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return None,
            Err(e) => return Some(Err(e)),
        }
    }
    let mut rest = file;
    let more = rest
        .seek(SeekFrom::Start(size as u64))
        .and_then(|_| rest.read_to_end(&mut bytes));
    Some(more.map(|_| bytes))
}

/// Without positioned reads: read as one.
#[cfg(not(unix))]
fn in_parts(_: &std::fs::File, _: usize, _: usize) -> Option<io::Result<Vec<u8>>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts read at once give the file's bytes, whatever the file's size against the parts.
    #[cfg(unix)]
    #[test]
    fn parts_give_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for size in [0usize, 1, 3, 4, 5, 4096, 100_003] {
            let path = dir.path().join(format!("f{size}"));
            let bytes: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
            let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{e}"));
            for parts in 1..=4 {
                let read = in_parts(&file, size, parts).map(|r| r.ok());
                assert_eq!(
                    read,
                    Some(Some(bytes.clone())),
                    "{size} bytes, {parts} parts"
                );
            }
            // A size smaller than the file's: the rest is read after the parts.
            let read = in_parts(&file, size / 2, 3).map(|r| r.ok());
            assert_eq!(read, Some(Some(bytes.clone())), "{size} bytes, half size");
            // A size larger than the file's: not read here.
            assert!(in_parts(&file, size + 1, 2).is_none(), "{size} bytes");
            assert_eq!(read_whole(&path), bytes);
        }
    }

    fn read_whole(path: &Path) -> Vec<u8> {
        read(path).unwrap_or_else(|e| panic!("{e}"))
    }
}
