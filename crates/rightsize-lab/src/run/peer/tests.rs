//! The command lines and files of each peer.

use std::path::Path;

use super::*;

fn ends<'a>(server_args: &'a [String]) -> Ends<'a> {
    Ends {
        rightsize: Path::new("/bin/rightsize"),
        dir: Path::new("/runs/lfn/auto-rep1"),
        root: Path::new("/runs/lfn/auto-rep1/root"),
        server_tune: "auto",
        client_tune: "kernel",
        server_args,
        size: Bytes(64 << 20),
    }
}

/// The command lines the lab and the tuner benchmark ran before peers
/// existed: a rightsize run must keep them word for word.
#[test]
fn rightsize_runs_serve_and_get_as_they_always_did() {
    let extra = ["--write-size".to_owned(), "1024".to_owned()];
    let e = ends(&extra);
    assert_eq!(
        Peer::Rightsize.server_argv(&e),
        [
            "/bin/rightsize",
            "serve",
            "--root",
            "/runs/lfn/auto-rep1/root",
            "--listen",
            "0.0.0.0:2121",
            "--tune",
            "auto",
            "--telemetry-dir",
            "/runs/lfn/auto-rep1",
            "-q",
            "--write-size",
            "1024"
        ]
    );
    assert_eq!(
        Peer::Rightsize.client_argv(&e),
        [
            "/bin/rightsize",
            "get",
            "ftp://right:2121/.rightsize/zero/67108864",
            "-o",
            "/dev/null",
            "--tune",
            "kernel",
            "--json",
            "--telemetry",
            "/runs/lfn/auto-rep1/client.jsonl"
        ]
    );
    assert!(Peer::Rightsize.files(&e).is_empty());
    assert!(Peer::Rightsize.server_is_rightsize() && Peer::Rightsize.client_is_rightsize());
}

#[test]
fn vsftpd_serves_a_sparse_file_to_rightsize_get() {
    let e = ends(&[]);
    assert_eq!(
        Peer::Vsftpd.server_argv(&e),
        ["vsftpd", "/runs/lfn/auto-rep1/vsftpd.conf"]
    );
    let client = Peer::Vsftpd.client_argv(&e);
    assert_eq!(
        client[..3],
        ["/bin/rightsize", "get", "ftp://right:2121/zero.bin"]
    );
    assert_eq!(client[5..7], ["--tune", "kernel"]);
    let files = Peer::Vsftpd.files(&e);
    assert_eq!(files[0], RunFile::Dir("/var/run/vsftpd/empty".into()));
    let RunFile::Text { path, text } = &files[1] else {
        panic!("{files:?}")
    };
    assert_eq!(path, Path::new("/runs/lfn/auto-rep1/vsftpd.conf"));
    for line in [
        "listen=YES",
        "background=NO",
        "listen_port=2121",
        "anonymous_enable=YES",
        "anon_root=/runs/lfn/auto-rep1/root",
        "no_anon_password=YES",
        "write_enable=NO",
        "run_as_launching_user=YES",
        "seccomp_sandbox=NO",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in {text}");
    }
    assert_eq!(
        files[2],
        RunFile::Sparse {
            path: "/runs/lfn/auto-rep1/root/zero.bin".into(),
            bytes: Bytes(64 << 20)
        }
    );
    assert!(!Peer::Vsftpd.server_is_rightsize() && Peer::Vsftpd.client_is_rightsize());
}

#[test]
fn curl_and_globus_fetch_the_zero_source_from_rightsize_serve() {
    let e = ends(&[]);
    for peer in [Peer::Curl, Peer::Globus] {
        assert_eq!(
            peer.server_argv(&e),
            Peer::Rightsize.server_argv(&e),
            "{peer}"
        );
        assert!(peer.server_is_rightsize() && !peer.client_is_rightsize());
        assert!(peer.files(&e).is_empty());
    }
    assert_eq!(
        Peer::Curl.client_argv(&e),
        [
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{json}",
            "ftp://right:2121/.rightsize/zero/67108864"
        ]
    );
    let globus = Peer::Globus.client_argv(&e);
    assert_eq!(globus[..2], ["sh", "-c"]);
    assert_eq!(
        globus[3..],
        [
            "sh",
            "globus-url-copy",
            "ftp://right:2121/.rightsize/zero/1",
            "ftp://right:2121/.rightsize/zero/67108864",
            "file:///dev/null"
        ]
    );
    // No SBUF (-tcp-bs) and no parallel streams: the server sizes alone.
    assert!(!globus.iter().any(|a| a == "-tcp-bs" || a == "-p"));
}

#[test]
fn names_parse_back_and_unknown_ones_list_the_accepted() {
    for peer in ALL {
        assert_eq!(peer.name().parse::<Peer>(), Ok(peer));
        assert_eq!(peer.to_string(), peer.name());
    }
    let e = "ftpd".parse::<Peer>().expect_err("unknown");
    assert!(
        e.contains("\"ftpd\"") && e.contains("rightsize, vsftpd, curl, globus"),
        "{e}"
    );
    assert_eq!(Peer::default(), Peer::Rightsize);
}

/// The timing script as the shell runs it, with `true` and `false` in
/// place of globus-url-copy.
#[test]
fn the_globus_timing_prints_both_times_or_passes_the_failure_on() {
    let run = |program: &str| {
        std::process::Command::new("sh")
            .args([
                "-c",
                GLOBUS_TIMED,
                "sh",
                program,
                "probe",
                "transfer",
                "dest",
            ])
            .output()
            .expect("sh runs")
    };
    let out = run("true");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(v["probe_ns"].as_u64().is_some_and(|n| n > 0), "{v}");
    assert!(v["transfer_ns"].as_u64().is_some_and(|n| n > 0), "{v}");
    let out = run("false");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{out:?}");
}
