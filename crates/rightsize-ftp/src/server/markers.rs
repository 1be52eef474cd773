//! The `111`/`112` markers of a running MODE E transfer, on a thread of
//! their own: it sleeps until `rightsize_ftp_proto::markers` says the
//! next is due, reads the transfer's [`Progress`] and hands the replies
//! to the control connection's thread, which alone writes them (between
//! whole replies, and only while the session still runs the transfer).
//!
//! Guarantees: a transfer whose schedule is
//! [`MarkerSchedule::NONE`] starts no thread and sends nothing; the last
//! markers are handed over by [`Ticker::finish`] before it returns, so
//! the caller can send the transfer's end after them; a periodic marker
//! that finds the control thread's queue full is dropped (the next one
//! carries newer numbers), a last one waits for room.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rightsize_ftp_proto::Reply;
use rightsize_ftp_proto::markers::{MarkerSchedule, Markers};
use rightsize_ftp_proto::mode_e::Ranges;

use super::data::Progress;

/// Stack of a marker thread: it formats a few lines now and then.
const MARKER_STACK_BYTES: usize = 64 * 1024;

/// Where markers go: `last` is true for the final ones, which must not be
/// dropped.
pub(super) type Deliver = Arc<dyn Fn(Vec<Reply>, bool) + Send + Sync>;

/// Delivers markers as `wrap`ped events on `events`: a periodic one is
/// dropped if the queue is full, a last one waits for room.
pub(super) fn deliver_to<E: Send + 'static>(
    events: SyncSender<E>,
    wrap: fn(Vec<Reply>) -> E,
) -> Deliver {
    Arc::new(move |replies, last| {
        let event = wrap(replies);
        if last {
            let _ = events.send(event);
        } else {
            let _ = events.try_send(event);
        }
    })
}

/// The markers of one transfer.
pub(super) struct Ticker {
    markers: Markers,
    progress: Arc<Progress>,
    deliver: Deliver,
    /// Dropped to wake and stop the thread.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<Markers>>,
}

impl Ticker {
    /// Starts the markers of a transfer that starts now.
    pub(super) fn start(
        schedule: MarkerSchedule,
        progress: Arc<Progress>,
        deliver: Deliver,
    ) -> Ticker {
        let markers = Markers::new(schedule);
        let mut ticker = Ticker {
            markers: markers.clone(),
            progress: Arc::clone(&progress),
            deliver: Arc::clone(&deliver),
            stop: None,
            thread: None,
        };
        if schedule.is_none() {
            return ticker;
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let spawned = thread::Builder::new()
            .name("ftp-markers".into())
            .stack_size(MARKER_STACK_BYTES)
            .spawn(move || {
                let started = Instant::now();
                let mut markers = markers;
                while let Some(at) = markers.poll_at() {
                    match stopped.recv_timeout(at.saturating_sub(started.elapsed())) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                    let (bytes, ranges) = snapshot(&progress);
                    let due = markers.poll(started.elapsed(), since_epoch(), bytes, &ranges);
                    if !due.is_empty() {
                        deliver(due, false);
                    }
                }
                markers
            });
        // Without a thread only the last markers go out.
        if let Ok(thread) = spawned {
            ticker.stop = Some(stop);
            ticker.thread = Some(thread);
        }
        ticker
    }

    /// Stops the periodic markers and, with `last`, hands over the final
    /// ones (not when no data connection was ever made).
    pub(super) fn finish(mut self, last: bool) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take()
            && let Ok(markers) = thread.join()
        {
            self.markers = markers;
        }
        if !last {
            return;
        }
        let (bytes, ranges) = snapshot(&self.progress);
        let out = self.markers.finish(since_epoch(), bytes, &ranges);
        if !out.is_empty() {
            (self.deliver)(out, true);
        }
    }
}

fn snapshot(progress: &Progress) -> (u64, Ranges) {
    let bytes = progress.bytes.load(Ordering::Relaxed);
    let ranges = progress
        .ranges
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    (bytes, ranges)
}

/// The wall-clock time a perf marker carries.
fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
