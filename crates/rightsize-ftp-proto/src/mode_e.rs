//! GridFTP's extended block mode (`MODE E`, OGF GFD.20), pure: the 17-byte
//! block header, a reader that splits one data connection's bytes into
//! blocks as they arrive, the assembly that tells when a transfer over
//! several connections is whole, the byte ranges that restart markers
//! (`111 Range Marker`) and `REST` carry, and the sender's cursor over the
//! blocks still to send.
//!
//! The wire facts (see `docs/ftp-interop.md`): a header is a descriptor
//! byte, a 64-bit byte count and a 64-bit offset, big-endian. A block's
//! data follows its header and lands at its offset, so blocks may come in
//! any order on any connection. A connection's last block carries EOD (or
//! an empty EOD block follows it). One EOF block, on any connection, says
//! in its offset field how many connections carry the transfer; the
//! receiver is done once it has seen that many EODs. Byte ranges are
//! written `start-end` with the end excluded, as the Globus server writes
//! them (`111 Range Marker 0-3000000` for a file of 3,000,000 bytes).
//!
//! Guarantees: no input panics; every violation (a block past the size
//! announced, overlapping blocks, data after EOD, more EODs than the EOF
//! announced, a connection that ends inside a block) is a [`ModeEError`]
//! that names what was seen.

use std::fmt;

/// Bytes in a block header.
pub const HEADER_BYTES: usize = 17;

/// The most connections one `OPTS RETR Parallelism=` may ask for.
pub const MAX_PARALLELISM: u32 = 64;

/// What `OPTS RETR` sets (GFD.20 5, and the Globus server's `markers=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrOpts {
    /// The starting parallelism (`Parallelism=start,min,max;`); 1 when
    /// not given.
    pub parallelism: u32,
    /// `markers=N;`: send a `112` perf marker every N seconds during a
    /// retrieve in MODE E, 0 for none (the Globus server's default).
    /// `None` when not given: the setting stays as it was.
    pub markers_secs: Option<u32>,
}

/// Parses `OPTS RETR` arguments, such as `Parallelism=4,4,4;` (start,
/// minimum, maximum; GFD.20 5) or `markers=5;`. Other options
/// (`StripeLayout=...;`) are accepted and ignored.
pub fn parse_retr_opts(args: &str) -> Result<RetrOpts, String> {
    let mut opts = RetrOpts {
        parallelism: 1,
        markers_secs: None,
    };
    for option in args.split(';').map(str::trim).filter(|o| !o.is_empty()) {
        let Some((name, value)) = option.split_once('=') else {
            return Err(format!(
                "RETR option \"{option}\" is not NAME=VALUE, like Parallelism=4,4,4;"
            ));
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("markers") {
            opts.markers_secs = Some(value.trim().parse::<u32>().map_err(|_| {
                format!(
                    "markers \"{value}\" must be a number of seconds (0 for none), like markers=5;"
                )
            })?);
            continue;
        }
        if !name.eq_ignore_ascii_case("Parallelism") {
            continue;
        }
        let first = value.split(',').next().unwrap_or("").trim();
        opts.parallelism = match first.parse::<u32>() {
            Ok(n) if (1..=MAX_PARALLELISM).contains(&n) => n,
            _ => {
                return Err(format!(
                    "Parallelism \"{value}\" must start with a count from 1 to {MAX_PARALLELISM}, like Parallelism=4,4,4;"
                ));
            }
        };
    }
    Ok(opts)
}

/// Descriptor bits (GFD.20 3.1).
pub mod descriptor {
    /// End of record (legacy, not used by GridFTP).
    pub const EOR: u8 = 128;
    /// End of file: the offset field counts the transfer's connections.
    pub const EOF: u8 = 64;
    /// Suspected errors in the block.
    pub const SUSPECT: u8 = 32;
    /// A restart marker block (stream-mode style; MODE E uses 111 replies).
    pub const RESTART: u8 = 16;
    /// End of data on this connection.
    pub const EOD: u8 = 8;
    /// The sender closes this connection after the block.
    pub const CLOSE: u8 = 4;
}

/// One block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// [`descriptor`] bits.
    pub descriptor: u8,
    /// Data bytes that follow (unused in an EOF block).
    pub count: u64,
    /// Where the data goes in the file; in an EOF block, the number of
    /// connections.
    pub offset: u64,
}

impl Header {
    /// A block of `count` bytes at `offset`.
    pub fn data(offset: u64, count: u64) -> Header {
        Header {
            descriptor: 0,
            count,
            offset,
        }
    }

    /// An empty block that ends this connection's data; with `close`, the
    /// connection too.
    pub fn eod(close: bool) -> Header {
        Header {
            descriptor: descriptor::EOD | if close { descriptor::CLOSE } else { 0 },
            count: 0,
            offset: 0,
        }
    }

    /// The EOF block of a transfer over `connections` connections.
    pub fn eof(connections: u64) -> Header {
        Header {
            descriptor: descriptor::EOF,
            count: 0,
            offset: connections,
        }
    }

    /// The header on the wire.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut out = [0u8; HEADER_BYTES];
        out[0] = self.descriptor;
        out[1..9].copy_from_slice(&self.count.to_be_bytes());
        out[9..17].copy_from_slice(&self.offset.to_be_bytes());
        out
    }

    /// The header from the wire.
    pub fn decode(bytes: &[u8; HEADER_BYTES]) -> Header {
        let mut count = [0u8; 8];
        let mut offset = [0u8; 8];
        count.copy_from_slice(&bytes[1..9]);
        offset.copy_from_slice(&bytes[9..17]);
        Header {
            descriptor: bytes[0],
            count: u64::from_be_bytes(count),
            offset: u64::from_be_bytes(offset),
        }
    }

    fn has(&self, bit: u8) -> bool {
        self.descriptor & bit != 0
    }
}

/// What a MODE E peer did wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeEError {
    /// A block reaches past the size the transfer announced.
    #[error("a block of {count} bytes at offset {offset} reaches past the file's {size} bytes")]
    PastEnd {
        /// The block's offset.
        offset: u64,
        /// Its byte count.
        count: u64,
        /// The size announced (`SIZE`, `ALLO`).
        size: u64,
    },
    /// Two blocks carry some of the same bytes.
    #[error("a block of bytes {start}-{end} overlaps bytes already received ({seen})")]
    Overlap {
        /// The new block's first byte.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// The ranges received before it.
        seen: String,
    },
    /// Data after this connection's EOD.
    #[error("a block after the connection's EOD (descriptor {descriptor}, {count} bytes)")]
    AfterEod {
        /// The descriptor.
        descriptor: u8,
        /// Its byte count.
        count: u64,
    },
    /// A restart-marker block: MODE E reports what is stored with `111`
    /// replies instead.
    #[error("a restart-marker block (descriptor {descriptor}): MODE E restarts with 111 replies")]
    RestartBlock {
        /// The descriptor.
        descriptor: u8,
    },
    /// More EODs than the EOF announced connections, or a second EOF.
    #[error("{what}: the EOF announced {announced} connections, {eods} EODs seen")]
    Connections {
        /// What happened.
        what: &'static str,
        /// Connections the EOF announced.
        announced: u64,
        /// EODs seen so far.
        eods: u64,
    },
    /// The connections ended and no EOF block came.
    #[error("the data connections ended with no EOF block ({eods} EODs seen)")]
    NoEof {
        /// EODs seen.
        eods: u64,
    },
    /// A connection ended inside a block or its header.
    #[error("the connection ended {where_}")]
    Truncated {
        /// Where: inside a header, or how far into a block.
        where_: String,
    },
    /// The connections ended, and bytes are missing.
    #[error("the transfer ended with bytes missing: received {received} of {size}")]
    Missing {
        /// The ranges received.
        received: String,
        /// The size announced.
        size: u64,
    },
}

/// What one data connection carried, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item<'a> {
    /// Bytes of a block, at their place in the file (a block may come in
    /// several pieces, as the bytes arrive).
    Data {
        /// Where the first byte goes.
        offset: u64,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// The connection's data ended (it may carry a later transfer).
    Eod,
    /// The EOF block: the transfer uses this many connections.
    Eof {
        /// Connections announced.
        connections: u64,
    },
    /// The sender closes this connection.
    Close,
}

/// The block being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    /// Where its next byte goes.
    next: u64,
    /// Bytes left.
    left: u64,
    /// Its header's offset and count.
    offset: u64,
    count: u64,
    /// EOD and close, reported after its last byte.
    eod: bool,
    close: bool,
}

/// Splits one data connection's bytes into blocks.
#[derive(Debug, Clone, Default)]
pub struct BlockReader {
    header: [u8; HEADER_BYTES],
    filled: usize,
    block: Option<Block>,
    eod: bool,
}

impl BlockReader {
    /// A reader at the start of a connection.
    pub fn new() -> BlockReader {
        BlockReader::default()
    }

    /// Whether this connection's data ended (EOD seen).
    pub fn ended(&self) -> bool {
        self.eod && self.block.is_none()
    }

    /// How many bytes to read next so as to stop at the end of the block
    /// or header being read (with the next block's header, when this
    /// block does not end the connection's data: one read then takes a
    /// block's bytes and the next header): 0 once the connection's data
    /// ended. Reading no more than this never takes bytes of the next
    /// transfer on a connection kept open.
    pub fn wanted(&self) -> usize {
        match self.block {
            Some(block) if block.eod => usize::try_from(block.left).unwrap_or(usize::MAX),
            Some(block) => usize::try_from(block.left)
                .unwrap_or(usize::MAX)
                .saturating_add(HEADER_BYTES),
            None if self.eod => 0,
            None => HEADER_BYTES - self.filled,
        }
    }

    /// Starts a new transfer on a connection kept open after its EOD.
    pub fn reuse(&mut self) {
        self.eod = false;
    }

    /// Reads `input`, appending what it holds to `out`.
    pub fn feed<'a>(
        &mut self,
        mut input: &'a [u8],
        out: &mut Vec<Item<'a>>,
    ) -> Result<(), ModeEError> {
        while !input.is_empty() {
            if let Some(block) = self.block.as_mut() {
                let take = usize::try_from(block.left)
                    .unwrap_or(usize::MAX)
                    .min(input.len());
                let (bytes, rest) = input.split_at(take);
                out.push(Item::Data {
                    offset: block.next,
                    bytes,
                });
                input = rest;
                block.next += take as u64;
                block.left -= take as u64;
                if block.left == 0 {
                    let (eod, close) = (block.eod, block.close);
                    self.block = None;
                    ends(eod, close, out);
                }
                continue;
            }
            let take = (HEADER_BYTES - self.filled).min(input.len());
            self.header[self.filled..self.filled + take].copy_from_slice(&input[..take]);
            self.filled += take;
            input = &input[take..];
            if self.filled == HEADER_BYTES {
                self.filled = 0;
                let header = Header::decode(&self.header);
                self.header_read(header, out)?;
            }
        }
        Ok(())
    }

    /// The connection ended: an error if it ended inside a block.
    pub fn finish(&self) -> Result<(), ModeEError> {
        if self.filled > 0 {
            return Err(ModeEError::Truncated {
                where_: format!(
                    "inside a block header ({} of {HEADER_BYTES} bytes)",
                    self.filled
                ),
            });
        }
        if let Some(block) = self.block {
            return Err(ModeEError::Truncated {
                where_: format!(
                    "after {} of the {} bytes of the block at offset {}",
                    block.count - block.left,
                    block.count,
                    block.offset
                ),
            });
        }
        Ok(())
    }

    fn header_read(&mut self, header: Header, out: &mut Vec<Item<'_>>) -> Result<(), ModeEError> {
        if header.has(descriptor::RESTART) {
            return Err(ModeEError::RestartBlock {
                descriptor: header.descriptor,
            });
        }
        let eod = header.has(descriptor::EOD) && !self.eod;
        let close = header.has(descriptor::CLOSE);
        if header.has(descriptor::EOF) {
            out.push(Item::Eof {
                connections: header.offset,
            });
        } else if header.count > 0 {
            if self.eod {
                return Err(ModeEError::AfterEod {
                    descriptor: header.descriptor,
                    count: header.count,
                });
            }
            if header.offset.checked_add(header.count).is_none() {
                return Err(ModeEError::PastEnd {
                    offset: header.offset,
                    count: header.count,
                    size: u64::MAX,
                });
            }
            self.eod |= eod;
            self.block = Some(Block {
                next: header.offset,
                left: header.count,
                offset: header.offset,
                count: header.count,
                eod,
                close,
            });
            return Ok(());
        }
        self.eod |= eod;
        ends(eod, close, out);
        Ok(())
    }
}

/// Reports a connection's EOD and close, in that order.
fn ends(eod: bool, close: bool, out: &mut Vec<Item<'_>>) {
    if eod {
        out.push(Item::Eod);
    }
    if close {
        out.push(Item::Close);
    }
}

/// Byte ranges, each `start..end` (end excluded), sorted and merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    /// No bytes.
    pub fn new() -> Ranges {
        Ranges::default()
    }

    /// The ranges, sorted, none touching another.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// Bytes covered.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(s, e)| e - s).sum()
    }

    /// Whether `start..end` shares a byte with a range.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.0.iter().any(|&(s, e)| start < e && s < end)
    }

    /// Adds `start..end`, merging what touches or overlaps it.
    pub fn add(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut start, mut end) = (start, end);
        let mut kept = Vec::with_capacity(self.0.len() + 1);
        for &(s, e) in &self.0 {
            if e < start || end < s {
                kept.push((s, e));
            } else {
                start = start.min(s);
                end = end.max(e);
            }
        }
        kept.push((start, end));
        kept.sort_unstable();
        self.0 = kept;
    }

    /// Whether the ranges are exactly `0..size`.
    pub fn covers(&self, size: u64) -> bool {
        match self.0.as_slice() {
            [] => size == 0,
            [(0, end)] => *end == size,
            _ => false,
        }
    }

    /// The parts of `0..size` not covered, in order.
    pub fn gaps(&self, size: u64) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut at = 0;
        for &(s, e) in &self.0 {
            if s >= size {
                break;
            }
            if s > at {
                gaps.push((at, s));
            }
            at = at.max(e);
        }
        if at < size {
            gaps.push((at, size));
        }
        gaps
    }

    /// Parses `0-29,30-89` (a `111 Range Marker` or `REST` argument, ends
    /// excluded). Spaces around the commas are tolerated.
    pub fn parse(text: &str) -> Result<Ranges, String> {
        let mut ranges = Ranges::new();
        for part in text.split(',') {
            let part = part.trim();
            let parsed = part
                .split_once('-')
                .and_then(|(s, e)| {
                    Some((s.trim().parse::<u64>().ok()?, e.trim().parse::<u64>().ok()?))
                })
                .filter(|(s, e)| s <= e);
            let Some((start, end)) = parsed else {
                return Err(format!(
                    "byte range \"{part}\" in \"{text}\" is not START-END with START <= END, like 0-1048576"
                ));
            };
            ranges.add(start, end);
        }
        Ok(ranges)
    }
}

impl fmt::Display for Ranges {
    /// `0-29,30-89`; `0-0` for no bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("0-0");
        }
        for (i, (s, e)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{s}-{e}")?;
        }
        Ok(())
    }
}

/// A transfer received over several connections: where its bytes went,
/// and whether it is whole.
#[derive(Debug, Clone)]
pub struct Assembly {
    size: Option<u64>,
    received: Ranges,
    eods: u64,
    announced: Option<u64>,
}

impl Assembly {
    /// A transfer of `size` bytes if known (`SIZE`, `ALLO`), with the
    /// bytes of `already` there before it (a restart).
    pub fn new(size: Option<u64>, already: Ranges) -> Assembly {
        Assembly {
            size,
            received: already,
            eods: 0,
            announced: None,
        }
    }

    /// Counts one connection's item; data is checked for its place.
    pub fn item(&mut self, item: &Item<'_>) -> Result<(), ModeEError> {
        match *item {
            Item::Data { offset, bytes } => self.data(offset, bytes.len() as u64),
            Item::Eod => {
                self.eods += 1;
                self.check_connections("more EODs than connections")
            }
            Item::Eof { connections } => {
                if let Some(announced) = self.announced {
                    return Err(ModeEError::Connections {
                        what: "a second EOF",
                        announced,
                        eods: self.eods,
                    });
                }
                self.announced = Some(connections);
                self.check_connections("fewer connections than EODs already seen")
            }
            Item::Close => Ok(()),
        }
    }

    fn data(&mut self, offset: u64, len: u64) -> Result<(), ModeEError> {
        let end = offset.checked_add(len).ok_or(ModeEError::PastEnd {
            offset,
            count: len,
            size: u64::MAX,
        })?;
        if let Some(size) = self.size.filter(|&size| end > size) {
            return Err(ModeEError::PastEnd {
                offset,
                count: len,
                size,
            });
        }
        if self.received.overlaps(offset, end) {
            return Err(ModeEError::Overlap {
                start: offset,
                end,
                seen: self.received.to_string(),
            });
        }
        self.received.add(offset, end);
        Ok(())
    }

    fn check_connections(&self, what: &'static str) -> Result<(), ModeEError> {
        match self.announced {
            Some(announced) if self.eods > announced => Err(ModeEError::Connections {
                what,
                announced,
                eods: self.eods,
            }),
            _ => Ok(()),
        }
    }

    /// Whether every connection the EOF announced has ended.
    pub fn done(&self) -> bool {
        self.announced.is_some_and(|n| self.eods == n)
    }

    /// The bytes received so far (with those there before).
    pub fn received(&self) -> &Ranges {
        &self.received
    }

    /// At the end: an error unless the EOF and all the EODs it announced
    /// arrived, and every byte with them ([`Assembly::whole`]).
    pub fn complete(&self) -> Result<(), ModeEError> {
        match self.announced {
            None => Err(ModeEError::NoEof { eods: self.eods }),
            Some(announced) if self.eods < announced => Err(ModeEError::Connections {
                what: "the data connections ended early",
                announced,
                eods: self.eods,
            }),
            _ => self.whole(),
        }
    }

    /// At the end: an error unless every byte of the size arrived (with
    /// no size, every byte up to the last one received).
    pub fn whole(&self) -> Result<(), ModeEError> {
        let size = self
            .size
            .unwrap_or_else(|| self.received.as_slice().last().map_or(0, |r| r.1));
        if self.received.covers(size) {
            Ok(())
        } else {
            Err(ModeEError::Missing {
                received: self.received.to_string(),
                size,
            })
        }
    }
}

/// The sender's cursor: the blocks still to send, `block` bytes at most
/// each, taken in file order by whichever connection is free (a slower
/// stream simply takes fewer).
#[derive(Debug, Clone)]
pub struct Blocks {
    gaps: Vec<(u64, u64)>,
    block: u64,
}

impl Blocks {
    /// The parts of `0..size` that `done` lacks, in blocks of `block`
    /// bytes (at least 1).
    pub fn new(size: u64, done: &Ranges, block: u64) -> Blocks {
        let mut gaps = done.gaps(size);
        gaps.reverse();
        Blocks {
            gaps,
            block: block.max(1),
        }
    }

    /// The next block: its offset and length.
    pub fn take(&mut self) -> Option<(u64, u64)> {
        let (start, end) = self.gaps.pop()?;
        let len = (end - start).min(self.block);
        if start + len < end {
            self.gaps.push((start + len, end));
        }
        Some((start, len))
    }

    /// Bytes still to send.
    pub fn left(&self) -> u64 {
        self.gaps.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests;
