//! The report opened in a real browser, as a person would: headless
//! Chromium (Debian's `chromium-headless-shell`) loads `index.html`,
//! says where it laid out each plot and whether it drew it, and takes a
//! full-page screenshot; [`rendered`](super::rendered) judges both.
//!
//! System side: this module runs processes and writes files. Each
//! Chromium run is its own process group
//! ([`ProcessGroup`](rightsize_sys::process::ProcessGroup)) with a time
//! limit ([`BROWSER_TIMEOUT`]); when it ends, or on timeout, or on any
//! early return, the whole group is killed (Chromium leaves helper
//! processes behind otherwise) and its scratch files removed.
//!
//! The report itself is not changed: the probe runs in a copy next to it
//! (`.index.html.probe-PID-N.html`, removed afterwards), the screenshot is
//! of the page as written.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rightsize_sys::process::{ProcessError, ProcessGroup, Waited};

use super::rendered::{self, BrowserCheck};

/// The Debian package with headless Chromium (`scripts/setup` installs it).
pub const CHROMIUM_PACKAGE: &str = "chromium-headless-shell";
/// Its command, looked up in `PATH` (Debian: `/usr/bin/chromium-headless-shell`).
pub const CHROMIUM_COMMAND: &str = "chromium-headless-shell";
/// The window's width, CSS pixels: the report's body is at most 1100
/// wide, so nothing is squeezed. The screenshot is 1:1 (scale factor 1).
pub const WINDOW_WIDTH_PX: u32 = 1200;
/// The tallest screenshot taken; plots below it are reported as not seen.
/// About 50 plots; a 1200 x 32768 page takes Chromium 4 s and 300 MB.
pub const MAX_SCREENSHOT_HEIGHT_PX: u32 = 32_768;
/// The window's height while the probe measures the page (the layout
/// does not depend on it: the report sizes nothing by the viewport).
const PROBE_WINDOW_HEIGHT_PX: u32 = 900;
/// How long one Chromium run may take (a page load and a screenshot take
/// about a second).
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);
/// Virtual time the page gets to load and decode its images before the
/// DOM is dumped or the screenshot taken; virtual, so it costs no wait.
const VIRTUAL_TIME_BUDGET_MS: u32 = 5_000;
/// How often a running Chromium is polled.
const POLL: Duration = Duration::from_millis(20);

/// Why the browser check could not run. (Plots that did not render are
/// not an error: they are in [`BrowserCheck::problems`].)
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error(
        "headless Chromium (`{CHROMIUM_COMMAND}`) is not installed: \
         run `apt-get install {CHROMIUM_PACKAGE}` (scripts/setup does)"
    )]
    Missing,
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// Chromium could not be started or waited for.
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("{command} ({what}) did not finish in {timeout:?}; killed it")]
    TimedOut {
        command: PathBuf,
        what: &'static str,
        timeout: Duration,
    },
    #[error("{command} ({what}) failed, {status}: {stderr}")]
    Failed {
        command: PathBuf,
        what: &'static str,
        status: ExitStatus,
        stderr: String,
    },
    #[error("{what}: {reason}")]
    Output { what: &'static str, reason: String },
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> BrowserError {
    let path = path.to_owned();
    move |source| BrowserError::Io { what, path, source }
}

/// Headless Chromium's command, or [`BrowserError::Missing`].
pub fn find_chromium() -> Result<PathBuf, BrowserError> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(CHROMIUM_COMMAND))
        .find(|p| p.is_file())
        .ok_or(BrowserError::Missing)
}

/// Opens `index_html` in headless Chromium, checks that it shows
/// `plots_expected` plots, each rendered, and writes a full-page
/// screenshot (PNG) to `screenshot`. The verdict is in the result
/// ([`BrowserCheck::passed`]); an error means the check could not run.
pub fn check_report(
    index_html: &Path,
    screenshot: &Path,
    plots_expected: usize,
) -> Result<BrowserCheck, BrowserError> {
    let chromium = Chromium::new(find_chromium()?)?;
    let index = fs::canonicalize(index_html).map_err(io_err("reading", index_html))?;
    let html = fs::read_to_string(&index).map_err(io_err("reading", &index))?;

    let probe_page = ScratchFile::write(
        index.with_file_name(format!(".{}.probe-{}.html", file_name(&index), unique())),
        rendered::with_probe(&html),
    )?;
    let dom = chromium.run(
        "loading the page",
        &[
            window_size(PROBE_WINDOW_HEIGHT_PX),
            "--dump-dom".into(),
            file_url(&probe_page.0),
        ],
    )?;
    drop(probe_page);
    let probe = rendered::parse_probe(&String::from_utf8_lossy(&dom)).map_err(|reason| {
        BrowserError::Output {
            what: "the page as Chromium loaded it",
            reason,
        }
    })?;

    let height = (probe.page_h.ceil() as u32).clamp(1, MAX_SCREENSHOT_HEIGHT_PX);
    match fs::remove_file(screenshot) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(io_err("removing the old", screenshot)(e));
        }
        _ => {}
    }
    let mut shot_arg = OsString::from("--screenshot=");
    shot_arg.push(std::path::absolute(screenshot).map_err(io_err("resolving", screenshot))?);
    chromium.run(
        "taking the screenshot",
        &[window_size(height), shot_arg, file_url(&index)],
    )?;
    let bytes = fs::read(screenshot).map_err(io_err("reading the screenshot", screenshot))?;
    let img = rendered::decode_png(&bytes).map_err(|reason| BrowserError::Output {
        what: "the screenshot",
        reason,
    })?;
    Ok(rendered::judge(
        &probe,
        &img,
        plots_expected,
        chromium.version,
        screenshot.to_owned(),
    ))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn window_size(height: u32) -> OsString {
    format!("--window-size={WINDOW_WIDTH_PX},{height}").into()
}

/// `file://` and the absolute `path`, percent-encoded.
fn file_url(path: &Path) -> OsString {
    let mut url = String::from("file://");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url.into()
}

/// Headless Chromium with a throwaway profile.
struct Chromium {
    command: PathBuf,
    version: String,
    scratch: ScratchDir,
}

impl Chromium {
    fn new(command: PathBuf) -> Result<Self, BrowserError> {
        let scratch = ScratchDir::new()?;
        let mut chromium = Chromium {
            command,
            version: String::new(),
            scratch,
        };
        let out = chromium.run("--version", &["--version".into()])?;
        chromium.version = String::from_utf8_lossy(&out).trim().to_owned();
        Ok(chromium)
    }

    /// Runs Chromium with `args` after the common ones; its stdout.
    fn run(&self, what: &'static str, args: &[OsString]) -> Result<Vec<u8>, BrowserError> {
        let dir = &self.scratch.0;
        let out_path = dir.join("stdout");
        let err_path = dir.join("stderr");
        let out = File::create(&out_path).map_err(io_err("creating", &out_path))?;
        let err = File::create(&err_path).map_err(io_err("creating", &err_path))?;
        let mut profile = OsString::from("--user-data-dir=");
        profile.push(dir.join("profile"));
        let mut cmd = Command::new(&self.command);
        cmd.args([
            "--headless",
            // Chromium refuses to run as root with its sandbox; it only
            // ever opens our own local file here.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--no-first-run",
            "--mute-audio",
        ])
        .arg(profile)
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
        let group = ProcessGroup::spawn(&mut cmd)?;
        let status = match group.wait(BROWSER_TIMEOUT, POLL)? {
            Waited::Exited(status) => status,
            Waited::TimedOut | Waited::Stopped => {
                return Err(BrowserError::TimedOut {
                    command: self.command.clone(),
                    what,
                    timeout: BROWSER_TIMEOUT,
                });
            }
        };
        if !status.success() {
            let stderr = fs::read_to_string(&err_path).unwrap_or_default();
            return Err(BrowserError::Failed {
                command: self.command.clone(),
                what,
                status,
                stderr: last_lines(&stderr, 5),
            });
        }
        fs::read(&out_path).map_err(io_err("reading", &out_path))
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `PID-N`, a different N each call: names no other check in this or a
/// running process uses.
fn unique() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A file removed when dropped.
struct ScratchFile(PathBuf);

impl ScratchFile {
    fn write(path: PathBuf, text: String) -> Result<Self, BrowserError> {
        fs::write(&path, text).map_err(io_err("writing", &path))?;
        Ok(ScratchFile(path))
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// A fresh directory under the system's temporary directory, removed
/// (with everything in it) when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<Self, BrowserError> {
        let path = std::env::temp_dir().join(format!("rightsize-browser-{}", unique()));
        let _ = fs::remove_dir_all(&path); // a leftover of a killed process with our pid
        fs::create_dir(&path).map_err(io_err("creating", &path))?;
        Ok(ScratchDir(path))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_percent_encoded() {
        assert_eq!(
            file_url(Path::new("/tmp/a b/ré#1.html")),
            OsString::from("file:///tmp/a%20b/r%C3%A9%231.html")
        );
    }
}
