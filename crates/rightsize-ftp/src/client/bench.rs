//! [`bench`]: a memory-to-memory throughput test against a rightsize
//! server's benchmark source and sink (the analogue of perfSONAR's
//! throughput test): the client sends zeros to `/.rightsize/null/` (as
//! iperf3's client does by default), or with [`BenchDirection::Receive`]
//! reads `/.rightsize/zero/SIZE`, through the same data connection, tuner,
//! telemetry and RIGHTSIZE extension as `get` and `put`.
//!
//! Guarantees: a test limited by time ends cleanly when the time is up (a
//! send closes its side, so the server's `226` still comes with its
//! numbers; a receive closes the data connection, so the server's negative
//! reply is expected and recorded, and its numbers come from its last
//! in-transfer notice), and so does one that `stop` ends (Ctrl-C), with
//! `stopped` saying why; the server's settings and tuner choice are asked
//! for only when its FEAT offers them, and what could not be seen is
//! listed in `unseen` instead of failing the test.

use std::io::{self, Read, Write};
use std::time::Duration;

use rightsize_ftp_proto::Capability;
use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_tune::host::HostSettings;
use rightsize_tune::write_size::WriteSize;
use rightsize_tune::{Role, TunerSpec};

use super::control::arg;
use super::error::ClientError;
use super::session::{Session, site_rightsize};
use super::transfer::{CHUNK_BYTES, open_data};
use super::{Direction, Observer, Options, Report};
use crate::writes::zero_piece;

/// Bytes asked of the zero source for a test limited by time: more than
/// any test moves (1 TiB).
const OPEN_ENDED_BYTES: u64 = 1 << 40;

/// Which way a test's bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchDirection {
    /// The client sends (`STOR /.rightsize/null/...`): iperf3's default.
    Send,
    /// The server sends (`RETR /.rightsize/zero/SIZE`): iperf3's `-R`.
    Receive,
}

/// When a test ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchLimit {
    /// After this many bytes.
    Bytes(u64),
    /// After this long (from the data connection being ready).
    Time(Duration),
}

impl BenchLimit {
    /// The bytes to move, when the test is limited by them.
    fn bytes(self) -> Option<u64> {
        match self {
            BenchLimit::Bytes(b) => Some(b),
            BenchLimit::Time(_) => None,
        }
    }
}

/// What to test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchPlan {
    /// Which way.
    pub direction: BenchDirection,
    /// When to stop.
    pub limit: BenchLimit,
    /// The server's tuner for this test (`SITE RIGHTSIZE TUNE`), if it
    /// offers the choice; `None` leaves the server's `--tune`.
    pub server_tune: Option<TunerSpec>,
    /// Ask the server for its TCP settings (`SITE RIGHTSIZE HOST`).
    pub server_settings: bool,
    /// Data connections: 1 (stream mode), or more in MODE E.
    pub streams: u32,
}

/// What a test found beyond the transfer's [`Report`].
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// The transfer.
    pub report: Report,
    /// Whether the server's FEAT lists the RIGHTSIZE extension.
    pub rightsize: bool,
    /// The server's settings, when asked for and offered.
    pub server_settings: Option<HostSettings>,
    /// The server's tuner for this test, when it took the choice.
    pub server_tune: Option<String>,
    /// Why the test ended before its byte count: `time`, `interrupted`.
    pub stopped: Option<String>,
    /// The completion reply (a negative one after a planned stop).
    pub completion: String,
    /// What could not be measured or asked for, and why.
    pub unseen: Vec<String>,
}

/// Runs one test against the server of `url` (its path is ignored).
pub fn bench(
    url: &FtpUrl,
    plan: &BenchPlan,
    options: &Options,
    observer: &mut dyn Observer,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<BenchReport, ClientError> {
    let mut session = Session::open(url, options, observer)?;
    let feature = session.features.rightsize();
    let rightsize = feature.is_some();
    let offers = |c: Capability| feature.as_ref().is_some_and(|f| f.has(c));
    let mut unseen = Vec::new();
    if !rightsize {
        // A server without the extension may still be rightsize serve
        // (an older one); its zero source answers SIZE.
        let probe = b"/.rightsize/zero/1";
        let reply = session
            .control
            .command(&Command::Size(arg(probe, "path")?), observer)?;
        if reply.code() != 213 {
            return Err(ClientError::NoBenchmark {
                server: session.control.server(),
                reply: reply.to_string(),
            });
        }
        unseen.push(
            "the server is not rightsize (no RIGHTSIZE in FEAT): its socket, settings and tuner are not visible"
                .to_owned(),
        );
    }
    let server_settings = if plan.server_settings && offers(Capability::Host) {
        Some(server_settings(&mut session, observer)?)
    } else {
        if plan.server_settings && rightsize {
            unseen.push(
                "the server does not offer SITE RIGHTSIZE HOST: its settings are not visible"
                    .to_owned(),
            );
        }
        None
    };
    let server_tune = match &plan.server_tune {
        Some(spec) if offers(Capability::Tune) => {
            let reply = session.control.command(
                &site_rightsize("TUNE", Some(spec.to_string().as_bytes()))?,
                observer,
            )?;
            if reply.code() == 200 {
                Some(spec.to_string())
            } else {
                unseen.push(format!("the server refused tuner {spec}: {reply}"));
                None
            }
        }
        Some(spec) => {
            if rightsize {
                unseen.push(format!(
                    "the server does not offer SITE RIGHTSIZE TUNE: it ran its own tuner, not {spec}"
                ));
            }
            None
        }
        None => None,
    };
    if options.tune.is_some() {
        session.rightsize_on(observer)?;
    }
    let parallel = plan.streams > 1 || plan.streams == super::AUTO_STREAMS;
    let server = session.control.server();
    let (outcome, session) = match (plan.direction, parallel) {
        (BenchDirection::Receive, true) if plan.streams == super::AUTO_STREAMS => {
            // Each lane the trials add asks for the server's tuner too.
            let tune = server_tune.clone();
            let prepare = move |session: &mut Session<super::secure::ClientStream>,
                                observer: &mut dyn Observer| {
                if let Some(spec) = &tune {
                    let command = site_rightsize("TUNE", Some(spec.as_bytes()))?;
                    session.control.command(&command, observer)?;
                }
                Ok(())
            };
            lanes(session, url, plan, options, observer, (stop, &prepare))?
        }
        (direction, true) => (
            streams(&mut session, url, plan, options, observer, stop, direction)?,
            Some(session),
        ),
        (BenchDirection::Send, false) => (
            send(&mut session, plan, options, observer, stop)?,
            Some(session),
        ),
        (BenchDirection::Receive, false) => (
            receive(&mut session, plan, options, observer, stop)?,
            Some(session),
        ),
    };
    if let Some(session) = session {
        session.quit(observer);
    }
    let (report, completion, stopped) = outcome;
    let report = Report { server, ..report };
    if report.server_tcp.is_none() && rightsize {
        unseen.push(
            "the server's TCP_INFO did not arrive (no tcpi= in its reply, no notice)".to_owned(),
        );
    }
    Ok(BenchReport {
        report,
        rightsize,
        server_settings,
        server_tune,
        stopped,
        completion,
        unseen,
    })
}

type Outcome = (Report, String, Option<String>);

/// `SITE RIGHTSIZE HOST`, read into settings (a refusal gives none).
fn server_settings<S: Read + Write>(
    session: &mut Session<S>,
    observer: &mut dyn Observer,
) -> Result<HostSettings, ClientError> {
    let reply = session
        .control
        .command(&site_rightsize("HOST", None)?, observer)?;
    let lines: Vec<(String, String)> = if reply.code() == 211 {
        reply
            .lines()
            .iter()
            .filter_map(|l| {
                let (k, v) = l.trim().split_once('=')?;
                Some((k.trim().to_owned(), v.trim().to_owned()))
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(HostSettings::parse(|key| {
        lines
            .iter()
            .find(|(k, _)| k == key.name())
            .map(|(_, v)| v.clone())
    }))
}

fn done(stop: &(dyn Fn() -> bool + Sync), plan: &BenchPlan, elapsed: Duration) -> Option<String> {
    if stop() {
        return Some("interrupted".to_owned());
    }
    match plan.limit {
        BenchLimit::Time(limit) if elapsed >= limit => Some("time".to_owned()),
        _ => None,
    }
}

/// The planned end of a test over streams: [`Planned::enough`] once
/// stopped or out of time, and why.
struct Planned<'a> {
    stop: &'a (dyn Fn() -> bool + Sync),
    plan: &'a BenchPlan,
    started: std::time::Instant,
    why: std::sync::Mutex<Option<String>>,
}

impl<'a> Planned<'a> {
    /// From now.
    fn new(stop: &'a (dyn Fn() -> bool + Sync), plan: &'a BenchPlan) -> Planned<'a> {
        Planned {
            stop,
            plan,
            started: std::time::Instant::now(),
            why: std::sync::Mutex::new(None),
        }
    }

    /// Whether the test is to end now (the reason is kept).
    fn enough(&self) -> bool {
        match done(self.stop, self.plan, self.started.elapsed()) {
            Some(why) => {
                *self
                    .why
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
                true
            }
            None => false,
        }
    }

    /// Why it ended before its bytes, if it did.
    fn why(self) -> Option<String> {
        self.why
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The test over `plan.streams` streams in MODE E (`test -P N`); a
/// planned stop ends a send cleanly and closes a receive's streams, whose
/// negative reply is then expected.
fn streams(
    session: &mut Session<super::secure::ClientStream>,
    url: &FtpUrl,
    plan: &BenchPlan,
    options: &Options,
    observer: &mut dyn Observer,
    stop: &(dyn Fn() -> bool + Sync),
    direction: BenchDirection,
) -> Result<Outcome, ClientError> {
    let planned = Planned::new(stop, plan);
    let enough = || planned.enough();
    let total = plan.limit.bytes();
    let (verb, path) = match direction {
        BenchDirection::Send => ("STOR", sink_path()),
        BenchDirection::Receive => ("RETR", source_path(total)),
    };
    let (report, reply) = match direction {
        BenchDirection::Send => super::parallel::bench_send(
            session,
            (url, &path),
            (total, plan.streams),
            options,
            observer,
            &enough,
        )?,
        BenchDirection::Receive => super::parallel::bench_receive(
            session,
            (url, &path),
            (total.unwrap_or(OPEN_ENDED_BYTES), plan.streams),
            options,
            observer,
            &enough,
        )?,
    };
    let stopped = planned.why();
    if stopped.is_none() && !reply.is_completion() {
        return Err(session.remote_error(verb, &path, &reply));
    }
    let report = Report {
        url: String::new(),
        expected_bytes: total,
        ..report
    };
    Ok((report, reply.to_string(), stopped))
}

/// `test -R -P auto`: the server's zeros over lanes of streams that the
/// trials add (`parallel::lanes`), each new lane's session set up by
/// `prepare`; a planned stop closes every lane's streams, whose negative
/// replies are then expected. A session still logged in comes back.
fn lanes(
    session: Session<super::secure::ClientStream>,
    url: &FtpUrl,
    plan: &BenchPlan,
    options: &Options,
    observer: &mut dyn Observer,
    (stop, prepare): (&(dyn Fn() -> bool + Sync), super::parallel::Prepare<'_>),
) -> Result<(Outcome, Option<Session<super::secure::ClientStream>>), ClientError> {
    let planned = Planned::new(stop, plan);
    let enough = || planned.enough();
    let total = plan.limit.bytes();
    let path = source_path(total);
    let received = super::parallel::bench_receive_lanes(
        session,
        (url, &path),
        total.unwrap_or(OPEN_ENDED_BYTES),
        options,
        (&enough, prepare),
        observer,
    )?;
    let stopped = planned.why();
    let report = Report {
        url: String::new(),
        expected_bytes: total,
        ..received.report
    };
    let completion = received.reply.map_or_else(
        || "(no reply: the first lane closed)".to_owned(),
        |r| r.to_string(),
    );
    Ok(((report, completion, stopped), received.session))
}

/// Where a test's zeros go: the server's sink, a name of this process.
fn sink_path() -> Vec<u8> {
    format!("/.rightsize/null/rightsize-test-{}", std::process::id()).into_bytes()
}

/// Where a test's zeros come from: the server's source, `total` bytes
/// (more than any test moves when it is limited by time).
fn source_path(total: Option<u64>) -> Vec<u8> {
    format!("/.rightsize/zero/{}", total.unwrap_or(OPEN_ENDED_BYTES)).into_bytes()
}

fn send(
    session: &mut Session<super::secure::ClientStream>,
    plan: &BenchPlan,
    options: &Options,
    observer: &mut dyn Observer,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Outcome, ClientError> {
    let path = sink_path();
    let stor = Command::Stor(arg(&path, "path")?);
    let mut data = open_data(session, &stor, &path, Role::Sender, options, observer)?;
    let total = plan.limit.bytes();
    let write_bytes = options.write_size.map_or(CHUNK_BYTES, WriteSize::bytes);
    let zeros = zero_piece(write_bytes);
    let mut stopped = None;
    loop {
        let moved = data.moved();
        if total.is_some_and(|t| moved >= t) {
            break;
        }
        if let Some(why) = done(stop, plan, data.started.elapsed()) {
            stopped = Some(why);
            break;
        }
        let n = total.map_or(zeros.len(), |t| {
            usize::try_from(t - moved)
                .unwrap_or(usize::MAX)
                .min(zeros.len())
        });
        data.send(&zeros[..n], &mut None, total, observer, options)?;
    }
    // Every byte acknowledged, as `put` does.
    data.end_upload(options)?;
    let (bytes, elapsed) = (data.moved(), data.started.elapsed());
    // A planned stop of a send is a complete upload to the sink.
    let finished = data.finish_or_stop(session, observer, false)?;
    let completion = finished.completion.clone();
    Ok((
        Report {
            url: String::new(),
            direction: Direction::Put,
            bytes,
            elapsed,
            expected_bytes: total,
            ..finished.report()
        },
        completion,
        stopped,
    ))
}

fn receive(
    session: &mut Session<super::secure::ClientStream>,
    plan: &BenchPlan,
    options: &Options,
    observer: &mut dyn Observer,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Outcome, ClientError> {
    let size = plan.limit.bytes().unwrap_or(OPEN_ENDED_BYTES);
    let path = source_path(Some(size));
    let retr = Command::Retr(arg(&path, "path")?);
    let mut data = open_data(session, &retr, &path, Role::Receiver, options, observer)?;
    let mut chunk = vec![0u8; CHUNK_BYTES];
    let mut stopped = None;
    loop {
        if let Some(why) = done(stop, plan, data.started.elapsed()) {
            stopped = Some(why);
            break;
        }
        let n = match data.stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(data.io_error("read", e, options)),
        };
        data.passed(&chunk[..n], &mut None, Some(size), observer);
    }
    let (bytes, elapsed) = (data.moved(), data.started.elapsed());
    if stopped.is_none() && bytes != size {
        return Err(ClientError::ShortTransfer {
            server: session.control.server(),
            path: String::from_utf8_lossy(&path).into_owned(),
            got_bytes: bytes,
            size_bytes: size,
        });
    }
    let finished = data.finish_or_stop(session, observer, stopped.is_some())?;
    let completion = finished.completion.clone();
    Ok((
        Report {
            url: String::new(),
            direction: Direction::Get,
            bytes,
            elapsed,
            expected_bytes: (stopped.is_none()).then_some(size),
            ..finished.report()
        },
        completion,
        stopped,
    ))
}
