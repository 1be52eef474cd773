//! End-to-end tests of `rightsize advise`: the real binary, its output and
//! its exit codes.

use std::process::{Command, Output};

fn rightsize(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rightsize"))
        .args(args)
        .output()
        .expect("run the rightsize binary")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn ten_gigabit_fifty_ms_prints_the_bdp_and_every_os() {
    // This host's system by default: Linux, where rightsize runs.
    let output = rightsize(&["advise", "--bandwidth", "10G", "--rtt", "50ms"]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(
        text.contains("== Linux ==") && !text.contains("== FreeBSD =="),
        "{text}"
    );
    let output = rightsize(&[
        "advise",
        "--bandwidth",
        "10G",
        "--rtt",
        "50ms",
        "--os",
        "all",
    ]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(text.contains("62,500,000 bytes"), "{text}");
    for title in [
        "== Linux ==",
        "== FreeBSD ==",
        "== macOS ==",
        "== Windows Vista and later ==",
        "== Windows 2000/XP",
    ] {
        assert!(text.contains(title), "missing {title}");
    }
    assert!(text.contains("sysctl -w net.ipv4.tcp_rmem='4096 131072 250000000'"));
    assert!(text.contains("kern.ipc.maxsockbuf"));
    assert!(text.contains("autotuninglevel=experimental"));
}

#[test]
fn json_carries_the_same_numbers() {
    let output = rightsize(&[
        "advise",
        "--bandwidth",
        "10Gbit/s",
        "--rtt",
        "0.05s",
        "--json",
        "--os",
        "all",
    ]);
    assert!(output.status.success());
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("advise --json prints JSON");
    assert_eq!(json["path"]["bdp_bytes"], 62_500_000);
    assert_eq!(json["path"]["window_scale_needed"], 10);
    assert_eq!(json["path"]["rate_bps"], 10_000_000_000u64);
    let oses: Vec<&str> = json["os"]
        .as_array()
        .expect("os array")
        .iter()
        .filter_map(|o| o["os"].as_str())
        .collect();
    assert_eq!(oses, ["linux", "freebsd", "macos", "windows", "windows-xp"]);
    let linux = &json["os"][0];
    let tcp_rmem = linux["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .find(|s| s["name"] == "net.ipv4.tcp_rmem");
    assert_eq!(
        tcp_rmem.expect("tcp_rmem setting")["value"],
        "4096 131072 250000000"
    );
}

#[test]
fn windows_xp_follows_the_windows_note() {
    let output = rightsize(&[
        "advise",
        "--bandwidth",
        "100M",
        "--rtt",
        "12ms",
        "--os",
        "windows-xp",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let settings = json["os"][0]["settings"].as_array().expect("settings");
    let window = settings.iter().find(|s| {
        s["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("TcpWindowSize"))
    });
    assert_eq!(window.expect("TcpWindowSize")["value"], "151840");
}

#[test]
fn the_inverse_question() {
    let output = rightsize(&["advise", "--buffer", "64KiB", "--rtt", "100ms"]);
    assert!(output.status.success());
    assert!(
        stdout(&output).contains("at most 5.24 Mbit/s"),
        "{}",
        stdout(&output)
    );
    let output = rightsize(&[
        "advise",
        "--buffer",
        "1MiB",
        "--rtt",
        "50ms",
        "--bandwidth",
        "10G",
    ]);
    assert!(
        stdout(&output).contains("1.68% of the rate"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn check_names_what_caps_this_host() {
    // 200 Mbit/s x 300 ms needs 15,000,000 bytes of send buffer (2 x BDP).
    let output = rightsize(&[
        "advise",
        "--bandwidth",
        "200M",
        "--rtt",
        "300ms",
        "--check",
        "--json",
    ]);
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let wmem_max = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .expect("read tcp_wmem")
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.parse::<u64>().ok())
        .expect("tcp_wmem max");
    let limits = json["check"]["limits"].as_array().expect("limits");
    let send = limits
        .iter()
        .find(|l| l["side"] == "send" && l["buffering"] == "autotuned")
        .expect("a send-side autotuned limit");
    assert_eq!(send["setting"], "net.ipv4.tcp_wmem max");
    assert_eq!(send["value"], wmem_max);
    let fixes: Vec<&str> = json["check"]["fixes"]
        .as_array()
        .expect("fixes")
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    if wmem_max < 15_000_000 {
        assert_eq!(send["caps"], true);
        assert!(fixes.iter().any(|f| f.starts_with("sysctl -w net.ipv4.tcp_wmem=") && f.ends_with(" 15000000'")), "{fixes:?}");
        let text = stdout(&rightsize(&[
            "advise",
            "--bandwidth",
            "200M",
            "--rtt",
            "300ms",
            "--check",
        ]));
        assert!(
            text.contains("Sending with kernel autotuning: CAPPED"),
            "{text}"
        );
        assert!(text.contains("by net.ipv4.tcp_wmem max"), "{text}");
    } else {
        assert_eq!(send["caps"], false);
        assert!(!fixes.iter().any(|f| f.contains("tcp_wmem")));
    }
}

#[test]
fn bad_input_is_one_line_exit_2_quoting_the_input() {
    let cases: &[(&[&str], &str)] = &[
        (&["--bandwidth", "0", "--rtt", "50ms"], "\"0\""),
        (&["--bandwidth", "-5G", "--rtt", "50ms"], "\"-5G\""),
        (&["--bandwidth", "10X", "--rtt", "50ms"], "\"10X\""),
        (&["--bandwidth", "", "--rtt", "50ms"], "10G"),
        (&["--bandwidth", "NaN", "--rtt", "50ms"], "\"NaN\""),
        (
            &["--bandwidth", "99999999999999999999999G", "--rtt", "50ms"],
            "too large",
        ),
        (&["--bandwidth", "10G", "--rtt", "50"], "\"50\""),
        (&["--bandwidth", "10G", "--rtt", "-1ms"], "\"-1ms\""),
        (&["--bandwidth", "10G", "--rtt", "0s"], "\"0s\""),
        (&["--buffer", "64Kb", "--rtt", "50ms"], "\"64Kb\""),
        (
            &["--bandwidth", "10G", "--rtt", "50ms", "--mss", "0"],
            "'0'",
        ),
        (
            &["--bandwidth", "10G", "--rtt", "50ms", "--os", "plan9"],
            "'plan9'",
        ),
        // What is accepted, on the same line.
        (
            &["--bandwidth", "10G", "--rtt", "50ms", "--os", "plan9"],
            "possible values: host, all, linux",
        ),
    ];
    for (args, quoted) in cases {
        let mut full = vec!["advise"];
        full.extend_from_slice(args);
        let output = rightsize(&full);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?} not one line: {stderr}"
        );
        assert!(stderr.contains(quoted), "{args:?}: {stderr} lacks {quoted}");
        assert!(output.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

#[test]
fn nothing_to_advise_on_is_a_usage_error() {
    let output = rightsize(&["advise", "--rtt", "50ms"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--bandwidth"));
}

#[test]
fn without_a_command_the_help_goes_to_stderr_and_the_status_is_2() {
    for args in [&[][..], &["lab"][..], &["path"][..]] {
        let out = rightsize(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr.contains("Usage: rightsize"), "{args:?}: {stderr}");
    }
    // Asked for, the help is on stdout with status 0.
    let out = rightsize(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: rightsize"));
}
