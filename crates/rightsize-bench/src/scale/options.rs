//! The flags of `rightsize-bench scale`, parsed without touching the
//! system (see [`crate::flags`]).

use std::path::PathBuf;

use anyhow::bail;
use rightsize_tune::TunerSpec;
use rightsize_tune::units::Bytes;

use super::USAGE;
use crate::flags::{self, parse_bytes, parse_reps, parse_size, parse_tuners, whole_number};

/// Clients at once.
pub const DEFAULT_CLIENTS: usize = 16;
/// Bytes each client receives.
pub const DEFAULT_SIZE: Bytes = Bytes(32 << 20);
/// rightsize's tuner and Linux's autotuning, which the goals compare.
pub const DEFAULT_TUNERS: &str = "auto,kernel";
/// Repetitions of each tuner (and of the budget run).
pub const DEFAULT_REPS: usize = 3;
/// The budget, in bandwidth-delay products of the path, unless `--budget`.
pub const BUDGET_BDPS: f64 = 4.0;

/// What `--smoke` runs: a few clients moving a little, once.
pub const SMOKE_CLIENTS: usize = 4;
/// Bytes each client receives in `--smoke`.
pub const SMOKE_SIZE: Bytes = Bytes(4 << 20);

/// The program each client runs on the left host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `rightsize get --tune T --json`: the client tunes too.
    Rightsize,
    /// `curl`: Linux autotunes the client.
    Curl,
    /// `globus-url-copy`: Linux autotunes the client.
    Globus,
}

impl Client {
    /// Every client, by the name `--client` takes.
    pub const ALL: [(Client, &'static str); 3] = [
        (Client::Rightsize, "rightsize"),
        (Client::Curl, "curl"),
        (Client::Globus, "globus-url-copy"),
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        Client::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("?", |(_, n)| n)
    }

    /// By name, the error quoting what was given.
    pub fn parse(value: &str) -> anyhow::Result<Client> {
        match Client::ALL.iter().find(|(_, n)| *n == value) {
            Some((c, _)) => Ok(*c),
            None => bail!(
                "invalid --client {value:?}: accepted: {}",
                Client::ALL.map(|(_, n)| n).join(", ")
            ),
        }
    }
}

/// The benchmark's settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Clients at once, at least 1.
    pub clients: usize,
    /// Bytes each client receives.
    pub size: Bytes,
    /// Tuners of the server (and of rightsize clients), each once.
    pub tuners: Vec<TunerSpec>,
    /// The server's buffer budget; `None`: [`BUDGET_BDPS`] x the BDP.
    pub budget: Option<Bytes>,
    /// The clients' program.
    pub client: Client,
    /// Repetitions.
    pub reps: usize,
    /// Where runs.jsonl and each run's files go; `None` for a fresh
    /// directory under target/.
    pub out: Option<PathBuf>,
    /// Print one JSON object on stdout (the lines people read go to
    /// stderr).
    pub json: bool,
    /// The smoke run: goals are not judged.
    pub smoke: bool,
}

/// Parses the arguments after `scale`. `--smoke` sets the smoke run's
/// clients, size and repetitions; flags given explicitly win, in whatever
/// order.
pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let given = flags::given_with_switches(
        args,
        &[
            "--clients",
            "--size",
            "--tuners",
            "--budget",
            "--client",
            "--reps",
            "--out",
        ],
        &["--json"],
        USAGE,
    )?;
    let smoke = given.smoke;
    let mut o = Options {
        clients: if smoke {
            SMOKE_CLIENTS
        } else {
            DEFAULT_CLIENTS
        },
        size: if smoke { SMOKE_SIZE } else { DEFAULT_SIZE },
        tuners: parse_tuners(DEFAULT_TUNERS)?,
        budget: None,
        client: Client::Rightsize,
        reps: if smoke { 1 } else { DEFAULT_REPS },
        out: None,
        json: given.switch("--json"),
        smoke,
    };
    for (flag, value) in given.values {
        match flag.as_str() {
            "--clients" => o.clients = usize::try_from(whole_number(&flag, &value, 1)?)?,
            "--size" => o.size = parse_size(&value)?,
            "--tuners" => o.tuners = parse_tuners(&value)?,
            "--budget" => o.budget = Some(parse_bytes(&flag, &value)?),
            "--client" => o.client = Client::parse(&value)?,
            "--reps" => o.reps = parse_reps(&value)?,
            _ => o.out = Some(PathBuf::from(value)),
        }
    }
    Ok(o)
}
