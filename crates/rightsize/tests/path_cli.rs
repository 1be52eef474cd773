//! `rightsize path show`: every example spec in the repository parses, and
//! its Rattan configuration and netem commands come out. No root needed.

use std::path::Path;
use std::process::Command;

#[test]
fn every_example_spec_is_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/paths");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let output = Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["path", "show", "--config"])
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.contains("left -> right") && stdout.contains("[links]"),
            "{stdout}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} examples in {}", dir.display());
}

#[test]
fn flags_alone_make_a_spec_and_bad_flags_are_usage_errors() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rightsize"))
            .args(["path", "show"])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let output = run(&["--rate", "100Mbit", "--delay", "25ms", "--queue", "0.5bdp"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(stdout.contains("queue 312.5 kB (0.5 x BDP)"), "{stdout}");
    assert!(stdout.contains("RTT 50.00 ms"), "{stdout}");
    for (args, needle) in [
        (&["--rate", "0"][..], "zero"),
        (&["--rate", "10Mbit", "--loss", "2"][..], "outside [0, 1)"),
        (&["--delay", "5ms"][..], "--rate"),
        (&["--rate", "10Mbit", "--backend", "tc"][..], "\"tc\""),
    ] {
        let output = run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: {stderr:?} lacks {needle:?}"
        );
    }
}
