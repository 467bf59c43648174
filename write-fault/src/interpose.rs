//! The exported functions that replace the C library's, and the constructor that reads the
//! configuration at load. Left out of the unit tests.

use std::ffi::{c_int, c_void};
use std::panic::catch_unwind;

use libc::{iovec, off_t, size_t, ssize_t};

use crate::{
    hook, missing, state, Call, Inside, REAL_FDATASYNC, REAL_FSYNC, REAL_PWRITE, REAL_PWRITE64,
    REAL_PWRITEV, REAL_PWRITEV64, REAL_WRITE, REAL_WRITEV,
};

/// Loads the configuration when the library is loaded, before the program's `main` and threads.
extern "C" fn on_load() {
    if let Some(_inside) = Inside::enter() {
        let _ = catch_unwind(|| {
            let _ = state();
        });
    }
}

/// The library's constructor.
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// Looks up a real function and casts it to its C signature, or returns [`missing`].
macro_rules! real {
    ($real:ident as $ty:ty) => {
        match $real.addr() {
            // SAFETY: the address is what dlsym found for this symbol in the C library, whose
            // function has exactly this signature (see glibc's <unistd.h>, <sys/uio.h>).
            Some(addr) => unsafe { std::mem::transmute::<*mut c_void, $ty>(addr) },
            None => return missing(),
        }
    };
}

/// Interposes `write(2)`.
///
/// # Safety
/// As for the C library's `write`: `buf` is readable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    let real = real!(REAL_WRITE as unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t);
    // SAFETY: the caller's arguments are passed on unchanged, under the caller's contract.
    hook(Call::Write, fd, || unsafe { real(fd, buf, count) })
}

/// Interposes `pwrite(2)`.
///
/// # Safety
/// As for the C library's `pwrite`: `buf` is readable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn pwrite(
    fd: c_int,
    buf: *const c_void,
    count: size_t,
    offset: off_t,
) -> ssize_t {
    let real =
        real!(REAL_PWRITE as unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t);
    // SAFETY: the caller's arguments are passed on unchanged, under the caller's contract.
    hook(Call::Pwrite, fd, || unsafe { real(fd, buf, count, offset) })
}

/// Interposes `pwrite64(2)` (what the Rust standard library calls for `write_at`).
///
/// # Safety
/// As for the C library's `pwrite64`: `buf` is readable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn pwrite64(
    fd: c_int,
    buf: *const c_void,
    count: size_t,
    offset: libc::off64_t,
) -> ssize_t {
    let real = real!(
        REAL_PWRITE64
            as unsafe extern "C" fn(c_int, *const c_void, size_t, libc::off64_t) -> ssize_t
    );
    // SAFETY: the caller's arguments are passed on unchanged, under the caller's contract.
    hook(Call::Pwrite64, fd, || unsafe {
        real(fd, buf, count, offset)
    })
}

/// Interposes `writev(2)`.
///
/// # Safety
/// As for the C library's `writev`: `iov` points to `iovcnt` valid buffers.
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, iovcnt: c_int) -> ssize_t {
    let real = real!(REAL_WRITEV as unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t);
    // SAFETY: the caller's arguments are passed on unchanged, under the caller's contract.
    hook(Call::Writev, fd, || unsafe { real(fd, iov, iovcnt) })
}

/// Interposes `pwritev(2)`.
///
/// # Safety
/// As for the C library's `pwritev`: `iov` points to `iovcnt` valid buffers.
#[no_mangle]
pub unsafe extern "C" fn pwritev(
    fd: c_int,
    iov: *const iovec,
    iovcnt: c_int,
    offset: off_t,
) -> ssize_t {
    let real =
        real!(REAL_PWRITEV as unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t);
    // SAFETY: the caller's arguments are passed on unchanged, under the caller's contract.
    hook(Call::Pwritev, fd, || unsafe {
        real(fd, iov, iovcnt, offset)
    })
}

/// Interposes `pwritev64(2)`.
///
/// # Safety
/// As for the C library's `pwritev64`: `iov` points to `iovcnt` valid buffers.
#[no_mangle]
pub unsafe extern "C" fn pwritev64(
    fd: c_int,
    iov: *const iovec,
    iovcnt: c_int,
    offset: libc::off64_t,
) -> ssize_t {
    let real = real!(
        REAL_PWRITEV64
            as unsafe extern "C" fn(c_int, *const iovec, c_int, libc::off64_t) -> ssize_t
    );
    // SAFETY: the caller's arguments are passed on unchanged, under the caller's contract.
    hook(Call::Pwritev64, fd, || unsafe {
        real(fd, iov, iovcnt, offset)
    })
}

/// Interposes `fsync(2)` (`File::sync_all`).
///
/// # Safety
/// None beyond the C library's `fsync`, which takes only a descriptor.
#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    let real = real!(REAL_FSYNC as unsafe extern "C" fn(c_int) -> c_int);
    // SAFETY: the caller's descriptor is passed on unchanged.
    hook(Call::Fsync, fd, || unsafe { real(fd) })
}

/// Interposes `fdatasync(2)` (`File::sync_data`).
///
/// # Safety
/// None beyond the C library's `fdatasync`, which takes only a descriptor.
#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    let real = real!(REAL_FDATASYNC as unsafe extern "C" fn(c_int) -> c_int);
    // SAFETY: the caller's descriptor is passed on unchanged.
    hook(Call::Fdatasync, fd, || unsafe { real(fd) })
}
