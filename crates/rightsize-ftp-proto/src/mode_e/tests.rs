#![allow(clippy::unwrap_used)]

use super::*;

/// The wire bytes of `header` followed by `data`.
fn block(header: Header, data: &[u8]) -> Vec<u8> {
    let mut out = header.encode().to_vec();
    out.extend_from_slice(data);
    out
}

/// Everything one connection carried, read in pieces of `piece` bytes.
fn read_all(wire: &[u8], piece: usize) -> Result<(Vec<u8>, Vec<String>), ModeEError> {
    let mut reader = BlockReader::new();
    let mut file = Vec::new();
    let mut events = Vec::new();
    for chunk in wire.chunks(piece) {
        let mut items = Vec::new();
        reader.feed(chunk, &mut items)?;
        for item in items {
            match item {
                Item::Data { offset, bytes } => {
                    let end = offset as usize + bytes.len();
                    if file.len() < end {
                        file.resize(end, 0);
                    }
                    file[offset as usize..end].copy_from_slice(bytes);
                }
                Item::Eod => events.push("EOD".to_owned()),
                Item::Eof { connections } => events.push(format!("EOF {connections}")),
                Item::Close => events.push("CLOSE".to_owned()),
            }
        }
    }
    reader.finish()?;
    Ok((file, events))
}

#[test]
fn a_header_is_a_descriptor_then_count_and_offset_big_endian() {
    let h = Header {
        descriptor: descriptor::EOD | descriptor::CLOSE,
        count: 0x0102_0304_0506_0708,
        offset: 0x1112_1314_1516_1718,
    };
    let wire = h.encode();
    assert_eq!(
        wire,
        [
            12, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18
        ]
    );
    assert_eq!(Header::decode(&wire), h);
    assert_eq!(Header::eof(4).encode()[0], 64);
    assert_eq!(Header::eof(4).encode()[16], 4);
}

#[test]
fn blocks_in_any_order_and_any_piece_size_land_at_their_offsets() {
    let mut wire = block(Header::data(5, 5), b"fghij");
    wire.extend(block(Header::data(0, 5), b"abcde"));
    wire.extend(block(
        Header {
            descriptor: descriptor::EOD,
            count: 3,
            offset: 10,
        },
        b"klm",
    ));
    wire.extend(block(Header::eof(1), &[]));
    for piece in [1, 2, 7, 17, 18, 1000] {
        let (file, events) = read_all(&wire, piece).unwrap();
        assert_eq!(file, b"abcdefghijklm", "pieces of {piece}");
        // The EOD of a data block comes after its bytes.
        assert_eq!(events, ["EOD", "EOF 1"], "pieces of {piece}");
    }
}

#[test]
fn a_connection_that_ends_inside_a_block_or_a_header_is_an_error() {
    let wire = block(Header::data(0, 10), b"abcd");
    assert_eq!(
        read_all(&wire, 100).unwrap_err().to_string(),
        "the connection ended after 4 of the 10 bytes of the block at offset 0"
    );
    let wire = &Header::eod(false).encode()[..9];
    assert_eq!(
        read_all(wire, 100).unwrap_err().to_string(),
        "the connection ended inside a block header (9 of 17 bytes)"
    );
}

#[test]
fn data_after_eod_and_restart_blocks_are_refused_but_a_close_is_not() {
    let mut wire = block(Header::eod(false), &[]);
    wire.extend(block(Header::eod(true), &[]));
    assert_eq!(read_all(&wire, 5).unwrap().1, ["EOD", "CLOSE"]);
    wire.extend(block(Header::data(0, 1), b"x"));
    assert_eq!(
        read_all(&wire, 5).unwrap_err(),
        ModeEError::AfterEod {
            descriptor: 0,
            count: 1
        }
    );
    let restart = block(
        Header {
            descriptor: descriptor::RESTART,
            count: 0,
            offset: 0,
        },
        &[],
    );
    assert!(matches!(
        read_all(&restart, 17),
        Err(ModeEError::RestartBlock { descriptor: 16 })
    ));
    // A kept connection carries the next transfer after reuse().
    let (first, second) = (
        block(Header::eod(false), &[]),
        block(Header::data(0, 2), b"ok"),
    );
    let mut reader = BlockReader::new();
    let mut items = Vec::new();
    reader.feed(&first, &mut items).unwrap();
    assert!(reader.ended());
    reader.reuse();
    reader.feed(&second, &mut items).unwrap();
    assert_eq!(
        items.last(),
        Some(&Item::Data {
            offset: 0,
            bytes: b"ok"
        })
    );
}

#[test]
fn reading_what_is_wanted_stops_at_the_eod() {
    // Two transfers back to back on one connection, read a byte at most
    // past what is wanted: the first ends exactly at its EOD.
    let mut wire = block(Header::data(0, 5), b"hello");
    wire.extend(block(Header::eof(1), &[]));
    wire.extend(block(Header::eod(false), &[]));
    let first_len = wire.len();
    wire.extend(block(Header::data(0, 3), b"two"));
    let mut reader = BlockReader::new();
    let mut at = 0;
    while reader.wanted() > 0 {
        let take = reader.wanted().min(4);
        let mut items = Vec::new();
        reader.feed(&wire[at..at + take], &mut items).unwrap();
        at += take;
    }
    assert!(reader.ended());
    assert_eq!(at, first_len);
    assert_eq!(BlockReader::new().wanted(), 17);
}

#[test]
fn a_block_that_does_not_end_the_data_is_wanted_with_the_next_header() {
    let mut wire = block(Header::data(0, 5), b"hello");
    wire.extend(block(
        Header {
            descriptor: crate::mode_e::descriptor::EOD,
            count: 3,
            offset: 5,
        },
        b"end",
    ));
    wire.extend(block(Header::data(0, 3), b"two"));
    let mut reader = BlockReader::new();
    let mut items = Vec::new();
    reader.feed(&wire[..17], &mut items).unwrap();
    assert_eq!(reader.wanted(), 5 + 17, "the bytes and the next header");
    reader.feed(&wire[17..39], &mut items).unwrap();
    assert_eq!(reader.wanted(), 3, "the last block's bytes alone");
    reader.feed(&wire[39..42], &mut items).unwrap();
    assert!(reader.ended());
    assert_eq!(reader.wanted(), 0);
}

#[test]
fn a_count_that_overflows_the_offset_is_refused() {
    let wire = block(Header::data(u64::MAX - 1, 4), b"abcd");
    assert!(matches!(
        read_all(&wire, 100),
        Err(ModeEError::PastEnd { .. })
    ));
}

#[test]
fn the_assembly_is_done_at_as_many_eods_as_the_eof_announced_whatever_the_order() {
    let mut a = Assembly::new(Some(10), Ranges::new());
    a.item(&Item::Eod).unwrap();
    a.item(&Item::Data {
        offset: 0,
        bytes: b"abcde",
    })
    .unwrap();
    assert!(!a.done(), "no EOF yet");
    a.item(&Item::Eof { connections: 2 }).unwrap();
    assert!(!a.done(), "one EOD of two");
    a.item(&Item::Data {
        offset: 5,
        bytes: b"fghij",
    })
    .unwrap();
    a.item(&Item::Eod).unwrap();
    assert!(a.done());
    a.whole().unwrap();
    assert_eq!(a.received().to_string(), "0-10");
    assert!(matches!(
        a.item(&Item::Eod),
        Err(ModeEError::Connections {
            what: "more EODs than connections",
            announced: 2,
            eods: 3
        })
    ));
}

#[test]
fn an_eof_announcing_fewer_connections_than_eods_seen_is_an_error() {
    let mut a = Assembly::new(None, Ranges::new());
    a.item(&Item::Eod).unwrap();
    a.item(&Item::Eod).unwrap();
    assert!(matches!(
        a.item(&Item::Eof { connections: 1 }),
        Err(ModeEError::Connections {
            what: "fewer connections than EODs already seen",
            announced: 1,
            eods: 2
        })
    ));
}

#[test]
fn overlaps_bytes_past_the_size_a_second_eof_and_missing_bytes_are_errors() {
    let mut a = Assembly::new(Some(10), Ranges::new());
    a.item(&Item::Data {
        offset: 2,
        bytes: b"cdef",
    })
    .unwrap();
    assert_eq!(
        a.item(&Item::Data {
            offset: 5,
            bytes: b"fg",
        })
        .unwrap_err()
        .to_string(),
        "a block of bytes 5-7 overlaps bytes already received (2-6)"
    );
    assert_eq!(
        a.item(&Item::Data {
            offset: 8,
            bytes: b"ijk",
        })
        .unwrap_err()
        .to_string(),
        "a block of 3 bytes at offset 8 reaches past the file's 10 bytes"
    );
    a.item(&Item::Eof { connections: 1 }).unwrap();
    assert!(a.item(&Item::Eof { connections: 1 }).is_err());
    a.item(&Item::Eod).unwrap();
    assert_eq!(
        a.whole().unwrap_err().to_string(),
        "the transfer ended with bytes missing: received 2-6 of 10"
    );
    assert_eq!(
        Assembly::new(None, Ranges::new())
            .complete()
            .unwrap_err()
            .to_string(),
        "the data connections ended with no EOF block (0 EODs seen)"
    );
    let mut early = Assembly::new(None, Ranges::new());
    early.item(&Item::Eof { connections: 4 }).unwrap();
    early.item(&Item::Eod).unwrap();
    assert_eq!(
        early.complete().unwrap_err().to_string(),
        "the data connections ended early: the EOF announced 4 connections, 1 EODs seen"
    );
    // With no size, a hole is found too.
    let mut c = Assembly::new(None, Ranges::new());
    c.item(&Item::Data {
        offset: 4,
        bytes: b"x",
    })
    .unwrap();
    assert_eq!(
        c.whole().unwrap_err().to_string(),
        "the transfer ended with bytes missing: received 4-5 of 5"
    );
    let mut b = Assembly::new(None, Ranges::new());
    b.item(&Item::Eod).unwrap();
    b.item(&Item::Eod).unwrap();
    assert!(b.item(&Item::Eof { connections: 1 }).is_err());
}

#[test]
fn ranges_merge_print_parse_and_show_their_gaps() {
    let mut r = Ranges::new();
    assert_eq!(r.to_string(), "0-0");
    r.add(30, 90);
    r.add(0, 30);
    assert_eq!(r.to_string(), "0-90");
    r.add(100, 120);
    r.add(95, 100);
    assert_eq!(r.as_slice(), [(0, 90), (95, 120)]);
    assert_eq!(r.total(), 115);
    assert_eq!(r.gaps(200), [(90, 95), (120, 200)]);
    assert!(!r.covers(120));
    // Ends excluded: byte 29 is missing here.
    assert_eq!(
        Ranges::parse("0-29, 30-89 ,60-70").unwrap().to_string(),
        "0-29,30-89"
    );
    assert_eq!(Ranges::parse("0-30,30-89").unwrap().to_string(), "0-89");
    assert!(Ranges::parse("0-100").unwrap().covers(100));
    for bad in ["", "5", "9-3", "a-b", "0-10,,"] {
        let e = Ranges::parse(bad).unwrap_err();
        assert!(e.contains("like 0-1048576"), "{bad}: {e}");
    }
}

#[test]
fn the_senders_cursor_gives_the_missing_blocks_in_file_order() {
    let done = Ranges::parse("0-10,20-25").unwrap();
    let mut blocks = Blocks::new(40, &done, 8);
    assert_eq!(blocks.left(), 25);
    let all: Vec<_> = std::iter::from_fn(|| blocks.take()).collect();
    assert_eq!(all, [(10, 8), (18, 2), (25, 8), (33, 7)]);
    assert_eq!(Blocks::new(0, &Ranges::new(), 8).take(), None);
}

#[test]
fn retr_options_give_the_starting_parallelism() {
    let parallelism = |args| parse_retr_opts(args).map(|o| o.parallelism);
    assert_eq!(parallelism("Parallelism=4,4,4;"), Ok(4));
    assert_eq!(
        parallelism("StripeLayout=Blocked;BlockSize=1024;parallelism=8,1,16;"),
        Ok(8)
    );
    assert_eq!(parallelism(""), Ok(1));
    for bad in [
        "Parallelism=0,1,1;",
        "Parallelism=65;",
        "Parallelism=x;",
        "Parallelism",
    ] {
        let e = parse_retr_opts(bad).unwrap_err();
        assert!(e.contains("like Parallelism=4,4,4;"), "{bad}: {e}");
    }
}

#[test]
fn retr_options_give_the_perf_marker_interval() {
    let markers = |args| parse_retr_opts(args).map(|o| o.markers_secs);
    assert_eq!(markers("markers=5;"), Ok(Some(5)));
    assert_eq!(markers("Parallelism=4,4,4;Markers=0;"), Ok(Some(0)));
    assert_eq!(markers("Parallelism=4,4,4;"), Ok(None));
    for bad in ["markers=;", "markers=-1;", "markers=soon;"] {
        let e = parse_retr_opts(bad).unwrap_err();
        assert!(e.contains("like markers=5;"), "{bad}: {e}");
    }
}
