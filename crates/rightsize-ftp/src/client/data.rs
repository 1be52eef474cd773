//! The data connection: passive (`EPSV`, else `PASV`; RFC 2428 section 3,
//! RFC 959 4.1.2) or active (`EPRT` or `PORT`), made by
//! `rightsize_sys::socket` so the requested buffers are in force before
//! the handshake and read back.
//!
//! Guarantees: a passive connection goes to the control peer's address with
//! the port from the reply, never to another host a `227` names (servers
//! behind NAT announce private addresses; a hostile one could aim us
//! elsewhere). An active listener accepts only a connection from the
//! control peer's address and gives up after the connect timeout.

use crate::client::secure::ClientStream;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::addr::{find_epsv_port, find_pasv_address};
use rightsize_sys::poll;
use rightsize_sys::socket::{self, Applied, BufferRequest};
use serde::Serialize;

use super::control::Control;
use super::error::ClientError;
use super::features::Features;
use super::{Observer, Options};

/// How the data connection was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum DataMode {
    /// Extended passive (RFC 2428 3): the server listens on a port.
    Epsv,
    /// Passive (RFC 959 4.1.2), after `EPSV` was refused.
    Pasv,
    /// Extended active (RFC 2428 2): the client listens.
    Eprt,
    /// Active (RFC 959 4.1.2), IPv4 only.
    Port,
}

impl DataMode {
    /// The command that set it up.
    pub fn verb(self) -> &'static str {
        match self {
            DataMode::Epsv => "EPSV",
            DataMode::Pasv => "PASV",
            DataMode::Eprt => "EPRT",
            DataMode::Port => "PORT",
        }
    }
}

/// A data connection set up but not yet usable.
#[derive(Debug)]
pub(crate) enum Pending {
    /// Passive: already connected (before `RETR`/`STOR`, as RFC 959 asks).
    Connected(TcpStream, SocketAddr),
    /// Active: listening for the server, which connects after `RETR`/`STOR`.
    Listening(TcpListener, SocketAddr),
}

/// The data connection being made, and what its socket options became.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) mode: DataMode,
    pub(crate) pending: Pending,
    pub(crate) applied: Applied,
}

/// Asks for a passive port: `EPSV`, and `PASV` if that is refused (IPv4
/// only). Returns the mode and the port to connect to on the control peer.
pub(crate) fn passive_port<S: Read + Write>(
    control: &mut Control<S>,
    observer: &mut dyn Observer,
) -> Result<(DataMode, u16), ClientError> {
    let server = control.server();
    let epsv = Command::Epsv(None);
    let reply = control.command(&epsv, observer)?;
    if reply.code() == 229 {
        let port =
            find_epsv_port(&reply.text()).map_err(|e| unexpected(server, &epsv, &reply, e))?;
        return Ok((DataMode::Epsv, port));
    }
    if server.is_ipv6() || !reply.is_negative() {
        return Err(control.refused(&epsv, &reply));
    }
    let pasv = Command::Pasv;
    let reply = control.command(&pasv, observer)?;
    if reply.code() != 227 {
        return Err(control.refused(&pasv, &reply));
    }
    let announced =
        find_pasv_address(&reply.text()).map_err(|e| unexpected(server, &pasv, &reply, e))?;
    if IpAddr::V4(*announced.ip()) != server.ip().to_canonical() {
        observer.warning(&format!(
            "PASV reply names {}; connecting to the control peer {} instead",
            announced.ip(),
            server.ip()
        ));
    }
    Ok((DataMode::Pasv, announced.port()))
}

/// Sets up a passive data connection and connects it.
pub(crate) fn open_passive(
    control: &mut Control<ClientStream>,
    request: &BufferRequest,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Plan, ClientError> {
    let (mode, port) = passive_port(control, observer)?;
    let addr = SocketAddr::new(control.server().ip(), port);
    let (stream, applied) =
        socket::connect(addr, request, options.connect_timeout).map_err(|source| {
            ClientError::DataConnect {
                addr,
                mode: mode.verb(),
                source: Box::new(source),
            }
        })?;
    Ok(Plan {
        mode,
        pending: Pending::Connected(stream, addr),
        applied,
    })
}

/// Listens on the control connection's local address and announces it
/// with `EPRT` (IPv6, or advertised) or `PORT`; falls back to `PORT` if an
/// IPv4 `EPRT` is refused.
pub(crate) fn open_active(
    control: &mut Control<ClientStream>,
    features: &Features,
    request: &BufferRequest,
    observer: &mut dyn Observer,
) -> Result<Plan, ClientError> {
    let server = control.server();
    let local =
        control
            .stream()
            .socket()
            .local_addr()
            .map_err(|source| ClientError::ControlIo {
                op: "getsockname".to_owned(),
                server,
                source,
            })?;
    let bind = SocketAddr::new(local.ip(), 0);
    // Room for every connection MODE E's sender opens at once: with a
    // backlog of 1 the third SYN was dropped and came back a second later.
    let backlog = i32::try_from(rightsize_ftp_proto::mode_e::MAX_PARALLELISM).unwrap_or(64);
    let (listener, applied) =
        socket::listen(bind, request, backlog).map_err(|source| ClientError::DataConnect {
            addr: bind,
            mode: "EPRT/PORT",
            source: Box::new(source),
        })?;
    let listen_addr = listener
        .local_addr()
        .map_err(|source| ClientError::ControlIo {
            op: "getsockname of the data listener".to_owned(),
            server,
            source,
        })?;
    let mode = match listen_addr {
        SocketAddr::V6(_) => announce(control, DataMode::Eprt, listen_addr, observer)?,
        SocketAddr::V4(v4) if features.eprt() => {
            match announce(control, DataMode::Eprt, listen_addr, observer) {
                Ok(mode) => mode,
                Err(ClientError::Refused { .. }) => {
                    announce(control, DataMode::Port, SocketAddr::V4(v4), observer)?
                }
                Err(e) => return Err(e),
            }
        }
        SocketAddr::V4(_) => announce(control, DataMode::Port, listen_addr, observer)?,
    };
    Ok(Plan {
        mode,
        pending: Pending::Listening(listener, listen_addr),
        applied,
    })
}

fn announce(
    control: &mut Control<ClientStream>,
    mode: DataMode,
    addr: SocketAddr,
    observer: &mut dyn Observer,
) -> Result<DataMode, ClientError> {
    let command = match (mode, addr) {
        (DataMode::Port, SocketAddr::V4(v4)) => Command::Port(v4),
        _ => Command::Eprt(addr),
    };
    control.expect_completion(&command, observer)?;
    Ok(mode)
}

impl Pending {
    /// The usable data stream and its peer: at once when passive; when
    /// active, after the control peer connects (within `timeout`).
    pub(crate) fn establish(
        self,
        server: SocketAddr,
        mode: DataMode,
        timeout: Duration,
    ) -> Result<(TcpStream, SocketAddr), ClientError> {
        match self {
            Pending::Connected(stream, peer) => Ok((stream, peer)),
            Pending::Listening(listener, listen) => {
                let io_error = |source| ClientError::DataConnect {
                    addr: listen,
                    mode: mode.verb(),
                    source: Box::new(socket::SocketError::Os {
                        call: "accept",
                        target: socket::Target::Addr(listen),
                        source,
                    }),
                };
                match accept_from(&listener, server.ip(), Instant::now() + timeout) {
                    Ok(Some(accepted)) => Ok(accepted),
                    Ok(None) => Err(ClientError::AcceptTimeout {
                        server,
                        listen,
                        mode: mode.verb(),
                        timeout,
                    }),
                    Err(e) => Err(io_error(e)),
                }
            }
        }
    }
}

/// Accepts the first connection from `peer_ip` before `deadline`; others
/// are closed (RFC 2577: only the server may connect).
fn accept_from(
    listener: &TcpListener,
    peer_ip: IpAddr,
    deadline: Instant,
) -> io::Result<Option<(TcpStream, SocketAddr)>> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((stream, peer)) if peer.ip().to_canonical() == peer_ip.to_canonical() => {
                stream.set_nonblocking(false)?;
                return Ok(Some((stream, peer)));
            }
            Ok((stranger, _)) => drop(stranger),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                // Ready or not, the accept above says (a signal ends the wait early).
                poll::readable(listener, left)?;
            }
            Err(e) => return Err(e),
        }
    }
}

fn unexpected(
    server: SocketAddr,
    command: &Command,
    reply: &rightsize_ftp_proto::Reply,
    problem: impl std::fmt::Display,
) -> ClientError {
    ClientError::Unexpected {
        server,
        command: command.to_string(),
        reply: reply.to_string(),
        problem: problem.to_string(),
    }
}
