//! The system calls the root needs, as thin wrappers that return
//! [`io::Error`]; the callers add the call name and the path.
//!
//! Guarantees: every descriptor is opened close-on-exec and owned by an
//! [`OwnedFd`] (or a [`Dir`]) as soon as the kernel returns it, so no error
//! path leaks one; each `unsafe` block is one call with its `SAFETY` reason.

use std::ffi::{CStr, CString};
use std::io;
use std::mem::{self, MaybeUninit};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::ptr::{self, NonNull};

use libc::c_int;

/// How many times a lookup is retried when `openat2` answers `EAGAIN`, which
/// it does under `RESOLVE_BENEATH` when a rename or mount elsewhere in the
/// system raced with the lookup (it cannot then prove the result stayed
/// beneath). Races that persist this long are reported as the error. The
/// bound also ends the loop when `EAGAIN` means something else: an
/// `O_NONBLOCK` open of a file another process holds a lease on.
const OPENAT2_EAGAIN_RETRIES: usize = 64;

/// `struct open_how` from `linux/openat2.h`. The libc crate has it, but marks
/// it `#[non_exhaustive]`, so it cannot be built with a struct literal; this
/// copy has the same three `u64` fields in the same order (24 bytes, the
/// size `OPEN_HOW_SIZE_VER0` every kernel since 5.6 accepts).
#[repr(C)]
#[derive(Debug)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, flags | O_CLOEXEC, mode, resolve)`, retried on
/// `EAGAIN` and `EINTR`. `mode` must be 0 unless `flags` has `O_CREAT`.
pub(super) fn openat2(
    dir: BorrowedFd<'_>,
    path: &CStr,
    flags: c_int,
    mode: libc::mode_t,
    resolve: u64,
) -> io::Result<OwnedFd> {
    openat2_raw(dir.as_raw_fd(), path, flags, mode, resolve)
}

/// [`openat2`] relative to the current directory (`AT_FDCWD`).
pub(super) fn openat2_cwd(path: &CStr, flags: c_int, resolve: u64) -> io::Result<OwnedFd> {
    openat2_raw(libc::AT_FDCWD, path, flags, 0, resolve)
}

fn openat2_raw(
    dir: RawFd,
    path: &CStr,
    flags: c_int,
    mode: libc::mode_t,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // The O_* flags are all positive; a negative value is a caller's bug.
    let flags = u64::try_from(flags | libc::O_CLOEXEC)
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let how = OpenHow {
        flags,
        mode: u64::from(mode),
        resolve,
    };
    for _ in 0..OPENAT2_EAGAIN_RETRIES {
        // SAFETY: `path` is NUL-terminated and `how` is a valid `open_how`
        // of the size passed; both outlive the call, which only reads them.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                ptr::from_ref(&how),
                mem::size_of::<OpenHow>(),
            )
        };
        if ret >= 0 {
            let fd = RawFd::try_from(ret).map_err(io::Error::other)?;
            // SAFETY: the kernel just returned this descriptor to us; nothing
            // else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => continue,
            _ => return Err(err),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// `fstat(fd)`; works on `O_PATH` descriptors too.
pub(super) fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable memory of the size of `struct stat`.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it filled in the whole struct.
    Ok(unsafe { st.assume_init() })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: a symbolic link is described
/// itself, never followed.
pub(super) fn lstatat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated; `st` is writable `struct stat` memory.
    cvt(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat succeeded, so it filled in the whole struct.
    Ok(unsafe { st.assume_init() })
}

/// `mkdirat(dir, name, mode)`.
pub(super) fn mkdirat(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated and outlives the call.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) })
}

/// `unlinkat(dir, name, flags)`; `flags` is 0 or `AT_REMOVEDIR`.
pub(super) fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, flags: c_int) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated and outlives the call.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) })
}

/// `renameat(from_dir, from, to_dir, to)`.
pub(super) fn renameat(
    from_dir: BorrowedFd<'_>,
    from: &CStr,
    to_dir: BorrowedFd<'_>,
    to: &CStr,
) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    cvt(unsafe {
        libc::renameat(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
        )
    })
}

/// Clears `O_NONBLOCK` on `fd` (`fcntl(F_GETFL)` then `fcntl(F_SETFL)`).
pub(super) fn clear_nonblock(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL takes no argument and only reads the descriptor.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    cvt(flags)?;
    // SAFETY: F_SETFL with an int argument changes only this descriptor's
    // status flags.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) })
}

/// An open directory stream (`fdopendir`), closed on drop.
#[derive(Debug)]
pub(super) struct Dir(NonNull<libc::DIR>);

impl Dir {
    /// Takes over `fd`, a directory opened for reading.
    pub(super) fn new(fd: OwnedFd) -> io::Result<Dir> {
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` is an open descriptor we own; on success the stream
        // owns it and closes it in closedir.
        let dir = unsafe { libc::fdopendir(raw) };
        match NonNull::new(dir) {
            Some(dir) => Ok(Dir(dir)),
            None => {
                let err = io::Error::last_os_error();
                // SAFETY: fdopendir failed, so `raw` is still ours to close.
                drop(unsafe { OwnedFd::from_raw_fd(raw) });
                Err(err)
            }
        }
    }

    /// The stream's descriptor, for `fstatat` on its entries.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `self.0` is a live stream; dirfd only reads it.
        let raw = unsafe { libc::dirfd(self.0.as_ptr()) };
        // SAFETY: the descriptor stays open as long as the stream, which
        // outlives the borrow of `self`.
        unsafe { BorrowedFd::borrow_raw(raw) }
    }

    /// The next entry's name (including `.` and `..`), or `None` at the end.
    pub(super) fn next_name(&mut self) -> io::Result<Option<CString>> {
        // readdir returns NULL both at the end and on error; only errno
        // tells them apart, so clear it first.
        // SAFETY: errno is thread-local; writing it affects this thread only.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `self.0` is a live stream used by this thread only (a
        // `Dir` is neither Send nor Sync).
        let entry = unsafe { libc::readdir(self.0.as_ptr()) };
        if entry.is_null() {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(0) => Ok(None),
                _ => Err(err),
            };
        }
        // SAFETY: `entry` is valid until the next readdir on this stream and
        // its `d_name` is NUL-terminated; the name is copied out at once.
        // `addr_of!` avoids making a reference to the whole 256-byte array,
        // which the kernel's record may be shorter than.
        let name = unsafe { CStr::from_ptr(ptr::addr_of!((*entry).d_name).cast::<libc::c_char>()) };
        Ok(Some(name.to_owned()))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a live stream that nothing uses after this.
        // closedir can only fail with EBADF, which ownership rules out.
        unsafe { libc::closedir(self.0.as_ptr()) };
    }
}

/// Turns a -1 return into the thread's `errno`.
fn cvt(ret: c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
