//! Caps on concurrent sessions, in total and per client address (RFC 2577
//! section 6, vsftpd's `max_clients` / `max_per_ip`), and on sessions that
//! have not logged in yet: a client that connects and then sends a byte a
//! second (or nothing) holds its place for the whole login timeout, so
//! that a thousand of them fill every cap.
//!
//! Two rules keep them out of the way of clients that log in: an address
//! holds at most `max_waiting_per_address` sessions before their login
//! (more are turned away), and when the server is full, a new connection
//! takes the place of the session that has waited longest for its login,
//! which is closed. A client that logs in does so within a few round
//! trips; one that waits is dropped first.
//!
//! A [`Slot`] is held for as long as a session lives; dropping it gives the
//! place back, so no error path can leak one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// Why a connection was turned away; the text is the 421 reply's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The server holds its maximum number of sessions, all logged in.
    Total,
    /// This address holds its maximum number of sessions.
    PerAddress,
    /// This address holds its maximum number of sessions not logged in.
    Waiting,
}

impl Refused {
    /// The text of the 421 reply (vsftpd's wording for the first two).
    pub fn reply_text(self) -> &'static str {
        match self {
            Refused::Total => "There are too many connected users, please try later.",
            Refused::PerAddress => "There are too many connections from your internet address.",
            Refused::Waiting => {
                "There are too many connections from your internet address that have not logged in."
            }
        }
    }
}

/// How a session that waited longest for its login is closed to make
/// room: called once, from the thread that admits the newcomer.
pub type Evict = Box<dyn FnOnce() + Send>;

/// A session before its login.
struct Waiting {
    addr: IpAddr,
    evict: Evict,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_address: HashMap<IpAddr, usize>,
    /// Sessions not logged in yet, oldest first (by admission number).
    waiting: BTreeMap<u64, Waiting>,
    waiting_per_address: HashMap<IpAddr, usize>,
    /// Sessions closed to make room: their places were given at once.
    evicted: HashSet<u64>,
    next: u64,
}

impl Counts {
    /// Takes `id` off the waiting list, if it is there.
    fn stop_waiting(&mut self, id: u64) -> Option<Waiting> {
        let waiting = self.waiting.remove(&id)?;
        decrement(&mut self.waiting_per_address, waiting.addr);
        Some(waiting)
    }

    /// Gives the place of session `id` from `addr` back.
    fn release(&mut self, id: u64, addr: IpAddr) {
        self.total = self.total.saturating_sub(1);
        decrement(&mut self.per_address, addr);
        let _ = self.stop_waiting(id);
    }
}

fn decrement(counts: &mut HashMap<IpAddr, usize>, addr: IpAddr) {
    if let Some(here) = counts.get_mut(&addr) {
        *here = here.saturating_sub(1);
        if *here == 0 {
            counts.remove(&addr);
        }
    }
}

/// The session counts of one server.
#[derive(Debug, Clone)]
pub struct Limits {
    max_total: usize,
    max_per_address: usize,
    max_waiting_per_address: usize,
    counts: Arc<Mutex<Counts>>,
}

impl Limits {
    /// Caps of `max_total` sessions, `max_per_address` per client address
    /// and `max_waiting_per_address` per address before their login.
    pub fn new(max_total: usize, max_per_address: usize, max_waiting_per_address: usize) -> Self {
        Limits {
            max_total,
            max_per_address,
            max_waiting_per_address,
            counts: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a place for a session from `addr`, which `evict` closes
    /// should the place be needed while it waits for its login; or says
    /// why there is none.
    pub fn admit(&self, addr: IpAddr, evict: Evict) -> Result<Slot, Refused> {
        let addr = addr.to_canonical();
        let mut counts = self.lock();
        if counts.per_address.get(&addr).copied().unwrap_or(0) >= self.max_per_address {
            return Err(Refused::PerAddress);
        }
        if counts.waiting_per_address.get(&addr).copied().unwrap_or(0)
            >= self.max_waiting_per_address
        {
            return Err(Refused::Waiting);
        }
        if counts.total >= self.max_total {
            let Some(oldest) = counts.waiting.keys().next().copied() else {
                return Err(Refused::Total);
            };
            if let Some(waiting) = counts.stop_waiting(oldest) {
                counts.release(oldest, waiting.addr);
                counts.evicted.insert(oldest);
                (waiting.evict)();
            }
        }
        let id = counts.next;
        counts.next += 1;
        counts.total += 1;
        *counts.per_address.entry(addr).or_insert(0) += 1;
        *counts.waiting_per_address.entry(addr).or_insert(0) += 1;
        counts.waiting.insert(id, Waiting { addr, evict });
        Ok(Slot {
            id,
            addr,
            counts: Arc::clone(&self.counts),
        })
    }

    /// Sessions open now.
    pub fn active(&self) -> usize {
        self.lock().total
    }

    /// Sessions open now that have not logged in.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// One session's place; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    id: u64,
    addr: IpAddr,
    counts: Arc<Mutex<Counts>>,
}

impl Slot {
    /// The session logged in: it no longer waits, and is never closed to
    /// make room.
    pub fn logged_in(&self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = counts.stop_waiting(self.id);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        // An evicted session's place went to the newcomer already.
        if !counts.evicted.remove(&self.id) {
            counts.release(self.id, self.addr);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn keep() -> Evict {
        Box::new(|| {})
    }

    #[test]
    fn caps_per_address_and_in_total_and_frees_on_drop() {
        let limits = Limits::new(3, 2, 10);
        let (a, b) = (ip("198.18.0.2"), ip("198.18.0.3"));
        let s1 = limits.admit(a, keep()).unwrap();
        let s2 = limits.admit(a, keep()).unwrap();
        assert_eq!(limits.admit(a, keep()).unwrap_err(), Refused::PerAddress);
        let s3 = limits.admit(b, keep()).unwrap();
        for s in [&s1, &s2, &s3] {
            s.logged_in();
        }
        // Full, and every session logged in: no room to make.
        assert_eq!(limits.admit(b, keep()).unwrap_err(), Refused::Total);
        drop(s1);
        assert_eq!(limits.active(), 2);
        let _s4 = limits.admit(a, keep()).unwrap();
    }

    #[test]
    fn mapped_ipv4_counts_as_the_same_address() {
        let limits = Limits::new(10, 1, 10);
        let _s = limits.admit(ip("198.18.0.2"), keep()).unwrap();
        assert_eq!(
            limits.admit(ip("::ffff:198.18.0.2"), keep()).unwrap_err(),
            Refused::PerAddress
        );
    }

    #[test]
    fn an_address_may_hold_only_so_many_sessions_before_their_login() {
        let limits = Limits::new(100, 100, 2);
        let a = ip("198.18.0.2");
        let s1 = limits.admit(a, keep()).unwrap();
        let _s2 = limits.admit(a, keep()).unwrap();
        assert_eq!(limits.admit(a, keep()).unwrap_err(), Refused::Waiting);
        // Another address is not held back; a login frees a waiting place.
        let _other = limits.admit(ip("198.18.0.3"), keep()).unwrap();
        s1.logged_in();
        let _s3 = limits.admit(a, keep()).unwrap();
        assert_eq!(limits.waiting(), 3);
    }

    #[test]
    fn a_full_server_closes_the_session_that_waited_longest_for_its_login() {
        let limits = Limits::new(3, 10, 10);
        let closed = Arc::new(AtomicUsize::new(usize::MAX));
        let closer = |n: usize| -> Evict {
            let closed = Arc::clone(&closed);
            Box::new(move || closed.store(n, Ordering::SeqCst))
        };
        let first = limits.admit(ip("198.18.0.2"), closer(1)).unwrap();
        let second = limits.admit(ip("198.18.0.3"), closer(2)).unwrap();
        let third = limits.admit(ip("198.18.0.4"), closer(3)).unwrap();
        first.logged_in();
        // Full: the newcomer takes the place of the oldest waiting one.
        let fourth = limits.admit(ip("198.18.0.5"), closer(4)).unwrap();
        assert_eq!(closed.load(Ordering::SeqCst), 2);
        assert_eq!(limits.active(), 3);
        // The evicted session's end gives nothing back twice.
        drop(second);
        assert_eq!(limits.active(), 3);
        let _fifth = limits.admit(ip("198.18.0.6"), closer(5)).unwrap();
        assert_eq!(closed.load(Ordering::SeqCst), 3);
        third.logged_in();
        fourth.logged_in();
        drop(third);
        assert_eq!(limits.active(), 3);
        // All logged in but the fifth: it goes next; then nothing can.
        let sixth = limits.admit(ip("198.18.0.7"), closer(6)).unwrap();
        assert_eq!(closed.load(Ordering::SeqCst), 5);
        sixth.logged_in();
        assert_eq!(
            limits.admit(ip("198.18.0.8"), closer(7)).unwrap_err(),
            Refused::Total
        );
    }
}
