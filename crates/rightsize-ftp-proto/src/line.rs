//! Server-side framing of the control connection into command lines.
//!
//! The control connection is a Telnet NVT stream (RFC 959 section 4.1.3,
//! RFC 854). [`LineReader`] is an incremental state machine: the caller
//! pushes whatever bytes it read and gets back at most one [`LineEvent`] per
//! call plus the number of bytes consumed, so a batch of pipelined commands
//! never queues up inside the reader. It guarantees: no panic on any input;
//! memory bounded by [`MAX_LINE_BYTES`] whatever the peer sends; Telnet
//! commands removed (so `IAC IP IAC DM ABOR` yields `ABOR`); exactly one
//! [`LineEvent::TooLong`] per overlong line, as soon as the limit is passed,
//! and nothing more from that line. It reads no clock and does no I/O.
//!
//! Decisions a server must know:
//! - Lines end in CRLF; a bare LF also ends a line, and so does a bare CR
//!   that is followed by anything but LF or NUL (RFC 854 allows CR only before
//!   LF or NUL). `CR NUL` is a literal CR in the line (RFC 2640 section 3.1).
//!   A CR at the very end of the pushed bytes is held until the next byte
//!   tells which case it is.
//! - Telnet: `IAC IAC` is a data byte 0xFF; `IAC WILL|WONT|DO|DONT <opt>` and
//!   the two-byte commands (IP, DM, NOP, AO, AYT, EC, EL, GA, BRK, SB, SE)
//!   are dropped without a reply (no option is ever agreed, as vsftpd does).
//!   `IAC` followed by a byte below 240 is not a Telnet command: the IAC is
//!   dropped and the byte kept. That covers a client whose urgent `DM` was
//!   taken out of band; the system layer should still set `SO_OOBINLINE`
//!   (Python's ftplib sends the whole `ABOR\r\n` as urgent data).
//! - Empty lines are reported; `command::parse` answers them with 500.
//! - After `TooLong` the server should reply `500 Input line too long.` and
//!   close the connection, as vsftpd does; the reader itself recovers at the
//!   next line end if the server prefers to continue.

/// Longest command line accepted, in bytes after Telnet decoding and without
/// the line end (vsftpd's `VSFTP_MAX_COMMAND_LINE`).
pub const MAX_LINE_BYTES: usize = 4096;

const LF: u8 = b'\n';
const CR: u8 = b'\r';
const NUL: u8 = 0;
/// Telnet "interpret as command" (RFC 854).
const IAC: u8 = 255;
/// Telnet `SE`, the lowest command code (RFC 854).
const TELNET_SE: u8 = 240;
/// Telnet `SB`, the highest two-byte command code (RFC 854).
const TELNET_SB: u8 = 250;
/// Telnet `WILL`; `WILL`..=`DONT` carry one option byte (RFC 854).
const TELNET_WILL: u8 = 251;
/// Telnet `DONT` (RFC 854).
const TELNET_DONT: u8 = 254;

/// What one call to [`LineReader::push`] (or [`ReplyParser::push`]) did.
///
/// [`ReplyParser::push`]: crate::reply::ReplyParser::push
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress<T> {
    /// How many of the pushed bytes were used, in bytes; push the rest again.
    /// Always at least 1 when the pushed slice was not empty.
    pub consumed: usize,
    /// The item completed by those bytes, if any.
    pub output: Option<T>,
}

/// One result of control-line framing (RFC 959 section 4.1.3).
#[derive(Clone, PartialEq, Eq)]
pub enum LineEvent {
    /// A complete line, Telnet-decoded, without its line end; at most
    /// [`MAX_LINE_BYTES`] long.
    Line(Vec<u8>),
    /// The current line passed [`MAX_LINE_BYTES`]; the rest of it will be
    /// discarded. Reported once per overlong line.
    TooLong,
}

impl std::fmt::Debug for LineEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineEvent::Line(bytes) => write!(f, "Line(\"{}\")", bytes.escape_ascii()),
            LineEvent::TooLong => f.write_str("TooLong"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Telnet {
    #[default]
    Data,
    /// After an `IAC`.
    Iac,
    /// After `IAC WILL|WONT|DO|DONT`: the next byte is the option code.
    OptionCode,
}

/// Incremental splitter of a control connection into command lines
/// (RFC 959 section 4.1.3, RFC 854); see the module documentation.
///
/// A server's read loop, one reply per line:
///
/// ```
/// use rightsize_ftp_proto::{LineEvent, LineReader, parse};
///
/// let mut reader = LineReader::new();
/// let mut codes = Vec::new();
/// for event in reader.feed(b"USER anonymous\r\nTYPE X\r\n\xff\xf4\xff\xf2ABOR\r\n") {
///     match event {
///         LineEvent::Line(line) => match parse(&line) {
///             Ok(command) => codes.push(command.verb().to_owned()),
///             Err(error) => codes.push(error.reply_code().to_string()),
///         },
///         // Reply "500 Input line too long." and close the connection.
///         LineEvent::TooLong => break,
///     }
/// }
/// assert_eq!(codes, ["USER", "501", "ABOR"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct LineReader {
    /// The current line so far; never longer than [`MAX_LINE_BYTES`].
    line: Vec<u8>,
    telnet: Telnet,
    /// A CR was seen; the next data byte decides what it meant.
    pending_cr: bool,
    /// The current line passed the limit and is being skipped to its end.
    discarding: bool,
}

impl LineReader {
    /// A reader at the start of a line.
    pub fn new() -> LineReader {
        LineReader::default()
    }

    /// Consumes bytes up to and including the end of the first event, and
    /// returns that event. Call again with the unconsumed rest; when
    /// `output` is `None`, all bytes were consumed and more input is needed.
    pub fn push(&mut self, input: &[u8]) -> Progress<LineEvent> {
        for (i, &byte) in input.iter().enumerate() {
            let event = match self.telnet_decode(byte) {
                Some(data) => self.accept(data),
                None => None,
            };
            if event.is_some() {
                return Progress {
                    consumed: i + 1,
                    output: event,
                };
            }
        }
        Progress {
            consumed: input.len(),
            output: None,
        }
    }

    /// Iterates over the events in `input`. Bytes after the last event stay
    /// in the reader's state; if the iterator is dropped early,
    /// [`Events::remaining`] tells what was not consumed.
    pub fn feed<'r, 'i>(&'r mut self, input: &'i [u8]) -> Events<'r, 'i> {
        Events {
            reader: self,
            input,
        }
    }

    /// Bytes of the current, incomplete line held, in bytes (0 while
    /// discarding an overlong line).
    pub fn buffered_bytes(&self) -> usize {
        self.line.len()
    }

    /// True while the rest of an overlong line is being discarded.
    pub fn is_discarding(&self) -> bool {
        self.discarding
    }

    /// Telnet layer: returns the data byte carried by `byte`, if any.
    fn telnet_decode(&mut self, byte: u8) -> Option<u8> {
        match self.telnet {
            Telnet::Data if byte == IAC => {
                self.telnet = Telnet::Iac;
                None
            }
            Telnet::Data => Some(byte),
            Telnet::Iac => {
                self.telnet = Telnet::Data;
                match byte {
                    IAC => Some(IAC),
                    TELNET_WILL..=TELNET_DONT => {
                        self.telnet = Telnet::OptionCode;
                        None
                    }
                    TELNET_SE..=TELNET_SB => None,
                    // Not a command: a stray IAC (for example one whose DM
                    // went out of band). Keep the byte, drop the IAC.
                    _ => Some(byte),
                }
            }
            Telnet::OptionCode => {
                self.telnet = Telnet::Data;
                None
            }
        }
    }

    /// Line layer: takes one data byte.
    fn accept(&mut self, byte: u8) -> Option<LineEvent> {
        if std::mem::take(&mut self.pending_cr) {
            match byte {
                LF => return self.end_line(),
                NUL => return self.append(CR),
                _ => {
                    // A bare CR ended the line; `byte` starts the next one,
                    // which holds at most this byte, so it cannot be too long.
                    let ended = self.end_line();
                    if byte == CR {
                        self.pending_cr = true;
                    } else {
                        self.line.push(byte);
                    }
                    return ended;
                }
            }
        }
        match byte {
            LF => self.end_line(),
            CR => {
                self.pending_cr = true;
                None
            }
            _ => self.append(byte),
        }
    }

    fn append(&mut self, byte: u8) -> Option<LineEvent> {
        if self.discarding {
            return None;
        }
        if self.line.len() >= MAX_LINE_BYTES {
            self.discarding = true;
            self.line = Vec::new();
            return Some(LineEvent::TooLong);
        }
        self.line.push(byte);
        None
    }

    fn end_line(&mut self) -> Option<LineEvent> {
        if std::mem::take(&mut self.discarding) {
            return None;
        }
        Some(LineEvent::Line(std::mem::take(&mut self.line)))
    }
}

/// Iterator over the events in one pushed slice; see [`LineReader::feed`].
#[derive(Debug)]
pub struct Events<'r, 'i> {
    reader: &'r mut LineReader,
    input: &'i [u8],
}

impl<'i> Events<'_, 'i> {
    /// The input not consumed yet.
    pub fn remaining(&self) -> &'i [u8] {
        self.input
    }
}

impl Iterator for Events<'_, '_> {
    type Item = LineEvent;

    fn next(&mut self) -> Option<LineEvent> {
        while !self.input.is_empty() {
            let progress = self.reader.push(self.input);
            self.input = self.input.get(progress.consumed..).unwrap_or(&[]);
            if progress.output.is_some() {
                return progress.output;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &[u8]) -> Vec<LineEvent> {
        LineReader::new().feed(input).collect()
    }

    fn line(s: &[u8]) -> LineEvent {
        LineEvent::Line(s.to_vec())
    }

    #[test]
    fn curl_login_sequence_splits_on_crlf() {
        let wire = b"USER anonymous\r\nPASS ftp@example.com\r\nPWD\r\nEPSV\r\nTYPE I\r\n";
        assert_eq!(
            events(wire),
            vec![
                line(b"USER anonymous"),
                line(b"PASS ftp@example.com"),
                line(b"PWD"),
                line(b"EPSV"),
                line(b"TYPE I"),
            ]
        );
    }

    #[test]
    fn bare_lf_ends_a_line() {
        assert_eq!(events(b"NOOP\nSYST\n"), vec![line(b"NOOP"), line(b"SYST")]);
    }

    #[test]
    fn bare_cr_followed_by_text_ends_a_line() {
        // ftplib's urgent ABOR with the LF taken out of band.
        assert_eq!(
            events(b"ABOR\rTYPE I\r\n"),
            vec![line(b"ABOR"), line(b"TYPE I")]
        );
        assert_eq!(events(b"A\r\rB\n"), vec![line(b"A"), line(b""), line(b"B")]);
    }

    #[test]
    fn cr_nul_is_a_literal_cr() {
        assert_eq!(events(b"RETR a\r\0b\r\n"), vec![line(b"RETR a\rb")]);
    }

    #[test]
    fn trailing_cr_waits_for_the_next_byte() {
        let mut r = LineReader::new();
        assert_eq!(r.feed(b"NOOP\r").count(), 0);
        assert_eq!(r.feed(b"\n").collect::<Vec<_>>(), vec![line(b"NOOP")]);
    }

    #[test]
    fn telnet_abort_sequence_is_stripped() {
        // RFC 959 4.1.3: IAC IP, IAC DM (Synch), then ABOR.
        let wire = b"\xff\xf4\xff\xf2ABOR\r\n";
        assert_eq!(events(wire), vec![line(b"ABOR")]);
        // DM taken out of band leaves a stray IAC before the verb.
        assert_eq!(events(b"\xff\xf4\xffABOR\r\n"), vec![line(b"ABOR")]);
    }

    #[test]
    fn telnet_negotiation_and_escaped_iac() {
        let wire = b"\xff\xfb\x01\xff\xfd\x03RETR \xff\xff\xff\xfe\x22x\r\n";
        assert_eq!(events(wire), vec![line(b"RETR \xffx")]);
    }

    #[test]
    fn iac_between_cr_and_lf_is_transparent() {
        assert_eq!(events(b"NOOP\r\xff\xf1\n"), vec![line(b"NOOP")]);
    }

    #[test]
    fn line_of_exactly_the_limit_is_accepted() {
        let mut wire = vec![b'a'; MAX_LINE_BYTES];
        wire.extend_from_slice(b"\r\n");
        assert_eq!(
            events(&wire),
            vec![LineEvent::Line(vec![b'a'; MAX_LINE_BYTES])]
        );
    }

    #[test]
    fn overlong_line_yields_one_too_long_then_recovers() {
        let mut wire = vec![b'a'; 3 * MAX_LINE_BYTES];
        wire.extend_from_slice(b"\r\nNOOP\r\n");
        assert_eq!(events(&wire), vec![LineEvent::TooLong, line(b"NOOP")]);
    }

    #[test]
    fn too_long_is_reported_before_the_line_ends() {
        let mut r = LineReader::new();
        let wire = vec![b'x'; MAX_LINE_BYTES + 1];
        let p = r.push(&wire);
        assert_eq!(p.output, Some(LineEvent::TooLong));
        assert_eq!(p.consumed, MAX_LINE_BYTES + 1);
        assert!(r.is_discarding());
        assert_eq!(r.buffered_bytes(), 0);
        // Endless garbage without a line end produces nothing more.
        for _ in 0..10 {
            assert_eq!(r.feed(&wire).count(), 0);
        }
    }

    #[test]
    fn overlong_line_counts_decoded_bytes() {
        // 4096 escaped IACs are 4096 data bytes: within the limit.
        let mut wire = b"\xff\xff".repeat(MAX_LINE_BYTES);
        wire.extend_from_slice(b"\n");
        assert_eq!(
            events(&wire),
            vec![LineEvent::Line(vec![0xff; MAX_LINE_BYTES])]
        );
    }

    #[test]
    fn push_stops_after_each_event() {
        let mut r = LineReader::new();
        let wire = b"NOOP\r\nQUIT\r\n";
        let p = r.push(wire);
        assert_eq!((p.consumed, p.output), (6, Some(line(b"NOOP"))));
        let p = r.push(&wire[6..]);
        assert_eq!((p.consumed, p.output), (6, Some(line(b"QUIT"))));
        assert_eq!(r.push(b"").consumed, 0);
    }

    #[test]
    fn feed_remaining_reports_unconsumed_input() {
        let mut r = LineReader::new();
        let mut it = r.feed(b"NOOP\r\nQUIT\r\n");
        assert_eq!(it.next(), Some(line(b"NOOP")));
        assert_eq!(it.remaining(), b"QUIT\r\n");
    }

    #[test]
    fn byte_at_a_time_matches_whole_input() {
        let wire = b"USER a\r\n\xff\xf4\xff\xf2ABOR\r\nX\rY\nZ\r\0\r\n";
        let mut r = LineReader::new();
        let mut one_by_one = Vec::new();
        for b in wire {
            one_by_one.extend(r.feed(std::slice::from_ref(b)));
        }
        assert_eq!(one_by_one, events(wire));
    }
}
