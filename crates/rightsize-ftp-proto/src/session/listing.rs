//! Directory listings and timestamps as FTP clients read them.
//!
//! `LIST` lines follow the `ls -l` shape every client parses (vsftpd's), with
//! the year shown instead of the time for entries older than six months or in
//! the future, as `ls` does; `MLSD`/`MLST` facts follow RFC 3659 section 7;
//! `MDTM` and `modify=` use `YYYYMMDDHHMMSS` in UTC (RFC 3659 section 2.3).
//! Time is an argument: nothing here reads a clock.

use std::fmt::Write as _;

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (or the benchmark source's virtual files).
    File,
    /// A directory.
    Dir,
}

/// What the session knows of a file or directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Last modification, seconds since the Unix epoch (UTC).
    pub modified_unix: i64,
    /// Whether this session may change it (store, append, delete, rename).
    pub writable: bool,
}

/// A named entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The name within its directory (raw bytes, no slash).
    pub name: Vec<u8>,
    /// Its metadata.
    pub metadata: Metadata,
}

/// Seconds in half a year: `ls` shows the year instead of the time beyond it.
const HALF_YEAR_SECS: i64 = 182 * 24 * 3600;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

pub use rightsize_tune::civil::UtcTime;

/// `YYYYMMDDHHMMSS`, as `MDTM` answers (RFC 3659 section 2.3).
pub fn mdtm(time: UtcTime) -> String {
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        time.year, time.month, time.day, time.hour, time.minute, time.second
    )
}

/// One `LIST` line (without CRLF) in the `ls -l` shape.
pub fn list_line(entry: &DirEntry, now_unix: i64) -> String {
    let meta = &entry.metadata;
    let (kind, perms, links) = match meta.kind {
        EntryKind::Dir => ('d', "rwxr-xr-x", 2),
        EntryKind::File => ('-', "rw-r--r--", 1),
    };
    let time = UtcTime::from_unix(meta.modified_unix);
    let month = MONTHS[(time.month as usize).saturating_sub(1) % 12];
    let age = now_unix - meta.modified_unix;
    let when = if (0..HALF_YEAR_SECS).contains(&age) {
        format!(
            "{month} {:02} {:02}:{:02}",
            time.day, time.hour, time.minute
        )
    } else {
        format!("{month} {:02}  {}", time.day, time.year)
    };
    format!(
        "{kind}{perms} {links:>4} ftp      ftp      {:>12} {when} {}",
        meta.size,
        String::from_utf8_lossy(&entry.name)
    )
}

/// The RFC 3659 facts of an entry: `type=file;size=3;modify=…;perm=r; name`.
/// `kind_override` gives `cdir`/`pdir` for `.` and `..` in `MLSD`.
pub fn mlsx_line(name: &[u8], meta: &Metadata, kind_override: Option<&str>) -> String {
    let mut line = String::new();
    let kind = kind_override.unwrap_or(match meta.kind {
        EntryKind::File => "file",
        EntryKind::Dir => "dir",
    });
    let perm = match (meta.kind, meta.writable) {
        (EntryKind::File, false) => "r",
        (EntryKind::File, true) => "rawdf",
        (EntryKind::Dir, false) => "el",
        (EntryKind::Dir, true) => "elcmpdf",
    };
    let _ = write!(line, "type={kind};");
    if meta.kind == EntryKind::File {
        let _ = write!(line, "size={};", meta.size);
    }
    let _ = write!(
        line,
        "modify={};perm={perm}; {}",
        mdtm(UtcTime::from_unix(meta.modified_unix)),
        String::from_utf8_lossy(name)
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size: u64, modified_unix: i64) -> DirEntry {
        DirEntry {
            name: name.as_bytes().to_vec(),
            metadata: Metadata {
                kind: EntryKind::File,
                size,
                modified_unix,
                writable: false,
            },
        }
    }

    #[test]
    fn mdtm_times() {
        let at = |secs| mdtm(UtcTime::from_unix(secs));
        assert_eq!(at(0), "19700101000000");
        assert_eq!(at(951_782_400), "20000229000000");
        assert_eq!(at(1_795_000_000), "20261118110640");
        assert_eq!(at(-1), "19691231235959");
    }

    #[test]
    fn list_shows_time_for_recent_and_year_for_old() {
        let now = 1_795_000_000;
        assert_eq!(
            list_line(&file("a.bin", 65_536, now - 3600), now),
            "-rw-r--r--    1 ftp      ftp             65536 Nov 18 10:06 a.bin"
        );
        assert!(list_line(&file("old", 1, 0), now).ends_with("Jan 01  1970 old"));
    }

    #[test]
    fn mlsx_facts() {
        let entry = file("x", 3, 0);
        assert_eq!(
            mlsx_line(&entry.name, &entry.metadata, None),
            "type=file;size=3;modify=19700101000000;perm=r; x"
        );
        let dir = Metadata {
            kind: EntryKind::Dir,
            size: 0,
            modified_unix: 0,
            writable: true,
        };
        assert_eq!(
            mlsx_line(b".", &dir, Some("cdir")),
            "type=cdir;modify=19700101000000;perm=elcmpdf; ."
        );
    }
}
