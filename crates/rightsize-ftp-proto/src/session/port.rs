//! The active side of a data connection (`PORT`, `EPRT`, `SPOR`): where
//! the server may connect.

use std::net::SocketAddr;

use super::answer::reply;
use super::{DataSetup, Output, Session};

/// RFC 2577 section 3: data connections only to the client itself, and
/// never to a privileged port (the FTP bounce attack).
pub(super) fn allowed_target(session: &Session, target: SocketAddr) -> bool {
    target.ip().to_canonical() == session.peer.ip().to_canonical() && target.port() >= 1024
}

/// The next transfer connects to `target`, if it is allowed.
pub(super) fn active(session: &mut Session, target: SocketAddr) -> Vec<Output> {
    if session.epsv_all {
        return reply(501, "PORT not allowed after EPSV ALL.");
    }
    if !allowed_target(session, target) {
        return reply(500, "Illegal PORT command.");
    }
    session.data = DataSetup::Active(target);
    reply(200, "PORT command successful. Consider using PASV.")
}
