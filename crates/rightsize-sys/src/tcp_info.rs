//! Reading `TCP_INFO` from a socket into a [`TcpInfoSample`].
//!
//! [`tcp_info`] is our own copy of Linux 6.18's `struct tcp_info` (280 bytes;
//! the layout was checked against the running kernel's BTF, and
//! `/usr/include/linux/tcp.h` on the build machine is older). [`read`] asks the
//! kernel for the whole struct and [`decode`] keeps only the fields that the
//! returned length fully covers: an older kernel fills a shorter prefix, and
//! its missing fields come out `None`, never as zeros. Errors name the call
//! and the file descriptor.

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::{AsFd, AsRawFd, RawFd};

use rightsize_tune::tcpinfo::{TcpInfoSample, bytes_per_sec_to_bps};

/// Linux 6.18's `struct tcp_info` (`include/uapi/linux/tcp.h`), field for field.
///
/// The two bitfield bytes are kept as raw bytes and split by [`decode`]:
/// `tcpi_snd_wscale:4, tcpi_rcv_wscale:4` and
/// `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`.
/// The last four bytes are 6.18's `__u16 tcpi_accecn_fail_mode` and
/// `__u16 tcpi_accecn_opt_seen`; later kernels reuse the same four bytes as
/// bitfields (`tcpi_ecn_mode:2, tcpi_accecn_opt_seen:2,
/// tcpi_accecn_fail_mode:4, tcpi_options2:24`) without changing the struct's
/// length, so the length cannot tell the two encodings apart and [`decode`]
/// leaves them out.
#[allow(non_camel_case_types, missing_docs)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tcp_info {
    pub tcpi_state: u8,
    pub tcpi_ca_state: u8,
    pub tcpi_retransmits: u8,
    pub tcpi_probes: u8,
    pub tcpi_backoff: u8,
    pub tcpi_options: u8,
    /// `tcpi_snd_wscale:4, tcpi_rcv_wscale:4`.
    pub tcpi_wscale: u8,
    /// `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`.
    pub tcpi_app_limited_tfo_fail: u8,
    pub tcpi_rto: u32,
    pub tcpi_ato: u32,
    pub tcpi_snd_mss: u32,
    pub tcpi_rcv_mss: u32,
    pub tcpi_unacked: u32,
    pub tcpi_sacked: u32,
    pub tcpi_lost: u32,
    pub tcpi_retrans: u32,
    pub tcpi_fackets: u32,
    pub tcpi_last_data_sent: u32,
    pub tcpi_last_ack_sent: u32,
    pub tcpi_last_data_recv: u32,
    pub tcpi_last_ack_recv: u32,
    pub tcpi_pmtu: u32,
    pub tcpi_rcv_ssthresh: u32,
    pub tcpi_rtt: u32,
    pub tcpi_rttvar: u32,
    pub tcpi_snd_ssthresh: u32,
    pub tcpi_snd_cwnd: u32,
    pub tcpi_advmss: u32,
    pub tcpi_reordering: u32,
    pub tcpi_rcv_rtt: u32,
    pub tcpi_rcv_space: u32,
    pub tcpi_total_retrans: u32,
    pub tcpi_pacing_rate: u64,
    pub tcpi_max_pacing_rate: u64,
    pub tcpi_bytes_acked: u64,
    pub tcpi_bytes_received: u64,
    pub tcpi_segs_out: u32,
    pub tcpi_segs_in: u32,
    pub tcpi_notsent_bytes: u32,
    pub tcpi_min_rtt: u32,
    pub tcpi_data_segs_in: u32,
    pub tcpi_data_segs_out: u32,
    pub tcpi_delivery_rate: u64,
    pub tcpi_busy_time: u64,
    pub tcpi_rwnd_limited: u64,
    pub tcpi_sndbuf_limited: u64,
    pub tcpi_delivered: u32,
    pub tcpi_delivered_ce: u32,
    pub tcpi_bytes_sent: u64,
    pub tcpi_bytes_retrans: u64,
    pub tcpi_dsack_dups: u32,
    pub tcpi_reord_seen: u32,
    pub tcpi_rcv_ooopack: u32,
    pub tcpi_snd_wnd: u32,
    pub tcpi_rcv_wnd: u32,
    pub tcpi_rehash: u32,
    pub tcpi_total_rto: u16,
    pub tcpi_total_rto_recoveries: u16,
    pub tcpi_total_rto_time: u32,
    pub tcpi_received_ce: u32,
    pub tcpi_delivered_e1_bytes: u32,
    pub tcpi_delivered_e0_bytes: u32,
    pub tcpi_delivered_ce_bytes: u32,
    pub tcpi_received_e1_bytes: u32,
    pub tcpi_received_e0_bytes: u32,
    pub tcpi_received_ce_bytes: u32,
    /// 6.18: `__u16 tcpi_accecn_fail_mode; __u16 tcpi_accecn_opt_seen;` (see above).
    pub tcpi_accecn_word: u32,
}

/// Size of Linux 6.18's `struct tcp_info`, bytes.
pub const TCP_INFO_LEN_6_18: usize = 280;

/// The bytes every kernel since 2.6 fills (through `tcpi_total_retrans`);
/// a shorter answer is an error, not a sample.
pub const TCP_INFO_BASE_LEN: usize = offset_of!(tcp_info, tcpi_total_retrans) + 4;

// The offsets the kernel's BTF gives for 6.18 (pahole-style); a change to the
// struct above that moves a field fails the build.
const _: () = {
    assert!(size_of::<tcp_info>() == TCP_INFO_LEN_6_18);
    assert!(TCP_INFO_BASE_LEN == 104);
    assert!(offset_of!(tcp_info, tcpi_rto) == 8);
    assert!(offset_of!(tcp_info, tcpi_rtt) == 68);
    assert!(offset_of!(tcp_info, tcpi_pacing_rate) == 104);
    assert!(offset_of!(tcp_info, tcpi_min_rtt) == 148);
    assert!(offset_of!(tcp_info, tcpi_delivery_rate) == 160);
    assert!(offset_of!(tcp_info, tcpi_busy_time) == 168);
    assert!(offset_of!(tcp_info, tcpi_bytes_sent) == 200);
    assert!(offset_of!(tcp_info, tcpi_snd_wnd) == 228);
    assert!(offset_of!(tcp_info, tcpi_rcv_wnd) == 232);
    assert!(offset_of!(tcp_info, tcpi_total_rto) == 240);
    assert!(offset_of!(tcp_info, tcpi_total_rto_time) == 244);
    assert!(offset_of!(tcp_info, tcpi_received_ce) == 248);
    assert!(offset_of!(tcp_info, tcpi_received_ce_bytes) == 272);
};

/// `TCP_INFO` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TcpInfoError {
    /// The `getsockopt` call failed (not a TCP socket, bad descriptor, ...).
    #[error("getsockopt(TCP_INFO) on fd {fd}")]
    Getsockopt {
        /// The socket's file descriptor.
        fd: RawFd,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The kernel returned less than the 2.6 struct; nothing can be trusted.
    #[error(
        "getsockopt(TCP_INFO) on fd {fd} returned {len_bytes} bytes, fewer than the {need_bytes} every Linux since 2.6 fills"
    )]
    Short {
        /// The socket's file descriptor.
        fd: RawFd,
        /// The length the kernel returned.
        len_bytes: usize,
        /// [`TCP_INFO_BASE_LEN`].
        need_bytes: usize,
    },
}

/// Reads `TCP_INFO` from a TCP socket (any state; a listener reads mostly
/// zeros) and decodes the fields the running kernel filled.
pub fn read(fd: impl AsFd) -> Result<TcpInfoSample, TcpInfoError> {
    let raw_fd = fd.as_fd().as_raw_fd();
    let (raw, len_bytes) = read_raw(fd)?;
    decode(&raw, len_bytes).ok_or(TcpInfoError::Short {
        fd: raw_fd,
        len_bytes,
        need_bytes: TCP_INFO_BASE_LEN,
    })
}

/// Reads the raw struct and the length the kernel filled (at most
/// [`TCP_INFO_LEN_6_18`]; the rest of the struct stays zero).
pub fn read_raw(fd: impl AsFd) -> Result<(tcp_info, usize), TcpInfoError> {
    let raw_fd = fd.as_fd().as_raw_fd();
    let mut raw = tcp_info::default();
    let mut len = size_of::<tcp_info>() as libc::socklen_t;
    // SAFETY: `raw` is a plain-old-data struct of `len` bytes that lives for
    // the call; the kernel writes at most `len` bytes into it and stores the
    // length it wrote in `len`. Any bit pattern is a valid `tcp_info`.
    let rc = unsafe {
        libc::getsockopt(
            raw_fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut raw).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(TcpInfoError::Getsockopt {
            fd: raw_fd,
            source: io::Error::last_os_error(),
        });
    }
    Ok((raw, (len as usize).min(size_of::<tcp_info>())))
}

/// Decodes a raw `tcp_info` of which the kernel filled the first `len_bytes`.
///
/// A field is `Some` only if `len_bytes` covers all of its bytes. Returns
/// `None` if `len_bytes` is below [`TCP_INFO_BASE_LEN`]. Pure: no I/O, so a
/// truncated or recorded struct can be tested.
pub fn decode(raw: &tcp_info, len_bytes: usize) -> Option<TcpInfoSample> {
    if len_bytes < TCP_INFO_BASE_LEN {
        return None;
    }
    let len = len_bytes.min(size_of::<tcp_info>());
    // `Some(raw.$field)` if the kernel's answer covers the whole field.
    macro_rules! filled {
        ($field:ident) => {
            (offset_of!(tcp_info, $field) + size_of_val(&raw.$field) <= len).then_some(raw.$field)
        };
    }
    // The 4.9 flag and the 5.5 TFO code live in what was a padding byte, so
    // the length cannot date them; trust them when a 4.9 field is present.
    let has_4_9 = filled!(tcpi_delivery_rate).is_some();
    let (snd_wscale, rcv_wscale) = split_wscale(raw.tcpi_wscale);
    let (app_limited, tfo_fail) = split_app_limited(raw.tcpi_app_limited_tfo_fail);
    Some(TcpInfoSample {
        info_len_bytes: len,
        state: raw.tcpi_state,
        ca_state: raw.tcpi_ca_state,
        retransmits: raw.tcpi_retransmits,
        probes: raw.tcpi_probes,
        backoff: raw.tcpi_backoff,
        options: raw.tcpi_options,
        snd_wscale,
        rcv_wscale,
        delivery_rate_app_limited: has_4_9.then_some(app_limited),
        fastopen_client_fail: has_4_9.then_some(tfo_fail),
        rto_us: raw.tcpi_rto,
        ato_us: raw.tcpi_ato,
        snd_mss_bytes: raw.tcpi_snd_mss,
        rcv_mss_bytes: raw.tcpi_rcv_mss,
        unacked_segs: raw.tcpi_unacked,
        sacked_segs: raw.tcpi_sacked,
        lost_segs: raw.tcpi_lost,
        retrans_segs: raw.tcpi_retrans,
        fackets_segs: raw.tcpi_fackets,
        last_data_sent_ms: raw.tcpi_last_data_sent,
        last_data_recv_ms: raw.tcpi_last_data_recv,
        last_ack_recv_ms: raw.tcpi_last_ack_recv,
        pmtu_bytes: raw.tcpi_pmtu,
        rcv_ssthresh_bytes: raw.tcpi_rcv_ssthresh,
        rtt_us: raw.tcpi_rtt,
        rttvar_us: raw.tcpi_rttvar,
        snd_ssthresh_segs: raw.tcpi_snd_ssthresh,
        snd_cwnd_segs: raw.tcpi_snd_cwnd,
        advmss_bytes: raw.tcpi_advmss,
        reordering_segs: raw.tcpi_reordering,
        rcv_rtt_us: raw.tcpi_rcv_rtt,
        rcv_space_bytes: raw.tcpi_rcv_space,
        total_retrans_segs: raw.tcpi_total_retrans,
        pacing_rate_bps: filled!(tcpi_pacing_rate).map(bytes_per_sec_to_bps),
        max_pacing_rate_bps: filled!(tcpi_max_pacing_rate).map(bytes_per_sec_to_bps),
        bytes_acked: filled!(tcpi_bytes_acked),
        bytes_received: filled!(tcpi_bytes_received),
        segs_out: filled!(tcpi_segs_out),
        segs_in: filled!(tcpi_segs_in),
        notsent_bytes: filled!(tcpi_notsent_bytes),
        min_rtt_us: filled!(tcpi_min_rtt),
        data_segs_in: filled!(tcpi_data_segs_in),
        data_segs_out: filled!(tcpi_data_segs_out),
        delivery_rate_bps: filled!(tcpi_delivery_rate).map(bytes_per_sec_to_bps),
        busy_time_us: filled!(tcpi_busy_time),
        rwnd_limited_us: filled!(tcpi_rwnd_limited),
        sndbuf_limited_us: filled!(tcpi_sndbuf_limited),
        delivered_segs: filled!(tcpi_delivered),
        delivered_ce_segs: filled!(tcpi_delivered_ce),
        bytes_sent: filled!(tcpi_bytes_sent),
        bytes_retrans: filled!(tcpi_bytes_retrans),
        dsack_dups: filled!(tcpi_dsack_dups),
        reord_seen: filled!(tcpi_reord_seen),
        rcv_ooopack: filled!(tcpi_rcv_ooopack),
        snd_wnd_bytes: filled!(tcpi_snd_wnd),
        rcv_wnd_bytes: filled!(tcpi_rcv_wnd),
        rehash: filled!(tcpi_rehash),
        total_rto: filled!(tcpi_total_rto),
        total_rto_recoveries: filled!(tcpi_total_rto_recoveries),
        total_rto_time_ms: filled!(tcpi_total_rto_time),
        received_ce_segs: filled!(tcpi_received_ce),
        delivered_e1_bytes: filled!(tcpi_delivered_e1_bytes),
        delivered_e0_bytes: filled!(tcpi_delivered_e0_bytes),
        delivered_ce_bytes: filled!(tcpi_delivered_ce_bytes),
        received_e1_bytes: filled!(tcpi_received_e1_bytes),
        received_e0_bytes: filled!(tcpi_received_e0_bytes),
        received_ce_bytes: filled!(tcpi_received_ce_bytes),
    })
}

/// Splits `tcpi_snd_wscale:4, tcpi_rcv_wscale:4` into (snd, rcv). C compilers
/// fill bitfields from the low bit on little-endian targets and from the high
/// bit on big-endian ones.
fn split_wscale(byte: u8) -> (u8, u8) {
    if cfg!(target_endian = "little") {
        (byte & 0x0f, byte >> 4)
    } else {
        (byte >> 4, byte & 0x0f)
    }
}

/// Splits `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`.
fn split_app_limited(byte: u8) -> (bool, u8) {
    if cfg!(target_endian = "little") {
        (byte & 0x01 != 0, (byte >> 1) & 0x03)
    } else {
        (byte & 0x80 != 0, (byte >> 5) & 0x03)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A struct with a distinct value in every field, as a 6.18 kernel fills it.
    fn full() -> tcp_info {
        tcp_info {
            tcpi_state: 1,
            tcpi_options: 0x07,
            // snd 7 in the low nibble, rcv 10 in the high one (little-endian).
            tcpi_wscale: 0xa7,
            // app_limited 1, fastopen_client_fail 2.
            tcpi_app_limited_tfo_fail: 0b101,
            tcpi_rto: 204_000,
            tcpi_snd_mss: 32_741,
            tcpi_rtt: 400,
            tcpi_snd_cwnd: 10,
            tcpi_total_retrans: 3,
            tcpi_pacing_rate: 125_000_000,
            tcpi_max_pacing_rate: u64::MAX,
            tcpi_bytes_acked: 8_388_609,
            tcpi_delivery_rate: 1_000,
            tcpi_busy_time: 8_000,
            tcpi_rwnd_limited: 6_000,
            tcpi_sndbuf_limited: 0,
            tcpi_bytes_sent: 8_388_608,
            tcpi_snd_wnd: 65_536,
            tcpi_rcv_wnd: 131_072,
            tcpi_total_rto: 2,
            tcpi_total_rto_time: 300,
            tcpi_received_ce_bytes: 9,
            tcpi_accecn_word: 0xffff_ffff,
            ..tcp_info::default()
        }
    }

    #[test]
    fn tcpinfo_full_6_18_struct_decodes_every_field() {
        let s = decode(&full(), TCP_INFO_LEN_6_18).unwrap();
        assert_eq!(s.info_len_bytes, 280);
        assert_eq!((s.snd_wscale, s.rcv_wscale), (7, 10));
        assert_eq!(s.delivery_rate_app_limited, Some(true));
        assert_eq!(s.fastopen_client_fail, Some(2));
        assert_eq!(s.rto_us, 204_000);
        assert_eq!(s.rtt_us, 400);
        assert_eq!(s.pacing_rate_bps, Some(1_000_000_000));
        assert_eq!(s.max_pacing_rate_bps, Some(u64::MAX));
        assert_eq!(s.delivery_rate_bps, Some(8_000));
        assert_eq!(s.bytes_acked, Some(8_388_609));
        assert_eq!(s.rwnd_limited_share(), Some(0.75));
        assert_eq!(s.snd_wnd_bytes, Some(65_536));
        assert_eq!(s.rcv_wnd_bytes, Some(131_072));
        assert_eq!(s.total_rto, Some(2));
        assert_eq!(s.total_rto_time_ms, Some(300));
        assert_eq!(s.received_ce_bytes, Some(9));
    }

    #[test]
    fn tcpinfo_truncated_length_leaves_later_fields_none() {
        let raw = full();
        // A 5.4 kernel: the struct ends after tcpi_snd_wnd (232 bytes).
        let s = decode(&raw, offset_of!(tcp_info, tcpi_rcv_wnd)).unwrap();
        assert_eq!(s.snd_wnd_bytes, Some(65_536));
        assert_eq!(s.rcv_wnd_bytes, None);
        assert_eq!(s.total_rto, None);
        assert_eq!(s.received_ce_bytes, None);
        // One byte short of tcpi_busy_time: busy time and everything after are
        // missing, so the shares are unknown rather than 0.
        let s = decode(&raw, offset_of!(tcp_info, tcpi_busy_time) + 7).unwrap();
        assert_eq!(s.delivery_rate_bps, Some(8_000));
        assert_eq!(s.busy_time_us, None);
        assert_eq!(s.rwnd_limited_us, None);
        assert_eq!(s.rwnd_limited_share(), None);
        assert_eq!(s.bytes_sent, None);
        // A 4.6 kernel (ends after tcpi_data_segs_out): no 4.9 flag either.
        let s = decode(&raw, offset_of!(tcp_info, tcpi_delivery_rate)).unwrap();
        assert_eq!(s.delivery_rate_bps, None);
        assert_eq!(s.delivery_rate_app_limited, None);
        assert_eq!(s.fastopen_client_fail, None);
        // The 2.6 base: plain fields still there, every optional one None.
        let s = decode(&raw, TCP_INFO_BASE_LEN).unwrap();
        assert_eq!(s.total_retrans_segs, 3);
        assert_eq!((s.snd_wscale, s.rcv_wscale), (7, 10));
        assert_eq!(s.pacing_rate_bps, None);
        assert_eq!(s.bytes_acked, None);
        // The 6.7 pair of u16 is split by length too.
        let s = decode(&raw, offset_of!(tcp_info, tcpi_total_rto_recoveries)).unwrap();
        assert_eq!(s.total_rto, Some(2));
        assert_eq!(s.total_rto_recoveries, None);
    }

    #[test]
    fn tcpinfo_shorter_than_base_is_refused() {
        assert_eq!(decode(&full(), TCP_INFO_BASE_LEN - 1), None);
        assert_eq!(decode(&full(), 0), None);
    }

    #[test]
    fn tcpinfo_length_beyond_the_struct_is_capped() {
        let s = decode(&full(), 4096).unwrap();
        assert_eq!(s.info_len_bytes, TCP_INFO_LEN_6_18);
    }

    #[test]
    fn tcpinfo_read_on_a_non_socket_names_the_call_and_fd() {
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let err = read(&file).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("getsockopt(TCP_INFO) on fd "), "{text}");
        assert!(matches!(err, TcpInfoError::Getsockopt { .. }));
    }

    #[test]
    fn tcpinfo_read_on_a_connected_loopback_socket_fills_6_18() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let s = read(&client).unwrap();
        assert_eq!(s.state, rightsize_tune::tcpinfo::TCP_STATE_ESTABLISHED);
        // 6.18 or newer fills all 280 bytes we ask for.
        assert!(s.info_len_bytes >= offset_of!(tcp_info, tcpi_total_rto_time) + 4);
        assert!(s.rcv_wnd_bytes.is_some() && s.total_rto.is_some());
    }
}
