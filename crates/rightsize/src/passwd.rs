//! `rightsize passwd`: adds, changes or deletes a user in the FTP server's
//! user file (`rightsize_ftp_proto::passwd`).
//!
//! The file is never half-written: the new text goes to a temporary file in
//! the same directory, which is synced and then renamed over the old one
//! (and the directory synced), so a crash leaves the old file or the new
//! one. A new file gets mode 0600; an existing one keeps its mode and, where
//! the process may, its owner. A symbolic link is followed, not replaced.
//! Two runs at the same moment on one file can lose one of the changes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead as _, IsTerminal as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use rightsize_ftp_proto::passwd::{self, SALT_BYTES, UserDb};
use rightsize_ftp_proto::session::Access;

use crate::cli::PasswdArgs;

/// Mode of a user file that did not exist.
const NEW_FILE_MODE: u32 = 0o600;

/// Input that cannot be used: printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadInput(String);

pub fn run(args: &PasswdArgs) -> anyhow::Result<ExitCode> {
    match change(args) {
        Err(err) if err.is::<BadInput>() => {
            eprintln!("error: {err}");
            Ok(crate::exit::usage())
        }
        other => other.map(|()| ExitCode::SUCCESS),
    }
}

fn change(args: &PasswdArgs) -> anyhow::Result<()> {
    // A link is followed so that the rename replaces its target, not the link.
    let path = fs::canonicalize(&args.file).unwrap_or_else(|_| args.file.clone());
    let shown = args.file.display();
    let (mut db, existing) = load(&path, &shown.to_string())?;
    let user = &args.user;
    let message = if args.delete {
        if !db.remove(user) {
            return Err(BadInput(format!("user \"{user}\" is not in \"{shown}\"")).into());
        }
        format!("deleted user {user} from {shown}")
    } else {
        let password = read_password(user)?;
        let mut salt = [0u8; SALT_BYTES];
        rightsize_sys::random::fill_random(&mut salt).context("making a salt")?;
        let hashed = passwd::hash_password(&password, &salt, args.iterations);
        let access = if args.read_only {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        };
        let existed = db
            .set(user, access, &hashed)
            .with_context(|| format!("setting user \"{user}\""))?;
        let access = match access {
            Access::ReadOnly => "read-only",
            Access::ReadWrite => "read-write",
        };
        if existed {
            format!("changed user {user} ({access}) in {shown}")
        } else {
            format!("added user {user} ({access}) to {shown}")
        }
    };
    write_atomically(&path, db.to_text().as_bytes(), existing.as_ref())?;
    println!("{message}");
    Ok(())
}

/// The file's users and metadata, or an empty file and `None` if it is missing.
fn load(path: &Path, shown: &str) -> anyhow::Result<(UserDb, Option<fs::Metadata>)> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok((UserDb::new(), None)),
        Err(err) => {
            return Err(err).with_context(|| format!("reading users from \"{shown}\""));
        }
    };
    let db = UserDb::parse(&text).with_context(|| format!("parsing users in \"{shown}\""))?;
    let metadata =
        fs::metadata(path).with_context(|| format!("reading metadata of \"{shown}\""))?;
    Ok((db, Some(metadata)))
}

/// One line of stdin; from a terminal, asked for twice without echo.
fn read_password(user: &str) -> anyhow::Result<Vec<u8>> {
    let stdin = io::stdin();
    let password = if stdin.is_terminal() {
        let tty = rightsize_sys::tty::read_password;
        let first = tty(&format!("Password for {user}: ")).context("reading the password")?;
        let again = tty("Same password again: ").context("reading the password")?;
        if first != again {
            return Err(BadInput("the two passwords differ; nothing was changed".into()).into());
        }
        first
    } else {
        let mut line = Vec::new();
        let read = stdin
            .lock()
            .read_until(b'\n', &mut line)
            .context("reading the password from stdin")?;
        if read == 0 {
            return Err(BadInput(format!(
                "no password on stdin; give it as one line, e.g. echo 'pass phrase' | rightsize passwd FILE {user}"
            ))
            .into());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        line
    };
    if password.is_empty() {
        return Err(BadInput("empty password; give at least one character".into()).into());
    }
    Ok(password)
}

/// Replaces `path` with `contents` by a synced temporary file and a rename.
fn write_atomically(
    path: &Path,
    contents: &[u8],
    existing: Option<&fs::Metadata>,
) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("\"{}\" names no file", path.display()))?;
    let mut temp = TempFile::create(dir, &name.to_string_lossy())?;
    let shown = temp.path.display().to_string();
    let file = &mut temp.file;
    if let Some(old) = existing {
        let mode = old.mode() & 0o7777;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .with_context(|| format!("setting mode {mode:o} on \"{shown}\""))?;
        if let Err(err) = std::os::unix::fs::fchown(&*file, Some(old.uid()), Some(old.gid())) {
            eprintln!(
                "warning: \"{}\" will belong to this user, not uid {} gid {}: {err}",
                path.display(),
                old.uid(),
                old.gid()
            );
        }
    }
    file.write_all(contents)
        .with_context(|| format!("writing \"{shown}\""))?;
    file.sync_all()
        .with_context(|| format!("fsync of \"{shown}\""))?;
    temp.rename_to(path)?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("fsync of directory \"{}\"", dir.display()))
}

/// A temporary file that is removed when dropped, unless renamed.
#[derive(Debug)]
struct TempFile {
    path: PathBuf,
    file: File,
    renamed: bool,
}

impl TempFile {
    /// Creates `.NAME.PID.N.tmp` in `dir`, mode 0600, failing if it exists.
    fn create(dir: &Path, name: &str) -> anyhow::Result<Self> {
        let pid = std::process::id();
        let mut attempt = 0;
        loop {
            let path = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(NEW_FILE_MODE)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(TempFile {
                        path,
                        file,
                        renamed: false,
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(err) => {
                    return Err(err).with_context(|| {
                        format!("creating a temporary file \"{}\"", path.display())
                    });
                }
            }
        }
    }

    fn rename_to(mut self, target: &Path) -> anyhow::Result<()> {
        fs::rename(&self.path, target).with_context(|| {
            format!(
                "renaming \"{}\" to \"{}\"",
                self.path.display(),
                target.display()
            )
        })?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.renamed {
            // Best effort: the error that brought us here is the one to report.
            let _ = fs::remove_file(&self.path);
        }
    }
}
