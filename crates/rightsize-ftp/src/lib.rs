//! rightsize's FTP driver: runs rightsize-ftp-proto's I/O-free FTP sessions over real
//! sockets and files. [`server`] is `rightsize serve`: a thread per control
//! connection, data connections made by `rightsize_sys::socket` so every
//! buffer request is applied before the handshake and read back. [`client`]
//! is `rightsize get` and `rightsize put`.

mod blocks;
pub mod client;
pub mod server;
mod stream;
pub mod telemetry;
pub mod tls;
pub mod tuning;
mod writes;
