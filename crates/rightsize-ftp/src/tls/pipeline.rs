//! Sending through TLS on two threads: this one reads and encrypts while
//! another writes the records to the socket, so that encryption and the
//! kernel's TCP work (copying into the socket, and on a local path the
//! receiver's side of it too) run on two cores instead of one. The
//! records reach the socket in the order they were made.

use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

use rustls::Connection;

use super::{Link, TlsStream, handed_over};
use crate::writes::CopyError;

/// Plaintext rustls encrypts per batch handed to the socket's thread.
const BATCH_BYTES: usize = 256 * 1024;

/// Batches made ahead of the socket: enough that neither thread waits
/// for the other, little memory per connection (about a mebibyte).
const AHEAD: usize = 2;

/// rustls's own limit on what it holds encrypted and unsent, restored
/// after a pipelined send.
const RUSTLS_BUFFER_LIMIT: usize = 64 * 1024;

/// The socket's thread, as the thread making the batches sees it.
pub(super) struct Shipper {
    full: SyncSender<Vec<u8>>,
    empty: Receiver<Vec<u8>>,
}

impl Shipper {
    /// A buffer for the next batch: one the socket is done with, as it
    /// was (so that refilling it costs no clearing), else a new one.
    pub(super) fn buffer(&mut self) -> Vec<u8> {
        self.empty.try_recv().unwrap_or_default()
    }

    /// Hands a batch to the socket's thread; waits while [`AHEAD`]
    /// batches are queued.
    pub(super) fn ship(&mut self, batch: Vec<u8>) -> io::Result<()> {
        self.full.send(batch).map_err(|_| stopped())
    }
}

/// What the making thread sees when the socket's thread has failed (its
/// own error is the one reported).
fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the socket's writer stopped")
}

/// Writes each batch to the socket, in order, and returns it for reuse.
fn write_batches(
    mut sock: &TcpStream,
    full: Receiver<Vec<u8>>,
    empty: Sender<Vec<u8>>,
) -> io::Result<()> {
    for batch in full {
        sock.write_all(&batch)?;
        // The making side may have finished; a lost buffer is no loss.
        let _ = empty.send(batch);
    }
    Ok(())
}

/// Runs `make` on this thread with a [`Shipper`] whose batches a second
/// thread writes to `sock`; returns once both are done. A socket error
/// (its timeout, the peer's reset) is the write error reported, whatever
/// `make` saw of it; a read error of `make`'s comes first.
pub(super) fn with_socket_writer(
    sock: &TcpStream,
    make: impl FnOnce(&mut Shipper) -> Result<(), CopyError>,
) -> Result<(), CopyError> {
    let (full_tx, full_rx) = mpsc::sync_channel(AHEAD);
    let (empty_tx, empty_rx) = mpsc::channel();
    let (made, written) = std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_batches(sock, full_rx, empty_tx));
        let mut shipper = Shipper {
            full: full_tx,
            empty: empty_rx,
        };
        let made = make(&mut shipper);
        drop(shipper);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the socket's writer panicked")));
        (made, written)
    });
    match (made, written) {
        (Err(CopyError::Read(e)), _) => Err(CopyError::Read(e)),
        (_, Err(e)) => Err(CopyError::Write(e)),
        (made, Ok(())) => made,
    }
}

/// The writer a pipelined send's body writes plaintext into: rustls
/// encrypts it, each batch of records goes to the socket's thread.
struct Encrypter<'a> {
    conn: &'a mut Connection,
    shipper: &'a mut Shipper,
}

impl Encrypter<'_> {
    /// Hands every record rustls has ready to the socket's thread.
    fn ship(&mut self) -> io::Result<()> {
        let mut out = self.shipper.buffer();
        out.clear();
        while self.conn.wants_write() {
            self.conn.write_tls(&mut out)?;
        }
        self.shipper.ship(out)
    }
}

impl Write for Encrypter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let piece = &buf[..buf.len().min(BATCH_BYTES)];
        self.conn.writer().write_all(piece)?;
        self.ship()?;
        Ok(piece.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.ship()
    }
}

impl TlsStream {
    /// Runs `body` with a writer that encrypts what it is given (rustls's
    /// records) on this thread while a second thread writes the records
    /// to the socket; returns once both are done, errors as
    /// [`with_socket_writer`] reports them.
    pub(crate) fn pipelined(
        &mut self,
        body: impl FnOnce(&mut dyn Write) -> Result<(), CopyError>,
    ) -> Result<(), CopyError> {
        // What rustls holds from an earlier write goes first.
        self.send_pending().map_err(CopyError::Write)?;
        let TlsStream { link, sock, .. } = self;
        let Link::Rustls(conn) = link else {
            return Err(CopyError::Write(handed_over()));
        };
        // Each batch is encrypted whole, then handed over.
        conn.set_buffer_limit(None);
        let sent = with_socket_writer(sock, |shipper| {
            let mut encrypter = Encrypter { conn, shipper };
            body(&mut encrypter)?;
            // The body's last records, should its writes not have
            // shipped them all.
            encrypter.ship().map_err(CopyError::Write)
        });
        conn.set_buffer_limit(Some(RUSTLS_BUFFER_LIMIT));
        sent
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::tls::tests::tls_pair;
    use crate::writes;

    #[test]
    fn a_pipelined_send_arrives_whole_and_in_order_and_the_stream_goes_on() {
        let (mut server, mut client) = tls_pair();
        let data: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i * 7 + i / 1000) as u8)
            .collect();
        let reading = std::thread::spawn(move || {
            let mut got = Vec::new();
            client.read_to_end(&mut got).unwrap();
            got
        });
        server.write_all(b"before").unwrap();
        let mut counted = 0;
        server
            .pipelined(|out| {
                writes::copy(&mut data.as_slice(), out, 1 << 20, &mut |n| counted += n)
            })
            .unwrap();
        server.write_all(b"after").unwrap();
        server.finish().unwrap();
        let got = reading.join().unwrap();
        assert_eq!(counted, data.len());
        assert_eq!(&got[..6], b"before");
        assert_eq!(&got[6..6 + data.len()], data.as_slice());
        assert_eq!(&got[6 + data.len()..], b"after");
    }

    #[test]
    fn a_socket_error_is_the_write_error_and_a_source_error_the_read_error() {
        let (mut server, client) = tls_pair();
        drop(client);
        let mut endless = io::repeat(1);
        let outcome = server.pipelined(|out| writes::copy(&mut endless, out, 1 << 20, &mut |_| {}));
        match outcome {
            Err(CopyError::Write(e)) => assert_ne!(e.to_string(), stopped().to_string()),
            other => panic!("expected the socket's error, got {other:?}"),
        }

        let (mut server, _client) = tls_pair();
        let outcome =
            server.pipelined(|_out| Err(CopyError::Read(io::Error::other("the disk said no"))));
        assert!(matches!(outcome, Err(CopyError::Read(e)) if e.to_string() == "the disk said no"));
    }
}
