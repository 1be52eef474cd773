//! A logged-in control connection and the single commands a transfer needs
//! around the data: `SIZE`, `SBUF`, `CKSM`, `QUIT`.
//!
//! Guarantees: connecting tries every address the host resolves to, each
//! within the connect timeout; every later read and write on the control
//! connection has the idle timeout. Optional commands (`SIZE`, `SBUF`)
//! never fail a transfer: a refusal becomes `None` or a warning.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};

use rightsize_ftp_proto::checksum::{self, Algorithm};
use rightsize_ftp_proto::command::{OptsCommand, SiteCommand, SiteOther};
use std::num::NonZeroU16;

use rightsize_ftp_proto::rightsize::server_udp_port;
use rightsize_ftp_proto::url::{FtpUrl, Host};
use rightsize_ftp_proto::{Capability, Command, Reply, RightsizeOpts, Token};
use rightsize_sys::probe::Responder;
use rightsize_sys::socket::{self, BufferRequest};

use super::control::{self, Control, arg};
use super::error::ClientError;
use super::features::Features;
use super::secure::{self, ClientStream, SessionTls, TlsMode, TlsReport};
use super::{Observer, Options, SbufReport};
use crate::stream::DataStream;
use crate::tuning::{self, EarlyProbes};
use rightsize_tune::{Peer, Role, TunerSpec};

/// `CKSM <alg> 0 -1 <path>`: the server's checksum of the whole file.
pub(crate) fn cksm(algorithm: Algorithm, path: &[u8]) -> Result<Command, ClientError> {
    Ok(Command::Cksm {
        algorithm: Token::new(algorithm.name()).map_err(|source| ClientError::Argument {
            what: "checksum name",
            source,
        })?,
        offset: 0,
        length: None,
        path: arg(path, "path")?,
    })
}

/// A logged-in control connection in binary mode.
#[derive(Debug)]
pub(crate) struct Session<S> {
    pub(crate) control: Control<S>,
    pub(crate) features: Features,
    /// The server took `OPTS RIGHTSIZE ON`: sizes and reports flow during
    /// transfers, both ways.
    pub(crate) rightsize: bool,
    /// The server's UDP probe responder, if it named one.
    pub(crate) server_probe_port: Option<u16>,
    /// Ours, for a receiving server's probes.
    responder: Option<Responder>,
    /// Probes towards the server's responder, started before the data
    /// connection of a download ([`Session::probe_early`]).
    pub(crate) early_probes: Option<EarlyProbes>,
    /// The control connection's TLS, for the data connections (`None`:
    /// in clear).
    pub(crate) tls: Option<SessionTls>,
}

/// The size a `SIZE` reply gives (`213 N`), if it gives one.
pub(crate) fn size_in(reply: &Reply) -> Option<u64> {
    (reply.code() == 213)
        .then(|| reply.text().trim().parse().ok())
        .flatten()
}

/// Resolves the URL's host and opens the control connection.
pub(crate) fn connect(
    url: &FtpUrl,
    options: &Options,
) -> Result<(TcpStream, SocketAddr), ClientError> {
    let server = format!("{}:{}", url.host(), url.port());
    let addrs: Vec<SocketAddr> = match url.host() {
        Host::Ipv4(ip) => vec![SocketAddr::new((*ip).into(), url.port())],
        Host::Ipv6(ip) => vec![SocketAddr::new((*ip).into(), url.port())],
        Host::Name(name) => (name.as_str(), url.port())
            .to_socket_addrs()
            .map_err(|source| ClientError::Resolve {
                server: server.clone(),
                source,
            })?
            .collect(),
    };
    let mut last = None;
    for addr in addrs {
        match socket::connect(addr, &BufferRequest::default(), options.connect_timeout) {
            Ok((stream, _)) => return Ok((stream, addr)),
            Err(source) => last = Some((addr, source)),
        }
    }
    match last {
        Some((addr, source)) => Err(ClientError::Connect {
            server,
            addr,
            cause: Box::new(source),
        }),
        None => Err(ClientError::NoAddress { server }),
    }
}

/// A MODE E data connection to `peer` of a session whose TLS is `tls`.
fn mode_e_stream(
    tls: Option<&SessionTls>,
    stream: TcpStream,
    peer: SocketAddr,
) -> Result<DataStream, ClientError> {
    match tls {
        Some(tls) => tls
            .secure(stream, peer, "data")
            .map(|s| DataStream::Tls(Box::new(s))),
        None => Ok(DataStream::Plain(stream)),
    }
}

/// The control connection `stream` to `server`, up to and including TLS:
/// its timeouts, TLS at once for `ftps://`, the greeting, then `AUTH TLS`
/// as [`Options::tls`] says. Not logged in yet.
pub(crate) fn greeted(
    stream: TcpStream,
    server: SocketAddr,
    url: &FtpUrl,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<(Control<ClientStream>, Reply, Option<SessionTls>), ClientError> {
    if url.implicit_tls() && options.tls.mode == TlsMode::Off {
        return Err(ClientError::ImplicitWithoutTls {
            url: url.to_string(),
        });
    }
    let timeouts = stream
        .set_read_timeout(Some(options.idle_timeout))
        .and_then(|()| stream.set_write_timeout(Some(options.idle_timeout)))
        .and_then(|()| stream.set_nodelay(true));
    timeouts.map_err(|source| ClientError::ControlIo {
        op: "set the timeouts".to_owned(),
        server,
        source,
    })?;
    let mut tls = None;
    let stream = if url.implicit_tls() {
        let implicit = SessionTls::new(url, &options.tls.verify, server)?;
        let secured = implicit.secure(stream, server, "control")?;
        tls = Some(implicit);
        ClientStream::tls(secured, server)?
    } else {
        ClientStream::Plain(stream)
    };
    let mut control = Control::new(stream, server, options.idle_timeout);
    let greeting = control::greeting(&mut control, observer)?;
    if tls.is_none() {
        tls = secure::negotiate(&mut control, &greeting, url, &options.tls, observer)?;
    }
    Ok((control, greeting, tls))
}

impl Session<ClientStream> {
    /// Connects (with TLS at once for `ftps://`), reads the greeting, asks
    /// for TLS as [`Options::tls`] says (`AUTH TLS`, `PBSZ 0`, `PROT P`),
    /// logs in, reads `FEAT` and sets `TYPE I`.
    pub(crate) fn open(
        url: &FtpUrl,
        options: &Options,
        observer: &mut dyn Observer,
    ) -> Result<Session<ClientStream>, ClientError> {
        let (stream, server) = connect(url, options)?;
        let (mut control, greeting, tls) = greeted(stream, server, url, options, observer)?;
        if tls.is_some() {
            secure::protect(&mut control, observer)?;
        }
        let mut session = Session::logged_in(control, greeting, url, observer)?;
        session.tls = tls;
        Ok(session)
    }

    /// The data connection `socket` to `peer` as this session carries
    /// data: TLS (resuming the control connection's session) or clear.
    pub(crate) fn secure_data(
        &self,
        socket: TcpStream,
        peer: SocketAddr,
    ) -> Result<ClientStream, ClientError> {
        match &self.tls {
            Some(tls) => tls.data(socket, peer),
            None => Ok(ClientStream::Plain(socket)),
        }
    }

    /// A MODE E data connection of this session to `peer`: TLS under
    /// `PROT P` (resuming the session), else as it is.
    pub(crate) fn mode_e_stream(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<DataStream, ClientError> {
        mode_e_stream(self.tls.as_ref(), stream, peer)
    }

    /// [`Session::mode_e_stream`] for the threads that accept a MODE E
    /// transfer's connections (an error in words).
    pub(crate) fn mode_e_secure(
        &self,
    ) -> impl Fn(TcpStream) -> Result<DataStream, String> + Sync + use<> {
        let (tls, server) = (self.tls.clone(), self.control.server());
        move |stream| mode_e_stream(tls.as_ref(), stream, server).map_err(|e| e.to_string())
    }

    /// Turns the RIGHTSIZE extension on if the server offers it
    /// (docs/protocol.md); a refusal only leaves it off.
    pub(crate) fn rightsize_on(&mut self, observer: &mut dyn Observer) -> Result<(), ClientError> {
        let offered = self
            .features
            .rightsize()
            .is_some_and(|f| f.has(Capability::Sbuf) && f.has(Capability::Info));
        if !offered {
            return Ok(());
        }
        let udp_port = self.bind_responder();
        let opts = Command::Opts(OptsCommand::Rightsize(RightsizeOpts::On { udp_port }));
        let reply = self.control.command(&opts, observer)?;
        if reply.code() == 200 {
            self.rightsize = true;
            self.control.input().notices = true;
            self.server_probe_port = server_udp_port(&reply).map(NonZeroU16::get);
        } else {
            observer.warning(&format!(
                "the server offers RIGHTSIZE but answered {reply}; tuning this end alone"
            ));
        }
        Ok(())
    }

    /// Starts the packet trains that `tune` reads as a receiver towards
    /// the server's responder now, so that they cross the
    /// path while the transfer is set up rather than during its first
    /// round trips ([`EarlyProbes`]). Without the extension or a responder
    /// it does nothing; probes that cannot start leave the tuner without
    /// them, with a warning.
    pub(crate) fn probe_early(&mut self, tune: &TunerSpec, observer: &mut dyn Observer) {
        let Some(port) = self.server_probe_port.filter(|_| self.rightsize) else {
            return;
        };
        let to = SocketAddr::new(self.control.server().ip(), port);
        let inputs =
            tuning::build(tune, Role::Receiver, Peer::Rightsize, &Default::default()).inputs();
        // A tuner that also reads the probe stream (`sobas`) takes its
        // reports over the data connection's life: it probes with the data.
        if inputs.udp_probes {
            return;
        }
        match EarlyProbes::start(inputs, to) {
            Ok(probes) => self.early_probes = probes,
            Err(e) => observer.warning(&format!("no UDP probes to {to}: {e}; tuning without them")),
        }
    }

    /// A UDP responder for the server's probes (a receiving server's
    /// tuner may want packet trains), answering only the server's address.
    fn bind_responder(&mut self) -> Option<NonZeroU16> {
        let local = self.control.stream().socket().local_addr().ok()?;
        let server = self.control.server().ip();
        let responder = Responder::bind(SocketAddr::new(local.ip(), 0), server).ok()?;
        let port = NonZeroU16::new(responder.port());
        self.responder = Some(responder);
        port
    }
}

impl<S: Read + Write> Session<S> {
    /// The sequence after connecting: greeting, login, `FEAT`, `TYPE I`.
    #[cfg(test)]
    pub(crate) fn start(
        mut control: Control<S>,
        url: &FtpUrl,
        observer: &mut dyn Observer,
    ) -> Result<Session<S>, ClientError> {
        let greeting = control::greeting(&mut control, observer)?;
        Session::logged_in(control, greeting, url, observer)
    }

    /// The sequence after the greeting (and TLS): login, `FEAT`, `TYPE I`.
    pub(crate) fn logged_in(
        mut control: Control<S>,
        greeting: Reply,
        url: &FtpUrl,
        observer: &mut dyn Observer,
    ) -> Result<Session<S>, ClientError> {
        control::login(&mut control, url.user(), url.password(), observer)?;
        let feat = control.command(&Command::Feat, observer)?;
        let features = Features::new(&greeting, Some(&feat));
        control.expect_completion(
            &Command::Type(rightsize_ftp_proto::command::TransferType::Image),
            observer,
        )?;
        Ok(Session {
            control,
            features,
            rightsize: false,
            server_probe_port: None,
            responder: None,
            early_probes: None,
            tls: None,
        })
    }

    /// What TLS covered, with `data` the transfer's data connection
    /// (`None` in clear).
    pub(crate) fn tls_report(&self, data: &ClientStream) -> Option<TlsReport> {
        self.tls.as_ref().map(|tls| TlsReport {
            control: true,
            data: data.is_tls(),
            resumed: data.resumed(),
            implicit: tls.implicit,
        })
    }

    /// The remote file's size from `SIZE` (RFC 3659 4), `None` if refused.
    pub(crate) fn size(
        &mut self,
        path: &[u8],
        observer: &mut dyn Observer,
    ) -> Result<Option<u64>, ClientError> {
        let reply = self
            .control
            .command(&Command::Size(arg(path, "path")?), observer)?;
        Ok(size_in(&reply))
    }

    /// The bytes of a cut upload to `path` that a rightsize server kept
    /// (`SITE RIGHTSIZE PART`, when its FEAT lists `PART`); `None` if it
    /// kept none or cannot say.
    pub(crate) fn kept_part(
        &mut self,
        path: &[u8],
        observer: &mut dyn Observer,
    ) -> Result<Option<u64>, ClientError> {
        if !self
            .features
            .rightsize()
            .is_some_and(|f| f.has(Capability::Part))
        {
            return Ok(None);
        }
        let reply = self
            .control
            .command(&site_rightsize("PART", Some(path))?, observer)?;
        Ok(size_in(&reply))
    }

    /// `REST offset` (RFC 3659 5): the next transfer starts there.
    pub(crate) fn rest(
        &mut self,
        path: &[u8],
        offset: u64,
        observer: &mut dyn Observer,
    ) -> Result<(), ClientError> {
        let reply = self.control.command(&Command::Rest(offset), observer)?;
        if reply.code() == 350 {
            return Ok(());
        }
        Err(ClientError::NoRestart {
            server: self.control.server(),
            path: String::from_utf8_lossy(path).into_owned(),
            offset,
            reply: reply.to_string(),
        })
    }

    /// Sends `SBUF` if the server offers it; a refusal is a warning.
    pub(crate) fn sbuf(
        &mut self,
        requested_bytes: u64,
        observer: &mut dyn Observer,
    ) -> Result<SbufReport, ClientError> {
        if !self.features.sbuf() {
            let reply = "not sent: the server does not offer SBUF".to_owned();
            observer.warning(&format!("--sbuf {requested_bytes}: {reply}"));
            return Ok(SbufReport {
                requested_bytes,
                accepted: false,
                reply,
            });
        }
        let reply = self
            .control
            .command(&Command::Sbuf(requested_bytes), observer)?;
        if !reply.is_completion() {
            observer.warning(&format!(
                "the server refused SBUF {requested_bytes}: {reply}"
            ));
        }
        Ok(SbufReport {
            requested_bytes,
            accepted: reply.is_completion(),
            reply: reply.to_string(),
        })
    }

    /// Compares `local` with the server's checksum of `path`
    /// (`CKSM <alg> 0 -1 <path>`).
    pub(crate) fn verify(
        &mut self,
        algorithm: Algorithm,
        local: String,
        path: &[u8],
        observer: &mut dyn Observer,
    ) -> Result<super::ChecksumReport, ClientError> {
        let reply = self.control.command(&cksm(algorithm, path)?, observer)?;
        self.checked(algorithm, local, path, &reply)
    }

    /// What the server's `CKSM` `reply` for `path` says of `local`: a
    /// report when they match, else the mismatch or the refusal.
    pub(crate) fn checked(
        &self,
        algorithm: Algorithm,
        local: String,
        path: &[u8],
        reply: &Reply,
    ) -> Result<super::ChecksumReport, ClientError> {
        let value = reply.text().split_whitespace().next().map(str::to_owned);
        let remote = match value {
            Some(hex) if reply.code() == 213 => hex.to_ascii_lowercase(),
            _ => return Err(self.remote_error("CKSM", path, reply)),
        };
        if !checksum::matches(&local, &remote) {
            return Err(ClientError::ChecksumMismatch {
                server: self.control.server(),
                path: String::from_utf8_lossy(path).into_owned(),
                algorithm,
                local,
                remote,
            });
        }
        Ok(super::ChecksumReport {
            algorithm: Some(algorithm),
            local: Some(local),
            remote: Some(remote),
            verified: true,
            note: None,
        })
    }

    /// Sends a transfer's command (`RETR`, `STOR`, `MLSD`, `LIST`) and
    /// reads its first reply: `None` when the transfer began (1yz), the
    /// completion itself when the server answered at once; a refusal is the
    /// error.
    pub(crate) fn begin(
        &mut self,
        command: &Command,
        path: &[u8],
        observer: &mut dyn Observer,
    ) -> Result<Option<Reply>, ClientError> {
        let reply = self.control.command(command, observer)?;
        if reply.is_preliminary() {
            Ok(None)
        } else if reply.is_completion() {
            Ok(Some(reply))
        } else {
            Err(self.remote_error(command.verb(), path, &reply))
        }
    }

    /// The reply that ends a transfer: `early` if it came already, else
    /// the next one after the 1yz markers a GridFTP server sends before it
    /// (`111 Range Marker`, `112-Perf Marker`).
    pub(crate) fn ending(
        &mut self,
        verb: &str,
        early: Option<Reply>,
        observer: &mut dyn Observer,
    ) -> Result<Reply, ClientError> {
        if let Some(reply) = early {
            return Ok(reply);
        }
        loop {
            let reply = self.control.reply(verb, observer)?;
            if !reply.is_preliminary() {
                return Ok(reply);
            }
        }
    }

    /// The error for a failed `RETR`, `STOR` or `CKSM` of `path`.
    pub(crate) fn remote_error(
        &self,
        verb: &'static str,
        path: &[u8],
        reply: &Reply,
    ) -> ClientError {
        ClientError::RemoteFile {
            server: self.control.server(),
            verb,
            path: String::from_utf8_lossy(path).into_owned(),
            reply: reply.to_string(),
        }
    }

    /// Says goodbye; the transfer is complete, so errors do not matter.
    pub(crate) fn quit(mut self, observer: &mut dyn Observer) {
        let _ = self.control.command(&Command::Quit, observer);
    }
}

/// `SITE RIGHTSIZE <sub> [<arg>]`.
pub(crate) fn site_rightsize(sub: &str, argument: Option<&[u8]>) -> Result<Command, ClientError> {
    let args = match argument {
        Some(a) => [sub.as_bytes(), b" ", a].concat(),
        None => sub.as_bytes().to_vec(),
    };
    let name = Token::new(rightsize_ftp_proto::rightsize::EXTENSION).map_err(|source| {
        ClientError::Argument {
            what: "SITE name",
            source,
        }
    })?;
    let other = SiteOther::new(name, Some(arg(&args, "SITE argument")?)).map_err(|e| {
        ClientError::Unexpected {
            server: std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
            command: "SITE RIGHTSIZE".to_owned(),
            reply: String::new(),
            problem: e.to_string(),
        }
    })?;
    Ok(Command::Site(SiteCommand::Other(other)))
}
