//! rightsize's Linux system layer: the only place that touches the kernel.
//!
//! It reads sysctls (`sysctl`), creates and sizes sockets with every buffer,
//! clamp and congestion-control setting read back (`socket`), reads the
//! kernel's `struct tcp_info` (`tcp_info`), and keeps the FTP server's file
//! access inside its served directory (`rootfs`), makes network namespaces
//! joined by veth pairs (`netns`), runs emulated WAN paths (`emu`: the Rattan
//! driver, netem, the fidelity counters) and sends and sinks their cross
//! traffic (`cross`), and runs SOBAS's packet trains and UDP probe stream
//! (`probe`). It also waits on descriptors (`poll`), sends files to
//! sockets without copying (`zero_copy`: `sendfile`, `memfd_create`), and
//! signals, waits for and cleans up child processes and their process
//! groups (`process`). Every system call is wrapped so that its error names
//! the call and the path or address it was given; the other crates make
//! none of their own.

pub mod cross;
pub mod emu;
pub mod limits;
pub mod netns;
pub mod poll;
pub mod privileges;
pub mod probe;
pub mod process;
pub mod random;
pub mod rootfs;
pub mod signals;
pub mod socket;
pub mod sysctl;
pub mod tcp_info;
pub mod telemetry;
pub mod tty;
pub mod zero_copy;
