//! A TLS 1.3 sender that seals its records itself, in place, as kernel
//! TLS would: once the handshake is done rustls hands over the sending
//! key (`dangerous_extract_secrets`), the file is read straight into the
//! records' places in a batch, each record is sealed where it lies
//! (RFC 8446 section 5.2: the plaintext, its content type, the AEAD tag;
//! the nonce the key's IV XOR the record's sequence number), and a second
//! thread writes the batch to the socket. Against rustls's own writer
//! this saves copying the plaintext into each record and the records into
//! the socket's batch.
//!
//! After the handover the connection can only send: it is used for a
//! transfer that ends the connection (`close_notify`, then the FIN), and
//! only when the transfer's records fit within one key's limit (no key
//! update is needed); otherwise rustls sends ([`TlsStream::pipelined`]).

use std::io::{self, IoSliceMut, Read};
use std::net::{Shutdown, TcpStream};

use super::pipeline::with_socket_writer;
use super::record::{
    ALERT, APPLICATION_DATA, CLOSE_NOTIFY, HEADER_BYTES, PLAIN_BYTES, RecordKey, TAG_BYTES,
};
use super::{Link, TlsStream, handed_over};
use crate::writes::{self, CopyError};

/// A full record's place in a batch: header, plaintext, content type,
/// tag.
const SLOT_BYTES: usize = HEADER_BYTES + PLAIN_BYTES + 1 + TAG_BYTES;
/// Records per batch (256 KiB of plaintext, one `readv` of the file).
const RECORDS_PER_BATCH: usize = 16;

/// Reads `source` into the plaintext places of `batch`'s records, in
/// order, until they are full or the source ends; returns the bytes read.
fn fill(source: &mut dyn Read, batch: &mut [u8]) -> io::Result<usize> {
    let capacity = batch.len() / SLOT_BYTES * PLAIN_BYTES;
    let mut filled = 0;
    while filled < capacity {
        let (first, offset) = (filled / PLAIN_BYTES, filled % PLAIN_BYTES);
        let mut places: Vec<IoSliceMut<'_>> = batch
            .chunks_mut(SLOT_BYTES)
            .skip(first)
            .enumerate()
            .map(|(i, slot)| {
                let start = HEADER_BYTES + if i == 0 { offset } else { 0 };
                IoSliceMut::new(&mut slot[start..HEADER_BYTES + PLAIN_BYTES])
            })
            .collect();
        match source.read_vectored(&mut places) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Seals the `filled` plaintext bytes of `batch` into records; returns
/// where the last one ends.
fn seal_batch(sealer: &mut RecordKey, batch: &mut [u8], filled: usize) -> io::Result<usize> {
    let mut end = 0;
    for (i, slot) in batch.chunks_mut(SLOT_BYTES).enumerate() {
        let len = filled.saturating_sub(i * PLAIN_BYTES).min(PLAIN_BYTES);
        if len == 0 {
            break;
        }
        end = i * SLOT_BYTES + sealer.seal(slot, len, APPLICATION_DATA)?;
    }
    Ok(end)
}

impl TlsStream {
    /// Whether [`TlsStream::send_all`] seals the records itself: the keys
    /// may be taken for the length ([`TlsStream::keys_may_be_taken`]) and
    /// no write size is asked for.
    fn sealable(&self, length: Option<u64>, write_size: Option<usize>) -> bool {
        write_size.is_none() && self.keys_may_be_taken(length)
    }

    /// Sends all of `source`, then `close_notify` and the FIN; returns
    /// the socket (to wait for the peer's acknowledgements). `length` is
    /// what the source holds as far as is known. With TLS 1.3, a length
    /// within one key's record limit and no `write_size`, the records are
    /// sealed here ([`RecordKey::seal`]); otherwise rustls makes them, in pieces of
    /// `write_size` (or 1 MiB) of plaintext. Either way a second thread
    /// writes them to the socket.
    pub(crate) fn send_all(
        mut self,
        source: &mut dyn Read,
        length: Option<u64>,
        write_size: Option<usize>,
        count: &mut dyn FnMut(usize),
    ) -> Result<TcpStream, CopyError> {
        if !self.sealable(length, write_size) {
            let chunk = write_size.unwrap_or(1 << 20);
            self.pipelined(|out| writes::copy(source, out, chunk, count))?;
            self.finish().map_err(CopyError::Write)?;
            return Ok(self.sock);
        }
        self.send_pending().map_err(CopyError::Write)?;
        let TlsStream { link, sock, .. } = self;
        let Link::Rustls(conn) = link else {
            return Err(CopyError::Write(handed_over()));
        };
        let handover = |e: String| CopyError::Write(io::Error::other(format!("TLS: {e}")));
        let (seq, secrets) = conn
            .dangerous_extract_secrets()
            .map_err(|e| handover(e.to_string()))?
            .tx;
        let mut sealer =
            RecordKey::new(seq, secrets).ok_or_else(|| handover("an unknown cipher".to_owned()))?;
        with_socket_writer(&sock, |shipper| {
            loop {
                let mut batch = shipper.buffer();
                // Zeroed only when new (or the short last batch): every
                // byte a record holds is written before it is sent.
                batch.resize(SLOT_BYTES * RECORDS_PER_BATCH, 0);
                let filled = fill(source, &mut batch).map_err(CopyError::Read)?;
                let end = seal_batch(&mut sealer, &mut batch, filled).map_err(CopyError::Write)?;
                batch.truncate(end);
                if end > 0 {
                    shipper.ship(batch).map_err(CopyError::Write)?;
                    count(filled);
                }
                if filled < RECORDS_PER_BATCH * PLAIN_BYTES {
                    break;
                }
            }
            let mut last = shipper.buffer();
            last.resize(SLOT_BYTES.max(last.len()), 0);
            last[HEADER_BYTES..HEADER_BYTES + CLOSE_NOTIFY.len()].copy_from_slice(&CLOSE_NOTIFY);
            let end = sealer
                .seal(&mut last, CLOSE_NOTIFY.len(), ALERT)
                .map_err(CopyError::Write)?;
            last.truncate(end);
            shipper.ship(last).map_err(CopyError::Write)
        })?;
        sock.shutdown(Shutdown::Write).map_err(CopyError::Write)?;
        Ok(sock)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{Read, Write};

    use super::*;
    use crate::tls::record::RECORD_LIMIT;
    use crate::tls::tests::tls_pair;

    fn pattern(bytes: usize) -> Vec<u8> {
        (0..bytes).map(|i| (i * 31 + i / 4099) as u8).collect()
    }

    /// Sends `data` with [`TlsStream::send_all`] to a rustls client that
    /// reads to the `close_notify`; returns what it read.
    fn through_send_all(data: &[u8], write_size: Option<usize>) -> Vec<u8> {
        let (mut server, mut client) = tls_pair();
        let reading = std::thread::spawn(move || {
            let mut got = Vec::new();
            client.read_to_end(&mut got).map(|_| got)
        });
        server.write_all(b"hello").unwrap();
        let length = Some(data.len() as u64);
        assert_eq!(server.sealable(length, write_size), write_size.is_none());
        let mut counted = 0;
        let mut source = data;
        server
            .send_all(&mut source, Some(data.len() as u64), write_size, &mut |n| {
                counted += n
            })
            .unwrap();
        assert_eq!(counted, data.len());
        let got = reading.join().unwrap().unwrap();
        assert_eq!(&got[..5], b"hello");
        got[5..].to_vec()
    }

    #[test]
    fn sealed_records_are_what_rustls_reads_at_every_length_and_end_in_close_notify() {
        for bytes in [
            0,
            1,
            PLAIN_BYTES - 1,
            PLAIN_BYTES,
            PLAIN_BYTES + 1,
            RECORDS_PER_BATCH * PLAIN_BYTES,
            RECORDS_PER_BATCH * PLAIN_BYTES + 17,
            3_000_001,
        ] {
            let data = pattern(bytes);
            assert!(through_send_all(&data, None) == data, "{bytes} bytes");
        }
    }

    #[test]
    fn a_write_size_or_an_unknown_length_leaves_the_records_to_rustls() {
        let data = pattern(1_000_003);
        assert!(through_send_all(&data, Some(65_536)) == data);
        let (server, mut client) = tls_pair();
        let reading = std::thread::spawn(move || {
            let mut got = Vec::new();
            client.read_to_end(&mut got).map(|_| got)
        });
        let mut source = data.as_slice();
        assert!(!server.sealable(None, None));
        assert!(!server.sealable(Some(RECORD_LIMIT * PLAIN_BYTES as u64), None));
        server
            .send_all(&mut source, None, None, &mut |_| {})
            .unwrap();
        assert!(reading.join().unwrap().unwrap() == data);
    }

    #[test]
    fn a_source_that_reads_a_little_at_a_time_fills_whole_records() {
        /// Hands out at most 1000 bytes per read.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(1000).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let data = pattern(300_000);
        let mut batch = vec![0u8; SLOT_BYTES * RECORDS_PER_BATCH];
        let filled = fill(&mut Trickle(&data), &mut batch).unwrap();
        assert_eq!(filled, RECORDS_PER_BATCH * PLAIN_BYTES);
        for (i, slot) in batch.chunks(SLOT_BYTES).enumerate() {
            let plain = &slot[HEADER_BYTES..HEADER_BYTES + PLAIN_BYTES];
            assert!(
                plain == &data[i * PLAIN_BYTES..(i + 1) * PLAIN_BYTES],
                "record {i}"
            );
        }
    }
}
