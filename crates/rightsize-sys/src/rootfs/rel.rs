//! Validation of the relative paths callers hand to [`super::Root`].
//!
//! Guarantees: a [`Rel`] holds either nothing (the root itself) or
//! `/`-separated components, each non-empty, not `.` or `..`, without NUL,
//! at most [`NAME_MAX_BYTES`] long and not starting with [`TEMP_PREFIX`]; the
//! whole is at most [`PATH_MAX_BYTES`] long. The kernel still confines every
//! lookup (a symbolic link can lead anywhere); this check only refuses
//! input that should never reach it, so a caller's bug shows up as
//! [`super::RootError::InvalidPath`] instead of a confusing kernel error.

use std::ffi::CString;

/// Longest file name component, in bytes (Linux `NAME_MAX`).
pub(super) const NAME_MAX_BYTES: usize = 255;

/// Longest relative path, in bytes (Linux `PATH_MAX` is 4,096 including the
/// terminating NUL).
pub(super) const PATH_MAX_BYTES: usize = 4095;

/// Start of the names of pending stores' temporary files. `read_dir` hides
/// them, and no caller path may name one, so a client can neither see nor
/// touch another transfer's partial upload.
pub const TEMP_PREFIX: &[u8] = b".rightsize-part.";

/// A checked relative path inside the root; see the module documentation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rel<'a> {
    bytes: &'a [u8],
}

impl<'a> Rel<'a> {
    /// Checks `bytes`; the error is the reason it was refused.
    pub(super) fn new(bytes: &'a [u8]) -> Result<Rel<'a>, &'static str> {
        if bytes.is_empty() {
            return Ok(Rel { bytes });
        }
        if bytes.len() > PATH_MAX_BYTES {
            return Err("longer than PATH_MAX (4095 bytes)");
        }
        if bytes.contains(&0) {
            return Err("contains a NUL byte");
        }
        if bytes.first() == Some(&b'/') {
            return Err("is absolute (paths are relative to the root)");
        }
        for component in bytes.split(|&b| b == b'/') {
            match component {
                b"" => return Err("has an empty component (`//` or a trailing `/`)"),
                b"." => return Err("has a `.` component"),
                b".." => return Err("has a `..` component"),
                _ if component.len() > NAME_MAX_BYTES => {
                    return Err("has a component longer than NAME_MAX (255 bytes)");
                }
                _ if component.starts_with(TEMP_PREFIX) => {
                    return Err("names a pending upload's temporary file");
                }
                _ => {}
            }
        }
        Ok(Rel { bytes })
    }

    /// The path as given; empty for the root.
    pub(super) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The path for a system call: `.` for the root itself.
    pub(super) fn c_path(&self) -> CString {
        c_string(if self.bytes.is_empty() {
            b"."
        } else {
            self.bytes
        })
    }

    /// The parent path (`.` for a name directly in the root) and the final
    /// component, or `None` for the root itself.
    pub(super) fn split(&self) -> Option<(CString, CString)> {
        if self.bytes.is_empty() {
            return None;
        }
        let (parent, name) = match self.bytes.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&self.bytes[..slash], &self.bytes[slash + 1..]),
            None => (&b"."[..], self.bytes),
        };
        Some((c_string(parent), c_string(name)))
    }

    /// `self/name`, for a name read from the directory `self`.
    pub(super) fn join(&self, name: &[u8]) -> CString {
        if self.bytes.is_empty() {
            return c_string(name);
        }
        let mut joined = Vec::with_capacity(self.bytes.len() + 1 + name.len());
        joined.extend_from_slice(self.bytes);
        joined.push(b'/');
        joined.extend_from_slice(name);
        c_string(&joined)
    }
}

/// A C string from bytes known to hold no NUL: a checked [`Rel`], a part of
/// one, or a name the kernel returned from `readdir`.
fn c_string(bytes: &[u8]) -> CString {
    // Cannot fail for these inputs. Should a future caller break the rule,
    // the empty name makes the kernel answer ENOENT instead of acting on a
    // different name than the one asked for.
    CString::new(bytes).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_root_and_plain_paths() {
        for ok in [&b""[..], b"a", b"a/b/c", b".hidden", b"a/...", b"x\\y"] {
            assert!(Rel::new(ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn refuses_what_a_normalized_virtual_path_never_holds() {
        let cases: [(&[u8], &str); 9] = [
            (b"..", "`..`"),
            (b"a/../b", "`..`"),
            (b".", "`.`"),
            (b"/abs", "absolute"),
            (b"a//b", "empty"),
            (b"a/", "empty"),
            (b"a\0b", "NUL"),
            (b".rightsize-part.x.1.2", "temporary"),
            (b"d/.rightsize-part.x", "temporary"),
        ];
        for (bad, why) in cases {
            let reason = Rel::new(bad).err().unwrap_or("accepted");
            assert!(reason.contains(why), "{bad:?}: {reason}");
        }
    }

    #[test]
    fn refuses_names_and_paths_beyond_the_kernel_limits() {
        assert!(Rel::new(&[b'n'; NAME_MAX_BYTES]).is_ok());
        assert!(Rel::new(&[b'n'; NAME_MAX_BYTES + 1]).is_err());
        let long: Vec<u8> = [&[b'n'; 200][..], b"/"].concat().repeat(21);
        assert!(Rel::new(&long[..long.len() - 1]).is_err());
    }

    #[test]
    fn splits_into_parent_and_name() {
        let split = |p: &'static [u8]| Rel::new(p).unwrap().split();
        assert_eq!(split(b""), None);
        assert_eq!(split(b"f"), Some((c_string(b"."), c_string(b"f"))));
        assert_eq!(split(b"a/b/f"), Some((c_string(b"a/b"), c_string(b"f"))));
    }

    #[test]
    fn joins_and_spells_the_root_as_dot() {
        let root = Rel::new(b"").unwrap();
        assert_eq!(root.c_path(), c_string(b"."));
        assert_eq!(root.join(b"n"), c_string(b"n"));
        let sub = Rel::new(b"a/b").unwrap();
        assert_eq!(sub.join(b"n"), c_string(b"a/b/n"));
    }
}
