//! The RIGHTSIZE extension's announcement and switch: its FEAT line
//! (RFC 2389 section 3), `OPTS RIGHTSIZE ON|OFF` (RFC 2389 section 4) and
//! the replies to it. docs/protocol.md, "The RIGHTSIZE FTP extension", is
//! the specification; the messages sent during a transfer are in
//! [`super::notice`] and their facts in [`super::facts`].
//!
//! The extension lets the two ends of a transfer tell each other's tuners
//! what they see, over the control connection, while the data flows. It is
//! off until the client turns it on, because stock clients break on any
//! unexpected line during a transfer. Guarantees: the server writes its
//! FEAT line and its `OPTS` replies with the functions here, and the client
//! reads them with the parsers here, so the two cannot drift; the parsers
//! never panic and skip capabilities they do not know.

use std::num::NonZeroU16;

use crate::Reply;

/// The extension's name: the FEAT token and the `OPTS` command name.
pub const EXTENSION: &str = "RIGHTSIZE";

/// One capability listed after `RIGHTSIZE` in the FEAT line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `SBUF`: the server takes `SBUF <bytes>` during a transfer as a size
    /// for the running transfer, and may send `RIGHTSIZE SBUF` notices.
    Sbuf,
    /// `INFO`: the server takes `RINF <facts>` during a transfer, and may
    /// send `RIGHTSIZE INFO` notices.
    Info,
    /// `HOST`: the server answers `SITE RIGHTSIZE HOST` with its TCP
    /// settings (`rmem_max`, `tcp_rmem`, ...), for `rightsize doctor`.
    Host,
    /// `TUNE`: the server takes `SITE RIGHTSIZE TUNE <tuner>`, the tuner
    /// of the session's later data connections.
    Tune,
    /// `PART`: the server keeps a cut upload hidden, answers `SITE
    /// RIGHTSIZE PART <path>` with its size, and continues it on `REST`
    /// and `STOR` of the path.
    Part,
}

impl Capability {
    /// Every capability this version knows, in FEAT order.
    pub const ALL: [Capability; 5] = [
        Capability::Sbuf,
        Capability::Info,
        Capability::Host,
        Capability::Tune,
        Capability::Part,
    ];

    /// The name in the FEAT line, upper case.
    pub fn name(self) -> &'static str {
        match self {
            Capability::Sbuf => "SBUF",
            Capability::Info => "INFO",
            Capability::Host => "HOST",
            Capability::Tune => "TUNE",
            Capability::Part => "PART",
        }
    }
}

/// The `RIGHTSIZE` line of a FEAT reply: `RIGHTSIZE SBUF;INFO;HOST;TUNE;PART;` (RFC 2389
/// section 3.2 feature line, capabilities separated by `;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RightsizeFeature {
    capabilities: Vec<Capability>,
}

impl RightsizeFeature {
    /// What this version offers: every capability in [`Capability::ALL`].
    pub fn offered() -> RightsizeFeature {
        RightsizeFeature {
            capabilities: Capability::ALL.to_vec(),
        }
    }

    /// Reads one FEAT feature line, with or without its leading space.
    /// `None` unless its first word is `RIGHTSIZE` (case-insensitive); the
    /// known capabilities otherwise, in the order sent, each once. Unknown
    /// capabilities are skipped, as a client must (forward compatibility).
    pub fn parse(feat_line: &str) -> Option<RightsizeFeature> {
        let line = feat_line.trim_matches(|c: char| c == ' ' || c == '\r' || c == '\n');
        let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
        if !name.eq_ignore_ascii_case(EXTENSION) {
            return None;
        }
        let mut capabilities = Vec::new();
        for word in rest.split(';').map(str::trim) {
            if let Some(c) = Capability::ALL
                .into_iter()
                .find(|c| word.eq_ignore_ascii_case(c.name()))
                && !capabilities.contains(&c)
            {
                capabilities.push(c);
            }
        }
        Some(RightsizeFeature { capabilities })
    }

    /// Whether `capability` is listed.
    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }

    /// The known capabilities listed.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities
    }

    /// The feature line without its leading space: `RIGHTSIZE SBUF;INFO;HOST;TUNE;PART;`.
    pub fn feat_line(&self) -> String {
        let mut line = format!("{EXTENSION} ");
        for c in &self.capabilities {
            line.push_str(c.name());
            line.push(';');
        }
        line
    }
}

/// The forms of `OPTS RIGHTSIZE` (RFC 2389 section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RightsizeOpts {
    /// `OPTS RIGHTSIZE ON [UDP=<port>]`: turn the extension on; `udp_port`
    /// is the client's UDP probe port, if it runs one.
    On {
        /// The client's UDP probe port (1..=65535).
        udp_port: Option<NonZeroU16>,
    },
    /// `OPTS RIGHTSIZE OFF`.
    Off,
}

/// The 200 reply to `OPTS RIGHTSIZE ON` or `OFF`: `200 RIGHTSIZE OFF.`,
/// `200 RIGHTSIZE ON.`, or `200 RIGHTSIZE ON UDP=<port>.` when the client
/// sent a UDP port and the server has a probe port, `server_udp_port`.
pub fn opts_reply(opts: RightsizeOpts, server_udp_port: Option<NonZeroU16>) -> Reply {
    let text = match (opts, server_udp_port) {
        (RightsizeOpts::Off, _) => format!("{EXTENSION} OFF."),
        (RightsizeOpts::On { udp_port: Some(_) }, Some(port)) => {
            format!("{EXTENSION} ON UDP={port}.")
        }
        (RightsizeOpts::On { .. }, _) => format!("{EXTENSION} ON."),
    };
    Reply::trusted(200, text)
}

/// The server's UDP probe port from its reply to `OPTS RIGHTSIZE ON
/// UDP=<port>`: `Some` only for a 200 whose text has a word `UDP=<port>`
/// (a trailing `.` allowed) with a port in 1..=65535.
pub fn server_udp_port(reply: &Reply) -> Option<NonZeroU16> {
    if reply.code() != 200 {
        return None;
    }
    reply
        .lines()
        .iter()
        .flat_map(|l| l.split(' '))
        .find_map(|word| {
            let value = word.get(..4).filter(|k| k.eq_ignore_ascii_case("UDP="))?;
            let digits = word[value.len()..].trim_end_matches('.');
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<NonZeroU16>().ok()
        })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod proptests;
