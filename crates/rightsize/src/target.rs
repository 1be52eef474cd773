//! The server argument of `ping`, `test` and `doctor`: `HOST[:PORT]`
//! (`[::1]:2121` for IPv6) or a whole `ftp://[user[:password]@]host[:port]/`
//! URL for a login other than anonymous. The port is 21 unless given, as in
//! `ftp://` URLs.

use rightsize_ftp_proto::url::FtpUrl;

/// Reads a server argument; an error quotes it and shows the accepted forms.
pub fn parse_target(input: &str) -> Result<FtpUrl, String> {
    let accepted = "give HOST, HOST:PORT, [IPv6]:PORT or ftp://[user[:password]@]host[:port]/";
    if input.contains("://") {
        return FtpUrl::parse(input).map_err(|e| format!("{e}; {accepted}"));
    }
    if input.is_empty() || input.contains(['/', '@', '?', '#']) {
        return Err(format!("server \"{input}\" is not HOST[:PORT]; {accepted}"));
    }
    FtpUrl::parse(&format!("ftp://{input}/")).map_err(|e| {
        format!(
            "server \"{input}\" is not HOST[:PORT] ({}); {accepted}",
            e.problem
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn host_port_and_urls() {
        let t = parse_target("127.0.0.1:2121").unwrap();
        assert_eq!(t.port(), 2121);
        assert_eq!(t.user(), b"anonymous");
        assert_eq!(parse_target("right").unwrap().port(), 21);
        assert_eq!(parse_target("[::1]:2121").unwrap().port(), 2121);
        let u = parse_target("ftp://bob:pw@host:2121/").unwrap();
        assert_eq!(u.user(), b"bob");
    }

    #[test]
    fn bad_servers_are_quoted() {
        for bad in ["", "host:0", "host:99999", "host/x", "a@b", "host:port"] {
            let err = parse_target(bad).unwrap_err();
            assert!(err.contains(&format!("\"{bad}\"")), "{bad}: {err}");
        }
    }
}
