//! Data-connection addresses on the control connection: the `PORT`/`PASV`
//! six-number form (RFC 959 sections 4.1.2 and 4.2) and the `EPRT`/`EPSV`
//! delimited form (RFC 2428).
//!
//! Guarantees: every parser returns a plain `std::net` value or a typed
//! [`AddrError`] quoting the input; numbers out of range, port 0 and wrong
//! field counts are refused; formatting and parsing round-trip. These are
//! values only: no socket is touched.
//!
//! Decisions a client or server must know:
//! - Reply parsing is tolerant, as clients are: the six numbers of a `227`
//!   reply are found anywhere in the text, with or without parentheses. A
//!   client should still connect to the control connection's peer rather
//!   than to h1-h4 (Python's ftplib and curl do), because servers behind
//!   NAT announce private addresses. Likewise a `229` reply with a non-empty
//!   protocol or address field is accepted and those fields ignored.
//! - `EPRT` carries no IPv6 flow label or scope id; they come back as 0.
//!   An IPv4-mapped IPv6 address stays IPv6: a server comparing it with the
//!   control peer must normalise both.
//! - Refusing ports below 1024 or addresses other than the control peer
//!   (RFC 2577) is server policy, not done here.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use super::arg::quote;
use super::reply::Reply;

/// Reply code of `PASV` success (RFC 959 4.1.2).
pub const PASV_REPLY_CODE: u16 = 227;
/// Reply code of `EPSV` success (RFC 2428 section 3).
pub const EPSV_REPLY_CODE: u16 = 229;
/// Delimiter used when formatting `EPRT`/`EPSV` (RFC 2428 recommends `|`).
pub const EXTENDED_DELIMITER: char = '|';

/// Why an address argument or reply cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    /// `PORT` needs exactly six numbers.
    #[error("expected 6 comma-separated numbers h1,h2,h3,h4,p1,p2, found {found} in \"{input}\"")]
    WrongCount {
        /// The argument, quoted.
        input: String,
        /// How many fields were found.
        found: usize,
    },
    /// A field of `h1,h2,h3,h4,p1,p2` is not a decimal number in 0..=255.
    #[error("\"{field}\" is not a number 0-255 in \"{input}\"")]
    BadNumber {
        /// The argument, quoted.
        input: String,
        /// The offending field, quoted.
        field: String,
    },
    /// Port 0 cannot be connected to.
    #[error("port 0 in \"{input}\"")]
    PortZero {
        /// The argument, quoted.
        input: String,
    },
    /// RFC 2428: the delimiter is one character in ASCII 33..=126.
    #[error("EPRT delimiter must be one ASCII character 33-126 in \"{input}\"")]
    BadDelimiter {
        /// The argument, quoted.
        input: String,
    },
    /// Not `<d><proto><d><addr><d><port><d>`.
    #[error("expected <d>proto<d>address<d>port<d> in \"{input}\"")]
    BadExtendedForm {
        /// The argument, quoted.
        input: String,
    },
    /// A protocol number other than 1 (IPv4) or 2 (IPv6): RFC 2428 reply 522.
    #[error("network protocol {protocol} not supported (use 1 or 2) in \"{input}\"")]
    UnsupportedProtocol {
        /// The argument, quoted.
        input: String,
        /// The protocol number sent.
        protocol: u16,
    },
    /// The address field does not parse as the announced family.
    #[error("\"{addr}\" is not an IPv{version} address in \"{input}\"")]
    BadAddress {
        /// The argument, quoted.
        input: String,
        /// The address field, quoted.
        addr: String,
        /// 4 or 6.
        version: u8,
    },
    /// The port field is not a decimal number in 1..=65535.
    #[error("\"{port}\" is not a port 1-65535 in \"{input}\"")]
    BadPort {
        /// The argument, quoted.
        input: String,
        /// The port field, quoted.
        port: String,
    },
    /// The reply has another code than the one expected.
    #[error("expected reply {expected}, got {got} \"{text}\"")]
    WrongReplyCode {
        /// The code expected (227 or 229).
        expected: u16,
        /// The code received.
        got: u16,
        /// The reply text, quoted.
        text: String,
    },
    /// No `h1,h2,h3,h4,p1,p2` in a `227` reply.
    #[error("no h1,h2,h3,h4,p1,p2 address in reply text \"{text}\"")]
    NoPasvAddress {
        /// The reply text, quoted.
        text: String,
    },
    /// No `(<d><d><d>port<d>)` in a `229` reply.
    #[error("no (|||port|) in reply text \"{text}\"")]
    NoEpsvPort {
        /// The reply text, quoted.
        text: String,
    },
}

/// Parses a decimal field of 1..=`max_digits` ASCII digits.
fn decimal(field: &str, max_digits: usize) -> Option<u32> {
    if field.is_empty() || field.len() > max_digits || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

fn port_field(input: &str, field: &str) -> Result<u16, AddrError> {
    match decimal(field, 5).and_then(|p| u16::try_from(p).ok()) {
        Some(0) => Err(AddrError::PortZero {
            input: quote(input.as_bytes()),
        }),
        Some(port) => Ok(port),
        None => Err(AddrError::BadPort {
            input: quote(input.as_bytes()),
            port: quote(field.as_bytes()),
        }),
    }
}

/// Parses the `PORT` argument `h1,h2,h3,h4,p1,p2` (RFC 959 4.1.2): six
/// decimal numbers 0..=255, port = p1 * 256 + p2, which must not be 0.
pub fn parse_port_arg(input: &str) -> Result<SocketAddrV4, AddrError> {
    let fields: Vec<&str> = input.split(',').collect();
    let [h1, h2, h3, h4, p1, p2] = fields.as_slice() else {
        return Err(AddrError::WrongCount {
            input: quote(input.as_bytes()),
            found: fields.len(),
        });
    };
    let mut n = [0u8; 6];
    for (slot, field) in n.iter_mut().zip([h1, h2, h3, h4, p1, p2]) {
        *slot = decimal(field, 3)
            .and_then(|v| u8::try_from(v).ok())
            .ok_or_else(|| AddrError::BadNumber {
                input: quote(input.as_bytes()),
                field: quote(field.as_bytes()),
            })?;
    }
    let port = u16::from_be_bytes([n[4], n[5]]);
    if port == 0 {
        return Err(AddrError::PortZero {
            input: quote(input.as_bytes()),
        });
    }
    Ok(SocketAddrV4::new(
        Ipv4Addr::new(n[0], n[1], n[2], n[3]),
        port,
    ))
}

/// Formats `addr` as `h1,h2,h3,h4,p1,p2` for `PORT` and the `227` reply.
pub fn format_port_arg(addr: SocketAddrV4) -> String {
    let [h1, h2, h3, h4] = addr.ip().octets();
    let [p1, p2] = addr.port().to_be_bytes();
    format!("{h1},{h2},{h3},{h4},{p1},{p2}")
}

/// The `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2).` reply (RFC 959
/// 4.1.2, text as vsftpd sends it).
pub fn pasv_reply(addr: SocketAddrV4) -> Reply {
    Reply::trusted(
        PASV_REPLY_CODE,
        format!("Entering Passive Mode ({}).", format_port_arg(addr)),
    )
}

/// Extracts the address from a `227` reply, tolerant of the text around
/// the numbers (see the module documentation).
pub fn parse_pasv_reply(reply: &Reply) -> Result<SocketAddrV4, AddrError> {
    expect_code(reply, PASV_REPLY_CODE)?;
    find_pasv_address(&reply.text())
}

/// Finds the first `h1,h2,h3,h4,p1,p2` (each 0..=255) in `text`.
pub fn find_pasv_address(text: &str) -> Result<SocketAddrV4, AddrError> {
    let bytes = text.as_bytes();
    for (start, &b) in bytes.iter().enumerate() {
        let at_run_start = start == 0 || !bytes[start - 1].is_ascii_digit();
        if !b.is_ascii_digit() || !at_run_start {
            continue;
        }
        let rest = &bytes[start..];
        let end = rest
            .iter()
            .position(|c| !(c.is_ascii_digit() || *c == b','))
            .unwrap_or(rest.len());
        // Six numbers joined by commas, ignoring any trailing comma run.
        let candidate: Vec<&[u8]> = rest[..end].split(|c| *c == b',').take(6).collect();
        if candidate.len() == 6 && candidate.iter().all(|f| !f.is_empty()) {
            let joined = candidate.join(&b","[..]);
            if let Ok(s) = std::str::from_utf8(&joined) {
                match parse_port_arg(s) {
                    Ok(addr) => return Ok(addr),
                    Err(AddrError::PortZero { .. }) => {
                        return Err(AddrError::PortZero {
                            input: quote(text.as_bytes()),
                        });
                    }
                    Err(_) => {}
                }
            }
        }
    }
    Err(AddrError::NoPasvAddress {
        text: quote(text.as_bytes()),
    })
}

/// Parses the `EPRT` argument `<d><proto><d><addr><d><port><d>` (RFC 2428
/// section 2): proto 1 is IPv4 dotted decimal, 2 is IPv6 text form; any
/// other number is [`AddrError::UnsupportedProtocol`] (reply 522).
pub fn parse_eprt_arg(input: &str) -> Result<SocketAddr, AddrError> {
    let q = || quote(input.as_bytes());
    let Some(d) = input.chars().next() else {
        return Err(AddrError::BadExtendedForm { input: q() });
    };
    if !matches!(u32::from(d), 33..=126) {
        return Err(AddrError::BadDelimiter { input: q() });
    }
    let fields: Vec<&str> = input[1..].split(d).collect();
    let [proto, addr, port, last] = fields.as_slice() else {
        return Err(AddrError::BadExtendedForm { input: q() });
    };
    if !last.is_empty() {
        return Err(AddrError::BadExtendedForm { input: q() });
    }
    let protocol = decimal(proto, 5)
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(|| AddrError::BadExtendedForm { input: q() })?;
    let port = port_field(input, port)?;
    let bad_address = |version| AddrError::BadAddress {
        input: q(),
        addr: quote(addr.as_bytes()),
        version,
    };
    match protocol {
        1 => {
            let ip: Ipv4Addr = addr.parse().map_err(|_| bad_address(4))?;
            Ok(SocketAddr::V4(SocketAddrV4::new(ip, port)))
        }
        2 => {
            let ip: Ipv6Addr = addr.parse().map_err(|_| bad_address(6))?;
            Ok(SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0)))
        }
        protocol => Err(AddrError::UnsupportedProtocol {
            input: q(),
            protocol,
        }),
    }
}

/// Formats `addr` as the `EPRT` argument `|1|a.b.c.d|port|` or
/// `|2|v6addr|port|` (RFC 2428 section 2; flow label and scope id dropped).
pub fn format_eprt_arg(addr: SocketAddr) -> String {
    let d = EXTENDED_DELIMITER;
    match addr {
        SocketAddr::V4(a) => format!("{d}1{d}{}{d}{}{d}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("{d}2{d}{}{d}{}{d}", a.ip(), a.port()),
    }
}

/// The `229 Entering Extended Passive Mode (|||port|)` reply (RFC 2428
/// section 3). `port` is the listening port, never 0 in practice.
pub fn epsv_reply(port: u16) -> Reply {
    let d = EXTENDED_DELIMITER;
    Reply::trusted(
        EPSV_REPLY_CODE,
        format!("Entering Extended Passive Mode ({d}{d}{d}{port}{d})"),
    )
}

/// Extracts the port from a `229` reply (RFC 2428 section 3).
pub fn parse_epsv_reply(reply: &Reply) -> Result<u16, AddrError> {
    expect_code(reply, EPSV_REPLY_CODE)?;
    find_epsv_port(&reply.text())
}

/// Finds `(<d><d><d>port<d>)` in `text`, any delimiter in 33..=126; a
/// non-empty protocol or address field is tolerated and ignored.
pub fn find_epsv_port(text: &str) -> Result<u16, AddrError> {
    let not_found = || AddrError::NoEpsvPort {
        text: quote(text.as_bytes()),
    };
    for (open, _) in text.match_indices('(') {
        let inner = &text[open + 1..];
        let Some(close) = inner.find(')') else {
            break;
        };
        let inner = &inner[..close];
        let Some(d) = inner
            .chars()
            .next()
            .filter(|c| matches!(u32::from(*c), 33..=126))
        else {
            continue;
        };
        let fields: Vec<&str> = inner[1..].split(d).collect();
        if let [_proto, _addr, port, ""] = fields.as_slice() {
            return match decimal(port, 5).and_then(|p| u16::try_from(p).ok()) {
                Some(0) => Err(AddrError::PortZero {
                    input: quote(text.as_bytes()),
                }),
                Some(port) => Ok(port),
                None => Err(AddrError::BadPort {
                    input: quote(text.as_bytes()),
                    port: quote(port.as_bytes()),
                }),
            };
        }
    }
    Err(not_found())
}

fn expect_code(reply: &Reply, expected: u16) -> Result<(), AddrError> {
    if reply.code() == expected {
        Ok(())
    } else {
        Err(AddrError::WrongReplyCode {
            expected,
            got: reply.code(),
            text: quote(reply.text().as_bytes()),
        })
    }
}

#[cfg(test)]
mod tests;
