//! `manual`: a window clamp set by hand (`get --window-clamp` without
//! `--tune`) that stays where the user put it.
//!
//! Linux does not keep an application's `TCP_WINDOW_CLAMP`: receive
//! autotuning raises it to `ratio x buffer` each time it grows the buffer
//! ("make the window clamp follow along"), and a change of the measured
//! payload-to-truesize ratio replaces it with `ratio x buffer` even when
//! the buffer is locked. Measured on 6.18, 200 Mbit/s x 100 ms with
//! `tcp_rmem` max 32 MiB: a clamp of 2,300,000 set before the handshake
//! read back 14,761,761 after 1.3 s, and one transfer in three lost 2,054
//! segments to a 1 x BDP queue that a 2.3 MB window cannot fill. So this
//! tuner reads the clamp back at every wake-up and sets it again whenever
//! the kernel raised it. A read-back *below* the request is left alone:
//! the kernel lowers the clamp to what the buffer can hold, and the buffer
//! caps the window anyway.

use std::time::Duration;

use super::{Action, Decision, Event, Inputs, Setup, Tuner};
use crate::units::Bytes;

/// How often the clamp is read back. The kernel raises it at most once
/// per receive-buffer measurement (about one RTT), and a raised clamp opens
/// the window gradually, so 10 ms catches it well before a 1 x BDP queue
/// on any path this project emulates could fill.
pub const CLAMP_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// Holds a window clamp set by hand. The hand-set buffers and clamp are
/// already in the socket request before the handshake; this only keeps the
/// clamp there afterwards.
#[derive(Debug, Clone)]
pub struct Held {
    clamp: Bytes,
    next: Duration,
    restored: u32,
}

impl Held {
    /// Holds `clamp`, bytes.
    pub fn new(clamp: Bytes) -> Self {
        Held {
            clamp,
            next: CLAMP_CHECK_INTERVAL,
            restored: 0,
        }
    }
}

impl Tuner for Held {
    fn name(&self) -> &'static str {
        "manual"
    }

    fn state(&self) -> &'static str {
        "fixed"
    }

    fn setup(&self) -> Setup {
        Setup::default()
    }

    fn inputs(&self) -> Inputs {
        Inputs::default()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        let Event::Sample(sample) = event else {
            return Decision::none();
        };
        self.next = sample.at + CLAMP_CHECK_INTERVAL;
        let Some(read) = sample.buffers.map(|b| u64::from(b.window_clamp_bytes)) else {
            return Decision::none();
        };
        if read <= self.clamp.get() {
            return Decision::none();
        }
        self.restored = self.restored.saturating_add(1);
        Decision::act(
            "fixed",
            vec![Action::SetWindowClamp(self.clamp)],
            self.clamp,
            format!(
                "the kernel raised the window clamp to {read} bytes (receive autotuning); set back to {} (restore {})",
                self.clamp.get(),
                self.restored
            ),
        )
    }

    fn next_wakeup(&self) -> Option<Duration> {
        Some(self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sample;
    use crate::telemetry::BufferReading;

    fn sample(at_ms: u64, clamp: u32) -> Event {
        Event::Sample(Sample {
            at: Duration::from_millis(at_ms),
            bytes: 0,
            tcp_info: None,
            buffers: Some(BufferReading {
                rcvbuf_bytes: 131_072,
                sndbuf_bytes: 16_384,
                window_clamp_bytes: clamp,
            }),
        })
    }

    fn clamped(bytes: u64) -> Held {
        Held::new(Bytes(bytes))
    }

    #[test]
    fn a_clamp_the_kernel_raised_is_set_back() {
        let mut held = clamped(2_300_000);
        let d = held.on_event(&sample(1_300, 14_761_761));
        assert_eq!(d.actions, vec![Action::SetWindowClamp(Bytes(2_300_000))]);
        let reason = d.record.expect("a record").reason;
        assert!(reason.contains("14761761"), "{reason}");
        assert_eq!(held.next_wakeup(), Some(Duration::from_millis(1_310)));
    }

    #[test]
    fn a_clamp_at_or_below_the_request_is_left_alone() {
        let mut held = clamped(2_300_000);
        // Right after the handshake the kernel holds it to the buffer.
        assert_eq!(held.on_event(&sample(100, 81_920)), Decision::none());
        assert_eq!(held.on_event(&sample(110, 2_300_000)), Decision::none());
    }

    #[test]
    fn a_sample_without_buffers_asks_again_later() {
        let mut held = clamped(1_000_000);
        let event = Event::Sample(Sample {
            at: Duration::from_millis(500),
            bytes: 0,
            tcp_info: None,
            buffers: None,
        });
        assert_eq!(held.on_event(&event), Decision::none());
        assert_eq!(held.next_wakeup(), Some(Duration::from_millis(510)));
    }
}
