//! What one end of a RIGHTSIZE transfer tells the other while the data
//! flows: a buffer size or a `TCP_INFO` summary ([`PeerMessage`]), and the
//! server-to-client line that carries it (a [`Notice`]).
//!
//! The client sends a message as a command (`SBUF <bytes>`, `RINF <facts>`,
//! see [`PeerMessage::to_command`]); the server sends one as a notice line,
//! `RIGHTSIZE SBUF <bytes>` or `RIGHTSIZE INFO <facts>` ended by CRLF. A
//! notice is not an FTP reply: it starts with a letter, never a digit, so it
//! cannot be read as any reply code (drsFTP's `126 SBUF` collides with
//! GridFTP's `126`, see `docs/ftp-interop.md`). A client tells
//! one from a reply line by position: the server sends notices only between
//! complete replies (a line read while a multi-line reply is open belongs to
//! that reply), after the transfer's 150/125 and before its 226, and only to
//! a client that sent `OPTS RIGHTSIZE ON`.
//!
//! Guarantees: [`PeerMessage::parse`] never panics, answers `Ok(None)` for
//! any line that does not start with `RIGHTSIZE ` (so a client can hand
//! those to its reply parser), and reads back what [`PeerMessage::encode`]
//! writes, for every value. Only syntax is checked: a size of 0 or an absurd
//! fact passes here and is refused by [`rightsize_tune::PeerReport::check`].

use std::time::Duration;

use crate::Command;
use crate::arg::{quote, trim_spaces};
use crate::facts::{FactsError, encode_facts, parse_facts};
use rightsize_tune::units::Bytes;
use rightsize_tune::{PeerInfo, PeerReport};

/// The first word of every notice, followed by one space.
pub const NOTICE_PREFIX: &str = "RIGHTSIZE ";

/// Something one end of a running transfer says to the other's tuner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerMessage {
    /// A buffer size for the running transfer, bytes (drsFTP's in-transfer
    /// `SBUF`, the drsFTP paper, section 3.5; docs/sources.md).
    Size(u64),
    /// The sender's `TCP_INFO` summary of its data socket.
    Info(PeerInfo),
}

/// A [`PeerMessage`] going from the server to the client, as a notice line.
pub type Notice = PeerMessage;

/// Why a line that starts with `RIGHTSIZE ` is not a notice this codec
/// reads. A client logs it and goes on; it never stops a transfer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoticeError {
    /// A kind other than `SBUF` or `INFO` (perhaps from a later version).
    #[error("unknown RIGHTSIZE notice \"{line}\"")]
    UnknownKind {
        /// The line, quoted.
        line: String,
    },
    /// `RIGHTSIZE SBUF` without a decimal byte count that fits 64 bits.
    #[error("RIGHTSIZE SBUF: expected a decimal number of bytes in \"{arg}\"")]
    Size {
        /// The argument, quoted.
        arg: String,
    },
    /// `RIGHTSIZE INFO` with malformed facts.
    #[error("RIGHTSIZE INFO: {0}")]
    Info(#[from] FactsError),
}

impl PeerMessage {
    /// The notice line as wire bytes, CRLF included:
    /// `RIGHTSIZE SBUF 4194304\r\n`, `RIGHTSIZE INFO busy=1;rtt=20000\r\n`
    /// (`RIGHTSIZE INFO\r\n` for an empty summary).
    pub fn encode(&self) -> Vec<u8> {
        let mut line = match self {
            PeerMessage::Size(bytes) => format!("{NOTICE_PREFIX}SBUF {bytes}"),
            PeerMessage::Info(info) => {
                let facts = encode_facts(info);
                if facts.is_empty() {
                    format!("{NOTICE_PREFIX}INFO")
                } else {
                    format!("{NOTICE_PREFIX}INFO {facts}")
                }
            }
        };
        line.push_str("\r\n");
        line.into_bytes()
    }

    /// Reads one control-channel line, with or without its CRLF (or bare
    /// LF): `Ok(None)` if it does not start with `RIGHTSIZE ` (compared
    /// case-insensitively), so it is a reply line; `Ok(Some(_))` for a
    /// notice; an error for a malformed one. The kind (`SBUF`, `INFO`) is
    /// case-insensitive; spaces around the argument are ignored.
    pub fn parse(line: &[u8]) -> Result<Option<PeerMessage>, NoticeError> {
        let line = line
            .strip_suffix(b"\n")
            .map_or(line, |l| l.strip_suffix(b"\r").unwrap_or(l));
        let prefix = NOTICE_PREFIX.as_bytes();
        let Some(rest) = line
            .get(..prefix.len())
            .filter(|head| head.eq_ignore_ascii_case(prefix))
            .map(|_| &line[prefix.len()..])
        else {
            return Ok(None);
        };
        let (kind, arg) = match rest.iter().position(|b| *b == b' ') {
            Some(i) => (&rest[..i], trim_spaces(&rest[i + 1..])),
            None => (rest, &[][..]),
        };
        if kind.eq_ignore_ascii_case(b"SBUF") {
            let bytes = std::str::from_utf8(arg)
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| NoticeError::Size { arg: quote(arg) })?;
            Ok(Some(PeerMessage::Size(bytes)))
        } else if kind.eq_ignore_ascii_case(b"INFO") {
            Ok(Some(PeerMessage::Info(parse_facts(arg)?)))
        } else {
            Err(NoticeError::UnknownKind { line: quote(line) })
        }
    }

    /// The command a client sends to tell the server this: `SBUF <bytes>`
    /// or `RINF <facts>`.
    pub fn to_command(&self) -> Command {
        match self {
            PeerMessage::Size(bytes) => Command::Sbuf(*bytes),
            PeerMessage::Info(info) => Command::Rinf(*info),
        }
    }

    /// The report for a tuner, `at` being the time since the data
    /// connection opened when the message arrived. Check it with
    /// [`PeerReport::check`] before use.
    pub fn to_report(&self, at: Duration) -> PeerReport {
        match self {
            PeerMessage::Size(bytes) => PeerReport {
                at,
                info: None,
                size: Some(Bytes(*bytes)),
            },
            PeerMessage::Info(info) => PeerReport {
                at,
                info: Some(*info),
                size: None,
            },
        }
    }
}
