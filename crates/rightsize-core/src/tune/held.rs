//! `manual`: buffers set by hand (`get --rcvbuf/--sndbuf/--window-clamp`
//! without `--tune`), and a window clamp that stays where the user put it.
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

use super::{Action, Decision, Event, Inputs, Settings, Setup, Tuner};

/// How often the clamp is read back. The kernel raises it at most once
/// per receive-buffer measurement (about one RTT), and a raised clamp opens
/// the window gradually, so 10 ms catches it well before a 1 x BDP queue
/// on any path this project emulates could fill.
pub const CLAMP_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// Hand-set settings; holds the window clamp if one was set.
#[derive(Debug, Clone)]
pub struct Held {
    settings: Settings,
    next: Duration,
    restored: u32,
}

impl Held {
    /// The settings the user gave, applied before the handshake.
    pub fn new(settings: Settings) -> Self {
        Held {
            settings,
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
        Setup {
            pre_handshake: self.settings,
            after_connect: Settings::default(),
        }
    }

    fn inputs(&self) -> Inputs {
        Inputs::default()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        let (Some(clamp), Event::Sample(sample)) = (self.settings.window_clamp, event) else {
            return Decision::none();
        };
        self.next = sample.at + CLAMP_CHECK_INTERVAL;
        let Some(read) = sample.buffers.map(|b| u64::from(b.window_clamp_bytes)) else {
            return Decision::none();
        };
        if read <= clamp.get() {
            return Decision::none();
        }
        self.restored = self.restored.saturating_add(1);
        Decision::act(
            "fixed",
            vec![Action::SetWindowClamp(clamp)],
            clamp,
            format!(
                "the kernel raised the window clamp to {read} bytes (receive autotuning); set back to {} (restore {})",
                clamp.get(),
                self.restored
            ),
        )
    }

    fn next_wakeup(&self) -> Option<Duration> {
        self.settings.window_clamp.map(|_| self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::BufferReading;
    use crate::tune::Sample;
    use crate::units::Bytes;

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
        Held::new(Settings {
            window_clamp: Some(Bytes(bytes)),
            ..Settings::default()
        })
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
    fn without_a_clamp_it_never_wakes_and_never_acts() {
        let mut held = Held::new(Settings {
            rcvbuf: Some(Bytes(1 << 20)),
            ..Settings::default()
        });
        assert_eq!(held.next_wakeup(), None);
        assert_eq!(held.on_event(&sample(100, u32::MAX)), Decision::none());
        assert_eq!(held.setup().pre_handshake.rcvbuf, Some(Bytes(1 << 20)));
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
