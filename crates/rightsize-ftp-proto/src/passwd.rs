//! The FTP server's user file: names, access and salted password hashes.
//!
//! One user per line, `name:access:hash`, where access is `rw` (may write)
//! or `ro` (read-only) and hash is `pbkdf2-sha256$ITERATIONS$SALT$HASH`:
//! PBKDF2-HMAC-SHA256 (RFC 8018 section 5.2) with the salt and the 32-byte
//! derived key in lowercase hex. Lines starting with `#` and blank lines are
//! comments. [`UserDb::parse`] refuses a malformed file with the line number
//! and the offending field quoted (never the hash); [`UserDb::to_text`]
//! writes it back with every line it did not change kept byte for byte.
//!
//! [`UserDb::verify`] compares in constant time and spends the same PBKDF2
//! work on an unknown user as on a known one, so a client cannot tell from
//! the answer's timing which names exist. Nothing here does I/O: the caller
//! reads the file and supplies random salt (`rightsize_sys::random`).

use std::fmt;

use sha2::Sha256;
use subtle::ConstantTimeEq as _;

use crate::session::Access;

/// The hash scheme written in the third field.
pub const SCHEME: &str = "pbkdf2-sha256";

/// PBKDF2 iterations for new hashes: about 50 ms of one core.
///
/// Measured on the development machine (Xeon @ 2.50GHz without SHA-NI,
/// release build, best of 9): 0.74-0.8 µs per iteration, so 65,000
/// iterations cost 47-52 ms idle (70 ms with the other core busy). Every
/// login pays this once, failed or not, which bounds how fast a client can
/// guess. OWASP's 2023 cheat sheet asks for 600,000 (about 450 ms here);
/// hashes keep their own count, so a file can mix counts and a count can be
/// raised later by re-setting the password.
pub const DEFAULT_ITERATIONS: u32 = 65_000;

/// Bytes of random salt for new hashes (128 bits, RFC 8018 section 4.1 asks
/// for at least 64).
pub const SALT_BYTES: usize = 16;

/// Bytes of the derived key stored (one SHA-256 block).
pub const HASH_BYTES: usize = 32;

/// User names reserved for anonymous login; the file may not define them.
pub const RESERVED_USERS: [&str; 2] = ["anonymous", "ftp"];

/// A user name that may not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserNameError {
    /// The name is empty.
    #[error("user name is empty; give a name such as alice")]
    Empty,
    /// `anonymous` or `ftp`.
    #[error("user name \"{name}\" is reserved for anonymous login; choose another name")]
    Reserved {
        /// The name given.
        name: String,
    },
    /// A `:`, whitespace or a control character.
    #[error(
        "user name \"{}\" contains {}; names may not contain ':', whitespace or control characters",
        name.escape_debug(),
        describe(*ch)
    )]
    BadChar {
        /// The name given.
        name: String,
        /// The first character refused.
        ch: char,
    },
}

fn describe(ch: char) -> String {
    match ch {
        ':' => "':'".to_owned(),
        ' ' => "a space".to_owned(),
        c if c.is_whitespace() => format!("whitespace ({})", c.escape_debug()),
        c => format!("a control character ({})", c.escape_debug()),
    }
}

/// A hash field (`pbkdf2-sha256$...`) that cannot be used. Messages quote
/// the scheme, iteration count and salt, but never the hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// Not `pbkdf2-sha256$ITERATIONS$SALT$HASH`.
    #[error(
        "password hash has {found} '$'-separated parts; expected {SCHEME}$ITERATIONS$SALT$HASH"
    )]
    Parts {
        /// How many parts there were.
        found: usize,
    },
    /// Another scheme.
    #[error("password hash scheme \"{scheme}\" is not supported; expected {SCHEME}")]
    Scheme {
        /// The scheme given.
        scheme: String,
    },
    /// Not a whole number of at least 1.
    #[error(
        "iteration count \"{input}\" is not a whole number from 1 to {}",
        u32::MAX
    )]
    Iterations {
        /// The count given.
        input: String,
    },
    /// Empty or not hex.
    #[error("salt \"{input}\" is not a non-empty string of hex digit pairs")]
    Salt {
        /// The salt given.
        input: String,
    },
    /// Not 32 bytes of hex.
    #[error("hash is not {} hex digits (it has {len_chars} characters)", HASH_BYTES * 2)]
    Hash {
        /// Its length, characters.
        len_chars: usize,
    },
}

/// Why one line of the user file (or a [`UserDb::set`] call) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Not three `:`-separated fields.
    #[error(
        "{}expected 3 ':'-separated fields (name:rw|ro:hash), found {found}",
        user.as_ref().map(|u| format!("user \"{}\": ", u.escape_debug())).unwrap_or_default()
    )]
    Fields {
        /// The first field, unless it is the whole line (which may be a hash).
        user: Option<String>,
        /// How many fields there were.
        found: usize,
    },
    /// A bad user name.
    #[error(transparent)]
    UserName(#[from] UserNameError),
    /// Neither `rw` nor `ro`.
    #[error("access \"{}\" is not rw (read-write) or ro (read-only)", input.escape_debug())]
    Access {
        /// The field given.
        input: String,
    },
    /// A bad hash field.
    #[error(transparent)]
    Hash(#[from] HashError),
    /// The same name twice.
    #[error("user \"{user}\" is already defined on line {first_line}")]
    Duplicate {
        /// The name.
        user: String,
        /// Where it was first defined (1-based).
        first_line: usize,
    },
}

/// A user file that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}")]
pub struct PasswdError {
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong with it.
    #[source]
    pub source: EntryError,
}

/// Checks a user name: not empty, no `:`, whitespace or control characters,
/// not one of [`RESERVED_USERS`]. Returns it owned, for use as a clap parser.
pub fn parse_user_name(name: &str) -> Result<String, UserNameError> {
    if name.is_empty() {
        return Err(UserNameError::Empty);
    }
    if let Some(ch) = name
        .chars()
        .find(|c| *c == ':' || c.is_whitespace() || c.is_control())
    {
        return Err(UserNameError::BadChar {
            name: name.to_owned(),
            ch,
        });
    }
    if RESERVED_USERS.contains(&name) {
        return Err(UserNameError::Reserved {
            name: name.to_owned(),
        });
    }
    Ok(name.to_owned())
}

/// The access field: `rw` or `ro`.
pub fn access_field(access: Access) -> &'static str {
    match access {
        Access::ReadWrite => "rw",
        Access::ReadOnly => "ro",
    }
}

fn parse_access(field: &str) -> Result<Access, EntryError> {
    match field {
        "rw" => Ok(Access::ReadWrite),
        "ro" => Ok(Access::ReadOnly),
        _ => Err(EntryError::Access {
            input: field.to_owned(),
        }),
    }
}

/// A parsed `pbkdf2-sha256$ITERATIONS$SALT$HASH` field. Its `Debug` leaves
/// the hash out.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash {
    iterations: u32,
    salt: Vec<u8>,
    hash: [u8; HASH_BYTES],
}

impl PasswordHash {
    /// Derives the hash of `password` with `salt` (use [`SALT_BYTES`] random
    /// bytes) and `iterations` ([`DEFAULT_ITERATIONS`]; 0 counts as 1, the
    /// least PBKDF2 defines).
    pub fn derive(password: &[u8], salt: &[u8], iterations: u32) -> Self {
        let iterations = iterations.max(1);
        PasswordHash {
            iterations,
            salt: salt.to_vec(),
            hash: derive_key(password, salt, iterations),
        }
    }

    /// Parses a stored hash field.
    pub fn parse(field: &str) -> Result<Self, HashError> {
        let parts: Vec<&str> = field.split('$').collect();
        let [scheme, iterations, salt, hash] = parts[..] else {
            return Err(HashError::Parts { found: parts.len() });
        };
        if scheme != SCHEME {
            return Err(HashError::Scheme {
                scheme: scheme.to_owned(),
            });
        }
        let iterations = iterations
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 1 && iterations.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| HashError::Iterations {
                input: iterations.to_owned(),
            })?;
        let salt = decode_hex(salt)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| HashError::Salt {
                input: salt.to_owned(),
            })?;
        let hash = decode_hex(hash)
            .and_then(|h| <[u8; HASH_BYTES]>::try_from(h).ok())
            .ok_or(HashError::Hash {
                len_chars: hash.chars().count(),
            })?;
        Ok(PasswordHash {
            iterations,
            salt,
            hash,
        })
    }

    /// Whether `password` derives this hash; the comparison takes the same
    /// time wherever the first differing byte is.
    pub fn verify(&self, password: &[u8]) -> bool {
        let candidate = derive_key(password, &self.salt, self.iterations);
        bool::from(candidate.ct_eq(&self.hash))
    }

    /// The PBKDF2 iteration count.
    pub fn iterations(&self) -> u32 {
        self.iterations
    }
}

impl fmt::Display for PasswordHash {
    /// The stored form, `pbkdf2-sha256$ITERATIONS$SALT$HASH`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SCHEME}${}${}${}",
            self.iterations,
            encode_hex(&self.salt),
            encode_hex(&self.hash)
        )
    }
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordHash")
            .field("iterations", &self.iterations)
            .field("salt", &encode_hex(&self.salt))
            .field("hash", &"<redacted>")
            .finish()
    }
}

/// The stored hash field for `password`: `pbkdf2-sha256$ITERATIONS$SALT$HASH`
/// (see [`PasswordHash::derive`]).
pub fn hash_password(password: &[u8], salt: &[u8], iterations: u32) -> String {
    PasswordHash::derive(password, salt, iterations).to_string()
}

fn derive_key(password: &[u8], salt: &[u8], iterations: u32) -> [u8; HASH_BYTES] {
    pbkdf2::pbkdf2_hmac_array::<Sha256, HASH_BYTES>(password, salt, iterations)
}

fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let hi = char::from(pair[0]).to_digit(16)?;
            let lo = char::from(pair[1]).to_digit(16)?;
            u8::try_from(hi << 4 | lo).ok()
        })
        .collect()
}

/// One user of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    access: Access,
    hash: PasswordHash,
}

/// A line of the file: a user, or a comment or blank line kept as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    User { entry: Entry, text: String },
    Other(String),
}

/// The users of a user file, with its comments, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserDb {
    lines: Vec<Line>,
}

impl UserDb {
    /// An empty file.
    pub fn new() -> Self {
        UserDb::default()
    }

    /// Parses a user file. A `\r` before a line's `\n` is ignored.
    pub fn parse(text: &str) -> Result<UserDb, PasswdError> {
        let mut db = UserDb::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                db.lines.push(Line::Other(raw.to_owned()));
                continue;
            }
            let entry = parse_entry(raw).map_err(|source| PasswdError { line, source })?;
            if let Some(first) = db.position(&entry.name) {
                return Err(PasswdError {
                    line,
                    source: EntryError::Duplicate {
                        user: entry.name,
                        first_line: first + 1,
                    },
                });
            }
            db.lines.push(Line::User {
                entry,
                text: raw.to_owned(),
            });
        }
        Ok(db)
    }

    /// The access `user` gets with `password`, or `None` for a wrong
    /// password or an unknown user alike. An unknown user costs the same
    /// PBKDF2 work as the file's first user (or [`DEFAULT_ITERATIONS`]).
    pub fn verify(&self, user: &str, password: &[u8]) -> Option<Access> {
        if let Some(entry) = self.entry(user) {
            return entry.hash.verify(password).then_some(entry.access);
        }
        // The result is thrown away; `black_box` keeps the work from being elided.
        std::hint::black_box(self.dummy_hash().verify(std::hint::black_box(password)));
        None
    }

    /// What an unknown user's password is checked against: the first
    /// user's iteration count (or [`DEFAULT_ITERATIONS`]), a fixed salt, and
    /// a hash no password derives in practice.
    fn dummy_hash(&self) -> PasswordHash {
        let iterations = self
            .entries()
            .next()
            .map_or(DEFAULT_ITERATIONS, |e| e.hash.iterations);
        PasswordHash {
            iterations,
            salt: vec![0; SALT_BYTES],
            hash: [0; HASH_BYTES],
        }
    }

    /// Adds `user`, or replaces its access and hash in place, with `hashed`
    /// a field as [`hash_password`] returns it. Returns whether the user existed.
    pub fn set(&mut self, user: &str, access: Access, hashed: &str) -> Result<bool, EntryError> {
        let name = parse_user_name(user)?;
        let hash = PasswordHash::parse(hashed)?;
        let text = format!("{name}:{}:{hash}", access_field(access));
        let entry = Entry { name, access, hash };
        let line = Line::User { entry, text };
        match self.position(user) {
            Some(i) => {
                self.lines[i] = line;
                Ok(true)
            }
            None => {
                self.lines.push(line);
                Ok(false)
            }
        }
    }

    /// Removes `user`; returns whether it was there.
    pub fn remove(&mut self, user: &str) -> bool {
        match self.position(user) {
            Some(i) => {
                self.lines.remove(i);
                true
            }
            None => false,
        }
    }

    /// The access of `user`, if the file defines it.
    pub fn access(&self, user: &str) -> Option<Access> {
        self.entry(user).map(|e| e.access)
    }

    /// The user names, in file order.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.entries().map(|e| e.name.as_str())
    }

    /// The file's text: unchanged lines as they were, each ending in `\n`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            match line {
                Line::User { text, .. } | Line::Other(text) => out.push_str(text),
            }
            out.push('\n');
        }
        out
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.lines.iter().filter_map(|line| match line {
            Line::User { entry, .. } => Some(entry),
            Line::Other(_) => None,
        })
    }

    fn entry(&self, user: &str) -> Option<&Entry> {
        self.entries().find(|e| e.name == user)
    }

    fn position(&self, user: &str) -> Option<usize> {
        self.lines
            .iter()
            .position(|line| matches!(line, Line::User { entry, .. } if entry.name == user))
    }
}

fn parse_entry(line: &str) -> Result<Entry, EntryError> {
    let fields: Vec<&str> = line.split(':').collect();
    let [name, access, hash] = fields[..] else {
        return Err(EntryError::Fields {
            user: (fields.len() > 1).then(|| fields[0].to_owned()),
            found: fields.len(),
        });
    };
    Ok(Entry {
        name: parse_user_name(name)?,
        access: parse_access(access)?,
        hash: PasswordHash::parse(hash)?,
    })
}

#[cfg(test)]
mod tests;
