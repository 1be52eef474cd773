//! `test -P N`: the memory-to-memory test over several streams (MODE E),
//! against a rightsize server's benchmark source and sink. The client
//! sends zeros as blocks to `/.rightsize/null/` ([`send`]) or takes the
//! blocks of `/.rightsize/zero/SIZE` into nothing ([`receive`]); the
//! streams are tuned as a transfer's are (`auto`: one flow).
//!
//! Guarantees: a test limited by time (or stopped by Ctrl-C, both through
//! `enough`) ends on time. A send then ends cleanly: no stream takes
//! another block, each sends its end of data, and the server's `226`
//! counts what came. A receive closes its streams, so the server's
//! negative reply is expected and handed back, not an error.

use crate::client::secure::ClientStream;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rightsize_ftp_proto::Reply;
use rightsize_ftp_proto::mode_e::{Assembly, Ranges};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_tune::Role;

use super::{
    Hooks, Prepare, Streamed, Target, extended_mode, extended_setup, failed, first_streams, lanes,
    report, retr_streams, server_side, stor_blocks, stream_trials, streams_tuning,
};
use crate::blocks::{self, Failure};
use crate::client::error::ClientError;
use crate::client::session::Session;
use crate::client::{Direction, Observer, Options, Report};

/// Sends zeros to `path` (a name under `/.rightsize/null/`) over
/// `streams` streams: `size` bytes, or until `enough`. The report, and the
/// server's final reply.
pub(in crate::client) fn send(
    session: &mut Session<ClientStream>,
    (url, path): (&FtpUrl, &[u8]),
    (size, streams): (Option<u64>, u32),
    options: &Options,
    observer: &mut dyn Observer,
    enough: &(dyn Fn() -> bool + Sync),
) -> Result<(Report, Reply), ClientError> {
    extended_mode(session, first_streams(streams), observer)?;
    let stored = stor_blocks(
        session,
        (url, path),
        &blocks::Source::Zeros,
        (size, streams),
        options,
        observer,
        enough,
    )?;
    let mut report = report(
        url,
        Direction::Put,
        stored.plan,
        stored.first.as_ref(),
        (stored.bytes, stored.elapsed, size, stored.streams),
        session.control.server(),
        None,
        None,
    );
    report.tuning = stored.tuning;
    report.stream_trials = stream_trials(&stored.trials);
    report.tls = session.tls.as_ref().map(|t| t.streams_report());
    server_side(&mut report, &stored.reply);
    Ok((report, stored.reply))
}

/// Takes the blocks of `path` (`/.rightsize/zero/SIZE`, `size` bytes)
/// over `streams` streams into nothing, until they are all in or
/// `enough`. The report, and the server's final reply.
pub(in crate::client) fn receive(
    session: &mut Session<ClientStream>,
    (url, path): (&FtpUrl, &[u8]),
    (size, streams): (u64, u32),
    options: &Options,
    observer: &mut dyn Observer,
    enough: &(dyn Fn() -> bool + Sync),
) -> Result<(Report, Reply), ClientError> {
    extended_setup(session, None, streams, observer)?;
    let hooks = Hooks::new(options, session, Role::Receiver);
    let server = session.control.server();
    let started = Instant::now();
    let Streamed {
        plan,
        early,
        result,
        received: _,
    } = retr_streams(
        session,
        path,
        &mut |_, _| Ok(()),
        (Assembly::new(Some(size), Ranges::new()), None),
        (&hooks, options, Some(size)),
        observer,
        enough,
    )?;
    let elapsed = started.elapsed();
    let tuning = streams_tuning(&hooks.tuners);
    match result {
        // Stopped on purpose: the streams are closed, the server's reply
        // says so.
        Ok(_) | Err(Failure::Stopped) => {}
        Err(failure) => return Err(failed(failure, server, "RETR", url)),
    }
    let reply = session.ending("RETR", early, observer)?;
    let first = hooks.take_first().map(|(_, s)| s);
    let mut report = report(
        url,
        Direction::Get,
        (plan.0, plan.1, hooks.tuners.request().clone()),
        first.as_ref(),
        (
            hooks.moved.load(Ordering::Relaxed),
            elapsed,
            Some(size),
            streams,
        ),
        server,
        None,
        None,
    );
    report.tuning = tuning;
    report.tls = session.tls.as_ref().map(|t| t.streams_report());
    server_side(&mut report, &reply);
    Ok((report, reply))
}

/// `test -R -P auto`: takes the blocks of `path` (`/.rightsize/zero/SIZE`,
/// `size` bytes) into nothing over lanes of streams that the trials add
/// ([`super::lanes`]; each new lane's session is set up by `prepare`),
/// until they are all in or `enough`. The report, the first lane's final
/// reply if it read one, and a session still logged in.
pub(in crate::client) fn receive_lanes(
    session: Session<ClientStream>,
    (url, path): (&FtpUrl, &[u8]),
    size: u64,
    options: &Options,
    (enough, prepare): (&(dyn Fn() -> bool + Sync), Prepare<'_>),
    observer: &mut dyn Observer,
) -> Result<LanesReceived, ClientError> {
    let mut session = session;
    extended_setup(&mut session, None, lanes::LANE_STREAMS, observer)?;
    let hooks = Hooks::new(options, &session, Role::Receiver);
    let server = session.control.server();
    let url = url.with_path(path);
    let mut got = Ranges::new();
    let started = Instant::now();
    let ran = lanes::run(
        session,
        &url,
        options,
        size,
        &mut got,
        &mut Target::Null,
        (&hooks, enough, prepare),
        observer,
    )?;
    let elapsed = started.elapsed();
    let tuning = streams_tuning(&hooks.tuners);
    let first = hooks.take_first().map(|(_, s)| s);
    let mut report = report(
        &url,
        Direction::Get,
        (ran.plan.0, ran.plan.1, hooks.tuners.request().clone()),
        first.as_ref(),
        (got.total(), elapsed, Some(size), ran.streams),
        server,
        None,
        None,
    );
    report.tuning = tuning;
    report.stream_trials = stream_trials(&ran.trials);
    report.tls = ran.tls.map(|t| t.streams_report());
    if let Some(reply) = &ran.reply {
        server_side(&mut report, reply);
    }
    Ok(LanesReceived {
        report,
        reply: ran.reply,
        session: ran.session,
    })
}

/// What [`receive_lanes`] brings back.
pub(in crate::client) struct LanesReceived {
    /// The test's transfer.
    pub(in crate::client) report: Report,
    /// The first lane's final reply, if it read one.
    pub(in crate::client) reply: Option<Reply>,
    /// A session still logged in, to quit.
    pub(in crate::client) session: Option<Session<ClientStream>>,
}
