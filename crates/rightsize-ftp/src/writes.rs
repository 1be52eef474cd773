//! Sending in writes of a chosen size (`--write-size`, the Windows tuning
//! note's Appendix B; docs/sources.md).
//!
//! Guarantees: the bytes go out in pieces of exactly the write size, the
//! last one shorter, each handed to one `write_all`; on a blocking socket
//! that is one `write(2)` per piece (a second, shorter one only after a
//! signal or the send timeout cut the first short), so no call ever writes
//! more than the write size. A file is read until the piece is full, so a
//! short read never makes a short write.

use std::borrow::Cow;
use std::io::{self, Read, Write};

/// Zeros for the benchmark source; a larger write size gets its own.
pub(crate) static ZEROS: [u8; 256 * 1024] = [0; 256 * 1024];

/// `write_bytes` zeros to send from: a slice of [`ZEROS`], or a buffer of
/// its own for a larger write size.
pub(crate) fn zero_piece(write_bytes: usize) -> Cow<'static, [u8]> {
    match ZEROS.get(..write_bytes) {
        Some(slice) => Cow::Borrowed(slice),
        None => Cow::Owned(vec![0u8; write_bytes]),
    }
}

/// Which side of a copy failed.
#[derive(Debug)]
pub(crate) enum CopyError {
    /// Reading the source (the file's fault).
    Read(io::Error),
    /// Writing to the connection (the network's fault, or its timeout).
    Write(io::Error),
}

/// Reads from `source` until `buf` is full or the source ends; returns the
/// bytes read (less than `buf.len()` only at the end). Retries `EINTR`.
pub(crate) fn read_full(source: &mut (impl Read + ?Sized), buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match source.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Copies `source` to its end into `out`, `write_bytes` per write;
/// `written` is told each piece's length after it went out.
pub(crate) fn copy(
    source: &mut (impl Read + ?Sized),
    out: &mut (impl Write + ?Sized),
    write_bytes: usize,
    written: &mut dyn FnMut(usize),
) -> Result<(), CopyError> {
    let mut buf = vec![0u8; write_bytes];
    loop {
        let n = read_full(source, &mut buf).map_err(CopyError::Read)?;
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n]).map_err(CopyError::Write)?;
        written(n);
    }
}

/// Writes `total_bytes` zeros into `out`, `write_bytes` per write.
pub(crate) fn zeros(
    out: &mut (impl Write + ?Sized),
    mut total_bytes: u64,
    write_bytes: usize,
    written: &mut dyn FnMut(usize),
) -> io::Result<()> {
    let piece = zero_piece(write_bytes);
    while total_bytes > 0 {
        let n = usize::try_from(total_bytes).map_or(piece.len(), |left| left.min(piece.len()));
        out.write_all(&piece[..n])?;
        total_bytes -= n as u64;
        written(n);
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Records the length of every `write` call and the bytes.
    #[derive(Debug, Default)]
    struct Recorder {
        calls: Vec<usize>,
        bytes: Vec<u8>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.calls.push(buf.len());
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A source that returns at most `step` bytes per read, with an EINTR
    /// between reads, as a pipe or a signal might.
    struct Dribble<'a> {
        data: &'a [u8],
        step: usize,
        interrupt: bool,
    }

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn a_file_goes_out_in_whole_pieces_even_from_short_reads() {
        let data = pattern(10_000);
        let mut out = Recorder::default();
        let mut counted = 0;
        let mut source = Dribble {
            data: &data,
            step: 300,
            interrupt: false,
        };
        copy(&mut source, &mut out, 1024, &mut |n| counted += n).unwrap();
        let mut expected = vec![1024; 9];
        expected.push(10_000 - 9 * 1024);
        assert_eq!(out.calls, expected);
        assert_eq!(out.bytes, data);
        assert_eq!(counted, 10_000);
    }

    #[test]
    fn one_byte_writes_and_an_exact_multiple() {
        let data = pattern(5);
        let mut out = Recorder::default();
        copy(&mut &data[..], &mut out, 1, &mut |_| {}).unwrap();
        assert_eq!(out.calls, [1; 5]);
        let data = pattern(4096);
        let mut out = Recorder::default();
        copy(&mut &data[..], &mut out, 1024, &mut |_| {}).unwrap();
        assert_eq!(out.calls, [1024; 4]);
        assert_eq!(out.bytes, data);
        let mut out = Recorder::default();
        copy(&mut &[][..], &mut out, 1024, &mut |_| {}).unwrap();
        assert!(out.calls.is_empty());
    }

    #[test]
    fn zeros_in_pieces_small_and_above_the_static_buffer() {
        for (total, write_bytes) in [(3000u64, 1000usize), (2500, 1000), (1 << 20, 300 << 10)] {
            let mut out = Recorder::default();
            let mut counted = 0;
            zeros(&mut out, total, write_bytes, &mut |n| counted += n).unwrap();
            let whole = usize::try_from(total).unwrap() / write_bytes;
            let rest = usize::try_from(total).unwrap() % write_bytes;
            let mut expected = vec![write_bytes; whole];
            if rest > 0 {
                expected.push(rest);
            }
            assert_eq!(out.calls, expected, "{total} in {write_bytes}");
            assert_eq!(counted as u64, total);
            assert!(out.bytes.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn a_failing_source_or_connection_says_which() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk"))
            }
        }
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let err = copy(&mut Broken, &mut Recorder::default(), 10, &mut |_| {}).unwrap_err();
        assert!(matches!(err, CopyError::Read(_)), "{err:?}");
        let err = copy(&mut &b"abc"[..], &mut Broken, 10, &mut |_| {}).unwrap_err();
        assert!(matches!(err, CopyError::Write(_)), "{err:?}");
    }
}
