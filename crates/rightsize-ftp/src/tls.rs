//! TLS for FTPS (RFC 4217), with rustls (no OpenSSL): the server's
//! certificate and configuration, the client's verification, the control
//! channel as a sans-I/O pump for the thread that owns it, and blocking
//! TLS streams for data connections.
//!
//! Sessions resume: the server issues TLS 1.3 tickets ([`TICKETS`] per
//! handshake, enough for parallel streams, each ticket being single use)
//! and keeps TLS 1.2 sessions; a client keeps its sessions in its
//! configuration, so every data connection made with the same
//! [`ClientTls`] to the same server name resumes the control connection's
//! session (what vsftpd's `require_ssl_reuse` asks for).

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, Connection, DigitallySignedStruct, RootCertStore, ServerConfig,
    ServerConnection, SignatureScheme,
};
use sha2::{Digest, Sha256};

/// TLS 1.3 tickets a server sends after each handshake: one per data
/// connection a client may open on the session before the next handshake
/// brings more (a ticket is used once).
pub const TICKETS: usize = 8;

/// What went wrong setting TLS up or running it; each says what it read.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A certificate file holds no certificate.
    #[error("{path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// A key file holds no private key.
    #[error("{path} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// rustls refused the configuration (a key that does not match the
    /// certificate, say).
    #[error("TLS configuration: {0}")]
    Config(String),
    /// A certificate could not be made.
    #[error("cannot make a self-signed certificate: {0}")]
    SelfSigned(String),
    /// A `--pin-sha256` that is not 32 bytes of hex.
    #[error(
        "--pin-sha256 \"{input}\" is not a SHA-256 fingerprint: give 64 hex digits, with or without colons"
    )]
    BadPin {
        /// What was given.
        input: String,
    },
    /// No root certificate to verify servers with.
    #[error("no trusted root certificates: {0} (give --cacert FILE)")]
    NoRoots(String),
    /// A name TLS cannot verify a certificate for.
    #[error("\"{0}\" is not a host name or address a certificate can name")]
    BadName(String),
    /// The handshake or a record failed.
    #[error("TLS: {0}")]
    Protocol(String),
}

impl From<rustls::Error> for TlsError {
    fn from(e: rustls::Error) -> Self {
        TlsError::Protocol(e.to_string())
    }
}

/// The crypto rightsize uses: ring's, with the 128-bit AES-GCM suites
/// first (the 256-bit ones take 14 AES rounds per block instead of 10,
/// and 128 bits are what TLS 1.3 requires everyone to offer).
fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites.sort_by_key(|suite| {
        let name = format!("{:?}", suite.suite());
        (!name.contains("AES_128_GCM"), !name.starts_with("TLS13"))
    });
    Arc::new(provider)
}

/// The SHA-256 fingerprint of a certificate, as `openssl x509
/// -fingerprint -sha256` prints it (upper-case hex pairs and colons).
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let digest = Sha256::digest(cert.as_ref());
    let mut out = String::with_capacity(95);
    for (i, byte) in digest.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{byte:02X}");
    }
    out
}

/// A `--pin-sha256` fingerprint: 64 hex digits, colons allowed.
pub fn parse_pin(input: &str) -> Result<[u8; 32], TlsError> {
    let bad = || TlsError::BadPin {
        input: input.to_owned(),
    };
    let hex: Vec<u8> = input.bytes().filter(|&b| b != b':').collect();
    if hex.len() != 64 {
        return Err(bad());
    }
    let mut pin = [0u8; 32];
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).map_err(|_| bad())?;
        pin[i] = u8::from_str_radix(text, 16).map_err(|_| bad())?;
    }
    Ok(pin)
}

/// The bytes of `path`.
fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// The PEM certificates of `path` (at least one), and the file's bytes.
fn read_certificates(path: &Path) -> Result<(Vec<CertificateDer<'static>>, Vec<u8>), TlsError> {
    let bytes = read_file(path)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok((certs, bytes))
}

/// A server's TLS: its certificate and configuration.
#[derive(Debug, Clone)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
    fingerprint: String,
    /// The certificate, PEM (for a self-signed one, what clients trust).
    cert_pem: String,
}

impl ServerTls {
    /// The certificate chain and key of two PEM files.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        let (chain, cert_bytes) = read_certificates(cert)?;
        let key_der =
            PrivateKeyDer::from_pem_slice(&read_file(key)?).map_err(|_| TlsError::NoKey {
                path: key.to_owned(),
            })?;
        let cert_pem = String::from_utf8_lossy(&cert_bytes).into_owned();
        ServerTls::new(chain, key_der, cert_pem)
    }

    /// A certificate made now for `names` (host names or addresses), and
    /// its key; nothing is written to disk.
    pub fn self_signed(names: &[String]) -> Result<ServerTls, TlsError> {
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| TlsError::SelfSigned(e.to_string()))?;
        let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
            .map_err(|e| TlsError::SelfSigned(e.to_owned()))?;
        let pem = made.cert.pem();
        ServerTls::new(vec![made.cert.der().clone()], key, pem)
    }

    fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        cert_pem: String,
    ) -> Result<ServerTls, TlsError> {
        let fingerprint = fingerprint(&chain[0]);
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.ticketer =
            rustls::crypto::ring::Ticketer::new().map_err(|e| TlsError::Config(e.to_string()))?;
        config.send_tls13_tickets = TICKETS;
        // This order, not the client's: OpenSSL's clients put AES-256
        // first.
        config.ignore_client_order = true;
        // A TLS 1.3 sender seals its records itself, in place (see
        // `seal`): rustls hands over the keys once the handshake is done.
        config.enable_secret_extraction = true;
        Ok(ServerTls {
            config: Arc::new(config),
            fingerprint,
            cert_pem,
        })
    }

    /// The leaf certificate's SHA-256 fingerprint ([`fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A new server side of a connection.
    pub fn connection(&self) -> Result<ServerConnection, TlsError> {
        Ok(ServerConnection::new(Arc::clone(&self.config))?)
    }

    /// The server side of a data connection, its handshake done (within
    /// the socket's timeouts).
    pub fn accept(&self, stream: TcpStream) -> Result<TlsStream, TlsError> {
        let conn = Connection::Server(self.connection()?);
        TlsStream::handshake(conn, stream)
    }
}

/// How a client checks a server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verify {
    /// Against the system's root certificates, for the server's name.
    SystemRoots,
    /// Against the certificates of this PEM file, for the server's name.
    CaFile(PathBuf),
    /// The leaf certificate has this SHA-256 fingerprint; nothing else is
    /// checked.
    Pin([u8; 32]),
    /// Nothing is checked (curl's `-k`): anyone on the path can read and
    /// change the transfer.
    Insecure,
}

/// A client's TLS: its verification and its session cache, shared by the
/// control connection and every data connection.
#[derive(Debug, Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl ClientTls {
    /// A client that verifies as `verify` says.
    pub fn new(verify: &Verify) -> Result<ClientTls, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let config = match verify {
            Verify::SystemRoots => {
                let found = rustls_native_certs::load_native_certs();
                let mut roots = RootCertStore::empty();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    let why = found
                        .errors
                        .first()
                        .map_or_else(|| "none found".to_owned(), ToString::to_string);
                    return Err(TlsError::NoRoots(why));
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Verify::CaFile(path) => {
                let (certs, _) = read_certificates(path)?;
                let mut roots = RootCertStore::empty();
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(TlsError::NoCertificate { path: path.clone() });
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Verify::Pin(pin) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Accept::pinned(*pin)))
                .with_no_client_auth(),
            Verify::Insecure => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Accept::anything()))
                .with_no_client_auth(),
        };
        let mut config = config;
        // A download opens its records itself (see `open`): rustls hands
        // over the keys once the first data has come.
        config.enable_secret_extraction = true;
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// A new client side of a connection to `host` (a name or an address).
    pub fn connection(&self, host: &str) -> Result<ClientConnection, TlsError> {
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|_| TlsError::BadName(host.to_owned()))?
            .to_owned();
        Ok(ClientConnection::new(Arc::clone(&self.config), name)?)
    }

    /// The client side of a data connection to `host`, its handshake done
    /// (within the socket's timeouts): it resumes the control
    /// connection's session.
    pub fn connect(&self, host: &str, stream: TcpStream) -> Result<TlsStream, TlsError> {
        let conn = Connection::Client(self.connection(host)?);
        TlsStream::handshake(conn, stream)
    }
}

/// A verifier that checks a pin, or nothing; signatures are still
/// checked, so the peer holds the certificate's key.
#[derive(Debug)]
struct Accept {
    pin: Option<[u8; 32]>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl Accept {
    fn pinned(pin: [u8; 32]) -> Accept {
        Accept {
            pin: Some(pin),
            algorithms: provider().signature_verification_algorithms,
        }
    }

    fn anything() -> Accept {
        Accept {
            pin: None,
            algorithms: provider().signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for Accept {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.pin {
            Some(pin) if Sha256::digest(end_entity.as_ref()).as_slice() != pin => {
                Err(rustls::Error::General(format!(
                    "the server's certificate has the SHA-256 fingerprint {}, not the pinned one",
                    fingerprint(end_entity)
                )))
            }
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A control connection's TLS, driven by the one thread that owns the
/// connection: it hands in the bytes it read from the socket and gets the
/// plaintext; it writes through it. No lock, no thread of its own.
#[derive(Debug)]
pub struct Pump {
    conn: Connection,
}

impl Pump {
    /// A pump for `conn` (its handshake still to come).
    pub fn new(conn: impl Into<Connection>) -> Pump {
        Pump { conn: conn.into() }
    }

    /// Takes `raw` bytes read from the socket; returns the plaintext they
    /// carried, having written to `socket` what TLS answers (the
    /// handshake's replies). Empty plaintext and `Ok` at the peer's
    /// `close_notify` as before it: [`Pump::peer_closed`] tells.
    pub fn input(&mut self, mut raw: &[u8], socket: &mut dyn Write) -> Result<Vec<u8>, TlsError> {
        let mut plain = Vec::new();
        while !raw.is_empty() {
            let n = self
                .conn
                .read_tls(&mut raw)
                .map_err(|e| TlsError::Protocol(e.to_string()))?;
            if n == 0 {
                break;
            }
            let processed = self.conn.process_new_packets();
            // Whatever the outcome, send what TLS has to say (an alert
            // after an error).
            self.flush(socket)?;
            processed?;
            match self.conn.reader().read_to_end(&mut plain) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(TlsError::Protocol(e.to_string())),
            }
        }
        Ok(plain)
    }

    /// Whether the peer sent its `close_notify`.
    pub fn peer_closed(&mut self) -> bool {
        self.conn
            .process_new_packets()
            .is_ok_and(|state| state.peer_has_closed())
    }

    /// Whether the handshake is still going.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Writes `plain` through TLS to `socket` (held by TLS until the
    /// handshake is done).
    pub fn write_all(&mut self, plain: &[u8], socket: &mut dyn Write) -> io::Result<()> {
        self.conn.writer().write_all(plain)?;
        self.flush(socket).map_err(io::Error::other)
    }

    /// Sends `close_notify`.
    pub fn close(&mut self, socket: &mut dyn Write) {
        self.conn.send_close_notify();
        let _ = self.flush(socket);
    }

    fn flush(&mut self, socket: &mut dyn Write) -> Result<(), TlsError> {
        while self.conn.wants_write() {
            self.conn
                .write_tls(socket)
                .map_err(|e| TlsError::Protocol(format!("write: {e}")))?;
        }
        Ok(())
    }
}

/// A blocking TLS stream over a data connection.
#[derive(Debug)]
pub struct TlsStream {
    link: Link,
    sock: TcpStream,
    /// Bytes read from the socket and not yet handed to TLS: rustls reads
    /// 4 KiB at a time by itself, a system call each (a quarter of a
    /// million a second at 10 Gbit/s).
    raw: Box<[u8]>,
    raw_start: usize,
    raw_end: usize,
    /// Whether the handshake resumed an earlier session.
    resumed: bool,
    /// A download whose records are to be opened here once its first
    /// data arrives ([`TlsStream::receive_in_place`]).
    hand_over: bool,
}

/// Who protects a [`TlsStream`]'s records.
#[derive(Debug)]
enum Link {
    /// rustls.
    Rustls(Box<Connection>),
    /// This stream, with the keys rustls handed over (`open`).
    Opened(Box<open::Opened>),
    /// Neither: a handover failed midway.
    Broken,
}

/// Bytes a [`TlsStream`] reads from its socket at a time.
const RAW_READ_BYTES: usize = 256 * 1024;

/// The error of a [`TlsStream`] whose keys are no longer rustls's.
fn handed_over() -> io::Error {
    io::Error::other("TLS: this stream's keys were handed over for a download; it only receives")
}

impl TlsStream {
    fn handshake(mut conn: Connection, mut sock: TcpStream) -> Result<TlsStream, TlsError> {
        while conn.is_handshaking() {
            conn.complete_io(&mut sock)
                .map_err(|e| TlsError::Protocol(format!("handshake: {e}")))?;
        }
        let kind = match &conn {
            Connection::Client(c) => c.handshake_kind(),
            Connection::Server(s) => s.handshake_kind(),
        };
        Ok(TlsStream {
            link: Link::Rustls(Box::new(conn)),
            sock,
            raw: vec![0u8; RAW_READ_BYTES].into_boxed_slice(),
            raw_start: 0,
            raw_end: 0,
            resumed: kind == Some(rustls::HandshakeKind::Resumed),
            hand_over: false,
        })
    }

    /// The rustls connection, while rustls has the keys.
    fn rustls(&mut self) -> io::Result<&mut Connection> {
        match &mut self.link {
            Link::Rustls(conn) => Ok(conn),
            Link::Opened(_) | Link::Broken => Err(handed_over()),
        }
    }

    /// Whether the keys may be taken from rustls for a transfer of
    /// `length` bytes (as far as is known): TLS 1.3, and a length that
    /// fits one key ([`record::fits_one_key`]; no key update is needed).
    fn keys_may_be_taken(&self, length: Option<u64>) -> bool {
        matches!(&self.link, Link::Rustls(conn)
                if conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3))
            && record::fits_one_key(length)
    }

    /// Reads the socket into `raw` after what it holds (blocking within
    /// its timeout); returns the bytes read, 0 at its end.
    fn read_socket(&mut self) -> io::Result<usize> {
        loop {
            match self.sock.read(&mut self.raw[self.raw_end..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(n) => {
                    self.raw_end += n;
                    return Ok(n);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands TLS more of what the socket brought, reading the socket (one
    /// large read, blocking within its timeout) when nothing is left; at
    /// its end, tells TLS so. Before a handover, whole records only, so
    /// that rustls holds none half read when it hands over.
    fn feed(&mut self) -> io::Result<()> {
        let end = if self.hand_over {
            self.whole_record()?.unwrap_or(self.raw_end)
        } else {
            if self.raw_start == self.raw_end {
                (self.raw_start, self.raw_end) = (0, 0);
                self.read_socket()?;
            }
            self.raw_end
        };
        let Link::Rustls(conn) = &mut self.link else {
            return Err(handed_over());
        };
        let mut rest = &self.raw[self.raw_start..end];
        // Nothing left: an empty read is how rustls learns of the end.
        // rustls takes 4 KiB or so per call; a whole record before a
        // handover (it has room for one).
        loop {
            let taken = conn.read_tls(&mut rest)?;
            self.raw_start += taken;
            if !self.hand_over || rest.is_empty() || taken == 0 {
                break;
            }
        }
        let processed = conn.process_new_packets();
        // Whatever the outcome, what TLS has to say (an alert after an
        // error).
        self.send_pending()?;
        processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(())
    }

    /// Makes `raw` hold a whole record from `raw_start` (moving a part
    /// record to the front and reading the socket as needed); returns
    /// where it ends, or `None` at the socket's end.
    fn whole_record(&mut self) -> io::Result<Option<usize>> {
        use record::{HEADER_BYTES, MAX_BODY_BYTES};
        loop {
            let held = &self.raw[self.raw_start..self.raw_end];
            if let Some(header) = held.get(..HEADER_BYTES) {
                let body = usize::from(u16::from_be_bytes([header[3], header[4]]));
                if body > MAX_BODY_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "TLS: a record of {body} bytes, more than the {MAX_BODY_BYTES} TLS allows"
                        ),
                    ));
                }
                if held.len() >= HEADER_BYTES + body {
                    return Ok(Some(self.raw_start + HEADER_BYTES + body));
                }
            }
            if self.raw_start > 0 {
                self.raw.copy_within(self.raw_start..self.raw_end, 0);
                self.raw_end -= self.raw_start;
                self.raw_start = 0;
            }
            if self.read_socket()? == 0 {
                return Ok(None);
            }
        }
    }

    /// Writes to the socket every record TLS has ready.
    fn send_pending(&mut self) -> io::Result<()> {
        if let Link::Rustls(conn) = &mut self.link {
            while conn.wants_write() {
                conn.write_tls(&mut self.sock)?;
            }
        }
        Ok(())
    }

    /// The TCP socket under it (for `TCP_INFO`, buffers and shutdown).
    pub fn socket(&self) -> &TcpStream {
        &self.sock
    }

    /// Whether this connection resumed an earlier session.
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// Ends the stream as TLS wants it: `close_notify`, then the TCP FIN.
    pub fn finish(&mut self) -> io::Result<()> {
        match &mut self.link {
            Link::Rustls(conn) => conn.send_close_notify(),
            Link::Opened(opened) => opened.close_notify(&mut self.sock)?,
            Link::Broken => return Err(handed_over()),
        }
        self.flush()?;
        self.sock.shutdown(std::net::Shutdown::Write)
    }

    /// Plaintext without waiting: what is decrypted already, else what the
    /// socket holds now (one read if it is readable); `None` when nothing
    /// is there yet. `Some(0)` after the peer's `close_notify`.
    pub fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            match self.rustls()?.reader().read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.raw_start == self.raw_end
                && !rightsize_sys::poll::readable(&self.sock, Duration::ZERO).unwrap_or(false)
            {
                return Ok(None);
            }
            self.feed()?;
        }
    }
}

/// A TLS stream several threads use: during a transfer with the
/// RIGHTSIZE extension one reads the control connection while another
/// writes in-transfer commands on it. Each use locks it; a blocking read
/// holds the lock, so a thread that must not block the others reads with
/// [`SharedTls::read_ready`] after polling [`SharedTls::socket`].
#[derive(Debug, Clone)]
pub struct SharedTls {
    stream: Arc<Mutex<TlsStream>>,
    socket: Arc<TcpStream>,
}

impl SharedTls {
    /// `stream`, to be shared.
    pub fn new(stream: TlsStream) -> io::Result<SharedTls> {
        let socket = Arc::new(stream.socket().try_clone()?);
        Ok(SharedTls {
            stream: Arc::new(Mutex::new(stream)),
            socket,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TlsStream> {
        self.stream.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The TCP socket under it.
    pub fn socket(&self) -> &TcpStream {
        &self.socket
    }

    /// Whether it resumed an earlier session.
    pub fn resumed(&self) -> bool {
        self.lock().resumed()
    }

    /// [`TlsStream::finish`].
    pub fn finish(&self) -> io::Result<()> {
        self.lock().finish()
    }

    /// [`TlsStream::receive_in_place`].
    pub(crate) fn receive_in_place(&self, length: Option<u64>) {
        self.lock().receive_in_place(length);
    }

    /// [`TlsStream::read_ready`].
    pub fn read_ready(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.lock().read_ready(buf)
    }
}

impl Read for SharedTls {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.lock().read(buf)
    }
}

impl Write for SharedTls {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.lock().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.lock().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.lock().flush()
    }
}

impl Read for TlsStream {
    /// Reads plaintext; `Ok(0)` only after the peer's `close_notify`. A
    /// stream that ends without it (cut short, or by a peer that does not
    /// close TLS) is an `UnexpectedEof` error.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if matches!(self.link, Link::Opened(_)) {
            return self.read_opened(buf);
        }
        loop {
            match self.rustls()?.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.feed()?,
                Ok(n) if n > 0 && self.hand_over => {
                    self.take_over()?;
                    return Ok(n);
                }
                other => return other,
            }
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.rustls()?.writer().write(buf)?;
        self.send_pending()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Link::Rustls(conn) = &mut self.link {
            conn.writer().flush()?;
        }
        self.send_pending()
    }
}

mod open;
mod pipeline;
mod record;
mod seal;

#[cfg(test)]
pub(crate) mod tests;
