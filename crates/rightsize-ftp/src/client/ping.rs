//! [`ping`]: round trips over an FTP control connection, the analogue of
//! perfSONAR's rtt test without ICMP: the TCP connect time of the control
//! connection, then `NOOP` (RFC 959 4.1.3) once per interval, each timed
//! from the command's write to its reply's last byte.
//!
//! Guarantees: works against any FTP server (`NOOP` is in RFC 1123's
//! minimum set; a refused login is noted and the `NOOP`s go on, since any
//! reply is an answer); the connect, the greeting and every reply wait at
//! most their timeouts; a reply that does not come in time ends the run
//! (the control connection would be out of step) and is counted as lost.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::url::FtpUrl;

use super::control;
use super::error::ClientError;
use super::features::Features;
use super::{Observer, Options};

/// How to ping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingOptions {
    /// `NOOP`s to send (at least one).
    pub count: u32,
    /// Time from one `NOOP`'s start to the next one's.
    pub interval: Duration,
    /// Connect limit and reply limit (`connect_timeout`, `idle_timeout`).
    pub limits: Options,
}

/// One answered or lost `NOOP`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingProbe {
    /// 1, 2, ... in order sent.
    pub seq: u32,
    /// The round trip, `None` if lost.
    pub rtt: Option<Duration>,
    /// The reply code (200 normally; 530 from a server that wants a login
    /// first), `None` if lost.
    pub code: Option<u16>,
}

/// What a ping run found.
#[derive(Debug, Clone, PartialEq)]
pub struct PingReport {
    /// The control address connected to.
    pub server: SocketAddr,
    /// Whether the control connection (and so the `NOOP`s) went over TLS.
    pub tls: bool,
    /// The TCP handshake of the control connection.
    pub connect_time: Duration,
    /// The first line of the `220` greeting.
    pub greeting: String,
    /// Whether the login succeeded (the `NOOP`s are timed either way).
    pub logged_in: bool,
    /// Whether the server's `FEAT` lists the RIGHTSIZE extension.
    pub rightsize: bool,
    /// Every `NOOP` sent.
    pub probes: Vec<PingProbe>,
    /// Why the run ended before `count`, if it did.
    pub stopped: Option<String>,
}

impl PingReport {
    /// Round trips of the answered `NOOP`s.
    pub fn rtts(&self) -> Vec<Duration> {
        self.probes.iter().filter_map(|p| p.rtt).collect()
    }
}

/// Connects to the URL's server, logs in (the URL's user, anonymous by
/// default), and times `count` `NOOP`s; `on_probe` sees each as it ends,
/// and `stop` is asked before each (a caught Ctrl-C ends the run early,
/// with the report so far).
pub fn ping(
    url: &FtpUrl,
    options: &PingOptions,
    observer: &mut dyn Observer,
    on_probe: &mut dyn FnMut(&PingProbe),
    stop: &dyn Fn() -> bool,
) -> Result<PingReport, ClientError> {
    let limits = &options.limits;
    let started = Instant::now();
    let (stream, server) = super::session::connect(url, limits)?;
    let connect_time = started.elapsed();
    // TLS as `get` does (`--tls`, `ftps://`, or when the server offers
    // it): a server with a certificate takes no login in clear.
    let (mut control, greeting, tls) =
        super::session::greeted(stream, server, url, limits, observer)?;
    let logged_in = match control::login(&mut control, url.user(), url.password(), observer) {
        Ok(()) => true,
        Err(e @ ClientError::LoginRefused { .. }) => {
            observer.warning(&format!("{e}; timing NOOP without a login"));
            false
        }
        Err(e) => return Err(e),
    };
    let feat = control.command(&Command::Feat, observer)?;
    let rightsize = Features::new(&greeting, Some(&feat)).rightsize().is_some();
    let mut report = PingReport {
        server,
        tls: tls.is_some(),
        connect_time,
        greeting: greeting.lines().first().cloned().unwrap_or_default(),
        logged_in,
        rightsize,
        probes: Vec::new(),
        stopped: None,
    };
    let count = options.count.max(1);
    for seq in 1..=count {
        if stop() {
            report.stopped = Some("interrupted".to_owned());
            break;
        }
        let sent_at = Instant::now();
        let probe = match control.command(&Command::Noop, observer) {
            Ok(reply) => PingProbe {
                seq,
                rtt: Some(sent_at.elapsed()),
                code: Some(reply.code()),
            },
            Err(e) => {
                let probe = PingProbe {
                    seq,
                    rtt: None,
                    code: None,
                };
                on_probe(&probe);
                report.probes.push(probe);
                report.stopped = Some(e.to_string());
                break;
            }
        };
        on_probe(&probe);
        report.probes.push(probe);
        if seq < count {
            let next = sent_at + options.interval;
            while Instant::now() < next && !stop() {
                let left = next.saturating_duration_since(Instant::now());
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
        }
    }
    if report.stopped.is_none() {
        let _ = control.command(&Command::Quit, observer);
    }
    Ok(report)
}
