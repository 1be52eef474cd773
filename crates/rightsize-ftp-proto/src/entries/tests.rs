#![allow(clippy::unwrap_used)]

use super::*;

fn file(name: &str, size: u64) -> Option<Entry> {
    Some(Entry {
        name: name.as_bytes().to_vec(),
        kind: EntryKind::File,
        size: Some(size),
    })
}

fn dir(name: &str) -> Option<Entry> {
    Some(Entry {
        name: name.as_bytes().to_vec(),
        kind: EntryKind::Dir,
        size: None,
    })
}

#[test]
fn mlsd_lines_of_rightsize_and_globus() {
    let ours = b"type=file;size=65536;modify=20261126100000;perm=r; a b.bin\r\n";
    assert_eq!(parse_mlsx(ours), Ok(file("a b.bin", 65_536)));
    let globus = b"Type=dir;Modify=20261126100000;Perm=cfmpel;UNIX.mode=0755; sub";
    assert_eq!(parse_mlsx(globus), Ok(dir("sub")));
    assert_eq!(parse_mlsx(b"type=cdir;perm=el; ."), Ok(None));
    assert_eq!(parse_mlsx(b"Type=pdir; .."), Ok(None));
    let globus_link = b"Type=dir;Size=4096;Perm=el;UNIX.mode=0755;UNIX.slink=/etc; link";
    assert_eq!(
        parse_mlsx(globus_link).unwrap().unwrap().kind,
        EntryKind::Other
    );
    let link = parse_mlsx(b"type=OS.unix=slink:/etc;size=4; l")
        .unwrap()
        .unwrap();
    assert_eq!(link.kind, EntryKind::Other);
}

#[test]
fn mlsd_errors_quote_the_line() {
    let e = parse_mlsx(b"size=1; nofacttype").unwrap_err();
    assert!(e.to_string().contains("\"size=1; nofacttype\""), "{e}");
    assert!(parse_mlsx(b"type=file;size=x1; a").is_err());
    assert!(parse_mlsx(b"no-space").is_err());
    assert!(parse_mlsx(b"type=file;oops; a").is_err());
}

#[test]
fn unix_list_lines() {
    let vsftpd = b"-rw-r--r--    1 0        0           65536 Nov 26 10:00 f 1.bin";
    assert_eq!(parse_list(vsftpd), Ok(file("f 1.bin", 65_536)));
    let old = b"drwxr-xr-x    2 ftp      ftp          4096 Jan 02  2024 sub";
    assert_eq!(parse_list(old), Ok(dir("sub")));
    // No group column.
    assert_eq!(
        parse_list(b"-rw-r--r-- 1 owner 12 Dec 31 23:59 x"),
        Ok(file("x", 12))
    );
    assert_eq!(parse_list(b"total 12"), Ok(None));
    assert_eq!(
        parse_list(b"drwxr-xr-x 2 0 0 4096 Nov 26 10:00 .."),
        Ok(None)
    );
    let link = parse_list(b"lrwxrwxrwx 1 0 0 4 Nov 26 10:00 l -> /etc")
        .unwrap()
        .unwrap();
    assert_eq!(link.kind, EntryKind::Other);
}

#[test]
fn dos_list_lines() {
    assert_eq!(
        parse_list(b"11-26-26  10:00AM       <DIR>          a dir"),
        Ok(dir("a dir"))
    );
    assert_eq!(
        parse_list(b"11-26-26  10:00AM                 1234 f.txt\r\n"),
        Ok(file("f.txt", 1234))
    );
}

#[test]
fn names_that_leave_the_directory_are_refused() {
    for line in [
        &b"type=file;size=1; ../etc/passwd"[..],
        b"type=file;size=1; a/b",
        b"type=dir; ..",
        b"type=file;size=1; ",
    ] {
        assert!(
            matches!(parse_mlsx(line), Err(EntryError::UnsafeName { .. })),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
    assert!(matches!(
        parse_list(b"-rw-r--r-- 1 0 0 1 Nov 26 10:00 a/../../b"),
        Err(EntryError::UnsafeName { .. })
    ));
    assert!(is_safe_name(b"...") && !is_safe_name(b"a\0b"));
}

#[test]
fn a_listing_keeps_what_it_can_read() {
    let data = b"type=cdir; .\r\ntype=file;size=3; a\r\ngarbage\r\n\r\ntype=dir; d\r\n";
    let (entries, errors) = parse_listing(data, true);
    assert_eq!(entries.len(), 2);
    assert_eq!(errors.len(), 1);
}

#[test]
fn no_line_makes_a_parser_panic() {
    let samples: [&[u8]; 8] = [
        b"",
        b" ",
        b"=",
        b";;; ",
        b"d",
        b"-rw 1 2 3 4",
        b"11-26-26",
        b"1 Nov",
    ];
    for s in samples {
        let _ = parse_mlsx(s);
        let _ = parse_list(s);
    }
    // Every prefix of real lines, too.
    let line = b"-rw-r--r--    1 0        0           65536 Nov 26 10:00 f.bin";
    for end in 0..line.len() {
        let _ = parse_list(&line[..end]);
    }
}
