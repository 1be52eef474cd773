//! The responder: echoes the peer's probes and sends it the trains it asks
//! for, from one UDP socket and one thread.
//!
//! Only datagrams whose source is the trusted peer address are read any
//! further; everything else is counted as a stranger and dropped, so a
//! responder never sends to an address it was not given. A train goes to
//! the requester's address and port (the peer's address, checked), only
//! for a request padded to one packet of the train and passed by rightsize-path's
//! `TrainGate` (spacing, lifetime budget). Echoes are the probe datagram
//! itself with its header rewritten: one per probe, the same size.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use rightsize_path::probe::wire::HEADER_BYTES;
use rightsize_path::probe::{
    Echo, MAX_TRAIN_PACKET_BYTES, Message, SeenWindow, TrainGate, TrainPacket, TrainRequest,
};

use super::io::send_train;
use super::{POLL_INTERVAL, ProbeError, is_timeout, same_host, spawn};

/// What a [`Responder`] has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// Probes echoed.
    pub echoed: u64,
    /// Trains sent.
    pub trains_served: u64,
    /// Train requests refused (undersized, too soon, budget spent).
    pub trains_refused: u64,
    /// Train packets the kernel would not take (a full send buffer).
    pub train_packets_dropped: u64,
    /// Datagrams from any address but the peer's, dropped unread.
    pub strangers: u64,
    /// Datagrams from the peer that are not a probe or a train request.
    pub ignored: u64,
    /// Receive and send errors other than timeouts.
    pub errors: u64,
}

#[derive(Debug, Default)]
struct Counters {
    echoed: AtomicU64,
    trains_served: AtomicU64,
    trains_refused: AtomicU64,
    train_packets_dropped: AtomicU64,
    strangers: AtomicU64,
    ignored: AtomicU64,
    errors: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// A running responder; dropping it stops its thread.
#[derive(Debug)]
pub struct Responder {
    local: SocketAddr,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Responder {
    /// Binds a UDP socket on `local` (port 0: any free port, see
    /// [`Responder::port`]) and starts answering datagrams from `peer`,
    /// and from no other address.
    pub fn bind(local: SocketAddr, peer: IpAddr) -> Result<Responder, ProbeError> {
        let os = |call| {
            move |source| ProbeError::Os {
                call,
                addr: local,
                source,
            }
        };
        let socket = UdpSocket::bind(local).map_err(os("bind(UDP)"))?;
        let local = socket.local_addr().map_err(os("getsockname"))?;
        socket
            .set_read_timeout(Some(POLL_INTERVAL))
            .map_err(os("setsockopt(SO_RCVTIMEO)"))?;
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            socket,
            peer,
            counters: Arc::clone(&counters),
            stop: Arc::clone(&stop),
            gate: TrainGate::new(),
            seen: SeenWindow::new(),
            started: Instant::now(),
        };
        let thread = spawn("probe responder", move || worker.run())?;
        Ok(Responder {
            local,
            counters,
            stop,
            thread: Some(thread),
        })
    }

    /// The UDP port it listens on.
    pub fn port(&self) -> u16 {
        self.local.port()
    }

    /// The address and port it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What it has done so far.
    pub fn stats(&self) -> ResponderStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ResponderStats {
            echoed: get(&c.echoed),
            trains_served: get(&c.trains_served),
            trains_refused: get(&c.trains_refused),
            train_packets_dropped: get(&c.train_packets_dropped),
            strangers: get(&c.strangers),
            ignored: get(&c.ignored),
            errors: get(&c.errors),
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Worker {
    socket: UdpSocket,
    peer: IpAddr,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    gate: TrainGate,
    seen: SeenWindow,
    started: Instant,
}

impl Worker {
    fn run(mut self) {
        // One byte more than the largest datagram served, so that a longer
        // one is still seen as long enough.
        let mut buf = vec![0u8; usize::from(MAX_TRAIN_PACKET_BYTES) + 1];
        let mut train = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            let (len, from) = match self.socket.recv_from(&mut buf) {
                Ok(got) => got,
                Err(err) if is_timeout(&err) => continue,
                Err(_) => {
                    // Nothing a peer sends should cause this; do not spin.
                    bump(&self.counters.errors, 1);
                    std::thread::sleep(POLL_INTERVAL);
                    continue;
                }
            };
            if !same_host(from.ip(), self.peer) {
                bump(&self.counters.strangers, 1);
                continue;
            }
            match Message::parse(&buf[..len]) {
                Ok(Message::Probe(p)) => self.echo(&mut buf[..len], p.seq, p.stamp, from),
                Ok(Message::TrainRequest(r)) => self.train(&r, len, from, &mut train),
                Ok(_) | Err(_) => bump(&self.counters.ignored, 1),
            }
        }
    }

    /// Rewrites the probe datagram in place as its echo and sends it back.
    fn echo(&mut self, datagram: &mut [u8], seq: u64, stamp: u64, to: SocketAddr) {
        self.seen.record(seq);
        let echo = Message::Echo(Echo {
            seq,
            stamp,
            seen: self.seen.mask_before(seq),
        });
        if echo.encode(datagram).is_err() {
            // Parse accepted it, so it holds a header; cannot happen.
            bump(&self.counters.ignored, 1);
            return;
        }
        match self.socket.send_to(datagram, to) {
            Ok(_) => bump(&self.counters.echoed, 1),
            Err(_) => bump(&self.counters.errors, 1),
        }
    }

    fn train(&mut self, request: &TrainRequest, len: usize, to: SocketAddr, buf: &mut Vec<u8>) {
        if self
            .gate
            .admit(request, len, self.started.elapsed())
            .is_err()
        {
            bump(&self.counters.trains_refused, 1);
            return;
        }
        let size = usize::from(request.packet_bytes).max(HEADER_BYTES);
        buf.clear();
        buf.resize(size * usize::from(request.packets), 0);
        for (index, packet) in (0..request.packets).zip(buf.chunks_exact_mut(size)) {
            let header = Message::TrainPacket(TrainPacket {
                train: request.train,
                index,
                packets: request.packets,
                stamp: request.stamp,
            });
            if header.encode(packet).is_err() {
                bump(&self.counters.ignored, 1);
                return;
            }
        }
        match send_train(&self.socket, to, buf, size) {
            Ok(sent) => {
                bump(&self.counters.trains_served, 1);
                let dropped = usize::from(request.packets).saturating_sub(sent);
                bump(&self.counters.train_packets_dropped, dropped as u64);
            }
            Err(_) => bump(&self.counters.errors, 1),
        }
    }
}
