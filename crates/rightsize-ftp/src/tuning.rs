//! What the client and the server share to size a data connection with a
//! tuner (`--tune`): building it for this end with the kernel's limits read
//! now, and turning its settings into a socket request.

use std::net::SocketAddr;

use rightsize_sys::probe::{ProbeError, ProbeEvent, Prober, ProberOptions};
use rightsize_sys::socket::BufferRequest;
use rightsize_sys::telemetry::Inbox;
use rightsize_tune::driver::settings_actions;
use rightsize_tune::units::Bytes;
use rightsize_tune::{
    Action, Context, Held, Inputs, Limits, Peer, Role, Settings, Tuner, TunerSpec,
};

/// The tuner `spec` names, for this end of a data connection; the limits
/// are the host's `/proc/sys` values as they are now.
pub fn build(spec: &TunerSpec, role: Role, peer: Peer) -> Box<dyn Tuner> {
    let (host, _unreadable) = rightsize_sys::sysctl::read_host_settings();
    spec.build(Context {
        role,
        limits: Limits::from_host(&host, None),
        peer,
    })
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
    if !inputs.trains && !inputs.udp_probes {
        return Ok(None);
    }
    let to_tuner = inbox.clone();
    let sink = Box::new(move |event: ProbeEvent| {
        if let Some(event) = event.tuner_event() {
            to_tuner.event(event);
        }
    });
    let options = ProberOptions {
        udp_probes: inputs.udp_probes,
        ..ProberOptions::default()
    };
    Prober::start(peer, inbox.opened(), sink, options).map(Some)
}
