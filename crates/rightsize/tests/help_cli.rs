//! The help a user finds without the source: shell completions and the
//! manual page, made from the same definitions as --help.

mod binary;

use binary::{rightsize, text};

fn stdout_of(args: &[&str]) -> String {
    let output = rightsize()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(output.status.success(), "{args:?}: {}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn completions_for_each_shell_know_the_commands_and_flags() {
    for (shell, mark) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef rightsize"),
        ("fish", "complete -c rightsize"),
        ("elvish", "rightsize"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.contains(mark), "{shell}: no {mark:?}");
        for word in ["serve", "doctor", "netrc"] {
            assert!(script.contains(word), "{shell}: no {word:?}");
        }
    }
    // A shell it does not know: exit 2, quoting it and naming those it knows.
    let output = rightsize()
        .args(["completions", "tcsh"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(said.contains("'tcsh'") && said.contains("bash"), "{said}");
}

#[test]
fn the_manual_page_has_every_command_and_its_flags() {
    let page = stdout_of(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH rightsize 1"),
        "{page}"
    );
    for command in [
        "advise", "serve", "get", "put", "passwd", "path", "ping", "test", "doctor", "lab", "demo",
    ] {
        assert!(
            page.contains(&format!(".TH rightsize-{command} 1")),
            "no page for {command}"
        );
    }
    for flag in [
        "netrc",
        "password\\-file",
        "data\\-idle\\-timeout",
        "chroot",
    ] {
        assert!(page.contains(flag), "no {flag} in the manual page");
    }
}

#[test]
fn doctor_takes_no_tuner_since_it_runs_kernel_then_auto() {
    let output = rightsize()
        .args(["doctor", "127.0.0.1:1", "--tune", "stock"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("'--tune'"),
        "{}",
        text(&output)
    );
}
