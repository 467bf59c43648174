//! A library loaded with `LD_PRELOAD` into a process (a nemesis's worker) that fails exactly one
//! drawn write or sync call on the files under one directory, as a full disk or a failing device
//! would, and records every call it counted in a log file the process cannot lose by dying.
//!
//! Configured by `INTERLOCK_WRITE_FAULT` = `dir=<absolute dir>;fail=write|fsync;nth=<N>;log=<absolute file>`
//! (see `config`). Only calls on descriptors whose path (`readlink("/proc/self/fd/<fd>")`) is
//! `dir` or lies under it count, from 1, per process:
//! - `fail=write`: the N-th such `write`/`pwrite`/`writev`/`pwritev` (and their `64` names) and
//!   every later one fail with `ENOSPC` without writing (a full disk stays full);
//! - `fail=fsync`: the N-th such `fsync`/`fdatasync` fails with `EIO`; later ones run normally.
//!
//! Each counted call is a JSON line appended to the log, on a descriptor opened once with
//! `O_APPEND|O_CLOEXEC` and written with the C library's own `write`, before the call returns:
//! `{"event":"call","pid":..,"call":"write","n":3,"fd":..,"path":"..","failed":true,"errno":28,"injected":true,"fired":true}`.
//! A process that loaded a well-formed configuration first writes
//! `{"event":"start","pid":..,"dir":"..","fail":"write","nth":3}`; a malformed value fails
//! nothing and writes `{"event":"malformed","pid":..,"why":"..","value":".."}` to the log if it
//! named one it can open, else a line on standard error. Without the variable the library
//! passes every call through and writes nothing.
//!
//! The interposed functions never unwind into their caller, never allocate after the first
//! call (the configuration is read once, at load), and keep `errno` as the real call left it.
//! A test tool: never loaded on a production path.

// This crate exists to interpose C functions: exported `#[no_mangle]` symbols, a constructor
// in `.init_array`, `dlsym`, raw descriptors and `errno` all need `unsafe`. Each block says why
// it is sound.
#![allow(unsafe_code)]
// The unit tests leave `interpose` (the exported functions and the constructor) out, so the
// test binary's own writes are not interposed; what only it uses is then unused.
#![cfg_attr(test, allow(dead_code))]

mod config;
#[cfg(not(test))]
mod interpose;
mod line;

use std::cell::Cell;
use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::OnceLock;

use libc::{size_t, ssize_t};

use config::Kind;
use line::Line;

/// The environment variable that configures the library.
const VAR: &CStr = c"INTERLOCK_WRITE_FAULT";

/// `readlink`'s buffer for a descriptor's path: `PATH_MAX` and one byte more.
const PATH_BUF: usize = libc::PATH_MAX as usize + 1;

/// The lowest descriptor number the log is moved to, out of the way of the low numbers a process
/// reuses as it opens and closes its own files.
const LOG_FD_FLOOR: c_int = 700;

/// A C function found with `dlsym(RTLD_NEXT, name)` on first use.
struct Real {
    /// Its address once found (null before).
    addr: AtomicPtr<c_void>,
    /// Its symbol.
    name: &'static CStr,
}

impl Real {
    /// The function named `name`, not yet looked up.
    const fn new(name: &'static CStr) -> Self {
        Real {
            addr: AtomicPtr::new(std::ptr::null_mut()),
            name,
        }
    }

    /// Its address, or `None` when the next object defines no such symbol.
    fn addr(&self) -> Option<*mut c_void> {
        let cached = self.addr.load(Ordering::Acquire);
        if !cached.is_null() {
            return Some(cached);
        }
        // SAFETY: `RTLD_NEXT` with a NUL-terminated symbol name is dlsym's documented use; it
        // only reads the name.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        if found.is_null() {
            return None;
        }
        self.addr.store(found, Ordering::Release);
        Some(found)
    }
}

/// The C library's functions behind the interposed ones.
static REAL_WRITE: Real = Real::new(c"write");
/// See [`REAL_WRITE`].
static REAL_PWRITE: Real = Real::new(c"pwrite");
/// See [`REAL_WRITE`].
static REAL_PWRITE64: Real = Real::new(c"pwrite64");
/// See [`REAL_WRITE`].
static REAL_WRITEV: Real = Real::new(c"writev");
/// See [`REAL_WRITE`].
static REAL_PWRITEV: Real = Real::new(c"pwritev");
/// See [`REAL_WRITE`].
static REAL_PWRITEV64: Real = Real::new(c"pwritev64");
/// See [`REAL_WRITE`].
static REAL_FSYNC: Real = Real::new(c"fsync");
/// See [`REAL_WRITE`].
static REAL_FDATASYNC: Real = Real::new(c"fdatasync");

/// An interposed function, as the log names it.
#[derive(Clone, Copy)]
enum Call {
    /// `write`.
    Write,
    /// `pwrite`.
    Pwrite,
    /// `pwrite64`.
    Pwrite64,
    /// `writev`.
    Writev,
    /// `pwritev`.
    Pwritev,
    /// `pwritev64`.
    Pwritev64,
    /// `fsync`.
    Fsync,
    /// `fdatasync`.
    Fdatasync,
}

impl Call {
    /// The function's name.
    fn name(self) -> &'static str {
        match self {
            Call::Write => "write",
            Call::Pwrite => "pwrite",
            Call::Pwrite64 => "pwrite64",
            Call::Writev => "writev",
            Call::Pwritev => "pwritev",
            Call::Pwritev64 => "pwritev64",
            Call::Fsync => "fsync",
            Call::Fdatasync => "fdatasync",
        }
    }

    /// Which configuration counts it.
    fn kind(self) -> Kind {
        match self {
            Call::Fsync | Call::Fdatasync => Kind::Sync,
            _ => Kind::Write,
        }
    }
}

/// What the library does in this process, decided once.
enum State {
    /// Nothing: no variable, a malformed one, or a log it cannot open.
    Off,
    /// Counting and failing.
    On(Active),
}

/// A well-formed configuration with its log open.
struct Active {
    /// The directory, with symbolic links resolved when it existed at load.
    dir: Vec<u8>,
    /// Which calls count.
    kind: Kind,
    /// The count of the call that fails.
    nth: u64,
    /// The log's descriptor (`O_APPEND|O_CLOEXEC`).
    log_fd: c_int,
}

impl Active {
    /// Whether `path` is the directory or lies under it.
    fn covers(&self, path: &[u8]) -> bool {
        if self.dir == b"/" {
            return path.starts_with(b"/");
        }
        match path.strip_prefix(self.dir.as_slice()) {
            Some(rest) => rest.is_empty() || rest.starts_with(b"/"),
            None => false,
        }
    }
}

/// The process's state.
static STATE: OnceLock<State> = OnceLock::new();

/// The calls of the configured kind counted so far in this process.
static COUNT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Whether this thread is inside the library: a call the library itself makes (or one made
    /// from a signal handler that interrupted it) passes straight through.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread inside the library while it lives.
struct Inside;

impl Inside {
    /// `None` when the thread is already inside (or its thread-locals are gone).
    fn enter() -> Option<Inside> {
        INSIDE
            .try_with(|inside| {
                if inside.get() {
                    None
                } else {
                    inside.set(true);
                    Some(Inside)
                }
            })
            .ok()
            .flatten()
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        let _ = INSIDE.try_with(|inside| inside.set(false));
    }
}

/// This thread's `errno`.
fn errno() -> c_int {
    // SAFETY: glibc's `__errno_location` returns this thread's errno slot, valid for the
    // thread's life.
    unsafe { *libc::__errno_location() }
}

/// Sets this thread's `errno`.
fn set_errno(value: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// This process's id.
fn pid() -> u64 {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    u64::try_from(pid).unwrap_or(0)
}

/// Writes all of `bytes` to `fd` with the C library's `write` (never the interposed one),
/// retrying on `EINTR`. Best effort: a failure is dropped.
fn write_real(fd: c_int, mut bytes: &[u8]) {
    let Some(addr) = REAL_WRITE.addr() else {
        return;
    };
    // SAFETY: `addr` is what dlsym found for "write", the C library's `write`, which has this
    // signature.
    let real: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t =
        unsafe { std::mem::transmute::<*mut c_void, _>(addr) };
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe the live slice `bytes`.
        let n = unsafe { real(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return;
        }
        match usize::try_from(n).ok().and_then(|n| bytes.get(n..)) {
            Some(rest) if n > 0 => bytes = rest,
            _ => return,
        }
    }
}

/// The process's state, read from the environment on first use.
fn state() -> &'static State {
    STATE.get_or_init(load)
}

/// Reads the variable, opens the log and writes its first line.
fn load() -> State {
    // SAFETY: getenv reads the environment; this runs once, at load (from the constructor)
    // before the program's threads exist, or on the first interposed call.
    let value = unsafe { libc::getenv(VAR.as_ptr()) };
    if value.is_null() {
        return State::Off;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string in the environment; it is
    // copied at once.
    let value = unsafe { CStr::from_ptr(value) }.to_bytes().to_vec();
    let spec = match config::parse(&value) {
        Ok(spec) => spec,
        Err(malformed) => {
            let log = malformed.log.as_deref().and_then(|l| open_log(l).ok());
            let mut line = Line::new();
            line.string("event", b"malformed");
            line.uint("pid", pid());
            line.string("why", malformed.why.as_bytes());
            line.string("value", &value);
            match (log, line.finish()) {
                (Some(fd), Some(bytes)) => write_real(fd, bytes),
                _ => say_on_stderr(&format!("malformed: {}", malformed.why)),
            }
            return State::Off;
        }
    };
    let log_fd = match open_log(&spec.log) {
        Ok(fd) => fd,
        Err(e) => {
            say_on_stderr(&format!(
                "cannot open its log {}: {}",
                String::from_utf8_lossy(&spec.log),
                std::io::Error::from_raw_os_error(e)
            ));
            return State::Off;
        }
    };
    let dir = canonical(&spec.dir);
    let mut line = Line::new();
    line.string("event", b"start");
    line.uint("pid", pid());
    line.string("dir", &dir);
    line.string("fail", spec.kind.name().as_bytes());
    line.uint("nth", spec.nth);
    if let Some(bytes) = line.finish() {
        write_real(log_fd, bytes);
    }
    State::On(Active {
        dir,
        kind: spec.kind,
        nth: spec.nth,
        log_fd,
    })
}

/// `dir` with its symbolic links resolved (the paths it is compared with are resolved), or as
/// given when it does not exist yet.
fn canonical(dir: &[u8]) -> Vec<u8> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    match std::fs::canonicalize(std::ffi::OsStr::from_bytes(dir)) {
        Ok(path) => path.into_os_string().into_vec(),
        Err(_) => dir.to_vec(),
    }
}

/// Opens the log for appending (creating it), on a descriptor at or above [`LOG_FD_FLOOR`]
/// when one is free. `Err` holds the errno.
fn open_log(path: &[u8]) -> Result<c_int, c_int> {
    let path = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: `path` is NUL-terminated; open only reads it.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `fd` is the descriptor just opened; F_DUPFD_CLOEXEC makes a copy (with
    // close-on-exec) at the lowest free number from the floor.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, LOG_FD_FLOOR) };
    if high < 0 {
        return Ok(fd);
    }
    // SAFETY: `fd` is ours and its copy `high` stays open.
    unsafe { libc::close(fd) };
    Ok(high)
}

/// One line on standard error, with the real `write`.
fn say_on_stderr(what: &str) {
    let text = format!("write-fault: INTERLOCK_WRITE_FAULT ignored, no call will fail: {what}\n");
    write_real(libc::STDERR_FILENO, text.as_bytes());
}

/// The path of `fd` (from `/proc/self/fd`) in `buf`: its length, or `None`.
fn fd_path(fd: c_int, buf: &mut [u8; PATH_BUF]) -> Option<usize> {
    let fd = u64::try_from(fd).ok()?;
    let mut link = [0u8; 40];
    let prefix = b"/proc/self/fd/";
    link.get_mut(..prefix.len())?.copy_from_slice(prefix);
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut v = fd;
    while at > 0 {
        at -= 1;
        *digits.get_mut(at)? = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = digits.get(at..)?;
    link.get_mut(prefix.len()..prefix.len() + digits.len())?
        .copy_from_slice(digits);
    // `link` stays NUL-terminated: it is longer than the prefix and 20 digits.
    // SAFETY: `link` is NUL-terminated and `buf` is writable for its length.
    let n = unsafe { libc::readlink(link.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// What to do with a call.
enum Decision {
    /// Pass it through uncounted.
    Pass,
    /// Counted as the `n`-th; pass it through, then log it.
    Count {
        /// The log.
        log_fd: c_int,
        /// Its count.
        n: u64,
        /// Its path's length in the path buffer.
        len: usize,
    },
    /// Fail it with this errno (already logged).
    Fail(c_int),
}

/// Counts the call if it qualifies and decides whether it fails.
fn decide(call: Call, fd: c_int, path: &mut [u8; PATH_BUF]) -> Decision {
    let State::On(active) = state() else {
        return Decision::Pass;
    };
    if active.kind != call.kind() {
        return Decision::Pass;
    }
    let Some(len) = fd_path(fd, path) else {
        return Decision::Pass;
    };
    let Some(p) = path.get(..len) else {
        return Decision::Pass;
    };
    if !active.covers(p) {
        return Decision::Pass;
    }
    let n = COUNT.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
    let fails = match active.kind {
        Kind::Write => n >= active.nth,
        Kind::Sync => n == active.nth,
    };
    if !fails {
        return Decision::Count {
            log_fd: active.log_fd,
            n,
            len,
        };
    }
    let err = match active.kind {
        Kind::Write => libc::ENOSPC,
        Kind::Sync => libc::EIO,
    };
    log_call(
        active.log_fd,
        call,
        n,
        fd,
        p,
        Some(err),
        true,
        n == active.nth,
    );
    Decision::Fail(err)
}

/// Appends a call's line to the log.
#[allow(clippy::too_many_arguments)] // one line's fields
fn log_call(
    log_fd: c_int,
    call: Call,
    n: u64,
    fd: c_int,
    path: &[u8],
    err: Option<c_int>,
    injected: bool,
    fired: bool,
) {
    let mut line = Line::new();
    line.string("event", b"call");
    line.uint("pid", pid());
    line.string("call", call.name().as_bytes());
    line.uint("n", n);
    line.int("fd", i64::from(fd));
    let whole = line.string("path", path);
    if !whole {
        line.boolean("path_cut", true);
    }
    line.boolean("failed", err.is_some());
    line.int("errno", i64::from(err.unwrap_or(0)));
    line.boolean("injected", injected);
    line.boolean("fired", fired);
    if let Some(bytes) = line.finish() {
        write_real(log_fd, bytes);
    }
}

/// A C function's result: failure is negative, injected failure is -1.
trait Ret: Copy {
    /// -1.
    const FAIL: Self;
    /// Whether it says the call failed.
    fn failed(self) -> bool;
}

impl Ret for ssize_t {
    const FAIL: Self = -1;
    fn failed(self) -> bool {
        self < 0
    }
}

impl Ret for c_int {
    const FAIL: Self = -1;
    fn failed(self) -> bool {
        self < 0
    }
}

/// Runs an interposed call: counts it, fails it or passes it to `real`, and logs it. Never
/// unwinds: a panic inside the library passes the call through (or, after `real` ran, only
/// loses its log line).
fn hook<R: Ret>(call: Call, fd: c_int, real: impl FnOnce() -> R) -> R {
    let Some(_inside) = Inside::enter() else {
        return real();
    };
    // Not configured for this kind of call: no path to read, nothing to count.
    let counts =
        catch_unwind(|| matches!(state(), State::On(active) if active.kind == call.kind()));
    if !counts.unwrap_or(false) {
        return real();
    }
    let saved = errno();
    let mut path = [0u8; PATH_BUF];
    let decision =
        catch_unwind(AssertUnwindSafe(|| decide(call, fd, &mut path))).unwrap_or(Decision::Pass);
    match decision {
        Decision::Pass => {
            set_errno(saved);
            real()
        }
        Decision::Fail(err) => {
            set_errno(err);
            R::FAIL
        }
        Decision::Count { log_fd, n, len } => {
            set_errno(saved);
            let result = real();
            let after = errno();
            let err = result.failed().then_some(after);
            let _ = catch_unwind(AssertUnwindSafe(|| {
                let p = path.get(..len).unwrap_or_default();
                log_call(log_fd, call, n, fd, p, err, false, false);
            }));
            set_errno(after);
            result
        }
    }
}

/// The result of a call whose real function cannot be found: -1 with `ENOSYS`.
fn missing<R: Ret>() -> R {
    set_errno(libc::ENOSYS);
    R::FAIL
}

#[cfg(test)]
mod tests {
    use super::*;

    fn active(dir: &[u8]) -> Active {
        Active {
            dir: dir.to_vec(),
            kind: Kind::Write,
            nth: 1,
            log_fd: -1,
        }
    }

    #[test]
    fn a_directory_covers_itself_and_what_lies_under_it_only() {
        let a = active(b"/data/case");
        assert!(a.covers(b"/data/case"));
        assert!(a.covers(b"/data/case/journal"));
        assert!(a.covers(b"/data/case/sub/x (deleted)"));
        assert!(!a.covers(b"/data/case2/journal"));
        assert!(!a.covers(b"/data"));
        assert!(!a.covers(b"pipe:[123]"));
        let root = active(b"/");
        assert!(root.covers(b"/anything"));
        assert!(!root.covers(b"socket:[1]"));
    }

    #[test]
    fn a_descriptor_path_is_read_from_proc() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        let mut buf = [0u8; PATH_BUF];
        use std::os::fd::AsRawFd;
        let len = fd_path(file.as_raw_fd(), &mut buf).unwrap();
        let want = std::fs::canonicalize(dir.path().join("f")).unwrap();
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(&buf[..len], want.as_os_str().as_bytes());
        assert_eq!(fd_path(-1, &mut buf), None);
    }
}
