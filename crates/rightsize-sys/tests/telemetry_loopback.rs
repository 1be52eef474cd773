//! The telemetry sampler on a real loopback TCP connection: a sender moves
//! 50 MB to a receiver that reads slowly enough for several samples, and the
//! JSON lines are checked for shape, order and the final total.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rightsize_sys::telemetry::{Monitor, TelemetryError, TelemetryOut};
use rightsize_tune::telemetry::{Direction, Header, RecordKind, Role};

const TOTAL_BYTES: u64 = 50_000_000;
const CHUNK_BYTES: usize = 64 * 1024;

/// A writer into a shared buffer, read by the test after the sampler ends.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = self.0.lock().map_err(|_| io::Error::other("poisoned"))?;
        out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("lock").clone()).expect("UTF-8 lines")
    }
}

fn header(stream: &TcpStream) -> Header {
    Header {
        version: env!("CARGO_PKG_VERSION").into(),
        kernel: rightsize_sys::sysctl::kernel_release().ok(),
        argv: std::env::args().collect(),
        role: Role::Client,
        direction: Direction::Send,
        local_addr: stream.local_addr().expect("local addr").to_string(),
        peer_addr: stream.peer_addr().expect("peer addr").to_string(),
        interval_us: None,
        settings: BTreeMap::from([("test".into(), "loopback".into())]),
    }
}

fn telemetry(out: &Shared, stream: &TcpStream, interval: Duration) -> TelemetryOut {
    TelemetryOut {
        out: Box::new(out.clone()),
        header: header(stream),
        interval,
    }
}

fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("listener addr");
    let client = TcpStream::connect(addr).expect("connect loopback");
    let (server, _) = listener.accept().expect("accept");
    (client, server)
}

#[test]
fn telemetry_samples_a_loopback_transfer() {
    let (mut sender, mut receiver) = pair();
    // The receiver pauses 2 ms per MiB: about 100 ms in all, 10 intervals.
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = receiver.read(&mut buf).expect("receive");
            if n == 0 {
                return total;
            }
            let before = total;
            total += n as u64;
            if total >> 20 != before >> 20 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    });

    let bytes = Arc::new(AtomicU64::new(0));
    let out = Shared::default();
    let sampler = Monitor::start(
        &sender,
        Arc::clone(&bytes),
        Some(telemetry(&out, &sender, Duration::from_millis(10))),
        None,
    )
    .expect("start the sampler");
    let chunk = vec![0x5au8; CHUNK_BYTES];
    let mut sent = 0u64;
    while sent < TOTAL_BYTES {
        let n = (TOTAL_BYTES - sent).min(CHUNK_BYTES as u64) as usize;
        sender.write_all(&chunk[..n]).expect("send");
        sent += n as u64;
        bytes.store(sent, Ordering::Relaxed);
    }
    // Close the connection and keep sampling the closed socket for a while:
    // the sampler must neither panic nor stop.
    sender.shutdown(Shutdown::Write).expect("shutdown");
    assert_eq!(reader.join().expect("receiver thread"), TOTAL_BYTES);
    drop(sender);
    std::thread::sleep(Duration::from_millis(30));
    assert!(sampler.last().is_some());
    let finished = sampler.finish().expect("finish the sampler");
    assert_eq!(finished.telemetry_error, None);
    assert!(finished.tuner.is_none());
    assert!(finished.buffers.peak_sndbuf_bytes >= finished.buffers.mean_sndbuf_bytes);
    assert!(finished.buffers.mean_sndbuf_bytes > 0);
    let final_record = finished.record;
    assert_eq!(final_record.kind, RecordKind::Final);
    assert_eq!(final_record.bytes, TOTAL_BYTES);
    assert!(final_record.rtt_us.is_some());

    let text = out.text();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(!text.contains("null"), "absent fields are left out");
    let head = &lines[0];
    assert_eq!(head["kind"], "header");
    assert_eq!(head["role"], "client");
    assert_eq!(head["direction"], "send");
    assert_eq!(head["interval_us"], 10_000);
    assert_eq!(head["settings"]["test"], "loopback");
    assert!(head["argv"].is_array() && head["version"].is_string());

    let records = &lines[1..];
    let samples = records.iter().filter(|r| r["kind"] == "sample").count();
    assert!(samples >= 5, "only {samples} samples in {text}");
    assert_eq!(records.last().map(|r| &r["kind"]), Some(&"final".into()));
    assert_eq!(samples, records.len() - 1, "one final line, at the end");
    let mut previous = (-1.0, 0u64);
    for record in records {
        let t_s = record["t_s"].as_f64().expect("t_s");
        let bytes = record["bytes"].as_u64().expect("bytes");
        assert!(t_s > previous.0, "t_s went {} -> {t_s}", previous.0);
        assert!(bytes >= previous.1, "bytes went {} -> {bytes}", previous.1);
        previous = (t_s, bytes);
        // What every 6.18 sample of a sender carries.
        for field in [
            "rtt_us",
            "rcvbuf_bytes",
            "sndbuf_bytes",
            "snd_cwnd_segs",
            "busy_time_us",
        ] {
            assert!(record.get(field).is_some(), "{field} missing: {record}");
        }
    }
    assert_eq!(previous.1, TOTAL_BYTES);
    // Mid-transfer samples moved data at a measurable rate.
    assert!(
        records
            .iter()
            .any(|r| r["interval_goodput_bps"].as_u64() > Some(0))
    );
}

#[test]
fn telemetry_refuses_a_zero_interval() {
    let (sender, _receiver) = pair();
    let out = Shared::default();
    for interval in [Duration::ZERO, Duration::from_micros(500)] {
        let err = Monitor::start(
            &sender,
            Arc::new(AtomicU64::new(0)),
            Some(telemetry(&out, &sender, interval)),
            None,
        )
        .expect_err("too short an interval");
        assert!(matches!(err, TelemetryError::Interval(_)), "{err:?}");
        assert!(
            err.to_string().contains("shorter than the minimum 1ms"),
            "{err}"
        );
    }
    assert!(out.text().is_empty(), "nothing written before the check");
}

/// A writer that always fails.
struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn telemetry_reports_a_failed_header_write() {
    let (sender, _receiver) = pair();
    let out = TelemetryOut {
        out: Box::new(Broken),
        header: header(&sender),
        interval: Duration::from_millis(10),
    };
    let err = Monitor::start(&sender, Arc::new(AtomicU64::new(0)), Some(out), None)
        .expect_err("the header cannot be written");
    assert!(
        matches!(err, TelemetryError::Write { line: "header", .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "writing the telemetry header line");
}
