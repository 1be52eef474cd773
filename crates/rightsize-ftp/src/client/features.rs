//! What a server offers, read from its greeting and its `FEAT` reply
//! (RFC 2389 section 3), and the client's choices that follow: which
//! checksum to ask for, whether to send `SBUF`, `EPRT` or `PORT`.
//!
//! Guarantees: pure functions of the reply text; a server that refuses
//! `FEAT` (500/502) or answers nonsense offers nothing, so the client then
//! uses only RFC 959 commands plus the `EPSV`-then-`PASV` probe. The one
//! exception, measured on globus-gridftp-server 13.24: a greeting with
//! `GridFTP Server` means `SBUF` (GFD.20) and `CKSM MD5` work even where
//! `FEAT` does not list them (it never lists `SBUF`).

use rightsize_ftp_proto::Reply;
use rightsize_ftp_proto::checksum::Algorithm;
use rightsize_ftp_proto::rightsize::{EXTENSION, RightsizeFeature};

/// `FEAT` success (RFC 2389 3.2).
const FEAT_REPLY_CODE: u16 = 211;
/// What the Globus server's `220` greeting contains.
const GRIDFTP_GREETING: &str = "GridFTP Server";

/// The features a server advertised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// Feature lines without the leading space, e.g. `REST STREAM`.
    lines: Vec<String>,
    /// The greeting says Globus GridFTP.
    gridftp: bool,
}

impl Features {
    /// Reads the `220` greeting and the reply to `FEAT` (`None` if it was
    /// not sent). Anything but a `211` offers nothing.
    pub fn new(greeting: &Reply, feat: Option<&Reply>) -> Features {
        let gridftp = greeting.text().contains(GRIDFTP_GREETING);
        let lines = match feat {
            Some(reply) if reply.code() == FEAT_REPLY_CODE && reply.lines().len() > 2 => reply
                .lines()
                .iter()
                .skip(1)
                .take(reply.lines().len() - 2)
                .map(|l| l.trim().to_owned())
                .filter(|l| !l.is_empty())
                .collect(),
            _ => Vec::new(),
        };
        Features { lines, gridftp }
    }

    /// The feature lines, without the leading space.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }

    /// Whether feature `name` (`SIZE`, `EPRT`, ...) is listed, by its first
    /// word, case-insensitively.
    pub fn has(&self, name: &str) -> bool {
        self.line(name).is_some()
    }

    fn line(&self, name: &str) -> Option<&str> {
        self.lines.iter().map(String::as_str).find(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.eq_ignore_ascii_case(name))
        })
    }

    /// The greeting named the Globus GridFTP server.
    pub fn is_gridftp(&self) -> bool {
        self.gridftp
    }

    /// The checksum algorithms listed after `CKSM`: both
    /// `CKSM SHA256,MD5,ADLER32` and Globus's
    /// `CKSM MD5:10;ADLER32:10;SHA1:10;SHA256:11;` forms.
    pub fn checksum_names(&self) -> Vec<&str> {
        let Some(line) = self.line("CKSM") else {
            return Vec::new();
        };
        line.split_whitespace()
            .skip(1)
            .flat_map(|list| list.split([',', ';']))
            .map(|item| item.split(':').next().unwrap_or(item).trim())
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// The checksum `--verify` uses: the strongest listed (SHA256, MD5,
    /// ADLER32), else MD5 for a GridFTP server, else none.
    pub fn checksum(&self) -> Option<Algorithm> {
        Algorithm::strongest(self.checksum_names())
            .or_else(|| self.gridftp.then_some(Algorithm::Md5))
    }

    /// Whether `SBUF` may be sent: listed, or a GridFTP server.
    pub fn sbuf(&self) -> bool {
        self.has("SBUF") || self.gridftp
    }

    /// The RIGHTSIZE extension, if offered.
    pub fn rightsize(&self) -> Option<RightsizeFeature> {
        self.line(EXTENSION).and_then(RightsizeFeature::parse)
    }

    /// Whether active mode should use `EPRT` rather than `PORT` on an IPv4
    /// control connection (IPv6 always needs `EPRT`).
    pub fn eprt(&self) -> bool {
        self.has("EPRT")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rightsize_ftp_proto::ReplyParser;

    fn reply(wire: &str) -> Reply {
        let mut parser = ReplyParser::new();
        let mut replies: Vec<_> = parser.feed(wire.as_bytes()).collect();
        assert_eq!(replies.len(), 1, "{wire:?}");
        replies.pop().unwrap().unwrap()
    }

    /// Verbatim from globus-gridftp-server 13.24.
    const GLOBUS_GREETING: &str =
        "220 vm GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.\r\n";
    const GLOBUS_FEAT: &str = "211-Extensions supported\r\n CKSM MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;\r\n DSI file-13.24\r\n PARALLEL\r\n SIZE\r\n REST STREAM\r\n PASV AllowDelayed;\r\n211 End.\r\n";
    /// Verbatim from vsftpd 3.0.3.
    const VSFTPD_FEAT: &str = "211-Features:\r\n EPRT\r\n EPSV\r\n MDTM\r\n PASV\r\n REST STREAM\r\n SIZE\r\n TVFS\r\n211 End\r\n";

    #[test]
    fn globus_lists_checksums_with_priorities_and_gets_sbuf_from_its_greeting() {
        let f = Features::new(&reply(GLOBUS_GREETING), Some(&reply(GLOBUS_FEAT)));
        assert_eq!(
            f.checksum_names(),
            ["MD5", "ADLER32", "SHA1", "SHA256", "SHA512"]
        );
        assert_eq!(f.checksum(), Some(Algorithm::Sha256));
        assert!(f.sbuf());
        assert!(f.is_gridftp());
        assert!(f.has("size") && f.has("REST") && !f.eprt());
    }

    #[test]
    fn a_plain_cksm_list_picks_the_strongest() {
        let feat = reply("211-Features:\r\n CKSM ADLER32,MD5\r\n SBUF\r\n211 End\r\n");
        let f = Features::new(&reply("220 rightsize ready\r\n"), Some(&feat));
        assert_eq!(f.checksum(), Some(Algorithm::Md5));
        assert!(f.sbuf());
    }

    #[test]
    fn vsftpd_offers_no_checksum_and_no_sbuf() {
        let f = Features::new(&reply("220 (vsFTPd 3.0.3)\r\n"), Some(&reply(VSFTPD_FEAT)));
        assert_eq!(f.checksum(), None);
        assert!(!f.sbuf());
        assert!(f.eprt() && f.has("SIZE"));
        // "PASV" is a feature line here; "PAS" is not a prefix match.
        assert!(!f.has("PAS"));
    }

    #[test]
    fn a_refused_feat_offers_nothing() {
        let greeting = reply("220 old server\r\n");
        for feat in [
            "500 Unknown command.\r\n",
            "502 Not implemented\r\n",
            "211 No features\r\n",
        ] {
            let f = Features::new(&greeting, Some(&reply(feat)));
            assert_eq!(f, Features::default(), "{feat}");
        }
        assert_eq!(Features::new(&greeting, None), Features::default());
    }
}
