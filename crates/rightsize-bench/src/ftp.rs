//! The data mover's benchmark; see the crate documentation.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use rightsize_sys::netns::{LEFT_ADDR, VethPath};

use crate::flags;
use crate::procs::{Daemon, run_timed, wait_for};

pub const USAGE: &str = "\
usage: rightsize-bench ftp [--runs N] [--mem-bytes BYTES] [--file-bytes BYTES] [--sessions N] [--smoke]
       rightsize-bench ftp --tls [--runs N] [--file-bytes BYTES] [--smoke]

Runs, in one go, as root: rightsize get vs iperf3 -R (memory to memory), rightsize get vs curl
from vsftpd and vs globus-url-copy from globus-gridftp-server (a file from page cache to
/dev/null), over a veth pair between two network namespaces; and the server's resident memory
with N idle sessions. Prints each run and the ratios; exits 1 if a target is missed.
Defaults: --runs 3 --mem-bytes 4294967296 --file-bytes 2147483648 --sessions 200.
--smoke: one short run of each (256 MiB) that checks everything works and does not judge the
ratios (scripts/test runs it).
--tls: FTPS instead: rightsize get --tls from rightsize serve with a certificate, curl --ssl-reqd
from vsftpd with TLS (ssl_enable, require_ssl_reuse), and rightsize get in clear from the same
server, alternating (a file from page cache to /dev/null); each run's rate and the CPU each end
spent per Gbit/s. Targets: rightsize --tls >= 1.0x curl, and >= 0.5x rightsize in clear.";

pub const RIGHTSIZE_PORT: u16 = 2121;
const VSFTPD_PORT: u16 = 2122;
pub const GRIDFTP_PORT: u16 = 2811;
pub const IPERF_PORT: u16 = 5201;
const READY_TIMEOUT: Duration = Duration::from_secs(20);

struct Options {
    tls: bool,
    runs: usize,
    mem_bytes: u64,
    file_bytes: u64,
    sessions: usize,
    smoke: bool,
}

/// Parses the arguments after `ftp`. `--smoke` sets one run of 256 MiB;
/// flags given explicitly win, in whatever order.
fn parse(args: &[String]) -> anyhow::Result<Options> {
    let given = flags::given_with_switches(
        args,
        &["--runs", "--mem-bytes", "--file-bytes", "--sessions"],
        &["--tls"],
        USAGE,
    )?;
    let smoke = given.smoke;
    let mut o = Options {
        tls: given.switch("--tls"),
        runs: if smoke { 1 } else { 3 },
        mem_bytes: if smoke { 256 << 20 } else { 4 << 30 },
        file_bytes: if smoke { 256 << 20 } else { 2 << 30 },
        sessions: 200,
        smoke,
    };
    for (flag, value) in given.values {
        let number = |min| flags::whole_number(&flag, &value, min);
        match flag.as_str() {
            "--runs" => o.runs = usize::try_from(number(1)?)?,
            "--mem-bytes" => o.mem_bytes = number(1)?,
            "--file-bytes" => o.file_bytes = number(1)?,
            _ => o.sessions = usize::try_from(number(0)?)?,
        }
    }
    Ok(o)
}

/// The `rightsize` binary next to this one (scripts/bench builds both).
fn rightsize_bin() -> anyhow::Result<PathBuf> {
    let bin = std::env::current_exe()?.with_file_name("rightsize");
    if !bin.exists() {
        bail!(
            "{} not found; build it with `cargo build --release --workspace`",
            bin.display()
        );
    }
    Ok(bin)
}

/// The median: the middle value, or the mean of the two middle ones; NaN
/// for none.
pub(crate) fn median(values: Vec<f64>) -> f64 {
    crate::goals::median(&values).unwrap_or(f64::NAN)
}

/// `ours / reference` against its least, with whether it holds: never for a
/// missing value or a zero reference (the ratio is then not finite).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AtLeast {
    pub(crate) ratio: f64,
    pub(crate) met: bool,
}

impl AtLeast {
    pub(crate) fn judge(ours: f64, reference: f64, least: f64) -> AtLeast {
        let ratio = ours / reference;
        AtLeast {
            ratio,
            met: ratio.is_finite() && ratio >= least,
        }
    }

    /// `met` or `NOT met`.
    pub(crate) fn verdict(self) -> &'static str {
        if self.met { "met" } else { "NOT met" }
    }
}

fn gbps(bps: f64) -> String {
    format!("{:.2} Gbit/s", bps / 1e9)
}

pub fn run(args: &[String]) -> anyhow::Result<bool> {
    let o = parse(args).context(crate::flags::BadUsage)?;
    let rightsize = rightsize_bin()?;
    if o.tls {
        return crate::ftp_tls::run(&rightsize, o.runs, o.file_bytes, o.smoke);
    }
    let dir = TempDir::new("rightsize-bench")?;
    let root = dir.0.join("root");
    fs::create_dir_all(&root)?;
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o755))?;
    fs::set_permissions(&root, fs::Permissions::from_mode(0o755))?;
    let file = root.join("big.bin");
    write_file(&file, o.file_bytes)?;

    let path = VethPath::create("bench")?;
    let (mut rs, _iperf) = start_serve_and_iperf3(&rightsize, &path, &root)?;
    let _vsftpd = start_vsftpd(&path, &dir.0, &root)?;
    let mut gridftp = path.left.command("globus-gridftp-server");
    gridftp.args([
        "-aa",
        "-anonymous-user",
        "nobody",
        "-p",
        &GRIDFTP_PORT.to_string(),
        "-control-interface",
        &LEFT_ADDR.to_string(),
        "-data-interface",
        &LEFT_ADDR.to_string(),
        "-home-dir",
        "/",
        "-no-chdir",
        "-port-range",
        "50000,50100",
    ]);
    let _gridftp = Daemon::start("globus-gridftp-server", gridftp)?;
    for port in [RIGHTSIZE_PORT, VSFTPD_PORT, GRIDFTP_PORT, IPERF_PORT] {
        wait_for(&format!("port {port}"), READY_TIMEOUT, || {
            port_open(&path, port)
        })?;
    }
    rs.check_running()?;

    let mut ok = true;
    println!(
        "rightsize-bench ftp: veth {} <-> {}, {} run(s) each, alternating",
        path.left.name(),
        path.right.name(),
        o.runs
    );

    // 1. Memory to memory.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for run in 1..=o.runs {
        let (bps, ours_bps) = memory_to_memory(&rightsize, &path, o.mem_bytes, 1)?;
        theirs.push(bps);
        ours.push(ours_bps);
        println!(
            "  memory run {run}: iperf3 -R {}  rightsize get {}",
            gbps(bps),
            gbps(ours_bps)
        );
    }
    let (ours, theirs) = (median(ours), median(theirs));
    let memory = AtLeast::judge(ours, theirs, 0.95);
    ok &= memory.met;
    println!(
        "memory to memory: rightsize get {} / iperf3 {} = {:.3}x (target >= 0.95) {}",
        gbps(ours),
        gbps(theirs),
        memory.ratio,
        memory.verdict()
    );

    // 2. A file from page cache to /dev/null; wall time of each client.
    let file_url_rs = format!("ftp://{LEFT_ADDR}:{RIGHTSIZE_PORT}/big.bin");
    let file_url_vs = format!("ftp://{LEFT_ADDR}:{VSFTPD_PORT}/big.bin");
    let file_url_gr = format!("ftp://{LEFT_ADDR}:{GRIDFTP_PORT}/{}", file.display());
    let (mut t_rs, mut t_curl, mut t_globus) = (Vec::new(), Vec::new(), Vec::new());
    let rate = |t: Duration| o.file_bytes as f64 * 8.0 / t.as_secs_f64();
    for run in 1..=o.runs {
        let c = rightsize_get(&rightsize, &path, &file_url_rs, &[]);
        let a = run_timed("rightsize get (file)", c)?.elapsed;
        let mut c = path.right.command("curl");
        c.args(["-sS", "-o", "/dev/null", &file_url_vs]);
        let b = run_timed("curl from vsftpd", c)?.elapsed;
        let mut c = path.right.command("globus-url-copy");
        c.args([&file_url_gr, "file:///dev/null"]);
        let g = run_timed("globus-url-copy from globus-gridftp-server", c)?.elapsed;
        println!(
            "  file run {run}: rightsize {} ({:.2} s)  curl/vsftpd {} ({:.2} s)  globus {} ({:.2} s)",
            gbps(rate(a)),
            a.as_secs_f64(),
            gbps(rate(b)),
            b.as_secs_f64(),
            gbps(rate(g)),
            g.as_secs_f64()
        );
        t_rs.push(rate(a));
        t_curl.push(rate(b));
        t_globus.push(rate(g));
    }
    let (r, c, g) = (median(t_rs), median(t_curl), median(t_globus));
    let (vs_curl, vs_globus) = (AtLeast::judge(r, c, 1.0), AtLeast::judge(r, g, 1.0));
    ok &= vs_curl.met && vs_globus.met;
    println!(
        "file to /dev/null ({} bytes): rightsize {} / curl+vsftpd {} = {:.3}x {}; / globus {} = {:.3}x {} (targets >= 1.0)",
        o.file_bytes,
        gbps(r),
        gbps(c),
        vs_curl.ratio,
        vs_curl.verdict(),
        gbps(g),
        vs_globus.ratio,
        vs_globus.verdict()
    );
    drop(rs);

    // 3. Resident memory with idle sessions (on loopback).
    let rss = idle_sessions_rss(&rightsize, &root, o.sessions)?;
    println!(
        "rightsize serve with {} idle logged-in sessions (all answering NOOP): VmRSS {} KiB (before: {} KiB, {:.1} KiB per session)",
        o.sessions,
        rss.1,
        rss.0,
        (rss.1.saturating_sub(rss.0)) as f64 / o.sessions.max(1) as f64
    );
    if o.smoke {
        println!("smoke run: everything ran; the ratios of so short a run are not judged");
        return Ok(true);
    }
    Ok(ok)
}

/// `rightsize serve -q` of `root` on the left host of `path`, on its
/// control port; callers add their flags.
pub(crate) fn serve_command(rightsize: &Path, path: &VethPath, root: &Path) -> Command {
    let mut c = path.left.command(&rightsize.to_string_lossy());
    c.args([
        "serve",
        "-q",
        "--listen",
        &format!("{LEFT_ADDR}:{RIGHTSIZE_PORT}"),
        "--root",
    ])
    .arg(root);
    c
}

/// `rightsize get URL -o /dev/null FLAGS` on the right host of `path`.
pub(crate) fn rightsize_get(
    rightsize: &Path,
    path: &VethPath,
    url: &str,
    flags: &[&str],
) -> Command {
    let mut c = path.right.command(&rightsize.to_string_lossy());
    c.args(["get", url, "-o", "/dev/null"]).args(flags);
    c
}

/// `rightsize serve` of `root` and `iperf3 -s` on the left host of `path`.
pub fn start_serve_and_iperf3(
    rightsize: &Path,
    path: &VethPath,
    root: &Path,
) -> anyhow::Result<(Daemon, Daemon)> {
    let rs = Daemon::start("rightsize serve", serve_command(rightsize, path, root))?;
    let mut iperf = path.left.command("iperf3");
    iperf.args([
        "-s",
        "-B",
        &LEFT_ADDR.to_string(),
        "-p",
        &IPERF_PORT.to_string(),
    ]);
    let iperf = Daemon::start("iperf3 -s", iperf)?;
    Ok((rs, iperf))
}

/// One memory-to-memory pair from the right host of `path`: `iperf3 -c
/// -R -n BYTES` (with `-P streams` past one), then `rightsize get` of the
/// zero source to `/dev/null` (with `-P streams` past one); their received
/// bits per second.
pub fn memory_to_memory(
    rightsize: &Path,
    path: &VethPath,
    bytes: u64,
    streams: u32,
) -> anyhow::Result<(f64, f64)> {
    let parallel: Vec<String> = if streams > 1 {
        vec!["-P".to_owned(), streams.to_string()]
    } else {
        Vec::new()
    };
    let label = |program: &str| {
        if streams > 1 {
            format!("{program} -P {streams}")
        } else {
            program.to_owned()
        }
    };
    let mut c = path.right.command("iperf3");
    c.args(["-c", &LEFT_ADDR.to_string(), "-p", &IPERF_PORT.to_string()])
        .args(&parallel)
        .args(["-R", "-J", "-n", &bytes.to_string()]);
    let what = format!("{} -R", label("iperf3 -c"));
    let out = run_timed(&what, c)?;
    let json: serde_json::Value = serde_json::from_slice(&out.output.stdout)?;
    if let Some(error) = json["error"].as_str() {
        bail!("{what}: {error}");
    }
    let iperf_bps = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .context("iperf3 -J: no end.sum_received.bits_per_second")?;
    let url = format!("ftp://{LEFT_ADDR}:{RIGHTSIZE_PORT}/.rightsize/zero/{bytes}");
    let mut flags: Vec<&str> = parallel.iter().map(String::as_str).collect();
    flags.push("--json");
    let c = rightsize_get(rightsize, path, &url, &flags);
    let out = run_timed(&label("rightsize get"), c)?;
    let json: serde_json::Value = serde_json::from_slice(&out.output.stdout)
        .context("rightsize get --json printed no JSON")?;
    let ours_bps = json["goodput_bps"]
        .as_f64()
        .context("rightsize get --json: no goodput_bps")?;
    Ok((iperf_bps, ours_bps))
}

/// Whether a socket listens on `port` in the server's namespace. Read
/// with `ss`, never by connecting: `iperf3 -s` takes a bare connect for a
/// failed test and closes its listener while it resets, so a client
/// started just after the probe can find the port closed (seen in CI).
pub fn port_open(path: &VethPath, port: u16) -> bool {
    let mut c = path.left.command("ss");
    c.args(["-Hltn", &format!("sport = :{port}")]);
    c.stderr(std::process::Stdio::null());
    c.output()
        .is_ok_and(|o| o.status.success() && !o.stdout.trim_ascii().is_empty())
}

fn start_vsftpd(path: &VethPath, dir: &Path, root: &Path) -> anyhow::Result<Daemon> {
    start_vsftpd_with(
        path,
        &dir.join("vsftpd.conf"),
        &vsftpd_conf(VSFTPD_PORT, root, 50200, ""),
    )
}

/// vsftpd's configuration for a benchmark: anonymous, read-only, serving
/// `root` on the left host's `port`, passive ports from `pasv` (100 of
/// them), then `extra` lines.
pub(crate) fn vsftpd_conf(port: u16, root: &Path, pasv: u16, extra: &str) -> String {
    format!(
        "listen=YES\nbackground=NO\nlisten_address={LEFT_ADDR}\nlisten_port={port}\n\
         anonymous_enable=YES\nlocal_enable=NO\nanon_root={}\nno_anon_password=YES\n\
         write_enable=NO\npasv_min_port={pasv}\npasv_max_port={}\n\
         run_as_launching_user=YES\nseccomp_sandbox=NO\n{extra}",
        root.display(),
        pasv + 100
    )
}

/// vsftpd on the left host of `path` with `conf`, written to `file`.
pub(crate) fn start_vsftpd_with(
    path: &VethPath,
    file: &Path,
    conf: &str,
) -> anyhow::Result<Daemon> {
    fs::create_dir_all("/var/run/vsftpd/empty")?;
    fs::write(file, conf)?;
    let mut c = path.left.command("vsftpd");
    c.arg(file);
    Daemon::start("vsftpd", c)
}

/// A file of `bytes` pseudo-random bytes, then read once so it is in the
/// page cache.
pub fn write_file(path: &Path, bytes: u64) -> anyhow::Result<()> {
    let mut f = fs::File::create(path)?;
    let mut block = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for chunk in block.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    let mut left = bytes;
    while left > 0 {
        let n = usize::try_from(left.min(block.len() as u64))?;
        f.write_all(&block[..n])?;
        block.rotate_left(7);
        left -= n as u64;
    }
    f.sync_all()?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))?;
    let mut sink = vec![0u8; 1 << 20];
    let mut r = fs::File::open(path)?;
    while r.read(&mut sink)? > 0 {}
    Ok(())
}

fn idle_sessions_rss(rightsize: &Path, root: &Path, sessions: usize) -> anyhow::Result<(u64, u64)> {
    let mut c = Command::new(rightsize);
    c.args(["serve", "-q", "--listen", "127.0.0.1:0", "--root"])
        .arg(root);
    let (server, stdout) = Daemon::start_piped("rightsize serve (idle sessions)", c)?;
    let mut banner = String::new();
    BufReader::new(stdout).read_line(&mut banner)?;
    let addr: SocketAddr = banner
        .split("ftp://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("no address in {banner:?}"))?;
    let before = vm_rss_kib(server.pid())?;
    let mut conns = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let mut s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        expect(&mut s, "220")?;
        s.write_all(b"USER anonymous\r\n")?;
        expect(&mut s, "331")?;
        s.write_all(b"PASS bench@\r\n")?;
        expect(&mut s, "230")?;
        conns.push(s);
    }
    for s in &mut conns {
        s.write_all(b"NOOP\r\n")?;
    }
    for s in &mut conns {
        expect(s, "200")?;
    }
    let after = vm_rss_kib(server.pid())?;
    drop(conns);
    Ok((before, after))
}

fn expect(s: &mut TcpStream, code: &str) -> anyhow::Result<()> {
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf)?;
    let text = String::from_utf8_lossy(&buf[..n]);
    if !text.starts_with(code) {
        bail!("expected {code}, got {text:?}");
    }
    Ok(())
}

fn vm_rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}

/// A directory under /tmp, removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(what: &str) -> anyhow::Result<TempDir> {
        let path = std::env::temp_dir().join(format!("{what}-{}", std::process::id()));
        fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn a_ratio_holds_only_when_both_values_are_there() {
        let fine = AtLeast::judge(96.0, 100.0, 0.95);
        assert!(fine.met && (fine.ratio - 0.96).abs() < 1e-12);
        assert_eq!(fine.verdict(), "met");
        let short = AtLeast::judge(94.0, 100.0, 0.95);
        assert_eq!((short.met, short.verdict()), (false, "NOT met"));
        // A missing measurement (NaN median) or a zero reference never holds.
        assert!(!AtLeast::judge(f64::NAN, 100.0, 0.95).met);
        assert!(!AtLeast::judge(100.0, f64::NAN, 0.95).met);
        assert!(!AtLeast::judge(100.0, 0.0, 0.95).met);
        assert!(AtLeast::judge(1.0, 1.0, 1.0).met);
    }

    #[test]
    fn vsftpds_configuration_takes_its_port_passive_range_and_extra_lines() {
        let conf = vsftpd_conf(2123, Path::new("/srv/root"), 50400, "ssl_enable=YES\n");
        for line in [
            "listen_port=2123",
            "anon_root=/srv/root",
            "pasv_min_port=50400",
            "pasv_max_port=50500",
            "write_enable=NO",
        ] {
            assert!(conf.lines().any(|l| l == line), "{line} in {conf}");
        }
        assert!(
            conf.ends_with("seccomp_sandbox=NO\nssl_enable=YES\n"),
            "{conf}"
        );
    }

    #[test]
    fn tls_is_a_switch_and_the_rest_keep_their_defaults() {
        let o = parse(&["--tls".to_owned(), "--runs".to_owned(), "5".to_owned()])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(o.tls);
        assert_eq!((o.runs, o.file_bytes), (5, 2 << 30));
        assert!(!parse(&[]).unwrap_or_else(|e| panic!("{e}")).tls);
    }
}
