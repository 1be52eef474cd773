//! What limits one TCP transfer on a path, from measured numbers: the
//! statistics of `rightsize ping` ([`rtt`]) and the verdict of `rightsize
//! doctor`.
//!
//! Nothing here measures: the binary hands in the round trips, both ends'
//! `TCP_INFO` summaries and host settings, and gets back numbers and a
//! verdict that can be tested with literal values.

pub mod doctor;
pub mod rtt;
pub mod tcp;
pub mod verdict;
