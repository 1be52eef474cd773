//! `rightsize get` and `rightsize put` against real servers on 127.0.0.1:
//! pyftpdlib 1.5.7, vsftpd 3.0.3 and globus-gridftp-server 13.24 (Debian
//! packages installed by scripts/setup). Every transfer's bytes are
//! compared with the original; failures must leave nothing under the
//! requested name. Needs root for vsftpd and globus (as CI runs).

#![allow(clippy::unwrap_used)]

mod support;

use support::*;

const MIB: usize = 1 << 20;

#[test]
fn pyftpdlib_get_64_mib_with_a_receive_buffer() {
    let server = pyftpdlib();
    let data = random_bytes(64 * MIB, 1);
    write_public(&files_dir(&server).join("big.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("big.bin");

    let output = rightsize(&[
        "get",
        &server.url("/big.bin"),
        "-o",
        target.to_str().unwrap(),
        "--rcvbuf",
        "4MiB",
        "--congestion",
        "reno",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    assert_eq!(
        names_in(out.path()),
        ["big.bin"],
        "a temporary file was left"
    );

    let json = json(&output);
    assert_eq!(json["direction"], "get");
    assert_eq!(json["bytes"], 64 * MIB);
    assert_eq!(json["expected_bytes"], 64 * MIB);
    assert_eq!(json["data_mode"], "EPSV");
    let rcvbuf = &json["client_buffers"]["applied"]["rcvbuf"];
    assert_eq!(rcvbuf["requested_bytes"], 4 * MIB);
    // Doubled by the kernel, or capped at rmem_max and reported so.
    assert!(
        rcvbuf["applied_bytes"] == 8 * MIB || rcvbuf["clamped_by"].is_string(),
        "{rcvbuf}"
    );
    let congestion = &json["client_buffers"]["applied"]["congestion"];
    assert_eq!(congestion["applied"], "reno", "{congestion}");
    assert!(json["server_buffers"].is_null());
    assert!(json["retransmits"].is_u64(), "{json}");
    assert!(json["goodput_bps"].as_f64().unwrap() > 0.0);
    assert!(json["checksum"].is_null());
}

#[test]
fn pyftpdlib_put_then_get_back_in_active_mode() {
    let server = pyftpdlib();
    let data = random_bytes(3 * MIB + 17, 2);
    let local = tempfile::tempdir().unwrap();
    let source = local.path().join("up.bin");
    write_public(&source, &data);

    let output = rightsize(&["put", source.to_str().unwrap(), &server.url("/up.bin")]);
    assert_success(&output, Some(&server));
    assert!(
        same_bytes(&files_dir(&server).join("up.bin"), &data),
        "uploaded bytes differ"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("3,145,745 bytes"), "{text}");

    let back = local.path().join("back.bin");
    let output = rightsize(&[
        "get",
        &server.url("/up.bin"),
        "-o",
        back.to_str().unwrap(),
        "--active",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&back, &data));
    assert_eq!(json(&output)["data_mode"], "EPRT");
}

#[test]
fn pyftpdlib_verify_without_a_server_checksum_says_not_verified() {
    let server = pyftpdlib();
    let data = random_bytes(MIB, 3);
    write_public(&files_dir(&server).join("f.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-o",
        target.to_str().unwrap(),
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data));
    let stderr = stderr_lines(&output);
    assert_eq!(
        stderr,
        ["rightsize: warning: not verified: the server offers no checksum"]
    );
    let checksum = &json(&output)["checksum"];
    assert_eq!(checksum["verified"], false);
    assert_eq!(
        checksum["note"],
        "not verified: the server offers no checksum"
    );
}

#[test]
fn pyftpdlib_missing_file_is_550_and_leaves_no_file() {
    let server = pyftpdlib();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("nope.bin");
    let output = rightsize(&[
        "get",
        &server.url("/nope.bin"),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_lines(&output);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert_eq!(
        stderr[0],
        format!(
            "rightsize: 127.0.0.1:{}: RETR \"nope.bin\" failed: 550 No such file or directory.",
            server.port
        )
    );
    assert!(
        names_in(out.path()).is_empty(),
        "{:?}",
        names_in(out.path())
    );
}

#[test]
fn pyftpdlib_login_with_a_percent_encoded_password_and_a_wrong_one() {
    let server = pyftpdlib_with_user("alice", "s3cr@t:x");
    let data = random_bytes(MIB / 2, 4);
    write_public(&files_dir(&server).join("f.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");

    let good = format!("ftp://alice:s3cr%40t%3Ax@127.0.0.1:{}/f.bin", server.port);
    let output = rightsize(&["get", &good, "-o", target.to_str().unwrap(), "--json"]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data));
    let json = json(&output);
    assert_eq!(
        json["url"],
        format!("ftp://alice@127.0.0.1:{}/f.bin", server.port)
    );
    assert!(
        !json.to_string().contains("s3cr"),
        "the password leaked: {json}"
    );
    std::fs::remove_file(&target).unwrap();

    let bad = format!("ftp://alice:wrong-pw@127.0.0.1:{}/f.bin", server.port);
    let output = rightsize(&["get", &bad, "-o", target.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_lines(&output);
    assert_eq!(
        stderr,
        [format!(
            "rightsize: 127.0.0.1:{} refused the login as \"alice\": 530 Authentication failed.",
            server.port
        )]
    );
    assert!(names_in(out.path()).is_empty());
}

#[test]
fn pyftpdlib_over_ipv6_passive_and_active() {
    let server = pyftpdlib_v6();
    let data = random_bytes(2 * MIB, 12);
    write_public(&files_dir(&server).join("f.bin"), &data);
    let local = tempfile::tempdir().unwrap();
    for (mode, extra) in [("EPSV", None), ("EPRT", Some("--active"))] {
        let target = local.path().join(format!("{mode}.bin"));
        let mut args = vec!["get", "", "-o", target.to_str().unwrap(), "--json"];
        let url = server.url("/f.bin");
        assert!(url.starts_with("ftp://[::1]:"), "{url}");
        args[1] = &url;
        args.extend(extra);
        let output = rightsize(&args);
        assert_success(&output, Some(&server));
        assert!(same_bytes(&target, &data), "{mode}");
        let json = json(&output);
        assert_eq!(json["data_mode"], mode);
        assert!(
            json["data_peer"].as_str().unwrap().starts_with("[::1]:"),
            "{json}"
        );
    }
    let source = local.path().join("EPSV.bin");
    let output = rightsize(&["put", source.to_str().unwrap(), &server.url("/back.bin")]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&files_dir(&server).join("back.bin"), &data));
}

#[test]
fn vsftpd_get_64_mib() {
    let server = vsftpd();
    let data = random_bytes(64 * MIB, 5);
    write_public(&files_dir(&server).join("big.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("copy.bin");
    let output = rightsize(&[
        "get",
        &server.url("/big.bin"),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    assert_eq!(names_in(out.path()), ["copy.bin"]);
}

#[test]
fn vsftpd_put_into_the_upload_dir_get_active_and_to_stdout() {
    let server = vsftpd();
    let data = random_bytes(4 * MIB, 6);
    let local = tempfile::tempdir().unwrap();
    let source = local.path().join("x.bin");
    write_public(&source, &data);

    // A URL ending in / gets the local file's name, as with curl -T.
    let output = rightsize(&[
        "put",
        source.to_str().unwrap(),
        &server.url("/up/"),
        "-i",
        "10",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&files_dir(&server).join("up/x.bin"), &data));
    // With -i, an iperf3-style line for the last (here the only) interval.
    let text = String::from_utf8_lossy(&output.stdout);
    let interval = text.lines().nth(1).unwrap_or_default();
    assert!(
        interval.starts_with("[  0.00-")
            && interval.contains(" MBytes ")
            && interval.contains("bits/sec"),
        "{text}"
    );

    let back = local.path().join("back.bin");
    let output = rightsize(&[
        "get",
        &server.url("/up/x.bin"),
        "-o",
        back.to_str().unwrap(),
        "--active",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&back, &data));
    assert_eq!(json(&output)["data_mode"], "EPRT");

    let output = rightsize(&["get", &server.url("/up/x.bin"), "-o", "-"]);
    assert_success(&output, Some(&server));
    assert!(output.stdout == data, "stdout differs from the file");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("4,194,304 bytes"),
        "the summary goes to stderr: {stderr}"
    );

    let output = rightsize(&[
        "get",
        &server.url("/missing.bin"),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_lines(&output);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(
        stderr[0].ends_with("550 Failed to open file."),
        "{stderr:?}"
    );
    // The earlier download is still there, untouched.
    assert!(same_bytes(&back, &data));
}

#[test]
fn globus_get_64_mib_verified_with_sbuf() {
    let server = globus();
    let data = random_bytes(64 * MIB, 7);
    let remote = files_dir(&server).join("big.bin");
    write_public(&remote, &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("big.bin");
    // Absolute path, globus-url-copy style.
    let url = server.url(&format!("/{}", remote.display()));
    let output = rightsize(&[
        "get",
        &url,
        "-o",
        target.to_str().unwrap(),
        "--verify",
        "--sbuf",
        "1MiB",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    let json = json(&output);
    let checksum = &json["checksum"];
    assert_eq!(checksum["algorithm"], "SHA256");
    assert_eq!(checksum["verified"], true);
    assert_eq!(checksum["local"], checksum["remote"]);
    assert_eq!(json["sbuf"]["accepted"], true, "{}", json["sbuf"]);
    assert_eq!(json["sbuf"]["requested_bytes"], MIB);
}

#[test]
fn globus_put_verified_and_get_back_with_port() {
    let server = globus();
    let data = random_bytes(4 * MIB + 3, 8);
    let local = tempfile::tempdir().unwrap();
    let source = local.path().join("up.bin");
    write_public(&source, &data);
    let remote = files_dir(&server).join("up.bin");
    let url = server.url(&format!("/{}", remote.display()));

    let output = rightsize(&["put", source.to_str().unwrap(), &url, "--verify", "--json"]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&remote, &data), "uploaded bytes differ");
    assert_eq!(json(&output)["checksum"]["verified"], true);

    // Globus lists no EPRT in FEAT, so active mode uses PORT.
    let back = local.path().join("back.bin");
    let output = rightsize(&[
        "get",
        &url,
        "-o",
        back.to_str().unwrap(),
        "--active",
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&back, &data));
    let json = json(&output);
    assert_eq!(json["data_mode"], "PORT");
    assert_eq!(json["checksum"]["verified"], true);
}

#[test]
fn globus_answers_a_missing_file_with_500_not_550() {
    let server = globus();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let missing = files_dir(&server).join("missing.bin");
    let url = server.url(&format!("/{}", missing.display()));
    let output = rightsize(&["get", &url, "-o", target.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_lines(&output);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(
        stderr[0].contains(&format!("RETR \"{}\" failed: 500 ", missing.display()))
            && stderr[0].contains("No such file or directory"),
        "{stderr:?}"
    );
    assert!(names_in(out.path()).is_empty());
}

#[test]
fn vsftpd_get_resumes_after_the_bytes_of_the_part_file() {
    let server = vsftpd();
    let data = random_bytes(4 * MIB + 5, 8);
    write_public(&files_dir(&server).join("big.bin"), &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("copy.bin");
    // What a download that stopped kept: its first 1 MiB + 3 bytes.
    let kept = MIB + 3;
    std::fs::write(out.path().join(".copy.bin.rightsize-part"), &data[..kept]).unwrap();
    let output = rightsize(&[
        "get",
        "-C",
        &server.url("/big.bin"),
        "-o",
        target.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "resumed bytes differ");
    assert_eq!(json(&output)["resumed_bytes"], kept as u64);
    assert_eq!(json(&output)["bytes"], (data.len() - kept) as u64);
    assert_eq!(names_in(out.path()), ["copy.bin"]);
}

#[test]
fn pyftpdlib_put_resumes_after_the_bytes_the_server_has() {
    let server = pyftpdlib();
    let data = random_bytes(2 * MIB + 9, 9);
    let local = tempfile::tempdir().unwrap();
    let source = local.path().join("up.bin");
    write_public(&source, &data);
    write_public(&files_dir(&server).join("up.bin"), &data[..777]);
    let output = rightsize(&[
        "put",
        "--continue",
        source.to_str().unwrap(),
        &server.url("/up.bin"),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&files_dir(&server).join("up.bin"), &data));
    assert_eq!(json(&output)["resumed_bytes"], 777);
    assert_eq!(json(&output)["bytes"], (data.len() - 777) as u64);
}

#[test]
fn globus_get_and_put_over_four_streams_verified() {
    let server = globus();
    let data = random_bytes(24 * MIB + 5, 10);
    let remote = files_dir(&server).join("p4.bin");
    write_public(&remote, &data);
    let url = server.url(&format!("/{}", remote.display()));
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("p4.bin");
    let output = rightsize(&[
        "get",
        &url,
        "-P",
        "4",
        "-o",
        target.to_str().unwrap(),
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "downloaded bytes differ");
    let summary = json(&output);
    assert_eq!(summary["streams"], 4);
    assert_eq!(summary["bytes"], data.len() as u64);
    assert_eq!(summary["checksum"]["verified"], true);
    assert_eq!(names_in(out.path()), ["p4.bin"]);

    let up = files_dir(&server).join("p4-up.bin");
    let up_url = server.url(&format!("/{}", up.display()));
    let output = rightsize(&[
        "put",
        target.to_str().unwrap(),
        &up_url,
        "--parallel",
        "4",
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&up, &data), "uploaded bytes differ");
    assert_eq!(json(&output)["streams"], 4);
    assert_eq!(json(&output)["checksum"]["verified"], true);
}

#[test]
fn parallel_streams_against_a_server_without_mode_e_fail_clearly() {
    let server = vsftpd();
    write_public(&files_dir(&server).join("f.bin"), b"data");
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("f.bin");
    let output = rightsize(&[
        "get",
        &server.url("/f.bin"),
        "-P",
        "4",
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_lines(&output);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(
        stderr[0].contains("does not send over parallel streams (MODE E answered \"504"),
        "{stderr:?}"
    );
    assert!(
        names_in(out.path()).is_empty(),
        "{:?}",
        names_in(out.path())
    );
}

/// A tree of `files` small files, a deeper one, an empty one and one with
/// a space, under `root/set`, readable by every server user.
fn public_tree(root: &std::path::Path, files: usize) -> Vec<(String, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut made = Vec::new();
    for dir in ["set", "set/a", "set/a/b", "set/c"] {
        let path = root.join(dir);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut add = |name: String, bytes: Vec<u8>| {
        write_public(&root.join("set").join(&name), &bytes);
        made.push((name, bytes));
    };
    for i in 0..files {
        add(
            format!("a/f{i}.bin"),
            random_bytes(1000 + i * 997, i as u64),
        );
    }
    add("a/b/deep.bin".to_owned(), random_bytes(MIB + 7, 99));
    add("c/empty".to_owned(), Vec::new());
    add("with space.txt".to_owned(), b"spaced\n".to_vec());
    made
}

#[test]
fn vsftpd_get_r_a_tree_over_list_then_skip_it_with_c() {
    let server = vsftpd();
    let made = public_tree(&files_dir(&server), 40);
    std::os::unix::fs::symlink("/etc", files_dir(&server).join("set/link")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy");
    let args = [
        "get",
        "-r",
        &server.url("/set/"),
        "-o",
        copy.to_str().unwrap(),
        "--json",
    ];
    let output = rightsize(&args);
    assert_success(&output, Some(&server));
    for (name, bytes) in &made {
        assert!(same_bytes(&copy.join(name), bytes), "{name} differs");
    }
    let summary = json(&output);
    assert_eq!(summary["files"], made.len() as u64);
    assert_eq!(summary["directories"], 4);
    assert_eq!(summary["connections"], 4);
    assert_eq!(names_in(&copy), ["a", "c", "with space.txt"]);
    assert!(
        stderr_lines(&output)
            .iter()
            .any(|l| l.contains("skipped \"link\"")),
        "the link is not named: {:?}",
        stderr_lines(&output)
    );
    // Again with -C: everything is there already.
    let mut again = args.to_vec();
    again.insert(1, "-C");
    let output = rightsize(&again);
    assert_success(&output, Some(&server));
    let summary = json(&output);
    assert_eq!(summary["skipped_files"], made.len() as u64);
    assert_eq!(summary["files"], 0);
    assert_eq!(summary["bytes"], 0);
}

#[test]
fn globus_get_r_a_tree_pipelined_over_two_streams_verified() {
    let server = globus();
    let made = public_tree(&files_dir(&server), 60);
    // The Globus server lists a link as what it points to: not followed.
    std::os::unix::fs::symlink("/etc", files_dir(&server).join("set/link")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy");
    let url = server.url(&format!("/{}/", files_dir(&server).join("set").display()));
    let output = rightsize(&[
        "get",
        "-r",
        &url,
        "-o",
        copy.to_str().unwrap(),
        "-P",
        "2",
        "-j",
        "2",
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    for (name, bytes) in &made {
        assert!(same_bytes(&copy.join(name), bytes), "{name} differs");
    }
    let summary = json(&output);
    assert_eq!(summary["files"], made.len() as u64);
    assert_eq!(summary["verified_files"], made.len() as u64);
    assert_eq!(names_in(&copy), ["a", "c", "with space.txt"]);
}

#[test]
fn vsftpd_put_r_a_tree_into_the_upload_dir() {
    let server = vsftpd();
    let local = tempfile::tempdir().unwrap();
    let made = public_tree(local.path(), 12);
    let output = rightsize(&[
        "put",
        "-r",
        local.path().join("set").to_str().unwrap(),
        &server.url("/up/"),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    let there = files_dir(&server).join("up/set");
    for (name, bytes) in &made {
        assert!(same_bytes(&there.join(name), bytes), "{name} differs");
    }
    let summary = json(&output);
    assert_eq!(summary["direction"], "put");
    assert_eq!(summary["files"], made.len() as u64);
}

#[test]
fn globus_put_r_a_tree_pipelined_over_two_streams_verified() {
    let server = globus();
    let local = tempfile::tempdir().unwrap();
    let made = public_tree(local.path(), 30);
    let url = server.url(&format!("/{}/", files_dir(&server).display()));
    let output = rightsize(&[
        "put",
        "-r",
        local.path().join("set").to_str().unwrap(),
        &url,
        "-P",
        "2",
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    let there = files_dir(&server).join("set");
    for (name, bytes) in &made {
        assert!(same_bytes(&there.join(name), bytes), "{name} differs");
    }
    let summary = json(&output);
    assert_eq!(summary["files"], made.len() as u64);
    assert_eq!(summary["verified_files"], made.len() as u64);
}

#[test]
fn globus_get_c_p_4_sends_the_ranges_held_and_gets_the_rest() {
    let server = globus();
    let data = random_bytes(6 * MIB + 3, 31);
    let remote = files_dir(&server).join("r.bin");
    write_public(&remote, &data);
    let out = tempfile::tempdir().unwrap();
    // What a get -P that stopped kept: two blocks, a hole between them.
    let mut part = vec![0u8; 3 * MIB];
    part[..MIB].copy_from_slice(&data[..MIB]);
    part[2 * MIB..3 * MIB].copy_from_slice(&data[2 * MIB..3 * MIB]);
    std::fs::write(out.path().join(".r.bin.rightsize-part"), &part).unwrap();
    std::fs::write(
        out.path().join(".r.bin.rightsize-part.ranges"),
        format!("0-{},{}-{}\n", MIB, 2 * MIB, 3 * MIB),
    )
    .unwrap();
    let target = out.path().join("r.bin");
    let output = rightsize(&[
        "get",
        "-C",
        "-P",
        "4",
        &server.url(&format!("/{}", remote.display())),
        "-o",
        target.to_str().unwrap(),
        "--verify",
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "resumed bytes differ");
    let summary = json(&output);
    assert_eq!(summary["resumed_bytes"], 2 * MIB as u64);
    assert_eq!(summary["bytes"], (data.len() - 2 * MIB) as u64);
    assert_eq!(names_in(out.path()), ["r.bin"]);
}

#[test]
fn globus_get_p_auto_tries_streams_and_the_file_arrives_whole() {
    let server = globus();
    // Long enough for a trial or more (2 s each) on loopback.
    let remote = files_dir(&server).join("auto.bin");
    let mut data = vec![0u8; 2048 * MIB];
    for (i, chunk) in data.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(i as u64).to_le_bytes());
    }
    write_public(&remote, &data);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("auto.bin");
    let output = rightsize(&[
        "get",
        "-P",
        "auto",
        &server.url(&format!("/{}", remote.display())),
        "-o",
        target.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&output, Some(&server));
    assert!(same_bytes(&target, &data), "the bytes differ");
    let summary = json(&output);
    let trials = summary["stream_trials"].as_array().unwrap();
    assert!(!trials.is_empty(), "no trial: {summary}");
    assert_eq!(trials[0]["streams"], 8);
    assert_eq!(summary["bytes"], data.len() as u64);
    assert_eq!(names_in(out.path()), ["auto.bin"]);
    std::fs::remove_file(&remote).unwrap();
}
