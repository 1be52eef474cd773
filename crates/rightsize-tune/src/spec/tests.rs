//! The `--tune` grammar: every name, sizes through `units`, options, and
//! errors that quote the input and list what is accepted.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::units::Bytes;
use crate::{DrsOptions, FreeBsdOptions, SpecError, TunerSpec};

fn parse(s: &str) -> Result<TunerSpec, SpecError> {
    s.parse()
}

#[test]
fn every_name_parses_and_auto_is_the_default() {
    assert_eq!(parse("stock").unwrap(), TunerSpec::Stock);
    assert_eq!(parse("kernel").unwrap(), TunerSpec::Kernel);
    assert_eq!(parse("sobas").unwrap(), TunerSpec::Sobas);
    assert_eq!(parse("auto").unwrap(), TunerSpec::Auto);
    assert_eq!(parse("drs").unwrap(), TunerSpec::Drs(DrsOptions::default()));
    assert_eq!(
        parse("freebsd").unwrap(),
        TunerSpec::FreeBsd(FreeBsdOptions::default())
    );
    assert_eq!(parse(" AUTO ").unwrap(), TunerSpec::Auto);
    assert_eq!(TunerSpec::default(), TunerSpec::Auto);
}

#[test]
fn static_sizes_are_the_units_sizes() {
    // The source documents' over-provisioned 16 MiB and drsFTP's inopportune 212.5 KB.
    assert_eq!(
        parse("static:16MiB").unwrap(),
        TunerSpec::Static(Bytes(16 << 20))
    );
    assert_eq!(
        parse("static:212.5KB").unwrap(),
        TunerSpec::Static(Bytes(212_500))
    );
    assert_eq!(
        parse("static:65536").unwrap(),
        TunerSpec::Static(Bytes(65_536))
    );
}

#[test]
fn drs_interval_and_freebsd_knobs_are_options() {
    assert_eq!(
        parse("drs:interval=500ms").unwrap(),
        TunerSpec::Drs(DrsOptions {
            interval: Duration::from_millis(500)
        })
    );
    let TunerSpec::FreeBsd(bsd) =
        parse("freebsd:recvbuf_max=16MiB,recvbuf_inc=64K,sendbuf_auto=0").unwrap()
    else {
        panic!("not freebsd");
    };
    assert_eq!(bsd.recvbuf_max, Bytes(16 << 20));
    assert_eq!(bsd.recvbuf_inc, Bytes(64 << 10));
    assert!(!bsd.sendbuf_auto);
    assert_eq!(bsd.sendbuf_max, FreeBsdOptions::default().sendbuf_max);
}

#[test]
fn display_parses_back_to_the_same_spec() {
    for text in [
        "stock",
        "static:16MiB",
        "static:212.5KB",
        "kernel",
        "drs",
        "drs:interval=250ms",
        "sobas",
        "freebsd",
        "freebsd:recvbuf_max=16MiB,sendbuf_inc=4K,recvbuf_auto=0",
        "auto",
    ] {
        let spec = parse(text).unwrap();
        assert_eq!(parse(&spec.to_string()).unwrap(), spec, "{text} -> {spec}");
    }
    assert_eq!(parse("drs:interval=1s").unwrap().to_string(), "drs");
}

/// The message of `input`'s error, which must quote the input.
fn error(input: &str) -> String {
    let message = parse(input).unwrap_err().to_string();
    assert!(
        message.contains(&format!("\"{input}\"")),
        "{message:?} does not quote {input:?}"
    );
    message
}

#[test]
fn unknown_names_list_what_is_accepted() {
    let message = error("bbr");
    for name in [
        "stock",
        "static:SIZE",
        "kernel",
        "drs",
        "sobas",
        "freebsd",
        "auto",
    ] {
        assert!(message.contains(name), "{message} lacks {name}");
    }
    error("");
    error("stat:16MiB");
}

#[test]
fn static_without_a_good_size_is_refused() {
    assert!(error("static").contains("needs a size"));
    assert!(error("static:").contains("needs a size"));
    assert!(error("static:0").contains("greater than zero"));
    assert!(error("static:lots").contains("not a number"));
    assert!(error("static:16Mbit").contains("unknown unit"));
    assert!(error("static:-4K").contains("negative"));
}

#[test]
fn options_are_checked() {
    assert!(error("stock:64K").contains("takes no options"));
    assert!(error("auto:fast=1").contains("takes no options"));
    assert!(error("drs:interval=5ms").contains("shorter than 10ms"));
    assert!(error("drs:interval=5").contains("no unit"));
    assert!(error("drs:every=1s").contains("unknown option \"every\""));
    assert!(error("drs:interval").contains("unknown option \"interval\""));
    assert!(error("freebsd:recvbuf_max=0").contains("greater than zero"));
    assert!(error("freebsd:recvbuf_auto=2").contains("not 0 or 1"));
    assert!(error("freebsd:recvbuf=1M").contains("recvbuf_max=SIZE"));
}

#[test]
fn specs_and_decisions_serialize_for_telemetry() {
    let spec = parse("static:212.5KB").unwrap();
    assert_eq!(serde_json::to_string(&spec).unwrap(), "\"static:212500B\"");
    let decision = crate::Decision::act(
        "cruise",
        vec![
            crate::Action::SetWindowClamp(Bytes(2_500_000)),
            crate::Action::TellPeer(Bytes(2_500_000)),
        ],
        Bytes(2_500_000),
        "why",
    );
    assert_eq!(
        serde_json::to_value(&decision).unwrap(),
        serde_json::json!({
            "actions": [
                {"action": "set_window_clamp", "bytes": 2_500_000},
                {"action": "tell_peer", "bytes": 2_500_000}
            ],
            "record": {"state": "cruise", "reason": "why", "requested": 2_500_000}
        })
    );
}
