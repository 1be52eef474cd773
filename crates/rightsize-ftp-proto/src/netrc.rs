//! `.netrc`, as curl, lftp and ftp read it: the login and password for a
//! host, so that they appear neither in a URL (`ps`, shell history) nor
//! on the command line. Pure: text in, entries out.
//!
//! The format (from inetutils' ftp(1) and curl's reading of it): tokens
//! separated by white space (a token may be quoted with `"`, with `\`
//! escaping the next character); `machine NAME` starts an entry, `default`
//! an entry for any other host (it must come last); `login`, `password`
//! and `account` take a value; `macdef NAME` is followed by a macro whose
//! lines end at an empty line (skipped here). `#` starts a comment to the
//! end of its line where a token would start.
//!
//! Guarantees: an unknown keyword, a keyword without its value, or a
//! value outside an entry is an error that quotes it and names its line;
//! the first entry for a host wins, then `default`.

/// One entry: a host's (or `default`'s) login and password.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// `None` for `default`.
    pub machine: Option<String>,
    /// The `login` value.
    pub login: Option<String>,
    /// The `password` value.
    pub password: Option<String>,
}

/// A `.netrc`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Netrc {
    entries: Vec<Entry>,
}

/// Text that is not a `.netrc`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "line {line}: {problem}; a .netrc holds `machine HOST login NAME password SECRET` entries (and `default`, `account`, `macdef`)"
)]
pub struct NetrcError {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong, quoting the token.
    pub problem: String,
}

/// A token and the line it starts on.
struct Token {
    text: String,
    line: usize,
}

/// `text` with each macro's lines (after a `macdef` line, to the next
/// empty line) blanked, line numbers kept.
fn without_macros(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut in_macro = false;
    for line in text.lines() {
        if in_macro {
            in_macro = !line.trim().is_empty();
        } else {
            kept.push_str(line);
            in_macro = line.split_whitespace().any(|w| w == "macdef");
        }
        kept.push('\n');
    }
    kept
}

/// Splits `text` into tokens.
fn tokens(text: &str) -> Result<Vec<Token>, NetrcError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    loop {
        // White space and comments, counting lines.
        while let Some(&c) = chars.peek() {
            if c == '\n' {
                line += 1;
                chars.next();
            } else if c.is_whitespace() {
                chars.next();
            } else if c == '#' {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            } else {
                break;
            }
        }
        let Some(&first) = chars.peek() else {
            return Ok(out);
        };
        let start = line;
        let mut word = String::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next() {
                    None => {
                        return Err(NetrcError {
                            line: start,
                            problem: format!("the quoted token \"{word} is not closed"),
                        });
                    }
                    Some('"') => break,
                    Some('\\') => {
                        if let Some(c) = chars.next() {
                            word.push(c);
                        }
                    }
                    Some(c) => {
                        if c == '\n' {
                            line += 1;
                        }
                        word.push(c);
                    }
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        out.push(Token {
            text: word,
            line: start,
        });
    }
}

impl Netrc {
    /// Parses a `.netrc`'s text.
    pub fn parse(text: &str) -> Result<Netrc, NetrcError> {
        let tokens = tokens(&without_macros(text))?;
        let mut entries: Vec<Entry> = Vec::new();
        let mut it = tokens.iter();
        let value = |it: &mut std::slice::Iter<'_, Token>, key: &Token| {
            it.next().map(|t| t.text.clone()).ok_or_else(|| NetrcError {
                line: key.line,
                problem: format!("\"{}\" needs a value", key.text),
            })
        };
        while let Some(token) = it.next() {
            match token.text.as_str() {
                "machine" => {
                    let name = value(&mut it, token)?;
                    entries.push(Entry {
                        machine: Some(name),
                        ..Entry::default()
                    });
                }
                "default" => entries.push(Entry::default()),
                "macdef" => {
                    value(&mut it, token)?;
                }
                key @ ("login" | "password" | "account") => {
                    let v = value(&mut it, token)?;
                    let Some(entry) = entries.last_mut() else {
                        return Err(NetrcError {
                            line: token.line,
                            problem: format!("\"{key}\" before any `machine` or `default`"),
                        });
                    };
                    match key {
                        "login" => entry.login = Some(v),
                        "password" => entry.password = Some(v),
                        _ => {}
                    }
                }
                other => {
                    return Err(NetrcError {
                        line: token.line,
                        problem: format!("unknown keyword \"{other}\""),
                    });
                }
            }
        }
        Ok(Netrc { entries })
    }

    /// The entry for `host`: the first `machine` of that name (any case),
    /// else `default`.
    pub fn find(&self, host: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| {
                e.machine
                    .as_deref()
                    .is_some_and(|m| m.eq_ignore_ascii_case(host))
            })
            .or_else(|| self.entries.iter().find(|e| e.machine.is_none()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(machine: Option<&str>, login: &str, password: &str) -> Entry {
        Entry {
            machine: machine.map(str::to_owned),
            login: Some(login.to_owned()),
            password: Some(password.to_owned()),
        }
    }

    #[test]
    fn entries_on_one_line_or_many_with_comments_macros_and_default() {
        let text = "\
# my hosts
machine data.example.org login alice password s3cret
machine other.example.org
    login bob
    password \"two words\" account x

macdef init
cd /pub
binary

default login anonymous password me@example.org
";
        let n = Netrc::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            n.find("DATA.example.org"),
            Some(&entry(Some("data.example.org"), "alice", "s3cret"))
        );
        assert_eq!(
            n.find("other.example.org"),
            Some(&entry(Some("other.example.org"), "bob", "two words"))
        );
        assert_eq!(
            n.find("anything"),
            Some(&entry(None, "anonymous", "me@example.org"))
        );
    }

    #[test]
    fn the_first_entry_for_a_host_wins_and_none_without_default() {
        let n = Netrc::parse("machine h login a password 1\nmachine h login b password 2")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.find("h").and_then(|e| e.login.as_deref()), Some("a"));
        assert_eq!(n.find("elsewhere"), None);
        assert_eq!(
            Netrc::parse("").unwrap_or_else(|e| panic!("{e}")).find("h"),
            None
        );
    }

    #[test]
    fn quoted_tokens_take_escapes() {
        let n = Netrc::parse(r#"machine h login "a b" password "q\"uote\\""#)
            .unwrap_or_else(|e| panic!("{e}"));
        let e = n.find("h").unwrap_or_else(|| panic!("no entry"));
        assert_eq!(e.login.as_deref(), Some("a b"));
        assert_eq!(e.password.as_deref(), Some("q\"uote\\"));
    }

    #[test]
    fn bad_files_are_refused_quoting_the_token_and_its_line() {
        let cases = [
            ("machine h\nlogn alice", 2, "unknown keyword \"logn\""),
            ("machine h login", 1, "\"login\" needs a value"),
            (
                "password x",
                1,
                "\"password\" before any `machine` or `default`",
            ),
            ("machine h password \"open", 1, "is not closed"),
        ];
        for (text, line, problem) in cases {
            let e = Netrc::parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.to_string().contains(problem), "{text}: {e}");
            assert!(e.to_string().contains("machine HOST login NAME"), "{e}");
        }
    }
}
