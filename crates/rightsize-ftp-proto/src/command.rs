//! FTP commands: the [`Command`] value, [`parse`] for the server side and
//! [`Command::encode`] for the client side (RFC 959 section 4.1 and the
//! extensions named on each variant).
//!
//! Guarantees: `parse` never panics on any bytes and returns either a
//! command or a [`CommandError`] that names the reply code to send (500,
//! 501, 502, 504 or 522); no command line yields two results. Every
//! `Command` that can be built can be encoded, and reading the encoding back
//! gives the same command: `parse(&c.to_line()) == Ok(c)`, and the bytes of
//! `c.encode()` pass through `line::LineReader` as exactly that line. The
//! types make this hold: arguments are [`Arg`]s (no LF) or [`Token`]s, and
//! the composite arguments with ambiguous text forms ([`ListArgs`],
//! [`SiteOther`], [`OptsOther`], [`MlstFacts`]) have checked constructors.
//! Three values the types do not exclude fall outside the wire forms and do
//! not come back: port 0 in `Port`/`Eprt`, an IPv6 flow label or scope id in
//! `Eprt` (RFC 2428 cannot carry them), and a `SITE CHMOD` mode above
//! `0o7777`. `parse` never produces them.
//!
//! Decisions a server or client must know:
//! - Verbs are case-insensitive and must be ASCII letters. Arguments keep
//!   their case and bytes: a pathname is everything after the single space
//!   following the verb, leading and trailing spaces included, non-UTF-8
//!   bytes included (lossless; see `arg.rs`). Keyword and number arguments
//!   (`TYPE a`, `REST  100 `) tolerate surrounding spaces.
//! - The RFC 1123 aliases `XPWD`, `XCWD`, `XCUP`, `XMKD`, `XRMD` parse to
//!   `Pwd`, `Cwd`, `Cdup`, `Mkd`, `Rmd` and encode as the RFC 959 verbs.
//! - Commands that take no argument accept trailing spaces (`PWD `) and
//!   answer any other argument with 501.
//! - `LIST`/`NLST` split leading `-xyz` option words (`-a`, `-la`, sent by
//!   lftp and curl) into [`ListArgs::flags`]; a file whose name looks like an
//!   option must be named `./-l`.
//! - `PASS` with no argument or an empty one is `Pass(None)` and encodes as
//!   `PASS ` with the space, as curl sends an empty password.
//! - `SBUF` and `SITE SBUF` with a non-number answer 501 (GFD.20 "syntax
//!   error in parameters"); the Globus server answers 502 there.
//! - `RINF` (the RIGHTSIZE extension) carries facts (`ftp::facts`); no
//!   argument is an empty summary, malformed facts are 501 naming the
//!   offending fact. `OPTS RIGHTSIZE` takes `ON`, `ON UDP=<port>` or `OFF`,
//!   case-insensitively; anything else is 501.
//! - `ERET` takes only module `P` and `ESTO` only module `A` (GFD.20);
//!   other modules are 504. `SPAS` takes no argument (its
//!   IPv6 form `SPAS 2` is 504); `SPOR` takes one or more PORT-style
//!   addresses separated by spaces. `TREV` takes `PERF` or `RESTART`
//!   (else 504) and a number of seconds below 2^32 (else 501).
//! - `MODE` other than S and E (GridFTP's extended block mode), `STRU`
//!   other than F, `TYPE E`, `TYPE A T|C` and `TYPE L` other than 8 are 504.
//! - `Display` is for logs: lossy UTF-8, control characters escaped, the
//!   password replaced by `****`. Use `encode` for the wire.

use std::fmt;
use std::net::{SocketAddr, SocketAddrV4};

pub use super::arg::{Arg, ArgError, Token};
pub use super::rightsize::RightsizeOpts;
use rightsize_tune::PeerInfo;

mod encode;
mod parse;

pub use parse::parse;

/// One FTP command. Variants name the RFC section they implement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `USER <username>` (RFC 959 4.1.1).
    User(Arg),
    /// `PASS [<password>]` (RFC 959 4.1.1); `None` for an empty password.
    Pass(Option<Arg>),
    /// `ACCT <account>` (RFC 959 4.1.1).
    Acct(Arg),
    /// `CWD <pathname>`, alias `XCWD` (RFC 959 4.1.1, RFC 1123 4.1.3.1).
    Cwd(Arg),
    /// `CDUP`, alias `XCUP` (RFC 959 4.1.1).
    Cdup,
    /// `REIN` (RFC 959 4.1.1).
    Rein,
    /// `QUIT` (RFC 959 4.1.1).
    Quit,
    /// `PORT h1,h2,h3,h4,p1,p2` (RFC 959 4.1.2).
    Port(SocketAddrV4),
    /// `PASV` (RFC 959 4.1.2).
    Pasv,
    /// `TYPE A [N] | I | L 8` (RFC 959 4.1.2, 3.1.1).
    Type(TransferType),
    /// `STRU F` (RFC 959 4.1.2, 3.1.2).
    Stru(FileStructure),
    /// `MODE S` (RFC 959 4.1.2, 3.4) or `MODE E` (GFD.20).
    Mode(TransferMode),
    /// `RETR <pathname>` (RFC 959 4.1.3).
    Retr(Arg),
    /// `STOR <pathname>` (RFC 959 4.1.3).
    Stor(Arg),
    /// `STOU [<pathname>]` (RFC 959 4.1.3; the optional name is a common
    /// extension, e.g. pure-ftpd).
    Stou(Option<Arg>),
    /// `APPE <pathname>` (RFC 959 4.1.3).
    Appe(Arg),
    /// `ALLO <bytes> [R <record-bytes>]` (RFC 959 4.1.3).
    Allo {
        /// Bytes to reserve.
        bytes: u64,
        /// Maximum record or page size, in bytes.
        record_bytes: Option<u64>,
    },
    /// `REST <offset>`: restart at this byte offset (RFC 3659 5, stream
    /// mode; RFC 959 4.1.3).
    Rest(u64),
    /// `REST START-END[,START-END...]`: GridFTP's restart in MODE E
    /// (GFD.20): the byte ranges (end excluded) the receiver already has;
    /// the sender sends the rest.
    RestRanges(crate::mode_e::Ranges),
    /// `RNFR <pathname>` (RFC 959 4.1.3).
    Rnfr(Arg),
    /// `RNTO <pathname>` (RFC 959 4.1.3).
    Rnto(Arg),
    /// `ABOR` (RFC 959 4.1.3).
    Abor,
    /// `DELE <pathname>` (RFC 959 4.1.3).
    Dele(Arg),
    /// `RMD <pathname>`, alias `XRMD` (RFC 959 4.1.3).
    Rmd(Arg),
    /// `MKD <pathname>`, alias `XMKD` (RFC 959 4.1.3).
    Mkd(Arg),
    /// `PWD`, alias `XPWD` (RFC 959 4.1.3).
    Pwd,
    /// `LIST [-flags] [<pathname>]` (RFC 959 4.1.3).
    List(ListArgs),
    /// `NLST [-flags] [<pathname>]` (RFC 959 4.1.3).
    Nlst(ListArgs),
    /// `SITE <command>` (RFC 959 4.1.3).
    Site(SiteCommand),
    /// `SYST` (RFC 959 4.1.3).
    Syst,
    /// `STAT [<pathname>]` (RFC 959 4.1.3).
    Stat(Option<Arg>),
    /// `HELP [<string>]` (RFC 959 4.1.3).
    Help(Option<Arg>),
    /// `NOOP` (RFC 959 4.1.3).
    Noop,
    /// `FEAT` (RFC 2389 3).
    Feat,
    /// `OPTS <command> [<options>]` (RFC 2389 4).
    Opts(OptsCommand),
    /// `EPRT <d>proto<d>addr<d>port<d>` (RFC 2428 2).
    Eprt(SocketAddr),
    /// `EPSV [ALL | <protocol>]` (RFC 2428 3).
    Epsv(Option<EpsvArg>),
    /// `SIZE <pathname>` (RFC 3659 4).
    Size(Arg),
    /// `MDTM <pathname>` (RFC 3659 3).
    Mdtm(Arg),
    /// `MLST [<pathname>]` (RFC 3659 7).
    Mlst(Option<Arg>),
    /// `MLSD [<pathname>]` (RFC 3659 7).
    Mlsd(Option<Arg>),
    /// `AUTH <mechanism>` (RFC 2228 3, RFC 4217 4).
    Auth(Token),
    /// `PBSZ <size>` (RFC 2228 3, RFC 4217 8), in bytes.
    Pbsz(u32),
    /// `PROT C|S|E|P` (RFC 2228 3, RFC 4217 9).
    Prot(ProtectionLevel),
    /// `CCC`: clear the control channel (RFC 4217 6).
    Ccc,
    /// `SBUF <buffer-size>`: TCP buffer for later data connections, in
    /// bytes (OGF GFD.20 section 3.4). Policy for 0 or huge values is the
    /// server's.
    Sbuf(u64),
    /// `CKSM <algorithm> <offset> <length> <pathname>` (Globus extension).
    Cksm {
        /// Checksum algorithm, e.g. `MD5`, `ADLER32`.
        algorithm: Token,
        /// First byte to include.
        offset: u64,
        /// Bytes to include; `None` (sent as `-1`) means to the end.
        length: Option<u64>,
        /// File to checksum.
        path: Arg,
    },
    /// `HASH <pathname>` (draft-bryan-ftpext-hash-02 3.1).
    Hash(Arg),
    /// `SPAS`: striped passive (GFD.20): like `PASV`, but the reply
    /// lists one `h1,h2,h3,h4,p1,p2` per stripe (this server has one).
    Spas,
    /// `SPOR <h1,h2,h3,h4,p1,p2> [<h1,...,p2> ...]`: striped port (GFD.20):
    /// like `PORT`, one address per stripe of the client.
    Spor(StripeAddrs),
    /// `ERET P <offset> <length> <pathname>`: partial retrieve (GFD.20,
    /// module `P`): `length` bytes from `offset`; in MODE E the blocks
    /// are numbered from 0, as if the part were the whole file.
    Eret {
        /// First byte of the file to send.
        offset: u64,
        /// Bytes to send (fewer if the file ends first).
        length: u64,
        /// File to read.
        path: Arg,
    },
    /// `TREV PERF|RESTART <seconds>`: how often a receiving server sends
    /// `112` perf or `111` range markers, 0 for never (the Globus
    /// server's command; its default is 5 s for both).
    Trev {
        /// Which marker.
        event: MarkerEvent,
        /// Seconds between two.
        secs: u32,
    },
    /// `ESTO A <offset> <pathname>`: adjusted store (GFD.20, module
    /// `A`): each block lands at its offset plus `offset`, into the file
    /// as it is (nothing is truncated).
    Esto {
        /// Added to every block's offset.
        offset: u64,
        /// File to write.
        path: Arg,
    },
    /// `RINF [<facts>]`: the client's `TCP_INFO` summary during a transfer
    /// (the RIGHTSIZE extension, `ftp::rightsize`; facts as in
    /// `ftp::facts`).
    Rinf(PeerInfo),
}

/// The markers `TREV` sets the interval of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerEvent {
    /// `PERF`: `112` perf markers.
    Perf,
    /// `RESTART`: `111` range markers.
    Restart,
}

/// The addresses of `SPOR`, at least one (GFD.20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeAddrs {
    first: SocketAddrV4,
    more: Vec<SocketAddrV4>,
}

impl StripeAddrs {
    /// The addresses `first`, then `more`, in the order sent.
    pub fn new(first: SocketAddrV4, more: Vec<SocketAddrV4>) -> StripeAddrs {
        StripeAddrs { first, more }
    }

    /// The first stripe's address: the one a single-stripe server uses.
    pub fn first(&self) -> SocketAddrV4 {
        self.first
    }

    /// Every address, in the order sent.
    pub fn all(&self) -> impl Iterator<Item = SocketAddrV4> + '_ {
        std::iter::once(self.first).chain(self.more.iter().copied())
    }
}

/// Representation type of `TYPE` (RFC 959 3.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransferType {
    /// `A` or `A N`: ASCII, non-print (the RFC 959 default).
    Ascii,
    /// `I`: image (binary). Use it for any data transfer.
    Image,
    /// `L 8`: local byte size 8, the same as image on 8-bit hosts.
    Local8,
}

/// File structure of `STRU` (RFC 959 3.1.2); only file structure exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileStructure {
    /// `F`: no record structure.
    File,
}

/// Transfer mode of `MODE` (RFC 959 3.4, GFD.20 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransferMode {
    /// `S`: stream.
    Stream,
    /// `E`: GridFTP's extended blocks, over one or more connections
    /// (`ftp::mode_e`).
    Extended,
}

/// Argument of `EPSV` (RFC 2428 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EpsvArg {
    /// `EPSV ALL`: the client will use only EPSV from now on.
    All,
    /// `EPSV <net-prt>`: 1 for IPv4, 2 for IPv6; others get 522.
    Protocol(u16),
}

/// Data channel protection of `PROT` (RFC 2228 3, RFC 4217 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtectionLevel {
    /// `C`: clear.
    Clear,
    /// `S`: safe (integrity).
    Safe,
    /// `E`: confidential.
    Confidential,
    /// `P`: private (integrity and confidentiality).
    Private,
}

/// Arguments of `LIST`/`NLST`: option letters and an optional pathname
/// (RFC 959 4.1.3; options as sent by lftp and curl).
///
/// Invariant, checked by [`ListArgs::new`]: flags are ASCII letters or
/// digits; the path neither starts with a space nor with an option-like word
/// (`-` followed by letters or digits, then a space or the end).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListArgs {
    flags: String,
    path: Option<Arg>,
}

impl ListArgs {
    /// Checks and builds `LIST`/`NLST` arguments; `flags` without the `-`.
    pub fn new(flags: &str, path: Option<Arg>) -> Result<ListArgs, CommandError> {
        if !flags.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(CommandError::syntax(
                "LIST",
                flags.as_bytes(),
                "options must be letters or digits",
            ));
        }
        if let Some(p) = &path {
            let bytes = p.as_bytes();
            if bytes.first() == Some(&b' ') || parse::is_option_word(first_word(bytes)) {
                return Err(CommandError::syntax(
                    "LIST",
                    bytes,
                    "a path that starts with a space or looks like an option must be written ./name",
                ));
            }
        }
        Ok(ListArgs {
            flags: flags.to_owned(),
            path,
        })
    }

    /// The option letters, without `-`, in order (`"la"` for `-l -a`).
    pub fn flags(&self) -> &str {
        &self.flags
    }

    /// True if option letter `flag` was given.
    pub fn has_flag(&self, flag: char) -> bool {
        self.flags.contains(flag)
    }

    /// The pathname, if any.
    pub fn path(&self) -> Option<&Arg> {
        self.path.as_ref()
    }
}

fn first_word(bytes: &[u8]) -> &[u8] {
    bytes.split(|b| *b == b' ').next().unwrap_or(bytes)
}

/// `SITE` sub-commands (RFC 959 4.1.3 leaves them to the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteCommand {
    /// `SITE HELP [<command>]`; globus-url-copy reads the answer to pick its
    /// buffer command.
    Help(Option<Arg>),
    /// `SITE SBUF <bytes>`: the Globus spelling of `SBUF` (GFD.20 3.4).
    Sbuf(u64),
    /// `SITE CHMOD <octal-mode> <pathname>`; mode at most `0o7777`.
    Chmod {
        /// Permission bits.
        mode: u32,
        /// File to change.
        path: Arg,
    },
    /// Any other sub-command, e.g. `SITE CLIENTINFO ...` or the older
    /// `SITE BUFSIZE`/`SBUFSIZE`/`RETRBUFSIZE` family.
    Other(SiteOther),
}

/// A `SITE` sub-command this codec does not interpret.
///
/// Invariant, checked by [`SiteOther::new`]: the name is not `HELP`, `SBUF`
/// or `CHMOD` in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteOther {
    name: Token,
    args: Option<Arg>,
}

impl SiteOther {
    /// Builds `SITE <name> [<args>]`; `args` follow after one space.
    pub fn new(name: Token, args: Option<Arg>) -> Result<SiteOther, CommandError> {
        if ["HELP", "SBUF", "CHMOD"]
            .iter()
            .any(|k| name.eq_ignore_ascii_case(k))
        {
            return Err(CommandError::syntax(
                "SITE",
                name.as_str().as_bytes(),
                "has its own variant",
            ));
        }
        Ok(SiteOther { name, args })
    }

    /// The sub-command name as sent.
    pub fn name(&self) -> &Token {
        &self.name
    }

    /// The rest of the line after the name and one space.
    pub fn args(&self) -> Option<&Arg> {
        self.args.as_ref()
    }
}

/// `OPTS` forms (RFC 2389 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptsCommand {
    /// `OPTS UTF8 ON|OFF` (RFC 2640 3.2 as deployed; lftp sends it).
    Utf8(bool),
    /// `OPTS MLST [fact;fact;...]`: facts to include (RFC 3659 7.9); empty
    /// asks for none.
    Mlst(MlstFacts),
    /// `OPTS RIGHTSIZE ON [UDP=<port>] | OFF`: the RIGHTSIZE extension
    /// (`ftp::rightsize`).
    Rightsize(RightsizeOpts),
    /// Any other form, e.g. `OPTS RETR Parallelism=4,4,4;` (GFD.20).
    Other(OptsOther),
}

/// The fact names of `OPTS MLST` (RFC 3659 7.9), in order, case as sent.
///
/// Invariant, checked by [`MlstFacts::new`]: no fact contains `;`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MlstFacts(Vec<Token>);

impl MlstFacts {
    /// Checks that no fact contains `;`, the list separator.
    pub fn new(facts: Vec<Token>) -> Result<MlstFacts, CommandError> {
        if let Some(bad) = facts.iter().find(|f| f.as_str().contains(';')) {
            return Err(CommandError::syntax(
                "OPTS MLST",
                bad.as_str().as_bytes(),
                "a fact name cannot contain ';'",
            ));
        }
        Ok(MlstFacts(facts))
    }

    /// The facts, e.g. `size`, `modify`, `UNIX.mode`.
    pub fn facts(&self) -> &[Token] {
        &self.0
    }

    /// True if `fact` is asked for, compared case-insensitively.
    pub fn contains(&self, fact: &str) -> bool {
        self.0.iter().any(|f| f.eq_ignore_ascii_case(fact))
    }
}

/// An `OPTS` form this codec does not interpret.
///
/// Invariant, checked by [`OptsOther::new`]: the command is not `UTF8`,
/// `MLST` or `RIGHTSIZE` in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptsOther {
    command: Token,
    args: Option<Arg>,
}

impl OptsOther {
    /// Builds `OPTS <command> [<args>]`; `args` follow after one space.
    pub fn new(command: Token, args: Option<Arg>) -> Result<OptsOther, CommandError> {
        if ["UTF8", "MLST", super::rightsize::EXTENSION]
            .iter()
            .any(|k| command.eq_ignore_ascii_case(k))
        {
            return Err(CommandError::syntax(
                "OPTS",
                command.as_str().as_bytes(),
                "has its own variant",
            ));
        }
        Ok(OptsOther { command, args })
    }

    /// The command whose options are set, as sent.
    pub fn command(&self) -> &Token {
        &self.command
    }

    /// The options after the command and one space.
    pub fn args(&self) -> Option<&Arg> {
        self.args.as_ref()
    }
}

/// Why a command line was refused, and the reply code to send
/// (RFC 959 4.2.1, RFC 2428 for 522).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// An empty or blank line: 500.
    #[error("empty command line")]
    Empty,
    /// The verb is not ASCII letters: 500 (syntax error, command unrecognized).
    #[error("malformed command verb \"{verb}\"")]
    Malformed {
        /// The first word, quoted.
        verb: String,
    },
    /// A well-formed verb this codec does not know: 502 (not implemented).
    #[error("unknown command \"{verb}\"")]
    Unknown {
        /// The verb as sent, quoted.
        verb: String,
    },
    /// Missing or unparsable argument: 501.
    #[error("{verb}: {reason} in \"{arg}\"")]
    Syntax {
        /// The command (canonical verb, `SITE SBUF` style for sub-commands).
        verb: &'static str,
        /// The argument, quoted.
        arg: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A valid parameter this codec does not implement: 504.
    #[error("{verb}: parameter \"{arg}\" not implemented")]
    NotImplemented {
        /// The command.
        verb: &'static str,
        /// The parameter, quoted.
        arg: String,
    },
    /// `EPRT` with a protocol other than 1 or 2: 522 (RFC 2428 2).
    #[error("EPRT: network protocol {protocol} not supported in \"{arg}\"")]
    UnsupportedProtocol {
        /// The protocol number sent.
        protocol: u16,
        /// The argument, quoted.
        arg: String,
    },
}

impl CommandError {
    pub(crate) fn syntax(verb: &'static str, arg: &[u8], reason: &'static str) -> CommandError {
        CommandError::Syntax {
            verb,
            arg: super::arg::quote(arg),
            reason,
        }
    }

    pub(crate) fn not_implemented(verb: &'static str, arg: &[u8]) -> CommandError {
        CommandError::NotImplemented {
            verb,
            arg: super::arg::quote(arg),
        }
    }

    /// The reply code to answer with (RFC 959 4.2.1; 522 from RFC 2428).
    pub fn reply_code(&self) -> u16 {
        match self {
            CommandError::Empty | CommandError::Malformed { .. } => 500,
            CommandError::Unknown { .. } => 502,
            CommandError::Syntax { .. } => 501,
            CommandError::NotImplemented { .. } => 504,
            CommandError::UnsupportedProtocol { .. } => 522,
        }
    }

    /// The conventional reply text for [`CommandError::reply_code`]. The
    /// error message itself quotes client input; it is for logs.
    pub fn reply_text(&self) -> &'static str {
        match self {
            CommandError::Empty | CommandError::Malformed { .. } => {
                "Syntax error, command unrecognized."
            }
            CommandError::Unknown { .. } => "Command not implemented.",
            CommandError::Syntax { .. } => "Syntax error in parameters or arguments.",
            CommandError::NotImplemented { .. } => "Command not implemented for that parameter.",
            CommandError::UnsupportedProtocol { .. } => "Network protocol not supported, use (1,2)",
        }
    }

    /// The reply to send for this error.
    pub fn to_reply(&self) -> super::reply::Reply {
        super::reply::Reply::trusted(self.reply_code(), self.reply_text().to_owned())
    }
}

impl fmt::Display for Command {
    /// For logs: lossy, escaped, with the password hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Pass(Some(_)) => f.write_str("PASS ****"),
            other => super::arg::write_escaped(f, &other.to_line()),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
