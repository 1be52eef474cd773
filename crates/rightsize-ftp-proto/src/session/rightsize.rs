//! The server side of the RIGHTSIZE extension (`ftp::rightsize`): the
//! switch `OPTS RIGHTSIZE ON|OFF`, and `SBUF` and `RINF` during a transfer.
//!
//! Guarantees: with the extension off a session behaves as it did before
//! the extension existed (`SBUF` during a transfer waits for the transfer's
//! end and sizes the next data connection; `RINF` is answered 503 in its
//! turn). With it on, `SBUF` and `RINF` during a transfer are answered at
//! once, never queued, and a good one yields one [`Output::Peer`] right
//! before its 200; a bad one yields only a 501 and the transfer goes on.
//! `SITE SBUF` keeps its GFD.20 meaning (the next data connection) either
//! way, so a client can still size the next transfer during this one.

use std::num::NonZeroU16;

use super::{Output, SBUF_SIZES, ServerHost, Session, sbuf_sizes_text};
use crate::rightsize::{RightsizeOpts, opts_reply};
use crate::{Command, CommandError, PeerMessage, Reply};

/// The text of the 503 to `RINF` outside a transfer or with the extension
/// off.
pub const RINF_REFUSED: &str = "RINF is only accepted during a transfer with OPTS RIGHTSIZE ON.";

/// What a session with the extension on remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RightsizeState {
    /// The client's UDP probe port from `OPTS RIGHTSIZE ON UDP=<port>`.
    pub(super) client_udp_port: Option<NonZeroU16>,
}

fn reply(code: u16, text: String) -> Vec<Output> {
    vec![Output::Reply(Reply::trusted(code, text))]
}

/// `OPTS RIGHTSIZE ON [UDP=<port>] | OFF` after login.
pub(super) fn opts(session: &mut Session, opts: RightsizeOpts) -> Vec<Output> {
    // The probes go to the client's address as PORT's data does, and to
    // the same ports: no privileged service is sent to.
    if let RightsizeOpts::On {
        udp_port: Some(port),
    } = opts
        && port.get() < 1024
    {
        return reply(
            501,
            format!(
                "OPTS RIGHTSIZE ON UDP={port}: the probe port must be 1024 or above, as for PORT."
            ),
        );
    }
    session.rightsize = match opts {
        RightsizeOpts::On { udp_port } => Some(RightsizeState {
            client_udp_port: udp_port,
        }),
        RightsizeOpts::Off => None,
    };
    let server_port = session.config.probe_port.and_then(NonZeroU16::new);
    vec![Output::Reply(opts_reply(opts, server_port))]
}

/// `RINF` anywhere but during a transfer with the extension on.
pub(super) fn rinf_refused() -> Vec<Output> {
    reply(503, RINF_REFUSED.to_owned())
}

/// The answer to a refused command line that the extension words itself,
/// outside a transfer: `OPTS RIGHTSIZE` with a bad argument gets a 501 that
/// quotes it and says what is accepted; `RINF` gets its 503 whatever its
/// facts. `None` for the others.
pub(super) fn refused_line(err: &CommandError) -> Option<Vec<Output>> {
    match err {
        CommandError::Syntax {
            verb: "OPTS RIGHTSIZE",
            ..
        } => Some(reply(501, format!("{err}."))),
        CommandError::Syntax { verb: "RINF", .. } => Some(rinf_refused()),
        _ => None,
    }
}

/// `SBUF` and `RINF` during a transfer with the extension on; `None` for
/// anything else (and for everything with the extension off), which the
/// session then handles as it always did.
pub(super) fn during_transfer(
    session: &Session,
    command: &Result<Command, CommandError>,
) -> Option<Vec<Output>> {
    // Off: the session's usual handling.
    session.rightsize?;
    let out = match command {
        Ok(Command::Sbuf(size)) if SBUF_SIZES.contains(size) => vec![
            Output::Peer(PeerMessage::Size(*size)),
            Output::Reply(Reply::trusted(
                200,
                format!("SBUF {size} for the running transfer."),
            )),
        ],
        Ok(Command::Sbuf(_)) => reply(501, sbuf_sizes_text()),
        Err(err @ CommandError::Syntax { verb: "SBUF", .. }) => {
            reply(501, format!("{err}; {}", sbuf_sizes_text()))
        }
        Ok(Command::Rinf(info)) => vec![
            Output::Peer(PeerMessage::Info(*info)),
            Output::Reply(Reply::trusted(200, "RINF ok.".into())),
        ],
        Err(err @ CommandError::Syntax { verb: "RINF", .. }) => reply(501, format!("{err}.")),
        _ => return None,
    };
    Some(out)
}

/// What `SITE RIGHTSIZE` accepts, for its 501.
pub const SITE_USAGE: &str = "SITE RIGHTSIZE takes HOST, TUNE <tuner> or PART <path>";

/// `SITE RIGHTSIZE HOST` (this host's TCP settings, a 211 with one
/// `name=value` line each), `SITE RIGHTSIZE TUNE <tuner>` (the tuner of
/// the session's later data connections, 200 or 501) and `SITE RIGHTSIZE
/// PART <path>` (the bytes of a cut upload to the path that the server
/// kept, hidden, for `REST` and `STOR` to continue: 213, or 550 when there
/// is none).
pub(super) fn site(
    session: &Session,
    host: &mut dyn ServerHost,
    args: Option<&[u8]>,
) -> Vec<Output> {
    let args = args.unwrap_or_default();
    let text = String::from_utf8_lossy(args);
    let mut words = text.split(' ').filter(|w| !w.is_empty());
    let sub = words.next().unwrap_or_default();
    let rest: Vec<&str> = words.collect();
    let quoted = crate::arg::quote(args);
    if sub.eq_ignore_ascii_case("PART") && !rest.is_empty() {
        // The path is all that follows the word (it may hold spaces).
        let after = args.trim_ascii_start();
        let raw = after
            .get(sub.len()..)
            .unwrap_or_default()
            .trim_ascii_start();
        let path = match super::commands::resolve(session, raw) {
            Ok(path) => path,
            Err(out) => return out,
        };
        let shown = crate::arg::quote(raw);
        return match host.kept_part(&path) {
            Ok(Some(bytes)) => reply(213, bytes.to_string()),
            Ok(None) => reply(
                550,
                format!("SITE RIGHTSIZE PART: no part of \"{shown}\" is kept."),
            ),
            Err(e) => reply(550, format!("SITE RIGHTSIZE PART \"{shown}\": {e}.")),
        };
    }
    if sub.eq_ignore_ascii_case("HOST") && rest.is_empty() {
        let Some(settings) = host.tcp_settings() else {
            return reply(
                550,
                "SITE RIGHTSIZE HOST: this server cannot read its settings.".into(),
            );
        };
        let mut lines = vec![format!("{EXTENSION_HOST} settings of this host:")];
        for (name, value) in settings {
            // One line each; a value with a line break is not sent.
            if !(name.contains(['\r', '\n']) || value.contains(['\r', '\n'])) {
                lines.push(format!(" {name}={value}"));
            }
        }
        lines.push("End.".into());
        return match Reply::multiline(211, lines) {
            Ok(r) => vec![Output::Reply(r)],
            Err(_) => reply(
                550,
                "SITE RIGHTSIZE HOST: the settings do not fit a reply.".into(),
            ),
        };
    }
    if sub.eq_ignore_ascii_case("TUNE") && rest.len() == 1 {
        return match host.set_tuner(rest[0]) {
            Ok(name) => reply(
                200,
                format!("RIGHTSIZE TUNE {name} for this session's data connections."),
            ),
            Err(why) => reply(501, format!("SITE RIGHTSIZE TUNE: {why}.")),
        };
    }
    reply(501, format!("{SITE_USAGE}, not \"{quoted}\"."))
}

/// The first word of the reply to `SITE RIGHTSIZE HOST`.
const EXTENSION_HOST: &str = "RIGHTSIZE HOST";

#[cfg(test)]
mod tests;
