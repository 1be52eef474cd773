//! The telemetry line of one tuner decision, as the driver writes it.

use serde::{Deserialize, Serialize};

use super::op::SocketOp;

/// One line per tuner decision, `"kind": "decision"`: what the tuner saw,
/// its state and reason, and each action as the kernel applied it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "decision")]
pub struct DecisionLine {
    /// Seconds since the data connection opened, to the microsecond.
    pub t_s: f64,
    /// The tuner, as `--tune` names it.
    pub tuner: String,
    /// What prompted it: `setup`, `sample`, `control_rtt`, `train`,
    /// `udp_probes` or `peer`.
    pub event: String,
    /// The tuner's state after the decision.
    pub state: String,
    /// Why, with the numbers behind it.
    pub reason: String,
    /// The size the tuner wants now, bytes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub requested_bytes: Option<u64>,
    /// What was done, in order.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub actions: Vec<AppliedAction>,
}

/// One action of a decision and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedAction {
    /// The request as the tuner made it: `"action"` (`set_rcvbuf`,
    /// `set_sndbuf`, `set_window_clamp`, `tell_peer`, `set_max_pacing_rate`
    /// or `tell_peer_pace`) and `"requested_bytes"`, the size asked for
    /// (for the two pacing actions, bytes per second).
    #[serde(flatten)]
    pub action: SocketOp,
    /// What the kernel reports afterwards (for the buffers about twice the
    /// request), bytes; absent for `tell_peer` and on error.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub applied_bytes: Option<u64>,
    /// The sysctl that capped it, when the kernel kept less than asked.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub clamped_by: Option<String>,
    /// What was set instead of a request below the connection's floor of
    /// a few segments (a window smaller than that stalls TCP), bytes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub raised_to_bytes: Option<u64>,
    /// Why it failed or was not done (a peer that cannot be told).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

impl AppliedAction {
    /// `action` as asked for, before anything came of it.
    pub fn requested(action: SocketOp) -> Self {
        AppliedAction {
            action,
            applied_bytes: None,
            clamped_by: None,
            raised_to_bytes: None,
            error: None,
        }
    }
}
