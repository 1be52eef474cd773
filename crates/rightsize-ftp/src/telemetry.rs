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

use rightsize_sys::telemetry::TelemetryOut;
use rightsize_tune::telemetry::{Direction, Header, Role};
use rightsize_tune::write_size::WriteSize;

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

/// Records a sending end's write size (`--write-size`) in its settings as
/// `write_size_bytes`: the byte count, or `default` when the end sends as
/// it always does (the server with `sendfile`, the client in 256 KiB
/// pieces). A receiving end records none: it writes nothing.
pub fn record_write_size(settings: &mut BTreeMap<String, String>, size: Option<WriteSize>) {
    let value = size.map_or_else(|| "default".to_owned(), |s| s.to_string());
    settings.insert("write_size_bytes".to_owned(), value);
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
