use std::net::{IpAddr, Ipv4Addr};

use super::*;

fn no_files(name: &str) -> Result<String, String> {
    Err(format!("no file {name}"))
}

#[test]
fn the_exit_code_says_the_commands_failure_first_then_the_fidelity_verdict() {
    let ok = Ended::Exited {
        success: true,
        code: Some(0),
    };
    assert_eq!(ok.exit_code(true), 0);
    assert_eq!(ok.exit_code(false), INVALID_RUN_EXIT);
    let failed = Ended::Exited {
        success: false,
        code: Some(7),
    };
    assert_eq!(failed.exit_code(false), 7);
    let killed = Ended::Exited {
        success: false,
        code: None,
    };
    assert_eq!(killed.exit_code(true), 1);
    let huge = Ended::Exited {
        success: false,
        code: Some(1000),
    };
    assert_eq!(huge.exit_code(true), 255);
    assert_eq!(Ended::Interrupted.exit_code(true), INTERRUPTED_EXIT);
}

#[test]
fn each_cross_entry_is_a_sink_on_the_far_side_and_a_sender_with_its_settings() {
    let text = r#"
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
congestion = "reno"
"#;
    let spec = PathSpec::from_toml(text, &mut no_files).expect("a valid spec");
    let addr = |side: Side| {
        IpAddr::V4(match side {
            Side::Left => Ipv4Addr::new(198, 18, 0, 1),
            Side::Right => Ipv4Addr::new(198, 18, 0, 2),
        })
    };
    let commands = spec.cross_commands("/bin/rightsize", addr);
    let line = |w: &[String]| w.join(" ");
    assert_eq!(commands.len(), 2);
    assert_eq!(commands[0].sink_side, Side::Right);
    assert_eq!(commands[0].sender_side, Side::Left);
    assert_eq!(
        line(&commands[0].sink),
        "/bin/rightsize path cross sink --listen 198.18.0.2:47000"
    );
    assert_eq!(
        line(&commands[0].sender),
        "/bin/rightsize path cross send --to 198.18.0.2:47000 --udp 100000000bit --on 1000ms --off 2000ms"
    );
    assert_eq!(commands[1].sink_side, Side::Left);
    assert_eq!(
        line(&commands[1].sender),
        "/bin/rightsize path cross send --to 198.18.0.1:47001 --tcp 3 --window 65536B --congestion reno"
    );
}
