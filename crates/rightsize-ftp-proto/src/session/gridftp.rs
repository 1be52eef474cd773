//! GridFTP's striped data channel commands (GFD.20) for a server of one
//! stripe: `SPAS` opens a passive listener as `PASV` does and names it in
//! the striped reply; `SPOR` takes the client's stripes' addresses, checks
//! every one as `PORT` checks its one, and connects to the first. A MODE E
//! transfer then uses that address as it uses PASV's or PORT's. And the
//! Globus server's `TREV`, which sets how often a store's markers go.

use std::net::SocketAddr;

use super::answer::{multiline, reply};
use super::port::{active, allowed_target};
use super::{DataSetup, Output, ServerHost, Session};
use crate::addr;
use crate::command::{MarkerEvent, StripeAddrs};
use crate::markers::every;

/// `SPAS`: a passive listener, answered as the Globus server answers
/// (`229-Entering Striped Passive Mode.`, one ` h1,h2,h3,h4,p1,p2` line
/// per stripe, `229 End`).
pub(super) fn striped_passive(session: &mut Session, host: &mut dyn ServerHost) -> Vec<Output> {
    if session.epsv_all {
        return reply(501, "SPAS not allowed after EPSV ALL.");
    }
    match host.open_passive(session.sbuf) {
        Ok(SocketAddr::V4(v4)) => {
            session.data = DataSetup::Passive(SocketAddr::V4(v4));
            multiline(
                229,
                vec![
                    "Entering Striped Passive Mode.".into(),
                    format!(" {}", addr::format_port_arg(v4)),
                    "End".into(),
                ],
            )
        }
        Ok(SocketAddr::V6(_)) => reply(425, "SPAS is IPv4 only; use EPSV."),
        Err(_) => reply(425, "Can't open passive connection."),
    }
}

/// `SPOR`: every address must pass PORT's checks (the client itself, port
/// 1024 or above); this server's one stripe connects to the first.
pub(super) fn striped_port(session: &mut Session, addrs: &StripeAddrs) -> Vec<Output> {
    if addrs
        .all()
        .any(|a| !allowed_target(session, SocketAddr::V4(a)))
    {
        return reply(500, "Illegal SPOR command.");
    }
    active(session, SocketAddr::V4(addrs.first()))
}

/// `TREV PERF|RESTART <seconds>`: the interval of a MODE E store's perf
/// or range markers from the next store on, 0 for none.
pub(super) fn marker_interval(session: &mut Session, event: MarkerEvent, secs: u32) -> Vec<Output> {
    match event {
        MarkerEvent::Perf => session.store_markers.perf = every(secs),
        MarkerEvent::Restart => session.store_markers.ranges = every(secs),
    }
    reply(200, "Command Successful.")
}

#[cfg(test)]
mod tests;
