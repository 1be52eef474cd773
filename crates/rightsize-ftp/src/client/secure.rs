//! FTPS on the client (RFC 4217): when to ask for TLS, the control
//! connection's upgrade (`AUTH TLS`, then `PBSZ 0` and `PROT P`), and the
//! streams that carry either clear bytes or TLS over the same socket.
//!
//! Guarantees:
//! - TLS is never dropped once asked for: with [`TlsMode::Require`] or an
//!   `ftps://` URL, a server without TLS is an error quoting its reply;
//!   with [`TlsMode::Auto`], a server whose `FEAT` lists `AUTH TLS` is
//!   upgraded, and a certificate that fails verification is an error that
//!   names the flags that decide (never a silent fall back to clear).
//! - Every data connection of a TLS session is TLS (`PROT P`) and is made
//!   with the control connection's [`ClientTls`], so it resumes its
//!   session (vsftpd's `require_ssl_reuse`).
//! - The tuners, telemetry and `TCP_INFO` see the TCP socket under TLS
//!   ([`ClientStream::socket`]).
//! - A TLS data stream is ended with `close_notify` both ways; one cut
//!   without it is an error, so a truncated download is never committed.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::command::ProtectionLevel;
use rightsize_ftp_proto::url::{FtpUrl, Host};
use serde::Serialize;

use super::Observer;
use super::control::Control;
use super::error::ClientError;
use super::features::Features;
use crate::tls::{ClientTls, SharedTls, TlsError, TlsStream, Verify};

/// Whether to use TLS (explicit FTPS); an `ftps://` URL always does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Upgrade when the server's `FEAT` (asked before login) lists
    /// `AUTH TLS`; otherwise in clear (`rightsize get` and `put` without
    /// `--tls` or `--no-tls`).
    Auto,
    /// `AUTH TLS` or fail (`--tls`).
    Require,
    /// Never (`--no-tls`, and the library's default, so that `rightsize
    /// test` measures TCP alone); an `ftps://` URL is then refused.
    #[default]
    Off,
}

/// How a transfer uses TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// When to use it.
    pub mode: TlsMode,
    /// How the server's certificate is checked (default: the system's
    /// roots, for the URL's host).
    pub verify: Verify,
}

impl Default for TlsOptions {
    fn default() -> TlsOptions {
        TlsOptions {
            mode: TlsMode::default(),
            verify: Verify::SystemRoots,
        }
    }
}

/// What TLS covered in a transfer (the `tls` object of `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TlsReport {
    /// The control connection was TLS.
    pub control: bool,
    /// The data connection was TLS (`PROT P`).
    pub data: bool,
    /// The data connection resumed the control connection's TLS session.
    pub resumed: bool,
    /// Implicit FTPS (`ftps://`): TLS from the first byte.
    pub implicit: bool,
}

/// A connection's bytes: clear, or TLS over the same socket.
#[derive(Debug)]
pub(crate) enum ClientStream {
    /// No TLS.
    Plain(TcpStream),
    /// TLS, its handshake done; shared, so that the control connection
    /// can be read and written by two threads during a transfer.
    Tls(SharedTls),
}

impl ClientStream {
    /// The TCP socket (for `TCP_INFO`, buffers, addresses).
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            ClientStream::Plain(s) => s,
            ClientStream::Tls(t) => t.socket(),
        }
    }

    /// `stream`, shared ([`ClientStream::Tls`]).
    pub(crate) fn tls(stream: TlsStream, peer: SocketAddr) -> Result<ClientStream, ClientError> {
        SharedTls::new(stream)
            .map(ClientStream::Tls)
            .map_err(|source| ClientError::ControlIo {
                op: "dup the socket under TLS".to_owned(),
                server: peer,
                source,
            })
    }

    /// The same connection for another thread (the control connection
    /// during a transfer): clear, a clone of the socket; TLS, the shared
    /// stream.
    pub(crate) fn channel(&self) -> io::Result<ClientStream> {
        Ok(match self {
            ClientStream::Plain(s) => ClientStream::Plain(s.try_clone()?),
            ClientStream::Tls(t) => ClientStream::Tls(t.clone()),
        })
    }

    /// What can be read now without waiting (`None`: nothing yet), for a
    /// reader that polls [`ClientStream::socket`] first. `Some(0)` at
    /// the end.
    pub(crate) fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self {
            ClientStream::Plain(s) => s.read(buf).map(Some),
            ClientStream::Tls(t) => t.read_ready(buf),
        }
    }

    /// Whether bytes may already be waiting past the socket (decrypted,
    /// or read and not yet decrypted): then read before polling.
    pub(crate) fn may_hold_bytes(&self) -> bool {
        self.is_tls()
    }

    /// Whether the bytes go through TLS.
    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, ClientStream::Tls(_))
    }

    /// Whether this connection resumed an earlier TLS session.
    pub(crate) fn resumed(&self) -> bool {
        match self {
            ClientStream::Plain(_) => false,
            ClientStream::Tls(t) => t.resumed(),
        }
    }

    /// Says that this data connection now carries a download of
    /// `length` bytes (as far as is known), which TLS may take in place
    /// ([`TlsStream::receive_in_place`]).
    pub(crate) fn receive_in_place(&self, length: Option<u64>) {
        if let ClientStream::Tls(t) = self {
            t.receive_in_place(length);
        }
    }

    /// Ends what this end sends: `close_notify` (TLS), then the FIN.
    pub(crate) fn end(&mut self) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.shutdown(Shutdown::Write),
            ClientStream::Tls(t) => t.finish(),
        }
    }
}

impl Read for ClientStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.read(buf),
            ClientStream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for ClientStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.write(buf),
            ClientStream::Tls(t) => t.write(buf),
        }
    }

    /// Under TLS, one lock for the whole buffer: a command line another
    /// thread writes is never cut by this one's.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.write_all(buf),
            ClientStream::Tls(t) => t.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.flush(),
            ClientStream::Tls(t) => t.flush(),
        }
    }
}

/// A session's TLS: its client (verification and session cache) and the
/// name certificates are checked for, kept for the data connections.
#[derive(Debug, Clone)]
pub(crate) struct SessionTls {
    client: ClientTls,
    host: String,
    verify: Verify,
    /// `ftps://`.
    pub(crate) implicit: bool,
    /// Data connections secured, and those that resumed the session,
    /// over all the clones (a MODE E transfer's streams).
    secured: Arc<(AtomicU32, AtomicU32)>,
}

/// The name a certificate must carry for `host` (an address without
/// brackets).
pub(crate) fn tls_name(host: &Host) -> String {
    match host {
        Host::Name(name) => name.clone(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
    }
}

/// What `verify` checks, for messages.
pub(crate) fn describe(verify: &Verify) -> String {
    match verify {
        Verify::SystemRoots => "against the system's root certificates".to_owned(),
        Verify::CaFile(path) => format!("against --cacert \"{}\"", path.display()),
        Verify::Pin(pin) => {
            let hex: Vec<String> = pin.iter().map(|b| format!("{b:02X}")).collect();
            format!("against --pin-sha256 {}", hex.join(":"))
        }
        Verify::Insecure => "not verified (--insecure)".to_owned(),
    }
}

impl SessionTls {
    /// The TLS of a session with `url`'s server.
    pub(crate) fn new(
        url: &FtpUrl,
        verify: &Verify,
        server: SocketAddr,
    ) -> Result<SessionTls, ClientError> {
        let client = ClientTls::new(verify).map_err(|source| ClientError::TlsSetup {
            server,
            verify: describe(verify),
            source: Box::new(source),
        })?;
        Ok(SessionTls {
            client,
            host: tls_name(url.host()),
            verify: verify.clone(),
            implicit: url.implicit_tls(),
            secured: Arc::default(),
        })
    }

    /// Runs the TLS handshake on `stream` (the `channel` connection to
    /// `peer`), within the socket's timeouts.
    pub(crate) fn secure(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        channel: &'static str,
    ) -> Result<TlsStream, ClientError> {
        let secured = self
            .client
            .connect(&self.host, stream)
            .map_err(|source| self.handshake_error(peer, channel, source))?;
        if channel == "data" {
            self.secured.0.fetch_add(1, Ordering::Relaxed);
            if secured.resumed() {
                self.secured.1.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(secured)
    }

    /// What TLS covered in a MODE E transfer: every stream is TLS;
    /// `resumed` when every one resumed the session.
    pub(crate) fn streams_report(&self) -> TlsReport {
        let (made, resumed) = (
            self.secured.0.load(Ordering::Relaxed),
            self.secured.1.load(Ordering::Relaxed),
        );
        TlsReport {
            control: true,
            data: made > 0,
            resumed: made > 0 && resumed == made,
            implicit: self.implicit,
        }
    }

    /// A data connection of this session: TLS, resuming the session.
    pub(crate) fn data(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<ClientStream, ClientError> {
        ClientStream::tls(self.secure(stream, peer, "data")?, peer)
    }

    fn handshake_error(
        &self,
        peer: SocketAddr,
        channel: &'static str,
        source: TlsError,
    ) -> ClientError {
        ClientError::TlsHandshake {
            peer,
            channel,
            name: self.host.clone(),
            verify: describe(&self.verify),
            source: Box::new(source),
        }
    }
}

/// Whether an `AUTH` line of `FEAT` offers TLS (`AUTH TLS`, or a list
/// such as `AUTH TLS;TLS-C;SSL`).
pub(crate) fn offers_tls(features: &Features) -> bool {
    features.lines().any(|line| {
        let mut words = line.split_whitespace();
        words.next().is_some_and(|w| w.eq_ignore_ascii_case("AUTH"))
            && words
                .flat_map(|w| w.split([';', ',']))
                .any(|m| m.eq_ignore_ascii_case("TLS") || m.eq_ignore_ascii_case("TLS-C"))
    })
}

/// After the greeting on a clear control connection: asks for TLS as
/// `mode` says (`FEAT` first when [`TlsMode::Auto`]) and, when the server
/// takes `AUTH TLS`, upgrades the connection. Returns the session's TLS,
/// or `None` to go on in clear.
pub(crate) fn negotiate(
    control: &mut Control<ClientStream>,
    greeting: &rightsize_ftp_proto::Reply,
    url: &FtpUrl,
    options: &TlsOptions,
    observer: &mut dyn Observer,
) -> Result<Option<SessionTls>, ClientError> {
    if !ask_for_tls(control, greeting, options.mode, observer)? {
        return Ok(None);
    }
    let tls = SessionTls::new(url, &options.verify, control.server())?;
    control.secure(&tls)?;
    Ok(Some(tls))
}

/// The dialogue before the TLS handshake: `FEAT` (with
/// [`TlsMode::Auto`]) and `AUTH TLS`. True when the server answered `234`
/// and the handshake is to start; false to go on in clear; an error when
/// TLS is required and the server has none.
pub(crate) fn ask_for_tls<S: Read + Write>(
    control: &mut Control<S>,
    greeting: &rightsize_ftp_proto::Reply,
    mode: TlsMode,
    observer: &mut dyn Observer,
) -> Result<bool, ClientError> {
    match mode {
        TlsMode::Off => return Ok(false),
        TlsMode::Require => {}
        TlsMode::Auto => {
            let feat = control.command(&Command::Feat, observer)?;
            let features = Features::new(greeting, Some(&feat));
            if !offers_tls(&features) {
                return Ok(false);
            }
        }
    }
    let auth = Command::Auth(rightsize_ftp_proto::Token::new("TLS").map_err(|source| {
        ClientError::Argument {
            what: "AUTH mechanism",
            source,
        }
    })?);
    let reply = control.command(&auth, observer)?;
    if reply.code() == 234 {
        return Ok(true);
    }
    if mode == TlsMode::Auto {
        observer.warning(&format!(
            "the server lists AUTH TLS in FEAT but answered AUTH TLS with \"{reply}\"; going on in clear (--tls requires TLS)"
        ));
        return Ok(false);
    }
    Err(ClientError::NoTls {
        server: control.server(),
        answer: format!("answered AUTH TLS with \"{reply}\""),
    })
}

/// `PBSZ 0` and `PROT P` (RFC 4217 8, 9): every data connection private.
pub(crate) fn protect(
    control: &mut Control<ClientStream>,
    observer: &mut dyn Observer,
) -> Result<(), ClientError> {
    control.expect_completion(&Command::Pbsz(0), observer)?;
    control.expect_completion(&Command::Prot(ProtectionLevel::Private), observer)?;
    Ok(())
}

impl Control<ClientStream> {
    /// Runs the TLS handshake on the control connection after `234`.
    pub(crate) fn secure(&mut self, tls: &SessionTls) -> Result<(), ClientError> {
        let server = self.server();
        if !self.input().is_drained() {
            return Err(ClientError::Unexpected {
                server,
                command: "AUTH TLS".to_owned(),
                reply: "234".to_owned(),
                problem: "the server sent more before the TLS handshake".to_owned(),
            });
        }
        let ClientStream::Plain(socket) = self.stream() else {
            return Ok(());
        };
        let dup = socket
            .try_clone()
            .map_err(|source| ClientError::ControlIo {
                op: "dup the control socket".to_owned(),
                server,
                source,
            })?;
        let secured = tls.secure(dup, server, "control")?;
        self.replace_stream(ClientStream::tls(secured, server)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
