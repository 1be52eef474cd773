//! `rightsize-bench ftp --tls`: FTPS over a veth pair. A file from page
//! cache to `/dev/null`: `rightsize get --tls` from `rightsize serve`,
//! `curl --ssl-reqd` from vsftpd with TLS, and `rightsize get` in clear
//! from the same server, alternating; each run's rate and the CPU both
//! ends spent per Gbit/s.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use rightsize_sys::netns::{LEFT_ADDR, VethPath};

use crate::ftp::{
    RIGHTSIZE_PORT, TempDir, port_open, rightsize_get, serve_command, start_vsftpd_with,
    vsftpd_conf, write_file,
};
use crate::procs::{Daemon, run_timed, wait_for};

const VSFTPD_TLS_PORT: u16 = 2123;
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// Linux's `/proc` clock ticks per second (`USER_HZ`).
const TICKS_PER_SECOND: f64 = 100.0;

/// One client's runs: rates and CPU seconds (client, server).
#[derive(Debug, Default)]
struct Runs {
    bps: Vec<f64>,
    client_cpu_per_gbps: Vec<f64>,
    server_cpu_per_gbps: Vec<f64>,
}

impl Runs {
    fn median_bps(&self) -> f64 {
        crate::ftp::median(self.bps.clone())
    }
}

/// CPU time of process `pid` with its reaped children, seconds.
fn cpu_seconds(pid: &str) -> anyhow::Result<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) in brackets:
    // utime is the 14th field, stime, cutime, cstime follow.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .context("no command name in /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields
        .get(11..15)
        .context("short /proc/PID/stat")?
        .iter()
        .map(|f| f.parse::<f64>().unwrap_or(0.0))
        .sum();
    Ok(ticks / TICKS_PER_SECOND)
}

/// `rightsize-bench ftp --tls`.
pub fn run(rightsize: &Path, runs: usize, file_bytes: u64, smoke: bool) -> anyhow::Result<bool> {
    let dir = TempDir::new("rightsize-bench-tls")?;
    let root = dir.0.join("root");
    fs::create_dir_all(&root)?;
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o755))?;
    fs::set_permissions(&root, fs::Permissions::from_mode(0o755))?;
    write_file(&root.join("big.bin"), file_bytes)?;
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", &format!("/CN={LEFT_ADDR}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .context("running openssl req (scripts/setup installs openssl)")?;
    if !made.status.success() {
        bail!(
            "openssl req failed: {}",
            String::from_utf8_lossy(&made.stderr)
        );
    }

    let path = VethPath::create("benchtls")?;
    let mut serve = serve_command(rightsize, &path, &root);
    serve
        .args(["--tls-optional", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key);
    let (mut rs, stdout) = Daemon::start_piped("rightsize serve --tls-cert", serve)?;
    let mut lines = BufReader::new(stdout).lines();
    let pin = lines
        .by_ref()
        .take(2)
        .map_while(Result::ok)
        .find_map(|l| l.split("SHA-256 ").nth(1).map(str::to_owned))
        .context("rightsize serve printed no certificate fingerprint")?;
    let _vsftpd = start_vsftpd_tls(&path, &dir.0, &root, &cert, &key)?;
    for port in [RIGHTSIZE_PORT, VSFTPD_TLS_PORT] {
        wait_for(&format!("port {port}"), READY_TIMEOUT, || {
            port_open(&path, port)
        })?;
    }
    rs.check_running()?;
    println!(
        "rightsize-bench ftp --tls: veth {} <-> {}, {file_bytes} bytes from page cache to /dev/null, {runs} run(s) each, alternating",
        path.left.name(),
        path.right.name()
    );
    let url_rs = format!("ftp://{LEFT_ADDR}:{RIGHTSIZE_PORT}/big.bin");
    let url_vs = format!("ftp://{LEFT_ADDR}:{VSFTPD_TLS_PORT}/big.bin");
    let server_pids = [rs.pid().to_string(), _vsftpd.pid().to_string()];
    let (mut tls, mut curl, mut clear) = (Runs::default(), Runs::default(), Runs::default());
    for run in 1..=runs {
        for (name, runs, server, command) in [
            (
                "rightsize get --tls",
                &mut tls,
                &server_pids[0],
                rightsize_get(rightsize, &path, &url_rs, &["--tls", "--pin-sha256", &pin]),
            ),
            ("curl --ssl-reqd from vsftpd", &mut curl, &server_pids[1], {
                let mut c = path.right.command("curl");
                c.args(["-sS", "--ssl-reqd", "-k", "-o", "/dev/null", &url_vs]);
                c
            }),
            (
                "rightsize get (clear)",
                &mut clear,
                &server_pids[0],
                rightsize_get(rightsize, &path, &url_rs, &["--no-tls"]),
            ),
        ] {
            let (client0, server0) = (cpu_seconds("self")?, cpu_seconds(server)?);
            let elapsed = run_timed(name, command)?.elapsed;
            let (client1, server1) = (cpu_seconds("self")?, cpu_seconds(server)?);
            let bps = file_bytes as f64 * 8.0 / elapsed.as_secs_f64();
            let gbps = bps / 1e9;
            let (c, s) = (
                (client1 - client0) / elapsed.as_secs_f64() / gbps,
                (server1 - server0) / elapsed.as_secs_f64() / gbps,
            );
            println!(
                "  run {run}: {name}: {:.2} Gbit/s ({:.2} s); CPU per Gbit/s: client {c:.3}, server {s:.3} cores",
                gbps,
                elapsed.as_secs_f64()
            );
            runs.bps.push(bps);
            runs.client_cpu_per_gbps.push(c);
            runs.server_cpu_per_gbps.push(s);
        }
    }
    rs.check_running()?;
    let (t, c, p) = (tls.median_bps(), curl.median_bps(), clear.median_bps());
    let cpu = |r: &Runs| {
        format!(
            "client {:.3}, server {:.3} cores per Gbit/s",
            crate::ftp::median(r.client_cpu_per_gbps.clone()),
            crate::ftp::median(r.server_cpu_per_gbps.clone())
        )
    };
    println!("medians:");
    println!(
        "  rightsize get --tls: {:.2} Gbit/s ({})",
        t / 1e9,
        cpu(&tls)
    );
    println!(
        "  curl --ssl-reqd from vsftpd: {:.2} Gbit/s ({})",
        c / 1e9,
        cpu(&curl)
    );
    println!(
        "  rightsize get in clear: {:.2} Gbit/s ({})",
        p / 1e9,
        cpu(&clear)
    );
    let (vs_curl, vs_clear) = (
        crate::ftp::AtLeast::judge(t, c, 1.0),
        crate::ftp::AtLeast::judge(t, p, 0.5),
    );
    println!(
        "goals:\n  rightsize --tls / curl --ssl-reqd from vsftpd = {:.3}x (target >= 1.0) {}\n  rightsize --tls / rightsize in clear = {:.3}x (target >= 0.5) {}",
        vs_curl.ratio,
        vs_curl.verdict(),
        vs_clear.ratio,
        vs_clear.verdict()
    );
    if smoke {
        println!("smoke run: everything ran; the ratios of so short a run are not judged");
        return Ok(true);
    }
    Ok(vs_curl.met && vs_clear.met)
}

/// vsftpd with TLS required for anonymous logins and data, session reuse
/// required, AES-GCM ciphers (its own default is 3DES).
fn start_vsftpd_tls(
    path: &VethPath,
    dir: &Path,
    root: &Path,
    cert: &Path,
    key: &Path,
) -> anyhow::Result<Daemon> {
    let tls = format!(
        "ssl_enable=YES\nallow_anon_ssl=YES\nforce_anon_logins_ssl=YES\nforce_anon_data_ssl=YES\n\
         require_ssl_reuse=YES\nssl_ciphers=HIGH\nrsa_cert_file={}\nrsa_private_key_file={}\n",
        cert.display(),
        key.display()
    );
    start_vsftpd_with(
        path,
        &dir.join("vsftpd-tls.conf"),
        &vsftpd_conf(VSFTPD_TLS_PORT, root, 50400, &tls),
    )
}
