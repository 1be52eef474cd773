//! Telemetry files of data connections, shared by the server
//! (`--telemetry-dir`) and the client (`--telemetry FILE`): a header line
//! (command line, settings, version, kernel, addresses), then one JSON line
//! per interval and a final one, written by `rightsize_sys::telemetry`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rightsize_core::telemetry::{Direction, Header, Role};
use rightsize_sys::telemetry::{Sampler, TelemetryError};

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
    /// Starting the sampler.
    #[error("cannot start sampling into {path}")]
    Sampler {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: TelemetryError,
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

/// Creates `path` and samples `socket` into it every `interval`; `bytes`
/// is the transfer's payload counter. Finish with [`Sampler::finish`].
pub fn start(
    path: &Path,
    socket: &TcpStream,
    bytes: Arc<AtomicU64>,
    interval: Duration,
    describe: Describe,
) -> Result<Sampler, StartError> {
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
    Sampler::start(
        socket,
        bytes,
        interval,
        Box::new(BufWriter::new(file)),
        &header,
    )
    .map_err(|source| StartError::Sampler {
        path: path.to_owned(),
        source,
    })
}
