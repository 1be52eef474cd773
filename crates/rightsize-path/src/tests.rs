use std::time::Duration;

use super::fidelity::{self, Measured};
use super::*;

fn no_files(name: &str) -> Result<String, String> {
    Err(format!("no file {name}"))
}

fn spec(text: &str) -> PathSpec {
    match PathSpec::from_toml(text, &mut no_files) {
        Ok(spec) => spec,
        Err(e) => panic!("{e}"),
    }
}

fn refused(text: &str) -> String {
    match PathSpec::from_toml(text, &mut no_files) {
        Ok(spec) => panic!("accepted {text:?}: {spec:?}"),
        Err(e) => e.to_string(),
    }
}

const LFN: &str = r#"
rate = "200Mbit"
delay = "50ms"
queue = "1bdp"
"#;

#[test]
fn top_level_settings_apply_to_both_directions() {
    let s = spec(LFN);
    assert_eq!(s.rtt(), Duration::from_millis(100));
    assert_eq!(s.uplink, s.downlink);
    assert_eq!(s.uplink.rate, RateSpec::Constant(BitRate(200_000_000)));
    // 200 Mbit/s x 100 ms = 2.5 MB.
    assert_eq!(s.bdp_from(Side::Left), Bytes(2_500_000));
    assert_eq!(s.queue_limit(Side::Left), QueueLimit::Bytes(2_500_000));
    assert_eq!(s.backend, Backend::Auto);
}

#[test]
fn direction_tables_override_the_defaults() {
    let s = spec(
        r#"
rate = "100Mbit"
delay = "25ms"
queue = "0.1 x BDP"
[downlink]
rate = "10Mbit"
queue = "50 packets"
loss = "1%"
"#,
    );
    assert_eq!(s.uplink.rate, RateSpec::Constant(BitRate(100_000_000)));
    assert_eq!(s.downlink.rate, RateSpec::Constant(BitRate(10_000_000)));
    assert_eq!(s.downlink.delay, Duration::from_millis(25));
    // 100 Mbit/s x 50 ms = 625 kB; a tenth of it.
    assert_eq!(s.queue_limit(Side::Left), QueueLimit::Bytes(62_500));
    assert_eq!(s.queue_limit(Side::Right), QueueLimit::Packets(50));
    assert!((s.downlink.loss - 0.01).abs() < 1e-12);
    assert_eq!(s.uplink.loss, 0.0);
}

#[test]
fn queue_forms() {
    for (text, want) in [
        ("\"375KB\"", QueueSpec::Bytes(375_000)),
        ("\"64KiB\"", QueueSpec::Bytes(65_536)),
        ("150000", QueueSpec::Bytes(150_000)),
        ("\"250packets\"", QueueSpec::Packets(250)),
        ("\"2bdp\"", QueueSpec::Bdp(2.0)),
        ("\"bdp\"", QueueSpec::Bdp(1.0)),
        ("\"infinite\"", QueueSpec::Infinite),
    ] {
        let s = spec(&format!(
            "rate = \"100Mbit\"\ndelay = \"10ms\"\nqueue = {text}\n"
        ));
        assert_eq!(s.uplink.queue, want, "{text}");
    }
}

#[test]
fn bad_input_is_refused_with_the_key_and_the_value() {
    let cases = [
        ("rate = \"0Mbit\"\n", "rate"),
        ("rate = \"fast\"\n", "fast"),
        ("rate = \"100Mbit\"\ndelay = \"-5ms\"\n", "negative"),
        (
            "rate = \"100Mbit\"\nqueue = \"1000B\"\n",
            "smaller than one 1500-byte packet",
        ),
        ("rate = \"100Mbit\"\nqueue = \"0 packets\"\n", "0 packets"),
        (
            "rate = \"100Mbit\"\ndelay = \"1ms\"\nqueue = \"0.001bdp\"\n",
            "smaller than one",
        ),
        ("rate = \"100Mbit\"\nloss = 1.0\n", "outside [0, 1)"),
        ("rate = \"100Mbit\"\nloss = \"lots\"\n", "lots"),
        (
            "rate = \"100Mbit\"\nrtt = \"50ms\"\n",
            "unknown field `rtt`",
        ),
        (
            "rate = \"100Mbit\"\n[uplink]\nbandwith = \"1Mbit\"\n",
            "bandwith",
        ),
        ("rate = \"100Mbit\"\nbackend = \"ns3\"\n", "ns3"),
        ("delay = \"10ms\"\n", "no rate"),
        (
            "rate = \"100Mbit\"\n[left]\ntcp_rmem = \"4096 87380\"\n",
            "three sizes",
        ),
        (
            "rate = \"100Mbit\"\n[left]\ntcp_rmem = \"9000 4096 8192\"\n",
            "min <= default",
        ),
        (
            "rate = \"100Mbit\"\n[left]\ncongestion = \"cubic; rm -rf\"\n",
            "congestion",
        ),
        (
            "rate = \"100Mbit\"\n[[cross]]\nkind = \"udp\"\n",
            "needs a rate",
        ),
        ("rate = \"100Mbit\"\n[[cross]]\nkind = \"icmp\"\n", "icmp"),
        (
            "rate = \"100Mbit\"\n[[cross]]\nkind = \"tcp\"\nflows = 0\n",
            "flows = 0",
        ),
        (
            "rate = \"100Mbit\"\n[[cross]]\nkind = \"udp\"\nrate=\"1Mbit\"\non=\"1s\"\n",
            "both on and off",
        ),
        ("trace = \"x.trace\"\n", "x.trace"),
        ("rate = \"1Mbit\"\ntrace = \"x.trace\"\n", "not several"),
    ];
    for (text, needle) in cases {
        let message = refused(text);
        assert!(
            message.contains(needle),
            "{text:?}: {message:?} lacks {needle:?}"
        );
        assert!(message.starts_with("path spec: "), "{message}");
    }
}

#[test]
fn hosts_become_namespace_sysctls() {
    let s = spec(
        r#"
rate = "100Mbit"
[left]
tcp_rmem = [4096, "128KiB", "32MiB"]
congestion = "cubic"
rmem_max = "64MiB"
[right]
tcp_wmem = "4096 16384 4194304"
command = ["iperf3", "-s"]
"#,
    );
    assert_eq!(
        s.left.sysctls(),
        vec![
            ("net.core.rmem_max", "67108864".to_owned()),
            ("net.ipv4.tcp_rmem", "4096 131072 33554432".to_owned()),
            ("net.ipv4.tcp_congestion_control", "cubic".to_owned()),
        ]
    );
    assert_eq!(
        s.right.sysctls(),
        vec![("net.ipv4.tcp_wmem", "4096 16384 4194304".to_owned())]
    );
    assert_eq!(
        s.right.command,
        Some(vec!["iperf3".to_owned(), "-s".to_owned()])
    );
}

#[test]
fn cross_traffic() {
    let s = spec(
        r#"
rate = "200Mbit"
[[cross]]
kind = "udp"
rate = "100Mbit"
on = "1s"
off = "2s"
[[cross]]
kind = "tcp"
from = "right"
flows = 3
window = "64KiB"
"#,
    );
    assert_eq!(
        s.cross,
        vec![
            CrossSpec::Udp {
                from: Side::Left,
                rate: BitRate(100_000_000),
                on_off: Some((Duration::from_secs(1), Duration::from_secs(2))),
            },
            CrossSpec::Tcp {
                from: Side::Right,
                flows: 3,
                window: Some(Bytes(65_536)),
                congestion: None,
            },
        ]
    );
}

#[test]
fn steps_and_trace_files() {
    let s = spec(
        r#"
delay = "50ms"
queue = "1bdp"
[[uplink.steps]]
for = "4s"
rate = "200Mbit"
[[uplink.steps]]
for = "4s"
rate = "50Mbit"
delay = "80ms"
[downlink]
rate = "200Mbit"
"#,
    );
    let RateSpec::Steps(steps) = &s.uplink.rate else {
        panic!("{:?}", s.uplink.rate)
    };
    assert_eq!(steps.len(), 2);
    assert_eq!(s.uplink.rate.peak(), BitRate(200_000_000));
    // The queue is dimensioned by the peak rate.
    assert_eq!(s.queue_limit(Side::Left), QueueLimit::Bytes(2_500_000));

    let mut files = |name: &str| match name {
        "mm.trace" => Ok("# 12 Mbit/s\n0\n1\n\n2\n3\n4\n5\n6\n7\n8\n9\n10\n".to_owned()),
        "steps.txt" => Ok("4s 200Mbit 50ms # fast\n4s 50Mbit\n".to_owned()),
        "bad.trace" => Ok("0\n5\n3\n".to_owned()),
        other => Err(format!("no such file {other}")),
    };
    let s = PathSpec::from_toml("trace = \"mm.trace\"\nqueue = \"100packets\"", &mut files)
        .map_err(|e| e.to_string());
    let Ok(PathSpec {
        uplink: LinkSpec {
            rate: RateSpec::Mahimahi(trace),
            ..
        },
        ..
    }) = s
    else {
        panic!("{s:?}")
    };
    // 11 packets in 10 ms: 13.2 Mbit/s.
    assert_eq!(trace.mean_rate(), BitRate(13_200_000));
    assert_eq!(trace.to_mahimahi().lines().count(), 11);

    let s = PathSpec::from_toml("trace = \"steps.txt\"", &mut files).map_err(|e| e.to_string());
    assert!(
        matches!(&s, Ok(p) if matches!(&p.uplink.rate, RateSpec::Steps(v) if v.len() == 2)),
        "{s:?}"
    );

    let e = PathSpec::from_toml("trace = \"bad.trace\"", &mut files)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("bad.trace") && e.contains("line 3") && e.contains("must not decrease"),
        "{e}"
    );
}

#[test]
fn trace_file_errors_name_the_line() {
    for (text, needle) in [
        ("", "empty"),
        ("0\n0\n", "no period"),
        ("0\nten\n", "line 2"),
        ("4s\n", "DURATION RATE"),
        ("4s 0Mbit\n", "zero"),
        ("4x 10Mbit\n", "line 1"),
    ] {
        let e = parse_trace(text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(needle), "{text:?}: {e:?}");
    }
}

#[test]
fn flags_override_the_file_for_both_directions() {
    let text = "rate = \"100Mbit\"\ndelay = \"25ms\"\n[uplink]\nrate = \"10Mbit\"\n";
    let s = PathSpec::from_toml_with(
        text,
        &[("rate", "50Mbit".to_owned()), ("loss", "0.01".to_owned())],
        &mut no_files,
    )
    .map_err(|e| e.to_string());
    let Ok(s) = s else { panic!("{s:?}") };
    assert_eq!(s.uplink.rate, RateSpec::Constant(BitRate(50_000_000)));
    assert_eq!(s.downlink.rate, RateSpec::Constant(BitRate(50_000_000)));
    assert!((s.uplink.loss - 0.01).abs() < 1e-12);
    let s = PathSpec::from_toml_with("", &[("rate", "1Gbit".to_owned())], &mut no_files);
    assert!(s.is_ok(), "{s:?}");
}

#[test]
fn a_seed_gives_each_direction_its_own_loss_sequence_and_bad_ones_are_refused() {
    let s = spec("rate = \"10Mbit\"\nloss = \"1%\"\nseed = 3\n");
    assert_eq!(s.seed, Some(3));
    let config = rattan::config(&s, "/run/x").config;
    assert!(
        config.contains("[cells.up_loss]\ntype = \"LossReplay\""),
        "{config}"
    );
    assert!(config.contains("seed = 6\n"), "{config}");
    assert!(config.contains("seed = 7\n"), "{config}");
    for bad in ["-1", "\"7\"", "1.5", "4611686018427387905"] {
        let text = format!("rate = \"10Mbit\"\nseed = {bad}\n");
        let e = PathSpec::from_toml(&text, &mut no_files)
            .expect_err("a bad seed is refused")
            .to_string();
        assert!(
            e.contains("seed = ") && e.contains("whole number"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn rattan_config_chains_bottleneck_delay_and_loss() {
    let s = spec("rate = \"200Mbit\"\ndelay = \"50ms\"\nqueue = \"0.1bdp\"\nloss = 0.001\n");
    let files = rattan::config(&s, "/run/x");
    // The loss holds for good, from a seeded generator per direction.
    let pattern = "{\"RepeatedLossPatternConfig\":{\"pattern\":[{\"StaticLossConfig\":\
                   {\"loss\":[0.001],\"duration\":\"1h\"}}],\"count\":0}}\n";
    assert_eq!(
        files.traces,
        [
            ("up-loss.json".to_owned(), pattern.to_owned()),
            ("down-loss.json".to_owned(), pattern.to_owned())
        ]
    );
    let keys = rattan::expected_keys(&files.config).unwrap_or_default();
    let get = |k: &str| {
        keys.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default()
    };
    assert_eq!(get("env.mode"), "\"Isolated\"");
    assert_eq!(get("cells.up_bw.type"), "\"Bw\"");
    assert_eq!(get("cells.up_bw.queue"), "\"DropTail\"");
    assert_eq!(get("cells.up_bw.bandwidth"), "\"200000000bps\"");
    assert_eq!(get("cells.up_bw.queue_config.byte_limit"), "250000");
    assert_eq!(get("cells.down_delay.delay"), "\"50ms\"");
    assert_eq!(get("cells.up_loss.type"), "\"LossReplay\"");
    assert_eq!(get("cells.up_loss.trace"), "\"/run/x/up-loss.json\"");
    assert_eq!(get("cells.up_loss.seed"), "84");
    assert_eq!(get("cells.down_loss.seed"), "85");
    assert_eq!(get("links.left"), "\"up_bw\"");
    assert_eq!(get("links.up_bw"), "\"up_delay\"");
    assert_eq!(get("links.up_delay"), "\"up_loss\"");
    assert_eq!(get("links.up_loss"), "\"right\"");
    assert_eq!(get("links.right"), "\"down_bw\"");
    assert_eq!(get("links.down_loss"), "\"left\"");
}

#[test]
fn rattan_ingress_buffer_holds_a_bdp_and_a_queue_twice() {
    // 200 Mbit/s x 100 ms: BDP 2.5 MB, queue 2.5 MB, twice both.
    let lfn = spec("rate = \"200Mbit\"\ndelay = \"50ms\"\nqueue = \"1bdp\"\n");
    assert_eq!(rattan::ingress_buffer_bytes(&lfn), 10_000_000);
    // A short slow path gets the floor.
    let small = spec("rate = \"10Mbit\"\ndelay = \"5ms\"\n");
    assert_eq!(
        rattan::ingress_buffer_bytes(&small),
        rattan::INGRESS_BUFFER_MIN
    );
    // An infinite queue gets the ceiling.
    let infinite = spec("rate = \"200Mbit\"\ndelay = \"50ms\"\nqueue = \"infinite\"\n");
    assert_eq!(
        rattan::ingress_buffer_bytes(&infinite),
        rattan::INGRESS_BUFFER_MAX
    );
    // Steps: the highest rate at the longest delay (400 Mbit/s x 2 x 100 ms
    // = 10 MB), plus the 100-packet queue, twice.
    let steps = spec(
        "delay = \"25ms\"\nqueue = \"100pkt\"\n[[steps]]\nfor = \"4s\"\nrate = \"400Mbit\"\n[[steps]]\nfor = \"1s\"\nrate = \"50Mbit\"\ndelay = \"100ms\"\n",
    );
    assert_eq!(
        rattan::ingress_buffer_bytes(&steps),
        2 * (10_000_000 + 150_000)
    );
}

#[test]
fn rattan_config_for_steps_writes_pattern_files() {
    let s = spec(
        "delay = \"25ms\"\n[[steps]]\nfor = \"4s\"\nrate = \"200Mbit\"\n[[steps]]\nfor = \"500ms\"\nrate = \"50Mbit\"\ndelay = \"40ms\"\n",
    );
    let files = rattan::config(&s, "/run/x");
    assert!(files.config.contains("type = \"BwReplay\""));
    assert!(files.config.contains("trace = \"/run/x/up-rate.json\""));
    assert!(files.config.contains("type = \"DelayReplay\""));
    let rate = files
        .traces
        .iter()
        .find(|(n, _)| n == "up-rate.json")
        .map(|(_, c)| c.clone())
        .unwrap_or_default();
    assert_eq!(
        rate.trim(),
        r#"{"RepeatedBwPatternConfig":{"pattern":[{"StaticBwConfig":{"bw":"200000000bps","duration":"4000ms"}},{"StaticBwConfig":{"bw":"50000000bps","duration":"500ms"}}],"count":0}}"#
    );
    let delay = files
        .traces
        .iter()
        .find(|(n, _)| n == "down-delay.json")
        .map(|(_, c)| c.clone())
        .unwrap_or_default();
    assert!(
        delay.contains(r#""delay":"25ms","duration":"4000ms""#),
        "{delay}"
    );
    assert!(
        delay.contains(r#""delay":"40ms","duration":"500ms""#),
        "{delay}"
    );
}

#[test]
fn rattan_readback_comparison_finds_dropped_keys() {
    let ours = "[cells.up_bw]\ntype = \"Bw\"\nbandwidth = \"200000000bps\"\n[cells.up_delay]\ndelay = \"50ms\"\n[links]\nleft = \"up_bw\"\n";
    let theirs = "[cells.up_bw]\ntype = \"Bw\"\nbandwidth = \"200Mbps\"\n[cells.up_delay]\ndelay = \"50 ms\"\n[links]\nleft = \"up_bw\"\n";
    assert_eq!(rattan::unread_keys(ours, theirs), Ok(vec![]));
    let theirs =
        "[cells.up_bw]\ntype = \"Bw\"\nbandwidth = \"100Mbps\"\n[links]\nleft = \"up_bw\"\n";
    let missing = rattan::unread_keys(ours, theirs).unwrap_or_default();
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(missing[0].contains("bandwidth"), "{missing:?}");
    assert!(missing[1].contains("rattan ignored it"), "{missing:?}");
}

#[test]
fn netem_commands_follow_the_perfsonar_lab() {
    let s = spec("rate = \"200Mbit\"\ndelay = \"50ms\"\nqueue = \"1bdp\"\nloss = \"0.1%\"\n");
    let plan = netem::plan(&s, Side::Left).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = plan.setup.iter().map(|c| c.join(" ")).collect();
    assert_eq!(
        lines,
        vec![
            "qdisc add dev eth0 root handle 1: netem delay 50000us limit 1666 loss 0.1%",
            "qdisc add dev eth0 parent 1: handle 2: tbf rate 200000000bit burst 100000 limit 2500000",
        ]
    );
    assert!(plan.schedule.is_empty());
    // A fast long path needs a longer netem queue than its default 1000.
    let s = spec("rate = \"10Gbit\"\ndelay = \"100ms\"\n");
    let plan = netem::plan(&s, Side::Right).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        plan.setup[0].join(" ").ends_with("limit 166666"),
        "{:?}",
        plan.setup[0]
    );
}

#[test]
fn netem_schedules_change_the_qdiscs_and_refuse_mahimahi() {
    let s = spec(
        "delay = \"50ms\"\n[[steps]]\nfor = \"4s\"\nrate = \"200Mbit\"\n[[steps]]\nfor = \"4s\"\nrate = \"50Mbit\"\n",
    );
    let plan = netem::plan(&s, Side::Left).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.period, Duration::from_secs(8));
    assert_eq!(plan.schedule.len(), 2);
    assert_eq!(plan.schedule[1].0, Duration::from_secs(4));
    assert!(
        plan.schedule[1].1[1]
            .join(" ")
            .contains("tbf rate 50000000bit")
    );
    assert!(plan.schedule[1].1[0].join(" ").starts_with("qdisc change"));

    let mut files = |_: &str| Ok("0\n1\n2\n".to_owned());
    let s = PathSpec::from_toml("trace = \"t\"", &mut files).unwrap_or_else(|e| panic!("{e}"));
    let e = netem::plan(&s, Side::Left).err().unwrap_or_default();
    assert!(e.contains("rattan"), "{e}");
}

#[test]
fn fidelity_checks() {
    let good = Measured {
        configured_rtt: Duration::from_millis(100),
        idle_rtts: vec![
            Duration::from_micros(100_600),
            Duration::from_micros(100_500),
        ],
        emulator_cpu: Some(0.4),
        emulator_drops: Some(120),
        emulator_ingress_drops: Some(0),
        retransmitted_segments: Some(118),
        host_explained_segments: Some(0),
    };
    let f = fidelity::judge(good.clone());
    assert!(f.valid, "{f:?}");
    // 100 ms configured: tolerance 3 ms.
    assert_eq!(
        fidelity::rtt_tolerance(Duration::from_millis(100)),
        Duration::from_millis(3)
    );

    let slow = Measured {
        idle_rtts: vec![Duration::from_micros(103_100)],
        ..good.clone()
    };
    assert!(!fidelity::judge(slow).valid);
    let too_fast = Measured {
        idle_rtts: vec![Duration::from_millis(60)],
        ..good.clone()
    };
    assert!(!fidelity::judge(too_fast).valid);
    let busy = Measured {
        emulator_cpu: Some(0.95),
        ..good.clone()
    };
    let f = fidelity::judge(busy);
    assert!(!f.valid);
    assert!(f.checks[1].detail.contains("95%"), "{:?}", f.checks[1]);
    let unexplained = Measured {
        emulator_drops: Some(0),
        retransmitted_segments: Some(40),
        ..good.clone()
    };
    assert!(!fidelity::judge(unexplained.clone()).valid);
    // The same retransmissions answering the receiver's own drops (a
    // buffer shrunk under the data in flight) are the transfer's.
    let receiver = fidelity::judge(Measured {
        host_explained_segments: Some(30),
        ..unexplained
    });
    assert!(receiver.valid, "{receiver:?}");
    assert!(
        receiver.checks[2]
            .detail
            .contains("30 dropped or received twice by the hosts")
    );
    // The 5% slack counts the hosts' drops too (measured: 357 retransmitted
    // for 6 emulator drops and 338 pruned by a drs receiver).
    let pruned = fidelity::judge(Measured {
        emulator_drops: Some(6),
        retransmitted_segments: Some(357),
        host_explained_segments: Some(338),
        ..good.clone()
    });
    assert!(pruned.valid, "{pruned:?}");
    // Drops at the emulator's input are the apparatus's, even when they
    // explain every retransmission.
    let input = fidelity::judge(Measured {
        emulator_ingress_drops: Some(21),
        ..good.clone()
    });
    assert!(!input.valid, "{input:?}");
    assert!(
        input.checks[3].detail.contains("21 packets"),
        "{:?}",
        input.checks[3]
    );
    let unmeasured = Measured {
        emulator_cpu: None,
        emulator_drops: None,
        emulator_ingress_drops: None,
        ..good
    };
    let f = fidelity::judge(unmeasured);
    assert!(f.valid);
    assert_eq!(f.checks[2].ok, None);
    assert_eq!(f.checks[3].ok, None);
}
