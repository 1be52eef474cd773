//! FTPS on the server's side (RFC 4217): `AUTH TLS` upgrades the control
//! connection, `PBSZ 0` and `PROT P|C` choose whether data connections
//! are protected, `CCC` is refused. The TLS itself is the driver's: the
//! session says when to start it ([`Output::StartTls`]) and whether a
//! transfer's data connection needs it ([`TransferPlan::private`]).
//!
//! [`TransferPlan::private`]: super::TransferPlan::private

use super::answer::reply;
use super::{Login, Output, Session};
use crate::Token;
use crate::command::ProtectionLevel;

/// How a server offers TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsPolicy {
    /// No certificate: `AUTH` gets 502.
    #[default]
    Off,
    /// Explicit FTPS: `AUTH TLS` upgrades the control connection, and a
    /// login before it is refused (no password crosses in clear), except
    /// an anonymous one when `anonymous_in_clear`.
    Explicit {
        /// `anonymous` and `ftp` may log in without TLS.
        anonymous_in_clear: bool,
    },
    /// Implicit FTPS: the control connection is TLS from its first byte
    /// (the driver's handshake comes before the greeting).
    Implicit,
}

impl TlsPolicy {
    /// Whether TLS is offered at all.
    pub fn offered(self) -> bool {
        self != TlsPolicy::Off
    }
}

/// One session's TLS state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct TlsState {
    /// The control connection is protected (after `AUTH TLS`, or
    /// implicit FTPS).
    pub control: bool,
    /// `PBSZ` was accepted.
    pub pbsz: bool,
    /// `PROT P`: data connections are protected.
    pub private: bool,
}

impl TlsState {
    /// The state a session of `policy` starts in.
    pub fn new(policy: TlsPolicy) -> TlsState {
        TlsState {
            control: policy == TlsPolicy::Implicit,
            ..TlsState::default()
        }
    }
}

/// Whether a login by `user` must wait for `AUTH TLS`.
pub(super) fn login_needs_tls(session: &Session, user: &str) -> bool {
    let anonymous = user.eq_ignore_ascii_case("anonymous") || user.eq_ignore_ascii_case("ftp");
    match session.config.tls {
        TlsPolicy::Explicit { anonymous_in_clear } => {
            let allowed_in_clear = anonymous && anonymous_in_clear;
            !session.tls.control && !allowed_in_clear
        }
        TlsPolicy::Off | TlsPolicy::Implicit => false,
    }
}

/// The reply to a login that must wait for `AUTH TLS`.
pub(super) fn login_refused() -> Vec<Output> {
    reply(
        530,
        "Log in after AUTH TLS: this server takes no password in clear.",
    )
}

/// `AUTH <mechanism>`.
pub(super) fn auth(session: &mut Session, mechanism: &Token) -> Vec<Output> {
    if !session.config.tls.offered() {
        return reply(502, "TLS is not offered by this server.");
    }
    if session.tls.control {
        return reply(503, "The control connection is already protected.");
    }
    if matches!(session.login, Login::LoggedIn { .. }) {
        return reply(503, "AUTH must come before the login.");
    }
    let m = mechanism.as_str();
    let private = if m.eq_ignore_ascii_case("TLS") || m.eq_ignore_ascii_case("TLS-C") {
        false
    } else if m.eq_ignore_ascii_case("SSL") || m.eq_ignore_ascii_case("TLS-P") {
        // The older mechanisms protect the data connections too.
        true
    } else {
        return reply(
            504,
            &format!("AUTH {m} is not a mechanism this server takes: use AUTH TLS."),
        );
    };
    // A USER sent in clear does not carry over.
    session.login = Login::AwaitingUser;
    session.tls = TlsState {
        control: true,
        pbsz: private,
        private,
    };
    let mut out = reply(234, "Proceed with negotiation.");
    out.push(Output::StartTls);
    out
}

/// `PBSZ <size>`: only 0 means anything over TLS.
pub(super) fn pbsz(session: &mut Session) -> Vec<Output> {
    if !session.tls.control {
        return reply(503, "PBSZ comes after AUTH TLS.");
    }
    session.tls.pbsz = true;
    reply(200, "PBSZ=0")
}

/// `PROT <level>`.
pub(super) fn prot(session: &mut Session, level: ProtectionLevel) -> Vec<Output> {
    if !session.tls.control {
        return reply(503, "PROT comes after AUTH TLS.");
    }
    if !session.tls.pbsz {
        return reply(503, "PROT comes after PBSZ.");
    }
    match level {
        ProtectionLevel::Private => {
            session.tls.private = true;
            reply(200, "PROT now Private.")
        }
        ProtectionLevel::Clear => {
            session.tls.private = false;
            reply(200, "PROT now Clear.")
        }
        ProtectionLevel::Safe | ProtectionLevel::Confidential => {
            reply(536, "PROT takes C or P over TLS.")
        }
    }
}

/// `CCC`: the control connection stays protected.
pub(super) fn ccc(session: &Session) -> Vec<Output> {
    if !session.tls.control {
        return reply(533, "The control connection is not protected.");
    }
    reply(534, "CCC refused: the control connection stays protected.")
}

#[cfg(test)]
mod tests;
