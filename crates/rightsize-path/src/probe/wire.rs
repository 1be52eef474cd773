//! The probe datagram: a 40-byte header, then padding to the datagram's
//! size. Big-endian, versioned; a field a kind does not use is written as
//! zero and ignored when read, and so is the padding.
//!
//! ```text
//! offset size field
//!  0     4    magic "RSZP"
//!  4     1    version, 1
//!  5     1    kind: 1 probe, 2 echo, 3 train request, 4 train packet
//!  6     2    packets: train request and packet, the train's length
//!  8     2    index: train packet, its place in the train, from 0
//! 10     2    packet_bytes: train request, the UDP payload of each packet
//! 12     4    train: train request and packet, the train's id
//! 16     8    seq: probe and echo, the probe's sequence number
//! 24     8    seen: echo, bit i set if the responder had seen probe
//!             seq - 1 - i (the 64 probes before this one)
//! 32     8    stamp: opaque to the responder, copied from a probe into its
//!             echo and from a request into each packet of its train
//! ```
//!
//! [`Message::parse`] checks everything a responder or prober relies on
//! (train length, index, packet size) and never panics; [`Message::encode`]
//! refuses what parse would refuse, so every encoded message parses back.

use crate::probe::{MAX_TRAIN_PACKET_BYTES, MAX_TRAIN_PACKETS};

/// The first four bytes of every probe datagram.
pub const MAGIC: [u8; 4] = *b"RSZP";

/// The format's version; a datagram of another version is refused.
pub const VERSION: u8 = 1;

/// Bytes of the header; the smallest datagram.
pub const HEADER_BYTES: usize = 40;

/// What a datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A probe of the UDP stream, from the prober.
    Probe,
    /// A probe sent back by the responder.
    Echo,
    /// A prober asking for a train.
    TrainRequest,
    /// One packet of a train, from the responder.
    TrainPacket,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Probe => 1,
            Kind::Echo => 2,
            Kind::TrainRequest => 3,
            Kind::TrainPacket => 4,
        }
    }

    fn from_code(code: u8) -> Option<Kind> {
        match code {
            1 => Some(Kind::Probe),
            2 => Some(Kind::Echo),
            3 => Some(Kind::TrainRequest),
            4 => Some(Kind::TrainPacket),
            _ => None,
        }
    }
}

/// A probe of the UDP stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Sequence number, from 0, one more per probe.
    pub seq: u64,
    /// Opaque to the responder, copied into the echo.
    pub stamp: u64,
}

/// A probe echoed by the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    /// The probe's sequence number.
    pub seq: u64,
    /// The probe's stamp.
    pub stamp: u64,
    /// Which of the 64 probes before this one the responder had seen
    /// when it sent this echo: bit `i` stands for probe `seq - 1 - i`. It
    /// tells a probe lost on its way out (it never reached the responder)
    /// from an echo lost on its way back, on the data's forward path (the
    /// SOBAS paper, IV-B: the sender echoes the probes "with a probe sequence
    /// number" so that the receiver sees the forward path's losses).
    pub seen: u64,
}

/// A request for one packet train.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainRequest {
    /// The train's id, chosen by the prober.
    pub train: u32,
    /// Packets in the train, 2 to [`MAX_TRAIN_PACKETS`].
    pub packets: u16,
    /// UDP payload of each packet, bytes, [`HEADER_BYTES`] to
    /// [`MAX_TRAIN_PACKET_BYTES`]. The request datagram must be at least
    /// this big for a responder to serve it ([`super::TrainGate`]).
    pub packet_bytes: u16,
    /// Opaque to the responder, copied into every packet of the train.
    pub stamp: u64,
}

/// One packet of a train.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainPacket {
    /// The train's id, from the request.
    pub train: u32,
    /// Its place in the train, from 0, below `packets`.
    pub index: u16,
    /// Packets in the train, 2 to [`MAX_TRAIN_PACKETS`].
    pub packets: u16,
    /// The request's stamp.
    pub stamp: u64,
}

/// One probe datagram's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// See [`Probe`].
    Probe(Probe),
    /// See [`Echo`].
    Echo(Echo),
    /// See [`TrainRequest`].
    TrainRequest(TrainRequest),
    /// See [`TrainPacket`].
    TrainPacket(TrainPacket),
}

/// Why bytes are not a probe datagram, or a message cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header.
    #[error("{len} bytes, below the {HEADER_BYTES}-byte probe header")]
    TooShort {
        /// The length given, bytes.
        len: usize,
    },
    /// Not a rightsize probe datagram.
    #[error("not a probe datagram (magic {found:02x?})")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A version this build does not speak.
    #[error("probe format version {found}, this build speaks {VERSION}")]
    UnsupportedVersion {
        /// The version byte.
        found: u8,
    },
    /// A kind byte outside 1 to 4.
    #[error("unknown probe datagram kind {found}")]
    UnknownKind {
        /// The kind byte.
        found: u8,
    },
    /// A train too short to have a dispersion, or too long to serve.
    #[error("train of {packets} packets: must be 2 to {MAX_TRAIN_PACKETS}")]
    TrainLength {
        /// The length given.
        packets: u16,
    },
    /// A train packet's index beyond its train.
    #[error("train packet {index} of a {packets}-packet train")]
    IndexOutOfTrain {
        /// The index given.
        index: u16,
        /// The train's length.
        packets: u16,
    },
    /// A train packet size below the header or above a jumbo frame.
    #[error("train packets of {bytes} bytes: must be {HEADER_BYTES} to {MAX_TRAIN_PACKET_BYTES}")]
    PacketSize {
        /// The size given, bytes.
        bytes: u16,
    },
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(word)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(word)
}

fn check_train(packets: u16) -> Result<(), WireError> {
    if (2..=MAX_TRAIN_PACKETS).contains(&packets) {
        Ok(())
    } else {
        Err(WireError::TrainLength { packets })
    }
}

impl Message {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Message::Probe(_) => Kind::Probe,
            Message::Echo(_) => Kind::Echo,
            Message::TrainRequest(_) => Kind::TrainRequest,
            Message::TrainPacket(_) => Kind::TrainPacket,
        }
    }

    /// Whether parse would accept this message once written.
    pub fn check(&self) -> Result<(), WireError> {
        match *self {
            Message::Probe(_) | Message::Echo(_) => Ok(()),
            Message::TrainRequest(r) => {
                check_train(r.packets)?;
                if !(HEADER_BYTES as u16..=MAX_TRAIN_PACKET_BYTES).contains(&r.packet_bytes) {
                    return Err(WireError::PacketSize {
                        bytes: r.packet_bytes,
                    });
                }
                Ok(())
            }
            Message::TrainPacket(p) => {
                check_train(p.packets)?;
                if p.index >= p.packets {
                    return Err(WireError::IndexOutOfTrain {
                        index: p.index,
                        packets: p.packets,
                    });
                }
                Ok(())
            }
        }
    }

    /// Reads the header at the start of a datagram; the bytes after it are
    /// padding and ignored. Any input gives a message or an error.
    pub fn parse(datagram: &[u8]) -> Result<Message, WireError> {
        let b = datagram;
        if b.len() < HEADER_BYTES {
            return Err(WireError::TooShort { len: b.len() });
        }
        let found = [b[0], b[1], b[2], b[3]];
        if found != MAGIC {
            return Err(WireError::BadMagic { found });
        }
        if b[4] != VERSION {
            return Err(WireError::UnsupportedVersion { found: b[4] });
        }
        let kind = Kind::from_code(b[5]).ok_or(WireError::UnknownKind { found: b[5] })?;
        let (packets, index, packet_bytes) = (u16_at(b, 6), u16_at(b, 8), u16_at(b, 10));
        let (train, seq, seen, stamp) =
            (u32_at(b, 12), u64_at(b, 16), u64_at(b, 24), u64_at(b, 32));
        let message = match kind {
            Kind::Probe => Message::Probe(Probe { seq, stamp }),
            Kind::Echo => Message::Echo(Echo { seq, stamp, seen }),
            Kind::TrainRequest => Message::TrainRequest(TrainRequest {
                train,
                packets,
                packet_bytes,
                stamp,
            }),
            Kind::TrainPacket => Message::TrainPacket(TrainPacket {
                train,
                index,
                packets,
                stamp,
            }),
        };
        message.check()?;
        Ok(message)
    }

    /// Writes the header into the start of `buf` and returns its length,
    /// [`HEADER_BYTES`]; the rest of `buf` is left as it is (the caller's
    /// padding). Refuses a buffer shorter than the header and a message
    /// [`Message::check`] refuses.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < HEADER_BYTES {
            return Err(WireError::TooShort { len: buf.len() });
        }
        self.check()?;
        let (mut packets, mut index, mut packet_bytes, mut train) = (0u16, 0u16, 0u16, 0u32);
        let (mut seq, mut seen, stamp) = (0u64, 0u64, self.stamp());
        match *self {
            Message::Probe(p) => seq = p.seq,
            Message::Echo(e) => (seq, seen) = (e.seq, e.seen),
            Message::TrainRequest(r) => {
                (train, packets, packet_bytes) = (r.train, r.packets, r.packet_bytes)
            }
            Message::TrainPacket(p) => (train, packets, index) = (p.train, p.packets, p.index),
        }
        let h = &mut buf[..HEADER_BYTES];
        h[0..4].copy_from_slice(&MAGIC);
        h[4] = VERSION;
        h[5] = self.kind().code();
        h[6..8].copy_from_slice(&packets.to_be_bytes());
        h[8..10].copy_from_slice(&index.to_be_bytes());
        h[10..12].copy_from_slice(&packet_bytes.to_be_bytes());
        h[12..16].copy_from_slice(&train.to_be_bytes());
        h[16..24].copy_from_slice(&seq.to_be_bytes());
        h[24..32].copy_from_slice(&seen.to_be_bytes());
        h[32..40].copy_from_slice(&stamp.to_be_bytes());
        Ok(HEADER_BYTES)
    }

    /// A whole datagram of `len` bytes: the header, then zeros. `len` below
    /// the header is refused.
    pub fn datagram(&self, len: usize) -> Result<Vec<u8>, WireError> {
        let mut buf = vec![0u8; len];
        self.encode(&mut buf)?;
        Ok(buf)
    }

    /// The opaque stamp it carries.
    pub fn stamp(&self) -> u64 {
        match *self {
            Message::Probe(p) => p.stamp,
            Message::Echo(e) => e.stamp,
            Message::TrainRequest(r) => r.stamp,
            Message::TrainPacket(p) => p.stamp,
        }
    }
}

#[cfg(test)]
mod tests;
