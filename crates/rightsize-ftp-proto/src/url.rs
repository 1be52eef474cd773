//! `ftp://` URLs as curl and globus-url-copy write them:
//! `ftp://[user[:password]@]host[:port]/path`, and `ftps://` for implicit
//! FTPS (RFC 4217 section 2 mentions it; curl and lftp write it so): TLS
//! from the first byte of the control connection, default port 990.
//!
//! Guarantees: [`FtpUrl::parse`] never panics; it returns a URL whose user,
//! password and path are percent-decoded bytes without CR, LF or NUL (so
//! each can go into one FTP command line), a host that is a DNS name, an
//! IPv4 address or a bracketed IPv6 literal, and a port in 1..=65535.
//! Every [`UrlError`] quotes the input (password replaced by `****`) and
//! shows the accepted form. No I/O: the host is not resolved here.
//!
//! Decisions a caller must know:
//! - Default port 21 (RFC 959); default login `anonymous` with password
//!   `anonymous@` (RFC 1635). A user given without a password gets an empty
//!   password, except `anonymous` and `ftp`, which get `anonymous@`.
//! - Path: the `/` after the host only separates it from the authority, so
//!   `ftp://h/a/b` names `a/b` relative to the login directory, as curl
//!   sends it. `ftp://h//abs/path` (globus-url-copy style) and
//!   `ftp://h/%2Fabs/path` (RFC 1738 style) name the absolute `/abs/path`.
//!   The whole path goes into one `RETR`/`STOR` argument: no `CWD` per
//!   component.
//! - `?` and `#` are refused rather than silently dropped: a file name with
//!   them must be written `%3F` / `%23`. A trailing `;type=i` (RFC 1738) is
//!   accepted and ignored, since transfers are always binary; `;type=a` and
//!   `;type=d` are refused.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The form every error message shows.
pub const ACCEPTED_FORM: &str = "ftp://[user[:password]@]host[:port]/path";
/// FTP's well-known control port (RFC 959 section 3.2, IANA).
pub const DEFAULT_FTP_PORT: u16 = 21;
/// Implicit FTPS's well-known control port (IANA `ftps`).
pub const DEFAULT_FTPS_PORT: u16 = 990;
/// The user sent when the URL names none (RFC 1635).
pub const ANONYMOUS_USER: &str = "anonymous";
/// The password sent for anonymous logins (RFC 1635 suggests an e-mail
/// address; curl sends `ftp@example.com`, ftplib `anonymous@`).
pub const ANONYMOUS_PASSWORD: &str = "anonymous@";

/// Why a URL was refused; see [`UrlError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    /// Not `ftp://` or `ftps://`.
    #[error("only ftp:// and ftps:// URLs are accepted")]
    Scheme,
    /// Nothing between `ftp://` and the path.
    #[error("no host after ftp://")]
    NoHost,
    /// A host that is neither a name, an IPv4 address nor `[IPv6]`.
    #[error("host \"{host}\" is not a host name, an IPv4 address or an [IPv6] literal")]
    BadHost {
        /// The host part, quoted.
        host: String,
    },
    /// A port that is not 1..=65535.
    #[error("port \"{port}\" is not a number 1-65535")]
    BadPort {
        /// The port part, quoted.
        port: String,
    },
    /// `%` not followed by two hex digits.
    #[error("\"%{found}\" is not a percent-encoded byte (%XX with two hex digits)")]
    BadPercent {
        /// Up to two characters after the `%`, quoted.
        found: String,
    },
    /// A decoded CR, LF or NUL would break the FTP command line.
    #[error("the {part} contains a CR, LF or NUL byte, which cannot be sent over FTP")]
    ControlByte {
        /// `user`, `password` or `path`.
        part: &'static str,
    },
    /// A query or fragment.
    #[error(
        "\"{found}\" is not allowed in an ftp:// URL; write it %3F or %23 if it is part of the name"
    )]
    QueryOrFragment {
        /// `?` or `#`.
        found: char,
    },
    /// `;type=a` or `;type=d`: only binary transfers are done.
    #[error("\";type={code}\" is not supported: transfers are always binary (;type=i)")]
    Type {
        /// The type code given.
        code: String,
    },
    /// A space or another character that must be percent-encoded.
    #[error("character {found:?} must be percent-encoded")]
    Unencoded {
        /// The character.
        found: char,
    },
}

/// A URL that cannot be used: the input (password hidden) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URL \"{input}\": {problem}, like {ACCEPTED_FORM}")]
pub struct UrlError {
    /// The input as given, with any password replaced by `****`, quoted.
    pub input: String,
    /// What is wrong with it.
    pub problem: UrlProblem,
}

/// The host part of a URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name, resolved by the caller.
    Name(String),
    /// A dotted-quad IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 literal, written `[...]` in the URL.
    Ipv6(Ipv6Addr),
}

impl fmt::Display for Host {
    /// The host as it appears in a URL (`[::1]` with brackets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ipv4(ip) => write!(f, "{ip}"),
            Host::Ipv6(ip) => write!(f, "[{ip}]"),
        }
    }
}

/// A parsed `ftp://` URL; see the module documentation.
#[derive(Clone, PartialEq, Eq)]
pub struct FtpUrl {
    host: Host,
    port: u16,
    user: Vec<u8>,
    password: Vec<u8>,
    path: Vec<u8>,
    /// The user as written (still percent-encoded), for display.
    raw_user: Option<String>,
    /// Whether a password was given (`user:password@`).
    password_given: bool,
    /// Everything from the `/` after the authority, as written.
    raw_path: String,
    /// `ftps://`: TLS from the first byte (implicit FTPS).
    implicit_tls: bool,
}

impl fmt::Debug for FtpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FtpUrl({self})")
    }
}

impl fmt::Display for FtpUrl {
    /// The URL with the password removed: `ftp://user@host:port/path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.implicit_tls {
            "ftps://"
        } else {
            "ftp://"
        })?;
        if let Some(user) = &self.raw_user {
            write!(f, "{user}@")?;
        }
        write!(f, "{}:{}{}", self.host, self.port, self.raw_path)
    }
}

impl FtpUrl {
    /// Parses `ftp://[user[:password]@]host[:port]/path`; see the module
    /// documentation for defaults and the path rule.
    pub fn parse(input: &str) -> Result<FtpUrl, UrlError> {
        parse(input).map_err(|problem| UrlError {
            input: redact(input),
            problem,
        })
    }

    /// The host to connect to.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The control port, 21 (990 for `ftps://`) unless the URL says
    /// otherwise.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the URL is `ftps://`: the control connection is TLS from
    /// its first byte (implicit FTPS).
    pub fn implicit_tls(&self) -> bool {
        self.implicit_tls
    }

    /// The user to log in as, decoded (`anonymous` by default).
    pub fn user(&self) -> &[u8] {
        &self.user
    }

    /// The password, decoded (`anonymous@` for anonymous logins).
    pub fn password(&self) -> &[u8] {
        &self.password
    }

    /// The path to send in `RETR`/`STOR`, decoded: relative to the login
    /// directory unless it starts with `/`. Empty for `ftp://host/`.
    pub fn path(&self) -> &[u8] {
        &self.path
    }

    /// The same server and login with another path (decoded, as
    /// [`FtpUrl::path`] returns it); bytes outside unreserved ASCII and
    /// `/` are percent-encoded in the displayed form.
    pub fn with_path(&self, path: &[u8]) -> FtpUrl {
        let mut raw_path = String::from("/");
        for &b in path {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                raw_path.push(char::from(b));
            } else {
                raw_path.push_str(&format!("%{b:02X}"));
            }
        }
        FtpUrl {
            path: path.to_vec(),
            raw_path,
            ..self.clone()
        }
    }

    /// Whether the URL names a user (`ftp://user@host/`).
    pub fn names_user(&self) -> bool {
        self.raw_user.is_some()
    }

    /// Whether the URL carries a password (`ftp://user:password@host/`).
    pub fn has_password(&self) -> bool {
        self.password_given
    }

    /// The same URL logging in as `user` with `password` (from `-u`, a
    /// `.netrc`, a prompt): shown as `ftp://user@host:port/path`, the
    /// password never.
    pub fn with_login(&self, user: &[u8], password: &[u8]) -> FtpUrl {
        let mut raw_user = String::new();
        for &b in user {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                raw_user.push(char::from(b));
            } else {
                raw_user.push_str(&format!("%{b:02X}"));
            }
        }
        FtpUrl {
            user: user.to_vec(),
            password: password.to_vec(),
            raw_user: Some(raw_user),
            password_given: true,
            ..self.clone()
        }
    }

    /// The path for messages (lossy UTF-8).
    pub fn path_display(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }

    /// The last path component, the default local file name; `None` when
    /// the path is empty, ends with `/`, or ends with `.` or `..`.
    pub fn file_name(&self) -> Option<&[u8]> {
        let last = self.path.rsplit(|b| *b == b'/').next()?;
        match last {
            b"" | b"." | b".." => None,
            name => Some(name),
        }
    }
}

fn parse(input: &str) -> Result<FtpUrl, UrlProblem> {
    let (rest, implicit_tls) = strip_scheme(input).ok_or(UrlProblem::Scheme)?;
    if let Some(found) = rest.chars().find(|c| *c == '?' || *c == '#') {
        return Err(UrlProblem::QueryOrFragment { found });
    }
    if let Some(found) = rest.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlProblem::Unencoded { found });
    }
    let (authority, raw_path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let default_port = if implicit_tls {
        DEFAULT_FTPS_PORT
    } else {
        DEFAULT_FTP_PORT
    };
    let (host, port) = split_host_port(hostport, default_port)?;

    let password_given = userinfo.is_some_and(|info| info.contains(':'));
    let (raw_user, user, password) = match userinfo {
        None => (
            None,
            ANONYMOUS_USER.as_bytes().to_vec(),
            ANONYMOUS_PASSWORD.as_bytes().to_vec(),
        ),
        Some(info) => {
            let (raw_user, raw_password) = match info.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (info, None),
            };
            let user = decode(raw_user, "user")?;
            let password = match raw_password {
                Some(p) => decode(p, "password")?,
                None if is_anonymous(&user) => ANONYMOUS_PASSWORD.as_bytes().to_vec(),
                None => Vec::new(),
            };
            let user = if user.is_empty() {
                ANONYMOUS_USER.as_bytes().to_vec()
            } else {
                user
            };
            (Some(raw_user.to_owned()), user, password)
        }
    };

    let raw_path = strip_type(raw_path)?;
    // The first `/` separates the path from the authority (RFC 1738 3.2.2).
    let path = decode(raw_path.strip_prefix('/').unwrap_or(raw_path), "path")?;
    Ok(FtpUrl {
        host,
        port,
        user,
        password,
        path,
        raw_user,
        password_given,
        raw_path: raw_path.to_owned(),
        implicit_tls,
    })
}

/// What follows `ftp://` or `ftps://`, and whether it was `ftps://`.
fn strip_scheme(input: &str) -> Option<(&str, bool)> {
    for (scheme, tls) in [("ftp://", false), ("ftps://", true)] {
        let head = input.get(..scheme.len());
        if head.is_some_and(|h| h.eq_ignore_ascii_case(scheme)) {
            return Some((input.get(scheme.len()..)?, tls));
        }
    }
    None
}

fn is_anonymous(user: &[u8]) -> bool {
    user.is_empty() || user.eq_ignore_ascii_case(b"anonymous") || user.eq_ignore_ascii_case(b"ftp")
}

fn split_host_port(hostport: &str, default_port: u16) -> Result<(Host, u16), UrlProblem> {
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let Some((literal, after)) = v6.split_once(']') else {
            return Err(bad_host(hostport));
        };
        let ip: Ipv6Addr = literal.parse().map_err(|_| bad_host(hostport))?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(|| bad_host(hostport))?),
        };
        (Host::Ipv6(ip), port)
    } else {
        let (name, port) = match hostport.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (hostport, None),
        };
        if name.is_empty() {
            return Err(UrlProblem::NoHost);
        }
        (parse_host_name(name)?, port)
    };
    let port = match port {
        None | Some("") => default_port,
        Some(p) => parse_port(p)?,
    };
    Ok((host, port))
}

fn parse_host_name(name: &str) -> Result<Host, UrlProblem> {
    if let Ok(ip) = name.parse::<Ipv4Addr>() {
        return Ok(Host::Ipv4(ip));
    }
    // A fully qualified name may end with one dot.
    let labels = name.strip_suffix('.').unwrap_or(name);
    let valid = labels.len() <= 253
        && labels.split('.').all(valid_label)
        // All-digit dotted names that are not IPv4 addresses (`1.2.3.999`).
        && !labels.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if valid {
        Ok(Host::Name(name.to_ascii_lowercase()))
    } else {
        Err(bad_host(name))
    }
}

fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

fn bad_host(host: &str) -> UrlProblem {
    UrlProblem::BadHost {
        host: host.escape_debug().to_string(),
    }
}

fn parse_port(port: &str) -> Result<u16, UrlProblem> {
    let bad = || UrlProblem::BadPort {
        port: port.escape_debug().to_string(),
    };
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(p) => Ok(p),
    }
}

/// Strips a trailing RFC 1738 `;type=i`; refuses other type codes.
fn strip_type(path: &str) -> Result<&str, UrlProblem> {
    let Some(semi) = path.rfind(';') else {
        return Ok(path);
    };
    let suffix = &path[semi + 1..];
    match suffix.get(..5) {
        Some(key) if key.eq_ignore_ascii_case("type=") => {
            let code = &suffix[5..];
            if code.eq_ignore_ascii_case("i") {
                Ok(&path[..semi])
            } else {
                Err(UrlProblem::Type {
                    code: code.escape_debug().to_string(),
                })
            }
        }
        _ => Ok(path),
    }
}

/// Percent-decodes `part` (RFC 3986 2.1), refusing malformed escapes and
/// decoded CR, LF or NUL.
fn decode(part: &str, name: &'static str) -> Result<Vec<u8>, UrlProblem> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            let value = hex
                .and_then(|h| std::str::from_utf8(h).ok())
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(value) = value else {
                let found: String = part[i + 1..].chars().take(2).collect();
                return Err(UrlProblem::BadPercent {
                    found: found.escape_debug().to_string(),
                });
            };
            out.push(value);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    if out.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        return Err(UrlProblem::ControlByte { part: name });
    }
    Ok(out)
}

/// The input for an error message: the password (between the first `:`
/// of the userinfo and its last `@`) replaced by `****`, quoted.
fn redact(input: &str) -> String {
    let shown = match input.find("://") {
        Some(scheme_end) => {
            let after = &input[scheme_end + 3..];
            let authority_end = after.find('/').unwrap_or(after.len());
            let authority = &after[..authority_end];
            match authority.rfind('@').and_then(|at| {
                let colon = authority[..at].find(':')?;
                Some((colon, at))
            }) {
                Some((colon, at)) => format!(
                    "{}{}****{}",
                    &input[..scheme_end + 3],
                    &authority[..=colon],
                    &after[at..]
                ),
                None => input.to_owned(),
            }
        }
        None => input.to_owned(),
    };
    shown.escape_debug().to_string()
}

#[cfg(test)]
mod tests;
