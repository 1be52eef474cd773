//! A sample of the kernel's `TCP_INFO` for one socket, as plain values.
//!
//! The system layer reads `struct tcp_info` and fills this type; tuners,
//! telemetry and verdicts read it. Each field is `None` where the running
//! kernel did not fill it (the struct has grown over kernel versions).
//! (Being written; see rightsize-sys/src/tcp_info.rs.)
