//! What a rightsize server tells its client about the server's end of a
//! data connection: the socket's buffers at the end of the transfer, in the
//! free text of the `226` (RFC 959 leaves the text to the server, so other
//! clients read it as the usual "Transfer complete"). A rightsize client
//! parses it back for its `--json` summary.

use crate::Reply;
use rightsize_tune::diagnose::tcp::TcpSummary;

/// The server's data socket buffers, read back at the end of a transfer,
/// their peaks over it, and the tuner that sized them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DataSocketBuffers {
    /// `SO_RCVBUF` as the kernel reported it, bytes.
    pub rcvbuf_bytes: u64,
    /// `SO_SNDBUF` as the kernel reported it, bytes.
    pub sndbuf_bytes: u64,
    /// The largest `SO_RCVBUF` read back during the transfer, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rcvbuf_bytes: Option<u64>,
    /// The largest `SO_SNDBUF` read back during the transfer, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_sndbuf_bytes: Option<u64>,
    /// The server's tuner for the connection (`--tune`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tune: Option<String>,
}

const MARK_RCV: &str = "rcvbuf=";
const MARK_SND: &str = "sndbuf=";
const MARK_PEAK_RCV: &str = "peak_rcvbuf=";
const MARK_PEAK_SND: &str = "peak_sndbuf=";
const MARK_TUNE: &str = "tune=";

impl DataSocketBuffers {
    /// The `226` that carries them.
    pub fn completion_reply(&self) -> Reply {
        self.completion_reply_with(None)
    }

    /// The `226` that carries them and, if given, the data socket's final
    /// `TCP_INFO` summary as a `tcpi=` word (`diagnose::tcp`).
    pub fn completion_reply_with(&self, tcp: Option<&TcpSummary>) -> Reply {
        let mut text = format!(
            "Transfer complete; data socket {MARK_RCV}{} {MARK_SND}{}",
            self.rcvbuf_bytes, self.sndbuf_bytes
        );
        if let Some(peak) = self.peak_rcvbuf_bytes {
            text.push_str(&format!(" {MARK_PEAK_RCV}{peak}"));
        }
        if let Some(peak) = self.peak_sndbuf_bytes {
            text.push_str(&format!(" {MARK_PEAK_SND}{peak}"));
        }
        // Tuner names are ASCII letters, digits and `:=,._-` (their specs).
        if let Some(tune) = self.tune.as_ref().filter(|t| {
            t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b":=,._-".contains(&b))
        }) {
            text.push_str(&format!(" {MARK_TUNE}{tune}"));
        }
        if let Some(tcp) = tcp {
            text.push(' ');
            text.push_str(&tcp.reply_word());
        }
        text.push('.');
        Reply::trusted(226, text)
    }

    /// Reads them back from a `226` text; `None` from other servers.
    pub fn from_reply_text(text: &str) -> Option<DataSocketBuffers> {
        // A mark counts only at the start of a word: `rcvbuf=` is also the
        // tail of `peak_rcvbuf=`.
        let value = |mark: &str| -> Option<&str> {
            let at = text
                .match_indices(mark)
                .find(|(i, _)| *i == 0 || text.as_bytes()[i - 1] == b' ')?
                .0;
            let rest = &text[at + mark.len()..];
            let end = rest.find([' ']).unwrap_or(rest.len());
            Some(rest[..end].trim_end_matches('.'))
        };
        let number = |mark: &str| -> Option<u64> {
            let v = value(mark)?;
            let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        Some(DataSocketBuffers {
            rcvbuf_bytes: number(MARK_RCV)?,
            sndbuf_bytes: number(MARK_SND)?,
            peak_rcvbuf_bytes: number(MARK_PEAK_RCV),
            peak_sndbuf_bytes: number(MARK_PEAK_SND),
            tune: value(MARK_TUNE)
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
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
            peak_rcvbuf_bytes: None,
            peak_sndbuf_bytes: None,
            tune: None,
        };
        let reply = b.completion_reply();
        assert_eq!(reply.code(), 226);
        assert_eq!(
            reply.text(),
            "Transfer complete; data socket rcvbuf=2097152 sndbuf=4194304."
        );
        assert_eq!(
            DataSocketBuffers::from_reply_text(&reply.text()),
            Some(b.clone())
        );
        let tuned = DataSocketBuffers {
            peak_rcvbuf_bytes: Some(5_000_000),
            peak_sndbuf_bytes: Some(8_388_608),
            tune: Some("static:16MiB".into()),
            ..b
        };
        let reply = tuned.completion_reply();
        assert_eq!(
            reply.text(),
            "Transfer complete; data socket rcvbuf=2097152 sndbuf=4194304 peak_rcvbuf=5000000 peak_sndbuf=8388608 tune=static:16MiB."
        );
        assert_eq!(
            DataSocketBuffers::from_reply_text(&reply.text()),
            Some(tuned)
        );
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
