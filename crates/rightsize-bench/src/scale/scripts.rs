//! The shell scripts of a `rightsize-bench scale` run and the files they
//! write in its directory. The right host's command samples the summed
//! send buffers of its data connections and runs `rightsize serve`; the
//! left host's waits for the server's port, samples the summed receive
//! buffers, starts the clients at once and times each. Both samplers
//! write `UNIX_NS SUM_BYTES SOCKETS` every 100 ms
//! ([`super::figures::parse_samples`]); connections to or from the
//! control port are left out, so the sums are the data connections'.

use std::path::{Path, PathBuf};

/// Where a run's scripts write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    /// The run's directory.
    pub dir: PathBuf,
    /// The left host's sampled receive-buffer sums.
    pub rcvbuf_samples: PathBuf,
    /// The right host's sampled send-buffer sums.
    pub sndbuf_samples: PathBuf,
    /// The right host's sampled sums of both buffers of each connection.
    pub server_buffers_samples: PathBuf,
    /// What `rightsize serve` printed on stderr.
    pub server_log: PathBuf,
    /// `RC UNIX_NS`, written if `rightsize serve` exits before the path
    /// is torn down.
    pub server_rc: PathBuf,
}

impl RunFiles {
    /// The files of a run in `dir`.
    pub fn in_dir(dir: &Path) -> RunFiles {
        RunFiles {
            dir: dir.to_owned(),
            rcvbuf_samples: dir.join("rcvbuf.samples"),
            sndbuf_samples: dir.join("sndbuf.samples"),
            server_buffers_samples: dir.join("serverbuf.samples"),
            server_log: dir.join("server.log"),
            server_rc: dir.join("server.rc"),
        }
    }

    /// Client `i`'s (from 1) timing (`START_NS END_NS RC`), standard
    /// output and standard error.
    pub fn client(&self, i: usize) -> (PathBuf, PathBuf, PathBuf) {
        let file = |ext: &str| self.dir.join(format!("client-{i}.{ext}"));
        (file("time"), file("out"), file("err"))
    }
}

/// A loop that prints, every 100 ms, the time, the sum of `fields` (`rb`:
/// SO_RCVBUF, `tb`: SO_SNDBUF, as `ss -tm`'s `skmem` shows them; both
/// for what a connection holds in all) over the host's established
/// connections that are not to or from `port`, and how many there were.
pub fn sampler(fields: &[&str], port: u16) -> String {
    let wanted = fields.join("|");
    format!(
        "while :; do ss -tmnH state established '( not sport = :{port} and not dport = :{port} )' 2>/dev/null \
         | awk -v t=\"$(date +%s%N)\" -F'[(,)]' '/skmem/ {{ n++; for (i = 1; i <= NF; i++) if ($i ~ /^({wanted})[0-9]+$/) s += substr($i, 3) }} END {{ print t, s + 0, n + 0 }}'; \
         sleep 0.1; done"
    )
}

/// The right host's command: two samplers (leaving out the control
/// `port`) in the background, of the send buffers and of both buffers
/// (what a `--buffer-budget` bounds), then `serve` (not `exec`ed: its exit code and time are written to
/// [`RunFiles::server_rc`], so a server that stops early is seen).
pub fn server_argv(files: &RunFiles, port: u16, serve: &[String]) -> Vec<String> {
    let script = format!(
        "samples=$1 both=$2 log=$3 rc=$4; shift 4\n\
         ( {} ) > \"$samples\" &\n\
         ( {} ) > \"$both\" &\n\
         \"$@\" 2> \"$log\"\n\
         status=$?\n\
         echo \"$status $(date +%s%N)\" > \"$rc\"\n\
         exit $status",
        sampler(&["tb"], port),
        sampler(&["rb", "tb"], port)
    );
    let mut argv = vec![
        "bash".to_owned(),
        "-c".to_owned(),
        script,
        "serve-sampled".to_owned(),
        s(&files.sndbuf_samples),
        s(&files.server_buffers_samples),
        s(&files.server_log),
        s(&files.server_rc),
    ];
    argv.extend(serve.iter().cloned());
    argv
}

/// The left host's command: waits (up to 10 s) for `port` on `server`
/// (the right host's name), starts the receive-buffer sampler, then `n`
/// copies of `client` at once, each timed into its files
/// ([`RunFiles::client`]); exits 1 if one failed.
pub fn clients_argv(
    files: &RunFiles,
    server: &str,
    port: u16,
    n: usize,
    client: &[String],
) -> Vec<String> {
    let script = format!(
        "server=$1 port=$2 dir=$3 n=$4 samples=$5; shift 5\n\
         for i in $(seq 1 200); do (exec 3<>/dev/tcp/$server/$port) 2>/dev/null && break; sleep 0.05; done\n\
         ( {} ) > \"$samples\" &\n\
         sampler=$!\n\
         pids=()\n\
         for i in $(seq 1 \"$n\"); do\n\
         \x20 ( t0=$(date +%s%N)\n\
         \x20   \"$@\" > \"$dir/client-$i.out\" 2> \"$dir/client-$i.err\"\n\
         \x20   rc=$?\n\
         \x20   echo \"$t0 $(date +%s%N) $rc\" > \"$dir/client-$i.time\"\n\
         \x20   exit $rc ) &\n\
         \x20 pids+=($!)\n\
         done\n\
         failed=0\n\
         for p in \"${{pids[@]}}\"; do wait \"$p\" || failed=1; done\n\
         sleep 0.2\n\
         kill $sampler 2>/dev/null\n\
         exit $failed",
        sampler(&["rb"], port)
    );
    let mut argv = vec![
        "bash".to_owned(),
        "-c".to_owned(),
        script,
        "clients".to_owned(),
        server.to_owned(),
        port.to_string(),
        s(&files.dir),
        n.to_string(),
        s(&files.rcvbuf_samples),
    ];
    argv.extend(client.iter().cloned());
    argv
}

/// [`RunFiles::server_rc`]'s `RC UNIX_NS`.
pub fn parse_server_exit(text: &str) -> Option<(i32, u64)> {
    let mut fields = text.split_whitespace();
    let rc = fields.next()?.parse().ok()?;
    let at = fields.next()?.parse().ok()?;
    Some((rc, at))
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
