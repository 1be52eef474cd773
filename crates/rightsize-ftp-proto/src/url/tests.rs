//! Tests of `ftp://` URL parsing: the forms curl and globus-url-copy
//! write, the defaults, and errors that quote the input without the password.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

fn url(input: &str) -> FtpUrl {
    FtpUrl::parse(input).unwrap()
}

fn problem(input: &str) -> UrlProblem {
    FtpUrl::parse(input).unwrap_err().problem
}

#[test]
fn with_path_keeps_the_server_and_login() {
    let u = FtpUrl::parse("ftp://alice:secret@[::1]:2121/x").unwrap();
    let v = u.with_path(b"/.rightsize/zero/1G");
    assert_eq!(v.path(), b"/.rightsize/zero/1G");
    assert_eq!(v.user(), b"alice");
    assert_eq!(v.password(), b"secret");
    assert_eq!(v.to_string(), "ftp://alice@[::1]:2121//.rightsize/zero/1G");
    assert_eq!(FtpUrl::parse(&v.to_string()).unwrap().path(), v.path());
    assert_eq!(
        u.with_path(b"a b").to_string(),
        "ftp://alice@[::1]:2121/a%20b"
    );
}

#[test]
fn defaults_are_anonymous_on_port_21() {
    let u = url("ftp://example.org/pub/file.bin");
    assert_eq!(u.host(), &Host::Name("example.org".into()));
    assert_eq!(u.port(), 21);
    assert_eq!(u.user(), b"anonymous");
    assert_eq!(u.password(), b"anonymous@");
    assert_eq!(u.path(), b"pub/file.bin");
    assert_eq!(u.file_name(), Some(&b"file.bin"[..]));
    assert_eq!(u.to_string(), "ftp://example.org:21/pub/file.bin");
}

#[test]
fn user_password_and_port_are_percent_decoded() {
    let u = url("FTP://al%40ice:p%3Ass%2Fw@127.0.0.1:2121/dir/a%20b");
    assert_eq!(u.host(), &Host::Ipv4("127.0.0.1".parse().unwrap()));
    assert_eq!(u.port(), 2121);
    assert_eq!(u.user(), b"al@ice");
    assert_eq!(u.password(), b"p:ss/w");
    assert_eq!(u.path(), b"dir/a b");
    // Display never shows the password.
    assert_eq!(u.to_string(), "ftp://al%40ice@127.0.0.1:2121/dir/a%20b");
    assert!(!format!("{u:?}").contains("p%3Ass"));
}

#[test]
fn a_user_without_password_gets_an_empty_one_unless_anonymous() {
    assert_eq!(url("ftp://bob@h/f").password(), b"");
    assert_eq!(url("ftp://bob:@h/f").password(), b"");
    assert_eq!(url("ftp://anonymous@h/f").password(), b"anonymous@");
    assert_eq!(url("ftp://ftp@h/f").password(), b"anonymous@");
    let empty = url("ftp://@h/f");
    assert_eq!(
        (empty.user(), empty.password()),
        (&b"anonymous"[..], &b"anonymous@"[..])
    );
}

#[test]
fn the_last_at_sign_ends_the_userinfo() {
    let u = url("ftp://a@b:c@d@host/f");
    assert_eq!(u.user(), b"a@b");
    assert_eq!(u.password(), b"c@d");
    assert_eq!(u.host(), &Host::Name("host".into()));
}

#[test]
fn ipv6_literals_need_brackets() {
    let u = url("ftp://[::1]:2121/f");
    assert_eq!(u.host(), &Host::Ipv6("::1".parse().unwrap()));
    assert_eq!(u.port(), 2121);
    assert_eq!(u.to_string(), "ftp://[::1]:2121/f");
    assert_eq!(url("ftp://[fe80::1]/f").port(), 21);
    assert!(matches!(
        problem("ftp://[::1/f"),
        UrlProblem::BadHost { .. }
    ));
    assert!(matches!(
        problem("ftp://[::1]x/f"),
        UrlProblem::BadHost { .. }
    ));
    assert!(matches!(
        problem("ftp://[nope]/f"),
        UrlProblem::BadHost { .. }
    ));
    assert!(matches!(problem("ftp://::1/f"), UrlProblem::BadHost { .. }));
}

#[test]
fn double_slash_means_absolute_like_globus_url_copy() {
    assert_eq!(url("ftp://h:2811//tmp/x/y").path(), b"/tmp/x/y");
    assert_eq!(url("ftp://h/%2Ftmp/x").path(), b"/tmp/x");
    assert_eq!(url("ftp://h/tmp/x").path(), b"tmp/x");
    assert_eq!(url("ftp://h//").path(), b"/");
    assert_eq!(url("ftp://h/").path(), b"");
    assert_eq!(url("ftp://h").path(), b"");
}

#[test]
fn file_name_is_the_last_component() {
    assert_eq!(url("ftp://h//a/b.bin").file_name(), Some(&b"b.bin"[..]));
    assert_eq!(url("ftp://h/b").file_name(), Some(&b"b"[..]));
    for no_name in [
        "ftp://h/",
        "ftp://h",
        "ftp://h/dir/",
        "ftp://h/a/..",
        "ftp://h/.",
    ] {
        assert_eq!(url(no_name).file_name(), None, "{no_name}");
    }
}

#[test]
fn an_empty_port_is_the_default_and_bad_ports_are_refused() {
    assert_eq!(url("ftp://h:/f").port(), 21);
    for bad in [
        "ftp://h:0/f",
        "ftp://h:65536/f",
        "ftp://h:x/f",
        "ftp://h:-1/f",
        "ftp://h:123456/f",
    ] {
        assert!(matches!(problem(bad), UrlProblem::BadPort { .. }), "{bad}");
    }
}

#[test]
fn host_names_are_checked_and_lowercased() {
    assert_eq!(
        url("ftp://LocalHost./f").host(),
        &Host::Name("localhost.".into())
    );
    assert_eq!(
        url("ftp://my_host-1.example/f").host(),
        &Host::Name("my_host-1.example".into())
    );
    for bad in [
        "ftp://-a/f",
        "ftp://a..b/f",
        "ftp://1.2.3.999/f",
        "ftp://h%41/f",
        "ftp://a:b:c/f",
    ] {
        assert!(
            matches!(
                problem(bad),
                UrlProblem::BadHost { .. } | UrlProblem::BadPort { .. }
            ),
            "{bad}: {:?}",
            problem(bad)
        );
    }
    assert_eq!(problem("ftp:///f"), UrlProblem::NoHost);
    assert_eq!(problem("ftp://user@/f"), UrlProblem::NoHost);
}

#[test]
fn only_ftp_is_accepted_and_the_message_quotes_the_input() {
    let err = FtpUrl::parse("http://x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid URL \"http://x\": only ftp:// and ftps:// URLs are accepted, like ftp://[user[:password]@]host[:port]/path"
    );
    for bad in ["", "ftp:/x", "ftps:/x/f", "sftp://x/f", "x", "ftp:"] {
        assert_eq!(problem(bad), UrlProblem::Scheme, "{bad}");
    }
}

#[test]
fn errors_hide_the_password() {
    let err = FtpUrl::parse("ftp://bob:s3cret@h:99999/f").unwrap_err();
    let text = err.to_string();
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.contains("ftp://bob:****@h:99999/f"), "{text}");
}

#[test]
fn bad_escapes_and_control_bytes_are_refused() {
    assert!(matches!(
        problem("ftp://h/a%zz"),
        UrlProblem::BadPercent { .. }
    ));
    assert!(matches!(
        problem("ftp://h/a%4"),
        UrlProblem::BadPercent { .. }
    ));
    assert!(matches!(
        problem("ftp://h/a%"),
        UrlProblem::BadPercent { .. }
    ));
    assert_eq!(
        problem("ftp://h/a%0Ab"),
        UrlProblem::ControlByte { part: "path" }
    );
    assert_eq!(
        problem("ftp://u%0D:p@h/a"),
        UrlProblem::ControlByte { part: "user" }
    );
    assert_eq!(
        problem("ftp://u:p%00@h/a"),
        UrlProblem::ControlByte { part: "password" }
    );
    assert_eq!(problem("ftp://h/a b"), UrlProblem::Unencoded { found: ' ' });
    assert_eq!(
        problem("ftp://h/a?x"),
        UrlProblem::QueryOrFragment { found: '?' }
    );
    assert_eq!(
        problem("ftp://h/a#x"),
        UrlProblem::QueryOrFragment { found: '#' }
    );
    // Non-UTF-8 bytes are fine: paths are bytes.
    assert_eq!(url("ftp://h/%FF").path(), b"\xff");
}

#[test]
fn type_i_is_ignored_and_other_types_refused() {
    assert_eq!(url("ftp://h/f.bin;type=i").path(), b"f.bin");
    assert_eq!(url("ftp://h/f.bin;TYPE=I").path(), b"f.bin");
    assert!(matches!(
        problem("ftp://h/f;type=a"),
        UrlProblem::Type { .. }
    ));
    assert_eq!(url("ftp://h/a;b").path(), b"a;b");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_input_panics(input in "\\PC{0,60}") {
        let _ = FtpUrl::parse(&input);
    }

    #[test]
    fn no_url_shaped_input_panics(input in "(ftp|FTP|http)://[a-z0-9:@%/\\[\\];=.#?-]{0,40}") {
        match FtpUrl::parse(&input) {
            Ok(u) => {
                prop_assert!(u.port() != 0);
                for part in [u.user(), u.password(), u.path()] {
                    prop_assert!(!part.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)));
                }
                prop_assert!(!u.to_string().contains(['\r', '\n']));
            }
            Err(e) => prop_assert!(e.to_string().contains(ACCEPTED_FORM)),
        }
    }

    #[test]
    fn encoded_paths_round_trip(raw in proptest::collection::vec(1u8..=255, 1..40)) {
        let path: Vec<u8> = raw.into_iter().map(|b| if b == b'\r' || b == b'\n' { b'x' } else { b }).collect();
        let encoded: String = path.iter().map(|b| format!("%{b:02X}")).collect();
        let u = FtpUrl::parse(&format!("ftp://h/{encoded}")).unwrap();
        prop_assert_eq!(u.path(), &path[..]);
    }
}

#[test]
fn ftps_is_implicit_tls_on_port_990() {
    let u = url("ftps://example.org/pub/file.bin");
    assert!(u.implicit_tls());
    assert_eq!(u.port(), DEFAULT_FTPS_PORT);
    assert_eq!(u.to_string(), "ftps://example.org:990/pub/file.bin");
    let v = url("FTPS://127.0.0.1:2990/f");
    assert!(v.implicit_tls());
    assert_eq!(v.port(), 2990);
    assert_eq!(v.with_path(b"g").to_string(), "ftps://127.0.0.1:2990/g");
    let w = url("ftp://example.org/f");
    assert!(!w.implicit_tls());
    assert_eq!(w.port(), DEFAULT_FTP_PORT);
}

#[test]
fn a_login_from_elsewhere_replaces_the_urls_and_shows_no_password() {
    let url = FtpUrl::parse("ftp://host:2121/pub/a.bin").unwrap();
    assert!(!url.names_user() && !url.has_password());
    let named = FtpUrl::parse("ftp://bob@host/").unwrap();
    assert!(named.names_user() && !named.has_password());
    assert!(FtpUrl::parse("ftp://bob:@host/").unwrap().has_password());
    let login = url.with_login(b"al ice", b"s3cret");
    assert_eq!(login.user(), b"al ice");
    assert_eq!(login.password(), b"s3cret");
    assert!(login.names_user() && login.has_password());
    assert_eq!(login.to_string(), "ftp://al%20ice@host:2121/pub/a.bin");
    assert_eq!(login.path(), url.path());
}
