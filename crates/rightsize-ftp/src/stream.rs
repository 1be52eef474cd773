//! A MODE E data connection's bytes, at either end: clear, or TLS over
//! the same socket (FTPS's `PROT P`). The server is always TLS's server
//! side, whichever end connected.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

use crate::tls::TlsStream;

/// One data connection; see the module documentation.
#[derive(Debug)]
pub(crate) enum DataStream {
    /// No TLS.
    Plain(TcpStream),
    /// TLS, its handshake done.
    Tls(Box<TlsStream>),
}

/// How a connection just made or accepted becomes a [`DataStream`]: as
/// it is, or after its TLS handshake; an error says why it failed.
pub(crate) type Secure<'a> = &'a (dyn Fn(TcpStream) -> Result<DataStream, String> + Sync);

/// [`Secure`] without TLS.
pub(crate) fn plain(stream: TcpStream) -> Result<DataStream, String> {
    Ok(DataStream::Plain(stream))
}

impl DataStream {
    /// The TCP socket (buffers, `TCP_INFO`, polls, shutdown).
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            DataStream::Plain(s) => s,
            DataStream::Tls(t) => t.socket(),
        }
    }

    /// Ends what this end sends: `close_notify` (TLS), then the FIN.
    /// Under TLS, what the peer sent and this end never read (the
    /// server's session tickets, on a stream this end only wrote) is
    /// read and dropped: a socket closed with unread bytes sends a reset
    /// instead of its FIN, and the reset could reach the peer before it
    /// read the last blocks (seen as `Connection reset by peer` at the
    /// server, now and then, after a parallel upload).
    pub(crate) fn end(&mut self) -> io::Result<()> {
        match self {
            DataStream::Plain(s) => s.shutdown(Shutdown::Write),
            DataStream::Tls(t) => {
                t.finish()?;
                let mut sock = t.socket();
                let mut scratch = [0u8; 16 * 1024];
                while rightsize_sys::poll::readable(sock, std::time::Duration::ZERO)
                    .unwrap_or(false)
                {
                    match sock.read(&mut scratch) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                Ok(())
            }
        }
    }

    /// The socket of a connection without TLS; `None` for a TLS one
    /// (which cannot go back to clear).
    pub(crate) fn into_plain(self) -> Option<TcpStream> {
        match self {
            DataStream::Plain(s) => Some(s),
            DataStream::Tls(_) => None,
        }
    }
}

impl Read for DataStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            DataStream::Plain(s) => s.read(buf),
            DataStream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for DataStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            DataStream::Plain(s) => s.write(buf),
            DataStream::Tls(t) => t.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            DataStream::Plain(s) => s.write_all(buf),
            DataStream::Tls(t) => t.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            DataStream::Plain(s) => s.flush(),
            DataStream::Tls(t) => t.flush(),
        }
    }
}
