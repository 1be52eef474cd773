//! The figures of one run of `rightsize-bench scale`, from the files its
//! shell scripts wrote: each client's start, end, exit code and bytes, and
//! the samplers' lines (`UNIX_NS SUM_BYTES SOCKETS`, one every 100 ms).
//! Pure: text in, figures or a reason the run does not count out.

use rightsize_tune::units::Bytes;

/// One line of a sampler: the summed buffer of a host's established data
/// connections at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When, nanoseconds since the Unix epoch.
    pub at_ns: u64,
    /// The sum of the sockets' buffers (`skmem`'s `rb` or `tb`), bytes.
    pub sum_bytes: u64,
    /// How many sockets were summed.
    pub sockets: u64,
}

/// A sampler's file: one [`Sample`] a line. A last line without its
/// newline (the sampler was stopped while writing it) is left out; any
/// other line that is not three whole numbers is an error that quotes it.
pub fn parse_samples(text: &str) -> Result<Vec<Sample>, String> {
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<u64> = line
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    format!("sampler line {line:?}: expected UNIX_NS SUM_BYTES SOCKETS")
                })?;
            match fields[..] {
                [at_ns, sum_bytes, sockets] => Ok(Sample {
                    at_ns,
                    sum_bytes,
                    sockets,
                }),
                _ => Err(format!(
                    "sampler line {line:?}: expected UNIX_NS SUM_BYTES SOCKETS"
                )),
            }
        })
        .collect()
}

/// The highest sum sampled; `None` for no samples.
pub fn peak(samples: &[Sample]) -> Option<u64> {
    samples.iter().map(|s| s.sum_bytes).max()
}

/// The mean of the sums sampled while the host had a data connection
/// (samples of no socket left out: before the first connection and after
/// the last); `None` for none.
pub fn mean_while_busy(samples: &[Sample]) -> Option<f64> {
    let busy: Vec<f64> = samples
        .iter()
        .filter(|s| s.sockets > 0)
        .map(|s| s.sum_bytes as f64)
        .collect();
    if busy.is_empty() {
        return None;
    }
    Some(busy.iter().sum::<f64>() / busy.len() as f64)
}

/// One client of a run, as its files say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientRun {
    /// When it started and ended, nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
    /// Its exit code.
    pub rc: i32,
    /// The bytes it says it received (`None`: it says nothing).
    pub bytes: Option<u64>,
}

/// A client's timing file: `START_NS END_NS RC`.
pub fn parse_timing(text: &str) -> Result<(u64, u64, i32), String> {
    let bad = || format!("timing {:?}: expected START_NS END_NS RC", text.trim());
    let fields: Vec<&str> = text.split_whitespace().collect();
    match fields[..] {
        [start, end, rc] => Ok((
            start.parse().map_err(|_| bad())?,
            end.parse().map_err(|_| bad())?,
            rc.parse().map_err(|_| bad())?,
        )),
        _ => Err(bad()),
    }
}

/// Jain's fairness index of `values`: `(sum x)^2 / (n sum x^2)`, 1 when
/// all are equal, `1/n` when one has everything; `None` for none or all
/// zero.
pub fn jain(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    if values.is_empty() || squares <= 0.0 {
        return None;
    }
    Some(sum * sum / (values.len() as f64 * squares))
}

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunFigures {
    /// All clients' bytes over the time from the first start to the last
    /// end, bits/s.
    pub aggregate_goodput_bps: f64,
    /// [`jain`] over each client's bytes over its own wall time.
    pub jain_fairness: f64,
    /// The peak of the clients' host's sampled summed receive buffers.
    pub sum_peak_rcvbuf_bytes: u64,
    /// The peak of the server's host's sampled summed send buffers.
    pub sum_peak_sndbuf_bytes: u64,
    /// The clients' summed receive buffers, [`mean_while_busy`] (0 for
    /// none): what the peak is compared with.
    pub sum_mean_rcvbuf_bytes: f64,
    /// The server's summed send buffers, [`mean_while_busy`].
    pub sum_mean_sndbuf_bytes: f64,
    /// The number of samples of each side (left, right).
    pub samples: (usize, usize),
}

/// The figures of a run whose every client must have received `expect`
/// bytes; the reason it does not count if one failed, moved another
/// amount, or a sampler wrote nothing or saw no data connection.
pub fn run_figures(
    clients: &[ClientRun],
    expect: Bytes,
    rcvbuf: &[Sample],
    sndbuf: &[Sample],
) -> Result<RunFigures, String> {
    if clients.is_empty() {
        return Err("no client ran".to_owned());
    }
    for (i, c) in clients.iter().enumerate() {
        let n = i + 1;
        if c.rc != 0 {
            return Err(format!("client {n} exited with {}", c.rc));
        }
        if c.bytes.is_some_and(|b| b != expect.0) {
            return Err(format!(
                "client {n} received {} bytes, not {}",
                c.bytes.unwrap_or(0),
                expect.0
            ));
        }
        if c.end_ns <= c.start_ns {
            return Err(format!("client {n} ended before it started"));
        }
    }
    let busy = |samples: &[Sample]| samples.iter().filter(|s| s.sockets > 0).count();
    let (Some(rcv), Some(snd)) = (peak(rcvbuf), peak(sndbuf)) else {
        return Err(format!(
            "a buffer sampler wrote nothing ({} receive-buffer samples on the clients' host, {} send-buffer samples on the server's)",
            rcvbuf.len(),
            sndbuf.len()
        ));
    };
    if busy(rcvbuf) == 0 || busy(sndbuf) == 0 {
        return Err(format!(
            "a buffer sampler saw no data connection ({} of {} receive-buffer samples on the clients' host, {} of {} send-buffer samples on the server's)",
            busy(rcvbuf),
            rcvbuf.len(),
            busy(sndbuf),
            sndbuf.len()
        ));
    }
    let seconds = |c: &ClientRun| (c.end_ns - c.start_ns) as f64 / 1e9;
    let bits = expect.0 as f64 * 8.0;
    let goodputs: Vec<f64> = clients.iter().map(|c| bits / seconds(c)).collect();
    let first = clients.iter().map(|c| c.start_ns).min().unwrap_or(0);
    let last = clients.iter().map(|c| c.end_ns).max().unwrap_or(0);
    let wall = (last - first) as f64 / 1e9;
    Ok(RunFigures {
        aggregate_goodput_bps: bits * clients.len() as f64 / wall,
        jain_fairness: jain(&goodputs).unwrap_or(0.0),
        sum_peak_rcvbuf_bytes: rcv,
        sum_peak_sndbuf_bytes: snd,
        sum_mean_rcvbuf_bytes: mean_while_busy(rcvbuf).unwrap_or(0.0),
        sum_mean_sndbuf_bytes: mean_while_busy(sndbuf).unwrap_or(0.0),
        samples: (rcvbuf.len(), sndbuf.len()),
    })
}
