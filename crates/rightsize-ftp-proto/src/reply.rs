//! FTP replies: the [`Reply`] value, its wire encoding, and the incremental
//! client-side [`ReplyParser`] (RFC 959 section 4.2).
//!
//! Guarantees: a `Reply` always has a code in 100..=599 and at least one line
//! without CR or LF, so [`Reply::encode`] always produces exactly one
//! well-formed reply that a peer reads back as one reply. `ReplyParser`
//! never panics and holds at most its configured line and reply limits
//! whatever the server sends; garbage yields typed errors, not a stuck parser.
//! No clock, no I/O.
//!
//! Decisions a client or server must know:
//! - Reply text is `String`. Bytes that are not UTF-8 are replaced by U+FFFD
//!   when parsing (names in a `257` reply from a Latin-1 server are lossy);
//!   a stray CR inside a line also becomes U+FFFD.
//! - Encoding a multi-line reply indents by one space any middle line that
//!   starts with a digit (RFC 959 4.2), so `213 x` inside a listing cannot end
//!   the reply early. Parsing does not remove that space.
//! - Parsing strips a `ccc-` prefix from middle lines that repeat the reply
//!   code (some servers prefix every line), tolerates a bare LF, a code with
//!   no text (`200\r\n`), and blank lines between replies.
//! - After an error the parser resynchronises: it drops the rest of the bad
//!   line and, if the bad line opened or belonged to a multi-line reply,
//!   the rest of that reply. The control channel may still be out of step;
//!   a client should usually close it.
//! - Telnet commands from the server are not interpreted; servers do not
//!   send them.

use std::fmt;

use super::arg::quote;
use super::line::Progress;

/// Default longest reply line accepted by [`ReplyParser`], in bytes
/// including a trailing CR. Twice Linux `PATH_MAX`, so a `257` reply with a
/// long quoted path fits.
pub const DEFAULT_MAX_REPLY_LINE_BYTES: usize = 8192;
/// Default largest multi-line reply accepted by [`ReplyParser`], in bytes as
/// counted by [`REPLY_LINE_OVERHEAD_BYTES`]. Enough for `STAT` of a large
/// directory over the control connection.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 1 << 20;
/// Bytes charged per reply line on top of its length when enforcing the
/// reply limit, so a flood of empty lines is bounded too.
pub const REPLY_LINE_OVERHEAD_BYTES: usize = 32;
/// Smallest line limit [`ReplyParser::with_limits`] accepts, in bytes: a
/// code and its separator must fit.
const MIN_LINE_LIMIT_BYTES: usize = 16;

/// Why a [`Reply`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// RFC 959 4.2: the first digit is 1 to 5.
    #[error("reply code {code} is outside 100..=599")]
    CodeOutOfRange {
        /// The refused code.
        code: u16,
    },
    /// A reply has at least one line.
    #[error("reply {code} has no lines")]
    NoLines {
        /// The reply code.
        code: u16,
    },
    /// CR or LF in a line would break the reply framing.
    #[error("reply {code} line \"{line}\" contains CR or LF")]
    LineBreak {
        /// The reply code.
        code: u16,
        /// The offending line, quoted.
        line: String,
    },
}

/// What a server sent that is not a well-formed reply (RFC 959 4.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyParseError {
    /// A line passed the parser's line limit; the rest of it is dropped.
    #[error("reply line longer than {limit_bytes} bytes, starting \"{start}\"")]
    LineTooLong {
        /// The line limit, in bytes.
        limit_bytes: usize,
        /// The start of the line, quoted.
        start: String,
    },
    /// A multi-line reply passed the parser's reply limit; dropped.
    #[error("multi-line reply {code} larger than {limit_bytes} bytes")]
    ReplyTooLong {
        /// The reply code.
        code: u16,
        /// The reply limit, in bytes.
        limit_bytes: usize,
    },
    /// The line does not start with three digits and a space, hyphen or end.
    #[error("malformed reply line \"{line}\"")]
    Malformed {
        /// The offending line, quoted.
        line: String,
    },
    /// Three digits outside 100..=599.
    #[error("invalid reply code in \"{line}\"")]
    InvalidCode {
        /// The offending line, quoted.
        line: String,
    },
}

/// The five reply classes of RFC 959 section 4.2.1 (the first digit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyKind {
    /// 1yz: action started, expect another reply (e.g. `150`).
    PositivePreliminary,
    /// 2yz: action completed (e.g. `226`).
    PositiveCompletion,
    /// 3yz: command accepted, send the next one (e.g. `331`, `350`).
    PositiveIntermediate,
    /// 4yz: not done, may succeed if retried (e.g. `425`, `450`).
    TransientNegative,
    /// 5yz: not done, do not retry as is (e.g. `500`, `550`).
    PermanentNegative,
}

impl ReplyKind {
    /// The class of `code`, or `None` outside 100..=599.
    pub fn of(code: u16) -> Option<ReplyKind> {
        match code {
            100..=199 => Some(ReplyKind::PositivePreliminary),
            200..=299 => Some(ReplyKind::PositiveCompletion),
            300..=399 => Some(ReplyKind::PositiveIntermediate),
            400..=499 => Some(ReplyKind::TransientNegative),
            500..=599 => Some(ReplyKind::PermanentNegative),
            _ => None,
        }
    }
}

/// One FTP reply (RFC 959 section 4.2): a code and one or more text lines.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reply {
    code: u16,
    lines: Vec<String>,
}

impl Reply {
    /// A single-line reply `code text` (RFC 959 4.2). `text` may be empty.
    pub fn new(code: u16, text: impl Into<String>) -> Result<Reply, ReplyError> {
        Reply::multiline(code, vec![text.into()])
    }

    /// A reply of one or more lines; the first and last carry the code
    /// (`211-first`, ..., `211 last`), the middle ones are sent as is except
    /// for the digit indentation described in the module documentation.
    /// For `FEAT` (RFC 2389 3.2) give feature lines with their leading space.
    pub fn multiline(code: u16, lines: Vec<String>) -> Result<Reply, ReplyError> {
        if ReplyKind::of(code).is_none() {
            return Err(ReplyError::CodeOutOfRange { code });
        }
        if lines.is_empty() {
            return Err(ReplyError::NoLines { code });
        }
        if let Some(bad) = lines.iter().find(|l| l.contains(['\r', '\n'])) {
            return Err(ReplyError::LineBreak {
                code,
                line: quote(bad.as_bytes()),
            });
        }
        Ok(Reply { code, lines })
    }

    /// Builds a reply from parts this crate knows to be valid.
    pub(crate) fn trusted(code: u16, text: String) -> Reply {
        debug_assert!(Reply::new(code, text.clone()).is_ok(), "{code} {text:?}");
        Reply {
            code,
            lines: vec![text],
        }
    }

    /// The reply code, in 100..=599.
    pub fn code(&self) -> u16 {
        self.code
    }

    /// The text lines, at least one; the code prefixes are not included.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// All lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The class of the reply (RFC 959 4.2.1).
    pub fn kind(&self) -> ReplyKind {
        ReplyKind::of(self.code).unwrap_or(ReplyKind::PermanentNegative)
    }

    /// 1yz: more replies follow for this command.
    pub fn is_preliminary(&self) -> bool {
        self.kind() == ReplyKind::PositivePreliminary
    }

    /// 2yz: the command completed.
    pub fn is_completion(&self) -> bool {
        self.kind() == ReplyKind::PositiveCompletion
    }

    /// 3yz: the server waits for the next command of a sequence.
    pub fn is_intermediate(&self) -> bool {
        self.kind() == ReplyKind::PositiveIntermediate
    }

    /// 4yz: failed, worth retrying.
    pub fn is_transient_negative(&self) -> bool {
        self.kind() == ReplyKind::TransientNegative
    }

    /// 5yz: failed, not worth retrying as is.
    pub fn is_permanent_negative(&self) -> bool {
        self.kind() == ReplyKind::PermanentNegative
    }

    /// 4yz or 5yz.
    pub fn is_negative(&self) -> bool {
        self.code >= 400
    }

    /// The reply as wire bytes, each line ended by CRLF (RFC 959 4.2).
    pub fn encode(&self) -> Vec<u8> {
        let code = self.code.to_string();
        let mut out = Vec::with_capacity(self.lines.iter().map(|l| l.len() + 6).sum());
        match self.lines.as_slice() {
            [] => push_line(&mut out, &code, b' ', ""),
            [only] => push_line(&mut out, &code, b' ', only),
            [first, middle @ .., last] => {
                push_line(&mut out, &code, b'-', first);
                for line in middle {
                    if line.starts_with(|c: char| c.is_ascii_digit()) {
                        out.push(b' ');
                    }
                    out.extend_from_slice(line.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                push_line(&mut out, &code, b' ', last);
            }
        }
        out
    }
}

fn push_line(out: &mut Vec<u8>, code: &str, sep: u8, text: &str) {
    out.extend_from_slice(code.as_bytes());
    out.push(sep);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

impl fmt::Display for Reply {
    /// One log line: the code and the lines joined with ` | `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.lines.join(" | "))
    }
}

/// Quotes a pathname for a `257` reply (RFC 959 Appendix II): enclosed in
/// double quotes, embedded quotes doubled. Non-UTF-8 bytes, CR and LF
/// become U+FFFD, so the reply stays one valid line.
pub fn quote_pathname(path: &[u8]) -> String {
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for c in String::from_utf8_lossy(path).chars() {
        match c {
            '"' => out.push_str("\"\""),
            '\r' | '\n' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Debug, Clone)]
struct Pending {
    code: u16,
    lines: Vec<String>,
    charged_bytes: usize,
}

/// Incremental client-side reply parser (RFC 959 section 4.2); see the
/// module documentation for what it tolerates.
///
/// ```
/// use rightsize_ftp_proto::ReplyParser;
///
/// let mut parser = ReplyParser::new();
/// // Bytes arrive in arbitrary pieces; replies come out whole.
/// let mut replies = Vec::new();
/// for chunk in [&b"211-Features:\r\n SBUF\r"[..], b"\n211 End\r\n150 Op", b"ening\r\n"] {
///     replies.extend(parser.feed(chunk));
/// }
/// let feat = replies[0].as_ref().expect("well-formed");
/// assert_eq!(feat.lines(), ["Features:", " SBUF", "End"]);
/// assert!(replies[1].as_ref().expect("well-formed").is_preliminary());
/// ```
#[derive(Debug, Clone)]
pub struct ReplyParser {
    line: Vec<u8>,
    /// The current line passed the limit; skipping to its end.
    overflow: bool,
    /// A multi-line reply being collected.
    pending: Option<Pending>,
    /// After an error inside a multi-line reply: skip to its last line.
    skip_until: Option<u16>,
    max_line_bytes: usize,
    max_reply_bytes: usize,
}

impl Default for ReplyParser {
    fn default() -> ReplyParser {
        ReplyParser::new()
    }
}

impl ReplyParser {
    /// A parser with [`DEFAULT_MAX_REPLY_LINE_BYTES`] and
    /// [`DEFAULT_MAX_REPLY_BYTES`].
    pub fn new() -> ReplyParser {
        ReplyParser::with_limits(DEFAULT_MAX_REPLY_LINE_BYTES, DEFAULT_MAX_REPLY_BYTES)
    }

    /// A parser with other limits, in bytes; the line limit is raised to
    /// at least 16.
    pub fn with_limits(max_line_bytes: usize, max_reply_bytes: usize) -> ReplyParser {
        ReplyParser {
            line: Vec::new(),
            overflow: false,
            pending: None,
            skip_until: None,
            max_line_bytes: max_line_bytes.max(MIN_LINE_LIMIT_BYTES),
            max_reply_bytes,
        }
    }

    /// True between replies: no partial line or reply is held.
    pub fn is_idle(&self) -> bool {
        self.line.is_empty()
            && !self.overflow
            && self.pending.is_none()
            && self.skip_until.is_none()
    }

    /// Consumes bytes up to the end of the first complete reply or error and
    /// returns it; call again with the unconsumed rest. With `output: None`
    /// all bytes were consumed and more are needed.
    pub fn push(&mut self, input: &[u8]) -> Progress<Result<Reply, ReplyParseError>> {
        for (i, &byte) in input.iter().enumerate() {
            let output = if byte == b'\n' {
                if std::mem::take(&mut self.overflow) {
                    self.line.clear();
                    None
                } else {
                    let line = std::mem::take(&mut self.line);
                    self.on_line(&line)
                }
            } else if self.overflow {
                None
            } else if self.line.len() >= self.max_line_bytes {
                self.on_overflow()
            } else {
                self.line.push(byte);
                None
            };
            if output.is_some() {
                return Progress {
                    consumed: i + 1,
                    output,
                };
            }
        }
        Progress {
            consumed: input.len(),
            output: None,
        }
    }

    /// Iterates over the replies and errors in `input`; bytes after the last
    /// one stay in the parser.
    pub fn feed<'p, 'i>(&'p mut self, input: &'i [u8]) -> Replies<'p, 'i> {
        Replies {
            parser: self,
            input,
        }
    }

    fn on_overflow(&mut self) -> Option<Result<Reply, ReplyParseError>> {
        self.overflow = true;
        let line = std::mem::take(&mut self.line);
        if let Some(code) = self.skip_until {
            if is_last_line(code, &line) {
                self.skip_until = None;
            }
            return None;
        }
        if let Some(p) = self.pending.take() {
            if !is_last_line(p.code, &line) {
                self.skip_until = Some(p.code);
            }
        } else if let Some((code, b'-')) = code_and_separator(&line) {
            self.skip_until = Some(code);
        }
        Some(Err(ReplyParseError::LineTooLong {
            limit_bytes: self.max_line_bytes,
            start: quote(&line),
        }))
    }

    fn on_line(&mut self, raw: &[u8]) -> Option<Result<Reply, ReplyParseError>> {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if let Some(code) = self.skip_until {
            if is_last_line(code, line) {
                self.skip_until = None;
            }
            return None;
        }
        let Some(mut p) = self.pending.take() else {
            return self.on_first_line(line);
        };
        if is_last_line(p.code, line) {
            p.lines.push(to_text(line.get(4..).unwrap_or(&[])));
            return Some(Ok(Reply {
                code: p.code,
                lines: p.lines,
            }));
        }
        p.charged_bytes += line.len() + REPLY_LINE_OVERHEAD_BYTES;
        if p.charged_bytes > self.max_reply_bytes {
            self.skip_until = Some(p.code);
            return Some(Err(ReplyParseError::ReplyTooLong {
                code: p.code,
                limit_bytes: self.max_reply_bytes,
            }));
        }
        let text = match code_and_separator(line) {
            Some((code, b'-')) if code == p.code => line.get(4..).unwrap_or(&[]),
            _ => line,
        };
        p.lines.push(to_text(text));
        self.pending = Some(p);
        None
    }

    fn on_first_line(&mut self, line: &[u8]) -> Option<Result<Reply, ReplyParseError>> {
        if line.is_empty() {
            return None;
        }
        let Some((code, sep)) = code_and_separator(line) else {
            return Some(Err(ReplyParseError::Malformed { line: quote(line) }));
        };
        if ReplyKind::of(code).is_none() {
            if sep == b'-' {
                self.skip_until = Some(code);
            }
            return Some(Err(ReplyParseError::InvalidCode { line: quote(line) }));
        }
        let text = to_text(line.get(4..).unwrap_or(&[]));
        match sep {
            b' ' | b'\r' => Some(Ok(Reply {
                code,
                lines: vec![text],
            })),
            b'-' => {
                let charged_bytes = line.len() + REPLY_LINE_OVERHEAD_BYTES;
                if charged_bytes > self.max_reply_bytes {
                    self.skip_until = Some(code);
                    return Some(Err(ReplyParseError::ReplyTooLong {
                        code,
                        limit_bytes: self.max_reply_bytes,
                    }));
                }
                self.pending = Some(Pending {
                    code,
                    lines: vec![text],
                    charged_bytes,
                });
                None
            }
            _ => Some(Err(ReplyParseError::Malformed { line: quote(line) })),
        }
    }
}

/// The code and the byte after it (`\r` standing for "end of line") when
/// `line` starts with three digits followed by a separator or its end.
fn code_and_separator(line: &[u8]) -> Option<(u16, u8)> {
    let digits = line.get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let code = digits
        .iter()
        .fold(0u16, |acc, d| acc * 10 + u16::from(d - b'0'));
    match line.get(3) {
        None => Some((code, b'\r')),
        Some(&sep) if sep == b' ' || sep == b'-' => Some((code, sep)),
        Some(_) => Some((code, 0)),
    }
}

/// RFC 959 4.2: the last line of a multi-line reply is the code then a
/// space (tolerated: the code alone).
fn is_last_line(code: u16, line: &[u8]) -> bool {
    matches!(code_and_separator(line), Some((c, b' ' | b'\r')) if c == code)
}

fn to_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\r', "\u{fffd}")
}

/// Iterator over the replies in one pushed slice; see [`ReplyParser::feed`].
#[derive(Debug)]
pub struct Replies<'p, 'i> {
    parser: &'p mut ReplyParser,
    input: &'i [u8],
}

impl<'i> Replies<'_, 'i> {
    /// The input not consumed yet.
    pub fn remaining(&self) -> &'i [u8] {
        self.input
    }
}

impl Iterator for Replies<'_, '_> {
    type Item = Result<Reply, ReplyParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.input.is_empty() {
            let progress = self.parser.push(self.input);
            self.input = self.input.get(progress.consumed..).unwrap_or(&[]);
            if progress.output.is_some() {
                return progress.output;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
