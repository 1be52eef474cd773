//! The facts of the RIGHTSIZE extension: a peer's `TCP_INFO` summary
//! ([`PeerInfo`]) as `key=value` pairs, shared by the client's `RINF`
//! command and the server's `RIGHTSIZE INFO` notice (see `ftp::rightsize`).
//!
//! Grammar (ABNF, RFC 5234):
//!
//! ```text
//! facts  = [ fact *( ";" fact ) [ ";" ] ]
//! fact   = key "=" value
//! key    = 1*( %x21-3A / %x3C / %x3E-7E )   ; printable ASCII but ";" and "="
//! value  = *( %x21-3A / %x3C-7E )           ; printable ASCII but ";"
//! ```
//!
//! Known keys ([`FACT_KEYS`]), compared case-insensitively as RFC 3659
//! facts are, take a decimal value that fits the field (`u64`, or `u32`
//! for `minrtt`, `rtt` and `retrans`). A missing key leaves its field
//! `None`; an unknown key is skipped whatever its value, so later versions
//! can add facts. A repeated key, an empty key, a pair without `=`, a known
//! key without a decimal value or with one too large, and more than
//! [`MAX_FACTS`] pairs are errors that quote the offending piece.
//!
//! Guarantees: [`parse_facts`] never panics; its errors quote at most 64
//! bytes of input with control characters escaped, so they fit in one
//! reply line; `parse_facts(encode_facts(&i)) == Ok(i)` for every
//! [`PeerInfo`]. Only syntax and ranges are checked here: whether the values
//! are plausible is [`rightsize_tune::PeerReport::check`]'s business.

use crate::arg::quote;
use rightsize_tune::PeerInfo;

/// Most `key=value` pairs one list may hold, unknown keys included.
pub const MAX_FACTS: usize = 32;

/// The known keys, in the order [`encode_facts`] writes them, with the
/// `TCP_INFO` field each carries:
/// `busy` (`tcpi_busy_time`, us), `rwnd` (`tcpi_rwnd_limited`, us),
/// `sndbuf` (`tcpi_sndbuf_limited`, us), `rate` (`tcpi_delivery_rate`,
/// bit/s), `minrtt` (`tcpi_min_rtt`, us), `rtt` (`tcpi_rtt`, us),
/// `bretrans` (`tcpi_bytes_retrans`, bytes), `retrans`
/// (`tcpi_total_retrans`, segments); and one that is not `TCP_INFO`:
/// `pace` (the sender's `SO_MAX_PACING_RATE`, bit/s: asked for by a
/// receiver, in force at a sender).
pub const FACT_KEYS: [&str; 9] = [
    "busy", "rwnd", "sndbuf", "rate", "minrtt", "rtt", "bretrans", "retrans", "pace",
];

/// Why a fact list was refused. Each variant quotes the offending piece
/// (lossy UTF-8, escaped, at most 64 bytes of input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsError {
    /// A piece between `;` without `=`, or an empty piece before the end.
    #[error("fact \"{piece}\" is not key=value")]
    NotPair {
        /// The piece, quoted.
        piece: String,
    },
    /// `=value` with nothing before the `=`.
    #[error("fact \"{piece}\" has an empty key")]
    EmptyKey {
        /// The piece, quoted.
        piece: String,
    },
    /// A byte outside printable ASCII (a space, a control byte, non-ASCII).
    #[error("fact \"{piece}\" is not printable ASCII")]
    NotPrintable {
        /// The piece, quoted.
        piece: String,
    },
    /// The same key twice (case-insensitively).
    #[error("fact \"{piece}\" repeats a key")]
    DuplicateKey {
        /// The second piece with the key, quoted.
        piece: String,
    },
    /// A known key whose value is not a decimal number.
    #[error("fact \"{piece}\" is not a decimal number")]
    NotNumber {
        /// The piece, quoted.
        piece: String,
    },
    /// A known key whose value does not fit its field.
    #[error("fact \"{piece}\" is above {max}")]
    Overflow {
        /// The piece, quoted.
        piece: String,
        /// The largest value the field holds.
        max: u64,
    },
    /// More than [`MAX_FACTS`] pairs.
    #[error("more than {MAX_FACTS} facts in \"{piece}\"")]
    TooMany {
        /// The start of the list, quoted.
        piece: String,
    },
}

impl FactsError {
    /// What is wrong, without the quoted piece (for a [`super::CommandError`]).
    pub fn reason(&self) -> &'static str {
        match self {
            FactsError::NotPair { .. } => "a fact is not key=value",
            FactsError::EmptyKey { .. } => "a fact has an empty key",
            FactsError::NotPrintable { .. } => "a fact is not printable ASCII",
            FactsError::DuplicateKey { .. } => "a fact repeats a key",
            FactsError::NotNumber { .. } => "a fact's value is not a decimal number",
            FactsError::Overflow { .. } => "a fact's value is too large for its field",
            FactsError::TooMany { .. } => "too many facts",
        }
    }

    /// The offending piece, already quoted.
    pub fn piece(&self) -> &str {
        match self {
            FactsError::NotPair { piece }
            | FactsError::EmptyKey { piece }
            | FactsError::NotPrintable { piece }
            | FactsError::DuplicateKey { piece }
            | FactsError::NotNumber { piece }
            | FactsError::Overflow { piece, .. }
            | FactsError::TooMany { piece } => piece,
        }
    }
}

/// Writes `info` as facts in the order of [`FACT_KEYS`], `None` fields
/// left out, separated by `;` without a trailing one: e.g.
/// `busy=1200;rate=94000000;minrtt=20100`. Empty for an empty `info`.
pub fn encode_facts(info: &PeerInfo) -> String {
    let values = [
        info.busy_time_us,
        info.rwnd_limited_us,
        info.sndbuf_limited_us,
        info.delivery_rate_bps,
        info.min_rtt_us.map(u64::from),
        info.rtt_us.map(u64::from),
        info.bytes_retrans,
        info.total_retrans_segs.map(u64::from),
        info.pace_bps,
    ];
    let mut out = String::new();
    for (key, value) in FACT_KEYS.iter().zip(values) {
        if let Some(value) = value {
            if !out.is_empty() {
                out.push(';');
            }
            out.push_str(key);
            out.push('=');
            out.push_str(&value.to_string());
        }
    }
    out
}

/// Reads a fact list (the grammar in the module documentation). Surrounding
/// spaces are not part of it: the caller strips them. An empty list is an
/// empty [`PeerInfo`].
pub fn parse_facts(facts: &[u8]) -> Result<PeerInfo, FactsError> {
    // One trailing ';' is allowed; any other empty piece is an error.
    let body = facts.strip_suffix(b";").unwrap_or(facts);
    let mut info = PeerInfo::default();
    if body.is_empty() {
        return Ok(info);
    }
    let mut seen: Vec<&[u8]> = Vec::new();
    for piece in body.split(|b| *b == b';') {
        if seen.len() == MAX_FACTS {
            return Err(FactsError::TooMany {
                piece: quote(facts),
            });
        }
        let err_piece = || quote(piece);
        if !piece.iter().all(|b| b.is_ascii_graphic()) {
            return Err(FactsError::NotPrintable { piece: err_piece() });
        }
        let Some(eq) = piece.iter().position(|b| *b == b'=') else {
            return Err(FactsError::NotPair { piece: err_piece() });
        };
        let (key, value) = (&piece[..eq], &piece[eq + 1..]);
        if key.is_empty() {
            return Err(FactsError::EmptyKey { piece: err_piece() });
        }
        if seen.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            return Err(FactsError::DuplicateKey { piece: err_piece() });
        }
        seen.push(key);
        let Some(index) = FACT_KEYS
            .iter()
            .position(|k| k.as_bytes().eq_ignore_ascii_case(key))
        else {
            continue;
        };
        let number = decimal(value, err_piece)?;
        let wide = |field: &mut Option<u64>| *field = Some(number);
        let narrow = |field: &mut Option<u32>| -> Result<(), FactsError> {
            *field = Some(u32::try_from(number).map_err(|_| FactsError::Overflow {
                piece: err_piece(),
                max: u64::from(u32::MAX),
            })?);
            Ok(())
        };
        match index {
            0 => wide(&mut info.busy_time_us),
            1 => wide(&mut info.rwnd_limited_us),
            2 => wide(&mut info.sndbuf_limited_us),
            3 => wide(&mut info.delivery_rate_bps),
            4 => narrow(&mut info.min_rtt_us)?,
            5 => narrow(&mut info.rtt_us)?,
            6 => wide(&mut info.bytes_retrans),
            7 => narrow(&mut info.total_retrans_segs)?,
            _ => wide(&mut info.pace_bps),
        }
    }
    Ok(info)
}

/// A decimal `u64`: digits only, at least one; too large is [`FactsError::Overflow`].
fn decimal(value: &[u8], piece: impl Fn() -> String) -> Result<u64, FactsError> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(FactsError::NotNumber { piece: piece() });
    }
    value.iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .ok_or_else(|| FactsError::Overflow {
                piece: piece(),
                max: u64::MAX,
            })
    })
}

#[cfg(test)]
mod tests;
