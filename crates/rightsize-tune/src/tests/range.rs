//! `auto` over the corners of the range it is meant for, against the
//! kernel's autotuning in the same place, on the model: reno, cubic and
//! bbr senders; 10 and 200 Mbit/s; 5 and 300 ms; queues of 0.05 and 4 x
//! BDP; no loss and 0.1% random loss; with the receiver alone (the
//! sender plain, as vsftpd), the sender alone (the receiver plain, as
//! curl) and both ends tuning. 144 places, 20 s each. (The model steps
//! by a millisecond, so its shortest path is 5 ms, not 1.)

use super::harness::{Outcome, Scenario, mbps, run};
use super::model::{Cc, Path};
use crate::{Role, TunerSpec};

/// Which ends tune.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    ReceiverAlone,
    SenderAlone,
    Both,
}

fn scenario(spec: &str, ends: Ends, cc: Cc, path: Path) -> Scenario {
    let mut s = match ends {
        Ends::ReceiverAlone => Scenario::against_plain(spec, Role::Receiver, path),
        Ends::SenderAlone => Scenario::against_plain(spec, Role::Sender, path),
        Ends::Both => {
            let mut s = Scenario::benchmark(spec, 1.0);
            s.path = path;
            s
        }
    };
    s.cc = cc;
    s
}

/// One place: auto's goodput over the kernel's, and a line to show it.
fn place(ends: Ends, cc: Cc, p: Path) -> (f64, String) {
    let auto: Outcome = run(&scenario("auto", ends, cc, p));
    let mut kernel = scenario("auto", ends, cc, p);
    kernel.spec = TunerSpec::Kernel;
    let kernel = run(&kernel);
    let ratio = auto.goodput / kernel.goodput.max(1.0);
    let line = format!(
        "{ends:?}, {cc:?}, {:.0} Mbit/s x {:.0} ms, queue {:.0} B, loss {}: auto {:.2} Mbit/s, \
         kernel {:.2} ({ratio:.3} x)",
        p.rate_bps / 1e6,
        p.base_rtt * 1e3,
        p.queue_bytes,
        p.loss,
        mbps(auto.goodput),
        mbps(kernel.goodput),
    );
    (ratio, line)
}

/// `auto`'s goodput is at least this share of the kernel's at every place.
const BOUND: f64 = 0.9;

#[test]
fn over_the_range_auto_is_never_far_below_the_kernel() {
    let mut failures = Vec::new();
    for ends in [Ends::ReceiverAlone, Ends::SenderAlone, Ends::Both] {
        for cc in [Cc::Reno, Cc::Cubic, Cc::Bbr] {
            for rate in [10.0, 200.0] {
                for rtt in [5.0, 300.0] {
                    for queue in [0.05, 4.0] {
                        for loss in [0.0, 1e-3] {
                            let (ratio, line) = place(ends, cc, Path::of(rate, rtt, queue, loss));
                            if ratio < BOUND {
                                failures.push(format!("{line}, below {BOUND}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
