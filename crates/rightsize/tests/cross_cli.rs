//! `rightsize path cross sink` and `rightsize path cross send` as processes on
//! 127.0.0.1: the sink prints its port, counts what the senders sent, and
//! both write one JSON line when stopped by SIGTERM or `--duration`. Every
//! child is killed by a guard if a test fails, and has a watchdog.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rightsize_path::cross::{DEFAULT_UDP_PAYLOAD, IpVersion, UdpPlan};
use rightsize_tune::units::BitRate;
use serde_json::Value;

/// The longest any child may run.
const WATCHDOG: Duration = Duration::from_secs(30);

/// `rightsize path`, to which each test adds `cross ...`.
fn rightsize() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rightsize"));
    command.arg("path");
    command
}

/// A running child; dropping it kills it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    fn spawn(args: &[&str]) -> Running {
        let child = rightsize()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running(child)
    }

    fn terminate(&self) {
        let pid = i32::try_from(self.0.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    }

    /// Waits (with the watchdog) and returns the exit status and output.
    fn finish(mut self) -> Output {
        let start = Instant::now();
        while self.0.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed() < WATCHDOG,
                "child still running after {WATCHDOG:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        self.0
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .unwrap();
        if let Some(mut err) = self.0.stderr.take() {
            err.read_to_end(&mut stderr).unwrap();
        }
        Output {
            status: self.0.wait().unwrap(),
            stdout,
            stderr,
        }
    }
}

/// Starts a sink on a free port and returns it with the address it printed.
fn sink() -> (Running, SocketAddr, BufReader<ChildStderr>) {
    let mut sink = Running::spawn(&["cross", "sink", "--listen", "127.0.0.1:0"]);
    let mut stderr = BufReader::new(sink.0.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split_whitespace()
        .find_map(|word| word.parse::<SocketAddr>().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    assert!(line.contains("TCP and UDP"), "{line}");
    (sink, addr, stderr)
}

fn json_line(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "expected one JSON line: {text}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn u64_at(value: &Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no {pointer} in {value}"))
}

#[test]
fn sink_counts_what_udp_and_tcp_senders_report() {
    let (sink, addr, _stderr) = sink();
    let to = addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let udp_report = dir.path().join("udp.json");
    let udp = rightsize()
        .args([
            "cross",
            "send",
            "--to",
            &to,
            "--udp",
            "20M",
            "--duration",
            "1s",
        ])
        .args(["--report", udp_report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(udp.status.success(), "{udp:?}");
    assert!(udp.stdout.is_empty(), "the report went to the file");
    let udp = json_line(&std::fs::read(&udp_report).unwrap());
    assert_eq!(udp["kind"], "cross-send");
    assert_eq!(udp["stopped_by"], "duration");
    assert_eq!(udp["version"], env!("CARGO_PKG_VERSION"));
    assert!(udp["kernel"].as_str().unwrap().len() > 2);
    assert!(udp["argv"].as_array().unwrap().len() > 8);
    assert_eq!(u64_at(&udp, "/udp/rate_bps"), 20_000_000);
    let packets = u64_at(&udp, "/udp/packets");
    let elapsed = udp["udp"]["elapsed_s"].as_f64().unwrap();
    // 20 Mbit/s of 1,500-byte packets over the sender's own run time: the
    // schedule, every packet of which was sent, dropped or late (a busy
    // host), but for one catch-up burst still due at the stop.
    let scheduled = u64_at(&udp, "/udp/scheduled_packets");
    let expected = 20e6 * elapsed / 8.0 / 1500.0;
    assert!((scheduled as f64 - expected).abs() <= 2.0, "{udp}");
    let accounted =
        packets + u64_at(&udp, "/udp/dropped_local") + u64_at(&udp, "/udp/late_packets");
    let burst = UdpPlan::new(
        BitRate(20_000_000),
        DEFAULT_UDP_PAYLOAD,
        IpVersion::V4,
        None,
    )
    .unwrap()
    .burst_packets();
    assert!(
        accounted <= scheduled && accounted + burst + 2 >= scheduled,
        "{accounted} of {scheduled}: {udp}"
    );
    assert!(packets > 0, "{udp}");

    let tcp = rightsize()
        .args([
            "cross", "send", "--to", &to, "--tcp", "2", "--window", "128KiB",
        ])
        .args(["--congestion", "reno", "--duration", "500ms"])
        .output()
        .unwrap();
    assert!(tcp.status.success(), "{tcp:?}");
    let tcp = json_line(&tcp.stdout);
    let flows = tcp["tcp"]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for flow in flows {
        assert_eq!(flow["sndbuf"]["requested_bytes"], 65_536);
        assert_eq!(flow["sndbuf"]["applied_bytes"], 131_072);
        assert_eq!(flow["congestion"], "reno");
    }
    let written = u64_at(&tcp, "/tcp/bytes_written");

    // Let the sink read the flows to their FINs, then stop it.
    std::thread::sleep(Duration::from_millis(300));
    sink.terminate();
    let out = sink.finish();
    assert!(out.status.success(), "{out:?}");
    let got = json_line(&out.stdout);
    assert_eq!(got["kind"], "cross-sink");
    assert_eq!(got["stopped_by"], "SIGTERM");
    assert_eq!(u64_at(&got, "/sink/tcp_bytes"), written);
    assert_eq!(u64_at(&got, "/sink/tcp_connections"), 2);
    let received = u64_at(&got, "/sink/udp_datagrams") + u64_at(&got, "/sink/udp_socket_drops");
    assert_eq!(received, packets);
    assert_eq!(
        u64_at(&got, "/sink/udp_ip_bytes"),
        u64_at(&udp, "/udp/ip_bytes")
    );
}

#[test]
fn sigterm_stops_an_on_off_sender_with_its_counters() {
    let (_sink, addr, _stderr) = sink();
    let to = addr.to_string();
    let send = Running::spawn(&[
        "cross", "send", "--to", &to, "--udp", "10M", "--on", "50ms", "--off", "50ms", "--size",
        "1000",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    send.terminate();
    let out = send.finish();
    assert!(out.status.success(), "{out:?}");
    let line = json_line(&out.stdout);
    assert_eq!(line["stopped_by"], "SIGTERM");
    assert_eq!(line["udp"]["on_s"], 0.05);
    assert_eq!(u64_at(&line, "/udp/payload_bytes"), 1000);
    assert_eq!(u64_at(&line, "/udp/packet_bytes"), 1028);
    let packets = u64_at(&line, "/udp/packets");
    assert!(packets > 0 && packets <= u64_at(&line, "/udp/scheduled_packets"));
}

#[test]
fn bad_input_is_refused_with_the_value_quoted() {
    let cases: [(&[&str], i32, &str); 6] = [
        (&["--udp", "0"], 2, "rate \"0\" must be greater than zero"),
        (&["--tcp", "0"], 2, "0 TCP flows"),
        (
            &["--tcp", "2", "--window", "0"],
            2,
            "size \"0\" must be greater than zero",
        ),
        (&["--udp", "1M", "--on", "1s"], 2, "--off"),
        (&["--udp", "1M", "--tcp", "1"], 2, "cannot be used with"),
        (&["--tcp", "1", "--size", "100"], 2, "cannot be used with"),
    ];
    for (args, code, message) in cases {
        let out = rightsize()
            .args(["cross", "send", "--to", "127.0.0.1:9"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    for (to, message) in [
        ("127.0.0.1", "invalid address \"127.0.0.1\""),
        ("nosuch.invalid:9", "cannot resolve \"nosuch.invalid:9\""),
        ("0.0.0.0:9", "cannot send to 0.0.0.0:9"),
    ] {
        let out = rightsize()
            .args([
                "cross",
                "send",
                "--to",
                to,
                "--udp",
                "1M",
                "--duration",
                "1s",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{to}: {stderr}");
        assert!(stderr.contains(message), "{to}: {stderr}");
    }
}
