//! Tests of the probe datagrams and sizes: the header pinned byte by
//! byte, every refusal, and the codec fuzzed (no panic, round trips).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::wire::{HEADER_BYTES, MAGIC, VERSION};
use super::*;
use crate::cross::{DEFAULT_UDP_PAYLOAD, IpVersion};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---- sizes ----

#[test]
fn probe_and_train_sizes_follow_the_sobas_paper_and_the_mtu() {
    // 100-byte IP packets (the SOBAS paper, IV-B).
    assert_eq!(probe_payload_bytes(IpVersion::V4), 72);
    assert_eq!(probe_payload_bytes(IpVersion::V6), 52);
    assert!(usize::from(probe_payload_bytes(IpVersion::V6)) >= HEADER_BYTES);
    // An MTU-sized train packet is the cross traffic's full-MTU payload.
    assert_eq!(
        u64::from(train_payload_bytes(DEFAULT_MTU_BYTES, IpVersion::V4)),
        DEFAULT_UDP_PAYLOAD.get()
    );
    assert_eq!(train_payload_bytes(1500, IpVersion::V6), 1452);
    assert_eq!(
        train_payload_bytes(9000, IpVersion::V4),
        MAX_TRAIN_PACKET_BYTES
    );
    assert_eq!(train_payload_bytes(20, IpVersion::V4), HEADER_BYTES as u16);
    assert_eq!(
        train_payload_bytes(100_000, IpVersion::V4),
        MAX_TRAIN_PACKET_BYTES
    );
    // A default train: 47 x 1,500 IP bytes after the first packet.
    let ip_bytes = u64::from(train_payload_bytes(DEFAULT_MTU_BYTES, IpVersion::V4))
        + IpVersion::V4.udp_overhead_bytes();
    assert_eq!((u64::from(DEFAULT_TRAIN_PACKETS) - 1) * ip_bytes, 70_500);
}

// ---- wire ----

fn sample_messages() -> Vec<Message> {
    vec![
        Message::Probe(Probe {
            seq: 7,
            stamp: 0x0102_0304_0506_0708,
        }),
        Message::Echo(Echo {
            seq: u64::MAX,
            stamp: 1,
            seen: 0b1011,
        }),
        Message::TrainRequest(TrainRequest {
            train: 3,
            packets: DEFAULT_TRAIN_PACKETS,
            packet_bytes: 1472,
            stamp: 99,
        }),
        Message::TrainPacket(TrainPacket {
            train: u32::MAX,
            index: 10,
            packets: 11,
            stamp: 5,
        }),
    ]
}

#[test]
fn the_header_layout_is_pinned() {
    let probe = Message::Probe(Probe {
        seq: 0x1122_3344_5566_7788,
        stamp: 0x0102_0304_0506_0708,
    });
    let bytes = probe.datagram(HEADER_BYTES + 2).unwrap();
    let mut expected = Vec::new();
    expected.extend_from_slice(b"RSZP");
    expected.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expected.extend_from_slice(&[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
    expected.extend_from_slice(&[0; 8]);
    expected.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    expected.extend_from_slice(&[0, 0]);
    assert_eq!(bytes, expected);

    let request = Message::TrainRequest(TrainRequest {
        train: 0x0A0B_0C0D,
        packets: 11,
        packet_bytes: 1472,
        stamp: 0,
    });
    let bytes = request.datagram(HEADER_BYTES).unwrap();
    assert_eq!(
        &bytes[4..16],
        &[1, 3, 0, 11, 0, 0, 0x05, 0xC0, 0x0A, 0x0B, 0x0C, 0x0D]
    );
    let packet = Message::TrainPacket(TrainPacket {
        train: 1,
        index: 2,
        packets: 3,
        stamp: 0,
    });
    let bytes = packet.datagram(HEADER_BYTES).unwrap();
    assert_eq!(&bytes[4..16], &[1, 4, 0, 3, 0, 2, 0, 0, 0, 0, 0, 1]);
    let echo = Message::Echo(Echo {
        seq: 1,
        stamp: 0,
        seen: 0x8000_0000_0000_0001,
    });
    let bytes = echo.datagram(HEADER_BYTES).unwrap();
    assert_eq!(bytes[5], 2);
    assert_eq!(&bytes[24..32], &[0x80, 0, 0, 0, 0, 0, 0, 1]);
}

#[test]
fn every_kind_round_trips_and_padding_is_ignored() {
    for m in sample_messages() {
        for len in [HEADER_BYTES, 72, 1472] {
            let mut bytes = m.datagram(len).unwrap();
            assert_eq!(bytes.len(), len);
            assert_eq!(Message::parse(&bytes), Ok(m));
            bytes.iter_mut().skip(HEADER_BYTES).for_each(|b| *b = 0xA5);
            assert_eq!(Message::parse(&bytes), Ok(m), "padding is not read");
        }
    }
}

#[test]
fn fields_a_kind_does_not_use_are_ignored() {
    let mut bytes = Message::Probe(Probe { seq: 1, stamp: 2 })
        .datagram(HEADER_BYTES)
        .unwrap();
    bytes[6..16].fill(0xFF);
    bytes[24..32].fill(0xFF);
    assert_eq!(
        Message::parse(&bytes),
        Ok(Message::Probe(Probe { seq: 1, stamp: 2 }))
    );
}

#[test]
fn garbage_is_refused_with_the_reason() {
    let good = Message::TrainRequest(TrainRequest {
        train: 1,
        packets: 11,
        packet_bytes: 1472,
        stamp: 0,
    })
    .datagram(HEADER_BYTES)
    .unwrap();
    assert_eq!(
        Message::parse(&good[..39]),
        Err(WireError::TooShort { len: 39 })
    );
    assert_eq!(Message::parse(&[]), Err(WireError::TooShort { len: 0 }));
    let mut bad = good.clone();
    bad[0] = b'X';
    assert_eq!(
        Message::parse(&bad),
        Err(WireError::BadMagic { found: *b"XSZP" })
    );
    let mut bad = good.clone();
    bad[4] = 2;
    assert_eq!(
        Message::parse(&bad),
        Err(WireError::UnsupportedVersion { found: 2 })
    );
    for kind in [0u8, 5, 255] {
        let mut bad = good.clone();
        bad[5] = kind;
        assert_eq!(
            Message::parse(&bad),
            Err(WireError::UnknownKind { found: kind })
        );
    }
    for packets in [0u16, 1, MAX_TRAIN_PACKETS + 1, u16::MAX] {
        let mut bad = good.clone();
        bad[6..8].copy_from_slice(&packets.to_be_bytes());
        assert_eq!(
            Message::parse(&bad),
            Err(WireError::TrainLength { packets })
        );
    }
    for bytes in [0u16, 39, MAX_TRAIN_PACKET_BYTES + 1, u16::MAX] {
        let mut bad = good.clone();
        bad[10..12].copy_from_slice(&bytes.to_be_bytes());
        assert_eq!(Message::parse(&bad), Err(WireError::PacketSize { bytes }));
    }
    let mut bad = good.clone();
    bad[5] = 4; // a train packet ...
    bad[8..10].copy_from_slice(&11u16.to_be_bytes()); // ... past its train
    assert_eq!(
        Message::parse(&bad),
        Err(WireError::IndexOutOfTrain {
            index: 11,
            packets: 11
        })
    );
    // The messages say what was wrong.
    let text = WireError::PacketSize { bytes: 9 }.to_string();
    assert!(
        text.contains("9 bytes") && text.contains("40 to 8972"),
        "{text}"
    );
}

#[test]
fn encode_refuses_what_parse_would_refuse() {
    let mut buf = [0u8; HEADER_BYTES - 1];
    assert_eq!(
        Message::Probe(Probe { seq: 0, stamp: 0 }).encode(&mut buf),
        Err(WireError::TooShort { len: 39 })
    );
    let mut buf = [0u8; HEADER_BYTES];
    let packet = Message::TrainPacket(TrainPacket {
        train: 0,
        index: 3,
        packets: 3,
        stamp: 0,
    });
    assert!(matches!(
        packet.encode(&mut buf),
        Err(WireError::IndexOutOfTrain { .. })
    ));
    let request = Message::TrainRequest(TrainRequest {
        train: 0,
        packets: 1,
        packet_bytes: 1472,
        stamp: 0,
    });
    assert!(matches!(
        request.datagram(1472),
        Err(WireError::TrainLength { packets: 1 })
    ));
    assert_eq!(buf, [0u8; HEADER_BYTES], "nothing written on refusal");
}

fn any_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (any::<u64>(), any::<u64>()).prop_map(|(seq, stamp)| Message::Probe(Probe { seq, stamp })),
        (any::<u64>(), any::<u64>(), any::<u64>())
            .prop_map(|(seq, stamp, seen)| Message::Echo(Echo { seq, stamp, seen })),
        (
            any::<u32>(),
            2..=MAX_TRAIN_PACKETS,
            HEADER_BYTES as u16..=MAX_TRAIN_PACKET_BYTES,
            any::<u64>()
        )
            .prop_map(|(train, packets, packet_bytes, stamp)| {
                Message::TrainRequest(TrainRequest {
                    train,
                    packets,
                    packet_bytes,
                    stamp,
                })
            }),
        (
            any::<u32>(),
            2..=MAX_TRAIN_PACKETS,
            any::<u16>(),
            any::<u64>()
        )
            .prop_map(|(train, packets, index, stamp)| {
                Message::TrainPacket(TrainPacket {
                    train,
                    index: index % packets,
                    packets,
                    stamp,
                })
            }),
    ]
}

/// Bytes that start like a probe datagram more often than chance would,
/// so that the checks after the magic are reached.
fn probe_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 0..120),
        0u8..7,
        any::<bool>(),
    )
        .prop_map(|(mut bytes, kind, magic)| {
            if magic && bytes.len() >= 6 {
                bytes[..4].copy_from_slice(&MAGIC);
                bytes[4] = VERSION;
                bytes[5] = kind;
            }
            bytes
        })
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn any_valid_message_round_trips(m in any_message(), pad in 0usize..64) {
        let bytes = m.datagram(HEADER_BYTES + pad).unwrap();
        prop_assert_eq!(Message::parse(&bytes), Ok(m));
    }

    #[test]
    fn parse_never_panics_and_what_it_accepts_round_trips(bytes in probe_like_bytes()) {
        if let Ok(m) = Message::parse(&bytes) {
            prop_assert!(bytes.len() >= HEADER_BYTES);
            let again = m.datagram(bytes.len()).unwrap();
            prop_assert_eq!(Message::parse(&again), Ok(m));
        }
    }

    #[test]
    fn encode_never_panics(m in any_message(), len in 0usize..64, index in any::<u16>(),
                           packets in any::<u16>(), size in any::<u16>()) {
        let odd = [
            Message::TrainPacket(TrainPacket { train: 0, index, packets, stamp: 0 }),
            Message::TrainRequest(TrainRequest { train: 0, packets, packet_bytes: size, stamp: 0 }),
            m,
        ];
        for m in odd {
            let mut buf = vec![0u8; len];
            match m.encode(&mut buf) {
                Ok(n) => prop_assert_eq!(Message::parse(&buf[..n]), Ok(m)),
                Err(_) => prop_assert!(buf.iter().all(|&b| b == 0)),
            }
        }
    }
}
