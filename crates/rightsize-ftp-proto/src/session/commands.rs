//! One handler per command: what a logged-in (or not yet logged-in) session
//! answers. Reply texts follow vsftpd's where clients are known to read them.

use std::net::SocketAddr;

use super::answer::{multiline, reply};
use super::bench;
use super::gridftp;
use super::listing::{self, UtcTime};
use super::port::active;
use super::rightsize;
use super::tls;
use super::{
    Access, ChecksumJob, DataEndpoint, DataSetup, EntryKind, FAILED_LOGIN_DELAY, FsError, Login,
    MAX_FAILED_LOGINS, Output, SBUF_SIZES, ServerHost, Session, TransferKind, TransferPlan,
    sbuf_sizes_text,
};
use crate::checksum::Algorithm;
use crate::command::{EpsvArg, ListArgs, OptsCommand, SiteCommand, TransferMode, TransferType};
use crate::markers::MarkerSchedule;
use crate::mode_e;
use crate::reply::quote_pathname;
use crate::rightsize::RightsizeFeature;
use crate::{Arg, Command, Reply, VirtualPath, addr};

/// The features FEAT lists (RFC 2389), each a line with its leading space.
fn features(host: &dyn ServerHost, tls_offered: bool) -> Vec<String> {
    let mut lines = vec!["Features:".to_owned()];
    let mut feats = vec![
        "EPRT".to_owned(),
        "EPSV".into(),
        // GridFTP's partial retrieve, adjusted store and striped
        // passive/port (GFD.20), as the Globus server names them.
        "ERET".into(),
        "ESTO".into(),
        "SPAS".into(),
        "SPOR".into(),
        "MDTM".into(),
        "MLST type*;size*;modify*;perm*;".into(),
        // GridFTP's MODE E with OPTS RETR Parallelism (GFD.20), as the
        // Globus server names it.
        "PARALLEL".into(),
        "PASV".into(),
        "REST STREAM".into(),
        "SIZE".into(),
        "TVFS".into(),
        "UTF8".into(),
        "SBUF".into(),
        RightsizeFeature::offered().feat_line(),
    ];
    if !host.checksums().is_empty() {
        feats.push(format!("CKSM {}", host.checksums().join(",")));
    }
    if tls_offered {
        // RFC 4217 section 6.
        feats.extend(["AUTH TLS".to_owned(), "PBSZ".into(), "PROT".into()]);
    }
    if host.checksums().contains(&"SHA256") {
        feats.push("HASH SHA-256*".into());
    }
    lines.extend(feats.into_iter().map(|f| format!(" {f}")));
    lines.push("End".into());
    lines
}

/// Commands a client may send before logging in.
fn allowed_before_login(command: &Command) -> bool {
    matches!(
        command,
        Command::User(_)
            | Command::Pass(_)
            | Command::Quit
            | Command::Feat
            | Command::Syst
            | Command::Noop
            | Command::Help(_)
            | Command::Opts(OptsCommand::Utf8(_))
            | Command::Auth(_)
            | Command::Pbsz(_)
            | Command::Prot(_)
            | Command::Ccc
    )
}

fn is_write(command: &Command) -> bool {
    matches!(
        command,
        Command::Stor(_)
            | Command::Esto { .. }
            | Command::Appe(_)
            | Command::Stou(_)
            | Command::Dele(_)
            | Command::Mkd(_)
            | Command::Rmd(_)
            | Command::Rnfr(_)
            | Command::Rnto(_)
    )
}

/// STOR and APPE into the benchmark sink write nothing, so read-only users
/// (anonymous included) may use them.
fn stores_to_sink(session: &Session, command: &Command) -> bool {
    let (Command::Stor(path) | Command::Appe(path)) = command else {
        return false;
    };
    session
        .cwd
        .resolve(path.as_bytes())
        .is_ok_and(|p| bench::classify(&p) == Some(bench::BenchPath::Null))
}

pub(super) fn dispatch(
    session: &mut Session,
    command: Command,
    host: &mut dyn ServerHost,
    now_unix: i64,
) -> Vec<Output> {
    if session.access().is_none() && !allowed_before_login(&command) {
        return reply(530, "Please login with USER and PASS.");
    }
    if is_write(&command)
        && session.access() != Some(Access::ReadWrite)
        && !stores_to_sink(session, &command)
    {
        return reply(550, "Permission denied.");
    }
    match command {
        Command::User(user) => user_command(session, &user),
        Command::Pass(password) => pass_command(session, password.as_ref(), host),
        Command::Quit => vec![Output::Reply(Reply::trusted(221, "Goodbye.".into())), Output::Close],
        Command::Noop => reply(200, "NOOP ok."),
        Command::Syst => reply(215, "UNIX Type: L8"),
        Command::Feat => multiline(211, features(host, session.config.tls.offered())),
        Command::Help(_) => multiline(
            214,
            vec![
                "The following commands are recognized.".into(),
                " ABOR APPE AUTH CCC CDUP CKSM CWD DELE EPRT EPSV ERET ESTO FEAT HASH HELP LIST MDTM".into(),
                " MKD MLSD MLST MODE NLST NOOP OPTS PASS PASV PBSZ PORT PROT PWD QUIT REST RETR".into(),
                " RINF RMD RNFR RNTO SBUF SITE SIZE SPAS SPOR STAT STOR STRU SYST TREV TYPE USER XCUP".into(),
                " XCWD XMKD XPWD XRMD".into(),
                "Help OK.".into(),
            ],
        ),
        Command::Opts(OptsCommand::Utf8(_)) => reply(200, "Always in UTF8 mode."),
        Command::Opts(OptsCommand::Mlst(_)) => reply(200, "MLST OPTS type;size;modify;perm;"),
        Command::Opts(OptsCommand::Rightsize(opts)) => rightsize::opts(session, opts),
        Command::Opts(OptsCommand::Other(o)) if o.command().eq_ignore_ascii_case("RETR") => {
            let args = o.args().map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned());
            match mode_e::parse_retr_opts(args.as_deref().unwrap_or("")) {
                Ok(opts) => {
                    session.parallelism = opts.parallelism;
                    if let Some(secs) = opts.markers_secs {
                        session.retr_markers_secs = secs;
                    }
                    reply(200, "OPTS Command Successful.")
                }
                Err(why) => reply(501, &why),
            }
        }
        Command::Opts(OptsCommand::Other(_)) => reply(501, "Option not understood."),
        Command::Rinf(_) => rightsize::rinf_refused(),
        Command::Auth(mechanism) => tls::auth(session, &mechanism),
        Command::Pbsz(_) => tls::pbsz(session),
        Command::Prot(level) => tls::prot(session, level),
        Command::Ccc => tls::ccc(session),
        Command::Acct(_) => reply(202, "ACCT not needed at this site."),
        Command::Allo { .. } => reply(202, "ALLO command ignored."),
        Command::Rein | Command::Stou(_) => reply(502, "Command not implemented."),
        Command::Pwd => reply(257, &format!("{} is the current directory", quote_pathname(session.cwd.as_bytes()))),
        Command::Cwd(path) => change_dir(session, host, path.as_bytes()),
        Command::Cdup => change_dir(session, host, b".."),
        Command::Type(TransferType::Ascii) => {
            session.binary = false;
            reply(200, "Switching to ASCII mode.")
        }
        Command::Type(TransferType::Image | TransferType::Local8) => {
            session.binary = true;
            reply(200, "Switching to Binary mode.")
        }
        Command::Mode(TransferMode::Stream) => {
            session.extended = false;
            reply(200, "Mode set to S.")
        }
        Command::Mode(TransferMode::Extended) => {
            session.extended = true;
            reply(200, "Mode set to E.")
        }
        Command::Stru(_) => reply(200, "Structure set to F."),
        Command::Pasv => passive(session, host, false),
        Command::Epsv(None) => passive(session, host, true),
        Command::Epsv(Some(EpsvArg::All)) => {
            session.epsv_all = true;
            reply(200, "EPSV ALL ok.")
        }
        Command::Epsv(Some(EpsvArg::Protocol(proto))) => {
            let matches = (proto == 1 && session.peer.is_ipv4()) || (proto == 2 && session.peer.is_ipv6());
            if matches { passive(session, host, true) } else { reply(522, "Network protocol not supported, use (1,2)") }
        }
        Command::Port(target) => active(session, SocketAddr::V4(target)),
        Command::Eprt(target) => active(session, target),
        Command::Rest(offset) => {
            session.rest = offset;
            session.rest_ranges = None;
            reply(350, &format!("Restart position accepted ({offset})."))
        }
        Command::RestRanges(ranges) => restart_ranges(session, ranges),
        Command::Retr(path) => retrieve(session, host, &path, None),
        Command::Eret { offset, length, path } => retrieve(session, host, &path, Some((offset, length))),
        Command::Stor(path) => store(session, host, &path, false, None),
        Command::Appe(path) => store(session, host, &path, true, None),
        Command::Esto { offset, path } => store(session, host, &path, false, Some(offset)),
        Command::Spas => gridftp::striped_passive(session, host),
        Command::Spor(addrs) => gridftp::striped_port(session, &addrs),
        Command::Trev { event, secs } => gridftp::marker_interval(session, event, secs),
        Command::List(args) => list(session, host, &args, now_unix, ListStyle::Long),
        Command::Nlst(args) => list(session, host, &args, now_unix, ListStyle::Names),
        Command::Mlsd(path) => mlsd(session, host, path.as_ref()),
        Command::Mlst(path) => mlst(session, host, path.as_ref()),
        Command::Size(path) => with_meta(session, host, &path, |meta| match meta.kind {
            EntryKind::File => reply(213, &meta.size.to_string()),
            EntryKind::Dir => reply(550, "Could not get file size."),
        }),
        Command::Mdtm(path) => with_meta(session, host, &path, |meta| {
            reply(213, &listing::mdtm(UtcTime::from_unix(meta.modified_unix)))
        }),
        Command::Stat(None) => status(session, host),
        Command::Stat(Some(path)) => stat_path(session, host, &path, now_unix),
        Command::Dele(path) => fs_op(session, host, &path, |host, p| host.remove_file(p), 250, "Delete operation successful."),
        Command::Rmd(path) => {
            fs_op(session, host, &path, |host, p| host.remove_dir(p), 250, "Remove directory operation successful.")
        }
        Command::Mkd(path) => make_dir(session, host, &path),
        Command::Rnfr(path) => rename_from(session, host, &path),
        Command::Rnto(path) => rename_to(session, host, &path),
        Command::Abor => reply(225, "No transfer to ABOR."),
        Command::Site(SiteCommand::Help(_)) => multiline(
            214,
            vec!["The following SITE commands are recognized.".into(), " HELP RIGHTSIZE SBUF".into(), "Help OK.".into()],
        ),
        Command::Site(SiteCommand::Sbuf(size)) | Command::Sbuf(size) => set_sbuf(session, size),
        Command::Site(SiteCommand::Other(site)) if site.name().eq_ignore_ascii_case(crate::rightsize::EXTENSION) => {
            super::rightsize::site(session, host, site.args().map(|a| a.as_bytes()))
        }
        Command::Site(_) => reply(500, "Unknown SITE command."),
        Command::Cksm { algorithm, offset, length, path } => checksum(session, host, algorithm.as_str(), offset, length, &path),
        Command::Hash(path) => hash(session, host, &path),
    }
}

fn user_command(session: &mut Session, user: &Arg) -> Vec<Output> {
    if session.access().is_some() {
        return reply(530, "Can't change to another user.");
    }
    if tls::login_needs_tls(session, &user.to_string_lossy()) {
        return tls::login_refused();
    }
    session.login = Login::AwaitingPass {
        user: user.to_string_lossy().into_owned(),
    };
    reply(331, "Please specify the password.")
}

fn pass_command(
    session: &mut Session,
    password: Option<&Arg>,
    host: &mut dyn ServerHost,
) -> Vec<Output> {
    let user = match &session.login {
        Login::AwaitingPass { user } => user.clone(),
        Login::LoggedIn { .. } => return reply(230, "Already logged in."),
        Login::AwaitingUser => return reply(503, "Login with USER first."),
    };
    let anonymous = user.eq_ignore_ascii_case("anonymous") || user.eq_ignore_ascii_case("ftp");
    let access = if anonymous && session.config.anonymous {
        Some(Access::ReadOnly)
    } else if anonymous {
        None
    } else {
        host.authenticate(&user, password.map_or(&[][..], Arg::as_bytes))
    };
    match access {
        Some(access) => {
            session.login = Login::LoggedIn { access, user };
            reply(230, "Login successful.")
        }
        None => {
            session.login = Login::AwaitingUser;
            session.failed_logins += 1;
            let mut out = vec![
                Output::Delay(FAILED_LOGIN_DELAY),
                Output::Reply(Reply::trusted(530, "Login incorrect.".into())),
            ];
            if session.failed_logins >= MAX_FAILED_LOGINS {
                out.push(Output::Close);
            }
            out
        }
    }
}

pub(super) fn resolve(session: &Session, arg: &[u8]) -> Result<VirtualPath, Vec<Output>> {
    session
        .cwd
        .resolve(arg)
        .map_err(|_| reply(553, "Invalid path name."))
}

fn change_dir(session: &mut Session, host: &mut dyn ServerHost, arg: &[u8]) -> Vec<Output> {
    let path = match resolve(session, arg) {
        Ok(path) => path,
        Err(out) => return out,
    };
    match host.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::Dir => {
            session.cwd = path;
            reply(250, "Directory successfully changed.")
        }
        _ => reply(550, "Failed to change directory."),
    }
}

fn passive(session: &mut Session, host: &mut dyn ServerHost, extended: bool) -> Vec<Output> {
    if session.epsv_all && !extended {
        return reply(501, "PASV not allowed after EPSV ALL.");
    }
    match host.open_passive(session.sbuf) {
        Ok(addr) => {
            session.data = DataSetup::Passive(addr);
            match (extended, addr) {
                (true, _) => vec![Output::Reply(addr::epsv_reply(addr.port()))],
                (false, SocketAddr::V4(v4)) => vec![Output::Reply(addr::pasv_reply(v4))],
                (false, SocketAddr::V6(_)) => reply(425, "PASV is IPv4 only; use EPSV."),
            }
        }
        Err(_) => reply(425, "Can't open passive connection."),
    }
}

/// Takes the data connection set up by PASV/EPSV/PORT/EPRT, which one
/// transfer consumes.
fn take_endpoint(session: &mut Session) -> Option<DataEndpoint> {
    match std::mem::replace(&mut session.data, DataSetup::None) {
        DataSetup::None => None,
        DataSetup::Passive(addr) => Some(DataEndpoint::Passive(addr)),
        DataSetup::Active(addr) => Some(DataEndpoint::Active(addr)),
    }
}

fn start(session: &mut Session, kind: TransferKind, start_text: String) -> Vec<Output> {
    // MODE E: the sender connects (GFD.20); a listing goes over one
    // connection; a store takes the connections the client opens.
    let extended = match (&kind, session.extended, &session.data) {
        (_, false, _) => None,
        (TransferKind::Retrieve { .. }, true, DataSetup::Active(_)) => Some(session.parallelism),
        (TransferKind::Listing(_), true, DataSetup::Active(_)) => Some(1),
        (TransferKind::Retrieve { .. } | TransferKind::Listing(_), true, _) => {
            return reply(
                425,
                "In MODE E the sender opens the data connections: send PORT or EPRT first.",
            );
        }
        (TransferKind::Store { append: false, .. }, true, DataSetup::Passive(_)) => {
            Some(session.parallelism)
        }
        (TransferKind::Store { append: false, .. }, true, _) => {
            return reply(
                425,
                "In MODE E the receiver listens: send PASV or EPSV before STOR.",
            );
        }
        (TransferKind::Store { append: true, .. }, true, _) => {
            return reply(504, "APPE is not offered in MODE E; use STOR.");
        }
    };
    // In MODE E the data address (the client's PORT, or this server's
    // PASV listener) stays for the next transfers: GridFTP clients send it
    // once for a whole tree.
    let endpoint = match (extended, session.data) {
        (Some(_), DataSetup::Active(addr)) => Some(DataEndpoint::Active(addr)),
        (Some(_), DataSetup::Passive(addr)) => Some(DataEndpoint::Passive(addr)),
        _ => take_endpoint(session),
    };
    let Some(endpoint) = endpoint else {
        return reply(425, "Use PORT or PASV first.");
    };
    // The Globus server's markers: a MODE E store gets both, a MODE E
    // retrieve perf markers if the client asked (OPTS RETR markers=N;).
    let markers = match (&kind, extended) {
        (TransferKind::Store { .. }, Some(_)) => session.store_markers,
        (TransferKind::Retrieve { .. }, Some(_)) => {
            MarkerSchedule::retrieve(session.retr_markers_secs)
        }
        _ => MarkerSchedule::NONE,
    };
    session.busy = super::Busy::Transfer;
    session.rest = 0;
    session.rest_ranges = None;
    vec![Output::Transfer(TransferPlan {
        kind,
        endpoint,
        sbuf: session.sbuf,
        extended,
        start_reply: Reply::trusted(150, start_text),
        markers,
        private: session.tls.private,
    })]
}

/// `REST` with byte ranges (GFD.20): in MODE E, what the next retrieve
/// leaves out; in stream mode only a prefix (`0-N`) means something, and
/// it is `REST N`.
fn restart_ranges(session: &mut Session, ranges: crate::mode_e::Ranges) -> Vec<Output> {
    if session.extended {
        let text = format!("Restart ranges accepted ({ranges}).");
        session.rest = 0;
        session.rest_ranges = Some(ranges);
        return reply(350, &text);
    }
    match ranges.as_slice() {
        [] => {
            session.rest = 0;
            session.rest_ranges = None;
            reply(350, "Restart position accepted (0).")
        }
        [(0, end)] => {
            session.rest = *end;
            session.rest_ranges = None;
            reply(350, &format!("Restart position accepted ({end})."))
        }
        _ => reply(
            501,
            "Restart ranges with holes need MODE E; in stream mode send REST <offset>.",
        ),
    }
}

fn mode_name(session: &Session) -> &'static str {
    if session.binary { "BINARY" } else { "ASCII" }
}

/// RETR, or with `part` (offset, length) ERET P: that part of the file,
/// cut where the file ends, as the Globus server does.
fn retrieve(
    session: &mut Session,
    host: &mut dyn ServerHost,
    arg: &Arg,
    part: Option<(u64, u64)>,
) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) => path,
        Err(out) => return out,
    };
    match host.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::File && part.is_none() && session.rest > meta.size => {
            let rest = std::mem::take(&mut session.rest);
            reply(
                554,
                &format!(
                    "Restart point {rest} is beyond the end of the file ({} bytes); REST 0 starts again.",
                    meta.size
                ),
            )
        }
        Ok(meta) if meta.kind == EntryKind::File => {
            let part = part.map(|(offset, length)| {
                let offset = offset.min(meta.size);
                (offset, length.min(meta.size - offset))
            });
            let text = format!(
                "Opening {} mode data connection for {} ({} bytes).",
                mode_name(session),
                String::from_utf8_lossy(path.file_name().unwrap_or(b"")).replace(['\r', '\n'], "?"),
                part.map_or(meta.size, |(_, length)| length)
            );
            let (offset, done, length) = match (part, session.rest_ranges.take()) {
                (Some((offset, length)), _) => (offset, crate::mode_e::Ranges::new(), Some(length)),
                (None, Some(done)) => (0, done, None),
                (None, None) => (session.rest, crate::mode_e::Ranges::new(), None),
            };
            start(
                session,
                TransferKind::Retrieve {
                    path,
                    offset,
                    done,
                    length,
                },
                text,
            )
        }
        Err(FsError::NotFound) => reply(550, "No such file or directory."),
        Ok(meta) if meta.kind == EntryKind::Dir => reply(550, "Is a directory."),
        _ => reply(550, "Failed to open file."),
    }
}

/// STOR, APPE, or with `adjust` ESTO A (blocks shifted by `adjust`, the
/// file kept as it is).
fn store(
    session: &mut Session,
    host: &mut dyn ServerHost,
    arg: &Arg,
    append: bool,
    adjust: Option<u64>,
) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) if !path.is_root() => path,
        _ => return reply(553, "Could not create file."),
    };
    match host.metadata(&path.parent()) {
        Ok(meta) if meta.kind == EntryKind::Dir => {}
        _ => return reply(553, "Could not create file."),
    }
    if let Ok(meta) = host.metadata(&path)
        && meta.kind == EntryKind::Dir
    {
        return reply(553, "Could not create file.");
    }
    let offset = if adjust.is_some() { 0 } else { session.rest };
    start(
        session,
        TransferKind::Store {
            path,
            offset,
            append,
            adjust,
        },
        "Ok to send data.".into(),
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListStyle {
    Long,
    Names,
}

fn list(
    session: &mut Session,
    host: &mut dyn ServerHost,
    args: &ListArgs,
    now_unix: i64,
    style: ListStyle,
) -> Vec<Output> {
    let target = args.path().map_or(&b"."[..], Arg::as_bytes);
    let path = match resolve(session, target) {
        Ok(path) => path,
        Err(out) => return out,
    };
    let entries = match host.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::Dir => match host.read_dir(&path) {
            Ok(entries) => entries,
            Err(_) => return reply(450, "Could not read the directory."),
        },
        Ok(meta) => vec![listing::DirEntry {
            name: path.file_name().unwrap_or(b"").to_vec(),
            metadata: meta,
        }],
        // vsftpd answers a listing of a missing path with an empty listing.
        Err(FsError::NotFound) => Vec::new(),
        Err(_) => return reply(450, "Could not read the directory."),
    };
    let mut data = Vec::new();
    for entry in &entries {
        match style {
            ListStyle::Long => {
                data.extend_from_slice(listing::list_line(entry, now_unix).as_bytes())
            }
            ListStyle::Names => data.extend_from_slice(&entry.name),
        }
        data.extend_from_slice(b"\r\n");
    }
    start(
        session,
        TransferKind::Listing(data),
        "Here comes the directory listing.".into(),
    )
}

fn mlsd(session: &mut Session, host: &mut dyn ServerHost, arg: Option<&Arg>) -> Vec<Output> {
    let path = match resolve(session, arg.map_or(&b"."[..], Arg::as_bytes)) {
        Ok(path) => path,
        Err(out) => return out,
    };
    let (meta, entries) = match host.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::Dir => match host.read_dir(&path) {
            Ok(entries) => (meta, entries),
            Err(_) => return reply(550, "Could not read the directory."),
        },
        Ok(_) => return reply(501, "Not a directory."),
        Err(_) => return reply(550, "No such directory."),
    };
    let mut data = Vec::new();
    data.extend_from_slice(listing::mlsx_line(b".", &meta, Some("cdir")).as_bytes());
    data.extend_from_slice(b"\r\n");
    for entry in &entries {
        data.extend_from_slice(listing::mlsx_line(&entry.name, &entry.metadata, None).as_bytes());
        data.extend_from_slice(b"\r\n");
    }
    start(
        session,
        TransferKind::Listing(data),
        "Here comes the directory listing.".into(),
    )
}

fn mlst(session: &mut Session, host: &mut dyn ServerHost, arg: Option<&Arg>) -> Vec<Output> {
    let path = match resolve(session, arg.map_or(&b"."[..], Arg::as_bytes)) {
        Ok(path) => path,
        Err(out) => return out,
    };
    match host.metadata(&path) {
        Ok(meta) => {
            let name = path.to_string();
            multiline(
                250,
                vec![
                    format!("Listing {}", name.replace(['\r', '\n'], "?")),
                    format!(
                        " {}",
                        listing::mlsx_line(name.as_bytes(), &meta, None).replace(['\r', '\n'], "?")
                    ),
                    "End".into(),
                ],
            )
        }
        Err(_) => reply(550, "No such file or directory."),
    }
}

fn with_meta(
    session: &mut Session,
    host: &mut dyn ServerHost,
    arg: &Arg,
    answer: impl FnOnce(listing::Metadata) -> Vec<Output>,
) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) => path,
        Err(out) => return out,
    };
    match host.metadata(&path) {
        Ok(meta) => answer(meta),
        Err(_) => reply(550, "Could not get file information."),
    }
}

fn status(session: &Session, host: &mut dyn ServerHost) -> Vec<Output> {
    let mut lines = vec![
        "FTP server status:".into(),
        format!("     Connected to {}", session.peer.ip()),
        format!("     TYPE: {}", mode_name(session)),
        format!(
            "     SBUF: {}",
            session
                .sbuf
                .map_or_else(|| "not set".into(), |s| s.to_string())
        ),
    ];
    lines.extend(host.status().into_iter().map(|l| format!("     {l}")));
    lines.push("End of status".into());
    multiline(211, lines)
}

fn stat_path(
    session: &mut Session,
    host: &mut dyn ServerHost,
    arg: &Arg,
    now_unix: i64,
) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) => path,
        Err(out) => return out,
    };
    let entries = match host.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::Dir => host.read_dir(&path).unwrap_or_default(),
        Ok(meta) => vec![listing::DirEntry {
            name: path.file_name().unwrap_or(b"").to_vec(),
            metadata: meta,
        }],
        Err(_) => return reply(450, "No such file or directory."),
    };
    let mut lines = vec!["Status follows:".to_owned()];
    lines.extend(entries.iter().map(|e| {
        format!(
            " {}",
            listing::list_line(e, now_unix).replace(['\r', '\n'], "?")
        )
    }));
    lines.push("End of status".into());
    multiline(213, lines)
}

fn fs_op(
    session: &mut Session,
    host: &mut dyn ServerHost,
    arg: &Arg,
    op: impl FnOnce(&mut dyn ServerHost, &VirtualPath) -> Result<(), FsError>,
    code: u16,
    text: &str,
) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) if !path.is_root() => path,
        _ => return reply(550, "Permission denied."),
    };
    match op(host, &path) {
        Ok(()) => reply(code, text),
        Err(FsError::PermissionDenied) => reply(550, "Permission denied."),
        Err(_) => reply(550, "Operation failed."),
    }
}

fn make_dir(session: &mut Session, host: &mut dyn ServerHost, arg: &Arg) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) if !path.is_root() => path,
        _ => return reply(550, "Create directory operation failed."),
    };
    match host.make_dir(&path) {
        Ok(()) => reply(257, &format!("{} created", quote_pathname(path.as_bytes()))),
        Err(_) => reply(550, "Create directory operation failed."),
    }
}

fn rename_from(session: &mut Session, host: &mut dyn ServerHost, arg: &Arg) -> Vec<Output> {
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) if !path.is_root() => path,
        _ => return reply(550, "RNFR command failed."),
    };
    match host.metadata(&path) {
        Ok(_) => {
            session.rename_from = Some(path);
            reply(350, "Ready for RNTO.")
        }
        Err(_) => reply(550, "RNFR command failed."),
    }
}

fn rename_to(session: &mut Session, host: &mut dyn ServerHost, arg: &Arg) -> Vec<Output> {
    let Some(from) = session.rename_from.take() else {
        return reply(503, "RNFR required first.");
    };
    let to = match resolve(session, arg.as_bytes()) {
        Ok(path) if !path.is_root() => path,
        _ => return reply(553, "Rename failed."),
    };
    match host.rename(&from, &to) {
        Ok(()) => reply(250, "Rename successful."),
        Err(_) => reply(550, "Rename failed."),
    }
}

/// GFD.20 `SBUF`: the buffer of later data connections. 0 and sizes above
/// what a buffer sysctl can hold are refused with 501.
fn set_sbuf(session: &mut Session, size: u64) -> Vec<Output> {
    if !SBUF_SIZES.contains(&size) {
        return reply(501, &sbuf_sizes_text());
    }
    session.sbuf = Some(size);
    reply(200, &format!("SBUF set to {size}."))
}

/// Globus `CKSM`: checked here, computed by the driver (a
/// [`ChecksumJob`]), answered by [`Session::checksum_done`].
fn checksum(
    session: &mut Session,
    host: &mut dyn ServerHost,
    algorithm: &str,
    offset: u64,
    length: Option<u64>,
    arg: &Arg,
) -> Vec<Output> {
    let algorithm = algorithm.to_ascii_uppercase();
    let offered = host.checksums();
    let known = offered
        .iter()
        .find(|a| **a == algorithm)
        .and_then(|a| Algorithm::from_name(a).ok());
    let Some(known) = known else {
        return reply(
            504,
            &format!(
                "Unsupported checksum algorithm; this server offers {}.",
                offered.join(",")
            ),
        );
    };
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) => path,
        Err(out) => return out,
    };
    if !matches!(host.metadata(&path), Ok(meta) if meta.kind == EntryKind::File) {
        return reply(550, "Could not compute the checksum.");
    }
    session.busy = super::Busy::Checksum(super::ChecksumAnswer::Cksm);
    vec![Output::Checksum(ChecksumJob {
        path,
        algorithm: known,
        offset,
        length,
    })]
}

/// draft-bryan-ftpext-hash: `213 SHA-256 0-<last> <hex> <path>`, computed
/// as `CKSM` is.
fn hash(session: &mut Session, host: &mut dyn ServerHost, arg: &Arg) -> Vec<Output> {
    if !host.checksums().contains(&"SHA256") {
        return reply(502, "HASH is not offered.");
    }
    let path = match resolve(session, arg.as_bytes()) {
        Ok(path) => path,
        Err(out) => return out,
    };
    let size = match host.metadata(&path) {
        Ok(meta) if meta.kind == EntryKind::File => meta.size,
        _ => return reply(550, "Could not compute the hash."),
    };
    session.busy = super::Busy::Checksum(super::ChecksumAnswer::Hash {
        size,
        path: path.clone(),
    });
    vec![Output::Checksum(ChecksumJob {
        path,
        algorithm: Algorithm::Sha256,
        offset: 0,
        length: None,
    })]
}
