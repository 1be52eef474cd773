//! rightsize's Linux system layer: the only place that touches the kernel.
//!
//! Today it reads sysctls; sockets, `TCP_INFO`, namespaces and the emulator
//! driver will live here too. Every system call is wrapped so that its error
//! names the call and the path or address it was given.

pub mod sysctl;
