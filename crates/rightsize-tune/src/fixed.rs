//! `stock`, `static:SIZE` and `kernel`: tuners that decide everything
//! before the handshake and nothing after.
//!
//! `stock` is the source documents' baseline, 64 KiB send and receive
//! buffers (the drsFTP paper, section 4.2, docs/sources.md: "the high-end
//! of OS-default TCP buffer sizes"), set
//! before the handshake so that the window scale is what a stock
//! application would get. `static:SIZE` does the same with the user's size,
//! passed through unclamped so that the read-back shows what the kernel
//! kept. `kernel` sets nothing and leaves both buffers to Linux's
//! autotuning.

use std::time::Duration;

use super::{Context, Decision, Event, Inputs, Settings, Setup, Tuner};
use crate::units::Bytes;

/// The stock buffer size: 64 KiB (the drsFTP paper, section 4.2).
pub const STOCK_BUFFER: Bytes = Bytes(64 * 1024);

/// A tuner whose buffers never change after the handshake.
#[derive(Debug, Clone)]
pub struct Fixed {
    name: &'static str,
    size: Option<Bytes>,
}

impl Fixed {
    /// 64 KiB send and receive buffers.
    pub fn stock(_ctx: Context) -> Self {
        Fixed {
            name: "stock",
            size: Some(STOCK_BUFFER),
        }
    }

    /// Both buffers at `size`, bytes (the request; Linux doubles it).
    pub fn sized(_ctx: Context, size: Bytes) -> Self {
        Fixed {
            name: "static",
            size: Some(size),
        }
    }

    /// Nothing set: the kernel autotunes.
    pub fn kernel(_ctx: Context) -> Self {
        Fixed {
            name: "kernel",
            size: None,
        }
    }
}

impl Tuner for Fixed {
    fn name(&self) -> &'static str {
        self.name
    }

    fn state(&self) -> &'static str {
        "fixed"
    }

    fn setup(&self) -> Setup {
        // Both buffers on both ends, as the drsFTP paper's stock and static FTP do:
        // the receive buffer sets the window, the send buffer what the
        // sender can keep in flight.
        Setup {
            pre_handshake: Settings {
                rcvbuf: self.size,
                sndbuf: self.size,
                window_clamp: None,
            },
            after_connect: Settings::default(),
        }
    }

    fn inputs(&self) -> Inputs {
        Inputs::default()
    }

    fn on_event(&mut self, _event: &Event) -> Decision {
        Decision::none()
    }

    fn next_wakeup(&self) -> Option<Duration> {
        None
    }
}

#[cfg(test)]
mod tests;
