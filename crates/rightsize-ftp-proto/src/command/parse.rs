//! Server-side command parsing (RFC 959 section 5.3 syntax, extensions as
//! named on each `Command` variant). Never panics; see `command.rs` for the
//! decisions it implements.

use super::{
    Arg, Command, CommandError, EpsvArg, FileStructure, ListArgs, MarkerEvent, MlstFacts,
    OptsCommand, OptsOther, ProtectionLevel, SiteCommand, SiteOther, StripeAddrs, Token,
    TransferMode, TransferType,
};
use crate::addr::{self, AddrError};
use crate::arg::{quote, trim_spaces};
use crate::facts::parse_facts;
use crate::rightsize::RightsizeOpts;
use rightsize_tune::PeerInfo;

/// Longest verb accepted before it is called malformed, in bytes. Real verbs
/// have 3 or 4 letters.
const MAX_VERB_BYTES: usize = 16;
/// Most decimal digits in a `u64`.
const U64_MAX_DIGITS: usize = 20;

/// Parses one command line, without its line end (RFC 959 5.3).
///
/// The result is a command or the error to answer; see [`CommandError::reply_code`].
pub fn parse(line: &[u8]) -> Result<Command, CommandError> {
    if line.iter().all(|b| *b == b' ') {
        return Err(CommandError::Empty);
    }
    let (verb, rest) = match line.iter().position(|b| *b == b' ') {
        Some(i) => (&line[..i], Some(&line[i + 1..])),
        None => (line, None),
    };
    if verb.is_empty() || verb.len() > MAX_VERB_BYTES || !verb.iter().all(u8::is_ascii_alphabetic) {
        return Err(CommandError::Malformed { verb: quote(verb) });
    }
    let upper = verb.to_ascii_uppercase();
    let c = match upper.as_slice() {
        b"USER" => Command::User(required("USER", rest)?),
        b"PASS" => Command::Pass(optional("PASS", rest)?),
        b"ACCT" => Command::Acct(required("ACCT", rest)?),
        b"CWD" | b"XCWD" => Command::Cwd(required("CWD", rest)?),
        b"CDUP" | b"XCUP" => no_arg("CDUP", rest, Command::Cdup)?,
        b"REIN" => no_arg("REIN", rest, Command::Rein)?,
        b"QUIT" => no_arg("QUIT", rest, Command::Quit)?,
        b"PORT" => Command::Port(port(rest)?),
        b"PASV" => no_arg("PASV", rest, Command::Pasv)?,
        b"TYPE" => Command::Type(transfer_type(rest)?),
        b"STRU" => Command::Stru(structure(rest)?),
        b"MODE" => Command::Mode(mode(rest)?),
        b"RETR" => Command::Retr(required("RETR", rest)?),
        b"STOR" => Command::Stor(required("STOR", rest)?),
        b"STOU" => Command::Stou(optional("STOU", rest)?),
        b"APPE" => Command::Appe(required("APPE", rest)?),
        b"ALLO" => allo(rest)?,
        b"REST" => restart(rest)?,
        b"RNFR" => Command::Rnfr(required("RNFR", rest)?),
        b"RNTO" => Command::Rnto(required("RNTO", rest)?),
        b"ABOR" => no_arg("ABOR", rest, Command::Abor)?,
        b"DELE" => Command::Dele(required("DELE", rest)?),
        b"RMD" | b"XRMD" => Command::Rmd(required("RMD", rest)?),
        b"MKD" | b"XMKD" => Command::Mkd(required("MKD", rest)?),
        b"PWD" | b"XPWD" => no_arg("PWD", rest, Command::Pwd)?,
        b"LIST" => Command::List(list_args("LIST", rest)?),
        b"NLST" => Command::Nlst(list_args("NLST", rest)?),
        b"SITE" => Command::Site(site(rest)?),
        b"SYST" => no_arg("SYST", rest, Command::Syst)?,
        b"STAT" => Command::Stat(optional("STAT", rest)?),
        b"HELP" => Command::Help(optional("HELP", rest)?),
        b"NOOP" => no_arg("NOOP", rest, Command::Noop)?,
        b"FEAT" => no_arg("FEAT", rest, Command::Feat)?,
        b"OPTS" => Command::Opts(opts(rest)?),
        b"EPRT" => Command::Eprt(eprt(rest)?),
        b"EPSV" => Command::Epsv(epsv(rest)?),
        b"SIZE" => Command::Size(required("SIZE", rest)?),
        b"MDTM" => Command::Mdtm(required("MDTM", rest)?),
        b"MLST" => Command::Mlst(optional("MLST", rest)?),
        b"MLSD" => Command::Mlsd(optional("MLSD", rest)?),
        b"AUTH" => Command::Auth(token("AUTH", rest)?),
        b"PBSZ" => Command::Pbsz(pbsz(rest)?),
        b"PROT" => Command::Prot(prot(rest)?),
        b"CCC" => no_arg("CCC", rest, Command::Ccc)?,
        b"SBUF" => Command::Sbuf(number("SBUF", rest)?),
        b"CKSM" => cksm(rest)?,
        b"HASH" => Command::Hash(required("HASH", rest)?),
        b"RINF" => Command::Rinf(rinf(rest)?),
        b"SPAS" => spas(rest)?,
        b"SPOR" => Command::Spor(spor(rest)?),
        b"ERET" => eret(rest)?,
        b"ESTO" => esto(rest)?,
        b"TREV" => trev(rest)?,
        _ => return Err(CommandError::Unknown { verb: quote(verb) }),
    };
    Ok(c)
}

/// A `-xyz` option word of `LIST`/`NLST`: a dash, then letters or digits.
pub(super) fn is_option_word(word: &[u8]) -> bool {
    match word.split_first() {
        Some((b'-', letters)) => {
            !letters.is_empty() && letters.iter().all(u8::is_ascii_alphanumeric)
        }
        _ => false,
    }
}

/// The words of a keyword argument, split on runs of spaces.
fn words(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|b| *b == b' ')
        .filter(|w| !w.is_empty())
        .collect()
}

/// Splits `bytes` at its first space: the word and what follows that space.
fn split_word(bytes: &[u8]) -> (&[u8], Option<&[u8]>) {
    match bytes.iter().position(|b| *b == b' ') {
        Some(i) => (&bytes[..i], Some(&bytes[i + 1..])),
        None => (bytes, None),
    }
}

fn no_arg(verb: &'static str, rest: Option<&[u8]>, c: Command) -> Result<Command, CommandError> {
    match rest {
        Some(r) if !trim_spaces(r).is_empty() => {
            Err(CommandError::syntax(verb, r, "takes no argument"))
        }
        _ => Ok(c),
    }
}

fn arg(verb: &'static str, bytes: &[u8]) -> Result<Arg, CommandError> {
    Arg::new(bytes).map_err(|_| CommandError::syntax(verb, bytes, "argument contains a line feed"))
}

fn required(verb: &'static str, rest: Option<&[u8]>) -> Result<Arg, CommandError> {
    match rest {
        Some(r) if !r.is_empty() => arg(verb, r),
        _ => Err(CommandError::syntax(verb, b"", "missing argument")),
    }
}

fn optional(verb: &'static str, rest: Option<&[u8]>) -> Result<Option<Arg>, CommandError> {
    match rest {
        Some(r) if !r.is_empty() => arg(verb, r).map(Some),
        _ => Ok(None),
    }
}

/// A keyword argument with surrounding spaces removed; missing is 501.
fn keyword<'a>(verb: &'static str, rest: Option<&'a [u8]>) -> Result<&'a [u8], CommandError> {
    let k = trim_spaces(rest.unwrap_or(&[]));
    if k.is_empty() {
        return Err(CommandError::syntax(verb, b"", "missing argument"));
    }
    Ok(k)
}

fn token(verb: &'static str, rest: Option<&[u8]>) -> Result<Token, CommandError> {
    let k = keyword(verb, rest)?;
    Token::from_bytes(k).map_err(|_| CommandError::syntax(verb, k, "expected one word of ASCII"))
}

fn decimal_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > U64_MAX_DIGITS || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// A decimal byte count; missing or not a number is 501 (GFD.20 for SBUF).
fn number(verb: &'static str, rest: Option<&[u8]>) -> Result<u64, CommandError> {
    let k = keyword(verb, rest)?;
    decimal_u64(k)
        .ok_or_else(|| CommandError::syntax(verb, k, "expected a decimal number of bytes"))
}

/// `REST <offset>`, or GridFTP's ranges `REST 0-29,30-89`.
fn restart(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    let k = keyword("REST", rest)?;
    if !k.contains(&b'-') {
        return number("REST", rest).map(Command::Rest);
    }
    std::str::from_utf8(k)
        .ok()
        .and_then(|text| crate::mode_e::Ranges::parse(text).ok())
        .map(Command::RestRanges)
        .ok_or_else(|| {
            CommandError::syntax(
                "REST",
                k,
                "expected a byte offset, or byte ranges START-END[,START-END...]",
            )
        })
}

fn port(rest: Option<&[u8]>) -> Result<std::net::SocketAddrV4, CommandError> {
    let k = keyword("PORT", rest)?;
    let s = std::str::from_utf8(k).map_err(|_| CommandError::syntax("PORT", k, "not ASCII"))?;
    addr::parse_port_arg(s)
        .map_err(|_| CommandError::syntax("PORT", k, "expected h1,h2,h3,h4,p1,p2"))
}

/// `SPAS`: no argument; the IPv6 form `SPAS 2` is not offered (504).
fn spas(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    match rest.map(trim_spaces) {
        None | Some([]) => Ok(Command::Spas),
        Some(k) => Err(CommandError::not_implemented("SPAS", k)),
    }
}

/// `SPOR h1,h2,h3,h4,p1,p2 [h1,...,p2 ...]`: one PORT address per stripe.
fn spor(rest: Option<&[u8]>) -> Result<StripeAddrs, CommandError> {
    let k = keyword("SPOR", rest)?;
    let bad = || {
        CommandError::syntax(
            "SPOR",
            k,
            "expected one or more h1,h2,h3,h4,p1,p2 separated by spaces",
        )
    };
    let mut addrs = words(k).into_iter().map(|w| {
        std::str::from_utf8(w)
            .ok()
            .and_then(|s| addr::parse_port_arg(s).ok())
            .ok_or_else(bad)
    });
    let first = addrs.next().ok_or_else(bad)??;
    let more = addrs.collect::<Result<Vec<_>, _>>()?;
    Ok(StripeAddrs::new(first, more))
}

/// `bytes` without its leading spaces.
fn skip_spaces(bytes: &[u8]) -> &[u8] {
    &bytes[bytes.iter().position(|b| *b != b' ').unwrap_or(bytes.len())..]
}

/// What follows the module word of `ERET`/`ESTO`: `count` numbers, then
/// the path (everything after the single space that follows the last
/// number). `None` if the line does not have that shape.
fn module_args(whole: &[u8], count: usize) -> Option<(Vec<u64>, &[u8])> {
    let (_module, after) = split_word(skip_spaces(whole));
    let mut s = after?;
    let mut numbers = Vec::with_capacity(count);
    for _ in 0..count {
        let (word, after) = split_word(skip_spaces(s));
        numbers.push(decimal_u64(word)?);
        s = after?;
    }
    Some((numbers, s))
}

/// The arguments of `ERET`/`ESTO`: the module word must be `module`
/// (another is 504), then `count` numbers and the path; `expected` says
/// what a 501 expects.
fn module_command(
    verb: &'static str,
    rest: Option<&[u8]>,
    module: &[u8],
    count: usize,
    expected: &'static str,
) -> Result<(Vec<u64>, Arg), CommandError> {
    let whole = rest.unwrap_or(&[]);
    let word = split_word(skip_spaces(whole)).0;
    if word.is_empty() {
        return Err(CommandError::syntax(verb, b"", "missing argument"));
    }
    if !word.eq_ignore_ascii_case(module) {
        return Err(CommandError::not_implemented(verb, word));
    }
    let (numbers, path) =
        module_args(whole, count).ok_or_else(|| CommandError::syntax(verb, whole, expected))?;
    Ok((numbers, required(verb, Some(path))?))
}

/// `ERET P <offset> <length> <path>`; another module is 504.
fn eret(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    const EXPECTED: &str = "expected P <offset> <length> <path>";
    let (numbers, path) = module_command("ERET", rest, b"P", 2, EXPECTED)?;
    match numbers[..] {
        [offset, length] => Ok(Command::Eret {
            offset,
            length,
            path,
        }),
        _ => Err(CommandError::syntax("ERET", b"", EXPECTED)),
    }
}

/// `ESTO A <offset> <path>`; another module is 504.
fn esto(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    const EXPECTED: &str = "expected A <offset> <path>";
    let (numbers, path) = module_command("ESTO", rest, b"A", 1, EXPECTED)?;
    match numbers[..] {
        [offset] => Ok(Command::Esto { offset, path }),
        _ => Err(CommandError::syntax("ESTO", b"", EXPECTED)),
    }
}

/// `TREV PERF|RESTART <seconds>`.
fn trev(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    let k = keyword("TREV", rest)?;
    let [event, secs] = words(k)[..] else {
        return Err(CommandError::syntax(
            "TREV",
            k,
            "expected PERF or RESTART and a number of seconds",
        ));
    };
    let event = match event.to_ascii_uppercase().as_slice() {
        b"PERF" => MarkerEvent::Perf,
        b"RESTART" => MarkerEvent::Restart,
        _ => return Err(CommandError::not_implemented("TREV", event)),
    };
    let secs = decimal_u64(secs)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            CommandError::syntax("TREV", k, "expected a number of seconds below 2^32")
        })?;
    Ok(Command::Trev { event, secs })
}

fn eprt(rest: Option<&[u8]>) -> Result<std::net::SocketAddr, CommandError> {
    let k = keyword("EPRT", rest)?;
    let s = std::str::from_utf8(k).map_err(|_| CommandError::syntax("EPRT", k, "not ASCII"))?;
    addr::parse_eprt_arg(s).map_err(|e| match e {
        AddrError::UnsupportedProtocol { protocol, .. } => CommandError::UnsupportedProtocol {
            protocol,
            arg: quote(k),
        },
        _ => CommandError::syntax("EPRT", k, "expected <d>proto<d>address<d>port<d>"),
    })
}

fn epsv(rest: Option<&[u8]>) -> Result<Option<EpsvArg>, CommandError> {
    let k = trim_spaces(rest.unwrap_or(&[]));
    if k.is_empty() {
        return Ok(None);
    }
    if k.eq_ignore_ascii_case(b"ALL") {
        return Ok(Some(EpsvArg::All));
    }
    decimal_u64(k)
        .and_then(|n| u16::try_from(n).ok())
        .map(|n| Some(EpsvArg::Protocol(n)))
        .ok_or_else(|| CommandError::syntax("EPSV", k, "expected ALL or a protocol number"))
}

fn transfer_type(rest: Option<&[u8]>) -> Result<TransferType, CommandError> {
    let k = keyword("TYPE", rest)?;
    let w: Vec<Vec<u8>> = words(k).iter().map(|w| w.to_ascii_uppercase()).collect();
    let w: Vec<&[u8]> = w.iter().map(Vec::as_slice).collect();
    match w.as_slice() {
        [b"A"] | [b"A", b"N"] => Ok(TransferType::Ascii),
        [b"I"] => Ok(TransferType::Image),
        [b"L", b"8"] => Ok(TransferType::Local8),
        [b"A", b"T" | b"C"] | [b"E"] | [b"E", b"N" | b"T" | b"C"] => {
            Err(CommandError::not_implemented("TYPE", k))
        }
        [b"L", size] if decimal_u64(size).is_some() => {
            Err(CommandError::not_implemented("TYPE", k))
        }
        _ => Err(CommandError::syntax(
            "TYPE",
            k,
            "expected A [N], E, I or L <byte-size>",
        )),
    }
}

fn single_letter<'a>(
    verb: &'static str,
    rest: Option<&'a [u8]>,
) -> Result<(u8, &'a [u8]), CommandError> {
    let k = keyword(verb, rest)?;
    match k {
        [letter] => Ok((letter.to_ascii_uppercase(), k)),
        _ => Err(CommandError::syntax(verb, k, "expected one letter")),
    }
}

fn structure(rest: Option<&[u8]>) -> Result<FileStructure, CommandError> {
    match single_letter("STRU", rest)? {
        (b'F', _) => Ok(FileStructure::File),
        (b'R' | b'P', k) => Err(CommandError::not_implemented("STRU", k)),
        (_, k) => Err(CommandError::syntax("STRU", k, "expected F, R or P")),
    }
}

fn mode(rest: Option<&[u8]>) -> Result<TransferMode, CommandError> {
    match single_letter("MODE", rest)? {
        (b'S', _) => Ok(TransferMode::Stream),
        (b'E', _) => Ok(TransferMode::Extended),
        (b'B' | b'C', k) => Err(CommandError::not_implemented("MODE", k)),
        (_, k) => Err(CommandError::syntax("MODE", k, "expected S, B, C or E")),
    }
}

fn prot(rest: Option<&[u8]>) -> Result<ProtectionLevel, CommandError> {
    let k = keyword("PROT", rest)?;
    match k.to_ascii_uppercase().as_slice() {
        b"C" => Ok(ProtectionLevel::Clear),
        b"S" => Ok(ProtectionLevel::Safe),
        b"E" => Ok(ProtectionLevel::Confidential),
        b"P" => Ok(ProtectionLevel::Private),
        _ => Err(CommandError::not_implemented("PROT", k)),
    }
}

fn pbsz(rest: Option<&[u8]>) -> Result<u32, CommandError> {
    let k = keyword("PBSZ", rest)?;
    decimal_u64(k)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| CommandError::syntax("PBSZ", k, "expected a decimal number below 2^32"))
}

fn allo(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    let k = keyword("ALLO", rest)?;
    let bad = || CommandError::syntax("ALLO", k, "expected <bytes> [R <record-bytes>]");
    match words(k).as_slice() {
        [bytes] => Ok(Command::Allo {
            bytes: decimal_u64(bytes).ok_or_else(bad)?,
            record_bytes: None,
        }),
        [bytes, r, record] if r.eq_ignore_ascii_case(b"R") => Ok(Command::Allo {
            bytes: decimal_u64(bytes).ok_or_else(bad)?,
            record_bytes: Some(decimal_u64(record).ok_or_else(bad)?),
        }),
        _ => Err(bad()),
    }
}

fn list_args(verb: &'static str, rest: Option<&[u8]>) -> Result<ListArgs, CommandError> {
    let mut s = rest.unwrap_or(&[]);
    let mut flags = String::new();
    loop {
        s = &s[s.iter().position(|b| *b != b' ').unwrap_or(s.len())..];
        let (word, after) = split_word(s);
        if !is_option_word(word) {
            break;
        }
        flags.extend(word[1..].iter().map(|b| char::from(*b)));
        s = after.unwrap_or(&[]);
    }
    let path = if s.is_empty() {
        None
    } else {
        Some(arg(verb, s)?)
    };
    Ok(ListArgs { flags, path })
}

fn site(rest: Option<&[u8]>) -> Result<SiteCommand, CommandError> {
    let r = rest.unwrap_or(&[]);
    let r = &r[r.iter().position(|b| *b != b' ').unwrap_or(r.len())..];
    let (name, args) = split_word(r);
    if name.is_empty() {
        return Err(CommandError::syntax("SITE", b"", "missing sub-command"));
    }
    match name.to_ascii_uppercase().as_slice() {
        b"HELP" => Ok(SiteCommand::Help(optional("SITE HELP", args)?)),
        b"SBUF" => Ok(SiteCommand::Sbuf(number("SITE SBUF", args)?)),
        b"CHMOD" => {
            let a = args.unwrap_or(&[]);
            let a = &a[a.iter().position(|b| *b != b' ').unwrap_or(a.len())..];
            let (mode, path) = split_word(a);
            let mode = parse_octal_mode(mode).ok_or_else(|| {
                CommandError::syntax("SITE CHMOD", a, "expected <octal-mode> <path>")
            })?;
            let path = required("SITE CHMOD", path)?;
            Ok(SiteCommand::Chmod { mode, path })
        }
        _ => {
            let name = Token::from_bytes(name)
                .map_err(|_| CommandError::syntax("SITE", name, "sub-command is not ASCII"))?;
            let args = optional("SITE", args)?;
            Ok(SiteCommand::Other(SiteOther { name, args }))
        }
    }
}

/// Octal permission bits, at most `0o7777` (at most 5 digits, so `07777`).
fn parse_octal_mode(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 5 || !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
        return None;
    }
    let mode = digits.iter().fold(0u32, |m, d| m * 8 + u32::from(d - b'0'));
    (mode <= 0o7777).then_some(mode)
}

fn opts(rest: Option<&[u8]>) -> Result<OptsCommand, CommandError> {
    let r = rest.unwrap_or(&[]);
    let r = &r[r.iter().position(|b| *b != b' ').unwrap_or(r.len())..];
    let (name, args) = split_word(r);
    if name.is_empty() {
        return Err(CommandError::syntax("OPTS", b"", "missing command name"));
    }
    match name.to_ascii_uppercase().as_slice() {
        b"UTF8" => {
            let k = keyword("OPTS UTF8", args)?;
            if k.eq_ignore_ascii_case(b"ON") {
                Ok(OptsCommand::Utf8(true))
            } else if k.eq_ignore_ascii_case(b"OFF") {
                Ok(OptsCommand::Utf8(false))
            } else {
                Err(CommandError::syntax("OPTS UTF8", k, "expected ON or OFF"))
            }
        }
        b"RIGHTSIZE" => Ok(OptsCommand::Rightsize(rightsize_opts(args)?)),
        b"MLST" => {
            let k = trim_spaces(args.unwrap_or(&[]));
            let facts = k
                .split(|b| *b == b';')
                .filter(|f| !f.is_empty())
                .map(|f| {
                    Token::from_bytes(f)
                        .map_err(|_| CommandError::syntax("OPTS MLST", k, "expected fact;fact;"))
                })
                .collect::<Result<Vec<Token>, CommandError>>()?;
            Ok(OptsCommand::Mlst(MlstFacts(facts)))
        }
        _ => {
            let command = Token::from_bytes(name)
                .map_err(|_| CommandError::syntax("OPTS", name, "command name is not ASCII"))?;
            let args = optional("OPTS", args)?;
            Ok(OptsCommand::Other(OptsOther { command, args }))
        }
    }
}

fn cksm(rest: Option<&[u8]>) -> Result<Command, CommandError> {
    let whole = rest.unwrap_or(&[]);
    let bad = || {
        CommandError::syntax(
            "CKSM",
            whole,
            "expected <algorithm> <offset> <length> <path>",
        )
    };
    let mut s = whole;
    let mut fields: [&[u8]; 3] = [&[]; 3];
    for field in &mut fields {
        s = &s[s.iter().position(|b| *b != b' ').unwrap_or(s.len())..];
        let (word, after) = split_word(s);
        *field = word;
        s = after.ok_or_else(bad)?;
    }
    let [algorithm, offset, length] = fields;
    let algorithm = Token::from_bytes(algorithm).map_err(|_| bad())?;
    let offset = decimal_u64(offset).ok_or_else(bad)?;
    let length = match length {
        b"-1" => None,
        n => Some(decimal_u64(n).ok_or_else(bad)?),
    };
    let path = required("CKSM", Some(s))?;
    Ok(Command::Cksm {
        algorithm,
        offset,
        length,
        path,
    })
}

/// `OPTS RIGHTSIZE ON [UDP=<port>] | OFF`, keywords case-insensitive.
fn rightsize_opts(args: Option<&[u8]>) -> Result<RightsizeOpts, CommandError> {
    let k = trim_spaces(args.unwrap_or(&[]));
    let bad = || {
        CommandError::syntax(
            "OPTS RIGHTSIZE",
            k,
            "expected ON, ON UDP=<port> (1-65535) or OFF",
        )
    };
    match words(k).as_slice() {
        [on] if on.eq_ignore_ascii_case(b"ON") => Ok(RightsizeOpts::On { udp_port: None }),
        [off] if off.eq_ignore_ascii_case(b"OFF") => Ok(RightsizeOpts::Off),
        [on, udp] if on.eq_ignore_ascii_case(b"ON") => {
            let port = udp
                .get(..4)
                .filter(|key| key.eq_ignore_ascii_case(b"UDP="))
                .and_then(|_| decimal_u64(&udp[4..]))
                .and_then(|p| u16::try_from(p).ok())
                .and_then(std::num::NonZeroU16::new)
                .ok_or_else(bad)?;
            Ok(RightsizeOpts::On {
                udp_port: Some(port),
            })
        }
        _ => Err(bad()),
    }
}

/// `RINF [<facts>]`: spaces around the facts are ignored; none is an empty
/// summary.
fn rinf(rest: Option<&[u8]>) -> Result<PeerInfo, CommandError> {
    parse_facts(trim_spaces(rest.unwrap_or(&[]))).map_err(|e| CommandError::Syntax {
        verb: "RINF",
        arg: e.piece().to_owned(),
        reason: e.reason(),
    })
}
