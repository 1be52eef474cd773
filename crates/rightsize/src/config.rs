//! `serve --config FILE`: a TOML file of the server's flags, one key per
//! flag as its long name reads without the dashes (`root = "/srv/ftp"`,
//! `max-sessions = 500`, `no-anonymous = true`; `_` for `-` also works).
//! The file's settings go before the command line's, which win.
//!
//! The expansion is pure ([`args_of`]): TOML text and the flags `serve`
//! knows in, command-line words out; [`expand`] reads the file.

use std::ffi::OsString;
use std::path::Path;

/// A serve flag: its long name and whether it takes a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// `max-sessions`.
    pub long: String,
    /// `false` for a switch (`no-anonymous`).
    pub takes_value: bool,
}

/// The command-line words of a config file's settings.
pub fn args_of(text: &str, flags: &[Flag]) -> Result<Vec<String>, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("not TOML: {}", e.message()))?;
    let known = || {
        flags
            .iter()
            .map(|f| f.long.as_str())
            .filter(|l| *l != "config")
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    for (key, value) in &table {
        let long = key.replace('_', "-");
        let Some(flag) = flags.iter().find(|f| f.long == long && f.long != "config") else {
            return Err(format!("unknown setting \"{key}\"; accepted: {}", known()));
        };
        let word = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) if !flag.takes_value => {
                if *b {
                    out.push(format!("--{long}"));
                }
                continue;
            }
            toml::Value::Boolean(_) => {
                return Err(format!(
                    "\"{key}\" takes a value (a string or a number), not true or false"
                ));
            }
            other => {
                return Err(format!(
                    "\"{key}\" = {other}: a setting is a string, a number, or true/false for a switch"
                ));
            }
        };
        if !flag.takes_value {
            return Err(format!("\"{key}\" is a switch: write {key} = true"));
        }
        out.push(format!("--{long}"));
        out.push(word);
    }
    Ok(out)
}

/// `argv` with `serve --config FILE` (or `--config=FILE`) replaced by the
/// file's settings, placed first so that the command line's win; other
/// command lines as they are.
pub fn expand(
    argv: Vec<OsString>,
    flags: impl FnOnce() -> Vec<Flag>,
) -> Result<Vec<OsString>, String> {
    if argv.get(1).is_none_or(|a| a != "serve") {
        return Ok(argv);
    }
    let mut rest = Vec::new();
    let mut file = None;
    let mut words = argv[2..].iter();
    while let Some(word) = words.next() {
        if word == "--" {
            rest.push(word.clone());
            rest.extend(words.by_ref().cloned());
            break;
        }
        if word == "--config" {
            let Some(path) = words.next() else {
                return Err("--config needs a FILE".into());
            };
            file = Some(path.clone());
        } else if let Some(path) = word.to_str().and_then(|w| w.strip_prefix("--config=")) {
            file = Some(OsString::from(path));
        } else {
            rest.push(word.clone());
        }
    }
    let Some(file) = file else {
        return Ok(argv);
    };
    let path = Path::new(&file);
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--config {}: {e}", path.display()))?;
    let settings =
        args_of(&text, &flags()).map_err(|e| format!("--config {}: {e}", path.display()))?;
    let mut out = argv[..2].to_vec();
    out.extend(settings.into_iter().map(OsString::from));
    out.extend(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn flags() -> Vec<Flag> {
        [
            ("root", true),
            ("max-sessions", true),
            ("no-anonymous", false),
            ("config", true),
        ]
        .into_iter()
        .map(|(long, takes_value)| Flag {
            long: long.to_owned(),
            takes_value,
        })
        .collect()
    }

    #[test]
    fn settings_become_flags_switches_only_when_true() {
        let text = "root = \"/srv/ftp\"\nmax_sessions = 500\nno-anonymous = true\n";
        assert_eq!(
            args_of(text, &flags()).unwrap(),
            [
                "--max-sessions",
                "500",
                "--no-anonymous",
                "--root",
                "/srv/ftp"
            ]
        );
        assert!(
            args_of("no-anonymous = false", &flags())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn bad_settings_are_refused_saying_what_is_accepted() {
        for (text, said) in [
            (
                "rot = \"/x\"",
                "unknown setting \"rot\"; accepted: root, max-sessions, no-anonymous",
            ),
            ("config = \"other.toml\"", "unknown setting \"config\""),
            ("root = true", "\"root\" takes a value"),
            ("no-anonymous = \"yes\"", "\"no-anonymous\" is a switch"),
            ("root = [\"/a\"]", "a setting is a string, a number"),
            ("root = ", "not TOML"),
        ] {
            let e = args_of(text, &flags()).unwrap_err();
            assert!(e.contains(said), "{text}: {e}");
        }
    }

    #[test]
    fn the_file_goes_before_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve.toml");
        std::fs::write(&file, "root = \"/from/file\"\n").unwrap();
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let f = file.to_str().unwrap();
        let expanded = expand(
            argv(&["rightsize", "serve", "--config", f, "--root", "/cli"]),
            flags,
        )
        .unwrap();
        assert_eq!(
            expanded,
            argv(&[
                "rightsize",
                "serve",
                "--root",
                "/from/file",
                "--root",
                "/cli"
            ])
        );
        let eq = format!("--config={f}");
        assert_eq!(
            expand(argv(&["rightsize", "serve", &eq]), flags).unwrap(),
            argv(&["rightsize", "serve", "--root", "/from/file"])
        );
        // Other commands, and serve without --config, are left alone.
        let get = argv(&["rightsize", "get", "--config", "x"]);
        assert_eq!(expand(get.clone(), flags).unwrap(), get);
        let missing = expand(
            argv(&["rightsize", "serve", "--config", "/nonexistent.toml"]),
            flags,
        )
        .unwrap_err();
        assert!(missing.contains("--config /nonexistent.toml"), "{missing}");
    }
}
