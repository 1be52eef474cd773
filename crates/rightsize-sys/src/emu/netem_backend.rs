//! The kernel-qdisc backend: `rs-NAME-l` and `rs-NAME-r` joined by a veth
//! pair, each end's egress shaped by [`rightsize_path::netem`]'s
//! commands. Chosen by `backend = "auto"` only where `sch_netem` exists;
//! this machine's kernel has none, so it is untested here beyond the
//! commands it generates (see rightsize-path's tests).

use std::path::Path;
use std::process::Child;

use rightsize_path::{PathSpec, Side, netem};

use super::{EmuError, HostRecord, Record};
use crate::netns::{self, LEFT_ADDR, RIGHT_ADDR};

/// Whether the running kernel has the netem qdisc (loaded, or loadable as
/// a module of this kernel).
pub fn available() -> bool {
    if Path::new("/sys/module/sch_netem").exists() {
        return true;
    }
    let release = crate::sysctl::kernel_release().unwrap_or_default();
    let dir = Path::new("/lib/modules")
        .join(release)
        .join("kernel/net/sched");
    [
        "sch_netem.ko",
        "sch_netem.ko.xz",
        "sch_netem.ko.zst",
        "sch_netem.ko.gz",
    ]
    .iter()
    .any(|f| dir.join(f).exists())
}

pub(super) fn up(
    spec: &PathSpec,
    name: &str,
    _dir: &Path,
) -> Result<(Record, Option<Child>), EmuError> {
    let plans = [
        netem::plan(spec, Side::Left).map_err(EmuError::Setting)?,
        netem::plan(spec, Side::Right).map_err(EmuError::Setting)?,
    ];
    if plans.iter().any(|p| !p.schedule.is_empty()) {
        return Err(EmuError::Setting(
            "schedules of steps need the rattan backend for now; set backend = \"rattan\""
                .to_owned(),
        ));
    }
    let left = format!("{name}-l");
    let right = format!("{name}-r");
    let record = Record {
        name: name.to_owned(),
        backend: "netem".to_owned(),
        emulator_pid: None,
        emulator_id: None,
        emulator_ns: None,
        emulator_ingress_buffer: None,
        namespaces: vec![left.clone(), right.clone()],
        left: HostRecord {
            namespace: left.clone(),
            addr: LEFT_ADDR,
        },
        right: HostRecord {
            namespace: right.clone(),
            addr: RIGHT_ADDR,
        },
        owner_pid: None,
        host_sysctls: Vec::new(),
        spec: serde_json::to_value(spec).unwrap_or_default(),
    };
    super::save(&record)?;
    let build = || -> Result<(), EmuError> {
        for ns in [&left, &right] {
            netns::Namespace::create(ns)?.keep();
        }
        netns::join(&left, &right)?;
        for (ns, addr, plan) in [
            (&left, LEFT_ADDR, &plans[0]),
            (&right, RIGHT_ADDR, &plans[1]),
        ] {
            for command in &plan.setup {
                let mut args: Vec<&str> = vec!["netns", "exec", ns, "tc"];
                args.extend(command.iter().map(String::as_str));
                netns::ip(&args)?;
            }
            netns::write_path_hosts(ns, addr, &[(LEFT_ADDR, "left"), (RIGHT_ADDR, "right")])?;
        }
        Ok(())
    };
    if let Err(e) = build() {
        let _ = super::teardown(&record);
        return Err(e);
    }
    Ok((record, None))
}
