//! What the driver asks of the system layer ([`SocketOp`]), what it gets
//! back ([`Reply`]), and the floor every size for the socket is raised to.

use serde::{Deserialize, Serialize};

use crate::tcpinfo::TcpInfoSample;
use crate::telemetry::BufferReading;
use crate::units::Bytes;
use crate::{Action, PeerInfo};

/// No buffer or clamp is set below this many of the connection's
/// segments: a window under a few segments stalls TCP (silly-window
/// avoidance waits for the persist timer). Tuners size in 1448-byte
/// segments before they can know the MSS; loopback's is 65,483.
pub const MIN_SEGMENTS: u64 = 4;

/// Why a size for the peer was not sent: there is no channel to it.
pub const NO_PEER: &str = "the peer takes no sizes (not rightsize with OPTS RIGHTSIZE ON)";

/// Which socket a reading is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conn {
    /// The data connection the driver tunes.
    Data,
    /// The control connection, whose `tcpi_rtt` is a free RTT estimate.
    Control,
}

/// One request for the system layer, answered with a [`Reply`].
///
/// Serialised as the `action` of a telemetry decision line
/// (`{"action":"set_rcvbuf","requested_bytes":600000}`); a request the
/// tuner made keeps the size the tuner asked for there, and the size
/// actually set, when raised to the floor, goes in `raised_to_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum SocketOp {
    /// `setsockopt(SO_RCVBUF)` with this request, bytes; read it back
    /// ([`Reply::Applied`] with what `getsockopt` reports, about twice it).
    #[serde(rename = "set_rcvbuf")]
    SetRcvBuf {
        /// The request, bytes.
        #[serde(rename = "requested_bytes")]
        bytes: u64,
    },
    /// `setsockopt(SO_SNDBUF)` with this request, bytes; read it back.
    #[serde(rename = "set_sndbuf")]
    SetSndBuf {
        /// The request, bytes.
        #[serde(rename = "requested_bytes")]
        bytes: u64,
    },
    /// `setsockopt(TCP_WINDOW_CLAMP)`, bytes (saturated to the `u32` the
    /// call takes); read it back.
    SetWindowClamp {
        /// The window, bytes.
        #[serde(rename = "requested_bytes")]
        bytes: u64,
    },
    /// `setsockopt(SO_MAX_PACING_RATE)`; read it back.
    SetMaxPacingRate {
        /// The ceiling, bytes per second (the kernel's unit).
        #[serde(rename = "requested_bytes")]
        bytes_per_second: u64,
    },
    /// Tell the peer a size over the control connection
    /// ([`ToPeer::Size`]); answer [`Reply::Told`].
    TellPeer {
        /// The size, bytes.
        #[serde(rename = "requested_bytes")]
        bytes: u64,
    },
    /// Ask the sending peer for a pacing ceiling ([`ToPeer::pace_ceiling`]);
    /// answer [`Reply::Told`].
    TellPeerPace {
        /// The ceiling, bytes per second.
        #[serde(rename = "requested_bytes")]
        bytes_per_second: u64,
    },
    /// `getsockopt(TCP_INFO)` of a socket; answer [`Reply::TcpInfo`].
    ReadTcpInfo {
        /// Which socket.
        socket: Conn,
    },
    /// Read the data socket's buffers and clamp back; answer
    /// [`Reply::Buffers`].
    ReadBuffers,
}

impl From<Action> for SocketOp {
    fn from(action: Action) -> Self {
        match action {
            Action::SetRcvBuf(b) => SocketOp::SetRcvBuf { bytes: b.get() },
            Action::SetSndBuf(b) => SocketOp::SetSndBuf { bytes: b.get() },
            Action::SetWindowClamp(b) => SocketOp::SetWindowClamp { bytes: b.get() },
            Action::TellPeer(b) => SocketOp::TellPeer { bytes: b.get() },
            Action::SetMaxPacingRate(b) => SocketOp::SetMaxPacingRate {
                bytes_per_second: b.get(),
            },
            Action::TellPeerPace(b) => SocketOp::TellPeerPace {
                bytes_per_second: b.get(),
            },
        }
    }
}

impl SocketOp {
    /// What to send to the peer for a `tell_peer*` request; `None` for the
    /// others.
    pub fn to_peer(self) -> Option<ToPeer> {
        match self {
            SocketOp::TellPeer { bytes } => Some(ToPeer::Size(Bytes(bytes))),
            SocketOp::TellPeerPace { bytes_per_second } => {
                Some(ToPeer::pace_ceiling(bytes_per_second))
            }
            _ => None,
        }
    }

    /// This request with a buffer or clamp below `floor` bytes raised to
    /// it, and the size it was raised to; other requests pass unchanged.
    pub(crate) fn floored(self, floor: u64) -> (SocketOp, Option<u64>) {
        match self {
            SocketOp::SetRcvBuf { bytes } if bytes < floor => {
                (SocketOp::SetRcvBuf { bytes: floor }, Some(floor))
            }
            SocketOp::SetSndBuf { bytes } if bytes < floor => {
                (SocketOp::SetSndBuf { bytes: floor }, Some(floor))
            }
            SocketOp::SetWindowClamp { bytes } if bytes < floor => {
                (SocketOp::SetWindowClamp { bytes: floor }, Some(floor))
            }
            op => (op, None),
        }
    }
}

/// Whether `action` sizes the socket (a buffer or the window clamp), and
/// so is raised to the connection's floor of a few segments.
pub(crate) fn sizes_socket(action: Action) -> bool {
    matches!(
        action,
        Action::SetRcvBuf(_) | Action::SetSndBuf(_) | Action::SetWindowClamp(_)
    )
}

/// The floor for a connection whose `TCP_INFO` reads `info`: [`MIN_SEGMENTS`]
/// of its larger segment size; 0 when `TCP_INFO` could not be read.
pub fn floor_bytes(info: Option<&TcpInfoSample>) -> u64 {
    info.map_or(0, |i| {
        MIN_SEGMENTS * u64::from(i.snd_mss_bytes.max(i.rcv_mss_bytes))
    })
}

/// What the system layer found carrying out a [`SocketOp`].
// A `TcpInfo` reply carries a whole `TcpInfoSample` (about 500 bytes); a
// reply is made and consumed at once, so boxing would only add an
// allocation per reading.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A setting was made; what `getsockopt` reads back (bytes, or bytes
    /// per second for pacing) and the sysctl that capped it, if any.
    Applied {
        /// The read-back.
        bytes: u64,
        /// The sysctl that kept the kernel from applying the request.
        clamped_by: Option<String>,
    },
    /// The message went to the peer.
    Told,
    /// The call failed; the error, with the call that failed.
    Failed(String),
    /// The `TCP_INFO` asked for; `None` if it could not be read.
    TcpInfo(Option<TcpInfoSample>),
    /// The buffers asked for; `None` if they could not be read.
    Buffers(Option<BufferReading>),
}

/// Something for the peer, to send over the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToPeer {
    /// A size the tuner tells the peer (drsFTP's in-transfer `SBUF`).
    Size(Bytes),
    /// This end's `TCP_INFO` summary, or a pacing ceiling alone.
    Info(PeerInfo),
}

impl ToPeer {
    /// A pacing ceiling of `bytes_per_second` for the sending peer, as the
    /// `pace` fact of a report carries it (bit/s, saturating).
    pub fn pace_ceiling(bytes_per_second: u64) -> ToPeer {
        ToPeer::Info(PeerInfo {
            pace_bps: Some(bytes_per_second.saturating_mul(8)),
            ..PeerInfo::default()
        })
    }
}
