//! `get -P auto`: more streams as lanes that split the rest of the file.
//!
//! A lane is a control connection in MODE E whose [`LANE_STREAMS`] data
//! connections carry one `RETR` of a range of the file: the first lane's
//! range is all that is missing. When the chooser (`rightsize_tune::
//! streams`) asks for more streams, every lane hands the second half of
//! what it still lacks to a new lane, which logs in and asks for it with
//! `REST` (GridFTP's restart in MODE E: the ranges the receiver holds are
//! the rest of the file) while the old lane goes on; the old lane's range
//! now ends where the new one's begins. A lane whose range has arrived
//! whole (by its blocks or another lane's) is done: it closes its control
//! connection, which ends its transfer on every server. So trying more
//! streams stops nothing: restarting the transfer with more streams cost
//! a login and a slow start, about a second on a 100 ms path, measured;
//! and the streams are not held at a barrier between pieces of the file
//! (a lane asking for the file in 8 MiB chunks over its kept connections
//! made 100 Mbit/s where one `RETR` made 170: a stream is never read
//! past its EOD, so the streams wait for the slowest, in loss recovery).
//!
//! The blocks every lane brings are written at their offsets into the one
//! part file and counted in one set of ranges. A lane's old server may
//! send some blocks past the lane's new end before it is closed: the same
//! bytes, written twice.
//!
//! Guarantees: the download succeeds only when the ranges cover the file
//! and every lane either had its `226` or was closed with its range whole;
//! a lane that fails ends the download once the others end, with its
//! error (what arrived is the caller's `got`, recorded for `-C`).

use crate::client::secure::ClientStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rightsize_ftp_proto::mode_e::{Assembly, Ranges};
use rightsize_ftp_proto::url::FtpUrl;
use rightsize_ftp_proto::{Command, Reply};
use rightsize_sys::signals;
use rightsize_tune::streams::{self as chooser, Choice, Trials};

use super::{Hooks, Prepare, Ran, Target, control_rtt, extended_mode, failed, lock, rest_ranges};
use crate::blocks::{self, Failure, Incoming, WriteAt};
use crate::client::control::arg;
use crate::client::data;
use crate::client::error::ClientError;
use crate::client::session::Session;
use crate::client::{Observer, Options};

/// Streams per lane: the chooser's first trial is one lane.
pub(super) const LANE_STREAMS: u32 = chooser::FIRST;
/// For a trial, a lane lacking less than twice this keeps it all: a new
/// lane logs in and starts slow, about a second on a 100 ms path, while
/// 32 MiB take 1.3 s at 200 Mbit/s.
const MIN_SPLIT: u64 = 32 << 20;
/// To replace a lane that ended early, the part that lacks the most must
/// lack twice this: less would end before the new lane is up.
const MIN_REPLACE: u64 = 8 << 20;

/// A lane's part of the file: from `start` to `end`, which a split moves
/// down.
struct Part {
    start: u64,
    end: AtomicU64,
}

/// What the lanes share.
struct Shared<'a, 't> {
    url: &'a FtpUrl,
    options: &'a Options,
    size: u64,
    sink: Mutex<&'a mut Target<'t>>,
    /// Every byte range that arrived, on any lane (and those held before).
    arrived: Mutex<Ranges>,
    hooks: &'a Hooks,
    /// A planned end (a test limited by time).
    enough: &'a (dyn Fn() -> bool + Sync),
    /// What a new lane's session asks before its transfer (a test's
    /// server tuner).
    prepare: Prepare<'a>,
}

impl Shared<'_, '_> {
    /// Whether `start..end` arrived whole.
    fn whole(&self, start: u64, end: u64) -> bool {
        start >= end
            || lock(&self.arrived)
                .as_slice()
                .iter()
                .any(|&(s, e)| s <= start && e >= end)
    }

    /// Where `part` still lacks bytes first, if it does.
    fn first_missing(&self, part: &Part) -> Option<u64> {
        let end = part.end.load(Ordering::SeqCst);
        lock(&self.arrived)
            .gaps(end)
            .into_iter()
            .find(|&(_, e)| e > part.start)
            .map(|(s, _)| s.max(part.start))
    }
}

/// Splits the part of `parts` that lacks the most, if it lacks at least
/// twice `least`: it keeps the first half of what it lacks, and the
/// second half is returned, for a new lane.
fn split(shared: &Shared<'_, '_>, parts: &[Arc<Part>], least: u64) -> Option<Part> {
    let (part, missing) = parts
        .iter()
        .filter_map(|part| Some((part, shared.first_missing(part)?)))
        .max_by_key(|(part, missing)| part.end.load(Ordering::SeqCst) - missing)?;
    let end = part.end.load(Ordering::SeqCst);
    if end - missing < 2 * least {
        return None;
    }
    let middle = missing + (end - missing) / 2;
    part.end.store(middle, Ordering::SeqCst);
    Some(Part {
        start: middle,
        end: AtomicU64::new(end),
    })
}

/// The sink of a lane's blocks: the shared part file, and the ranges.
struct Sink<'s, 'a, 't>(&'s Shared<'a, 't>);

impl WriteAt for Sink<'_, '_, '_> {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        lock(&self.0.sink).write_at(offset, bytes)?;
        lock(&self.0.arrived).add(offset, offset + bytes.len() as u64);
        Ok(())
    }
}

/// What a lane tells: its lines, to show on the caller's thread.
struct Relay {
    lane: usize,
    tx: mpsc::Sender<(bool, String)>,
}

impl Observer for Relay {
    fn protocol(&mut self, line: &str) {
        let _ = self.tx.send((false, self.tagged(line)));
    }
    fn warning(&mut self, message: &str) {
        let _ = self.tx.send((true, self.tagged(message)));
    }
}

impl Relay {
    /// Lines of the lanes after the first say which lane.
    fn tagged(&self, line: &str) -> String {
        if self.lane == 0 {
            line.to_owned()
        } else {
            format!("[lane {}] {line}", self.lane + 1)
        }
    }
}

/// Shows what the lanes told.
fn show(rx: &mpsc::Receiver<(bool, String)>, observer: &mut dyn Observer) {
    while let Ok((warning, line)) = rx.try_recv() {
        if warning {
            observer.warning(&line);
        } else {
            observer.protocol(&line);
        }
    }
}

/// A lane's end: its control connection if still logged in (a lane closed
/// with its part whole has none), and how its data connections were made.
struct Ended {
    session: Option<Session<ClientStream>>,
    plan: (data::DataMode, rightsize_sys::socket::Applied),
    /// The final reply to its `RETR`, if it read one.
    reply: Option<Reply>,
}

/// Downloads what `got` lacks of the `size` bytes at `url` into `target`
/// over lanes, the first on `session` (in MODE E with [`LANE_STREAMS`]
/// streams asked for; each new lane's session gets `prepare` once logged
/// in). Once `enough` says so (a test limited by time), every lane closes
/// its streams and reads its server's reply, and what arrived is the
/// result.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    session: Session<ClientStream>,
    url: &FtpUrl,
    options: &Options,
    size: u64,
    got: &mut Ranges,
    target: &mut Target<'_>,
    (hooks, enough, prepare): (&Hooks, &(dyn Fn() -> bool + Sync), Prepare<'_>),
    observer: &mut dyn Observer,
) -> Result<Ran, ClientError> {
    let mut trials = Trials::new(control_rtt(&session), Duration::ZERO, 0);
    let tls = session.tls.clone();
    let shared = Shared {
        url,
        options,
        size,
        sink: Mutex::new(target),
        arrived: Mutex::new(got.clone()),
        hooks,
        enough,
        prepare,
    };
    let (tx, rx) = mpsc::channel();
    let (ended, wanted) = std::thread::scope(|scope| {
        let mut lanes = Vec::new();
        let spawn = |lanes: &mut Vec<_>, session: Option<Session<ClientStream>>, part: Part| {
            let part = Arc::new(part);
            let relay = Relay {
                lane: lanes.len(),
                tx: tx.clone(),
            };
            let (shared, mine) = (&shared, Arc::clone(&part));
            lanes.push((
                part,
                scope.spawn(move || lane(shared, session, &mine, relay)),
            ));
        };
        spawn(
            &mut lanes,
            Some(session),
            Part {
                start: 0,
                end: AtomicU64::new(size),
            },
        );
        let clock = Instant::now();
        // The lanes the chooser asked for: one that ends early (its part
        // came, the others still lack much) is replaced by a new lane
        // that takes half of the largest part left.
        let mut wanted = 1usize;
        loop {
            show(&rx, observer);
            hooks.report(observer, Some(size));
            if lanes.iter().all(|(_, thread)| thread.is_finished()) {
                break;
            }
            std::thread::sleep(super::WATCH_EVERY);
            if enough() {
                continue;
            }
            let running: Vec<Arc<Part>> = lanes
                .iter()
                .filter(|(_, thread)| !thread.is_finished())
                .map(|(part, _)| Arc::clone(part))
                .collect();
            if running.len() < wanted
                && let Some(part) = split(&shared, &running, MIN_REPLACE)
            {
                observer.protocol(&format!(
                    "-P auto: a lane ended early; a new one takes {}-{}",
                    part.start,
                    part.end.load(Ordering::SeqCst)
                ));
                spawn(&mut lanes, None, part);
            }
            let Some((goodput, queued, moved)) = hooks.trial_over(&mut trials, clock.elapsed())
            else {
                continue;
            };
            let streams = running.len() as u32 * LANE_STREAMS;
            // A new lane logs in and starts slow: none for the last two
            // trials' bytes.
            let left = size.saturating_sub(lock(&shared.arrived).total());
            let decision =
                trials.decide((streams, goodput, queued), (clock.elapsed(), moved), left);
            let mut added = 0;
            if let Choice::Try(_) = decision {
                // Every running lane gives the second half of what it
                // lacks to a new lane.
                for part in &running {
                    if let Some(new) = split(&shared, std::slice::from_ref(part), MIN_SPLIT) {
                        spawn(&mut lanes, None, new);
                        added += 1;
                    }
                }
                if added == 0 {
                    trials.settle();
                }
            }
            wanted += added as usize;
            let now = streams + added * LANE_STREAMS;
            let settled = match decision {
                _ if added > 0 => String::new(),
                // Each lane has its part of the file: one taken away would
                // leave its part to another lane's server, which would send
                // again what this one brought.
                Choice::Settle(fewer) if fewer < streams => {
                    format!(
                        " (settled; {fewer} were faster, but each lane has its part of the file)"
                    )
                }
                _ => " (settled)".to_owned(),
            };
            observer.protocol(&super::trial_line(&trials, queued, now, &settled));
        }
        let ended: Vec<Result<Ended, ClientError>> = lanes
            .into_iter()
            .map(|(_, thread)| {
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        (ended, wanted as u32)
    });
    show(&rx, observer);
    *got = lock(&shared.arrived).clone();
    let mut lanes = Vec::new();
    let mut first_error = None;
    for end in ended {
        match end {
            Ok(end) => lanes.push(end),
            Err(e) if first_error.is_none() => first_error = Some(e),
            Err(e) => observer.warning(&format!("another lane of streams failed: {e}")),
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if !got.covers(size) && !enough() {
        return Err(ClientError::Parallel {
            why: "the lanes of streams ended before the file was whole",
        });
    }
    // The first lane's data connections describe the download; a lane
    // still logged in carries its end (the checksum and QUIT).
    let mut lanes = lanes.into_iter();
    let Some(mut first) = lanes.next() else {
        return Err(ClientError::Parallel {
            why: "no lane of streams ran",
        });
    };
    let mut session = first.session.take();
    let reply = first.reply.take();
    for other in lanes {
        match (session.is_none(), other.session) {
            (true, Some(s)) => session = Some(s),
            (_, Some(s)) => s.quit(observer),
            (_, None) => {}
        }
    }
    Ok(Ran {
        tls,
        session,
        plan: first.plan,
        // The streams the chooser settled on (a lane that replaced one
        // that ended early does not add to them).
        streams: wanted * LANE_STREAMS,
        trials: trials.trials().to_vec(),
        reply,
    })
}

/// One lane: logs in (unless given its session) and asks for what its
/// part lacks; done at its `226`, or once its part is whole.
fn lane(
    shared: &Shared<'_, '_>,
    session: Option<Session<ClientStream>>,
    part: &Part,
    mut relay: Relay,
) -> Result<Ended, ClientError> {
    let mut session = match session {
        Some(session) => session,
        None => {
            let mut session = Session::open(shared.url, shared.options, &mut relay)?;
            (shared.prepare)(&mut session, &mut relay)?;
            extended_mode(&mut session, LANE_STREAMS, &mut relay)?;
            session
        }
    };
    let plan = data::open_active(
        &mut session.control,
        &session.features,
        shared.hooks.tuners.request(),
        &mut relay,
    )?;
    let data::Pending::Listening(listener, _) = &plan.pending else {
        return Err(ClientError::Parallel {
            why: "the data connections could not be listened for",
        });
    };
    // Held, as the server is told: everything but what the part lacks.
    let end = part.end.load(Ordering::SeqCst);
    let mut lacking = Ranges::new();
    for (s, e) in lock(&shared.arrived).gaps(shared.size) {
        let (s, e) = (s.max(part.start), e.min(end));
        if s < e {
            lacking.add(s, e);
        }
    }
    if lacking.total() == 0 {
        return Ok(Ended {
            session: Some(session),
            plan: (plan.mode, plan.applied),
            reply: None,
        });
    }
    let held = outside(&lacking, shared.size);
    if held.total() > 0 {
        rest_ranges(&mut session, &held, shared.url, &mut relay)?;
    }
    let path = shared.url.path();
    let secure = session.mode_e_secure();
    let early = session.begin(&Command::Retr(arg(path, "path")?), path, &mut relay)?;
    let hooks = shared.hooks;
    let server = session.control.server();
    let incoming = Incoming {
        listener,
        peer: server.ip(),
        cached: Vec::new(),
        secure: &secure,
        connect_timeout: shared.options.connect_timeout,
        idle_timeout: shared.options.idle_timeout,
    };
    // Its part whole while its server still sends past it (the part was
    // split after the RETR): the lane is done. A part never split ends
    // with its server's EODs and 226.
    let whole = || {
        let now = part.end.load(Ordering::SeqCst);
        now < end && shared.whole(part.start, now)
    };
    let mut sink = Sink(shared);
    let (result, _) = blocks::receive(
        incoming,
        Assembly::new(Some(shared.size), held),
        Some(&mut sink as &mut dyn WriteAt),
        &hooks.moved,
        &|| signals::caught().is_some() || whole() || (shared.enough)(),
        &mut |stream| hooks.connected(stream),
        &mut |stream| hooks.first(stream),
    );
    let plan_made = (plan.mode, plan.applied);
    let (session, reply) = match result {
        Ok(_) => {
            let last = session.ending("RETR", early, &mut relay)?;
            if !last.is_completion() {
                return Err(session.remote_error("RETR", path, &last));
            }
            (Some(session), Some(last))
        }
        // Its part came whole, partly over other lanes: closing the
        // control connection ends the transfer.
        Err(Failure::Stopped) if signals::caught().is_none() && whole() => {
            relay.protocol("part whole: closing this lane's control connection");
            (None, None)
        }
        // A planned end: the streams are closed, and the server's
        // negative reply says so.
        Err(Failure::Stopped) if signals::caught().is_none() && (shared.enough)() => {
            let last = session.ending("RETR", early, &mut relay)?;
            (Some(session), Some(last))
        }
        Err(failure) => return Err(failed(failure, server, "RETR", shared.url)),
    };
    Ok(Ended {
        session,
        plan: plan_made,
        reply,
    })
}

/// The ranges of `0..size` outside `ranges`.
fn outside(ranges: &Ranges, size: u64) -> Ranges {
    let mut rest = Ranges::new();
    for (s, e) in ranges.gaps(size) {
        rest.add(s, e);
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &[(u64, u64)]) -> Ranges {
        let mut r = Ranges::new();
        for &(s, e) in list {
            r.add(s, e);
        }
        r
    }

    #[test]
    fn a_part_is_asked_for_as_the_rest_of_the_file_held() {
        assert_eq!(outside(&ranges(&[(0, 100)]), 100).to_string(), "0-0");
        assert_eq!(outside(&ranges(&[(0, 40)]), 100).to_string(), "40-100");
        assert_eq!(
            outside(&ranges(&[(40, 60)]), 100).to_string(),
            "0-40,60-100"
        );
        assert_eq!(outside(&Ranges::new(), 100).to_string(), "0-100");
    }
}
