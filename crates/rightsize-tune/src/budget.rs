//! A server's buffer budget (`serve --buffer-budget SIZE`): the buffers of
//! all its data connections, summed, stay within one bound.
//!
//! Costs are counted as the kernel stores buffers, twice each request
//! ([`LINUX_DOUBLING`]), and a connection costs both of its buffers: the
//! one its data goes through (a sender's `SO_SNDBUF`, a receiver's
//! `SO_RCVBUF`, its *main* buffer) and the other, which carries only
//! acknowledgements and is set to [`OTHER`].
//!
//! - [`Budget`] admits a connection only if every connection admitted can
//!   still have its least ([`MIN_MAIN`] and [`OTHER`], [`min_cost`]); the
//!   next one gets [`Exhausted`], which says so, instead of crawling on a
//!   buffer too small to move data.
//! - Each connection says what it wants (its tuner's request); while the
//!   wants fit, each gets its want; when they do not, the budget is shared
//!   by water-filling: every connection gets its want or the same level,
//!   whichever is smaller, and the level is the highest that fits. A flow
//!   that needs less leaves the rest to those that need more. A grant is
//!   also never more than what the others do not hold now: a connection
//!   whose share fell gives its bytes back at its next sample, and only
//!   then can another take them.
//! - [`Budgeted`] wraps a connection's tuner: before the handshake it fixes
//!   the other buffer (and a sender's main one, which the kernel would
//!   otherwise grow by itself); after it, every request of the main buffer
//!   is cut to what the budget allows, and at every sample the buffer is
//!   cut again if newcomers lowered the allowance, or raised back towards
//!   the want when the budget freed up. A receiver's main buffer is set
//!   right after the handshake, not before (a receive buffer fixed before
//!   the handshake would fix a small window scale for good).
//!
//! Guarantees: what the connections hold never sums to more than the
//! limit, except for a newcomer's least while the others give back what
//! its admission took from their shares (at their next samples: 10 ms at
//! most); closing a connection (dropping its [`Budgeted`]) returns what it
//! held at once. Pure: no I/O, no clock.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::units::Bytes;
use crate::{Action, Decision, Event, Inputs, Role, Setup, Tuner};

/// Linux stores twice a buffer request.
pub const LINUX_DOUBLING: u64 = 2;
/// The least request of a connection's main buffer: about 45 segments,
/// enough for slow start's first rounds.
pub const MIN_MAIN: Bytes = Bytes(64 * 1024);
/// The request of the buffer a connection does not move data through.
pub const OTHER: Bytes = Bytes(8 * 1024);
/// How often a wrapped tuner that wants no sample of its own is sampled,
/// to follow its allowance.
const FOLLOW_EVERY: Duration = Duration::from_millis(10);

/// What one connection costs at least, stored bytes.
pub fn min_cost() -> u64 {
    LINUX_DOUBLING * (MIN_MAIN.0 + OTHER.0)
}

/// A connection's cost with a main buffer request of `main`, stored bytes.
fn cost(main: u64) -> u64 {
    LINUX_DOUBLING * (main + OTHER.0)
}

/// The main buffer request a cost allows.
fn main_for(cost: u64) -> u64 {
    (cost / LINUX_DOUBLING).saturating_sub(OTHER.0)
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted {
    /// The budget.
    pub limit: Bytes,
    /// Connections holding it.
    pub connections: usize,
}

impl std::error::Error for Exhausted {}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the buffer budget of {} is shared by {} data connections, each at its least ({}); try again when one ends",
            self.limit.human_iec(),
            self.connections,
            Bytes(min_cost()).human_iec()
        )
    }
}

/// The budget's state now, for `STAT` and telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    /// The bound, stored bytes.
    pub limit: u64,
    /// What the connections hold, summed.
    pub held: u64,
    /// What they want, summed.
    pub wanted: u64,
    /// Connections admitted.
    pub connections: usize,
}

/// The connections' shares of one bound; see the module documentation.
#[derive(Debug, Clone)]
pub struct Budget {
    limit: u64,
    /// Each connection's claim.
    claims: BTreeMap<u64, Claim>,
    next: u64,
}

/// What one connection wants and what it holds, stored bytes (at least
/// [`min_cost`] each).
#[derive(Debug, Clone, Copy)]
struct Claim {
    want: u64,
    held: u64,
}

impl Budget {
    /// A budget of `limit` stored bytes.
    pub fn new(limit: Bytes) -> Budget {
        Budget {
            limit: limit.0,
            claims: BTreeMap::new(),
            next: 0,
        }
    }

    /// Admits a connection at its least; its number.
    pub fn open(&mut self) -> Result<u64, Exhausted> {
        if !self.admits(1) {
            return Err(self.refusal());
        }
        let id = self.next;
        self.next += 1;
        let least = Claim {
            want: min_cost(),
            held: min_cost(),
        };
        self.claims.insert(id, least);
        Ok(id)
    }

    /// Connection `id` wants `cost` stored bytes (both buffers): what it
    /// may hold now, which it holds from now on.
    pub fn grant(&mut self, id: u64, cost: u64) -> u64 {
        if let Some(claim) = self.claims.get_mut(&id) {
            claim.want = cost.max(min_cost());
        }
        self.follow(id)
    }

    /// What connection `id` may hold now, for the want it has: its share
    /// (water-filling), and no more than the others leave free. It holds
    /// that from now on.
    pub fn follow(&mut self, id: u64) -> u64 {
        let Some(&Claim { want, held }) = self.claims.get(&id) else {
            return min_cost();
        };
        let share = match self.level() {
            None => want,
            Some(level) => want.min(level),
        };
        let others = self.held() - held;
        let granted = share.min(self.limit.saturating_sub(others)).max(min_cost());
        if let Some(claim) = self.claims.get_mut(&id) {
            claim.held = granted;
        }
        granted
    }

    /// Why a connection is not admitted now.
    pub fn refusal(&self) -> Exhausted {
        Exhausted {
            limit: Bytes(self.limit),
            connections: self.claims.len(),
        }
    }

    /// Whether `n` more connections would be admitted now.
    pub fn admits(&self, n: usize) -> bool {
        ((self.claims.len() + n) as u64).saturating_mul(min_cost()) <= self.limit
    }

    /// Whether what the connections hold fits the bound. A connection
    /// just admitted at its least may find the others still holding what
    /// they were granted before it came; each gives back at its next
    /// [`Budget::follow`], and the newcomer should not set its buffers
    /// before then.
    pub fn fits(&self) -> bool {
        self.held() <= self.limit
    }

    /// Connection `id` ended.
    pub fn close(&mut self, id: u64) {
        self.claims.remove(&id);
    }

    /// What the connections hold, summed.
    fn held(&self) -> u64 {
        self.claims.values().map(|c| c.held).sum()
    }

    /// What the connections want, summed.
    fn wanted(&self) -> u64 {
        self.claims.values().map(|c| c.want).sum()
    }

    /// The water level: every want above it gets the level. `None` when
    /// every want fits.
    fn level(&self) -> Option<u64> {
        water_level(self.claims.values().map(|c| c.want).collect(), self.limit)
    }

    /// The budget's use now.
    pub fn usage(&self) -> Use {
        Use {
            limit: self.limit,
            held: self.held(),
            wanted: self.wanted(),
            connections: self.claims.len(),
        }
    }
}

/// The water level that shares `limit` between `wants`: every want above
/// it gets the level, every want below it is met whole, and the level is
/// the highest that fits. `None` when every want fits.
pub(crate) fn water_level(mut wants: Vec<u64>, limit: u64) -> Option<u64> {
    if wants.iter().sum::<u64>() <= limit {
        return None;
    }
    wants.sort_unstable();
    let mut left = limit;
    let mut count = wants.len() as u64;
    for w in wants {
        // Everyone left would get `left / count`: a want below that is met
        // whole.
        let even = left / count;
        if w > even {
            return Some(even);
        }
        left -= w;
        count -= 1;
    }
    Some(left)
}

/// A connection's tuner within a [`Budget`]; see the module documentation.
#[derive(Debug)]
pub struct Budgeted {
    inner: Box<dyn Tuner>,
    budget: Arc<Mutex<Budget>>,
    id: u64,
    role: Role,
    /// The main buffer request the tuner wants (`None`: none yet).
    want: Option<u64>,
    /// The main buffer request applied last.
    applied: u64,
    /// The last sample's time.
    sampled: Duration,
}

impl Budgeted {
    /// `inner` for one connection at the end `role` names, admitted to
    /// `budget` or refused.
    pub fn new(
        inner: Box<dyn Tuner>,
        role: Role,
        budget: &Arc<Mutex<Budget>>,
    ) -> Result<Budgeted, Exhausted> {
        let id = lock(budget).open()?;
        // A tuner that sizes its buffer once, before or right after the
        // handshake (static:SIZE, a client's SBUF), wants that size.
        let setup = inner.setup();
        let want = match role {
            Role::Sender => setup.pre_handshake.sndbuf.or(setup.after_connect.sndbuf),
            Role::Receiver => setup.pre_handshake.rcvbuf.or(setup.after_connect.rcvbuf),
        };
        Ok(Budgeted {
            inner,
            budget: Arc::clone(budget),
            id,
            role,
            want: want.map(|b| b.0.max(MIN_MAIN.0)),
            applied: MIN_MAIN.0,
            sampled: Duration::ZERO,
        })
    }

    /// The main buffer request the budget grants for a want of `asked`.
    fn granted_main(&self, asked: u64) -> u64 {
        main_for(lock(&self.budget).grant(self.id, cost(asked))).max(MIN_MAIN.0)
    }

    /// `action` of the inner tuner, within the budget: the main buffer cut
    /// to the allowance (its want noted), the other one held at
    /// [`OTHER`].
    fn within(&mut self, action: Action) -> Action {
        let asked = match (buffer(self.role, action), action) {
            (Some(Buffer::Main), Action::SetSndBuf(b) | Action::SetRcvBuf(b)) => b.0,
            (Some(Buffer::Other), _) => return set(self.role, Buffer::Other, OTHER),
            _ => return action,
        };
        let asked = asked.max(MIN_MAIN.0);
        self.want = Some(asked);
        let granted = asked.min(self.granted_main(asked));
        self.applied = granted;
        set(self.role, Buffer::Main, Bytes(granted))
    }

    /// At a sample: the main buffer brought to the allowance if it moved
    /// (down: newcomers; up: towards the want, once the budget freed up).
    fn follow(&mut self) -> Option<Action> {
        let want = self.want?;
        let target = want.min(main_for(lock(&self.budget).follow(self.id)).max(MIN_MAIN.0));
        if target == self.applied {
            return None;
        }
        self.applied = target;
        Some(set(self.role, Buffer::Main, Bytes(target)))
    }
}

/// A connection's two buffers: the one its data goes through, and the
/// other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Buffer {
    Main,
    Other,
}

/// Which of `role`'s buffers `action` sets, if any.
fn buffer(role: Role, action: Action) -> Option<Buffer> {
    match (role, action) {
        (Role::Sender, Action::SetSndBuf(_)) | (Role::Receiver, Action::SetRcvBuf(_)) => {
            Some(Buffer::Main)
        }
        (Role::Sender, Action::SetRcvBuf(_)) | (Role::Receiver, Action::SetSndBuf(_)) => {
            Some(Buffer::Other)
        }
        _ => None,
    }
}

/// The action that sets `role`'s `which` buffer to `bytes`.
fn set(role: Role, which: Buffer, bytes: Bytes) -> Action {
    match (role, which) {
        (Role::Sender, Buffer::Main) | (Role::Receiver, Buffer::Other) => Action::SetSndBuf(bytes),
        (Role::Receiver, Buffer::Main) | (Role::Sender, Buffer::Other) => Action::SetRcvBuf(bytes),
    }
}

impl Drop for Budgeted {
    fn drop(&mut self) {
        lock(&self.budget).close(self.id);
    }
}

impl Tuner for Budgeted {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn state(&self) -> &'static str {
        self.inner.state()
    }

    fn setup(&self) -> Setup {
        setup_for(self.role, self.inner.setup())
    }

    fn inputs(&self) -> Inputs {
        self.inner.inputs()
    }

    fn on_event(&mut self, event: &Event) -> Decision {
        if let Event::Sample(sample) = event {
            self.sampled = sample.at;
        }
        let mut decision = self.inner.on_event(event);
        let actions = std::mem::take(&mut decision.actions);
        decision.actions = actions.into_iter().map(|a| self.within(a)).collect();
        let main_set = decision
            .actions
            .iter()
            .any(|&a| buffer(self.role, a) == Some(Buffer::Main));
        if matches!(event, Event::Sample(_))
            && !main_set
            && let Some(action) = self.follow()
        {
            decision.actions.push(action);
            if decision.record.is_none() {
                return Decision::act(
                    self.inner.state(),
                    decision.actions,
                    Bytes(self.applied),
                    format!(
                        "the buffer budget allows {} now",
                        Bytes(self.applied).human_si()
                    ),
                );
            }
        }
        decision
    }

    fn next_wakeup(&self) -> Option<Duration> {
        // Samples are what lets a connection follow its allowance.
        let follow = self.sampled + FOLLOW_EVERY;
        Some(self.inner.next_wakeup().map_or(follow, |t| t.min(follow)))
    }
}

/// `inner`'s setup within a budget: the connection starts at its least,
/// held since its admission (its tuner's own size is its want, granted at
/// the first sample). A sender's main buffer is fixed before the
/// handshake (left alone, the kernel grows it by itself), a receiver's
/// right after it (a receive buffer fixed before the handshake would fix
/// a small window scale for good), the other buffer at [`OTHER`] before
/// it.
pub fn setup_for(role: Role, inner: Setup) -> Setup {
    let (mut pre, mut after) = (inner.pre_handshake, inner.after_connect);
    match role {
        Role::Sender => {
            pre.sndbuf = Some(MIN_MAIN);
            pre.rcvbuf = Some(OTHER);
            after.sndbuf = None;
            after.rcvbuf = None;
        }
        Role::Receiver => {
            after.rcvbuf = Some(MIN_MAIN);
            pre.rcvbuf = None;
            pre.sndbuf = Some(OTHER);
            after.sndbuf = None;
        }
    }
    Setup {
        pre_handshake: pre,
        after_connect: after,
    }
}

/// `mutex`'s value, even if a thread panicked holding it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
