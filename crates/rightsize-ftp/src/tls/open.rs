//! A download's records opened in place. rustls decrypts a record into
//! its own buffer and copies the plaintext out twice on the way to the
//! reader; for a download (TLS 1.3, a known length within one key's
//! limit) the stream instead lets rustls run until the first data
//! arrives (the server's session tickets come before it, and rustls keeps
//! them for the next connection's resumption), then takes the keys
//! ([`record`](super::record)) and opens each record where the socket's
//! read left it.
//!
//! After the handover the stream receives data and ends: a later session
//! ticket is ignored, the peer's `close_notify` is the end, any other
//! alert or handshake message (a key update) an error. Its own
//! `close_notify` is sealed with its sending key.

use std::io::{self, Read, Write};
use std::net::TcpStream;

use super::record::{
    ALERT, APPLICATION_DATA, CLOSE_NOTIFY, HANDSHAKE, HEADER_BYTES, NEW_SESSION_TICKET, RecordKey,
    TAG_BYTES,
};
use super::{Link, TlsStream, handed_over};

/// A stream's state once it opens its records itself.
#[derive(Debug)]
pub(super) struct Opened {
    rx: RecordKey,
    tx: RecordKey,
    /// Plaintext rustls had decrypted before the handover, not yet read.
    early: Vec<u8>,
    early_at: usize,
    /// The last opened record's plaintext in the stream's `raw` buffer,
    /// not yet read.
    plain_start: usize,
    plain_end: usize,
    /// The peer's `close_notify` came.
    closed: bool,
}

impl Opened {
    /// Sends `close_notify`, sealed with this end's key.
    pub(super) fn close_notify(&mut self, sock: &mut TcpStream) -> io::Result<()> {
        let mut slot = [0u8; HEADER_BYTES + CLOSE_NOTIFY.len() + 1 + TAG_BYTES];
        slot[HEADER_BYTES..HEADER_BYTES + CLOSE_NOTIFY.len()].copy_from_slice(&CLOSE_NOTIFY);
        let n = self.tx.seal(&mut slot, CLOSE_NOTIFY.len(), ALERT)?;
        sock.write_all(&slot[..n])
    }
}

/// An error about what the peer sent.
fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {what}"))
}

impl TlsStream {
    /// Says that this stream now carries a download of `length` bytes (as
    /// far as is known): with TLS 1.3 and a length within one key's
    /// limit, its records are opened here once its first data arrives.
    pub(crate) fn receive_in_place(&mut self, length: Option<u64>) {
        self.hand_over = self.keys_may_be_taken(length);
    }

    /// Whether this stream opens its records itself now.
    #[cfg(test)]
    pub(super) fn is_opened(&self) -> bool {
        matches!(self.link, Link::Opened(_))
    }

    /// Takes the keys from rustls, with the plaintext it holds.
    pub(super) fn take_over(&mut self) -> io::Result<()> {
        self.hand_over = false;
        let Link::Rustls(mut conn) = std::mem::replace(&mut self.link, Link::Broken) else {
            return Err(handed_over());
        };
        let mut early = Vec::new();
        match conn.reader().read_to_end(&mut early) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
        let secrets = conn
            .dangerous_extract_secrets()
            .map_err(|e| io::Error::other(format!("TLS: handing the keys over: {e}")))?;
        let key = |(seq, secrets)| {
            RecordKey::new(seq, secrets)
                .ok_or_else(|| io::Error::other("TLS: handing the keys over: an unknown cipher"))
        };
        self.link = Link::Opened(Box::new(Opened {
            rx: key(secrets.rx)?,
            tx: key(secrets.tx)?,
            early,
            early_at: 0,
            plain_start: 0,
            plain_end: 0,
            closed: false,
        }));
        Ok(())
    }

    /// [`Read::read`] once the records are opened here.
    pub(super) fn read_opened(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Link::Opened(o) = &mut self.link else {
                return Err(handed_over());
            };
            if o.early_at < o.early.len() {
                let n = buf.len().min(o.early.len() - o.early_at);
                buf[..n].copy_from_slice(&o.early[o.early_at..o.early_at + n]);
                o.early_at += n;
                return Ok(n);
            }
            if o.plain_start < o.plain_end {
                let n = buf.len().min(o.plain_end - o.plain_start);
                buf[..n].copy_from_slice(&self.raw[o.plain_start..o.plain_start + n]);
                o.plain_start += n;
                return Ok(n);
            }
            if o.closed {
                return Ok(0);
            }
            let Some(end) = self.whole_record()? else {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "TLS: the stream ended without close_notify (cut short?)",
                ));
            };
            let start = std::mem::replace(&mut self.raw_start, end);
            let Link::Opened(o) = &mut self.link else {
                return Err(handed_over());
            };
            let (kind, len) = o.rx.open(&mut self.raw[start..end])?;
            let plain = start + HEADER_BYTES..start + HEADER_BYTES + len;
            let first = self.raw.get(plain.start).copied();
            match kind {
                APPLICATION_DATA => (o.plain_start, o.plain_end) = (plain.start, plain.end),
                ALERT if len == 2 && self.raw[plain.start + 1] == CLOSE_NOTIFY[1] => {
                    o.closed = true;
                }
                ALERT => {
                    let alert = self.raw.get(plain.start + 1).copied().unwrap_or(0);
                    return Err(invalid(format!("the peer sent alert {alert}")));
                }
                // A session ticket after the handover: not kept.
                HANDSHAKE if first == Some(NEW_SESSION_TICKET) => {}
                HANDSHAKE => {
                    return Err(invalid(format!(
                        "handshake message {} in the middle of a download (a key update?)",
                        first.unwrap_or(0)
                    )));
                }
                other => return Err(invalid(format!("a record of content type {other}"))),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tls::tests::tls_pair;

    fn pattern(bytes: usize) -> Vec<u8> {
        (0..bytes).map(|i| (i * 13 + i / 5003) as u8).collect()
    }

    /// `data` from a server end (sealed records with `sealed`, else
    /// rustls's) to a client end armed for a download; returns what the
    /// client read in `chunk`-byte reads, and whether it took the keys.
    fn download(data: &[u8], sealed: bool, chunk: usize) -> (Vec<u8>, bool) {
        let (server, mut client) = tls_pair();
        let sent = data.to_vec();
        let sending = std::thread::spawn(move || {
            let mut source = sent.as_slice();
            let length = sealed.then_some(sent.len() as u64);
            server
                .send_all(&mut source, length, None, &mut |_| {})
                .unwrap();
        });
        client.receive_in_place(Some(data.len() as u64));
        let mut got = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = client.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        sending.join().unwrap();
        // The server has closed already; as the client does, say goodbye
        // whatever comes of it.
        let _ = client.finish();
        (got, client.is_opened())
    }

    #[test]
    fn a_download_is_opened_in_place_after_the_first_record_whoever_sealed_it() {
        for (bytes, sealed, chunk) in [
            (3_000_001, true, 256 * 1024),
            (3_000_001, false, 256 * 1024),
            (100_000, true, 1000),
            (1, true, 10),
        ] {
            let data = pattern(bytes);
            let (got, opened) = download(&data, sealed, chunk);
            assert!(
                got == data,
                "{bytes} bytes, sealed {sealed}, reads of {chunk}"
            );
            assert!(opened, "{bytes} bytes: the keys were not taken");
        }
    }

    #[test]
    fn the_close_notify_sealed_after_the_handover_is_one_rustls_reads() {
        let (mut server, mut client) = tls_pair();
        let serving = std::thread::spawn(move || {
            server.write_all(&pattern(50_000)).unwrap();
            server.flush().unwrap();
            let mut rest = Vec::new();
            server.read_to_end(&mut rest).map(|_| rest)
        });
        client.receive_in_place(Some(50_000));
        let mut got = vec![0u8; 50_000];
        client.read_exact(&mut got).unwrap();
        assert!(client.is_opened() && got == pattern(50_000));
        client.finish().unwrap();
        assert_eq!(serving.join().unwrap().unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn an_empty_download_ends_at_close_notify_without_a_handover() {
        let (got, opened) = download(&[], true, 1024);
        assert!(got.is_empty());
        assert!(!opened);
    }

    #[test]
    fn a_cut_or_tampered_stream_after_the_handover_is_an_error_not_an_end() {
        for tamper in [true, false] {
            let (server, mut client) = tls_pair();
            let data = pattern(200_000);
            let sending = std::thread::spawn(move || {
                let mut source = data.as_slice();
                server
                    .send_all(&mut source, Some(200_000), None, &mut |_| {})
                    .unwrap()
            });
            client.receive_in_place(Some(200_000));
            let mut buf = vec![0u8; 65_536];
            // The first record comes through rustls, then the keys are
            // taken.
            assert!(client.read(&mut buf).unwrap() > 0);
            assert!(client.is_opened());
            drop(sending.join().unwrap());
            // What the server sent after it, whole, then damaged: a bit
            // flipped in the middle, or the last 30 bytes cut off.
            let mut wire = client.raw[client.raw_start..client.raw_end].to_vec();
            client.sock.read_to_end(&mut wire).unwrap();
            if tamper {
                let middle = wire.len() / 2;
                wire[middle] ^= 0x40;
            } else {
                wire.truncate(wire.len() - 30);
            }
            client.raw[..wire.len()].copy_from_slice(&wire);
            (client.raw_start, client.raw_end) = (0, wire.len());
            let failed = loop {
                match client.read(&mut buf) {
                    Ok(0) => panic!("a damaged stream read to its end (tamper {tamper})"),
                    Ok(_) => {}
                    Err(e) => break e,
                }
            };
            if tamper {
                assert!(failed.to_string().contains("bad_record_mac"), "{failed}");
            } else {
                assert_eq!(failed.kind(), io::ErrorKind::UnexpectedEof, "{failed}");
            }
        }
    }
}
