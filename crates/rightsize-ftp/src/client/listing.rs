//! A directory's entries, read over a data connection: `MLSD` (RFC 3659 7)
//! when the server lists `MLST` in `FEAT`, else `LIST`, parsed by
//! `rightsize_ftp_proto::entries`.
//!
//! Guarantees: the listing has the idle timeout on every read and may not
//! exceed [`MAX_LISTING_BYTES`]; lines that cannot be read, and names that
//! could leave the directory, are skipped with a warning, never followed.

use crate::client::secure::ClientStream;
use std::io::{self, Read};

use rightsize_ftp_proto::Command;
use rightsize_ftp_proto::command::ListArgs;
use rightsize_ftp_proto::entries::{self, Entry};
use rightsize_sys::socket::BufferRequest;

use super::control::{arg, is_timeout};
use super::data;
use super::error::ClientError;
use super::session::Session;
use super::{Observer, Options};

/// The most bytes one directory's listing may take.
pub const MAX_LISTING_BYTES: u64 = 256 << 20;

/// `MLSD path`, or `LIST path` where the server has no `MLSD` (an empty
/// path: the login directory).
pub(crate) fn list_command(path: &[u8], mlsd: bool) -> Result<Command, ClientError> {
    let path_arg = if path.is_empty() {
        None
    } else {
        Some(arg(path, "path")?)
    };
    if mlsd {
        return Ok(Command::Mlsd(path_arg));
    }
    ListArgs::new("", path_arg)
        .map(Command::List)
        .map_err(|e| ClientError::Tree {
            why: format!(
                "cannot list \"{}\" with LIST: {e}",
                String::from_utf8_lossy(path)
            ),
        })
}

impl Session<ClientStream> {
    /// The entries of the directory `path` (empty: the login directory).
    pub(crate) fn list_dir(
        &mut self,
        path: &[u8],
        options: &Options,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Entry>, ClientError> {
        let mlsd = self.features.has("MLST");
        let command = list_command(path, mlsd)?;
        let data = self.listing_bytes(&command, path, options, observer)?;
        let (entries, errors) = entries::parse_listing(&data, mlsd);
        for error in errors {
            observer.warning(&format!(
                "skipped in \"{}\": {error}",
                String::from_utf8_lossy(path)
            ));
        }
        Ok(entries)
    }

    /// Sends `command` (`MLSD` or `LIST`) over a new data connection and
    /// returns what came, after the completion reply.
    fn listing_bytes(
        &mut self,
        command: &Command,
        path: &[u8],
        options: &Options,
        observer: &mut dyn Observer,
    ) -> Result<Vec<u8>, ClientError> {
        let request = BufferRequest::default();
        let plan = if options.active {
            data::open_active(&mut self.control, &self.features, &request, observer)?
        } else {
            data::open_passive(&mut self.control, &request, options, observer)?
        };
        let verb = command.verb();
        let early = self.begin(command, path, observer)?;
        let server = self.control.server();
        let (socket, peer) = plan
            .pending
            .establish(server, plan.mode, options.connect_timeout)?;
        let _ = socket.set_read_timeout(Some(options.idle_timeout));
        let _ = socket.set_write_timeout(Some(options.idle_timeout));
        let mut stream = self.secure_data(socket, peer)?;
        let mut bytes = Vec::new();
        let read = (&mut stream)
            .take(MAX_LISTING_BYTES + 1)
            .read_to_end(&mut bytes);
        if read.is_ok() && stream.is_tls() {
            let _ = stream.end();
        }
        match read {
            Ok(_) if bytes.len() as u64 > MAX_LISTING_BYTES => {
                return Err(ClientError::DataIo {
                    op: "read the listing (longer than 256 MiB)",
                    peer,
                    source: io::Error::from(io::ErrorKind::FileTooLarge),
                });
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {
                return Err(ClientError::DataTimeout {
                    peer,
                    verb,
                    path: String::from_utf8_lossy(path).into_owned(),
                    bytes: bytes.len() as u64,
                    timeout: options.idle_timeout,
                });
            }
            Err(source) => {
                return Err(ClientError::DataIo {
                    op: "read the listing",
                    peer,
                    source,
                });
            }
        }
        drop(stream);
        let reply = self.ending(verb, early, observer)?;
        if !reply.is_completion() {
            return Err(self.remote_error(verb, path, &reply));
        }
        Ok(bytes)
    }
}
