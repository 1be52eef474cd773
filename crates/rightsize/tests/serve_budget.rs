//! `rightsize serve --buffer-budget`: data connections admitted while
//! each can have its least, a clear 425 for the next, STAT's account, and
//! bad flags refused.
#![allow(clippy::unwrap_used)]

mod serve_support;

use std::io::Read;
use std::net::TcpStream;
use std::process::Command;

use serve_support::{Control, Serve};

/// What one data connection needs at least (stored buffers: twice a
/// 64 KiB main request and an 8 KiB other one).
const LEAST: u64 = 2 * (64 + 8) * 1024;

/// A download started and left unread: it holds its data connection.
fn held_download(serve: &Serve) -> (Control, TcpStream) {
    let mut c = Control::anonymous(serve.addr);
    assert_eq!(c.cmd("TYPE I").code(), 200);
    let data = TcpStream::connect(c.epsv()).unwrap();
    let start = c.cmd("RETR /.rightsize/zero/10G");
    assert_eq!(start.code(), 150, "{start:?}");
    (c, data)
}

#[test]
fn connections_beyond_the_budget_get_425_with_why_until_one_ends() {
    let root = tempfile::tempdir().unwrap();
    let budget = (3 * LEAST).to_string();
    let serve = Serve::start(root.path(), &["--buffer-budget", &budget]);
    let held: Vec<_> = (0..3).map(|_| held_download(&serve)).collect();
    let mut fourth = Control::anonymous(serve.addr);
    assert_eq!(fourth.cmd("TYPE I").code(), 200);
    let status = fourth.cmd("STAT");
    assert!(
        status.text().contains("Buffer budget:")
            && status.text().contains("by 3 data connection(s)"),
        "{status:?}"
    );
    let _data = TcpStream::connect(fourth.epsv()).unwrap();
    let refused = fourth.cmd("RETR /.rightsize/zero/1M");
    assert_eq!(refused.code(), 425, "{refused:?}");
    assert!(
        refused.text().contains("buffer budget") && refused.text().contains("try again"),
        "{refused:?}"
    );
    // One download ends (its client closes): its share is free again.
    let (mut c, data) = held.into_iter().next().unwrap();
    drop(data);
    let end = c.reply();
    assert!(end.code() == 426 || end.code() == 226, "{end:?}");
    let mut retried = None;
    for _ in 0..50 {
        let mut data = TcpStream::connect(fourth.epsv()).unwrap();
        let reply = fourth.cmd("RETR /.rightsize/zero/1M");
        if reply.code() == 150 {
            let mut bytes = Vec::new();
            data.read_to_end(&mut bytes).unwrap();
            retried = Some((bytes.len(), fourth.reply().code()));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(retried, Some((1 << 20, 226)));
}

#[test]
fn a_budget_that_holds_no_connection_or_the_kernels_tuner_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root.path())
            .args(args)
            .output()
            .unwrap()
    };
    let tiny = run(&["--buffer-budget", "100"]);
    assert_eq!(tiny.status.code(), Some(2), "{tiny:?}");
    let stderr = String::from_utf8_lossy(&tiny.stderr);
    assert!(
        stderr.contains("\"100\"") && stderr.contains("holds no data connection"),
        "{stderr}"
    );
    let kernel = run(&["--buffer-budget", "10MB", "--tune", "kernel"]);
    assert_ne!(kernel.status.code(), Some(0), "{kernel:?}");
    let stderr = String::from_utf8_lossy(&kernel.stderr);
    assert!(stderr.contains("cannot be bounded"), "{stderr}");
}
