//! Where `get` and `put` find the login, as curl and lftp users expect:
//! the URL (`ftp://user:password@host/`), `-u USER[:PASSWORD]`, a
//! `.netrc` (`--netrc`, `--netrc-file`), `RIGHTSIZE_PASSWORD`,
//! `--password-file`, or a prompt on a terminal. Glue: reads the files,
//! the environment and the terminal; the `.netrc` is parsed by
//! `rightsize_ftp_proto::netrc`.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use rightsize_ftp_proto::netrc::Netrc;
use rightsize_ftp_proto::url::FtpUrl;

/// The environment variable that holds a password.
pub const PASSWORD_ENV: &str = "RIGHTSIZE_PASSWORD";

/// How `get` and `put` log in, when the URL does not say it all.
#[derive(Debug, Clone, Default, Args)]
pub struct LoginArgs {
    /// Log in as USER. Without ":PASSWORD" (which shows in ps and the
    /// shell's history) the password comes from RIGHTSIZE_PASSWORD,
    /// --password-file or the .netrc, else from a prompt on the terminal.
    /// Not with a user in the URL
    #[arg(short = 'u', long = "user", value_name = "USER[:PASSWORD]")]
    pub user: Option<String>,

    /// Read the password from the first line of FILE (which others should not be able to read)
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,

    /// Take the login from ~/.netrc ($NETRC if set) when neither the URL nor -u gives one
    /// (`machine HOST login USER password SECRET`, as curl --netrc and ftp read it)
    #[arg(long, conflicts_with = "netrc_file")]
    pub netrc: bool,

    /// As --netrc, from FILE
    #[arg(long, value_name = "FILE")]
    pub netrc_file: Option<PathBuf>,
}

/// Where a password may come from, in the order they are tried after
/// the URL and `-u USER:PASSWORD`.
#[derive(Debug, Default)]
pub struct Sources {
    /// `RIGHTSIZE_PASSWORD`.
    pub env: Option<String>,
    /// The first line of `--password-file`.
    pub file: Option<String>,
    /// The `.netrc`, read.
    pub netrc: Option<Netrc>,
}

/// What a password is needed for, when none was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The URL named the user without a password: log in with an empty
    /// one, as before (a server that wants one refuses the login).
    Empty,
    /// `-u USER` or the `.netrc` named the user: ask on the terminal, or
    /// fail saying where a password may come from.
    Ask,
}

/// The login chosen: the user, its password if found, and what to do if
/// none was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The user.
    pub user: Vec<u8>,
    /// Its password, if one was found.
    pub password: Option<Vec<u8>>,
    /// What to do without one.
    pub missing: Missing,
}

/// The login to use, `None` to keep the URL's (a password in it, or
/// anonymous): pure, from the URL, `-u` and the sources.
pub fn choose(
    url: &FtpUrl,
    user_arg: Option<&str>,
    sources: &Sources,
) -> anyhow::Result<Option<Login>> {
    if url.names_user() && user_arg.is_some() {
        bail!("the URL {url} names a user, and so does -u: give the user once");
    }
    let host = url.host().to_string();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let entry = sources.netrc.as_ref().and_then(|n| n.find(host));
    let (user, given, missing) = if url.names_user() {
        if url.has_password() {
            return Ok(None);
        }
        (url.user().to_vec(), None, Missing::Empty)
    } else if let Some(arg) = user_arg {
        let (user, password) = match arg.split_once(':') {
            Some((u, p)) => (u, Some(p.as_bytes().to_vec())),
            None => (arg, None),
        };
        if user.is_empty() {
            bail!("-u \"{arg}\" names no user; give -u USER or -u USER:PASSWORD");
        }
        (user.as_bytes().to_vec(), password, Missing::Ask)
    } else {
        match entry.and_then(|e| e.login.as_ref()) {
            Some(login) => (login.as_bytes().to_vec(), None, Missing::Ask),
            // Nobody named a user: anonymous, as the URL says.
            None => return Ok(None),
        }
    };
    let from_netrc = entry
        .filter(|e| e.login.as_deref().is_none_or(|l| l.as_bytes() == user))
        .and_then(|e| e.password.clone());
    let password = given
        .or_else(|| sources.env.clone().map(String::into_bytes))
        .or_else(|| sources.file.clone().map(String::into_bytes))
        .or_else(|| from_netrc.map(String::into_bytes));
    Ok(Some(Login {
        user,
        password,
        missing,
    }))
}

/// The URL to use: `url` with the login found for it.
pub fn resolve(url: &FtpUrl, args: &LoginArgs) -> anyhow::Result<FtpUrl> {
    let sources = Sources {
        env: std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()),
        file: args
            .password_file
            .as_deref()
            .map(read_password_file)
            .transpose()?,
        netrc: netrc_path(args).map(|p| read_netrc(&p)).transpose()?,
    };
    let Some(login) = choose(url, args.user.as_deref(), &sources)? else {
        return Ok(url.clone());
    };
    let password = match (login.password, login.missing) {
        (Some(p), _) => p,
        (None, Missing::Empty) => Vec::new(),
        (None, Missing::Ask) => ask(url, &login.user)?,
    };
    Ok(url.with_login(&login.user, &password))
}

/// The `.netrc` to read, if one was asked for.
fn netrc_path(args: &LoginArgs) -> Option<PathBuf> {
    if let Some(file) = &args.netrc_file {
        return Some(file.clone());
    }
    if !args.netrc {
        return None;
    }
    std::env::var_os("NETRC")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".netrc")))
}

fn read_netrc(path: &Path) -> anyhow::Result<Netrc> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the .netrc {}", path.display()))?;
    Netrc::parse(&text).with_context(|| format!("{} is not a .netrc", path.display()))
}

fn read_password_file(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading --password-file {}", path.display()))?;
    let first = text.lines().next().unwrap_or_default();
    if first.is_empty() {
        bail!(
            "--password-file {}: its first line is empty; put the password on it",
            path.display()
        );
    }
    Ok(first.to_owned())
}

/// Asks for the password on the terminal, without echo.
fn ask(url: &FtpUrl, user: &[u8]) -> anyhow::Result<Vec<u8>> {
    let user = String::from_utf8_lossy(user);
    if !std::io::stdin().is_terminal() {
        bail!(
            "no password for {user} on {}: give it in {PASSWORD_ENV}, with --password-file FILE, in a .netrc (--netrc), or run on a terminal to be asked",
            url.host()
        );
    }
    let password = rpassword::prompt_password(format!("password for {user} on {}: ", url.host()))
        .context("reading the password from the terminal")?;
    Ok(password.into_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn url(s: &str) -> FtpUrl {
        FtpUrl::parse(s).unwrap()
    }

    fn netrc(text: &str) -> Sources {
        Sources {
            netrc: Some(Netrc::parse(text).unwrap()),
            ..Sources::default()
        }
    }

    #[test]
    fn a_full_url_and_an_anonymous_one_are_left_alone() {
        let none = Sources::default();
        assert!(
            choose(&url("ftp://a:b@h/f"), None, &none)
                .unwrap()
                .is_none()
        );
        assert!(choose(&url("ftp://h/f"), None, &none).unwrap().is_none());
        // A .netrc without this host changes nothing either.
        let other = netrc("machine elsewhere login x password y");
        assert!(choose(&url("ftp://h/f"), None, &other).unwrap().is_none());
    }

    fn login(user: &str, password: Option<&str>, missing: Missing) -> Login {
        Login {
            user: user.as_bytes().to_vec(),
            password: password.map(|p| p.as_bytes().to_vec()),
            missing,
        }
    }

    #[test]
    fn u_with_a_password_or_from_the_sources_in_order() {
        let none = Sources::default();
        let u = url("ftp://h/f");
        let chosen = |arg: &str, s: &Sources| choose(&u, Some(arg), s).unwrap().unwrap();
        assert_eq!(
            chosen("alice:pw", &none),
            login("alice", Some("pw"), Missing::Ask)
        );
        // No password: asked for.
        assert_eq!(chosen("alice", &none), login("alice", None, Missing::Ask));
        // The environment before the file before the .netrc.
        let mut all = netrc("machine h login alice password from-netrc");
        all.file = Some("from-file".into());
        all.env = Some("from-env".into());
        let pick = |s: &Sources| chosen("alice", s).password;
        assert_eq!(pick(&all), Some(b"from-env".to_vec()));
        all.env = None;
        assert_eq!(pick(&all), Some(b"from-file".to_vec()));
        all.file = None;
        assert_eq!(pick(&all), Some(b"from-netrc".to_vec()));
        // The .netrc's password is for its own login only.
        assert_eq!(chosen("bob", &all).password, None);
    }

    #[test]
    fn the_netrc_names_the_user_when_nothing_else_does() {
        let s = netrc("machine h login carol password c\ndefault login anonymous password me@");
        let chosen = |u: &str| choose(&url(u), None, &s).unwrap().unwrap();
        assert_eq!(
            chosen("ftp://h:2121/f"),
            login("carol", Some("c"), Missing::Ask)
        );
        // default serves other hosts.
        assert_eq!(chosen("ftp://other/f").user, b"anonymous".to_vec());
        // The URL's user wins over the .netrc's, with its password if the
        // login is the same.
        assert_eq!(
            chosen("ftp://carol@h/f"),
            login("carol", Some("c"), Missing::Empty)
        );
    }

    #[test]
    fn a_user_twice_or_none_is_refused_saying_what_to_give() {
        let none = Sources::default();
        let e = choose(&url("ftp://bob@h/f"), Some("alice"), &none).unwrap_err();
        assert!(e.to_string().contains("give the user once"), "{e}");
        let e = choose(&url("ftp://h/f"), Some(":pw"), &none).unwrap_err();
        assert!(e.to_string().contains("-u \":pw\" names no user"), "{e}");
    }
}
