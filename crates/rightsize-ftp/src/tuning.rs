//! What the client and the server share to size a data connection with a
//! tuner (`--tune`): building it for this end with the kernel's limits read
//! now, and turning its settings into a socket request.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rightsize_sys::probe::{ProbeError, ProbeEvent, Prober, ProberOptions};
use rightsize_sys::socket::{self, BufferRequest};
use rightsize_sys::telemetry::{Inbox, Monitor, TunerSummary, Tuning};
use rightsize_tune::budget::{self, Budget, Budgeted};
use rightsize_tune::driver::settings_actions;
use rightsize_tune::streams::share::{Aggregate, Share};
use rightsize_tune::telemetry::BufferSummary;
use rightsize_tune::units::Bytes;
use rightsize_tune::{
    Action, Congestion, Context, Event, Held, Inputs, Limits, Peer, Role, Settings, Setup, Tuner,
    TunerSpec,
};

/// The tuner `spec` names, for this end of a data connection whose
/// buffers and congestion control set by hand are `request`; the limits
/// are the host's `/proc/sys` values as they are now.
pub fn build(spec: &TunerSpec, role: Role, peer: Peer, request: &BufferRequest) -> Box<dyn Tuner> {
    spec.build(context(role, peer, request))
}

/// This end of a data connection, with the host's limits as they are now
/// and the congestion control it will run: `request`'s, or the host's
/// default.
pub fn context(role: Role, peer: Peer, request: &BufferRequest) -> Context {
    let (host, _unreadable) = rightsize_sys::sysctl::read_host_settings();
    let congestion = request
        .congestion
        .as_deref()
        .or(host.tcp_congestion_control.as_deref())
        .map_or(Congestion::default(), Congestion::from_name);
    Context {
        role,
        limits: Limits::from_host(&host, None),
        peer,
        congestion,
    }
}

/// The tuners of the streams of one transfer over several (MODE E), at
/// either end: `auto` sizes the streams as one flow
/// ([`rightsize_tune::streams::share`]), every stream's tuner sharing one
/// [`Aggregate`]; any other tuner sizes each stream alone. Each stream
/// gets the buffers requested before its handshake (or right after, for
/// an accepted one) and, with a tuner, a monitor until [`Self::finish`].
#[derive(Debug)]
pub struct StreamTuners {
    /// The buffers and congestion control set by hand.
    base: BufferRequest,
    /// What the streams' tuner sets before and after the handshake.
    setup: Setup,
    request: BufferRequest,
    spec: Option<TunerSpec>,
    role: Role,
    aggregate: Arc<Mutex<Aggregate>>,
    control: Option<TcpStream>,
    monitors: Mutex<Vec<Monitor>>,
    budget: Option<Arc<Mutex<Budget>>>,
}

/// What the streams' tuners found, summed over the streams.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamsTuned {
    /// Each stream's peak and mean buffers, summed.
    pub buffers: BufferSummary,
    /// The tuner's name and last state (the first stream's), the
    /// decisions summed.
    pub tuner: Option<TunerSummary>,
}

impl StreamTuners {
    /// This end's streams: `base` (the buffers and congestion control set
    /// by hand) with what `spec`'s tuner sets before the handshake;
    /// `control` (the control connection) gives the tuners an RTT.
    pub fn new(
        base: &BufferRequest,
        spec: Option<TunerSpec>,
        role: Role,
        control: Option<TcpStream>,
    ) -> StreamTuners {
        let aggregate = Arc::new(Mutex::new(Aggregate::new()));
        // A tuner joins the aggregate it is built with: the one read here
        // for its settings joins one of its own.
        let setup = spec.map_or_else(Setup::default, |spec| {
            stream_tuner(&spec, role, base, &Arc::new(Mutex::new(Aggregate::new()))).setup()
        });
        StreamTuners {
            base: base.clone(),
            setup,
            request: request(base, setup.pre_handshake),
            spec,
            role,
            aggregate,
            control,
            monitors: Mutex::new(Vec::new()),
            budget: None,
        }
    }

    /// Each stream within `budget` (a server's `--buffer-budget`): its
    /// tuner held to its share, its buffers fixed as
    /// [`rightsize_tune::budget::setup_for`] says; a stream the budget
    /// cannot admit is shut down.
    #[must_use]
    pub fn within(mut self, budget: Option<&Arc<Mutex<Budget>>>) -> StreamTuners {
        let Some(budget) = budget else {
            return self;
        };
        // Untuned streams (a listing) are held at their least (the
        // kernel's tuner sets nothing: its setup is the default).
        self.spec.get_or_insert(TunerSpec::Kernel);
        let within = budget::setup_for(self.role, self.setup);
        self.request = request(&self.base, within.pre_handshake);
        self.budget = Some(Arc::clone(budget));
        self
    }

    /// What every stream's socket gets before its handshake.
    pub fn request(&self) -> &BufferRequest {
        &self.request
    }

    /// A stream is up: its buffers (again, for an accepted one: a
    /// listener's settings are not all inherited) and its tuner's monitor,
    /// whose byte count it returns.
    pub fn connected(&self, stream: &TcpStream) -> Option<Arc<AtomicU64>> {
        let _ = socket::apply(stream.as_fd(), &self.request);
        self.tune(stream)
    }

    /// Starts a stream's tuner (its buffers set already); the monitor's
    /// byte count.
    pub fn tune(&self, stream: &TcpStream) -> Option<Arc<AtomicU64>> {
        let spec = self.spec.as_ref()?;
        let own = Arc::new(AtomicU64::new(0));
        let tuner = stream_tuner(spec, self.role, &self.base, &self.aggregate);
        let tuner = match &self.budget {
            None => tuner,
            Some(budget) => match Budgeted::new(tuner, self.role, budget) {
                Ok(budgeted) => Box::new(budgeted),
                Err(_) => {
                    // No buffers for it: the transfer fails rather than
                    // crawl on a stream the budget does not count.
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    return None;
                }
            },
        };
        let tuning = Tuning {
            tuner,
            control: self.control.as_ref().and_then(|c| c.try_clone().ok()),
            to_peer: None,
            report_info: false,
        };
        let monitor = Monitor::start(stream, Arc::clone(&own), None, Some(tuning)).ok()?;
        lock(&self.monitors).push(monitor);
        Some(own)
    }

    /// The share of the rounds since the last call in which the streams
    /// kept a queue at the bottleneck ([`Aggregate::queued`]).
    pub fn queued(&self) -> Option<f64> {
        lock(&self.aggregate).queued()
    }

    /// Stops the streams' monitors; what they found, summed.
    pub fn finish(&self) -> Option<StreamsTuned> {
        let monitors = std::mem::take(&mut *lock(&self.monitors));
        let mut summed: Option<StreamsTuned> = None;
        for finished in monitors.into_iter().filter_map(|m| m.finish().ok()) {
            let Some(sum) = summed.as_mut() else {
                summed = Some(StreamsTuned {
                    buffers: finished.buffers,
                    tuner: finished.tuner,
                });
                continue;
            };
            let (b, f) = (&mut sum.buffers, &finished.buffers);
            b.peak_rcvbuf_bytes += f.peak_rcvbuf_bytes;
            b.peak_sndbuf_bytes += f.peak_sndbuf_bytes;
            b.mean_rcvbuf_bytes += f.mean_rcvbuf_bytes;
            b.mean_sndbuf_bytes += f.mean_sndbuf_bytes;
            if let (Some(sum), Some(one)) = (sum.tuner.as_mut(), finished.tuner) {
                sum.decisions += one.decisions;
            }
        }
        summed
    }
}

/// The tuner of one stream whose buffers and congestion control set by
/// hand are `base`: `auto` shares `aggregate`, any other is alone.
fn stream_tuner(
    spec: &TunerSpec,
    role: Role,
    base: &BufferRequest,
    aggregate: &Arc<Mutex<Aggregate>>,
) -> Box<dyn Tuner> {
    match spec {
        TunerSpec::Auto => Box::new(Share::new(
            context(role, Peer::Other, base),
            Arc::clone(aggregate),
        )),
        _ => build(spec, role, Peer::Other, base),
    }
}

/// Waits, at most `most`, until the data connections within `budget`
/// hold no more than its bound ([`Budget::fits`]): one just admitted at
/// its least may find the others still holding their grants, which they
/// give back at their next sample (every 10 ms at most). Whether they did.
pub fn wait_for_room(budget: &Mutex<Budget>, most: Duration) -> bool {
    let until = Instant::now() + most;
    loop {
        if lock(budget).fits() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(ROOM_POLL);
    }
}

/// How often [`wait_for_room`] looks.
const ROOM_POLL: Duration = Duration::from_millis(2);

/// `mutex`'s value, even if a thread panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `base` (congestion control, force) with the buffers and clamp of
/// `settings`, mapped by the same [`settings_actions`] the monitor applies
/// after the handshake; what `settings` leaves alone stays as `base` has
/// it.
pub fn request(base: &BufferRequest, settings: Settings) -> BufferRequest {
    let mut request = base.clone();
    for action in settings_actions(settings) {
        match action {
            Action::SetRcvBuf(b) => request.rcvbuf = Some(b.get()),
            Action::SetSndBuf(b) => request.sndbuf = Some(b.get()),
            Action::SetWindowClamp(b) => {
                request.window_clamp = Some(u32::try_from(b.get()).unwrap_or(u32::MAX));
            }
            // Settings are buffers and a clamp only.
            Action::TellPeer(_) | Action::SetMaxPacingRate(_) | Action::TellPeerPace(_) => {}
        }
    }
    request
}

/// The `manual` tuner that holds a window clamp set by hand against the
/// kernel's autotuning; `None` without one, since buffers set by hand need
/// nothing after the handshake.
pub fn held(request: &BufferRequest) -> Option<Box<dyn Tuner>> {
    let clamp = request.window_clamp?;
    Some(Box::new(Held::new(Bytes(u64::from(clamp)))))
}

/// Starts SOBAS's probes towards the peer's responder at `peer` if the
/// receiving tuner reads them (`inputs`): packet trains for a capacity
/// estimate, and with `udp_probes` the probe stream. Their results go to
/// the tuner through `inbox`; a prober that cannot start is `None` (the
/// tuner then sizes without them) with the reason.
pub fn start_prober(
    inputs: Inputs,
    peer: SocketAddr,
    inbox: &Inbox,
) -> Result<Option<Prober>, ProbeError> {
    let to_tuner = inbox.clone();
    let sink = move |event: Event| to_tuner.event(event);
    probe(inputs, peer, inbox.opened(), Box::new(sink))
}

/// The prober `inputs` ask for, if any, handing each tuner input to `sink`
/// with times since `opened`.
fn probe(
    inputs: Inputs,
    peer: SocketAddr,
    opened: Instant,
    mut sink: Box<dyn FnMut(Event) + Send>,
) -> Result<Option<Prober>, ProbeError> {
    if !inputs.trains && !inputs.udp_probes {
        return Ok(None);
    }
    let to_tuner = Box::new(move |event: ProbeEvent| {
        if let Some(event) = event.tuner_event() {
            sink(event);
        }
    });
    let options = ProberOptions {
        udp_probes: inputs.udp_probes,
        ..ProberOptions::default()
    };
    Prober::start(peer, opened, to_tuner, options).map(Some)
}

/// Probes started before the data connection exists, for the tuner that
/// will receive on it: the packet trains cross the path while the control
/// connection still sets the transfer up (`SIZE`, `PASV`, `RETR`: about
/// three round trips), not during the data's slow start. Started with
/// the data, a 48-packet train and the first bursts of data met in a
/// 50-packet bottleneck queue and lost segments at a congestion window of
/// 20 to 26, and cubic then took 12 s to grow back to the window of a
/// 100 Mbit/s x 40 ms path (measured). Results wait here until
/// [`EarlyProbes::deliver_to`] hands them to the data connection's
/// monitor, their times counted from its opening (zero for what came
/// before).
#[derive(Debug)]
pub struct EarlyProbes {
    prober: Prober,
    started: Instant,
    mailbox: Arc<Mutex<Mailbox>>,
}

#[derive(Debug)]
enum Mailbox {
    /// No monitor yet: the inputs so far, times since the probes started.
    Waiting(Vec<Event>),
    /// Handed on to the monitor, whose clock started `offset` after the
    /// probes'.
    Open { inbox: Inbox, offset: Duration },
}

impl Mailbox {
    fn post(&mut self, event: Event) {
        match self {
            Mailbox::Waiting(events) => events.push(event),
            Mailbox::Open { inbox, offset } => inbox.event(event.counted_from(*offset)),
        }
    }
}

impl EarlyProbes {
    /// Starts the probes `inputs` ask for towards the responder at `peer`;
    /// `None` if they ask for none.
    pub fn start(inputs: Inputs, peer: SocketAddr) -> Result<Option<EarlyProbes>, ProbeError> {
        let started = Instant::now();
        let mailbox = Arc::new(Mutex::new(Mailbox::Waiting(Vec::new())));
        let to_mailbox = Arc::clone(&mailbox);
        let sink = move |event: Event| {
            if let Ok(mut mailbox) = to_mailbox.lock() {
                mailbox.post(event);
            }
        };
        let prober = probe(inputs, peer, started, Box::new(sink))?;
        Ok(prober.map(|prober| EarlyProbes {
            prober,
            started,
            mailbox,
        }))
    }

    /// Hands what came so far, and all that comes later, to the monitor
    /// of `inbox`; the prober goes on until it is dropped.
    pub fn deliver_to(self, inbox: &Inbox) -> Prober {
        let offset = inbox.opened().saturating_duration_since(self.started);
        let open = Mailbox::Open {
            inbox: inbox.clone(),
            offset,
        };
        if let Ok(mut mailbox) = self.mailbox.lock()
            && let Mailbox::Waiting(events) = std::mem::replace(&mut *mailbox, open)
        {
            for event in events {
                mailbox.post(event);
            }
        }
        self.prober
    }
}
