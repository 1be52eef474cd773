//! The cross-traffic sink: one port, TCP and UDP, everything discarded and
//! counted.
//!
//! TCP: an accept thread takes any number of connections, each read by its
//! own thread into a 256 KiB buffer until the sender's FIN, so the receive
//! window autotunes and never limits a sender (a buffer-limited flow is
//! limited at the sender). UDP: one thread receives datagrams into a
//! socket whose receive buffer is raised towards [`UDP_RCVBUF_REQUEST_BYTES`]
//! (read back in the report), and the kernel's count of datagrams the socket
//! itself dropped is reported, so that losses at the sink are not mistaken
//! for losses at the bottleneck.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rightsize_path::cross::IpVersion;
use serde::Serialize;

use super::{CrossError, MAX_ERRORS_KEPT, POLL_INTERVAL, Span, Times, is_timeout};
use crate::poll;
use crate::socket::{self, BufferApplied, BufferRequest};

/// `SO_RCVBUF` asked for on the UDP socket. The kernel keeps twice the
/// request capped at `rmem_max`: 8 MiB with the 4 MiB `rmem_max` seen here,
/// about 330 ms of 200 Mbit/s, so a briefly descheduled sink drops nothing.
pub const UDP_RCVBUF_REQUEST_BYTES: u64 = 16 * 1024 * 1024;

/// Bytes per `read()` of a TCP connection.
const TCP_READ_BYTES: usize = 256 * 1024;

/// Attempts to find a port free for both TCP and UDP when given port 0.
const PORT_ATTEMPTS: usize = 16;

/// What a [`Sink`] received, while running or after [`Sink::stop`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SinkReport {
    /// The address and port both protocols listen on.
    pub listen: SocketAddr,
    /// TCP payload bytes read, all connections.
    pub tcp_bytes: u64,
    /// TCP connections accepted.
    pub tcp_connections: u64,
    /// TCP connections still open (not yet at the sender's FIN).
    pub tcp_open: u64,
    /// TCP connections that ended with an error (a reset) instead of a FIN.
    pub tcp_errors: u64,
    /// UDP datagrams received.
    pub udp_datagrams: u64,
    /// UDP payload bytes received.
    pub udp_payload_bytes: u64,
    /// UDP as IP bytes (payload + 28 per datagram for IPv4, + 48 for IPv6),
    /// comparable with a source's `ip_bytes`.
    pub udp_ip_bytes: u64,
    /// Datagrams the sink's own socket dropped (receive buffer full), from
    /// `SO_MEMINFO`; `None` if the kernel would not say.
    pub udp_socket_drops: Option<u64>,
    /// The UDP socket's `SO_RCVBUF` as requested and read back.
    pub udp_rcvbuf: BufferApplied,
    /// Start, stop and elapsed time.
    #[serde(flatten)]
    pub times: Times,
    /// The first few errors seen (accept, read, receive).
    pub errors: Vec<String>,
}

#[derive(Debug, Default)]
struct Counters {
    tcp_bytes: AtomicU64,
    tcp_accepted: AtomicU64,
    tcp_closed: AtomicU64,
    tcp_errors: AtomicU64,
    udp_datagrams: AtomicU64,
    udp_bytes: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl Counters {
    fn note(&self, message: String) {
        if let Ok(mut errors) = self.errors.lock()
            && errors.len() < MAX_ERRORS_KEPT
        {
            errors.push(message);
        }
    }
}

/// A running sink; dropping it stops it.
#[derive(Debug)]
pub struct Sink {
    listen: SocketAddr,
    udp: UdpSocket,
    udp_rcvbuf: BufferApplied,
    counters: Arc<Counters>,
    span: Arc<Span>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Sink {
    /// Listens for TCP and UDP on `addr` (port 0: a port free for both,
    /// read it with [`Sink::local_addr`]) and starts discarding.
    pub fn start(addr: SocketAddr) -> Result<Sink, CrossError> {
        let (listener, udp) = bind_both(addr)?;
        let listen = listener.local_addr().map_err(|source| CrossError::Os {
            call: "getsockname",
            addr,
            source,
        })?;
        let os = |call| {
            move |source| CrossError::Os {
                call,
                addr: listen,
                source,
            }
        };
        let udp_rcvbuf = socket::set_rcvbuf(&udp, UDP_RCVBUF_REQUEST_BYTES, false)?;
        udp.set_read_timeout(Some(POLL_INTERVAL))
            .map_err(os("setsockopt(SO_RCVTIMEO)"))?;
        let udp_reader = udp.try_clone().map_err(os("dup"))?;
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut sink = Sink {
            listen,
            udp,
            udp_rcvbuf,
            counters,
            span: Arc::new(Span::start()),
            stop,
            threads: Vec::new(),
        };
        let (counters, stop) = (Arc::clone(&sink.counters), Arc::clone(&sink.stop));
        sink.threads.push(spawn("sink UDP", move || {
            receive_udp(&udp_reader, &counters, &stop);
        })?);
        let (counters, stop) = (Arc::clone(&sink.counters), Arc::clone(&sink.stop));
        sink.threads.push(spawn("sink accept", move || {
            accept_tcp(&listener, &counters, &stop);
        })?);
        Ok(sink)
    }

    /// The address and port both protocols listen on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listen
    }

    /// The counters now.
    pub fn snapshot(&self) -> SinkReport {
        let c = &self.counters;
        let datagrams = c.udp_datagrams.load(Ordering::Relaxed);
        let payload = c.udp_bytes.load(Ordering::Relaxed);
        let ip = if self.listen.is_ipv4() {
            IpVersion::V4
        } else {
            IpVersion::V6
        };
        let accepted = c.tcp_accepted.load(Ordering::Relaxed);
        SinkReport {
            listen: self.listen,
            tcp_bytes: c.tcp_bytes.load(Ordering::Relaxed),
            tcp_connections: accepted,
            tcp_open: accepted.saturating_sub(c.tcp_closed.load(Ordering::Relaxed)),
            tcp_errors: c.tcp_errors.load(Ordering::Relaxed),
            udp_datagrams: datagrams,
            udp_payload_bytes: payload,
            udp_ip_bytes: payload + datagrams * ip.udp_overhead_bytes(),
            udp_socket_drops: socket_drops(self.udp.as_fd()),
            udp_rcvbuf: self.udp_rcvbuf.clone(),
            times: self.span.times(),
            errors: c.errors.lock().map(|e| e.clone()).unwrap_or_default(),
        }
    }

    /// Stops receiving (open connections are closed unread), joins the
    /// threads and returns the final counters.
    pub fn stop(mut self) -> SinkReport {
        self.finish();
        self.snapshot()
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                self.counters.note("a sink thread panicked".into());
            }
        }
        self.span.stop();
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.finish();
    }
}

fn spawn(
    what: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, CrossError> {
    std::thread::Builder::new()
        .name(format!("rightsize-{}", what.replace(' ', "-")))
        .spawn(body)
        .map_err(|source| CrossError::Spawn { what, source })
}

/// A TCP listener and a UDP socket on the same address and port.
fn bind_both(addr: SocketAddr) -> Result<(TcpListener, UdpSocket), CrossError> {
    let attempts = if addr.port() == 0 { PORT_ATTEMPTS } else { 1 };
    let mut last = None;
    for _ in 0..attempts {
        let (listener, _) = socket::listen(addr, &BufferRequest::default(), 128)?;
        let port = listener
            .local_addr()
            .map_err(|source| CrossError::Os {
                call: "getsockname",
                addr,
                source,
            })?
            .port();
        let udp_addr = SocketAddr::new(addr.ip(), port);
        match UdpSocket::bind(udp_addr) {
            Ok(udp) => return Ok((listener, udp)),
            Err(source) => {
                last = Some(CrossError::Os {
                    call: "bind(UDP)",
                    addr: udp_addr,
                    source,
                });
            }
        }
    }
    Err(last.unwrap_or(CrossError::BadAddress {
        input: addr.to_string(),
    }))
}

fn accept_tcp(listener: &TcpListener, counters: &Arc<Counters>, stop: &Arc<AtomicBool>) {
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match poll::readable(listener, POLL_INTERVAL) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(err) => {
                counters.note(format!("the TCP listener: {err}: {}", err.source));
                std::thread::sleep(POLL_INTERVAL);
                continue;
            }
        }
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(err) if is_timeout(&err) => continue,
            Err(err) => {
                // EMFILE and the like: note it, back off, keep serving the rest.
                counters.note(format!("accept: {err}"));
                std::thread::sleep(POLL_INTERVAL);
                continue;
            }
        };
        counters.tcp_accepted.fetch_add(1, Ordering::Relaxed);
        let (shared, stop_flag) = (Arc::clone(counters), Arc::clone(stop));
        match spawn("sink TCP", move || read_tcp(stream, &shared, &stop_flag)) {
            Ok(reader) => readers.push(reader),
            Err(err) => {
                // The connection went with the closure and is closed now.
                counters.note(err.to_string());
                counters.tcp_closed.fetch_add(1, Ordering::Relaxed);
            }
        }
        readers.retain(|r| !r.is_finished());
    }
    for reader in readers {
        if reader.join().is_err() {
            counters.note("a sink TCP reader panicked".into());
        }
    }
}

/// Reads one connection to its end (or until `stop`), discarding.
fn read_tcp(mut stream: TcpStream, counters: &Counters, stop: &AtomicBool) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "a closed peer".into());
    let mut buf = vec![0u8; TCP_READ_BYTES];
    if let Err(err) = stream.set_read_timeout(Some(POLL_INTERVAL)) {
        counters.note(format!("setsockopt(SO_RCVTIMEO) for {peer}: {err}"));
    }
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                counters.tcp_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(err) if is_timeout(&err) => {}
            Err(err) => {
                counters.tcp_errors.fetch_add(1, Ordering::Relaxed);
                counters.note(format!("read from {peer}: {err}"));
                break;
            }
        }
    }
    counters.tcp_closed.fetch_add(1, Ordering::Relaxed);
}

/// Receives datagrams until `stop`, discarding.
fn receive_udp(udp: &UdpSocket, counters: &Counters, stop: &AtomicBool) {
    // Any datagram fits: the largest UDP payload is 65,507 bytes over IPv4
    // and 65,527 over IPv6 (without jumbograms).
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        match udp.recv(&mut buf) {
            Ok(n) => {
                counters.udp_datagrams.fetch_add(1, Ordering::Relaxed);
                counters.udp_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(err) if is_timeout(&err) => {}
            // An ICMP error for something this socket sent: it sends nothing,
            // but the kernel may still report one; it is not fatal.
            Err(err) if err.raw_os_error() == Some(libc::ECONNREFUSED) => {}
            Err(err) => {
                counters.note(format!("recv on the UDP socket: {err}"));
                std::thread::sleep(POLL_INTERVAL);
            }
        }
    }
}

/// `SO_MEMINFO` (asm-generic value; mips and sparc use others).
#[cfg(not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64")))]
const SO_MEMINFO: libc::c_int = 55;

/// The socket's drop counter (`SK_MEMINFO_DROPS`), Linux 4.6 and later.
#[cfg(not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64")))]
fn socket_drops(fd: BorrowedFd<'_>) -> Option<u64> {
    let mut meminfo = [0u32; 16];
    let mut len = std::mem::size_of_val(&meminfo) as libc::socklen_t;
    // SAFETY: `meminfo` is valid for writes of `len` bytes for the call; the
    // kernel writes at most `len` bytes and stores the length in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            meminfo.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let drops = libc::SK_MEMINFO_DROPS as usize;
    let filled = len as usize / std::mem::size_of::<u32>();
    (rc == 0 && filled > drops).then(|| u64::from(meminfo[drops]))
}

#[cfg(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64"))]
fn socket_drops(_fd: BorrowedFd<'_>) -> Option<u64> {
    None
}
