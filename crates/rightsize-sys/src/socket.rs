//! TCP sockets with their buffers, window clamp and congestion control set,
//! and every setting read back from the kernel.
//!
//! [`apply`] sets what a [`BufferRequest`] asks for and reports, in
//! [`Applied`], what the kernel actually kept, and which sysctl capped it.
//! [`listen`] and [`connect`] apply the request *before* `listen()` /
//! `connect()`, because Linux fixes the window scale at the handshake from
//! the buffer and clamp in force then (see `research/linux-tcp.md`); accepted
//! sockets inherit the listener's settings. [`set_rcvbuf`], [`set_sndbuf`]
//! and [`set_window_clamp`] are for tuners acting mid-transfer. Every error
//! names the system call and the descriptor or address it was given.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use libc::{c_int, socklen_t};

use rightsize_tune::host::SysctlKey;
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

/// What to set on a socket; `None` leaves the kernel's default (and, for the
/// buffers, its autotuning) alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BufferRequest {
    /// `SO_RCVBUF` request, bytes. The kernel doubles it, caps the request at
    /// `net.core.rmem_max` (unless `force`) and turns receive autotuning off.
    /// Set before the handshake it also lowers the window scale for good.
    pub rcvbuf: Option<u64>,
    /// `SO_SNDBUF` request, bytes. Doubled, capped at `net.core.wmem_max`
    /// (unless `force`); turns send autotuning off.
    pub sndbuf: Option<u64>,
    /// `TCP_WINDOW_CLAMP`, bytes: the largest receive window to advertise.
    /// Set before the handshake it also lowers the window scale.
    pub window_clamp: Option<u32>,
    /// `TCP_CONGESTION` name, such as `cubic`, `reno` or `bbr`.
    pub congestion: Option<String>,
    /// Use `SO_RCVBUFFORCE` / `SO_SNDBUFFORCE`, which pass `rmem_max` /
    /// `wmem_max` but need `CAP_NET_ADMIN`.
    pub force: bool,
}

/// One buffer as requested and as the kernel kept it.
///
/// "Clamped" means the kernel kept less than twice the request, twice being
/// what Linux stores for an uncapped request (it doubles to make room for
/// bookkeeping). The kernel also raises tiny requests to a floor
/// (`SOCK_MIN_RCVBUF` 2,304 and `SOCK_MIN_SNDBUF` 4,608 bytes on 6.18
/// x86-64); a read-back above twice the request is that floor, not a clamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferApplied {
    /// What was asked for, bytes.
    pub requested_bytes: u64,
    /// What `getsockopt` reports afterwards, bytes (normally 2 x requested).
    /// Only part of it becomes window: read `rcv_wnd_bytes` from `TCP_INFO`.
    pub applied_bytes: u64,
    /// Whether the `*FORCE` option was used.
    pub forced: bool,
    /// What capped it, if [`BufferApplied::applied_bytes`] is below 2 x
    /// requested: [`SysctlKey::RmemMax`]'s or [`SysctlKey::WmemMax`]'s name,
    /// [`KERNEL_REQUEST_LIMIT`], or [`UNEXPLAINED_CLAMP`].
    pub clamped_by: Option<&'static str>,
}

impl BufferApplied {
    /// The command that would lift a sysctl clamp, such as
    /// `sysctl -w net.core.rmem_max=67108864` (or pass `force`).
    pub fn lift_command(&self) -> Option<String> {
        let sysctl = self.clamped_by?;
        sysctl
            .starts_with("net.")
            .then(|| format!("sysctl -w {sysctl}={}", self.requested_bytes))
    }
}

/// `clamped_by` when a request exceeded what the kernel accepts per call:
/// it takes at most `INT_MAX / 2` bytes and doubles that (about 2 GiB).
pub const KERNEL_REQUEST_LIMIT: &str = "kernel limit (INT_MAX / 2 bytes per request)";

/// `clamped_by` when a forced request came back below 2 x requested for no
/// reason this module knows (an LSM or BPF hook, or a kernel change).
pub const UNEXPLAINED_CLAMP: &str = "unexplained (forced, yet below 2 x requested)";

/// The largest request the kernel doubles unchanged (`INT_MAX / 2`).
const MAX_REQUEST_BYTES: u64 = (i32::MAX / 2) as u64;

/// The window clamp as requested and as read back, bytes. The kernel raises
/// requests below `SOCK_MIN_RCVBUF / 2` (1,152 bytes on 6.18) to that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowClampApplied {
    /// What was asked for, bytes.
    pub requested_bytes: u32,
    /// What `getsockopt(TCP_WINDOW_CLAMP)` reports afterwards, bytes.
    pub applied_bytes: u32,
}

/// The congestion control as requested and as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CongestionApplied {
    /// The name asked for.
    pub requested: String,
    /// The name `getsockopt(TCP_CONGESTION)` reports afterwards.
    pub applied: String,
}

/// What [`apply`] set, each `None` where the request left it alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// `SO_RCVBUF` (or `SO_RCVBUFFORCE`).
    pub rcvbuf: Option<BufferApplied>,
    /// `SO_SNDBUF` (or `SO_SNDBUFFORCE`).
    pub sndbuf: Option<BufferApplied>,
    /// `TCP_WINDOW_CLAMP`.
    pub window_clamp: Option<WindowClampApplied>,
    /// `TCP_CONGESTION`.
    pub congestion: Option<CongestionApplied>,
}

/// A socket's buffers and window clamp as the kernel reports them now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferState {
    /// `SO_RCVBUF`, bytes (grows while receive autotuning is on).
    pub rcvbuf_bytes: u64,
    /// `SO_SNDBUF`, bytes (grows while send autotuning is on).
    pub sndbuf_bytes: u64,
    /// `TCP_WINDOW_CLAMP`, bytes (0 on a fresh socket; after the handshake
    /// the kernel sets it from the buffer, and autotuning moves it).
    pub window_clamp_bytes: u32,
}

/// What a failed call was acting on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A socket known only by its descriptor.
    Fd(RawFd),
    /// A socket about to be bound to, or connected to, an address.
    Socket {
        /// The descriptor.
        fd: RawFd,
        /// The address given to `listen` or `connect`.
        addr: SocketAddr,
    },
    /// An address, before there was a socket.
    Addr(SocketAddr),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Fd(fd) => write!(f, "fd {fd}"),
            Target::Socket { fd, addr } => write!(f, "fd {fd} for {addr}"),
            Target::Addr(addr) => write!(f, "{addr}"),
        }
    }
}

/// A socket call that failed.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// A system call failed; `call` is e.g. `setsockopt(SO_RCVBUF)` or `bind`.
    #[error("{call} on {target}")]
    Os {
        /// The call, with the option for `setsockopt` / `getsockopt`.
        call: &'static str,
        /// The descriptor or address.
        target: Target,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// `SO_RCVBUFFORCE` / `SO_SNDBUFFORCE` without `CAP_NET_ADMIN`.
    #[error(
        "{call} on {target}: passing {sysctl} needs CAP_NET_ADMIN; run as root, \
         grant it with `setcap cap_net_admin+ep <binary>`, or raise the limit with \
         `sysctl -w {sysctl}=<bytes>` and drop force"
    )]
    NeedsCapNetAdmin {
        /// The `*FORCE` call.
        call: &'static str,
        /// The descriptor or address.
        target: Target,
        /// The sysctl that force would have passed.
        sysctl: &'static str,
        /// What the OS said (`EPERM`).
        #[source]
        source: io::Error,
    },
    /// The congestion control is not loaded (or the name is not valid).
    #[error(
        "setsockopt(TCP_CONGESTION) on {target}: congestion control {name:?} is not available \
         on this kernel; /proc/sys/net/ipv4/tcp_available_congestion_control lists: {available}"
    )]
    UnknownCongestion {
        /// The descriptor or address.
        target: Target,
        /// The name asked for.
        name: String,
        /// The loaded ones, or why they could not be read.
        available: String,
    },
    /// The congestion control is loaded but not allowed without `CAP_NET_ADMIN`.
    #[error(
        "setsockopt(TCP_CONGESTION) on {target}: congestion control {name:?} is not in \
         net.ipv4.tcp_allowed_congestion_control and needs CAP_NET_ADMIN; add it with \
         `sysctl -w net.ipv4.tcp_allowed_congestion_control=\"<current list> {name}\"`"
    )]
    CongestionNotAllowed {
        /// The descriptor or address.
        target: Target,
        /// The name asked for.
        name: String,
    },
    /// `connect` did not complete in time.
    #[error("connect to {addr}: no answer within {timeout:?}")]
    ConnectTimedOut {
        /// The address.
        addr: SocketAddr,
        /// The timeout given.
        timeout: Duration,
    },
}

/// The receive or the send buffer: everything that differs between the two.
#[derive(Debug, Clone, Copy)]
struct Buffer {
    set: (c_int, &'static str),
    force: (c_int, &'static str),
    get: (c_int, &'static str),
    /// The sysctl that caps requests without force.
    sysctl: &'static str,
}

const RCV: Buffer = Buffer {
    set: (libc::SO_RCVBUF, "setsockopt(SO_RCVBUF)"),
    force: (libc::SO_RCVBUFFORCE, "setsockopt(SO_RCVBUFFORCE)"),
    get: (libc::SO_RCVBUF, "getsockopt(SO_RCVBUF)"),
    sysctl: SysctlKey::RmemMax.name(),
};

const SND: Buffer = Buffer {
    set: (libc::SO_SNDBUF, "setsockopt(SO_SNDBUF)"),
    force: (libc::SO_SNDBUFFORCE, "setsockopt(SO_SNDBUFFORCE)"),
    get: (libc::SO_SNDBUF, "getsockopt(SO_SNDBUF)"),
    sysctl: SysctlKey::WmemMax.name(),
};

/// Sets every option `req` asks for on `fd`, in the order receive buffer,
/// send buffer, window clamp, congestion control, and reads each back.
///
/// Stops at the first error; options set before it stay set.
pub fn apply(fd: impl AsFd, req: &BufferRequest) -> Result<Applied, SocketError> {
    let fd = fd.as_fd();
    apply_to(fd, req, Target::Fd(fd.as_raw_fd()))
}

fn apply_to(
    fd: BorrowedFd<'_>,
    req: &BufferRequest,
    target: Target,
) -> Result<Applied, SocketError> {
    let mut applied = Applied::default();
    if let Some(bytes) = req.rcvbuf {
        applied.rcvbuf = Some(set_buffer(fd, RCV, bytes, req.force, target)?);
    }
    if let Some(bytes) = req.sndbuf {
        applied.sndbuf = Some(set_buffer(fd, SND, bytes, req.force, target)?);
    }
    if let Some(bytes) = req.window_clamp {
        applied.window_clamp = Some(set_clamp(fd, bytes, target)?);
    }
    if let Some(name) = &req.congestion {
        applied.congestion = Some(set_cc(fd, name, target)?);
    }
    Ok(applied)
}

/// Sets `SO_RCVBUF` (or `SO_RCVBUFFORCE` with `force`) to `bytes` and reads it
/// back. Turns receive autotuning off for this socket; on a connected
/// socket the window scale stays what the handshake chose, so the window can
/// grow at most to `65535 << rcv_wscale` bytes.
pub fn set_rcvbuf(fd: impl AsFd, bytes: u64, force: bool) -> Result<BufferApplied, SocketError> {
    let fd = fd.as_fd();
    set_buffer(fd, RCV, bytes, force, Target::Fd(fd.as_raw_fd()))
}

/// Sets `SO_SNDBUF` (or `SO_SNDBUFFORCE` with `force`) to `bytes` and reads it
/// back. Turns send autotuning off for this socket.
pub fn set_sndbuf(fd: impl AsFd, bytes: u64, force: bool) -> Result<BufferApplied, SocketError> {
    let fd = fd.as_fd();
    set_buffer(fd, SND, bytes, force, Target::Fd(fd.as_raw_fd()))
}

/// Sets `TCP_WINDOW_CLAMP` to `bytes` and reads it back.
///
/// On a connected socket this limits the advertised window without turning
/// autotuning off, but on Linux 6.18 receive autotuning *overrides* the clamp
/// the next time it grows the buffer (`tcp_rcv_space_adjust` sets the clamp
/// from the new buffer): a tuner must read it back and re-apply, or set
/// `SO_RCVBUF` too. Set before the handshake, the clamp also lowers the
/// window scale for good. `0` is refused (`EINVAL`) except on a closed socket.
pub fn set_window_clamp(fd: impl AsFd, bytes: u32) -> Result<WindowClampApplied, SocketError> {
    let fd = fd.as_fd();
    set_clamp(fd, bytes, Target::Fd(fd.as_raw_fd()))
}

/// Sets `SO_MAX_PACING_RATE` to `bytes_per_second` and reads it back.
///
/// Besides capping the rate, the first call turns on TCP's own pacing
/// (`sk_pacing_status` goes from none to needed, Linux 4.13 and later), so
/// a window-limited sender spreads its bursts over time instead of sending
/// them at line rate. `u64::MAX` lifts the cap (pacing stays on).
pub fn set_max_pacing_rate(fd: impl AsFd, bytes_per_second: u64) -> Result<u64, SocketError> {
    let fd = fd.as_fd();
    let target = Target::Fd(fd.as_raw_fd());
    let os = |call: &'static str| {
        move |source| SocketError::Os {
            call,
            target,
            source,
        }
    };
    let value = bytes_per_second.to_ne_bytes();
    set_bytes(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &value)
        .map_err(os("setsockopt(SO_MAX_PACING_RATE)"))?;
    let mut buf = [0u8; 8];
    let len = get_bytes(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &mut buf)
        .map_err(os("getsockopt(SO_MAX_PACING_RATE)"))?;
    Ok(match len {
        8 => u64::from_ne_bytes(buf),
        4 => u64::from(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]])),
        _ => bytes_per_second,
    })
}

/// Resets a connection now: `connect()` to an `AF_UNSPEC` address, which
/// Linux turns into `tcp_disconnect()` (a RST to the peer, the socket back
/// to closed), whatever other descriptors still hold the socket.
///
/// A receiver that stops reading and only shuts its side down leaves a
/// sender blocked for good once the receive buffer is full: the window is
/// zero, so no new segment arrives that would draw Linux's reset for data
/// after `shutdown(SHUT_RD)`, and no reset comes on `close()` while a
/// second descriptor (a monitor's) keeps the socket open. A reset makes the
/// sender's next write fail at once.
pub fn reset(fd: impl AsFd) -> Result<(), SocketError> {
    let fd = fd.as_fd();
    // SAFETY: an all-zero `sockaddr` is a valid value (family AF_UNSPEC).
    let mut unspec: libc::sockaddr = unsafe { std::mem::zeroed() };
    unspec.sa_family = libc::AF_UNSPEC as libc::sa_family_t;
    let len = socklen_t::try_from(std::mem::size_of::<libc::sockaddr>()).unwrap_or(16);
    // SAFETY: `fd` is a live descriptor for the borrow; `unspec` is valid
    // for reads of `len` bytes, and the kernel copies it before returning.
    let rc = unsafe { libc::connect(fd.as_raw_fd(), &raw const unspec, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(os("connect(AF_UNSPEC)", Target::Fd(fd.as_raw_fd()))(
            io::Error::last_os_error(),
        ))
    }
}

/// Sets `TCP_CONGESTION` to `name` and reads it back.
pub fn set_congestion(fd: impl AsFd, name: &str) -> Result<CongestionApplied, SocketError> {
    let fd = fd.as_fd();
    set_cc(fd, name, Target::Fd(fd.as_raw_fd()))
}

/// Reads the congestion control a socket uses now.
pub fn congestion(fd: impl AsFd) -> Result<String, SocketError> {
    let fd = fd.as_fd();
    get_cc(fd, Target::Fd(fd.as_raw_fd()))
}

/// Reads a socket's buffers and window clamp, for telemetry.
pub fn read_buffers(fd: impl AsFd) -> Result<BufferState, SocketError> {
    let fd = fd.as_fd();
    let target = Target::Fd(fd.as_raw_fd());
    Ok(BufferState {
        rcvbuf_bytes: get_buffer(fd, RCV, target)?,
        sndbuf_bytes: get_buffer(fd, SND, target)?,
        window_clamp_bytes: get_clamp(fd, target)?,
    })
}

/// Opens a TCP listener on `addr` with `SO_REUSEADDR`, applying `req`
/// before `bind()` and `listen()` so accepted connections inherit it, window
/// scale included. Port 0 picks a free port; read it with `local_addr()`.
pub fn listen(
    addr: SocketAddr,
    req: &BufferRequest,
    backlog: i32,
) -> Result<(TcpListener, Applied), SocketError> {
    let socket = new_socket(addr)?;
    let target = Target::Socket {
        fd: socket.as_raw_fd(),
        addr,
    };
    socket
        .set_reuse_address(true)
        .map_err(os("setsockopt(SO_REUSEADDR)", target))?;
    let applied = apply_to(socket.as_fd(), req, target)?;
    socket.bind(&addr.into()).map_err(os("bind", target))?;
    socket.listen(backlog).map_err(os("listen", target))?;
    Ok((socket.into(), applied))
}

/// Connects to `addr` within `timeout`, applying `req` before `connect()` so
/// the handshake announces the window scale that follows from it.
pub fn connect(
    addr: SocketAddr,
    req: &BufferRequest,
    timeout: Duration,
) -> Result<(TcpStream, Applied), SocketError> {
    let socket = new_socket(addr)?;
    let target = Target::Socket {
        fd: socket.as_raw_fd(),
        addr,
    };
    let applied = apply_to(socket.as_fd(), req, target)?;
    socket
        .connect_timeout(&addr.into(), timeout)
        .map_err(|source| match source.kind() {
            io::ErrorKind::TimedOut => SocketError::ConnectTimedOut { addr, timeout },
            _ => SocketError::Os {
                call: "connect",
                target,
                source,
            },
        })?;
    Ok((socket.into(), applied))
}

fn new_socket(addr: SocketAddr) -> Result<Socket, SocketError> {
    Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(os("socket", Target::Addr(addr)))
}

fn set_buffer(
    fd: BorrowedFd<'_>,
    buffer: Buffer,
    bytes: u64,
    force: bool,
    target: Target,
) -> Result<BufferApplied, SocketError> {
    let (option, call) = if force { buffer.force } else { buffer.set };
    // The kernel caps larger requests at INT_MAX / 2 itself; pass what fits.
    let value = c_int::try_from(bytes).unwrap_or(c_int::MAX);
    set_int(fd, libc::SOL_SOCKET, option, value).map_err(|source| {
        if force && source.raw_os_error() == Some(libc::EPERM) {
            let sysctl = buffer.sysctl;
            SocketError::NeedsCapNetAdmin {
                call,
                target,
                sysctl,
                source,
            }
        } else {
            os(call, target)(source)
        }
    })?;
    let applied_bytes = get_buffer(fd, buffer, target)?;
    Ok(BufferApplied {
        requested_bytes: bytes,
        applied_bytes,
        forced: force,
        clamped_by: clamp_cause(bytes, applied_bytes, force, buffer.sysctl),
    })
}

fn get_buffer(fd: BorrowedFd<'_>, buffer: Buffer, target: Target) -> Result<u64, SocketError> {
    let (option, call) = buffer.get;
    let value = get_int(fd, libc::SOL_SOCKET, option).map_err(os(call, target))?;
    Ok(u64::try_from(value).unwrap_or(0))
}

/// Why the kernel kept less than `2 * requested`, or `None` if it did not.
fn clamp_cause(
    requested: u64,
    applied: u64,
    forced: bool,
    sysctl: &'static str,
) -> Option<&'static str> {
    if applied >= requested.saturating_mul(2) {
        // Doubled as asked, or raised to the SOCK_MIN floor: not a clamp.
        return None;
    }
    Some(
        if requested > MAX_REQUEST_BYTES && applied >= 2 * MAX_REQUEST_BYTES {
            KERNEL_REQUEST_LIMIT
        } else if !forced {
            sysctl
        } else {
            UNEXPLAINED_CLAMP
        },
    )
}

fn set_clamp(
    fd: BorrowedFd<'_>,
    bytes: u32,
    target: Target,
) -> Result<WindowClampApplied, SocketError> {
    let value = c_int::try_from(bytes).unwrap_or(c_int::MAX);
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, value)
        .map_err(os("setsockopt(TCP_WINDOW_CLAMP)", target))?;
    Ok(WindowClampApplied {
        requested_bytes: bytes,
        applied_bytes: get_clamp(fd, target)?,
    })
}

fn get_clamp(fd: BorrowedFd<'_>, target: Target) -> Result<u32, SocketError> {
    let value = get_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP)
        .map_err(os("getsockopt(TCP_WINDOW_CLAMP)", target))?;
    Ok(u32::try_from(value).unwrap_or(0))
}

/// `TCP_CA_NAME_MAX`: names are at most 15 bytes and a NUL.
const CA_NAME_MAX: usize = 16;

fn set_cc(
    fd: BorrowedFd<'_>,
    name: &str,
    target: Target,
) -> Result<CongestionApplied, SocketError> {
    let unknown = || SocketError::UnknownCongestion {
        target,
        name: name.to_owned(),
        available: available_congestion(),
    };
    // The kernel silently truncates longer names, which could pick another one.
    if name.is_empty() || name.len() >= CA_NAME_MAX || name.contains('\0') {
        return Err(unknown());
    }
    set_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes()).map_err(|source| {
        match source.raw_os_error() {
            Some(libc::ENOENT) => unknown(),
            Some(libc::EPERM) => SocketError::CongestionNotAllowed {
                target,
                name: name.to_owned(),
            },
            _ => os("setsockopt(TCP_CONGESTION)", target)(source),
        }
    })?;
    Ok(CongestionApplied {
        requested: name.to_owned(),
        applied: get_cc(fd, target)?,
    })
}

fn get_cc(fd: BorrowedFd<'_>, target: Target) -> Result<String, SocketError> {
    let mut buf = [0u8; CA_NAME_MAX];
    let len = get_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut buf)
        .map_err(os("getsockopt(TCP_CONGESTION)", target))?;
    Ok(nul_terminated(&buf[..len]))
}

/// The text up to the first NUL, as `TCP_CONGESTION` pads its answer.
fn nul_terminated(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn available_congestion() -> String {
    match crate::sysctl::read(SysctlKey::TcpAvailableCongestionControl) {
        Ok(text) => text.trim().to_owned(),
        Err(err) => format!("(unreadable: {err})"),
    }
}

fn os(call: &'static str, target: Target) -> impl Fn(io::Error) -> SocketError {
    move |source| SocketError::Os {
        call,
        target,
        source,
    }
}

pub(crate) fn set_int(
    fd: BorrowedFd<'_>,
    level: c_int,
    name: c_int,
    value: c_int,
) -> io::Result<()> {
    set_bytes(fd, level, name, &value.to_ne_bytes())
}

pub(crate) fn get_int(fd: BorrowedFd<'_>, level: c_int, name: c_int) -> io::Result<c_int> {
    let mut buf = [0u8; size_of::<c_int>()];
    let len = get_bytes(fd, level, name, &mut buf)?;
    if len != buf.len() {
        return Err(io::Error::other(format!(
            "kernel returned {len} bytes, expected an int"
        )));
    }
    Ok(c_int::from_ne_bytes(buf))
}

fn set_bytes(fd: BorrowedFd<'_>, level: c_int, name: c_int, value: &[u8]) -> io::Result<()> {
    let len = socklen_t::try_from(value.len()).map_err(io::Error::other)?;
    // SAFETY: `fd` is a live descriptor for the borrow; `value` is valid for
    // reads of `len` bytes, and the kernel copies it before returning.
    let rc = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.as_ptr().cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Fills `buf` with the option's value and returns how many bytes the kernel wrote.
pub(crate) fn get_bytes(
    fd: BorrowedFd<'_>,
    level: c_int,
    name: c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = socklen_t::try_from(buf.len()).map_err(io::Error::other)?;
    // SAFETY: `fd` is a live descriptor for the borrow; `buf` is valid for
    // writes of `len` bytes, and the kernel writes at most `len` bytes and
    // stores the count in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok((len as usize).min(buf.len()))
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const RMEM: &str = "net.core.rmem_max";

    #[test]
    fn clamp_means_less_than_twice_the_request() {
        let cases = [
            // (requested, read back, forced, clamped_by)
            (65_536, 131_072, false, None),
            // SO_RCVBUF = 1 reads back SOCK_MIN_RCVBUF (2,304): raised, not capped.
            (1, 2_304, false, None),
            // rmem_max 4 MiB: an 8 MiB request reads back 2 x 4 MiB.
            (8 << 20, 8 << 20, false, Some(RMEM)),
            // Above INT_MAX / 2 the kernel's own limit bites, forced or not ...
            (
                4 << 30,
                2 * MAX_REQUEST_BYTES,
                true,
                Some(KERNEL_REQUEST_LIMIT),
            ),
            (
                4 << 30,
                2 * MAX_REQUEST_BYTES,
                false,
                Some(KERNEL_REQUEST_LIMIT),
            ),
            // ... unless a small rmem_max bit first.
            (4 << 30, 8 << 20, false, Some(RMEM)),
            (1 << 20, 1 << 20, true, Some(UNEXPLAINED_CLAMP)),
        ];
        for (requested, applied, forced, want) in cases {
            let got = clamp_cause(requested, applied, forced, RMEM);
            assert_eq!(got, want, "{requested} -> {applied}, forced {forced}");
        }
    }

    #[test]
    fn lift_command_names_the_sysctl_and_the_request() {
        let applied = BufferApplied {
            requested_bytes: 67_108_864,
            applied_bytes: 8_388_608,
            forced: false,
            clamped_by: Some(RMEM),
        };
        assert_eq!(
            applied.lift_command().unwrap(),
            "sysctl -w net.core.rmem_max=67108864"
        );
        let kernel = BufferApplied {
            clamped_by: Some(KERNEL_REQUEST_LIMIT),
            ..applied
        };
        assert_eq!(kernel.lift_command(), None);
    }

    #[test]
    fn congestion_name_stops_at_the_first_nul() {
        assert_eq!(nul_terminated(b"cubic\0\0\0\0\0\0\0\0\0\0\0"), "cubic");
        assert_eq!(nul_terminated(b"reno"), "reno");
    }

    #[test]
    fn errors_name_the_call_and_target() {
        let addr: SocketAddr = "127.0.0.1:2121".parse().unwrap();
        let err = os("bind", Target::Socket { fd: 7, addr })(io::Error::from_raw_os_error(
            libc::EADDRINUSE,
        ));
        assert_eq!(err.to_string(), "bind on fd 7 for 127.0.0.1:2121");
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert!(source.is_some_and(|s| s.contains("in use")), "{err:?}");
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let err = read_buffers(&file).unwrap_err();
        assert!(
            err.to_string().starts_with("getsockopt(SO_RCVBUF) on fd "),
            "{err}"
        );
    }
}
