//! Command arguments as the peer sent them: raw bytes (`Arg`) and ASCII
//! tokens (`Token`).
//!
//! RFC 959 section 5.3.2 defines `<string>` and `<pathname>` as sequences of
//! characters, and RFC 2640 section 2.2 makes them UTF-8; real clients still
//! send Latin-1 or arbitrary bytes. An [`Arg`] therefore keeps the bytes
//! exactly (lossless, never decoded), so a server can name any file the
//! system can and a client can send any name it was given. Both types
//! guarantee by construction that they can be written on one control line:
//! an `Arg` is non-empty and holds no LF (the one byte the line framing cannot
//! carry; CR travels as Telnet `CR NUL`, RFC 2640 section 3.1), and a
//! [`Token`] is a non-empty run of printable ASCII without spaces.

use std::borrow::Cow;
use std::fmt;

/// Longest prefix of an offending input quoted in an error message, in bytes.
const QUOTE_MAX_BYTES: usize = 64;

/// Quotes untrusted bytes for an error message: lossy UTF-8, control
/// characters escaped, truncated to [`QUOTE_MAX_BYTES`] so a hostile line
/// cannot blow up a log.
pub(crate) fn quote(bytes: &[u8]) -> String {
    let (head, cut) = match bytes.get(..QUOTE_MAX_BYTES) {
        Some(head) if head.len() < bytes.len() => (head, true),
        _ => (bytes, false),
    };
    let mut out: String = String::from_utf8_lossy(head).escape_debug().collect();
    if cut {
        out.push_str("...");
    }
    out
}

/// `bytes` without its leading and trailing spaces (only `' '`: a tab or
/// a CR is part of an argument).
pub(crate) fn trim_spaces(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != b' ').unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| *b != b' ')
        .map_or(start, |i| i + 1);
    bytes.get(start..end).unwrap_or(&[])
}

/// Why bytes cannot be an [`Arg`] or a [`Token`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// The argument is empty; a missing argument is `None`, not an empty one.
    #[error("empty argument")]
    Empty,
    /// An LF would end the command line early (command injection).
    #[error("argument \"{input}\" contains a line feed, which would end the command line")]
    LineFeed {
        /// The offending input, quoted.
        input: String,
    },
    /// A token must be printable ASCII (33..=126) without spaces.
    #[error("\"{input}\" is not a token of printable ASCII without spaces")]
    NotToken {
        /// The offending input, quoted.
        input: String,
    },
}

/// A command argument as raw bytes: a pathname, user name, password or
/// free-form parameter (RFC 959 section 5.3.2, RFC 2640 section 2.2).
///
/// Invariant: non-empty and contains no LF. It may contain spaces (leading,
/// inner and trailing are all kept), CR, NUL and non-UTF-8 bytes; the path
/// layer rejects NUL in pathnames.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arg(Vec<u8>);

impl Arg {
    /// Wraps `bytes`, refusing an empty argument or one holding an LF.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Arg, ArgError> {
        let bytes = bytes.into();
        if bytes.is_empty() {
            return Err(ArgError::Empty);
        }
        if bytes.contains(&b'\n') {
            return Err(ArgError::LineFeed {
                input: quote(&bytes),
            });
        }
        Ok(Arg(bytes))
    }

    /// The bytes exactly as sent.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes, consuming the argument.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The argument as text, if it is valid UTF-8 (RFC 2640).
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The argument as text for display, with invalid UTF-8 replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

impl AsRef<[u8]> for Arg {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl TryFrom<&str> for Arg {
    type Error = ArgError;
    fn try_from(s: &str) -> Result<Arg, ArgError> {
        Arg::new(s)
    }
}

impl TryFrom<&[u8]> for Arg {
    type Error = ArgError;
    fn try_from(b: &[u8]) -> Result<Arg, ArgError> {
        Arg::new(b)
    }
}

impl fmt::Debug for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Arg(\"{}\")", self.0.escape_ascii())
    }
}

impl fmt::Display for Arg {
    /// Lossy UTF-8 with control characters escaped: for logs, not the wire.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, &self.0)
    }
}

/// Writes bytes as lossy UTF-8 with control characters escaped, so a log
/// line stays one line whatever the peer sent.
pub(crate) fn write_escaped(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for c in String::from_utf8_lossy(bytes).chars() {
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            write!(f, "{c}")?;
        }
    }
    Ok(())
}

/// A keyword-like parameter: an authentication mechanism (RFC 2228 `AUTH`),
/// a checksum algorithm (Globus `CKSM`), an `MLST` fact name (RFC 3659
/// section 7.9) or a `SITE`/`OPTS` sub-command name.
///
/// Invariant: non-empty printable ASCII (33..=126), so no space and no
/// control byte. Case is kept as sent; compare with
/// [`Token::eq_ignore_ascii_case`], as the RFCs make these case-insensitive.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(String);

impl Token {
    /// Checks that `s` is non-empty printable ASCII without spaces.
    pub fn new(s: impl Into<String>) -> Result<Token, ArgError> {
        let s = s.into();
        if s.is_empty() {
            return Err(ArgError::Empty);
        }
        if !s.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ArgError::NotToken {
                input: quote(s.as_bytes()),
            });
        }
        Ok(Token(s))
    }

    /// Like [`Token::new`] for bytes off the wire.
    pub fn from_bytes(bytes: &[u8]) -> Result<Token, ArgError> {
        if bytes.is_empty() {
            return Err(ArgError::Empty);
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => Token::new(s),
            Err(_) => Err(ArgError::NotToken {
                input: quote(bytes),
            }),
        }
    }

    /// The token as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Case-insensitive comparison, as for verbs and mechanism names.
    pub fn eq_ignore_ascii_case(&self, other: &str) -> bool {
        self.0.eq_ignore_ascii_case(other)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<&str> for Token {
    type Error = ArgError;
    fn try_from(s: &str) -> Result<Token, ArgError> {
        Token::new(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn trim_spaces_trims_only_spaces() {
        assert_eq!(trim_spaces(b"  a b  "), b"a b");
        assert_eq!(trim_spaces(b"a"), b"a");
        assert_eq!(trim_spaces(b"   "), b"");
        assert_eq!(trim_spaces(b""), b"");
        assert_eq!(trim_spaces(b"\ta\r "), b"\ta\r");
    }

    #[test]
    fn arg_keeps_bytes_exactly() {
        let a = Arg::new(&b" caf\xe9 \r\0x "[..]).unwrap();
        assert_eq!(a.as_bytes(), b" caf\xe9 \r\0x ");
        assert_eq!(a.to_str(), None);
        assert_eq!(format!("{a:?}"), "Arg(\" caf\\xe9 \\r\\x00x \")");
        assert_eq!(a.to_string(), " caf\u{fffd} \\r\\u{0}x ");
    }

    #[test]
    fn arg_refuses_empty_and_line_feed() {
        assert_eq!(Arg::new(""), Err(ArgError::Empty));
        let err = Arg::new("a\nDELE x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "argument \"a\\nDELE x\" contains a line feed, which would end the command line"
        );
    }

    #[test]
    fn token_is_printable_ascii_without_space() {
        assert_eq!(Token::new("TLS").unwrap().as_str(), "TLS");
        assert!(Token::new("UNIX.mode").is_ok());
        assert!(Token::new("a b").is_err());
        assert!(Token::new("é").is_err());
        assert!(Token::new("").is_err());
        assert!(Token::from_bytes(b"\xff").is_err());
        assert!(Token::new("tls").unwrap().eq_ignore_ascii_case("TLS"));
    }

    #[test]
    fn quote_truncates_and_escapes() {
        let long = vec![b'a'; 200];
        let q = quote(&long);
        assert_eq!(q.len(), QUOTE_MAX_BYTES + 3);
        assert!(q.ends_with("..."));
        assert_eq!(quote(b"a\r\n\"b"), "a\\r\\n\\\"b");
    }
}
