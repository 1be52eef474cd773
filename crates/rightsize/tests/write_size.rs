//! `--write-size` over loopback: `serve --write-size` sends a file and the
//! zero source intact in write(2) pieces, `put --write-size` uploads a file
//! intact, both ends' telemetry headers and put's JSON record the size, and
//! bad values are usage errors (exit 2) that quote the input. How the
//! pieces are cut is pinned by the unit tests of `rightsize_ftp::writes`.
#![allow(clippy::unwrap_used)]

mod serve_support;
mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use serve_support::{Serve, add_user};
use support::{assert_success, json, rightsize, same_bytes};

/// Not a multiple of 1024 or 1000, so the last piece is a short one.
const FILE_BYTES: usize = (3 << 20) + 777;
const ZERO_BYTES: u64 = 5_000_003;

/// The first line of a telemetry file: its header.
fn header(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// The server's telemetry files whose names end with `suffix`.
fn server_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

#[test]
fn serve_and_put_with_a_write_size_move_every_byte_and_record_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("pub")).unwrap();
    let content = support::random_bytes(FILE_BYTES, 4);
    std::fs::write(root.join("pub/data.bin"), &content).unwrap();
    let users = dir.path().join("users");
    add_user(&users, "alice", "pw-alice", false);
    let tele = dir.path().join("server-telemetry");
    let serve = Serve::start(
        &root,
        &[
            "--write-size",
            "1024",
            "--users",
            users.to_str().unwrap(),
            "--telemetry-dir",
            tele.to_str().unwrap(),
        ],
    );

    // A file: the bytes, and the server's SHA256 of its file (--verify).
    let got = dir.path().join("got.bin");
    let out = rightsize(&[
        "get",
        &serve.url("/pub/data.bin"),
        "-o",
        got.to_str().unwrap(),
        "--verify",
        "--json",
    ]);
    assert_success(&out, None);
    let summary = json(&out);
    assert_eq!(summary["checksum"]["verified"], true, "{summary}");
    assert_eq!(summary["bytes"], FILE_BYTES);
    // The downloading client wrote nothing.
    assert_eq!(summary["write_size_bytes"], Value::Null);
    assert!(same_bytes(&got, &content), "the download differs");

    // The zero source (CKSM has no file to sum): every byte a zero.
    let zeros = dir.path().join("zeros.bin");
    let out = rightsize(&[
        "get",
        &serve.url(&format!("/.rightsize/zero/{ZERO_BYTES}")),
        "-o",
        zeros.to_str().unwrap(),
    ]);
    assert_success(&out, None);
    let bytes = std::fs::read(&zeros).unwrap();
    assert_eq!(bytes.len() as u64, ZERO_BYTES);
    assert!(
        bytes.iter().all(|&b| b == 0),
        "the zero source sent a non-zero"
    );

    // Both sending connections say 1024 in their headers.
    let retrs = server_files(&tele, "-retr.jsonl");
    assert_eq!(retrs.len(), 2, "{retrs:?}");
    for file in &retrs {
        let h = header(file);
        assert_eq!(h["direction"], "send");
        assert_eq!(h["settings"]["write_size_bytes"], "1024", "{h}");
    }

    // An upload in 1000-byte writes arrives whole, and both sums match.
    let client_tele = dir.path().join("put.jsonl");
    let local = dir.path().join("up.bin");
    std::fs::write(&local, &content).unwrap();
    let url = format!("ftp://alice:pw-alice@{}/pub/up.bin", serve.addr);
    let out = rightsize(&[
        "put",
        local.to_str().unwrap(),
        &url,
        "--write-size",
        "1000",
        "--verify",
        "--json",
        "--telemetry",
        client_tele.to_str().unwrap(),
    ]);
    assert_success(&out, None);
    let summary = json(&out);
    assert_eq!(summary["checksum"]["verified"], true, "{summary}");
    assert_eq!(summary["write_size_bytes"], 1000, "{summary}");
    assert!(
        same_bytes(&root.join("pub/up.bin"), &content),
        "the upload differs"
    );
    let h = header(&client_tele);
    assert_eq!(
        (&h["direction"], &h["settings"]["write_size_bytes"]),
        (&Value::from("send"), &Value::from("1000")),
        "{h}"
    );
    // The server received that one: no write size in its header.
    let stors = server_files(&tele, "-stor.jsonl");
    assert_eq!(stors.len(), 1, "{stors:?}");
    let h = header(&stors[0]);
    assert_eq!(h["direction"], "receive");
    assert!(h["settings"].get("write_size_bytes").is_none(), "{h}");
}

#[test]
fn without_a_write_size_the_headers_say_default() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let tele = dir.path().join("tele");
    let serve = Serve::start(&root, &["--telemetry-dir", tele.to_str().unwrap()]);
    let out = rightsize(&[
        "get",
        &serve.url("/.rightsize/zero/100000"),
        "-o",
        "/dev/null",
        "--json",
    ]);
    assert_success(&out, None);
    let retrs = server_files(&tele, "-retr.jsonl");
    assert_eq!(retrs.len(), 1, "{retrs:?}");
    assert_eq!(header(&retrs[0])["settings"]["write_size_bytes"], "default");
}

#[test]
fn bad_write_sizes_are_usage_errors_that_quote_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let file = file.to_str().unwrap();
    let root = dir.path().to_str().unwrap();
    for bad in ["0", "17MiB", "16777217", "abc", "-5"] {
        for args in [
            vec!["serve", "--root", root, "--write-size", bad],
            vec!["put", file, "ftp://127.0.0.1:1/f", "--write-size", bad],
        ] {
            let out = rightsize(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(&format!("\"{bad}\"")), "{args:?}: {stderr}");
            assert!(stderr.contains("1 to 16777216 bytes"), "{args:?}: {stderr}");
        }
    }
    // get receives: it has no write size.
    let out = rightsize(&["get", "ftp://127.0.0.1:1/f", "--write-size", "1024"]);
    assert_eq!(out.status.code(), Some(2));
}
