//! TLS between the two ends over loopback.

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::thread;

use super::*;

fn server() -> ServerTls {
    ServerTls::self_signed(&["localhost".into(), "127.0.0.1".into()]).unwrap()
}

/// One connection: the server accepts and echoes what it reads back, as
/// many times as there are connections.
fn echo(tls: &ServerTls, connections: usize) -> (std::net::SocketAddr, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let tls = tls.clone();
    let handle = thread::spawn(move || {
        for _ in 0..connections {
            let (sock, _) = listener.accept().unwrap();
            let Ok(mut stream) = tls.accept(sock) else {
                continue;
            };
            let mut buf = Vec::new();
            if stream.read_to_end(&mut buf).is_ok() {
                stream.write_all(&buf).unwrap();
                stream.finish().unwrap();
            }
        }
    });
    (addr, handle)
}

/// A TLS connection on loopback, its handshake done: (server end, client
/// end, the client pinning the server's certificate).
pub(super) fn tls_pair() -> (TlsStream, TlsStream) {
    let tls = server();
    let client = ClientTls::new(&Verify::Pin(parse_pin(tls.fingerprint()).unwrap())).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = thread::spawn(move || tls.accept(listener.accept().unwrap().0).unwrap());
    let client_end = client
        .connect("127.0.0.1", TcpStream::connect(addr).unwrap())
        .unwrap();
    (accepting.join().unwrap(), client_end)
}

fn round_trip(client: &ClientTls, addr: std::net::SocketAddr) -> Result<(Vec<u8>, bool), TlsError> {
    let sock = TcpStream::connect(addr).unwrap();
    let mut stream = client.connect("127.0.0.1", sock)?;
    stream.write_all(b"hello over TLS").unwrap();
    stream.finish().unwrap();
    let mut back = Vec::new();
    stream.read_to_end(&mut back).unwrap();
    Ok((back, stream.resumed()))
}

#[test]
fn a_pinned_client_talks_and_its_next_connections_resume_the_session() {
    let tls = server();
    let (addr, handle) = echo(&tls, 3);
    let pin = parse_pin(tls.fingerprint()).unwrap();
    let client = ClientTls::new(&Verify::Pin(pin)).unwrap();
    let (back, resumed) = round_trip(&client, addr).unwrap();
    assert_eq!(back, b"hello over TLS");
    assert!(!resumed, "the first is a full handshake");
    for _ in 0..2 {
        let (back, resumed) = round_trip(&client, addr).unwrap();
        assert_eq!(back, b"hello over TLS");
        assert!(resumed, "a data connection resumes the session");
    }
    handle.join().unwrap();
}

#[test]
fn a_wrong_pin_or_an_untrusted_certificate_is_refused_and_the_ca_file_trusts_it() {
    let tls = server();
    let (addr, handle) = echo(&tls, 3);
    let wrong = ClientTls::new(&Verify::Pin([7; 32])).unwrap();
    let err = round_trip(&wrong, addr).unwrap_err().to_string();
    assert!(err.contains("not the pinned one"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.pem");
    std::fs::write(&other, server().cert_pem()).unwrap();
    let stranger = ClientTls::new(&Verify::CaFile(other)).unwrap();
    assert!(round_trip(&stranger, addr).is_err());
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, tls.cert_pem()).unwrap();
    let trusting = ClientTls::new(&Verify::CaFile(ca)).unwrap();
    assert_eq!(round_trip(&trusting, addr).unwrap().0, b"hello over TLS");
    handle.join().unwrap();
}

#[test]
fn a_stream_cut_without_close_notify_is_an_error_not_an_end() {
    let tls = server();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut stream = tls.accept(sock).unwrap();
        let mut buf = Vec::new();
        stream.read_to_end(&mut buf)
    });
    let client = ClientTls::new(&Verify::Insecure).unwrap();
    let mut stream = client
        .connect("127.0.0.1", TcpStream::connect(addr).unwrap())
        .unwrap();
    stream.write_all(b"half a file").unwrap();
    stream.flush().unwrap();
    stream.socket().shutdown(std::net::Shutdown::Both).unwrap();
    let read = handle.join().unwrap();
    assert_eq!(read.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
}

#[test]
fn pins_certificates_and_keys_are_read_or_refused_by_name() {
    let fp = server().fingerprint().to_owned();
    assert_eq!(fp.len(), 95);
    assert_eq!(
        parse_pin(&fp).unwrap(),
        parse_pin(&fp.replace(':', "").to_lowercase()).unwrap()
    );
    let err = parse_pin("abcd").unwrap_err().to_string();
    assert!(
        err.contains("\"abcd\"") && err.contains("64 hex digits"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let err = ServerTls::from_pem_files(&empty, &empty)
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty.pem holds no PEM certificate"), "{err}");
    let missing = dir.path().join("missing.pem");
    let err = ServerTls::from_pem_files(&missing, &empty)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot read") && err.contains("missing.pem"),
        "{err}"
    );
}

#[test]
fn the_pump_carries_a_control_conversation_for_the_thread_that_owns_it() {
    let tls = server();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let mut pump = Pump::new(tls.connection().unwrap());
        let mut writer = sock.try_clone().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"\r\n") {
            let n = sock.read(&mut buf).unwrap();
            got.extend(pump.input(&buf[..n], &mut writer).unwrap());
        }
        pump.write_all(b"200 NOOP ok.\r\n", &mut writer).unwrap();
        got
    });
    let client = ClientTls::new(&Verify::Insecure).unwrap();
    let mut stream = client
        .connect("localhost", TcpStream::connect(addr).unwrap())
        .unwrap();
    stream.write_all(b"NOOP\r\n").unwrap();
    let mut reply = [0u8; 14];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"200 NOOP ok.\r\n");
    assert_eq!(handle.join().unwrap(), b"NOOP\r\n");
}

#[test]
fn aes_128_gcm_comes_first_for_bulk_transfers() {
    let first = format!("{:?}", provider().cipher_suites[0].suite());
    assert_eq!(first, "TLS13_AES_128_GCM_SHA256");
    assert!(
        provider().cipher_suites.len() >= 6,
        "the others are still offered"
    );
}
