//! `rootfs::Root` against a real directory tree with links that try to
//! leave it.
//!
//! The fixture (under a fresh temporary directory) is:
//! ```text
//! outside/{secret, passwd, emptydir/}      never reachable from the root
//! root/a.txt ("hello", mode 0640), .hidden, sub/{b.txt ("bee"), deeper/}, empty/
//! root/etc        -> /etc                  absolute: escapes
//! root/link       -> <abs>/outside         absolute, used as `link/passwd`
//! root/up         -> ../outside/secret     climbs out
//! root/updir      -> ../outside            climbs out, used as a directory
//! root/sneaky     -> sub/../../outside/secret
//! root/abs_inside -> <abs>/root/a.txt      absolute though inside: refused
//! root/loop1 <-> root/loop2                a loop
//! root/dangling   -> nope
//! root/inside     -> sub/b.txt             allowed
//! root/insidedir  -> sub                   allowed
//! root/sub/back   -> ../a.txt              allowed (`..` that stays inside)
//! ```
//! Denials never rely on permission bits (CI runs as root, which bypasses
//! them): every refusal here comes from path resolution.
#![allow(clippy::unwrap_used)]

use std::ffi::CString;
use std::fs;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use rightsize_sys::rootfs::{Entry, Keep, Kind, Root, RootError, TEMP_PREFIX};
use tempfile::TempDir;

struct Fixture {
    _tmp: TempDir,
    outside: PathBuf,
    dir: PathBuf,
    root: Root,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let outside = base.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), "secret").unwrap();
    fs::write(outside.join("passwd"), "outside passwd").unwrap();
    fs::create_dir(outside.join("emptydir")).unwrap();
    let dir = base.join("root");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("a.txt"), "hello").unwrap();
    fs::set_permissions(dir.join("a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::write(dir.join(".hidden"), "").unwrap();
    fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    fs::write(dir.join("sub/b.txt"), "bee").unwrap();
    fs::create_dir(dir.join("empty")).unwrap();
    let links: [(&Path, &str); 13] = [
        (Path::new("/etc"), "etc"),
        (&outside, "link"),
        (Path::new("../outside/secret"), "up"),
        (Path::new("../outside"), "updir"),
        (Path::new("sub/../../outside/secret"), "sneaky"),
        (&dir.join("a.txt"), "abs_inside"),
        (Path::new("loop2"), "loop1"),
        (Path::new("loop1"), "loop2"),
        (Path::new("nope"), "dangling"),
        (Path::new("sub/b.txt"), "inside"),
        (Path::new("sub"), "insidedir"),
        (Path::new("../a.txt"), "sub/back"),
        (Path::new("sub/deeper/../../a.txt"), "winding"),
    ];
    for (target, name) in links {
        symlink(target, dir.join(name)).unwrap();
    }
    let root = Root::open(&dir).unwrap();
    Fixture {
        _tmp: tmp,
        outside,
        dir,
        root,
    }
}

/// Every path in the fixture that leads outside the root.
const ESCAPING: [&str; 11] = [
    "etc",
    "etc/passwd",
    "link",
    "link/passwd",
    "up",
    "updir",
    "updir/secret",
    "sneaky",
    "abs_inside",
    "loop1",
    "updir/emptydir",
];

/// Asserts that `$result` is an `Err` matching `$pattern`.
macro_rules! assert_err {
    ($result:expr, $pattern:pat) => {{
        let result = $result;
        assert!(
            matches!(result, Err($pattern)),
            "{}: {result:?}",
            stringify!($result)
        );
    }};
}

#[track_caller]
fn assert_escapes<T: std::fmt::Debug>(result: Result<T, RootError>, what: &str) {
    assert!(
        matches!(result, Err(RootError::Escapes { .. })),
        "{what}: expected Escapes, got {result:?}"
    );
}

#[track_caller]
fn assert_invalid<T: std::fmt::Debug>(result: Result<T, RootError>, what: &str) {
    assert!(
        matches!(result, Err(RootError::InvalidPath { .. })),
        "{what}: expected InvalidPath, got {result:?}"
    );
}

/// Temporary files of stores in `dir`, found by listing it directly.
fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.as_bytes().starts_with(TEMP_PREFIX))
        .collect()
}

fn names(entries: &[Entry]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| std::str::from_utf8(&e.name).unwrap())
        .collect()
}

fn read(root: &Root, rel: &str) -> String {
    let mut text = String::new();
    root.open_read(rel.as_bytes())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn open_requires_an_existing_directory() {
    let fx = fixture();
    assert_eq!(fx.root.path(), fx.dir.as_path());
    assert_err!(
        Root::open(&fx.dir.join("a.txt")),
        RootError::NotADirectory { .. }
    );
    assert_err!(
        Root::open(&fx.dir.join("missing")),
        RootError::NotFound { .. }
    );
}

#[test]
fn metadata_follows_links_that_stay_beneath_the_root() {
    let fx = fixture();
    let a = fx.root.metadata(b"a.txt").unwrap();
    assert_eq!((a.kind, a.size_bytes, a.mode), (Kind::File, 5, 0o640));
    assert!(a.modified_unix > 1_600_000_000, "{a:?}");
    assert_eq!(fx.root.metadata(b"").unwrap().kind, Kind::Dir);
    assert_eq!(fx.root.metadata(b"sub/deeper").unwrap().kind, Kind::Dir);
    for (rel, size_bytes) in [
        ("inside", 3),
        ("sub/back", 5),
        ("winding", 5),
        ("insidedir/b.txt", 3),
    ] {
        let st = fx.root.metadata(rel.as_bytes()).unwrap();
        assert_eq!((st.kind, st.size_bytes), (Kind::File, size_bytes), "{rel}");
    }
    assert_eq!(fx.root.metadata(b"insidedir").unwrap().kind, Kind::Dir);
}

#[test]
fn metadata_refuses_every_escape() {
    let fx = fixture();
    for rel in ESCAPING {
        assert_escapes(fx.root.metadata(rel.as_bytes()), rel);
    }
    assert_err!(fx.root.metadata(b"dangling"), RootError::NotFound { .. });
    assert_err!(
        fx.root.metadata(b"a.txt/x"),
        RootError::NotADirectory { .. }
    );
}

#[test]
fn read_dir_is_sorted_and_leaves_out_escaping_dangling_and_temporary_names() {
    let fx = fixture();
    fs::write(fx.dir.join(".rightsize-part.a.txt.1.2"), "partial").unwrap();
    let entries = fx.root.read_dir(b"").unwrap();
    assert_eq!(
        names(&entries),
        [
            ".hidden",
            "a.txt",
            "empty",
            "inside",
            "insidedir",
            "sub",
            "winding"
        ]
    );
    let inside = entries.iter().find(|e| e.name == b"inside").unwrap();
    assert_eq!((inside.stat.kind, inside.stat.size_bytes), (Kind::File, 3));
    let insidedir = entries.iter().find(|e| e.name == b"insidedir").unwrap();
    assert_eq!(insidedir.stat.kind, Kind::Dir);
    let sub = fx.root.read_dir(b"sub").unwrap();
    assert_eq!(names(&sub), ["b.txt", "back", "deeper"]);
    assert_eq!(sub, fx.root.read_dir(b"insidedir").unwrap());
    assert!(fx.root.read_dir(b"empty").unwrap().is_empty());
}

#[test]
fn read_dir_refuses_escapes_and_non_directories() {
    let fx = fixture();
    for rel in ["etc", "link", "updir", "updir/emptydir", "loop1"] {
        assert_escapes(fx.root.read_dir(rel.as_bytes()), rel);
    }
    assert_err!(fx.root.read_dir(b"a.txt"), RootError::NotADirectory { .. });
    assert_err!(fx.root.read_dir(b"dangling"), RootError::NotFound { .. });
}

#[test]
fn open_read_reads_regular_files_only_and_never_escapes() {
    let fx = fixture();
    assert_eq!(read(&fx.root, "a.txt"), "hello");
    assert_eq!(read(&fx.root, "inside"), "bee");
    assert_eq!(read(&fx.root, "sub/back"), "hello");
    for rel in ESCAPING {
        assert_escapes(fx.root.open_read(rel.as_bytes()), rel);
    }
    assert_err!(fx.root.open_read(b"sub"), RootError::IsADirectory { .. });
    let fifo = CString::new(fx.dir.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // Would block forever if the FIFO were opened for reading.
    assert_err!(
        fx.root.open_read(b"fifo"),
        RootError::NotAFile {
            found: "a FIFO",
            ..
        }
    );
    assert_err!(fx.root.open_read(b"dangling"), RootError::NotFound { .. });
}

#[test]
fn create_dir_creates_beneath_the_root_only() {
    let fx = fixture();
    fx.root.create_dir(b"new").unwrap();
    assert!(fx.dir.join("new").is_dir());
    fx.root.create_dir(b"insidedir/via_link").unwrap();
    assert!(fx.dir.join("sub/via_link").is_dir());
    for rel in ["new", "a.txt", "dangling", "up"] {
        let again = fx.root.create_dir(rel.as_bytes());
        assert!(
            matches!(again, Err(RootError::AlreadyExists { .. })),
            "{rel}: {again:?}"
        );
    }
    assert!(
        !fx.dir.join("nope").exists(),
        "mkdir followed the dangling link"
    );
    for rel in [
        "link/evil",
        "updir/evil",
        "updir/emptydir/evil",
        "sneaky/evil",
    ] {
        assert_escapes(fx.root.create_dir(rel.as_bytes()), rel);
    }
    assert!(!fx.outside.join("evil").exists());
    assert!(!fx.outside.join("emptydir/evil").exists());
    assert_err!(fx.root.create_dir(b"missing/x"), RootError::NotFound { .. });
}

#[test]
fn remove_dir_removes_empty_directories_beneath_the_root_only() {
    let fx = fixture();
    assert_err!(fx.root.remove_dir(b"sub"), RootError::NotEmpty { .. });
    assert_err!(
        fx.root.remove_dir(b"a.txt"),
        RootError::NotADirectory { .. }
    );
    assert_err!(
        fx.root.remove_dir(b"insidedir"),
        RootError::NotADirectory { .. }
    );
    assert!(fx.dir.join("sub").is_dir() && fx.dir.join("insidedir").is_symlink());
    assert_escapes(fx.root.remove_dir(b"updir/emptydir"), "updir/emptydir");
    assert_escapes(fx.root.remove_dir(b"link/emptydir"), "link/emptydir");
    assert!(fx.outside.join("emptydir").is_dir());
    fx.root.remove_dir(b"empty").unwrap();
    assert!(!fx.dir.join("empty").exists());
    fx.root.remove_dir(b"insidedir/deeper").unwrap();
    assert!(!fx.dir.join("sub/deeper").exists());
}

#[test]
fn remove_file_removes_links_themselves_never_their_targets() {
    let fx = fixture();
    for rel in ["up", "link", "etc", "dangling", "abs_inside"] {
        fx.root.remove_file(rel.as_bytes()).unwrap();
        assert!(
            fs::symlink_metadata(fx.dir.join(rel)).is_err(),
            "{rel} still there"
        );
    }
    assert_eq!(
        fs::read_to_string(fx.outside.join("secret")).unwrap(),
        "secret"
    );
    assert!(fx.outside.join("passwd").is_file() && Path::new("/etc").is_dir());
    assert_eq!(fs::read_to_string(fx.dir.join("a.txt")).unwrap(), "hello");
    for rel in ["updir/secret", "updir/passwd", "sneaky/x"] {
        assert_escapes(fx.root.remove_file(rel.as_bytes()), rel);
    }
    assert!(fx.outside.join("secret").is_file());
    assert_err!(fx.root.remove_file(b"sub"), RootError::IsADirectory { .. });
    assert_err!(fx.root.remove_file(b"missing"), RootError::NotFound { .. });
    fx.root.remove_file(b"insidedir/b.txt").unwrap();
    assert!(!fx.dir.join("sub/b.txt").exists());
}

#[test]
fn rename_moves_within_the_root_only() {
    let fx = fixture();
    fx.root.rename(b"a.txt", b"sub/deeper/a2.txt").unwrap();
    assert_eq!(
        fs::read_to_string(fx.dir.join("sub/deeper/a2.txt")).unwrap(),
        "hello"
    );
    // Out of the root through an escaping directory, and into it.
    assert_escapes(fx.root.rename(b"sub/b.txt", b"link/stolen"), "into link/");
    assert_escapes(fx.root.rename(b"sub/b.txt", b"updir/stolen"), "into updir/");
    assert!(fx.dir.join("sub/b.txt").is_file() && !fx.outside.join("stolen").exists());
    assert_escapes(fx.root.rename(b"updir/secret", b"stolen"), "from updir/");
    assert_escapes(fx.root.rename(b"link/passwd", b"stolen"), "from link/");
    assert!(fx.outside.join("secret").is_file() && !fx.dir.join("stolen").exists());
    // A link is renamed itself; it still escapes under its new name.
    fx.root.rename(b"up", b"up2").unwrap();
    assert_eq!(
        fs::read_link(fx.dir.join("up2")).unwrap(),
        Path::new("../outside/secret")
    );
    assert_escapes(fx.root.metadata(b"up2"), "up2");
    // Renaming over an escaping link replaces the link, not its target.
    fx.root.rename(b"sub/b.txt", b"up2").unwrap();
    assert_eq!(fs::read_to_string(fx.dir.join("up2")).unwrap(), "bee");
    assert_eq!(
        fs::read_to_string(fx.outside.join("secret")).unwrap(),
        "secret"
    );
    assert_err!(fx.root.rename(b"empty", b"sub"), RootError::NotEmpty { .. });
    assert_err!(fx.root.rename(b"missing", b"x"), RootError::NotFound { .. });
    let into_itself = fx.root.rename(b"sub", b"sub/deeper/sub");
    assert_err!(into_itself, RootError::InvalidPath { .. });
}

#[test]
fn a_new_file_appears_only_at_commit_with_all_its_content() {
    let fx = fixture();
    let mut pending = fx.root.begin_store(b"sub/new.bin", Keep::Nothing).unwrap();
    assert_eq!(pending.written_from(), 0);
    pending.file().write_all(b"new content").unwrap();
    assert!(
        !fx.dir.join("sub/new.bin").exists(),
        "final name exists before commit"
    );
    assert_eq!(temp_files(&fx.dir.join("sub")).len(), 1);
    assert_eq!(
        names(&fx.root.read_dir(b"sub").unwrap()),
        ["b.txt", "back", "deeper"]
    );
    assert_eq!(pending.commit().unwrap(), 11);
    assert_eq!(read(&fx.root, "sub/new.bin"), "new content");
    assert!(temp_files(&fx.dir.join("sub")).is_empty());
}

#[test]
fn an_overwrite_keeps_the_old_content_until_commit_and_the_mode_after() {
    let fx = fixture();
    let mut pending = fx.root.begin_store(b"a.txt", Keep::Nothing).unwrap();
    pending.file().write_all(b"replaced!").unwrap();
    assert_eq!(read(&fx.root, "a.txt"), "hello");
    assert_eq!(pending.commit().unwrap(), 9);
    assert_eq!(read(&fx.root, "a.txt"), "replaced!");
    assert_eq!(fx.root.metadata(b"a.txt").unwrap().mode, 0o640);
    assert!(temp_files(&fx.dir).is_empty());
}

#[test]
fn a_dropped_store_leaves_no_trace() {
    let fx = fixture();
    let mut fresh = fx.root.begin_store(b"gone.bin", Keep::Nothing).unwrap();
    fresh.file().write_all(b"partial").unwrap();
    let mut over = fx.root.begin_store(b"a.txt", Keep::Everything).unwrap();
    over.file().write_all(b" partial").unwrap();
    assert_eq!(temp_files(&fx.dir).len(), 2);
    drop(fresh);
    drop(over);
    assert!(temp_files(&fx.dir).is_empty());
    assert!(!fx.dir.join("gone.bin").exists());
    assert_eq!(read(&fx.root, "a.txt"), "hello");
}

#[test]
fn keep_prefix_and_everything_write_after_the_kept_bytes() {
    let fx = fixture();
    let mut rest = fx.root.begin_store(b"a.txt", Keep::Prefix(2)).unwrap();
    assert_eq!(rest.written_from(), 2);
    assert_eq!(rest.file().stream_position().unwrap(), 2);
    rest.file().write_all(b"LP").unwrap();
    assert_eq!(rest.commit().unwrap(), 4);
    assert_eq!(read(&fx.root, "a.txt"), "heLP");

    let mut append = fx.root.begin_store(b"a.txt", Keep::Everything).unwrap();
    assert_eq!(append.written_from(), 4);
    append.file().write_all(b" me").unwrap();
    append.commit().unwrap();
    assert_eq!(read(&fx.root, "a.txt"), "heLP me");

    let mut whole = fx.root.begin_store(b"a.txt", Keep::Prefix(7)).unwrap();
    assert_eq!(whole.written_from(), 7);
    whole.file().write_all(b"!").unwrap();
    whole.commit().unwrap();
    assert_eq!(read(&fx.root, "a.txt"), "heLP me!");

    let zero = fx.root.begin_store(b"a.txt", Keep::Prefix(0)).unwrap();
    assert_eq!((zero.written_from(), zero.commit().unwrap()), (0, 0));
}

#[test]
fn keep_everything_copies_a_large_file_exactly() {
    let fx = fixture();
    let size_bytes = 3 * 1024 * 1024 + 7;
    let data: Vec<u8> = (0..size_bytes).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(fx.dir.join("big.bin"), &data).unwrap();
    let mut pending = fx.root.begin_store(b"big.bin", Keep::Everything).unwrap();
    assert_eq!(pending.written_from(), size_bytes as u64);
    pending.file().write_all(b"tail").unwrap();
    assert_eq!(pending.commit().unwrap(), size_bytes as u64 + 4);
    let stored = fs::read(fx.dir.join("big.bin")).unwrap();
    assert_eq!(&stored[..size_bytes], &data[..]);
    assert_eq!(&stored[size_bytes..], b"tail");
}

#[test]
fn a_restart_offset_beyond_the_end_is_refused() {
    let fx = fixture();
    assert_err!(
        fx.root.begin_store(b"a.txt", Keep::Prefix(6)),
        RootError::RestBeyondEnd {
            offset_bytes: 6,
            len_bytes: 5,
            ..
        }
    );
    assert_err!(
        fx.root.begin_store(b"missing", Keep::Prefix(1)),
        RootError::RestBeyondEnd {
            offset_bytes: 1,
            len_bytes: 0,
            ..
        }
    );
    for (rel, keep) in [("m0", Keep::Prefix(0)), ("mall", Keep::Everything)] {
        let pending = fx.root.begin_store(rel.as_bytes(), keep).unwrap();
        assert_eq!((pending.written_from(), pending.commit().unwrap()), (0, 0));
        assert_eq!(read(&fx.root, rel), "");
    }
    assert!(temp_files(&fx.dir).is_empty());
}

#[test]
fn a_store_never_writes_through_a_link_or_an_escaping_directory() {
    let fx = fixture();
    for rel in [
        "link/evil",
        "updir/evil",
        "updir/secret",
        "link/passwd",
        "sneaky/x",
    ] {
        for keep in [Keep::Nothing, Keep::Everything] {
            assert_escapes(fx.root.begin_store(rel.as_bytes(), keep), rel);
        }
    }
    for rel in ["up", "inside", "etc", "dangling", "abs_inside", "loop1"] {
        for keep in [Keep::Nothing, Keep::Everything] {
            let result = fx.root.begin_store(rel.as_bytes(), keep);
            assert!(
                matches!(
                    result,
                    Err(RootError::NotAFile {
                        found: "a symbolic link",
                        ..
                    })
                ),
                "{rel}: {result:?}"
            );
        }
        assert!(fx.dir.join(rel).is_symlink());
    }
    assert_err!(
        fx.root.begin_store(b"sub", Keep::Nothing),
        RootError::IsADirectory { .. }
    );
    assert_eq!(
        fs::read_to_string(fx.outside.join("secret")).unwrap(),
        "secret"
    );
    assert_eq!(
        fs::read_to_string(fx.outside.join("passwd")).unwrap(),
        "outside passwd"
    );
    assert!(!fx.outside.join("evil").exists() && !fx.dir.join("nope").exists());
    assert!(temp_files(&fx.dir).is_empty() && temp_files(&fx.outside).is_empty());
}

#[test]
fn stores_of_the_longest_name_and_concurrent_stores_of_one_name_work() {
    let fx = fixture();
    let long = "n".repeat(255);
    let mut pending = fx.root.begin_store(long.as_bytes(), Keep::Nothing).unwrap();
    pending.file().write_all(b"long").unwrap();
    pending.commit().unwrap();
    assert_eq!(read(&fx.root, &long), "long");

    let mut first = fx.root.begin_store(b"same", Keep::Nothing).unwrap();
    let mut second = fx.root.begin_store(b"same", Keep::Nothing).unwrap();
    first.file().write_all(b"first").unwrap();
    second.file().write_all(b"second").unwrap();
    second.commit().unwrap();
    first.commit().unwrap();
    assert_eq!(read(&fx.root, "same"), "first");
    assert!(temp_files(&fx.dir).is_empty());
}

#[test]
fn invalid_paths_are_refused_by_every_operation() {
    let fx = fixture();
    let bad: [&[u8]; 10] = [
        b"..",
        b"../outside/secret",
        b"/etc/passwd",
        b"a//b",
        b"sub/",
        b"a\0b",
        b".",
        b"sub/../a.txt",
        b".rightsize-part.a.txt.1.2",
        b"sub/./b.txt",
    ];
    for rel in bad {
        let what = String::from_utf8_lossy(rel);
        assert_invalid(fx.root.metadata(rel), &what);
        assert_invalid(fx.root.read_dir(rel), &what);
        assert_invalid(fx.root.open_read(rel), &what);
        assert_invalid(fx.root.create_dir(rel), &what);
        assert_invalid(fx.root.remove_dir(rel), &what);
        assert_invalid(fx.root.remove_file(rel), &what);
        assert_invalid(fx.root.rename(rel, b"x"), &what);
        assert_invalid(fx.root.rename(b"a.txt", rel), &what);
        assert_invalid(fx.root.begin_store(rel, Keep::Nothing), &what);
    }
    // Name operations cannot act on the root itself.
    assert_invalid(fx.root.create_dir(b""), "create_dir(root)");
    assert_invalid(fx.root.remove_dir(b""), "remove_dir(root)");
    assert_invalid(fx.root.remove_file(b""), "remove_file(root)");
    assert_invalid(fx.root.rename(b"", b"x"), "rename(root)");
    assert_invalid(fx.root.begin_store(b"", Keep::Nothing), "begin_store(root)");
    assert!(fx.dir.join("a.txt").is_file() && !fx.dir.join("x").exists());
}

#[test]
fn proc_magic_links_are_refused() {
    // Served from /proc/self, `cwd`, `root`, `exe` and `fd/N` are magic
    // links: jumps the kernel makes without a path, which RESOLVE_BENEATH
    // could not otherwise check.
    let proc_self = Root::open(Path::new("/proc/self")).unwrap();
    for rel in ["cwd", "root", "exe", "fd/0", "root/etc/passwd"] {
        assert_escapes(proc_self.metadata(rel.as_bytes()), rel);
        assert_escapes(proc_self.open_read(rel.as_bytes()), rel);
    }
    let names = names(&proc_self.read_dir(b"").unwrap())
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    assert!(names.contains(&"status".to_owned()) && !names.contains(&"cwd".to_owned()));
    assert_eq!(proc_self.metadata(b"status").unwrap().kind, Kind::File);
}

#[test]
fn a_kept_store_is_hidden_continued_from_its_rest_point_and_cleared_by_a_commit() {
    let fx = fixture();
    // A cut upload is kept: hidden, not under its name, its size known.
    let mut cut = fx.root.begin_store(b"sub/big.bin", Keep::Nothing).unwrap();
    cut.file().write_all(b"0123456789").unwrap();
    assert_eq!(cut.keep().unwrap(), Some(10));
    assert!(!fx.dir.join("sub/big.bin").exists());
    assert_eq!(
        temp_files(&fx.dir.join("sub")),
        [".rightsize-part.big.bin.kept"]
    );
    assert_eq!(
        names(&fx.root.read_dir(b"sub").unwrap()),
        ["b.txt", "back", "deeper"]
    );
    assert_eq!(fx.root.kept_part(b"sub/big.bin").unwrap(), Some(10));
    assert_eq!(fx.root.kept_part(b"sub/b.txt").unwrap(), None);
    // A rest point beyond it is refused, and the part stays.
    assert!(matches!(
        fx.root.begin_store(b"sub/big.bin", Keep::Prefix(11)),
        Err(RootError::RestBeyondEnd {
            offset_bytes: 11,
            len_bytes: 10,
            ..
        })
    ));
    assert_eq!(fx.root.kept_part(b"sub/big.bin").unwrap(), Some(10));
    // REST 8 and STOR: the part's first 8 bytes, then the new ones.
    let mut more = fx
        .root
        .begin_store(b"sub/big.bin", Keep::Prefix(8))
        .unwrap();
    assert_eq!(more.written_from(), 8);
    assert_eq!(fx.root.kept_part(b"sub/big.bin").unwrap(), None);
    more.file().write_all(b"89abc").unwrap();
    assert_eq!(more.commit().unwrap(), 13);
    assert_eq!(read(&fx.root, "sub/big.bin"), "0123456789abc");
    assert!(temp_files(&fx.dir.join("sub")).is_empty());
    // A part kept of an overwrite is cleared by the next whole store.
    let mut cut = fx.root.begin_store(b"a.txt", Keep::Nothing).unwrap();
    cut.file().write_all(b"half").unwrap();
    assert_eq!(cut.keep().unwrap(), Some(4));
    assert_eq!(read(&fx.root, "a.txt"), "hello");
    let mut whole = fx.root.begin_store(b"a.txt", Keep::Nothing).unwrap();
    whole.file().write_all(b"whole").unwrap();
    whole.commit().unwrap();
    assert_eq!(fx.root.kept_part(b"a.txt").unwrap(), None);
    assert!(temp_files(&fx.dir).is_empty());
    // A name too long for a kept part is not kept.
    let long = "n".repeat(250);
    let mut cut = fx.root.begin_store(long.as_bytes(), Keep::Nothing).unwrap();
    cut.file().write_all(b"x").unwrap();
    assert_eq!(cut.keep().unwrap(), None);
    assert!(temp_files(&fx.dir).is_empty());
}
