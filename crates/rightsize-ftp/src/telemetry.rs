//! Telemetry files of data connections, shared by the server
//! (`--telemetry-dir`) and the client (`--telemetry FILE`): a header line
//! (command line, settings, version, kernel, addresses), then one JSON line
//! per interval and a final one, written by `rightsize_sys::telemetry`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rightsize_core::telemetry::{Direction, Header, Role};
use rightsize_sys::telemetry::TelemetryOut;

/// Why a telemetry file could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Creating the file.
    #[error("cannot create the telemetry file {path}")]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What a telemetry file describes, besides the socket itself.
#[derive(Debug, Clone)]
pub struct Describe {
    /// Client or server.
    pub role: Role,
    /// Which way this end moves data.
    pub direction: Direction,
    /// The command line.
    pub argv: Vec<String>,
    /// Settings by name (buffer requests, SBUF, URL or path...).
    pub settings: BTreeMap<String, String>,
}

/// Creates `path` for a telemetry file of `socket`, sampled every
/// `interval`; hand the result to `rightsize_sys::telemetry::Monitor`.
pub fn open(
    path: &Path,
    socket: &TcpStream,
    interval: Duration,
    describe: Describe,
) -> Result<TelemetryOut, StartError> {
    let file = File::create(path).map_err(|source| StartError::Create {
        path: path.to_owned(),
        source,
    })?;
    let addr =
        |a: std::io::Result<std::net::SocketAddr>| a.map_or_else(|_| "?".into(), |a| a.to_string());
    let header = Header {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        kernel: rightsize_sys::sysctl::kernel_release().ok(),
        argv: describe.argv,
        role: describe.role,
        direction: describe.direction,
        local_addr: addr(socket.local_addr()),
        peer_addr: addr(socket.peer_addr()),
        interval_us: None,
        settings: describe.settings,
    };
    Ok(TelemetryOut {
        out: Box::new(BufWriter::new(file)),
        header,
        interval,
    })
}
