//! Caps on concurrent sessions, in total and per client address (RFC 2577
//! section 6, vsftpd's `max_clients` / `max_per_ip`).
//!
//! A [`Slot`] is held for as long as a session lives; dropping it gives the
//! place back, so no error path can leak one.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// Why a connection was turned away; the text is the 421 reply's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The server holds its maximum number of sessions.
    Total,
    /// This address holds its maximum number of sessions.
    PerAddress,
}

impl Refused {
    /// The text of the 421 reply (vsftpd's wording).
    pub fn reply_text(self) -> &'static str {
        match self {
            Refused::Total => "There are too many connected users, please try later.",
            Refused::PerAddress => "There are too many connections from your internet address.",
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_address: HashMap<IpAddr, usize>,
}

/// The session counts of one server.
#[derive(Debug, Clone)]
pub struct Limits {
    max_total: usize,
    max_per_address: usize,
    counts: Arc<Mutex<Counts>>,
}

impl Limits {
    /// Caps of `max_total` sessions and `max_per_address` per client address.
    pub fn new(max_total: usize, max_per_address: usize) -> Self {
        Limits {
            max_total,
            max_per_address,
            counts: Arc::default(),
        }
    }

    /// Takes a place for a session from `addr`, or says why there is none.
    pub fn admit(&self, addr: IpAddr) -> Result<Slot, Refused> {
        let addr = addr.to_canonical();
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.total >= self.max_total {
            return Err(Refused::Total);
        }
        let here = counts.per_address.entry(addr).or_insert(0);
        if *here >= self.max_per_address {
            return Err(Refused::PerAddress);
        }
        *here += 1;
        counts.total += 1;
        Ok(Slot {
            addr,
            counts: Arc::clone(&self.counts),
        })
    }

    /// Sessions open now.
    pub fn active(&self) -> usize {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

/// One session's place; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    addr: IpAddr,
    counts: Arc<Mutex<Counts>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.total = counts.total.saturating_sub(1);
        if let Some(here) = counts.per_address.get_mut(&self.addr) {
            *here = here.saturating_sub(1);
            if *here == 0 {
                counts.per_address.remove(&self.addr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn caps_per_address_and_in_total_and_frees_on_drop() {
        let limits = Limits::new(3, 2);
        let a: IpAddr = "198.18.0.2".parse().unwrap();
        let b: IpAddr = "198.18.0.3".parse().unwrap();
        let s1 = limits.admit(a).unwrap();
        let _s2 = limits.admit(a).unwrap();
        assert_eq!(limits.admit(a).unwrap_err(), Refused::PerAddress);
        let _s3 = limits.admit(b).unwrap();
        assert_eq!(limits.admit(b).unwrap_err(), Refused::Total);
        drop(s1);
        assert_eq!(limits.active(), 2);
        let _s4 = limits.admit(a).unwrap();
    }

    #[test]
    fn mapped_ipv4_counts_as_the_same_address() {
        let limits = Limits::new(10, 1);
        let _s = limits.admit("198.18.0.2".parse().unwrap()).unwrap();
        assert_eq!(
            limits
                .admit("::ffff:198.18.0.2".parse().unwrap())
                .unwrap_err(),
            Refused::PerAddress
        );
    }
}
