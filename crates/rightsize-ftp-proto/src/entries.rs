//! Reading the directory listings a server sends, for a recursive
//! download: `MLSD` lines (RFC 3659 7: `fact=value;...; name`) where the
//! server has them, and otherwise `LIST` lines in the two forms servers
//! actually send, Unix `ls -l` (vsftpd, ProFTPD, pyftpdlib, rightsize) and
//! the DOS form (IIS).
//!
//! `LIST` has no standard format (RFC 959 leaves it to the system), so it
//! is read by shape: in the Unix form the size is the number just before
//! the month and the name is whatever follows the time or year, spaces
//! included; a symbolic link (`l...`) is neither a file nor a directory.
//! Fact names in `MLSD` are case-insensitive (the Globus server writes
//! `Type=`, `Size=`); an entry with a `UNIX.slink` fact (the Globus server
//! lists a link as the directory or file it points to, with that fact) is
//! a link, not followed.
//!
//! Guarantees: no input makes a parser panic; [`Entry::name`] is never
//! `.`, `..`, empty, or a name with `/` or NUL in it: such an entry is an
//! [`EntryError::UnsafeName`], so that a listing cannot make a download
//! write outside the directory it fills. Errors quote the line (at most 64
//! bytes, control characters escaped).

use crate::arg::quote;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (a symbolic link, a device): not followed.
    Other,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name inside its directory (never `.`, `..`, empty, nor with `/`
    /// or NUL).
    pub name: Vec<u8>,
    /// File, directory or other.
    pub kind: EntryKind,
    /// The size in bytes, when the listing gives it.
    pub size: Option<u64>,
}

/// Why a listing line was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Not in the form expected.
    #[error("listing line \"{line}\" is not {expected}")]
    Malformed {
        /// The line, quoted.
        line: String,
        /// The forms it was read as.
        expected: &'static str,
    },
    /// A name that would leave the directory or cannot be a file name.
    #[error(
        "listing names \"{name}\", which cannot be a file name here (empty, . or .., or with / or NUL)"
    )]
    UnsafeName {
        /// The name, quoted.
        name: String,
    },
}

/// Reads one `MLSD` line. `Ok(None)` for the entries that name the
/// directory itself or its parent (`type=cdir`, `type=pdir`).
pub fn parse_mlsx(line: &[u8]) -> Result<Option<Entry>, EntryError> {
    let line = trim_line(line);
    let malformed = || EntryError::Malformed {
        line: quote(line),
        expected: "MLSD facts (type=...;size=...; name)",
    };
    let space = line.iter().position(|b| *b == b' ').ok_or_else(malformed)?;
    let (facts, name) = (&line[..space], &line[space + 1..]);
    let mut kind = None;
    let mut size = None;
    let mut link = false;
    for fact in facts.split(|b| *b == b';').filter(|f| !f.is_empty()) {
        let eq = fact.iter().position(|b| *b == b'=').ok_or_else(malformed)?;
        let (key, value) = (&fact[..eq], &fact[eq + 1..]);
        if key.eq_ignore_ascii_case(b"type") {
            kind = Some(if value.eq_ignore_ascii_case(b"file") {
                EntryKind::File
            } else if value.eq_ignore_ascii_case(b"dir") {
                EntryKind::Dir
            } else if value.eq_ignore_ascii_case(b"cdir") || value.eq_ignore_ascii_case(b"pdir") {
                return Ok(None);
            } else {
                EntryKind::Other
            });
        } else if key.eq_ignore_ascii_case(b"size") {
            size = Some(decimal(value).ok_or_else(malformed)?);
        } else if key.eq_ignore_ascii_case(b"unix.slink") {
            link = true;
        }
    }
    let kind = kind.ok_or_else(malformed)?;
    // The Globus server shows a link as what it points to, with its target.
    let kind = if link { EntryKind::Other } else { kind };
    entry(name, kind, size)
}

/// Reads one `LIST` line, Unix or DOS form. `Ok(None)` for the `total N`
/// line of `ls -l` and for `.` and `..`.
pub fn parse_list(line: &[u8]) -> Result<Option<Entry>, EntryError> {
    let line = trim_line(line);
    let tokens = tokens(line);
    let malformed = || EntryError::Malformed {
        line: quote(line),
        expected: "a LIST line in Unix (ls -l) or DOS form",
    };
    let word = |i: usize| tokens.get(i).map(|&(start, end)| &line[start..end]);
    if word(0).is_some_and(|w| w.eq_ignore_ascii_case(b"total")) && tokens.len() == 2 {
        return Ok(None);
    }
    let first = word(0).ok_or_else(malformed)?;
    // DOS: 11-26-26  10:00AM  <DIR>  name, or with the size instead.
    if first.len() >= 8
        && first.get(2) == Some(&b'-')
        && first.iter().all(|b| b.is_ascii_digit() || *b == b'-')
    {
        let what = word(2).ok_or_else(malformed)?;
        let name_start = tokens.get(3).ok_or_else(malformed)?.0;
        let name = &line[name_start..];
        if what.eq_ignore_ascii_case(b"<DIR>") {
            return dots_or(name, EntryKind::Dir, None);
        }
        let size = decimal(what).ok_or_else(malformed)?;
        return dots_or(name, EntryKind::File, Some(size));
    }
    // Unix: the month is the first word after a number, from the fourth on.
    let month = (3..tokens.len())
        .find(|&i| word(i).is_some_and(is_month) && word(i - 1).and_then(decimal).is_some())
        .ok_or_else(malformed)?;
    let size = word(month - 1).and_then(decimal);
    let name_start = tokens.get(month + 3).ok_or_else(malformed)?.0;
    let mut name = &line[name_start..];
    let kind = match first.first() {
        Some(b'd') => EntryKind::Dir,
        Some(b'-') => EntryKind::File,
        Some(b'l') => {
            // `name -> target`: the link's own name.
            if let Some(arrow) = name.windows(4).position(|w| w == b" -> ") {
                name = &name[..arrow];
            }
            EntryKind::Other
        }
        Some(_) => EntryKind::Other,
        None => return Err(malformed()),
    };
    dots_or(name, kind, size)
}

/// A whole listing: the entries taken and the lines that were not.
pub fn parse_listing(data: &[u8], mlsd: bool) -> (Vec<Entry>, Vec<EntryError>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        if trim_line(line).is_empty() {
            continue;
        }
        let parsed = if mlsd {
            parse_mlsx(line)
        } else {
            parse_list(line)
        };
        match parsed {
            Ok(Some(entry)) => entries.push(entry),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    (entries, errors)
}

/// Whether `name` can be a file name inside a directory being filled.
pub fn is_safe_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

fn entry(name: &[u8], kind: EntryKind, size: Option<u64>) -> Result<Option<Entry>, EntryError> {
    if !is_safe_name(name) {
        return Err(EntryError::UnsafeName { name: quote(name) });
    }
    Ok(Some(Entry {
        name: name.to_vec(),
        kind,
        size: size.filter(|_| kind == EntryKind::File),
    }))
}

/// `.` and `..` are skipped (some `LIST`s show them); other names checked.
fn dots_or(name: &[u8], kind: EntryKind, size: Option<u64>) -> Result<Option<Entry>, EntryError> {
    if name == b"." || name == b".." {
        return Ok(None);
    }
    entry(name, kind, size)
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Start and end of each space-separated word.
fn tokens(line: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, b) in line.iter().enumerate() {
        match (start, *b == b' ' || *b == b'\t') {
            (None, false) => start = Some(i),
            (Some(s), true) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, line.len()));
    }
    out
}

fn decimal(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

fn is_month(word: &[u8]) -> bool {
    const MONTHS: [&[u8]; 12] = [
        b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov",
        b"dec",
    ];
    MONTHS.iter().any(|m| m.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests;
