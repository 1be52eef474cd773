//! `rightsize-bench datasets`: moving datasets, beside the tools people
//! move them with, on emulated paths (`rightsize path run`, with its
//! apparatus checks on every run), the contenders alternating within each
//! repetition:
//!
//! 1. a tree of many small files on `lfn` (200 Mbit/s x 100 ms): the wall
//!    time of `rightsize get -r` from `rightsize serve` against
//!    `lftp mirror --parallel=4` (from the same server) and
//!    `globus-url-copy -r -cd -pp -cc 4` from globus-gridftp-server; and
//!    against one file of the tree's size (`rightsize get`). Targets: at
//!    most 0.8x the faster tool, and at most 1.5x the one file;
//! 2. one file on `lossy` (the same path with 0.01% random loss): the
//!    goodput of `rightsize get -P auto` (and of `-P 4`) from `rightsize
//!    serve` against `globus-url-copy -p 4 -tcp-bs <BDP>` from
//!    globus-gridftp-server and against one stream (`rightsize get`), and
//!    the client host's summed receive buffers. Targets for `-P auto`: at
//!    least 1.0x and 3x the goodput, at most 0.5x globus-url-copy's
//!    buffers;
//! 3. memory to memory over a veth pair: `rightsize get -P 4` of the zero
//!    source to `/dev/null` against `iperf3 -P 4 -R`. Target: 0.95x.
//!
//! Each run's command line, exit code, wall time and the path's checks
//! are one line of `runs.jsonl` in the results directory; the summary is
//! made from those lines.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use rightsize_lab::run::paths::LoadedPath;
use rightsize_lab::run::record::fidelity_of;
use rightsize_lab::run::runner::{append_line, unix_seconds};
use serde_json::{Value, json};

use crate::emulated::Bench;
use crate::flags;
// The servers' ports: in the right host of an emulated path, in the
// left one of the veth pair, as the `ftp` benchmark has them.
use crate::ftp::{GRIDFTP_PORT, IPERF_PORT, RIGHTSIZE_PORT};
use crate::procs::{argv, tail, wait_for};
use rightsize_sys::netns::VethPath;
use std::time::Duration;

pub const USAGE: &str = "\
usage: rightsize-bench datasets [--reps N] [--files N] [--file-bytes BYTES] [--mem-bytes BYTES] [--only tree|lossy|veth] [--out DIR] [--smoke]

Runs, as root, the contenders alternating: on emulated paths (bench/paths/lfn.toml and
lossy.toml), a tree of N files of 64 KiB in 20 directories, rightsize get -r vs lftp mirror
--parallel=4 vs globus-url-copy -r -cd -pp -cc 4 vs one file of the same size; one file of
BYTES on the lossy path, rightsize get -P auto and -P 4 vs globus-url-copy -p 4 -tcp-bs <BDP>
vs one stream, by goodput and by the client host's summed receive buffers; and over a veth pair,
rightsize get -P 4 vs iperf3 -P 4 -R, memory to memory. Prints each run, the medians, the
ratios and met / NOT met; exits 1 if a target is missed.
Defaults: --reps 3 --files 2000 --file-bytes 268435456 --mem-bytes 4294967296.
--smoke: one repetition of 100 files, 16 MiB and 256 MiB, to check everything works (not
judged).";

/// Each file of the tree.
const TREE_FILE_BYTES: u64 = 64 * 1024;
/// Directories the tree's files are spread over.
const TREE_DIRS: usize = 20;

struct Options {
    reps: usize,
    files: usize,
    file_bytes: u64,
    only: Option<String>,
    mem_bytes: u64,
    out: Option<PathBuf>,
    smoke: bool,
}

/// Parses the arguments after `datasets`. `--smoke` sets the smoke run's
/// sizes and one repetition; flags given explicitly win, in whatever order.
fn parse(args: &[String]) -> anyhow::Result<Options> {
    let given = flags::given(
        args,
        &[
            "--reps",
            "--files",
            "--file-bytes",
            "--mem-bytes",
            "--only",
            "--out",
        ],
        USAGE,
    )?;
    let smoke = given.smoke;
    let mut o = Options {
        reps: if smoke { 1 } else { 3 },
        files: if smoke { 100 } else { 2000 },
        file_bytes: if smoke { 16 << 20 } else { 256 << 20 },
        only: None,
        mem_bytes: if smoke { 256 << 20 } else { 4 << 30 },
        out: None,
        smoke,
    };
    for (flag, value) in given.values {
        let number = |min| flags::whole_number(&flag, &value, min);
        match flag.as_str() {
            "--reps" => o.reps = usize::try_from(number(1)?)?,
            "--files" => o.files = usize::try_from(number(1)?)?.max(TREE_DIRS),
            "--file-bytes" => o.file_bytes = number(1)?,
            "--mem-bytes" => o.mem_bytes = number(1)?,
            "--only" if ["tree", "lossy", "veth"].contains(&value.as_str()) => o.only = Some(value),
            "--only" => bail!("invalid --only {value:?}: accepted: tree, lossy, veth\n\n{USAGE}"),
            _ => o.out = Some(PathBuf::from(value)),
        }
    }
    Ok(o)
}

/// One contender: its name, the server it needs, and its client command
/// (run on the left host; `OUT` is replaced by its output directory).
struct Contender {
    name: &'static str,
    server: Server,
    client: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Rightsize,
    Globus,
}

pub fn run(args: &[String]) -> anyhow::Result<bool> {
    let o = parse(args).context(crate::flags::BadUsage)?;
    let rightsize = Bench::preflight()?;
    let bench = Bench::start("datasets", rightsize, o.out.as_deref())?;
    let root = bench.out.join("root");
    fs::create_dir_all(&root)?;
    for d in [&bench.out, &root] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755))?;
    }
    let scratch = PathBuf::from(format!(
        "/dev/shm/rightsize-bench-datasets-{}",
        std::process::id()
    ));
    let _scratch = Scratch(scratch.clone());
    println!(
        "rightsize-bench datasets: {} repetition(s), results in {}",
        o.reps,
        bench.out.display()
    );
    let mut ok = true;
    if o.only.is_none() || o.only.as_deref() == Some("tree") {
        ok &= tree(&bench, &o, &root, &scratch)?;
    }
    if o.only.is_none() || o.only.as_deref() == Some("lossy") {
        ok &= lossy(&bench, &o, &root, &scratch)?;
    }
    if o.only.is_none() || o.only.as_deref() == Some("veth") {
        ok &= veth(&bench, &o, &root)?;
    }
    if o.smoke {
        println!("smoke run: everything ran; the ratios of so short a run are not judged");
        return Ok(true);
    }
    Ok(ok)
}

fn tree(bench: &Bench, o: &Options, root: &Path, scratch: &Path) -> anyhow::Result<bool> {
    let path = LoadedPath::load("lfn")?;
    let tree_bytes = o.files as u64 * TREE_FILE_BYTES;
    write_tree(&root.join("tree"), o.files)?;
    write_file(&root.join("one.bin"), tree_bytes)?;
    println!(
        "tree: {} files of 64 KiB in {TREE_DIRS} directories ({:.1} MiB) on {}",
        o.files,
        tree_bytes as f64 / f64::from(1 << 20),
        crate::emulated::path_heading("lfn", &path)
    );
    let rs = bench.rightsize.to_string_lossy().into_owned();
    let contenders = [
        Contender {
            name: "rightsize get -r",
            server: Server::Rightsize,
            client: argv(&[&rs, "get", "-r", "ftp://right:2121/tree/", "-o", "OUT"]),
        },
        Contender {
            name: "lftp mirror --parallel=4",
            server: Server::Rightsize,
            client: argv(&[
                "lftp",
                "-e",
                "set net:max-retries 1; mirror --parallel=4 /tree OUT; quit",
                "ftp://right:2121",
            ]),
        },
        Contender {
            name: "globus-url-copy -r -cd -pp -cc 4",
            server: Server::Globus,
            client: argv(&[
                "globus-url-copy",
                "-r",
                "-cd",
                "-pp",
                "-cc",
                "4",
                &format!("ftp://right:2811/{}/", root.join("tree").display()),
                "file://OUT/",
            ]),
        },
        Contender {
            name: "rightsize get (one file)",
            server: Server::Rightsize,
            client: argv(&[&rs, "get", "ftp://right:2121/one.bin", "-o", "OUT/one.bin"]),
        },
    ];
    let expect = [o.files, o.files, o.files, 1];
    let walls = rounds(
        bench,
        &path,
        root,
        scratch,
        o.reps,
        &contenders,
        &expect,
        "tree",
    )?;
    let [ours, lftp, globus, one] = walls.map(|w| median(&w.walls));
    let faster = match (lftp, globus) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut ok = true;
    let seconds = |v: Option<f64>| v.map_or("-".to_owned(), |s| format!("{s:.2} s"));
    println!(
        "tree medians: rightsize get -r {}, lftp mirror {}, globus-url-copy {}, one file {}",
        seconds(ours),
        seconds(lftp),
        seconds(globus),
        seconds(one)
    );
    ok &= goal(
        "rightsize get -r / the faster of lftp mirror and globus-url-copy (wall time)",
        ours,
        faster,
        |r| r <= 0.8,
        "<= 0.8",
    );
    ok &= goal(
        "rightsize get -r / one file of the same size (wall time)",
        ours,
        one,
        |r| r <= 1.5,
        "<= 1.5",
    );
    Ok(ok)
}

fn lossy(bench: &Bench, o: &Options, root: &Path, scratch: &Path) -> anyhow::Result<bool> {
    let path = LoadedPath::load("lossy")?;
    write_file(&root.join("big.bin"), o.file_bytes)?;
    let bdp = path.facts().bdp_bytes.round() as u64;
    println!(
        "lossy: one file of {:.0} MiB on {}",
        o.file_bytes as f64 / f64::from(1 << 20),
        crate::emulated::path_heading("lossy", &path)
    );
    let rs = bench.rightsize.to_string_lossy().into_owned();
    let contenders = [
        Contender {
            name: "rightsize get -P auto",
            server: Server::Rightsize,
            client: argv(&[
                &rs,
                "get",
                "-P",
                "auto",
                "ftp://right:2121/big.bin",
                "-o",
                "OUT/big.bin",
            ]),
        },
        Contender {
            name: "rightsize get -P 4",
            server: Server::Rightsize,
            client: argv(&[
                &rs,
                "get",
                "-P",
                "4",
                "ftp://right:2121/big.bin",
                "-o",
                "OUT/big.bin",
            ]),
        },
        Contender {
            name: "globus-url-copy -p 4 -tcp-bs BDP",
            server: Server::Globus,
            client: argv(&[
                "globus-url-copy",
                "-p",
                "4",
                "-tcp-bs",
                &bdp.to_string(),
                &format!("ftp://right:2811/{}", root.join("big.bin").display()),
                "file://OUT/big.bin",
            ]),
        },
        Contender {
            name: "rightsize get (one stream)",
            server: Server::Rightsize,
            client: argv(&[&rs, "get", "ftp://right:2121/big.bin", "-o", "OUT/big.bin"]),
        },
    ];
    let walls = rounds(
        bench,
        &path,
        root,
        scratch,
        o.reps,
        &contenders,
        &[1, 1, 1, 1],
        "lossy",
    )?;
    let rate = |w: Option<f64>| w.map(|s| o.file_bytes as f64 * 8.0 / s);
    let [auto_buf, p4_buf, globus_buf, one_buf] = walls.clone().map(|w| median(&w.buffers));
    let [auto, p4, globus, one] = walls.map(|w| rate(median(&w.walls)));
    let mbps = |v: Option<f64>| v.map_or("-".to_owned(), |b| format!("{:.1} Mbit/s", b / 1e6));
    println!(
        "lossy medians (wall time of each client, login included): rightsize get -P auto {}, -P 4 {}, globus-url-copy -p 4 {}, one stream {}",
        mbps(auto),
        mbps(p4),
        mbps(globus),
        mbps(one)
    );
    let mb = |v: Option<f64>| v.map_or("-".to_owned(), |b| format!("{:.1} MB", b / 1e6));
    println!(
        "lossy medians of the client host's summed receive buffers (peak, ss -tm every 100 ms): rightsize get -P auto {}, -P 4 {}, globus-url-copy -p 4 {}, one stream {}",
        mb(auto_buf),
        mb(p4_buf),
        mb(globus_buf),
        mb(one_buf)
    );
    let mut ok = true;
    ok &= goal(
        "rightsize get -P auto / globus-url-copy -p 4 -tcp-bs BDP (goodput)",
        auto,
        globus,
        |r| r >= 1.0,
        ">= 1.0",
    );
    ok &= goal(
        "rightsize get -P auto / globus-url-copy -p 4 -tcp-bs BDP (summed receive buffers)",
        auto_buf,
        globus_buf,
        |r| r <= 0.5,
        "<= 0.5",
    );
    ok &= goal(
        "rightsize get -P auto / one stream (goodput)",
        auto,
        one,
        |r| r >= 3.0,
        ">= 3.0",
    );
    Ok(ok)
}

/// What the counted runs of one contender measured.
#[derive(Debug, Clone, Default)]
struct Measured {
    /// Wall time of the client, seconds.
    walls: Vec<f64>,
    /// Peak of the client host's summed receive buffers, bytes.
    buffers: Vec<f64>,
}

/// Memory to memory over a veth pair (no emulation): `rightsize get -P 4`
/// of the zero source to `/dev/null` against `iperf3 -P 4 -R`, the same
/// direction and bytes, alternating.
fn veth(bench: &Bench, o: &Options, root: &Path) -> anyhow::Result<bool> {
    let path = VethPath::create("datasets")?;
    let (mut serve, _iperf) = crate::ftp::start_serve_and_iperf3(&bench.rightsize, &path, root)?;
    for port in [RIGHTSIZE_PORT, IPERF_PORT] {
        wait_for(&format!("port {port}"), Duration::from_secs(20), || {
            crate::ftp::port_open(&path, port)
        })?;
    }
    serve.check_running()?;
    println!(
        "veth: {:.0} MiB memory to memory, {} <-> {}, no emulation",
        o.mem_bytes as f64 / f64::from(1 << 20),
        path.left.name(),
        path.right.name()
    );
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for rep in 1..=o.reps {
        let (iperf_bps, ours_bps) =
            crate::ftp::memory_to_memory(&bench.rightsize, &path, o.mem_bytes, 4)?;
        println!(
            "  rep {rep}: iperf3 -P 4 -R {:.2} Gbit/s  rightsize get -P 4 {:.2} Gbit/s",
            iperf_bps / 1e9,
            ours_bps / 1e9
        );
        append_line(
            &bench.runs_file,
            &serde_json::to_string(&json!({
                "invocation": bench.invocation,
                "kernel": bench.kernel,
                "version": env!("CARGO_PKG_VERSION"),
                "part": "veth",
                "rep": rep,
                "bytes": o.mem_bytes,
                "iperf3_bps": iperf_bps,
                "rightsize_bps": ours_bps,
            }))?,
        )?;
        theirs.push(iperf_bps);
        ours.push(ours_bps);
    }
    let (a, b) = (median(&ours), median(&theirs));
    println!(
        "veth medians: rightsize get -P 4 {}, iperf3 -P 4 -R {}",
        a.map_or("-".into(), |v| format!("{:.2} Gbit/s", v / 1e9)),
        b.map_or("-".into(), |v| format!("{:.2} Gbit/s", v / 1e9))
    );
    Ok(goal(
        "rightsize get -P 4 / iperf3 -P 4 -R (memory to memory)",
        a,
        b,
        |r| r >= 0.95,
        ">= 0.95",
    ))
}

/// Every contender `reps` times, alternating; what the runs that moved
/// everything on a path whose checks passed measured, per contender.
#[allow(clippy::too_many_arguments)]
fn rounds<const N: usize>(
    bench: &Bench,
    path: &LoadedPath,
    root: &Path,
    scratch: &Path,
    reps: usize,
    contenders: &[Contender; N],
    expect_files: &[usize; N],
    part: &str,
) -> anyhow::Result<[Measured; N]> {
    let mut walls: [Measured; N] = std::array::from_fn(|_| Measured::default());
    for rep in 1..=reps {
        for (i, c) in contenders.iter().enumerate() {
            let dir = bench.out.join(format!("{part}-{}-rep{rep}", slug(c.name)));
            let out = scratch.join(format!("{part}-{i}-rep{rep}"));
            let record = one_run(bench, path, root, c, &dir, &out, expect_files[i], rep)?;
            let line = describe(c.name, &record);
            println!("  rep {rep}: {line}");
            append_line(&bench.runs_file, &serde_json::to_string(&record)?)?;
            if record["error"].is_null()
                && let Some(wall) = record["wall_s"].as_f64()
            {
                walls[i].walls.push(wall);
                if let Some(bytes) = record["peak_rcvbuf_sum_bytes"].as_f64() {
                    walls[i].buffers.push(bytes);
                }
            }
            let _ = fs::remove_dir_all(&out);
        }
    }
    Ok(walls)
}

/// One run: the path with the contender's server, its client timed on
/// the left host; the record of what happened.
#[allow(clippy::too_many_arguments)]
fn one_run(
    bench: &Bench,
    path: &LoadedPath,
    root: &Path,
    c: &Contender,
    dir: &Path,
    out: &Path,
    expect_files: usize,
    rep: usize,
) -> anyhow::Result<Value> {
    fs::create_dir_all(dir)?;
    fs::create_dir_all(out)?;
    let server = match c.server {
        Server::Rightsize => argv(&[
            &bench.rightsize.to_string_lossy(),
            "serve",
            "-q",
            "--listen",
            "0.0.0.0:2121",
            "--root",
            &root.to_string_lossy(),
        ]),
        Server::Globus => argv(&[
            "globus-gridftp-server",
            "-aa",
            "-anonymous-user",
            "nobody",
            "-p",
            "2811",
            "-home-dir",
            "/",
            "-no-chdir",
            "-port-range",
            "50000,50100",
        ]),
    };
    let port = match c.server {
        Server::Rightsize => RIGHTSIZE_PORT,
        Server::Globus => GRIDFTP_PORT,
    };
    let spec = dir.join("spec.toml");
    fs::write(&spec, path.for_run(&server, Some(rep as u64))?)?;
    let timing = dir.join("timing.json");
    let log = dir.join("client.log");
    let client: Vec<String> = c
        .client
        .iter()
        .map(|a| a.replace("OUT", &out.to_string_lossy()))
        .collect();
    let results = dir.join("path.json");
    let mut command = Command::new(&bench.rightsize);
    command
        .args(["path", "run"])
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .args(["--", "bash", "-c", TIMED, "timed"])
        .arg(port.to_string())
        .arg(&timing)
        .arg(&log)
        .args(&client);
    let started = unix_seconds();
    let status = command
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(dir.join("path.log"))?)
        .status()
        .context("cannot run rightsize path run")?;
    let mut error = None;
    let results_json: Value = fs::read_to_string(&results)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let (valid, failed) = fidelity_of(&results_json);
    let timed: Value = fs::read_to_string(&timing)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let wall_s = timed["wall_ns"].as_f64().map(|ns| ns / 1e9);
    let rc = timed["rc"].as_i64();
    let files = count_files(out);
    if rc != Some(0) {
        error = Some(format!(
            "the client exited with {} (see {}): {}",
            rc.map_or("no status".to_owned(), |r| r.to_string()),
            log.display(),
            tail(&fs::read_to_string(&log).unwrap_or_default())
        ));
    } else if files != expect_files {
        error = Some(format!("{files} files arrived, not {expect_files}"));
    } else if valid != Some(true) {
        error = Some(crate::emulated::checks_failed(status, &failed));
    }
    Ok(bench.record(
        started,
        json!({
        "path": path.name,
        "contender": c.name,
        "client": client,
        "rep": rep,
        "wall_s": wall_s,
        "peak_rcvbuf_sum_bytes": timed["peak_rcvbuf_sum_bytes"].as_u64(),
        "files": files,
        "fidelity_valid": valid,
        "failed_checks": failed,
        "run_dir": dir,
        "error": error,
        }),
    ))
}

/// Waits for the server's port, then runs the client and writes its wall
/// time, exit code and the peak of its host's summed socket receive
/// buffers (`ss -tm`'s `rb` over the established connections, every
/// 100 ms) as JSON. Arguments: the port, the timing file, the log file,
/// the client's command line.
const TIMED: &str = r#"port=$1 timing=$2 log=$3; shift 3
for i in $(seq 1 200); do (exec 3<>/dev/tcp/right/$port) 2>/dev/null && break; sleep 0.05; done
( while :; do
    ss -tmnH state established 2>/dev/null | awk -F'rb' '/skmem/ { split($2, a, ","); s += a[1] } END { print s + 0 }'
    sleep 0.1
  done ) > "$log.rb" &
sampler=$!
t0=$(date +%s%N)
"$@" > "$log" 2>&1
rc=$?
t1=$(date +%s%N)
kill $sampler 2>/dev/null
peak=$(sort -n "$log.rb" | tail -1)
printf '{"wall_ns":%s,"rc":%s,"peak_rcvbuf_sum_bytes":%s}\n' $((t1 - t0)) $rc "${peak:-0}" > "$timing"
exit $rc"#;

fn describe(name: &str, record: &Value) -> String {
    let wall = record["wall_s"]
        .as_f64()
        .map_or("-".to_owned(), |s| format!("{s:.2} s"));
    match record["error"].as_str() {
        Some(error) => format!("{name}: {wall}, not counted: {error}"),
        None => format!("{name}: {wall}"),
    }
}

/// Prints a goal's line ([`crate::goals::ratio_goal`]); true when met.
fn goal(
    what: &str,
    ours: Option<f64>,
    theirs: Option<f64>,
    met: impl Fn(f64) -> bool,
    target: &str,
) -> bool {
    let (line, ok) = crate::goals::ratio_goal(what, ours, theirs, met, target);
    println!("{line}");
    ok
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// Regular files under `dir`, part files of an unfinished download not
/// counted.
fn count_files(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                count_files(&p)
            } else {
                usize::from(!e.file_name().to_string_lossy().ends_with(".rightsize-part"))
            }
        })
        .sum()
}

/// `files` files of 64 KiB in [`TREE_DIRS`] directories under `dir`,
/// made once (kept between invocations of the same results directory).
fn write_tree(dir: &Path, files: usize) -> anyhow::Result<()> {
    if count_files(dir) == files {
        return Ok(());
    }
    let _ = fs::remove_dir_all(dir);
    let mut block = vec![0u8; usize::try_from(TREE_FILE_BYTES)?];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..files {
        let sub = dir.join(format!("d{:02}", i % TREE_DIRS));
        if i < TREE_DIRS {
            fs::create_dir_all(&sub)?;
            fs::set_permissions(&sub, fs::Permissions::from_mode(0o755))?;
        }
        for chunk in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        let file = sub.join(format!("f{i:05}.bin"));
        fs::write(&file, &block)?;
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644))?;
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// A file of `bytes` pseudo-random bytes (kept when it has that size).
fn write_file(path: &Path, bytes: u64) -> anyhow::Result<()> {
    if fs::metadata(path).is_ok_and(|m| m.len() == bytes) {
        return Ok(());
    }
    crate::ftp::write_file(path, bytes)
}

/// The clients' output directories, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_medians() {
        assert_eq!(slug("rightsize get -r"), "rightsize-get-r");
        assert_eq!(
            slug("globus-url-copy -p 4 -tcp-bs BDP"),
            "globus-url-copy-p-4-tcp-bs-BDP"
        );
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn bad_flags_quote_what_was_given() {
        let e = parse(&["--only".into(), "trees".into()])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("\"trees\"")));
        assert!(parse(&["--files".into(), "x".into()]).is_err());
        let o = parse(&["--smoke".into()]).map(|o| (o.reps, o.files));
        assert_eq!(o.ok(), Some((1, 100)));
    }
}
