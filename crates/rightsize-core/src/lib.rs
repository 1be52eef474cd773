//! rightsize's core: everything that decides, and nothing that does I/O.
//!
//! This crate reads no clock, opens no socket and touches no file. It holds
//! the units (bytes, bit rates, durations), the bandwidth-delay arithmetic,
//! the host-tuning advice, the FTP wire codec, `ftp://` URLs, streaming
//! checksums, the cross-traffic pacing schedule, the path probes'
//! datagrams and bookkeeping, and the sender's write size. Time, where needed, is
//! an argument. The system layer
//! (`rightsize-sys`) and the binary drive it.

pub mod advice;
pub mod bdp;
pub mod check;
pub mod checksum;
pub mod cross;
pub mod diagnose;
pub mod ftp;
pub mod host;
pub mod passwd;
pub mod path;
pub mod probe;
pub mod session;
pub mod tcpinfo;
pub mod telemetry;
pub mod tune;
pub mod units;
pub mod url;
pub mod write_size;
