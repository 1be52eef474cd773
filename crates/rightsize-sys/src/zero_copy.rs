//! Sending a file's pages to a socket without copying them through user
//! space: `sendfile(2)`, and `memfd_create(2)` for a memory-backed file to
//! send from.
//!
//! Guarantees: [`sendfile`] retries a call interrupted by a signal
//! (`EINTR`) and otherwise makes exactly one call; its error names the call,
//! both descriptors, the offset and the count, and says whose fault it was
//! ([`SendfileError::is_read_error`]: the file could not be read;
//! [`SendfileError::is_would_block`]: the socket's send timeout passed).
//! [`memfd_create`] returns an owned [`File`], closed on drop and on exec.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, RawFd};

/// `memfd_create(2)` failed.
#[derive(Debug, thiserror::Error)]
#[error("memfd_create({name:?}, MFD_CLOEXEC)")]
pub struct MemfdError {
    /// The name asked for (shown in `/proc/PID/fd`).
    pub name: CString,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

/// A new anonymous memory-backed file, empty, closed on exec. `name` is
/// only a label (`/proc/PID/fd` shows `/memfd:NAME`).
pub fn memfd_create(name: &CStr) -> Result<File, MemfdError> {
    // SAFETY: `name` is NUL-terminated and outlives the call; the flags
    // are valid.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(MemfdError {
            name: name.to_owned(),
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// `sendfile(2)` failed.
#[derive(Debug, thiserror::Error)]
#[error("sendfile(out fd {out_fd}, in fd {in_fd}, offset {}, {count} bytes)", offset_text(*.offset))]
pub struct SendfileError {
    /// The socket (or file) written to.
    pub out_fd: RawFd,
    /// The file read from.
    pub in_fd: RawFd,
    /// The offset read from; `None`: the file's own position.
    pub offset: Option<u64>,
    /// The most bytes asked for.
    pub count: usize,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

fn offset_text(offset: Option<u64>) -> String {
    offset.map_or_else(|| "the file's position".into(), |o| o.to_string())
}

impl SendfileError {
    /// `EIO`: reading the input file failed (its fault, not the socket's).
    pub fn is_read_error(&self) -> bool {
        self.source.raw_os_error() == Some(libc::EIO)
    }

    /// `EAGAIN`: a non-blocking socket is full, or a blocking one's send
    /// timeout (`SO_SNDTIMEO`) passed without room.
    pub fn is_would_block(&self) -> bool {
        self.source.raw_os_error() == Some(libc::EAGAIN)
    }
}

/// Sends at most `count` bytes of `input` to `output`: from `*offset`
/// (advanced by what was sent) or, with `None`, from the file's own
/// position (which the kernel advances). Returns the bytes sent, 0 at the
/// end of the file. Retried on `EINTR`.
pub fn sendfile(
    output: impl AsFd,
    input: impl AsFd,
    mut offset: Option<&mut u64>,
    count: usize,
) -> Result<usize, SendfileError> {
    let (out_fd, in_fd) = (output.as_fd().as_raw_fd(), input.as_fd().as_raw_fd());
    let asked = offset.as_deref().copied();
    let error = |source| SendfileError {
        out_fd,
        in_fd,
        offset: asked,
        count,
        source,
    };
    let mut at: libc::off_t = match asked {
        Some(o) => libc::off_t::try_from(o)
            .map_err(|_| error(io::Error::from_raw_os_error(libc::EINVAL)))?,
        None => 0,
    };
    loop {
        let at_ptr: *mut libc::off_t = if offset.is_some() {
            &mut at
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: both descriptors are borrowed, so open, for the call;
        // `at_ptr` is null (the file's own position) or points to `at`.
        let n = unsafe { libc::sendfile(out_fd, in_fd, at_ptr, count) };
        if let Ok(sent) = usize::try_from(n) {
            if let Some(o) = offset.as_deref_mut() {
                // sendfile only moves `at` forward from a non-negative start.
                *o = u64::try_from(at).unwrap_or(*o);
            }
            return Ok(sent);
        }
        let source = io::Error::last_os_error();
        if source.kind() != io::ErrorKind::Interrupted {
            return Err(error(source));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn sendfile_copies_a_memfd_to_a_socket() {
        let mut file = memfd_create(c"rightsize-test").expect("memfd_create");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&data).expect("write");
        let (a, mut b) = UnixStream::pair().expect("socketpair");

        let mut offset = 1_000;
        let sent = sendfile(&a, &file, Some(&mut offset), 4_000).expect("sendfile");
        assert_eq!(sent, 4_000);
        assert_eq!(offset, 5_000);
        let mut got = vec![0u8; sent];
        b.read_exact(&mut got).expect("read");
        assert_eq!(got, data[1_000..5_000]);

        // Without an offset: from the file's position, which moves.
        file.seek(SeekFrom::Start(9_000)).expect("seek");
        assert_eq!(sendfile(&a, &file, None, 4_000).expect("sendfile"), 1_000);
        assert_eq!(sendfile(&a, &file, None, 4_000).expect("sendfile"), 0);
        let mut tail = vec![0u8; 1_000];
        b.read_exact(&mut tail).expect("read");
        assert_eq!(tail, data[9_000..]);
    }

    #[test]
    fn a_sendfile_error_names_the_call_and_its_arguments() {
        let file = memfd_create(c"rightsize-test").expect("memfd_create");
        // A file opened only for reading cannot be written: EBADF.
        let read_only = File::open("/dev/null").expect("open /dev/null");
        let err = sendfile(&read_only, &file, Some(&mut 0), 10).expect_err("sendfile");
        let text = err.to_string();
        assert!(text.starts_with("sendfile(out fd "), "{text}");
        assert!(text.contains(", offset 0, 10 bytes)"), "{text}");
        assert!(!err.is_read_error() && !err.is_would_block());
    }
}
