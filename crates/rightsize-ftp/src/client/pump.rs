//! The control connection during a transfer with the RIGHTSIZE extension
//! on: a thread reads it so that the server's notices reach the tuner while
//! the data moves, and the tuner's sizes and reports go out as in-transfer
//! `SBUF` and `RINF` commands.
//!
//! Guarantees: the replies to those commands are recognised wherever they
//! come (before the `226`, after it, or refused with 500-504); on the first
//! refusal the client stops sending and tunes its own end only; every other
//! reply is kept, in order, for the main thread; a malformed notice is
//! recorded with its reason and never stops the transfer.

use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rightsize_ftp_proto::{PeerMessage, Reply};
use rightsize_sys::poll;
use rightsize_sys::telemetry::{Inbox, ToPeer};
use rightsize_tune::PeerInfo;
use rightsize_tune::units::Bytes;

use super::control::{Incoming, Input};
use super::secure::ClientStream;

/// How often the reader looks at its stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Malformed notices kept for the report.
const MAX_IGNORED: usize = 20;

/// What the in-transfer commands and their replies have come to, shared
/// by the sender (the monitor thread), the reader and the main thread.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    /// In-transfer commands sent.
    sent: AtomicU32,
    /// Of their replies, those read so far.
    answered: AtomicU32,
    /// The server refused one: send no more.
    refused: AtomicBool,
    /// Notices read and handed to the tuner.
    received: AtomicU32,
    /// Why notices were ignored.
    ignored: Mutex<Vec<String>>,
    /// The server's latest `RIGHTSIZE INFO`.
    last_info: Mutex<Option<PeerInfo>>,
}

impl Exchange {
    /// In-transfer commands sent.
    pub(crate) fn sent(&self) -> u32 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Notices handed to the tuner.
    pub(crate) fn received(&self) -> u32 {
        self.received.load(Ordering::SeqCst)
    }

    /// Replies still owed to in-transfer commands.
    pub(crate) fn owed(&self) -> u32 {
        self.sent
            .load(Ordering::SeqCst)
            .saturating_sub(self.answered.load(Ordering::SeqCst))
    }

    /// Whether `reply` answers an in-transfer command rather than the
    /// transfer: a transfer ends with 226/250 or 4yz/55z, never 200 or
    /// 500-504. Counts it if so.
    pub(crate) fn take_answer(&self, reply: &Reply) -> bool {
        let code = reply.code();
        if self.owed() == 0 || !(code == 200 || (500..=504).contains(&code)) {
            return false;
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
        if code != 200 {
            self.refused.store(true, Ordering::SeqCst);
            self.note(format!(
                "the server refused an in-transfer command ({reply}); tuning this end alone"
            ));
        }
        true
    }

    fn note(&self, text: String) {
        let mut ignored = self.ignored.lock().unwrap_or_else(PoisonError::into_inner);
        if ignored.len() < MAX_IGNORED {
            ignored.push(text);
        }
    }

    /// The server's latest `RIGHTSIZE INFO` facts.
    pub(crate) fn last_info(&self) -> Option<PeerInfo> {
        *self
            .last_info
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// What was ignored, for the report.
    pub(crate) fn ignored(&self) -> Vec<String> {
        self.ignored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The tuner's way to the server: writes `SBUF n` or `RINF facts` on a
/// clone of the control connection, until the server refuses one or a
/// write fails.
pub(crate) fn sender(
    mut control: ClientStream,
    exchange: Arc<Exchange>,
) -> Box<dyn FnMut(ToPeer) + Send> {
    Box::new(move |message| {
        if exchange.refused.load(Ordering::SeqCst) {
            return;
        }
        let message = match message {
            ToPeer::Size(bytes) => PeerMessage::Size(bytes.get()),
            ToPeer::Info(info) => PeerMessage::Info(info),
        };
        match control.write_all(&message.to_command().encode()) {
            Ok(()) => {
                exchange.sent.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                exchange.refused.store(true, Ordering::SeqCst);
                exchange.note(format!("sending to the server failed ({e}); stopped"));
            }
        }
    })
}

/// The reader thread.
#[derive(Debug)]
pub(crate) struct Pump {
    stop: Arc<AtomicBool>,
    /// Written to on [`Pump::stop`], so the reader wakes at once.
    wake: UnixStream,
    thread: JoinHandle<(Input, Option<io::Error>)>,
}

impl Pump {
    /// Reads `control` (a clone of the control connection) from `input`
    /// (what was read before) until [`Pump::stop`]: notices go to `inbox`,
    /// replies to in-transfer commands are counted in `exchange`, other
    /// replies queue in the input's `pending`.
    pub(crate) fn start(
        control: ClientStream,
        input: Input,
        inbox: Inbox,
        exchange: Arc<Exchange>,
    ) -> io::Result<Pump> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (wake, woken) = UnixStream::pair()?;
        let thread = std::thread::Builder::new()
            .name("ftp-control-pump".into())
            .spawn(move || pump(control, &woken, input, &inbox, &exchange, &flag))?;
        Ok(Pump { stop, wake, thread })
    }

    /// Stops reading (at once, or within [`POLL_INTERVAL`] if the wake-up
    /// write fails) and gives back what was read and not handed out, and a
    /// read error if one ended it early.
    pub(crate) fn stop(mut self) -> (Input, Option<io::Error>) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.write_all(&[1]);
        self.thread.join().unwrap_or_else(|_| {
            (
                Input::default(),
                Some(io::Error::other("control reader panicked")),
            )
        })
    }
}

fn pump(
    mut control: ClientStream,
    woken: &UnixStream,
    mut input: Input,
    inbox: &Inbox,
    exchange: &Exchange,
    stop: &AtomicBool,
) -> (Input, Option<io::Error>) {
    let mut chunk = [0u8; 4096];
    loop {
        // Hand out what is complete first.
        while let Some(next) = input.next() {
            match next {
                Ok(Incoming::Notice(Ok(message))) => {
                    exchange.received.fetch_add(1, Ordering::SeqCst);
                    match message {
                        PeerMessage::Size(bytes) => inbox.peer(None, Some(Bytes(bytes))),
                        PeerMessage::Info(info) => {
                            *exchange
                                .last_info
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner) = Some(info);
                            inbox.peer(Some(info), None);
                        }
                    }
                }
                Ok(Incoming::Notice(Err(e))) => {
                    exchange.note(format!(
                        "a malformed notice from the server was ignored: {e}"
                    ));
                }
                Ok(Incoming::Reply(reply)) => {
                    if !exchange.take_answer(&reply) {
                        input.pending.push_back(reply);
                    }
                }
                // The main thread meets it again when it reads on.
                Err(e) => return (input, Some(io::Error::other(e.to_string()))),
            }
        }
        if stop.load(Ordering::SeqCst) {
            return (input, None);
        }
        // Under TLS bytes may wait past the socket: read before polling.
        if !control.may_hold_bytes() && !readable(control.socket(), woken) {
            continue;
        }
        match control.read_ready(&mut chunk) {
            Ok(None) => {
                readable(control.socket(), woken);
            }
            Ok(Some(0)) => return (input, None),
            Ok(Some(n)) => input.extend(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if super::control::is_timeout(&e) => {}
            Err(e) => return (input, Some(e)),
        }
    }
}

/// Waits up to [`POLL_INTERVAL`] for the control connection to have bytes
/// (or its end), or for [`Pump::stop`]'s wake-up. A failed poll counts as
/// nothing yet: the read after a later one reports what is wrong with the
/// connection.
fn readable(control: &TcpStream, woken: &UnixStream) -> bool {
    let fds = [
        (control.as_fd(), poll::Want::Read),
        (woken.as_fd(), poll::Want::Read),
    ];
    match poll::wait(&fds, POLL_INTERVAL) {
        Ok(ready) => ready.first().is_some_and(|r| r.any()),
        Err(_) => false,
    }
}
