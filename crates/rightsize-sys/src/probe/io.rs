//! The probe sockets' system calls that std lacks: `recvmsg` with the
//! kernel's `SO_TIMESTAMPNS` receive time, and `sendmmsg` of a whole train
//! in one call (so that its packets leave back to back, not one system
//! call apart).

use std::io;
use std::mem;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libc::c_int;
use socket2::SockAddr;

/// Asks the kernel to stamp every datagram with its receive time
/// (`SO_TIMESTAMPNS`: `CLOCK_REALTIME`, nanoseconds, taken when the packet
/// enters the stack).
pub(super) fn enable_kernel_timestamps(socket: &UdpSocket) -> io::Result<()> {
    let on: c_int = 1;
    // SAFETY: the option value is a live c_int and its exact size is given;
    // the descriptor is open for the call.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const c_int).cast(),
            mem::size_of::<c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One datagram as `recvmsg` gave it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Received {
    /// Bytes of the datagram (the buffer holds at most its length).
    pub len: usize,
    /// The kernel's receive time, since the Unix epoch, if it stamped it.
    pub kernel: Option<Duration>,
}

/// Space for one `cmsghdr` carrying a `timespec`, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

/// Receives one datagram into `buf` with its kernel timestamp, if any.
/// Blocks for at most the socket's read timeout (`WouldBlock` then).
pub(super) fn recv_stamped(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
    let mut control = ControlBuffer([0; 64]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is a plain C struct for which all-zero is valid.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    // SAFETY: `msg` points at one iovec over `buf` and at `control`, both
    // live and writable for the call, with their true lengths.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, 0) };
    let Ok(len) = usize::try_from(n) else {
        return Err(io::Error::last_os_error());
    };
    let mut kernel = None;
    // SAFETY: the CMSG_* helpers walk the control buffer the kernel filled,
    // within `msg_controllen`; a SCM_TIMESTAMPNS message carries one
    // `timespec` (the 64-bit `SO_TIMESTAMPNS_OLD` layout, which is what
    // libc's SO_TIMESTAMPNS is on 64-bit Linux), read unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = libc::CMSG_DATA(cmsg)
                    .cast::<libc::timespec>()
                    .read_unaligned();
                if let (Ok(s), Ok(ns)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
                    kernel = Some(Duration::new(s, ns));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(Received { len, kernel })
}

/// The wall clock now, since the Unix epoch (the kernel stamps' clock).
pub(super) fn wall_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Sends each of `packets` (equal slices of `buf`, `packet_bytes` each) to
/// `to` with `sendmmsg`, as many per call as the kernel takes. Returns how
/// many were sent; a full buffer (`EAGAIN`, `ENOBUFS`) ends the train early.
pub(super) fn send_train(
    socket: &UdpSocket,
    to: SocketAddr,
    buf: &mut [u8],
    packet_bytes: usize,
) -> io::Result<usize> {
    let to = SockAddr::from(to);
    let mut iovs: Vec<libc::iovec> = buf
        .chunks_exact_mut(packet_bytes.max(1))
        .map(|p| libc::iovec {
            iov_base: p.as_mut_ptr().cast(),
            iov_len: p.len(),
        })
        .collect();
    let mut headers: Vec<libc::mmsghdr> = iovs
        .iter_mut()
        .map(|iov| {
            // SAFETY: mmsghdr is a plain C struct for which all-zero is valid.
            let mut h: libc::mmsghdr = unsafe { mem::zeroed() };
            h.msg_hdr.msg_name = to.as_ptr().cast_mut().cast();
            h.msg_hdr.msg_namelen = to.len();
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect();
    let mut sent = 0;
    while sent < headers.len() {
        let rest = &mut headers[sent..];
        // SAFETY: every header points at the live `to` and at one iovec
        // over a live slice of `buf`; the kernel only reads them.
        let rc = unsafe {
            libc::sendmmsg(
                socket.as_raw_fd(),
                rest.as_mut_ptr(),
                rest.len() as libc::c_uint,
                0,
            )
        };
        match usize::try_from(rc) {
            Ok(n) if n > 0 => sent += n,
            Ok(_) => break,
            Err(_) => {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EINTR) => {}
                    Some(libc::EAGAIN | libc::ENOBUFS) => break,
                    _ => return Err(err),
                }
            }
        }
    }
    Ok(sent)
}

/// Turns receive times into times since the data connection opened.
///
/// With a kernel stamp `K` (wall clock) read back at `U` (monotonic, since
/// open) and `W` (wall clock), the arrival is `U - (W - K)`: the time the
/// datagram waited in the socket is taken off. Within one train only the
/// first packet is placed so; the others follow by `K - K0`, so that the
/// dispersion is the kernel's alone, whatever the wake-ups cost. Without a
/// kernel stamp the arrival is `U`.
#[derive(Debug, Default)]
pub(super) struct Stamper {
    /// The train's first kernel stamp and its arrival.
    anchor: Option<(Duration, Duration)>,
}

impl Stamper {
    /// Starts a new train.
    pub fn reset(&mut self) {
        self.anchor = None;
    }

    /// The arrival of a datagram read at `user` (since open) and `wall`.
    pub fn arrival(
        &mut self,
        user: Duration,
        wall: Duration,
        kernel: Option<Duration>,
    ) -> Duration {
        let Some(k) = kernel else {
            return user;
        };
        match self.anchor {
            Some((k0, at0)) if k >= k0 => at0.saturating_add(k - k0),
            Some((k0, at0)) => at0.saturating_sub(k0 - k),
            None => {
                let at = user.saturating_sub(wall.saturating_sub(k));
                self.anchor = Some((k, at));
                at
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_train_follows_the_kernel_stamps_from_its_first_packet() {
        let s = Duration::from_secs;
        let us = Duration::from_micros;
        let mut stamper = Stamper::default();
        // Read 2 ms after open, 300 us after the kernel stamped it.
        let first = stamper.arrival(s(2) / 1000, s(1_000) + us(300), Some(s(1_000)));
        assert_eq!(first, us(1_700));
        // The next is read much later, but arrived 12 us after the first.
        let next = stamper.arrival(s(1), s(1_005), Some(s(1_000) + us(12)));
        assert_eq!(next, us(1_712));
        stamper.reset();
        assert_eq!(stamper.arrival(us(5), s(9), None), us(5));
        // A wall clock behind the stamp (stepped back) costs nothing.
        assert_eq!(stamper.arrival(us(5), s(9), Some(s(10))), us(5));
    }
}
