//! The control connection: send a [`Command`], read the [`Reply`], and
//! the greeting and login sequence (RFC 959 sections 4.1.1, 5.4 and 6).
//!
//! Guarantees: every read waits at most the stream's timeout and turns it
//! into [`ClientError::ReplyTimeout`]; a closed connection or a malformed
//! reply is an error naming the command waited on, never a hang or a panic.
//! Generic over the stream so that the sequencing is tested against
//! scripted servers without sockets.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use std::collections::VecDeque;

use rightsize_ftp_proto::notice::NOTICE_PREFIX;
use rightsize_ftp_proto::{
    Arg, ArgError, Command, NoticeError, PeerMessage, Reply, ReplyParseError, ReplyParser,
};

use super::Observer;
use super::error::ClientError;

/// Bytes read from the control connection at a time.
const READ_CHUNK_BYTES: usize = 4096;

/// One control connection; see the module documentation.
#[derive(Debug)]
pub(crate) struct Control<S> {
    stream: S,
    input: Input,
    server: SocketAddr,
    timeout: Duration,
}

/// What has been read from the server and not yet handed out.
#[derive(Debug, Default)]
pub(crate) struct Input {
    parser: ReplyParser,
    /// Bytes read but not yet given to the parser.
    unread: Vec<u8>,
    /// Replies read ahead (during a transfer) and not yet handed out.
    pub(crate) pending: VecDeque<Reply>,
    /// Whether notices of the RIGHTSIZE extension may come (it is on).
    pub(crate) notices: bool,
}

/// One thing read from the server.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A reply.
    Reply(Reply),
    /// A RIGHTSIZE notice, or why a notice line was malformed.
    Notice(Result<PeerMessage, NoticeError>),
}

impl Input {
    /// The next complete reply or notice in what was read, without I/O.
    /// A notice is a line that starts with `RIGHTSIZE ` between replies;
    /// while a line could still become one, it waits for its end.
    pub(crate) fn next(&mut self) -> Option<Result<Incoming, ReplyParseError>> {
        if self.unread.is_empty() {
            return None;
        }
        if self.notices && self.parser.is_idle() && could_be_notice(&self.unread) {
            let end = self.unread.iter().position(|&b| b == b'\n')?;
            let line: Vec<u8> = self.unread.drain(..=end).collect();
            return match PeerMessage::parse(&line) {
                Ok(Some(message)) => Some(Ok(Incoming::Notice(Ok(message)))),
                Err(e) => Some(Ok(Incoming::Notice(Err(e)))),
                // Cannot happen (the prefix matched); give it to the parser.
                Ok(None) => {
                    self.unread.splice(..0, line);
                    self.parse()
                }
            };
        }
        self.parse()
    }

    fn parse(&mut self) -> Option<Result<Incoming, ReplyParseError>> {
        let progress = self.parser.push(&self.unread);
        self.unread
            .drain(..progress.consumed.min(self.unread.len()));
        progress.output.map(|r| r.map(Incoming::Reply))
    }

    /// Whether nothing read is left to hand out.
    pub(crate) fn is_drained(&self) -> bool {
        self.unread.is_empty() && self.pending.is_empty()
    }

    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.unread.extend_from_slice(bytes);
    }
}

/// Whether `bytes` start with the notice prefix, or with a part of it.
fn could_be_notice(bytes: &[u8]) -> bool {
    let prefix = NOTICE_PREFIX.as_bytes();
    let n = bytes.len().min(prefix.len());
    bytes[..n].eq_ignore_ascii_case(&prefix[..n])
}

impl<S: Read + Write> Control<S> {
    /// Wraps `stream`, connected to `server`, whose read timeout is
    /// `timeout` (used only in messages here).
    pub(crate) fn new(stream: S, server: SocketAddr, timeout: Duration) -> Control<S> {
        Control {
            stream,
            input: Input::default(),
            server,
            timeout,
        }
    }

    /// The server's address.
    pub(crate) fn server(&self) -> SocketAddr {
        self.server
    }

    /// The underlying stream.
    pub(crate) fn stream(&self) -> &S {
        &self.stream
    }

    /// Puts `stream` in place of the stream (the same connection, now
    /// under TLS).
    pub(crate) fn replace_stream(&mut self, stream: S) {
        self.stream = stream;
    }

    /// Sends `command`.
    pub(crate) fn send(
        &mut self,
        command: &Command,
        observer: &mut dyn Observer,
    ) -> Result<(), ClientError> {
        observer.protocol(&format!("> {command}"));
        self.stream
            .write_all(&command.encode())
            .and_then(|()| self.stream.flush())
            .map_err(|source| ClientError::ControlIo {
                op: format!("send {}", command.verb()),
                server: self.server,
                source,
            })
    }

    /// What was read and not handed out, to move to a reader thread during
    /// a transfer and back.
    pub(crate) fn input(&mut self) -> &mut Input {
        &mut self.input
    }

    /// Reads the next reply; `op` names what it answers, for errors.
    /// Notices (after the transfer they belonged to) are shown and skipped.
    pub(crate) fn reply(
        &mut self,
        op: &str,
        observer: &mut dyn Observer,
    ) -> Result<Reply, ClientError> {
        if let Some(reply) = self.input.pending.pop_front() {
            observer.protocol(&format!("< {reply}"));
            return Ok(reply);
        }
        loop {
            match self.input.next() {
                Some(Ok(Incoming::Reply(reply))) => {
                    observer.protocol(&format!("< {reply}"));
                    return Ok(reply);
                }
                Some(Ok(Incoming::Notice(notice))) => {
                    observer.protocol(&format!("< notice (late): {notice:?}"));
                    continue;
                }
                Some(Err(source)) => {
                    return Err(ClientError::BadReply {
                        op: op.to_owned(),
                        server: self.server,
                        source,
                    });
                }
                None => {}
            }
            let mut chunk = [0u8; READ_CHUNK_BYTES];
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(ClientError::Closed {
                        op: op.to_owned(),
                        server: self.server,
                    });
                }
                Ok(n) => self.input.extend(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => {
                    return Err(ClientError::ReplyTimeout {
                        op: op.to_owned(),
                        server: self.server,
                        timeout: self.timeout,
                    });
                }
                Err(source) => {
                    return Err(ClientError::ControlIo {
                        op: format!("read the reply to {op}"),
                        server: self.server,
                        source,
                    });
                }
            }
        }
    }

    /// Sends `command` and reads its reply.
    pub(crate) fn command(
        &mut self,
        command: &Command,
        observer: &mut dyn Observer,
    ) -> Result<Reply, ClientError> {
        self.send(command, observer)?;
        self.reply(command.verb(), observer)
    }

    /// Sends `command` and requires a 2yz reply.
    pub(crate) fn expect_completion(
        &mut self,
        command: &Command,
        observer: &mut dyn Observer,
    ) -> Result<Reply, ClientError> {
        let reply = self.command(command, observer)?;
        if reply.is_completion() {
            Ok(reply)
        } else {
            Err(self.refused(command, &reply))
        }
    }

    /// The error for a refused `command`.
    pub(crate) fn refused(&self, command: &Command, reply: &Reply) -> ClientError {
        ClientError::Refused {
            server: self.server,
            command: command.to_string(),
            reply: reply.to_string(),
        }
    }
}

/// Whether an I/O error is a socket timeout (`EAGAIN` from `SO_RCVTIMEO`).
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Wraps `bytes` as a command argument; `what` names it for the error.
pub(crate) fn arg(bytes: &[u8], what: &'static str) -> Result<Arg, ClientError> {
    Arg::new(bytes).map_err(|source: ArgError| ClientError::Argument { what, source })
}

/// Reads the greeting: `220`, possibly after `120` (RFC 959 5.4).
pub(crate) fn greeting<S: Read + Write>(
    control: &mut Control<S>,
    observer: &mut dyn Observer,
) -> Result<Reply, ClientError> {
    loop {
        let reply = control.reply("the greeting", observer)?;
        match reply.code() {
            120 => continue,
            220 => return Ok(reply),
            _ => {
                return Err(ClientError::Unexpected {
                    server: control.server(),
                    command: "the connection".to_owned(),
                    reply: reply.to_string(),
                    problem: "expected the 220 greeting".to_owned(),
                });
            }
        }
    }
}

/// Logs in with `USER` and, unless the server is satisfied with the user
/// alone (`230` at once, as vsftpd does for anonymous), `PASS`.
pub(crate) fn login<S: Read + Write>(
    control: &mut Control<S>,
    user: &[u8],
    password: &[u8],
    observer: &mut dyn Observer,
) -> Result<(), ClientError> {
    let user_name = String::from_utf8_lossy(user).into_owned();
    let refused = |control: &Control<S>, reply: &Reply| ClientError::LoginRefused {
        server: control.server(),
        user: user_name.clone(),
        reply: reply.to_string(),
    };
    let reply = control.command(&Command::User(arg(user, "user name")?), observer)?;
    match reply.code() {
        230 | 202 => return Ok(()),
        331 => {}
        _ => return Err(refused(control, &reply)),
    }
    let password = match password {
        [] => None,
        bytes => Some(arg(bytes, "password")?),
    };
    let reply = control.command(&Command::Pass(password), observer)?;
    match reply.code() {
        230 | 202 => Ok(()),
        _ => Err(refused(control, &reply)),
    }
}

#[cfg(test)]
mod tests;
