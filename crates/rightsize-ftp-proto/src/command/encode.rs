//! Client-side command encoding (RFC 959 section 5.3; Telnet escaping per
//! RFC 854 and RFC 2640 section 3.1). `parse` reads back what this writes.

use std::net::SocketAddr;

use super::{
    Command, EpsvArg, FileStructure, ListArgs, MarkerEvent, OptsCommand, ProtectionLevel,
    SiteCommand, TransferMode, TransferType,
};
use crate::addr;
use crate::facts::encode_facts;
use crate::rightsize::{EXTENSION, RightsizeOpts};

const IAC: u8 = 255;

impl Command {
    /// The canonical verb, upper case (`PWD` for `XPWD` too).
    pub fn verb(&self) -> &'static str {
        match self {
            Command::User(_) => "USER",
            Command::Pass(_) => "PASS",
            Command::Acct(_) => "ACCT",
            Command::Cwd(_) => "CWD",
            Command::Cdup => "CDUP",
            Command::Rein => "REIN",
            Command::Quit => "QUIT",
            Command::Port(_) => "PORT",
            Command::Pasv => "PASV",
            Command::Type(_) => "TYPE",
            Command::Stru(_) => "STRU",
            Command::Mode(_) => "MODE",
            Command::Retr(_) => "RETR",
            Command::Stor(_) => "STOR",
            Command::Stou(_) => "STOU",
            Command::Appe(_) => "APPE",
            Command::Allo { .. } => "ALLO",
            Command::Rest(_) | Command::RestRanges(_) => "REST",
            Command::Rnfr(_) => "RNFR",
            Command::Rnto(_) => "RNTO",
            Command::Abor => "ABOR",
            Command::Dele(_) => "DELE",
            Command::Rmd(_) => "RMD",
            Command::Mkd(_) => "MKD",
            Command::Pwd => "PWD",
            Command::List(_) => "LIST",
            Command::Nlst(_) => "NLST",
            Command::Site(_) => "SITE",
            Command::Syst => "SYST",
            Command::Stat(_) => "STAT",
            Command::Help(_) => "HELP",
            Command::Noop => "NOOP",
            Command::Feat => "FEAT",
            Command::Opts(_) => "OPTS",
            Command::Eprt(_) => "EPRT",
            Command::Epsv(_) => "EPSV",
            Command::Size(_) => "SIZE",
            Command::Mdtm(_) => "MDTM",
            Command::Mlst(_) => "MLST",
            Command::Mlsd(_) => "MLSD",
            Command::Auth(_) => "AUTH",
            Command::Pbsz(_) => "PBSZ",
            Command::Prot(_) => "PROT",
            Command::Ccc => "CCC",
            Command::Sbuf(_) => "SBUF",
            Command::Cksm { .. } => "CKSM",
            Command::Hash(_) => "HASH",
            Command::Rinf(_) => "RINF",
            Command::Spas => "SPAS",
            Command::Spor(_) => "SPOR",
            Command::Eret { .. } => "ERET",
            Command::Esto { .. } => "ESTO",
            Command::Trev { .. } => "TREV",
        }
    }

    /// The command line as `parse` takes it: no line end, no Telnet
    /// escaping. `parse(&c.to_line()) == Ok(c)` for every command.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = self.verb().as_bytes().to_vec();
        let mut word = |bytes: &[u8]| {
            out.push(b' ');
            out.extend_from_slice(bytes);
        };
        match self {
            Command::User(a)
            | Command::Acct(a)
            | Command::Cwd(a)
            | Command::Retr(a)
            | Command::Stor(a)
            | Command::Appe(a)
            | Command::Rnfr(a)
            | Command::Rnto(a)
            | Command::Dele(a)
            | Command::Rmd(a)
            | Command::Mkd(a)
            | Command::Size(a)
            | Command::Mdtm(a)
            | Command::Hash(a) => word(a.as_bytes()),
            // curl sends an empty password as "PASS " with the space.
            Command::Pass(a) => word(a.as_ref().map_or(&[], |a| a.as_bytes())),
            Command::Stou(a)
            | Command::Stat(a)
            | Command::Help(a)
            | Command::Mlst(a)
            | Command::Mlsd(a) => {
                if let Some(a) = a {
                    word(a.as_bytes());
                }
            }
            Command::Cdup
            | Command::Rein
            | Command::Quit
            | Command::Pasv
            | Command::Abor
            | Command::Pwd
            | Command::Syst
            | Command::Noop
            | Command::Feat
            | Command::Ccc
            | Command::Spas => {}
            Command::Spor(addrs) => {
                for a in addrs.all() {
                    word(addr::format_port_arg(a).as_bytes());
                }
            }
            Command::Eret {
                offset,
                length,
                path,
            } => {
                word(format!("P {offset} {length}").as_bytes());
                word(path.as_bytes());
            }
            Command::Trev { event, secs } => {
                let event = match event {
                    MarkerEvent::Perf => "PERF",
                    MarkerEvent::Restart => "RESTART",
                };
                word(format!("{event} {secs}").as_bytes());
            }
            Command::Esto { offset, path } => {
                word(format!("A {offset}").as_bytes());
                word(path.as_bytes());
            }
            Command::Port(a) => word(addr::format_port_arg(*a).as_bytes()),
            Command::Eprt(a) => word(addr::format_eprt_arg(*a).as_bytes()),
            Command::Type(t) => word(match t {
                TransferType::Ascii => b"A",
                TransferType::Image => b"I",
                TransferType::Local8 => b"L 8",
            }),
            Command::Stru(FileStructure::File) => word(b"F"),
            Command::Mode(TransferMode::Stream) => word(b"S"),
            Command::Mode(TransferMode::Extended) => word(b"E"),
            Command::Allo {
                bytes,
                record_bytes,
            } => match record_bytes {
                Some(r) => word(format!("{bytes} R {r}").as_bytes()),
                None => word(bytes.to_string().as_bytes()),
            },
            Command::Rest(n) | Command::Sbuf(n) => word(n.to_string().as_bytes()),
            Command::RestRanges(ranges) => word(ranges.to_string().as_bytes()),
            Command::List(l) | Command::Nlst(l) => encode_list(l, word),
            Command::Site(s) => encode_site(s, word),
            Command::Opts(o) => encode_opts(o, word),
            Command::Epsv(e) => match e {
                None => {}
                Some(EpsvArg::All) => word(b"ALL"),
                Some(EpsvArg::Protocol(p)) => word(p.to_string().as_bytes()),
            },
            Command::Auth(t) => word(t.as_str().as_bytes()),
            Command::Rinf(info) => {
                let facts = encode_facts(info);
                if !facts.is_empty() {
                    word(facts.as_bytes());
                }
            }
            Command::Pbsz(n) => word(n.to_string().as_bytes()),
            Command::Prot(p) => word(match p {
                ProtectionLevel::Clear => b"C",
                ProtectionLevel::Safe => b"S",
                ProtectionLevel::Confidential => b"E",
                ProtectionLevel::Private => b"P",
            }),
            Command::Cksm {
                algorithm,
                offset,
                length,
                path,
            } => {
                let length = length.map_or_else(|| "-1".to_owned(), |l| l.to_string());
                word(format!("{algorithm} {offset} {length}").as_bytes());
                word(path.as_bytes());
            }
        }
        out
    }

    /// The command as wire bytes: [`Command::to_line`] with Telnet escaping
    /// (0xFF doubled, RFC 854; CR sent as `CR NUL`, RFC 2640 3.1) and CRLF.
    pub fn encode(&self) -> Vec<u8> {
        let line = self.to_line();
        let mut out = Vec::with_capacity(line.len() + 2);
        for &b in &line {
            match b {
                IAC => out.extend_from_slice(&[IAC, IAC]),
                b'\r' => out.extend_from_slice(b"\r\0"),
                _ => out.push(b),
            }
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    /// The data address of `PORT` or `EPRT`, if this is one.
    pub fn data_address(&self) -> Option<SocketAddr> {
        match self {
            Command::Port(a) => Some(SocketAddr::V4(*a)),
            Command::Eprt(a) => Some(*a),
            _ => None,
        }
    }
}

fn encode_list(l: &ListArgs, mut word: impl FnMut(&[u8])) {
    if !l.flags.is_empty() {
        word(format!("-{}", l.flags).as_bytes());
    }
    if let Some(p) = &l.path {
        word(p.as_bytes());
    }
}

fn encode_site(s: &SiteCommand, mut word: impl FnMut(&[u8])) {
    match s {
        SiteCommand::Help(a) => {
            word(b"HELP");
            if let Some(a) = a {
                word(a.as_bytes());
            }
        }
        SiteCommand::Sbuf(n) => word(format!("SBUF {n}").as_bytes()),
        SiteCommand::Chmod { mode, path } => {
            word(format!("CHMOD {mode:o}").as_bytes());
            word(path.as_bytes());
        }
        SiteCommand::Other(o) => {
            word(o.name.as_str().as_bytes());
            if let Some(a) = &o.args {
                word(a.as_bytes());
            }
        }
    }
}

fn encode_opts(o: &OptsCommand, mut word: impl FnMut(&[u8])) {
    match o {
        OptsCommand::Utf8(on) => word(if *on { b"UTF8 ON" } else { b"UTF8 OFF" }),
        OptsCommand::Mlst(facts) => {
            word(b"MLST");
            if !facts.0.is_empty() {
                let mut list = String::new();
                for f in &facts.0 {
                    list.push_str(f.as_str());
                    list.push(';');
                }
                word(list.as_bytes());
            }
        }
        OptsCommand::Rightsize(r) => {
            word(EXTENSION.as_bytes());
            match r {
                RightsizeOpts::On { udp_port: None } => word(b"ON"),
                RightsizeOpts::On {
                    udp_port: Some(port),
                } => word(format!("ON UDP={port}").as_bytes()),
                RightsizeOpts::Off => word(b"OFF"),
            }
        }
        OptsCommand::Other(o) => {
            word(o.command.as_str().as_bytes());
            if let Some(a) = &o.args {
                word(a.as_bytes());
            }
        }
    }
}
