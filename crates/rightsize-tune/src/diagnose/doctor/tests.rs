use std::time::Duration;

use super::*;
use crate::diagnose::verdict::{Fix, Numbers, VerdictKind};

fn sample(t_s: f64, delivered_bytes: u64, rtt_us: u64, rate_mbit: u64) -> SenderSample {
    SenderSample {
        t_s,
        bytes: delivered_bytes,
        delivered_bytes,
        rtt_us: Some(rtt_us),
        delivery_rate_bps: Some(rate_mbit * 1_000_000),
        retrans_segs: Some(0),
    }
}

#[test]
fn one_test_reads_its_peak_rate_its_rtts_and_its_second_half() {
    // 10 MB in the first second, 20 MB in the second.
    let samples = [
        sample(0.5, 4_000_000, 100_000, 60),
        sample(1.0, 10_000_000, 110_000, 90),
        sample(1.5, 20_000_000, 120_000, 170),
        sample(2.0, 30_000_000, 115_000, 160),
    ];
    let sender = TcpSummary {
        delivery_rate_bps: Some(180_000_000),
        ..TcpSummary::default()
    };
    let facts = RunFacts::of(&TestMeasured {
        tune: "auto",
        fixed_buffers: true,
        goodput_bps: 120e6,
        elapsed: Duration::from_secs(2),
        bytes: 30_000_000,
        samples: &samples,
        sender: Some(sender),
        sender_peak_sndbuf_bytes: Some(4_000_000),
    });
    assert_eq!(facts.tune, "auto");
    assert_eq!(facts.seconds, 2.0);
    // The final TCP_INFO's rate is the highest.
    assert_eq!(facts.peak_delivery_rate_bps, Some(180_000_000));
    assert_eq!(facts.sender_rtt_us, [100_000, 110_000, 120_000, 115_000]);
    let steady = facts.steady_goodput_bps.expect("a second half");
    assert!((steady - 160e6).abs() < 1e6, "steady {steady}");
    assert!(facts.fixed_buffers);
    assert_eq!(facts.sender_peak_sndbuf_bytes, Some(4_000_000));
}

#[test]
fn the_local_host_is_the_sender_when_the_client_sends_and_the_receiver_when_the_server_does() {
    let local = HostSettings {
        rmem_max: Some(1),
        ..HostSettings::default()
    };
    let server = HostSettings {
        rmem_max: Some(2),
        ..HostSettings::default()
    };
    let up = DoctorFacts::assemble(
        End::Client,
        None,
        None,
        local.clone(),
        Some(server.clone()),
        None,
        None,
    );
    assert_eq!(up.sender_host, Some(local.clone()));
    assert_eq!(up.receiver_host, Some(server.clone()));
    assert!(!up.has_a_test());
    let down = DoctorFacts::assemble(
        End::Server,
        None,
        None,
        local.clone(),
        Some(server.clone()),
        None,
        None,
    );
    assert_eq!(down.sender_host, Some(server));
    assert_eq!(down.receiver_host, Some(local));
    assert_eq!(down.sender, Some(End::Server));
}

#[test]
fn the_text_gives_the_headline_numbers_fixes_and_each_unseen_field_once() {
    let v = Verdict {
        kind: VerdictKind::NearCapacity,
        limited_by: None,
        limited_end: None,
        summary: "the path is full".into(),
        numbers: Numbers {
            test: "auto".into(),
            goodput_bps: 95e6,
            best_goodput_bps: 96e6,
            capacity_bps: 100e6,
            base_rtt_us: Some(40_000),
            loaded_rtt_us: None,
            loss_rate: Some(0.0001),
            ..Numbers::default()
        },
        fixes: vec![Fix {
            end: End::Server,
            setting: "net.core.wmem_max".into(),
            value: "8388608".into(),
            command: "sysctl -w net.core.wmem_max=8388608".into(),
        }],
        expected_bps: Some(98e6),
        notes: vec!["a note".into()],
    };
    let text = verdict_text(&v, &["tcpi_x".into(), "tcpi_x".into()]);
    assert!(
        text.starts_with(&format!(
            "VERDICT: {}\n",
            VerdictKind::NearCapacity.headline()
        )),
        "{text}"
    );
    assert!(
        text.contains("idle RTT 40.0 ms, RTT under load (p90) n/a, loss 0.010%"),
        "{text}"
    );
    assert!(
        text.contains("FIX:\n  on the server: sysctl -w net.core.wmem_max=8388608\n"),
        "{text}"
    );
    assert!(text.contains("EXPECTED after the fix: about "), "{text}");
    assert!(text.contains("  note: a note\n"), "{text}");
    assert_eq!(text.matches("not seen: tcpi_x").count(), 1, "{text}");
}
