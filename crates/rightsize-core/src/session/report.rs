//! What a rightsize server tells its client about the server's end of a
//! data connection: the socket's buffers at the end of the transfer, in the
//! free text of the `226` (RFC 959 leaves the text to the server, so other
//! clients read it as the usual "Transfer complete"). A rightsize client
//! parses it back for its `--json` summary.

use crate::ftp::Reply;

/// The server's data socket buffers, read back at the end of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DataSocketBuffers {
    /// `SO_RCVBUF` as the kernel reported it, bytes.
    pub rcvbuf_bytes: u64,
    /// `SO_SNDBUF` as the kernel reported it, bytes.
    pub sndbuf_bytes: u64,
}

const MARK_RCV: &str = "rcvbuf=";
const MARK_SND: &str = "sndbuf=";

impl DataSocketBuffers {
    /// The `226` that carries them.
    pub fn completion_reply(self) -> Reply {
        Reply::trusted(
            226,
            format!(
                "Transfer complete; data socket {MARK_RCV}{} {MARK_SND}{}.",
                self.rcvbuf_bytes, self.sndbuf_bytes
            ),
        )
    }

    /// Reads them back from a `226` text; `None` from other servers.
    pub fn from_reply_text(text: &str) -> Option<DataSocketBuffers> {
        let number = |mark: &str| -> Option<u64> {
            let rest = &text[text.find(mark)? + mark.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        Some(DataSocketBuffers {
            rcvbuf_bytes: number(MARK_RCV)?,
            sndbuf_bytes: number(MARK_SND)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_through_the_226_text() {
        let b = DataSocketBuffers {
            rcvbuf_bytes: 2_097_152,
            sndbuf_bytes: 4_194_304,
        };
        let reply = b.completion_reply();
        assert_eq!(reply.code(), 226);
        assert_eq!(
            reply.text(),
            "Transfer complete; data socket rcvbuf=2097152 sndbuf=4194304."
        );
        assert_eq!(DataSocketBuffers::from_reply_text(&reply.text()), Some(b));
        assert_eq!(
            DataSocketBuffers::from_reply_text("Transfer complete."),
            None
        );
        assert_eq!(
            DataSocketBuffers::from_reply_text("rcvbuf=x sndbuf=1"),
            None
        );
    }
}
