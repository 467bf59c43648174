//! The crash states a recording allows (POSIX, as ALICE and CrashMonkey read it): at every cut
//! of the recording, what was made durable (a file's data by its sync, a directory entry by its
//! directory's sync) survives; of what was not, any part may: each file's unsynced operations
//! kept in part (every prefix), one of them dropped while later ones stay (reordered), or a
//! write torn at a byte; each unsynced directory entry kept or lost.

use interlock::testing::record::Op;
use std::collections::{BTreeMap, BTreeSet};

/// How finely writes are torn: at every byte, or at every `n`-th byte (and the bytes around
/// each newline, where a line's end is decided).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TearStride(pub usize);

/// One state a crash at `cut` (after the recording's first `cut` operations) can leave.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CrashState {
    /// How many operations of the recording happened before the crash.
    pub cut: usize,
    /// Which of the unsynced operations survive, in words (for the report).
    pub variant: String,
    /// Every file and its bytes, by path relative to the recording's root.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Every directory, by path relative to the root.
    pub dirs: BTreeSet<String>,
}

#[derive(Debug, Clone)]
enum DataOp {
    Write { at: u64, bytes: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    ops: Vec<DataOp>,
    /// How many of `ops` are durable.
    synced: usize,
}

/// The file system as the recording has left it so far.
#[derive(Debug, Clone, Default)]
struct Fs {
    inodes: Vec<Inode>,
    /// The names as a process sees them now.
    names: BTreeMap<String, usize>,
    /// The names a crash keeps for certain (entries whose directory was synced since).
    durable_names: BTreeMap<String, usize>,
    dirs: BTreeSet<String>,
    durable_dirs: BTreeSet<String>,
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

impl Fs {
    fn apply(&mut self, op: &Op) {
        match op {
            Op::Create { path } => {
                self.inodes.push(Inode::default());
                self.names.insert(path.clone(), self.inodes.len() - 1);
            }
            Op::Write { path, at, bytes } => {
                if let Some(&i) = self.names.get(path) {
                    self.inodes[i].ops.push(DataOp::Write {
                        at: *at,
                        bytes: bytes.clone(),
                    });
                }
            }
            Op::SetLen { path, len } => {
                if let Some(&i) = self.names.get(path) {
                    self.inodes[i].ops.push(DataOp::SetLen(*len));
                }
            }
            Op::Sync { path } => {
                if let Some(&i) = self.names.get(path) {
                    self.inodes[i].synced = self.inodes[i].ops.len();
                }
            }
            Op::SyncDir { dir } => {
                let under = |p: &String| parent(p) == dir;
                self.durable_names.retain(|p, _| !under(p));
                for (p, i) in &self.names {
                    if under(p) {
                        self.durable_names.insert(p.clone(), *i);
                    }
                }
                self.durable_dirs.retain(|p| !under(p));
                for p in &self.dirs {
                    if under(p) {
                        self.durable_dirs.insert(p.clone());
                    }
                }
            }
            Op::Rename { from, to } => {
                if let Some(i) = self.names.remove(from) {
                    self.names.insert(to.clone(), i);
                }
            }
            Op::Remove { path } => {
                self.names.remove(path);
            }
            Op::Mkdir { path } => {
                let mut at = String::new();
                for part in path.split('/') {
                    if !at.is_empty() {
                        at.push('/');
                    }
                    at.push_str(part);
                    self.dirs.insert(at.clone());
                }
            }
            Op::Note { .. } | Op::Open { .. } | Op::Lock { .. } => {}
        }
    }
}

/// The bytes after applying `ops`, the last one cut to `tear` bytes when given.
fn content(ops: &[DataOp], tear: Option<usize>) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        match op {
            DataOp::Write { at, bytes } => {
                let bytes = match tear {
                    Some(n) if k + 1 == ops.len() => &bytes[..n.min(bytes.len())],
                    _ => &bytes[..],
                };
                let at = usize::try_from(*at).unwrap_or(usize::MAX);
                if out.len() < at + bytes.len() {
                    out.resize(at + bytes.len(), 0);
                }
                out[at..at + bytes.len()].copy_from_slice(bytes);
            }
            DataOp::SetLen(n) => out.resize(usize::try_from(*n).unwrap_or(usize::MAX), 0),
        }
    }
    out
}

/// Which operations of one inode a state keeps.
#[derive(Debug, Clone)]
enum Keep {
    All,
    Synced,
    /// The synced ones and this many more.
    Prefix(usize),
    /// All but the unsynced one at this position (from the first unsynced).
    AllBut(usize),
    /// The synced ones, this many more, then the next write cut to this many bytes.
    Torn(usize, usize),
}

fn kept(inode: &Inode, keep: &Keep) -> Vec<u8> {
    let s = inode.synced;
    match *keep {
        Keep::All => content(&inode.ops, None),
        Keep::Synced => content(&inode.ops[..s], None),
        Keep::Prefix(j) => content(&inode.ops[..s + j], None),
        Keep::AllBut(t) => {
            let ops: Vec<DataOp> = inode
                .ops
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != s + t)
                .map(|(_, o)| o.clone())
                .collect();
            content(&ops, None)
        }
        Keep::Torn(j, n) => content(&inode.ops[..s + j + 1], Some(n)),
    }
}

/// The bytes at which a write of `bytes` is torn: every `stride`-th one, and the bytes before,
/// at and after each newline.
fn tear_points(bytes: &[u8], stride: TearStride) -> BTreeSet<usize> {
    let mut at: BTreeSet<usize> = (1..bytes.len()).step_by(stride.0.max(1)).collect();
    for (k, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            for n in [k, k + 1, k + 2] {
                if n > 0 && n < bytes.len() {
                    at.insert(n);
                }
            }
        }
    }
    at
}

fn state(
    fs: &Fs,
    cut: usize,
    variant: String,
    names: &BTreeMap<String, usize>,
    dirs: &BTreeSet<String>,
    keep: &dyn Fn(usize) -> Keep,
) -> CrashState {
    let files = names
        .iter()
        .filter(|(p, _)| parent(p).is_empty() || dirs.contains(parent(p)))
        .map(|(p, &i)| (p.clone(), kept(&fs.inodes[i], &keep(i))))
        .collect();
    CrashState {
        cut,
        variant,
        files,
        dirs: dirs.clone(),
    }
}

/// Every crash state of the recording `ops` (duplicates included: the caller dedupes), handed
/// to `visit` one at a time.
pub fn crash_states(ops: &[Op], stride: TearStride, visit: &mut dyn FnMut(CrashState)) {
    let mut fs = Fs::default();
    for cut in 0..=ops.len() {
        if cut > 0 {
            fs.apply(&ops[cut - 1]);
        }
        // Nothing on disk changes at a workload's event (a send, an answer), an open of an
        // existing file or a lock: a crash just before it leaves what a crash just after it
        // leaves (with less of the world to match). So the states are visited after the last of
        // consecutive such operations only.
        if cut < ops.len()
            && matches!(
                ops[cut],
                Op::Note { .. } | Op::Open { .. } | Op::Lock { .. }
            )
        {
            continue;
        }
        states_at(&fs, cut, stride, visit);
    }
}

/// The states of one cut, handed to a visitor.
struct At<'a> {
    fs: &'a Fs,
    cut: usize,
    visit: &'a mut dyn FnMut(CrashState),
}

impl At<'_> {
    /// The state with these names and directories, each inode's operations kept as `keep` says.
    fn emit(
        &mut self,
        variant: String,
        names: &BTreeMap<String, usize>,
        dirs: &BTreeSet<String>,
        keep: &dyn Fn(usize) -> Keep,
    ) {
        (self.visit)(state(self.fs, self.cut, variant, names, dirs, keep));
    }

    /// Every name as a process sees it, inode `i`'s operations kept as `keep_i`, every other
    /// inode's all kept.
    fn emit_file(&mut self, variant: String, i: usize, keep_i: Keep) {
        let fs = self.fs;
        self.emit(variant, &fs.names, &fs.dirs, &|k| {
            if k == i {
                keep_i.clone()
            } else {
                Keep::All
            }
        });
    }
}

fn states_at(fs: &Fs, cut: usize, stride: TearStride, visit: &mut dyn FnMut(CrashState)) {
    let mut at = At { fs, cut, visit };
    at.emit("every operation kept".into(), &fs.names, &fs.dirs, &|_| {
        Keep::All
    });
    at.emit(
        "only what was synced".into(),
        &fs.durable_names,
        &fs.durable_dirs,
        &|_| Keep::Synced,
    );
    directory_states(&mut at);
    for (p, &i) in &fs.names {
        file_states(&mut at, p, i, stride);
    }
}

/// Each directory entry not yet durable (a creation, rename or removal), lost alone.
fn directory_states(at: &mut At<'_>) {
    let fs = at.fs;
    for (p, i) in &fs.names {
        if fs.durable_names.get(p) != Some(i) {
            let mut names = fs.names.clone();
            match fs.durable_names.get(p) {
                Some(&d) => names.insert(p.clone(), d),
                None => names.remove(p),
            };
            at.emit(format!("the entry {p} lost"), &names, &fs.dirs, &|_| {
                Keep::All
            });
        }
    }
    for (p, d) in &fs.durable_names {
        if !fs.names.contains_key(p) {
            let mut names = fs.names.clone();
            names.insert(p.clone(), *d);
            at.emit(
                format!("the removal of {p} lost"),
                &names,
                &fs.dirs,
                &|_| Keep::All,
            );
        }
    }
}

/// The unsynced operations of the file `p` (inode `i`) kept in part, one lost with later ones
/// kept, or a write torn.
fn file_states(at: &mut At<'_>, p: &str, i: usize, stride: TearStride) {
    let inode = &at.fs.inodes[i];
    let unsynced = inode.ops.len() - inode.synced;
    for j in 0..unsynced {
        at.emit_file(
            format!("{p}: {j} of {unsynced} unsynced operations kept"),
            i,
            Keep::Prefix(j),
        );
        if j + 1 < unsynced {
            let what = format!(
                "{p}: unsynced operation {} of {unsynced} lost, later ones kept",
                j + 1
            );
            at.emit_file(what, i, Keep::AllBut(j));
        }
        if let DataOp::Write { bytes, .. } = &inode.ops[inode.synced + j] {
            for n in tear_points(bytes, stride) {
                let what = format!(
                    "{p}: unsynced write {} of {unsynced} torn after {n} of {} bytes",
                    j + 1,
                    bytes.len()
                );
                at.emit_file(what, i, Keep::Torn(j, n));
            }
        }
    }
}

/// The state a crash right after the recording's first `cut` operations leaves when nothing
/// unsynced survives (the harshest one the contract allows): what the schedule search checks
/// at every answer.
pub fn synced_state(ops: &[Op], cut: usize) -> CrashState {
    let mut fs = Fs::default();
    for op in &ops[..cut.min(ops.len())] {
        fs.apply(op);
    }
    state(
        &fs,
        cut,
        "only what was synced".into(),
        &fs.durable_names,
        &fs.durable_dirs,
        &|_| Keep::Synced,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(path: &str, at: u64, bytes: &[u8]) -> Op {
        Op::Write {
            path: path.into(),
            at,
            bytes: bytes.to_vec(),
        }
    }

    fn all_states(ops: &[Op], stride: usize) -> Vec<CrashState> {
        let mut out = Vec::new();
        crash_states(ops, TearStride(stride), &mut |s| out.push(s));
        out
    }

    fn contents_at(states: &[CrashState], cut: usize, path: &str) -> BTreeSet<Vec<u8>> {
        states
            .iter()
            .filter(|s| s.cut == cut)
            .map(|s| {
                s.files
                    .get(path)
                    .cloned()
                    .unwrap_or_else(|| b"<absent>".to_vec())
            })
            .collect()
    }

    #[test]
    fn a_synced_write_survives_every_crash_and_unsynced_ones_survive_in_part() {
        let ops = vec![
            Op::Create { path: "j".into() },
            Op::SyncDir { dir: String::new() },
            write("j", 0, b"a\n"),
            Op::Sync { path: "j".into() },
            write("j", 2, b"b\n"),
            write("j", 4, b"c\n"),
        ];
        let states = all_states(&ops, 1);
        let end = contents_at(&states, ops.len(), "j");
        // Kept whole, in part, the first lost with the second kept (a hole), torn.
        for want in [
            &b"a\nb\nc\n"[..],
            b"a\n",
            b"a\nb\n",
            b"a\n\0\0c\n",
            b"a\nb",
            b"a\nb\nc",
        ] {
            assert!(
                end.contains(want),
                "missing {:?} in {end:?}",
                String::from_utf8_lossy(want)
            );
        }
        // Nothing loses the synced line.
        assert!(end.iter().all(|c| c.starts_with(b"a\n")), "{end:?}");
        // Before the sync, the first write itself may be lost or torn.
        let before_sync = contents_at(&states, 3, "j");
        assert!(before_sync.contains(&b""[..]) && before_sync.contains(&b"a"[..]));
    }

    #[test]
    fn a_new_file_is_lost_until_its_directory_is_synced_and_a_rename_until_then_too() {
        let ops = vec![
            Op::Create {
                path: "m.new".into(),
            },
            write("m.new", 0, b"x\n"),
            Op::Sync {
                path: "m.new".into(),
            },
            Op::Rename {
                from: "m.new".into(),
                to: "m".into(),
            },
        ];
        let states = all_states(&ops, 1);
        let end: Vec<&CrashState> = states.iter().filter(|s| s.cut == ops.len()).collect();
        assert!(end
            .iter()
            .any(|s| s.files.get("m") == Some(&b"x\n".to_vec())));
        assert!(
            end.iter().any(|s| s.files.is_empty()),
            "the unsynced names may all be lost"
        );
        let synced = synced_state(&ops, ops.len());
        assert!(synced.files.is_empty(), "{:?}", synced.files);
        let mut more = ops.clone();
        more.push(Op::SyncDir { dir: String::new() });
        let synced = synced_state(&more, more.len());
        assert_eq!(synced.files.get("m"), Some(&b"x\n".to_vec()));
    }

    #[test]
    fn tears_fall_on_the_stride_and_around_every_newline() {
        let points = tear_points(b"0123456789\nabcdefghij", TearStride(8));
        for want in [1, 9, 10, 11, 12, 17] {
            assert!(points.contains(&want), "{want} not in {points:?}");
        }
        assert!(!points.contains(&0) && !points.contains(&21));
    }
}
