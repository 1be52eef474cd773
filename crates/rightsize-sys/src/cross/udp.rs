//! The unresponsive UDP source: a connected UDP socket, one thread that
//! sleeps until rightsize-path's [`Pacer`] releases a batch and sends it with one
//! `sendmmsg`. ICMP errors (`ECONNREFUSED` when nothing listens) are counted
//! and ignored; local drops (`ENOBUFS`, a send buffer still full after
//! [`POLL_INTERVAL`]) are counted and skipped, so the source stays on its
//! schedule; only an error that would repeat forever stops it.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use rightsize_path::cross::{
    DEFAULT_UDP_PAYLOAD, IpVersion, MAX_BATCH_PACKETS, MAX_UDP_PAYLOAD_BYTES, OnOff, Pace, Pacer,
    UdpPlan,
};
use rightsize_tune::units::{BitRate, Bytes};
use serde::Serialize;

use super::{CrossError, POLL_INTERVAL, Span, Times, check_destination};

/// What a [`UdpSource`] sends, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpConfig {
    /// The sink's address.
    pub to: SocketAddr,
    /// The rate while on, counting IP packets (IP + UDP headers + payload).
    pub rate: BitRate,
    /// UDP payload per datagram; default [`DEFAULT_UDP_PAYLOAD`] (a
    /// 1,500-byte IPv4 packet).
    pub payload: Bytes,
    /// On/off pattern; `None` sends all the time.
    pub on_off: Option<OnOff>,
}

impl UdpConfig {
    /// A constant `rate` of 1,472-byte datagrams to `to`.
    pub fn new(to: SocketAddr, rate: BitRate) -> UdpConfig {
        UdpConfig {
            to,
            rate,
            payload: DEFAULT_UDP_PAYLOAD,
            on_off: None,
        }
    }
}

/// A UDP source's counters, while running or after [`UdpSource::stop`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UdpReport {
    /// The sink's address.
    pub to: SocketAddr,
    /// The source's own address.
    pub local: SocketAddr,
    /// The rate while on, bits per second of IP packets.
    pub rate_bps: u64,
    /// UDP payload per datagram, bytes.
    pub payload_bytes: u64,
    /// IP packet per datagram, bytes (payload + 28 for IPv4, + 48 for IPv6).
    pub packet_bytes: u64,
    /// On time of the pattern, seconds (`None`: constant rate).
    pub on_s: Option<f64>,
    /// Off time of the pattern, seconds.
    pub off_s: Option<f64>,
    /// Datagrams the kernel accepted.
    pub packets: u64,
    /// `packets * packet_bytes`: IP bytes sent.
    pub ip_bytes: u64,
    /// `ip_bytes * 8 / elapsed`, bits per second.
    pub ip_rate_bps: f64,
    /// Datagrams the schedule allowed by now ([`UdpPlan::packets_due`]); a
    /// source that keeps up is less than one batch below it. Once stopped,
    /// `packets + dropped_local + late_packets` is within one catch-up burst
    /// ([`UdpPlan::burst_packets`]) below it.
    pub scheduled_packets: u64,
    /// Datagrams left out of the schedule because the sending thread fell
    /// more than the catch-up depth (5 ms) behind: the host was too busy to
    /// pace. Unresponsive traffic does not make up for them later.
    pub late_packets: u64,
    /// ICMP errors reported back (`ECONNREFUSED`: nothing listens on the
    /// port; host or network unreachable). Counted and ignored: they cost
    /// no datagram and do not slow the source.
    pub refused: u64,
    /// Datagrams dropped on this host (`ENOBUFS`, send buffer full).
    pub dropped_local: u64,
    /// Start, stop and elapsed time.
    #[serde(flatten)]
    pub times: Times,
    /// Why the source stopped early, if it did.
    pub error: Option<String>,
}

#[derive(Debug, Default)]
struct Counters {
    packets: AtomicU64,
    refused: AtomicU64,
    dropped_local: AtomicU64,
    late: AtomicU64,
}

/// A running UDP source; dropping it stops it.
#[derive(Debug)]
pub struct UdpSource {
    plan: UdpPlan,
    to: SocketAddr,
    local: SocketAddr,
    counters: Arc<Counters>,
    span: Arc<Span>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Option<String>>>,
    error: Option<String>,
}

impl UdpSource {
    /// Checks `config`, connects a UDP socket to the sink and starts sending.
    pub fn start(config: UdpConfig) -> Result<UdpSource, CrossError> {
        let to = check_destination(config.to)?;
        let ip = if to.is_ipv4() {
            IpVersion::V4
        } else {
            IpVersion::V6
        };
        let plan = UdpPlan::new(config.rate, config.payload, ip, config.on_off)?;
        let os = |call| {
            move |source| CrossError::Os {
                call,
                addr: to,
                source,
            }
        };
        let any: SocketAddr = match ip {
            IpVersion::V4 => ([0, 0, 0, 0], 0).into(),
            IpVersion::V6 => ([0u16; 8], 0).into(),
        };
        let socket = UdpSocket::bind(any).map_err(os("bind(UDP)"))?;
        socket.connect(to).map_err(os("connect(UDP)"))?;
        socket
            .set_write_timeout(Some(POLL_INTERVAL))
            .map_err(os("setsockopt(SO_SNDTIMEO)"))?;
        let local = socket.local_addr().map_err(os("getsockname(UDP)"))?;
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let span = Arc::new(Span::start());
        let worker = Worker {
            socket,
            to,
            pacer: Pacer::new(plan),
            counters: Arc::clone(&counters),
            stop: Arc::clone(&stop),
            span: Arc::clone(&span),
        };
        let thread = std::thread::Builder::new()
            .name("rightsize-udp-source".into())
            .spawn(move || worker.run())
            .map_err(|source| CrossError::Spawn {
                what: "UDP source",
                source,
            })?;
        Ok(UdpSource {
            plan,
            to,
            local,
            counters,
            span,
            stop,
            thread: Some(thread),
            error: None,
        })
    }

    /// The counters now.
    pub fn snapshot(&self) -> UdpReport {
        let packets = self.counters.packets.load(Ordering::Relaxed);
        let elapsed = self.span.elapsed();
        let ip_bytes = packets * self.plan.packet_bytes();
        let secs = elapsed.as_secs_f64();
        UdpReport {
            to: self.to,
            local: self.local,
            rate_bps: self.plan.rate().bps(),
            payload_bytes: self.plan.payload_bytes(),
            packet_bytes: self.plan.packet_bytes(),
            on_s: self.plan.on_off().map(|p| p.on().as_secs_f64()),
            off_s: self.plan.on_off().map(|p| p.off().as_secs_f64()),
            packets,
            ip_bytes,
            ip_rate_bps: if secs > 0.0 {
                ip_bytes as f64 * 8.0 / secs
            } else {
                0.0
            },
            scheduled_packets: self.plan.packets_due(elapsed),
            refused: self.counters.refused.load(Ordering::Relaxed),
            dropped_local: self.counters.dropped_local.load(Ordering::Relaxed),
            late_packets: self.counters.late.load(Ordering::Relaxed),
            times: self.span.times(),
            error: self.error.clone(),
        }
    }

    /// Whether the sending thread ended on its own (after an error).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops sending, joins the thread and returns the final counters.
    pub fn stop(mut self) -> UdpReport {
        self.finish();
        self.snapshot()
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            self.error = thread
                .join()
                .unwrap_or_else(|_| Some("the UDP source thread panicked".into()));
        }
        self.span.stop();
    }
}

impl Drop for UdpSource {
    fn drop(&mut self) {
        self.finish();
    }
}

/// What the sending thread owns.
struct Worker {
    socket: UdpSocket,
    to: SocketAddr,
    pacer: Pacer,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    span: Arc<Span>,
}

/// The payload of every datagram: zeros, never written.
static ZEROS: [u8; MAX_UDP_PAYLOAD_BYTES as usize] = [0; MAX_UDP_PAYLOAD_BYTES as usize];

/// `PR_SET_TIMERSLACK` (`linux/prctl.h`); the libc crate lacks it on Linux.
const PR_SET_TIMERSLACK: libc::c_int = 29;
/// Timer slack for the pacing thread, nanoseconds (the default is 50 us).
const TIMER_SLACK_NS: libc::c_ulong = 1_000;

impl Worker {
    /// Sends until told to stop; returns the error that ended it early.
    /// The source's run time ends at its last poll, so that the schedule in
    /// the report is the one the pacer saw.
    fn run(mut self) -> Option<String> {
        let error = self.send_until_stopped();
        let now = self.span.elapsed();
        let _ = self.pacer.poll(now);
        self.note_late();
        self.span.stop_at(now);
        error
    }

    fn note_late(&self) {
        let late = self.pacer.late_packets();
        self.counters.late.store(late, Ordering::Relaxed);
    }

    fn send_until_stopped(&mut self) -> Option<String> {
        // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer and affects only
        // this thread. A failure only makes sleeps overshoot by up to 50 us,
        // which the token bucket absorbs, so its result is not checked.
        unsafe { libc::prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS) };
        let payload = usize::try_from(self.pacer.plan().payload_bytes()).unwrap_or(0);
        let mut batch = Batch::new(&ZEROS[..payload]);
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.span.elapsed();
            let pace = self.pacer.poll(now);
            self.note_late();
            match pace {
                Pace::Send(n) => {
                    if let Err(err) = self.send(&mut batch, n) {
                        return Some(format!("sendmmsg to {}: {err}", self.to));
                    }
                    self.pacer.sent(n);
                }
                Pace::WaitUntil(at) => {
                    std::thread::sleep(at.saturating_sub(now).min(POLL_INTERVAL));
                }
            }
        }
        None
    }

    /// Disposes of `n` datagrams: sent, refused or dropped, each counted.
    fn send(&self, batch: &mut Batch, n: u64) -> io::Result<()> {
        let mut left = n;
        while left > 0 {
            let chunk = left.min(MAX_BATCH_PACKETS);
            match batch.send(&self.socket, chunk) {
                Ok(sent) => {
                    self.counters.packets.fetch_add(sent, Ordering::Relaxed);
                    left -= sent;
                }
                Err(err) => match err.raw_os_error() {
                    Some(libc::EINTR) => {}
                    // An ICMP error about an earlier datagram, reported (and
                    // cleared) by this call, which sent nothing: unresponsive
                    // traffic counts it and sends again. Each error answers
                    // a datagram already sent, so this cannot loop forever.
                    Some(libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH) => {
                        self.counters.refused.fetch_add(1, Ordering::Relaxed);
                    }
                    // Full send buffer (timed out) or device queue: drop the rest.
                    Some(libc::EAGAIN | libc::ENOBUFS) => {
                        self.counters
                            .dropped_local
                            .fetch_add(left, Ordering::Relaxed);
                        left = 0;
                    }
                    _ => return Err(err),
                },
            }
        }
        Ok(())
    }
}

/// `sendmmsg` headers for up to [`MAX_BATCH_PACKETS`] copies of one payload.
struct Batch {
    /// Boxed so the headers' pointers to it stay put.
    iov: Box<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
}

impl Batch {
    fn new(payload: &'static [u8]) -> Batch {
        let mut iov = Box::new(libc::iovec {
            iov_base: payload.as_ptr().cast_mut().cast(),
            iov_len: payload.len(),
        });
        let iov_ptr: *mut libc::iovec = &mut *iov;
        let headers = (0..MAX_BATCH_PACKETS)
            .map(|_| {
                // SAFETY: msghdr and mmsghdr are plain C structs for which
                // all-zero is valid (no name, no control data).
                let mut header: libc::mmsghdr = unsafe { std::mem::zeroed() };
                header.msg_hdr.msg_iov = iov_ptr;
                header.msg_hdr.msg_iovlen = 1;
                header
            })
            .collect();
        Batch { iov, headers }
    }

    /// Sends `n` (1..=64) datagrams; returns how many the kernel took.
    fn send(&mut self, socket: &UdpSocket, n: u64) -> io::Result<u64> {
        debug_assert!(self.iov.iov_len <= ZEROS.len());
        let n = n.min(self.headers.len() as u64) as libc::c_uint;
        // SAFETY: `headers` holds at least `n` initialised mmsghdr whose one
        // iovec points at the static zero payload (read-only for the kernel,
        // which only reads it); the socket descriptor is live for the call.
        let rc = unsafe { libc::sendmmsg(socket.as_raw_fd(), self.headers.as_mut_ptr(), n, 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(rc as u64)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn refuses_wildcards_and_zero_rate_before_opening_a_socket() {
        let err = UdpSource::start(UdpConfig::new("127.0.0.1:9".parse().unwrap(), BitRate(0)))
            .unwrap_err();
        assert!(err.to_string().contains("UDP rate 0bit/s"), "{err}");
        let err = UdpSource::start(UdpConfig::new(
            "0.0.0.0:9".parse().unwrap(),
            BitRate(1_000_000),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("0.0.0.0:9"), "{err}");
        let mut config = UdpConfig::new("127.0.0.1:9".parse().unwrap(), BitRate(1_000_000));
        config.payload = Bytes(70_000);
        let err = UdpSource::start(config).unwrap_err();
        assert!(err.to_string().contains("70000 bytes"), "{err}");
    }
}
