//! The replies a command's handling answers with, as outputs.

use super::Output;
use crate::Reply;

/// A one-line reply.
pub(super) fn reply(code: u16, text: &str) -> Vec<Output> {
    vec![Output::Reply(Reply::trusted(code, text.to_owned()))]
}

/// A multi-line reply (a last line `End` if the lines cannot make one).
pub(super) fn multiline(code: u16, lines: Vec<String>) -> Vec<Output> {
    let reply =
        Reply::multiline(code, lines).unwrap_or_else(|_| Reply::trusted(code, "End".into()));
    vec![Output::Reply(reply)]
}
