//! Tests of the user file: parsing, verifying, rewriting, refusing.

#![allow(clippy::unwrap_used)]

use super::*;

/// Tests hash with a few iterations: the scheme is the same, the cost is not.
const TEST_ITERATIONS: u32 = 2;

fn field(password: &str, salt: &[u8]) -> String {
    hash_password(password.as_bytes(), salt, TEST_ITERATIONS)
}

fn two_users() -> UserDb {
    let text = format!(
        "# rightsize users\n\nalice:rw:{}\nbob:ro:{}\n",
        field("wonderland", b"salt-alice"),
        field("builder", b"salt-bob")
    );
    UserDb::parse(&text).unwrap()
}

fn line_error(text: &str) -> PasswdError {
    UserDb::parse(text).unwrap_err()
}

#[test]
fn passwd_matches_rfc_7914_section_11_vector() {
    // PBKDF2-HMAC-SHA256, P = "passwd", S = "salt", c = 1: the first 32
    // of the RFC's 64 bytes (PBKDF2 output blocks do not depend on dkLen).
    assert_eq!(
        hash_password(b"passwd", b"salt", 1),
        "pbkdf2-sha256$1$73616c74$\
         55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
    );
    // The widely published P = "password", S = "salt", c = 4096 vector.
    let hash = PasswordHash::derive(b"password", b"salt", 4096);
    assert!(
        hash.to_string()
            .ends_with("$c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a")
    );
}

#[test]
fn passwd_round_trips_and_verifies() {
    let db = two_users();
    assert_eq!(db.verify("alice", b"wonderland"), Some(Access::ReadWrite));
    assert_eq!(db.verify("bob", b"builder"), Some(Access::ReadOnly));
    assert_eq!(UserDb::parse(&db.to_text()).unwrap(), db);
    assert_eq!(db.users().collect::<Vec<_>>(), ["alice", "bob"]);
    let parsed = PasswordHash::parse(&field("x", &[0xab; SALT_BYTES])).unwrap();
    assert_eq!(parsed.to_string(), field("x", &[0xab; SALT_BYTES]));
    assert!(!format!("{parsed:?}").contains(&field("x", &[0xab; SALT_BYTES])[40..]));
}

#[test]
fn passwd_refuses_wrong_password_and_unknown_user() {
    let db = two_users();
    assert_eq!(db.verify("alice", b"builder"), None);
    assert_eq!(db.verify("alice", b""), None);
    assert_eq!(db.verify("Alice", b"wonderland"), None);
    assert_eq!(db.verify("carol", b"wonderland"), None);
    assert_eq!(db.verify("anonymous", b""), None);
    // Unknown names cost the same PBKDF2 work as the file's users.
    assert_eq!(db.dummy_hash().iterations(), TEST_ITERATIONS);
    assert_eq!(UserDb::new().dummy_hash().iterations(), DEFAULT_ITERATIONS);
}

#[test]
fn passwd_set_replaces_in_place_and_keeps_other_lines() {
    let mut db = two_users();
    let before = db.to_text();
    assert!(
        db.set("alice", Access::ReadOnly, &field("new", b"s2"))
            .unwrap()
    );
    assert!(
        !db.set("carol", Access::ReadWrite, &field("c", b"s3"))
            .unwrap()
    );
    let text = db.to_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["# rightsize users", ""]);
    assert!(lines[2].starts_with("alice:ro:pbkdf2-sha256$2$7332$"));
    assert_eq!(lines[3], before.lines().nth(3).unwrap());
    assert!(lines[4].starts_with("carol:rw:"));
    assert_eq!(db.verify("alice", b"new"), Some(Access::ReadOnly));
    assert_eq!(db.verify("alice", b"wonderland"), None);
    assert!(db.remove("bob"));
    assert!(!db.remove("bob"));
    assert_eq!(db.access("bob"), None);
    assert_eq!(UserDb::parse(&db.to_text()).unwrap(), db);
    assert!(matches!(
        db.set("bob", Access::ReadOnly, "md5$1$00$00"),
        Err(EntryError::Hash(HashError::Scheme { .. }))
    ));
}

#[test]
fn passwd_malformed_lines_give_the_line_and_the_field() {
    let good = field("pw", b"salt");
    let cases = [
        (
            "# c\nalice:rw\n".to_owned(),
            2,
            "user \"alice\": expected 3",
        ),
        (format!("\n\nalice:admin:{good}\n"), 3, "access \"admin\""),
        ("alice:rw:md5$1$00$00\n".to_owned(), 1, "scheme \"md5\""),
        ("a:rw:pbkdf2-sha256$0$00$00\n".to_owned(), 1, "count \"0\""),
        (
            "a:rw:pbkdf2-sha256$+5$00$00\n".to_owned(),
            1,
            "count \"+5\"",
        ),
        ("a:rw:pbkdf2-sha256$5$0g$00\n".to_owned(), 1, "salt \"0g\""),
        ("a:rw:pbkdf2-sha256$5$$00\n".to_owned(), 1, "salt \"\""),
        (
            "a:rw:pbkdf2-sha256$5$00$abcd\n".to_owned(),
            1,
            "has 4 characters",
        ),
        (
            "a:rw:pbkdf2-sha256$5$00\n".to_owned(),
            1,
            "has 3 '$'-separated",
        ),
        (
            format!("x y:rw:{good}\n"),
            1,
            "user name \"x y\" contains a space",
        ),
        (format!("ftp:ro:{good}\n"), 1, "\"ftp\" is reserved"),
        (format!(":ro:{good}\n"), 1, "user name is empty"),
        (
            format!("a:ro:{good}\r\na:rw:{good}\n"),
            2,
            "already defined on line 1",
        ),
    ];
    for (text, line, needle) in cases {
        let err = line_error(&text);
        assert_eq!(err.line, line, "{text:?}");
        let message = format!("{err}: {}", err.source);
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        assert!(
            !message.contains(&good[30..]),
            "{message:?} quotes the hash"
        );
    }
    // A line that is only a hash is not quoted at all.
    let err = line_error(&format!("{good}\n"));
    assert_eq!(
        err.source,
        EntryError::Fields {
            user: None,
            found: 1
        }
    );
}

#[test]
fn passwd_user_names_refuse_reserved_and_special_characters() {
    assert_eq!(parse_user_name("alice.b-c_d@x").unwrap(), "alice.b-c_d@x");
    assert_eq!(parse_user_name("Ünïcødé").unwrap(), "Ünïcødé");
    for reserved in RESERVED_USERS {
        assert!(matches!(
            parse_user_name(reserved),
            Err(UserNameError::Reserved { .. })
        ));
    }
    assert_eq!(parse_user_name(""), Err(UserNameError::Empty));
    for (name, ch) in [
        ("a:b", ':'),
        ("a\tb", '\t'),
        ("a\u{7f}", '\u{7f}'),
        ("a\u{a0}", '\u{a0}'),
    ] {
        assert_eq!(
            parse_user_name(name),
            Err(UserNameError::BadChar {
                name: name.to_owned(),
                ch
            })
        );
    }
    let message = parse_user_name("a\tb").unwrap_err().to_string();
    assert!(message.contains("\"a\\tb\""), "{message}");
    assert!(!message.contains('\t'));
}
