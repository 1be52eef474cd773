//! Random bytes from the kernel (`getrandom(2)`), for password salts.
//!
//! [`fill_random`] fills the whole buffer or fails: it retries after a
//! signal (`EINTR`) and after a short read, which `getrandom` may return
//! for requests over 256 bytes. It blocks only until the kernel's pool is
//! first initialised at boot.

use std::io;

/// `getrandom` failed.
#[derive(Debug, thiserror::Error)]
#[error("getrandom for {len_bytes} bytes")]
pub struct RandomError {
    /// How many bytes were asked for.
    pub len_bytes: usize,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

/// Fills `buf` with cryptographically secure random bytes.
pub fn fill_random(buf: &mut [u8]) -> Result<(), RandomError> {
    let len_bytes = buf.len();
    let mut filled = 0;
    while filled < len_bytes {
        let rest = &mut buf[filled..];
        // SAFETY: `rest` is a valid, writable buffer of `rest.len()` bytes
        // for the duration of the call; the kernel writes at most that many.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        match usize::try_from(n) {
            Ok(0) => {
                return Err(RandomError {
                    len_bytes,
                    source: io::Error::new(io::ErrorKind::UnexpectedEof, "returned 0 bytes"),
                });
            }
            Ok(n) => filled += n,
            Err(_) => {
                let source = io::Error::last_os_error();
                if source.kind() != io::ErrorKind::Interrupted {
                    return Err(RandomError { len_bytes, source });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn random_fills_small_and_large_buffers() {
        let mut salt = [0u8; 16];
        fill_random(&mut salt).unwrap();
        let mut other = [0u8; 16];
        fill_random(&mut other).unwrap();
        // 2^-128 odds of a false failure.
        assert_ne!(salt, other);
        // Larger than one getrandom call may return at once.
        let mut big = vec![0u8; 1 << 20];
        fill_random(&mut big).unwrap();
        assert!(big.iter().filter(|b| **b == 0).count() < 1 << 14);
        fill_random(&mut []).unwrap();
    }
}
