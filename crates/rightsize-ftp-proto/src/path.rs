//! Virtual paths of the server's served tree, and resolution of a client's
//! pathname argument against the session's working directory (RFC 959
//! sections 4.1.1 `CWD`/`CDUP` and 5.3.2 `<pathname>`).
//!
//! Guarantees: a [`VirtualPath`] can only hold a normalized absolute path:
//! it starts with `/`, has no `.`, `..` or empty components, no trailing
//! slash (except the root itself), no NUL byte, and is at most
//! [`MAX_VIRTUAL_PATH_BYTES`] long. `..` at the root stays at the root, as
//! under vsftpd's chroot, so no argument can name anything above the served
//! root *lexically*. Paths are bytes, exactly as the client sent them (no
//! UTF-8 decoding, no case folding; `\` and `~` are ordinary bytes).
//!
//! What this module does not do: it never looks at the file system, so it
//! cannot see symbolic links. A link inside the served tree can still point
//! outside it; the system layer must open the joined path without following
//! links out of the root (for example `openat2` with `RESOLVE_BENEATH`, or
//! by checking each component), and must decide what exists. No I/O here.

use std::fmt;

use super::arg::{quote, write_escaped};

/// Longest normalized virtual path, in bytes (Linux `PATH_MAX`).
pub const MAX_VIRTUAL_PATH_BYTES: usize = 4096;

/// Why a client pathname cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// No file name can contain NUL; a NUL would also truncate the path at
    /// the system-call boundary.
    #[error("pathname \"{input}\" contains a NUL byte")]
    Nul {
        /// The client argument, quoted.
        input: String,
    },
    /// The normalized path would exceed [`MAX_VIRTUAL_PATH_BYTES`].
    #[error("pathname \"{input}\" resolves to more than {limit_bytes} bytes")]
    TooLong {
        /// The client argument, quoted.
        input: String,
        /// The limit, in bytes.
        limit_bytes: usize,
    },
}

/// A normalized absolute path in the served tree; see the module
/// documentation for the invariant.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VirtualPath(Vec<u8>);

impl Default for VirtualPath {
    fn default() -> VirtualPath {
        VirtualPath::root()
    }
}

impl VirtualPath {
    /// The root `/` of the served tree, where a session starts.
    pub fn root() -> VirtualPath {
        VirtualPath(b"/".to_vec())
    }

    /// Normalizes `path` taken from the root (so a relative path is taken
    /// as if it started with `/`); for configuration such as a home dir.
    pub fn parse(path: &[u8]) -> Result<VirtualPath, PathError> {
        VirtualPath::root().resolve(path)
    }

    /// Resolves a client argument against `self` as the working directory
    /// (RFC 959 5.3.2): an argument starting with `/` is absolute, else
    /// relative; `.`, empty components and a trailing slash are dropped; `..`
    /// removes the previous component and does nothing at the root. An empty
    /// argument resolves to `self`.
    pub fn resolve(&self, arg: &[u8]) -> Result<VirtualPath, PathError> {
        if arg.contains(&0) {
            return Err(PathError::Nul { input: quote(arg) });
        }
        let mut parts: Vec<&[u8]> = if arg.first() == Some(&b'/') {
            Vec::new()
        } else {
            self.components().collect()
        };
        for part in arg.split(|b| *b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => {
                    parts.pop();
                }
                name => parts.push(name),
            }
        }
        let len: usize = parts.iter().map(|p| p.len() + 1).sum::<usize>().max(1);
        if len > MAX_VIRTUAL_PATH_BYTES {
            return Err(PathError::TooLong {
                input: quote(arg),
                limit_bytes: MAX_VIRTUAL_PATH_BYTES,
            });
        }
        let mut out = Vec::with_capacity(len);
        for part in &parts {
            out.push(b'/');
            out.extend_from_slice(part);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        Ok(VirtualPath(out))
    }

    /// The path as bytes, starting with `/`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// True for `/`.
    pub fn is_root(&self) -> bool {
        self.0 == b"/"
    }

    /// The components from the root down; none for `/`. Each is non-empty,
    /// not `.` or `..`, and holds neither `/` nor NUL.
    pub fn components(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|b| *b == b'/').filter(|c| !c.is_empty())
    }

    /// The components to join, one by one, under the served root directory
    /// in the system layer (`root.join(OsStr::from_bytes(c))` on Unix).
    /// Joining them cannot leave the root lexically; symbolic links are the
    /// system layer's job (see the module documentation).
    pub fn to_relative_components(&self) -> Vec<&[u8]> {
        self.components().collect()
    }

    /// The path without its leading `/` (`pub/data`, empty for the root):
    /// a relative path to open beneath the served root.
    pub fn relative_bytes(&self) -> &[u8] {
        self.0.get(1..).unwrap_or(&[])
    }

    /// The last component, or `None` for `/`.
    pub fn file_name(&self) -> Option<&[u8]> {
        self.components().last()
    }

    /// The parent directory; `/` is its own parent (`CDUP` at the root).
    pub fn parent(&self) -> VirtualPath {
        match self.0.iter().rposition(|b| *b == b'/') {
            Some(0) | None => VirtualPath::root(),
            Some(i) => VirtualPath(self.0[..i].to_vec()),
        }
    }
}

impl fmt::Debug for VirtualPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VirtualPath(\"{}\")", self.0.escape_ascii())
    }
}

impl fmt::Display for VirtualPath {
    /// Lossy UTF-8 with control characters escaped: for logs. For a `257`
    /// reply use `reply::quote_pathname(path.as_bytes())`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, &self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn vp(s: &str) -> VirtualPath {
        VirtualPath::parse(s.as_bytes()).unwrap()
    }

    fn resolve(cwd: &str, arg: &str) -> String {
        let p = vp(cwd).resolve(arg.as_bytes()).unwrap();
        String::from_utf8(p.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn relative_and_absolute_arguments() {
        assert_eq!(resolve("/pub/data", "file.bin"), "/pub/data/file.bin");
        assert_eq!(resolve("/pub/data", "/etc/passwd"), "/etc/passwd");
        assert_eq!(resolve("/pub/data", "sub/"), "/pub/data/sub");
        assert_eq!(resolve("/pub/data", "./a//b/./c/"), "/pub/data/a/b/c");
        assert_eq!(resolve("/pub/data", ""), "/pub/data");
        assert_eq!(resolve("/", "."), "/");
    }

    #[test]
    fn dot_dot_never_leaves_the_root() {
        assert_eq!(resolve("/pub/data", ".."), "/pub");
        assert_eq!(
            resolve("/pub/data", "../../../../etc/shadow"),
            "/etc/shadow"
        );
        assert_eq!(resolve("/", "/../.."), "/");
        assert_eq!(resolve("/a", "b/../../../c"), "/c");
        assert_eq!(resolve("/pub", "..."), "/pub/...");
        assert_eq!(resolve("/pub", "..foo"), "/pub/..foo");
    }

    #[test]
    fn curl_cwd_per_part_and_globus_double_slash() {
        // curl: CWD pub, CWD data; globus: ftp://h:p//abs/path sends //abs/path.
        let cwd = vp("/").resolve(b"pub").unwrap().resolve(b"data").unwrap();
        assert_eq!(cwd, vp("/pub/data"));
        assert_eq!(cwd.resolve(b"//srv/ftp/x").unwrap(), vp("/srv/ftp/x"));
    }

    #[test]
    fn bytes_are_kept_exactly() {
        let p = vp("/").resolve(b"caf\xe9\\..\\x ~ ").unwrap();
        assert_eq!(p.as_bytes(), b"/caf\xe9\\..\\x ~ ");
        assert_eq!(format!("{p:?}"), "VirtualPath(\"/caf\\xe9\\\\..\\\\x ~ \")");
        assert_eq!(p.to_string(), "/caf\u{fffd}\\..\\x ~ ");
    }

    #[test]
    fn nul_is_refused() {
        let err = vp("/").resolve(b"a\0/../b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "pathname \"a\\0/../b\" contains a NUL byte"
        );
    }

    #[test]
    fn overlong_result_is_refused() {
        let long = vec![b'a'; MAX_VIRTUAL_PATH_BYTES];
        assert!(matches!(
            vp("/").resolve(&long),
            Err(PathError::TooLong { .. })
        ));
        let fits = vec![b'a'; MAX_VIRTUAL_PATH_BYTES - 1];
        assert!(vp("/").resolve(&fits).is_ok());
        // A long cwd plus a relative part is refused, not grown without bound.
        let deep = vp("/").resolve(&fits).unwrap();
        assert!(deep.resolve(b"x").is_err());
        assert!(deep.resolve(b"../x").is_ok());
    }

    #[test]
    fn accessors() {
        let p = vp("/pub/data/f");
        assert_eq!(p.to_relative_components(), vec![&b"pub"[..], b"data", b"f"]);
        assert_eq!(p.relative_bytes(), b"pub/data/f");
        assert_eq!(p.file_name(), Some(&b"f"[..]));
        assert_eq!(p.parent(), vp("/pub/data"));
        assert_eq!(vp("/pub").parent(), VirtualPath::root());
        assert_eq!(VirtualPath::root().parent(), VirtualPath::root());
        assert!(VirtualPath::root().is_root());
        assert_eq!(VirtualPath::root().relative_bytes(), b"");
        assert_eq!(VirtualPath::root().file_name(), None);
        assert!(VirtualPath::root().to_relative_components().is_empty());
        assert_eq!(VirtualPath::default(), VirtualPath::root());
    }

    fn is_normalized(p: &VirtualPath) -> bool {
        let b = p.as_bytes();
        b.first() == Some(&b'/')
            && !b.contains(&0)
            && (b == b"/" || !b.ends_with(b"/"))
            && b.len() <= MAX_VIRTUAL_PATH_BYTES
            && b[1..]
                .split(|c| *c == b'/')
                .all(|c| b == b"/" || !(c.is_empty() || c == b"." || c == b".."))
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 3_000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any argument from any cwd gives a normalized path or an error,
        /// and resolving is idempotent.
        #[test]
        fn resolution_is_normalized_and_idempotent(
            cwd in vec(prop_oneof![Just(b'/'), Just(b'.'), Just(b'a')], 0..12),
            arg in vec(prop_oneof![
                Just(b'/'), Just(b'.'), Just(b'a'), Just(0u8), any::<u8>()
            ], 0..40),
        ) {
            let cwd = VirtualPath::parse(&cwd).unwrap();
            prop_assert!(is_normalized(&cwd));
            match cwd.resolve(&arg) {
                Ok(p) => {
                    prop_assert!(is_normalized(&p));
                    prop_assert_eq!(VirtualPath::parse(p.as_bytes()).unwrap(), p.clone());
                    prop_assert_eq!(p.resolve(p.as_bytes()).unwrap(), p);
                }
                Err(PathError::Nul { .. }) => prop_assert!(arg.contains(&0)),
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
    }
}
