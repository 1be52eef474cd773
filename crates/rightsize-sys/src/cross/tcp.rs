//! Responsive cross traffic: N bulk TCP flows to a sink, one thread each,
//! writing zeros as fast as TCP accepts them.
//!
//! With a window, each socket's `SO_SNDBUF` is set before `connect()` to
//! half the window (Linux doubles it; see
//! `rightsize_path::cross::sndbuf_request_for_window`), read back, and a
//! clamped value is refused with the `sysctl` that lifts it, so a flow never
//! runs with a smaller window than asked. Without one, send autotuning is
//! left on (up to `tcp_wmem[2]`). Stopping shuts each flow down with a FIN
//! after its last write, so a sink that reads to the end counts every byte
//! written.

use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rightsize_path::cross::{check_flows, sndbuf_request_for_window};
use rightsize_tune::units::Bytes;
use serde::Serialize;
use socket2::SockRef;

use super::{CrossError, POLL_INTERVAL, Span, Times, check_destination, is_timeout};
use crate::socket::{self, BufferApplied, BufferRequest};
use crate::tcp_info;

/// How long each flow's `connect()` may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes handed to each `send()`.
const WRITE_CHUNK_BYTES: usize = 256 * 1024;

/// What every flow writes: zeros, never modified.
static ZEROS: [u8; WRITE_CHUNK_BYTES] = [0; WRITE_CHUNK_BYTES];

/// What [`TcpSources`] run, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpConfig {
    /// The sink's address.
    pub to: SocketAddr,
    /// How many flows, 1..=`MAX_TCP_FLOWS` (256).
    pub flows: usize,
    /// Each flow's send buffer as the kernel keeps it, bytes: it bounds the
    /// bytes in flight (about 0.9 of it on Linux 6.18), so the flow runs
    /// at about `window / RTT`. `None`: send autotuning.
    pub window: Option<Bytes>,
    /// `TCP_CONGESTION` for every flow (`cubic`, `reno`, `bbr`); `None`
    /// keeps the host's default.
    pub congestion: Option<String>,
    /// How long each `connect()` may take.
    pub connect_timeout: Duration,
}

impl TcpConfig {
    /// `flows` autotuned flows to `to` with the default congestion control.
    pub fn new(to: SocketAddr, flows: usize) -> TcpConfig {
        TcpConfig {
            to,
            flows,
            window: None,
            congestion: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

/// One flow's counters and what the kernel says about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TcpFlowReport {
    /// The flow's own address.
    pub local: SocketAddr,
    /// Bytes the kernel accepted from `send()`.
    pub bytes_written: u64,
    /// `SO_SNDBUF` as requested (half the window) and read back (about the
    /// window); `None` without a window.
    pub sndbuf: Option<BufferApplied>,
    /// The congestion control as read back.
    pub congestion: Option<String>,
    /// `TCP_INFO` now: bytes the sink acknowledged.
    pub bytes_acked: Option<u64>,
    /// `TCP_INFO`: segments retransmitted over the flow's life.
    pub total_retrans_segs: Option<u32>,
    /// `TCP_INFO`: smoothed RTT, microseconds.
    pub rtt_us: Option<u32>,
    /// `TCP_INFO`: time with data in flight, microseconds.
    pub busy_time_us: Option<u64>,
    /// `TCP_INFO`: part of `busy_time_us` limited by the send buffer.
    pub sndbuf_limited_us: Option<u64>,
    /// `TCP_INFO`: part of `busy_time_us` limited by the receive window.
    pub rwnd_limited_us: Option<u64>,
    /// Why the flow ended early (reset, broken pipe), if it did.
    pub error: Option<String>,
}

/// All flows' counters, while running or after [`TcpSources::stop`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TcpReport {
    /// The sink's address.
    pub to: SocketAddr,
    /// The window asked for, bytes (`None`: autotuned).
    pub window_bytes: Option<u64>,
    /// Bytes written over all flows.
    pub bytes_written: u64,
    /// `bytes_written * 8 / elapsed`, bits per second of payload.
    pub rate_bps: f64,
    /// Start, stop and elapsed time.
    #[serde(flatten)]
    pub times: Times,
    /// Each flow, in the order they connected.
    pub flows: Vec<TcpFlowReport>,
}

#[derive(Debug)]
struct Flow {
    /// Kept for `TCP_INFO`; the thread writes through a clone.
    stream: TcpStream,
    local: SocketAddr,
    sndbuf: Option<BufferApplied>,
    bytes: Arc<AtomicU64>,
    thread: Option<JoinHandle<Option<String>>>,
    error: Option<String>,
}

/// Running TCP flows; dropping them stops them.
#[derive(Debug)]
pub struct TcpSources {
    to: SocketAddr,
    window: Option<Bytes>,
    flows: Vec<Flow>,
    span: Arc<Span>,
    stop: Arc<AtomicBool>,
}

impl TcpSources {
    /// Checks `config`, connects every flow (settings applied before the
    /// handshake and read back), then starts them all writing.
    pub fn start(config: TcpConfig) -> Result<TcpSources, CrossError> {
        let to = check_destination(config.to)?;
        check_flows(config.flows)?;
        let request = BufferRequest {
            sndbuf: config.window.map(sndbuf_request_for_window).transpose()?,
            congestion: config.congestion.clone(),
            ..BufferRequest::default()
        };
        let mut connected = Vec::with_capacity(config.flows);
        for _ in 0..config.flows {
            let (stream, applied) = socket::connect(to, &request, config.connect_timeout)?;
            if let (Some(window), Some(sndbuf)) = (config.window, &applied.sndbuf)
                && let Some(clamped_by) = sndbuf.clamped_by
            {
                let fix = match sndbuf.lift_command() {
                    Some(command) => format!("raise it with `{command}`"),
                    None => "ask for a smaller window".to_owned(),
                };
                return Err(CrossError::WindowClamped {
                    window,
                    to,
                    applied_bytes: sndbuf.applied_bytes,
                    clamped_by,
                    fix,
                });
            }
            let os = |call| {
                move |source| CrossError::Os {
                    call,
                    addr: to,
                    source,
                }
            };
            stream
                .set_write_timeout(Some(POLL_INTERVAL))
                .map_err(os("setsockopt(SO_SNDTIMEO)"))?;
            let local = stream.local_addr().map_err(os("getsockname"))?;
            let writer = stream.try_clone().map_err(os("dup"))?;
            connected.push((stream, writer, local, applied.sndbuf));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let span = Arc::new(Span::start());
        let mut sources = TcpSources {
            to,
            window: config.window,
            flows: Vec::with_capacity(config.flows),
            span,
            stop,
        };
        for (stream, writer, local, sndbuf) in connected {
            let bytes = Arc::new(AtomicU64::new(0));
            let (count, stop) = (Arc::clone(&bytes), Arc::clone(&sources.stop));
            let thread = std::thread::Builder::new()
                .name("rightsize-tcp-source".into())
                .spawn(move || write_until_stopped(&writer, to, &count, &stop))
                .map_err(|source| CrossError::Spawn {
                    what: "TCP source",
                    source,
                })?;
            sources.flows.push(Flow {
                stream,
                local,
                sndbuf,
                bytes,
                thread: Some(thread),
                error: None,
            });
        }
        Ok(sources)
    }

    /// The counters and `TCP_INFO` of every flow now.
    pub fn snapshot(&self) -> TcpReport {
        let flows: Vec<TcpFlowReport> = self.flows.iter().map(Flow::report).collect();
        let bytes_written = flows.iter().map(|f| f.bytes_written).sum::<u64>();
        let secs = self.span.elapsed().as_secs_f64();
        TcpReport {
            to: self.to,
            window_bytes: self.window.map(Bytes::get),
            bytes_written,
            rate_bps: if secs > 0.0 {
                bytes_written as f64 * 8.0 / secs
            } else {
                0.0
            },
            times: self.span.times(),
            flows,
        }
    }

    /// Whether every flow has ended on its own (after errors).
    pub fn all_finished(&self) -> bool {
        self.flows
            .iter()
            .all(|f| f.thread.as_ref().is_none_or(JoinHandle::is_finished))
    }

    /// Stops writing, sends every flow's FIN, joins the threads and returns
    /// the final counters.
    pub fn stop(mut self) -> TcpReport {
        self.finish();
        self.snapshot()
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for flow in &mut self.flows {
            if let Some(thread) = flow.thread.take() {
                flow.error = thread
                    .join()
                    .unwrap_or_else(|_| Some("the TCP source thread panicked".into()));
            }
        }
        self.span.stop();
    }
}

impl Drop for TcpSources {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Flow {
    fn report(&self) -> TcpFlowReport {
        let info = tcp_info::read(&self.stream).ok();
        TcpFlowReport {
            local: self.local,
            bytes_written: self.bytes.load(Ordering::Relaxed),
            sndbuf: self.sndbuf.clone(),
            congestion: socket::congestion(&self.stream).ok(),
            bytes_acked: info.as_ref().and_then(|i| i.bytes_acked),
            total_retrans_segs: info.as_ref().map(|i| i.total_retrans_segs),
            rtt_us: info.as_ref().map(|i| i.rtt_us),
            busy_time_us: info.as_ref().and_then(|i| i.busy_time_us),
            sndbuf_limited_us: info.as_ref().and_then(|i| i.sndbuf_limited_us),
            rwnd_limited_us: info.as_ref().and_then(|i| i.rwnd_limited_us),
            error: self.error.clone(),
        }
    }
}

/// Writes zeros until `stop`, then shuts the sending side down. Returns the
/// error that ended the flow early, if any.
fn write_until_stopped(
    stream: &TcpStream,
    to: SocketAddr,
    bytes: &AtomicU64,
    stop: &AtomicBool,
) -> Option<String> {
    let socket = SockRef::from(stream);
    while !stop.load(Ordering::Relaxed) {
        // MSG_NOSIGNAL: a reset peer is an error here, not a SIGPIPE.
        match socket.send_with_flags(&ZEROS, libc::MSG_NOSIGNAL) {
            Ok(n) => {
                bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(err) if is_timeout(&err) => {}
            Err(err) => {
                let local = stream
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                return Some(format!("send from {local} to {to}: {err}"));
            }
        }
    }
    // The FIN goes after the data already written, which the kernel still
    // delivers after close.
    match stream.shutdown(Shutdown::Write) {
        Ok(()) => None,
        Err(err) => Some(format!("shutdown(SHUT_WR) of the flow to {to}: {err}")),
    }
}
