//! rightsize's FTP protocol, pure: the wire codec, the RIGHTSIZE extension's
//! facts, the server session as a state machine, `ftp://` URLs, the password
//! file and streaming checksums. Nothing here does I/O or reads a clock; the
//! client and server in `rightsize-ftp` drive it over sockets.
//!
//! # The codec
//!
//! The FTP wire codec: framing, commands, replies, data addresses and
//! virtual paths, as bytes in and values out.
//!
//! It implements the RFC 959 core with the extensions real peers send
//! (RFC 2389 FEAT/OPTS, RFC 2428 EPSV/EPRT, RFC 3659 SIZE/MDTM/MLST/REST,
//! GridFTP's SBUF, MODE E blocks and Globus CKSM) and rightsize's own RIGHTSIZE extension
//! (`rightsize`, `notice`, `facts`); see `docs/ftp-interop.md`.
//! Nothing here does I/O; no input makes it panic (property-tested over more
//! than 100,000 generated lines). Policy (who may connect where, which path
//! is allowed) is the session's and the system layer's, not the codec's.

pub mod checksum;
pub mod passwd;
pub mod session;
pub mod url;

pub mod addr;
pub mod arg;
pub mod command;
pub mod entries;
pub mod facts;
pub mod line;
pub mod markers;
pub mod mode_e;
pub mod netrc;
pub mod notice;
pub mod path;
pub mod reply;
pub mod rightsize;

pub use addr::AddrError;
pub use arg::{Arg, ArgError, Token};
pub use command::{Command, CommandError, parse};
pub use facts::{FactsError, encode_facts, parse_facts};
pub use line::{LineEvent, LineReader, MAX_LINE_BYTES, Progress};
pub use notice::{Notice, NoticeError, PeerMessage};
pub use path::{PathError, VirtualPath};
pub use reply::{Reply, ReplyError, ReplyKind, ReplyParseError, ReplyParser};
pub use rightsize::{Capability, RightsizeFeature, RightsizeOpts};
