//! The send connections a server has open at once to one client network
//! share that network's path, so their send buffers together need hold
//! no more than the path carries.
//!
//! Each connection's `auto` sizes its send buffer for its own flow, and
//! each flow's receiver paces it at the bottleneck's capacity as its
//! packet trains measured it. When many flows start together their slow
//! starts overshoot together: each congestion window, and so each send
//! buffer, grows past the flow's share until the bottleneck queue
//! overflows. A [`Crowd`] bounds the sum: the connections' `SO_SNDBUF`
//! requests together stay within [`LEAD`] times the path's
//! bandwidth-delay product as the connections see it (the fastest pacing
//! ceiling asked for, times the longest minimum RTT), shared by
//! water-filling (each gets its want or the same level, whichever is
//! smaller), never less than [`LEAST`] each. A connection alone is left
//! to its tuner (a BBR sender on a lossy path keeps up to twice the
//! path's BDP in flight, and a bound of 1.25 held one back: 170.8 Mbit/s
//! where the kernel made 181.0). Linux stores twice a
//! request, so the bytes in flight can still reach about 1.3 x the bound
//! (the application is woken to write when a third of the buffer is
//! free): enough to fill the path, not to keep its queue full.
//!
//! [`Crowded`] wraps one sending connection's tuner: it tells the crowd
//! what the tuner wants and cuts every `SO_SNDBUF` request to the
//! allowance, and at each sample moves the buffer to a changed
//! allowance. Until a connection has asked for a pacing ceiling the crowd
//! has no estimate and cuts nothing. Pure: no I/O, no clock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::budget::{lock, water_level};
use crate::meter::show_bytes;
use crate::units::Bytes;
use crate::{Action, Decision, Event, Inputs, Sample, Setup, Tuner};

/// The connections' requests sum to at most this many times the path's
/// bandwidth-delay product.
pub const LEAD: f64 = 1.25;
/// No connection's allowance is below this request: enough for slow
/// start's first rounds.
pub const LEAST: Bytes = crate::budget::MIN_MAIN;
/// How often a wrapped tuner that wants no sample sooner is sampled, to
/// follow its allowance.
const FOLLOW_EVERY: Duration = Duration::from_millis(25);

/// What one connection told the crowd.
#[derive(Debug, Clone, Copy, Default)]
struct Member {
    /// Its tuner's `SO_SNDBUF` request, bytes.
    want: Option<u64>,
    /// The pacing ceiling its receiver asked for, bytes per second.
    pace: Option<u64>,
    /// Its minimum RTT.
    min_rtt: Option<Duration>,
}

/// The send connections to one client network; see the module
/// documentation.
#[derive(Debug, Clone, Default)]
pub struct Crowd {
    members: BTreeMap<u64, Member>,
    next: u64,
}

impl Crowd {
    /// No connection yet.
    pub fn new() -> Crowd {
        Crowd::default()
    }

    /// A connection joins; its number.
    pub fn join(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        self.members.insert(id, Member::default());
        id
    }

    /// Connection `id` ended.
    pub fn leave(&mut self, id: u64) {
        self.members.remove(&id);
    }

    /// How many connections there are.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Connection `id`'s tuner asks for a `SO_SNDBUF` request of `want`.
    pub fn want(&mut self, id: u64, want: Bytes) {
        if let Some(m) = self.members.get_mut(&id) {
            m.want = Some(want.get());
        }
    }

    /// Connection `id` is paced at `ceiling` bytes per second.
    pub fn pace(&mut self, id: u64, ceiling: Bytes) {
        if let Some(m) = self.members.get_mut(&id) {
            m.pace = Some(ceiling)
                .filter(|&p| p != crate::NO_PACING_CEILING && p != crate::KERNEL_PACING)
                .map(Bytes::get)
                .filter(|&p| p > 0);
        }
    }

    /// Connection `id`'s minimum RTT.
    pub fn min_rtt(&mut self, id: u64, rtt: Duration) {
        if let Some(m) = self.members.get_mut(&id) {
            m.min_rtt = Some(rtt).filter(|r| !r.is_zero());
        }
    }

    /// The path's bandwidth-delay product as the connections see it: the
    /// fastest pacing ceiling times the longest minimum RTT. `None` until
    /// a connection has both.
    pub fn bdp(&self) -> Option<Bytes> {
        let pace = self.members.values().filter_map(|m| m.pace).max()?;
        let rtt = self.members.values().filter_map(|m| m.min_rtt).max()?;
        Some(Bytes((pace as f64 * rtt.as_secs_f64()) as u64))
    }

    /// The bound on the connections' requests summed.
    pub fn limit(&self) -> Option<Bytes> {
        self.bdp().map(|b| Bytes((b.get() as f64 * LEAD) as u64))
    }

    /// The largest request connection `id` may have now; `None` when
    /// nothing is cut (a connection alone, no estimate yet, or every want
    /// fits).
    pub fn allowance(&self, id: u64) -> Option<Bytes> {
        if self.members.len() < 2 || !self.members.contains_key(&id) {
            return None;
        }
        let limit = self.limit()?;
        let wants = self
            .members
            .values()
            .map(|m| m.want.unwrap_or(LEAST.get()))
            .collect();
        let level = water_level(wants, limit.get())?;
        Some(Bytes(level.max(LEAST.get())))
    }
}

/// One sending connection's tuner within a [`Crowd`]; see the module
/// documentation.
#[derive(Debug)]
pub struct Crowded {
    inner: Box<dyn Tuner>,
    crowd: Arc<Mutex<Crowd>>,
    id: u64,
    /// The `SO_SNDBUF` request the tuner wants (`None`: none yet).
    want: Option<Bytes>,
    /// The request applied last.
    applied: Option<Bytes>,
    /// The last sample's time.
    sampled: Duration,
    /// `tcpi_sndbuf_limited` at the last sample, and how much of it came
    /// while the crowd held the buffer below the tuner's want: the tuner
    /// does not see that part (the buffer it asked for did not hold the
    /// sender back; the crowd did).
    sndbuf_limited: Option<u64>,
    hidden_us: u64,
}

impl Crowded {
    /// `inner`, the tuner of a sending connection, joining `crowd`.
    pub fn new(inner: Box<dyn Tuner>, crowd: &Arc<Mutex<Crowd>>) -> Crowded {
        let id = lock(crowd).join();
        Crowded {
            inner,
            crowd: Arc::clone(crowd),
            id,
            want: None,
            applied: None,
            sampled: Duration::ZERO,
            sndbuf_limited: None,
            hidden_us: 0,
        }
    }

    /// Whether the buffer applied is below the tuner's want.
    fn cut(&self) -> bool {
        matches!((self.applied, self.want), (Some(a), Some(w)) if a < w)
    }

    /// The sample as the inner tuner sees it: the time the crowd held the
    /// sender back taken out of `tcpi_sndbuf_limited`. Notes the minimum
    /// RTT for the crowd.
    fn seen(&mut self, sample: &Sample) -> Sample {
        let mut seen = sample.clone();
        let Some(info) = seen.tcp_info.as_mut() else {
            return seen;
        };
        if let Some(rtt) = info.min_rtt_us.filter(|&r| r > 0) {
            lock(&self.crowd).min_rtt(self.id, Duration::from_micros(u64::from(rtt)));
        }
        if let Some(now) = info.sndbuf_limited_us {
            if let Some(before) = self.sndbuf_limited
                && self.cut()
            {
                self.hidden_us += now.saturating_sub(before);
            }
            self.sndbuf_limited = Some(now);
            info.sndbuf_limited_us = Some(now.saturating_sub(self.hidden_us));
        }
        seen
    }

    /// `action` of the inner tuner, within the crowd: a pacing ceiling
    /// noted, a send buffer request noted and cut to the allowance.
    fn within(&mut self, action: Action) -> Action {
        match action {
            Action::SetMaxPacingRate(ceiling) => {
                lock(&self.crowd).pace(self.id, ceiling);
                action
            }
            Action::SetSndBuf(want) => {
                self.want = Some(want);
                let allowed = {
                    let mut crowd = lock(&self.crowd);
                    crowd.want(self.id, want);
                    crowd.allowance(self.id)
                };
                let request = allowed.map_or(want, |a| want.min(a));
                self.applied = Some(request);
                Action::SetSndBuf(request)
            }
            other => other,
        }
    }

    /// At a sample: the buffer brought to the allowance if it moved.
    fn follow(&mut self) -> Option<(Bytes, String)> {
        let want = self.want?;
        let crowd = lock(&self.crowd);
        let allowed = crowd.allowance(self.id);
        let target = allowed.map_or(want, |a| want.min(a));
        if Some(target) == self.applied {
            return None;
        }
        let reason = match (allowed, crowd.bdp()) {
            (Some(_), Some(bdp)) => format!(
                "{} connections to this network share its path ({} BDP): send buffer {}",
                crowd.len(),
                show_bytes(bdp),
                show_bytes(target)
            ),
            _ => format!(
                "the connections to this network fit: send buffer {}",
                show_bytes(target)
            ),
        };
        drop(crowd);
        self.applied = Some(target);
        Some((target, reason))
    }
}

impl Drop for Crowded {
    fn drop(&mut self) {
        lock(&self.crowd).leave(self.id);
    }
}

impl Tuner for Crowded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn state(&self) -> &'static str {
        self.inner.state()
    }

    fn setup(&self) -> Setup {
        self.inner.setup()
    }

    fn inputs(&self) -> Inputs {
        self.inner.inputs()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        let mut decision = match event {
            Event::Sample(sample) => {
                self.sampled = sample.at;
                let seen = Event::Sample(self.seen(sample));
                self.inner.on_event(&seen)
            }
            other => self.inner.on_event(other),
        };
        let asked = decision.actions.clone();
        decision.actions = asked.iter().map(|&a| self.within(a)).collect();
        if decision.actions != asked
            && let Some(record) = decision.record.as_mut()
            && let Some(Action::SetSndBuf(cut)) = decision
                .actions
                .iter()
                .find(|a| matches!(a, Action::SetSndBuf(_)))
        {
            record.reason.push_str(&format!(
                "; {} with the other connections to this network",
                show_bytes(*cut)
            ));
        }
        let set = decision
            .actions
            .iter()
            .any(|a| matches!(a, Action::SetSndBuf(_)));
        if matches!(event, Event::Sample(_))
            && !set
            && let Some((request, reason)) = self.follow()
        {
            decision.actions.push(Action::SetSndBuf(request));
            match decision.record.as_mut() {
                Some(record) => record.reason.push_str(&format!("; {reason}")),
                None => {
                    return Decision::act(self.inner.state(), decision.actions, request, reason);
                }
            }
        }
        decision
    }

    fn next_wakeup(&self) -> Option<Duration> {
        // Alone, nothing to follow: the tuner's own schedule.
        if lock(&self.crowd).len() < 2 && !self.cut() {
            return self.inner.next_wakeup();
        }
        let follow = self.sampled + FOLLOW_EVERY;
        Some(self.inner.next_wakeup().map_or(follow, |t| t.min(follow)))
    }
}

#[cfg(test)]
mod tests;
