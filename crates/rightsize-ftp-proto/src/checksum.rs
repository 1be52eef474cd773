//! Streaming file checksums under their GridFTP `CKSM` names (the Globus
//! extension `CKSM <alg> <offset> <length> <path>` -> `213 <hex>`), so a
//! client can hash the bytes as they pass and compare with the server's.
//!
//! Guarantees: the output is what the Globus server 13.24 answers for the
//! same bytes: lowercase hex, `ADLER32` as exactly 8 digits (RFC 1950
//! section 8.2), `MD5` as 32 (RFC 1321), `SHA256` as 64 (FIPS 180-4).
//! Feeding the bytes in any split gives the same result. No I/O.

use std::fmt;

use md5::Digest as _;

/// A checksum algorithm, by its `CKSM` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Algorithm {
    /// `MD5`, RFC 1321 (128 bits).
    Md5,
    /// `SHA256`, FIPS 180-4 (256 bits).
    Sha256,
    /// `ADLER32`, RFC 1950 section 8.2 (32 bits; fast, weak).
    Adler32,
}

impl Algorithm {
    /// Every algorithm, strongest first: the order a client prefers them.
    pub const PREFERENCE: [Algorithm; 3] = [Algorithm::Sha256, Algorithm::Md5, Algorithm::Adler32];

    /// The `CKSM` name, upper case.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "MD5",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Adler32 => "ADLER32",
        }
    }

    /// The algorithm named `name`, compared case-insensitively (`sha256`,
    /// `SHA256`); `SHA-256` is not a `CKSM` name.
    pub fn from_name(name: &str) -> Result<Algorithm, UnknownAlgorithm> {
        Algorithm::PREFERENCE
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownAlgorithm {
                name: name.escape_debug().to_string(),
            })
    }

    /// The strongest of `offered` (e.g. the names a server lists), if any
    /// is known here: SHA256, else MD5, else ADLER32.
    pub fn strongest<'a>(offered: impl IntoIterator<Item = &'a str>) -> Option<Algorithm> {
        let known: Vec<Algorithm> = offered
            .into_iter()
            .filter_map(|name| Algorithm::from_name(name).ok())
            .collect();
        Algorithm::PREFERENCE
            .into_iter()
            .find(|a| known.contains(a))
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A checksum name that is not one of [`Algorithm::PREFERENCE`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown checksum algorithm \"{name}\"; accepted: SHA256, MD5, ADLER32")]
pub struct UnknownAlgorithm {
    /// The name given, quoted.
    pub name: String,
}

/// Adler-32 (RFC 1950 section 8.2): two sums modulo 65521.
#[derive(Debug, Clone, Copy)]
struct Adler32 {
    a: u32,
    b: u32,
}

/// The largest prime below 2^16 (RFC 1950).
const ADLER_MOD: u32 = 65_521;
/// Bytes that can be summed before `b` could overflow 32 bits (zlib's NMAX).
const ADLER_NMAX: usize = 5_552;

impl Adler32 {
    fn new() -> Adler32 {
        Adler32 { a: 1, b: 0 }
    }

    fn update(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(ADLER_NMAX) {
            for &byte in chunk {
                self.a += u32::from(byte);
                self.b += self.a;
            }
            self.a %= ADLER_MOD;
            self.b %= ADLER_MOD;
        }
    }

    fn value(self) -> u32 {
        (self.b << 16) | self.a
    }
}

#[derive(Clone)]
enum State {
    Md5(md5::Md5),
    Sha256(sha2::Sha256),
    Adler32(Adler32),
}

/// A checksum being computed; feed it with [`Checksum::update`].
#[derive(Clone)]
pub struct Checksum {
    state: State,
}

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Checksum({})", self.algorithm())
    }
}

impl Checksum {
    /// A fresh checksum of the algorithm called `name` (`MD5`, `SHA256`,
    /// `ADLER32`, any case).
    pub fn new(name: &str) -> Result<Checksum, UnknownAlgorithm> {
        Algorithm::from_name(name).map(Checksum::of)
    }

    /// A fresh checksum of `algorithm`.
    pub fn of(algorithm: Algorithm) -> Checksum {
        let state = match algorithm {
            Algorithm::Md5 => State::Md5(md5::Md5::new()),
            Algorithm::Sha256 => State::Sha256(sha2::Sha256::new()),
            Algorithm::Adler32 => State::Adler32(Adler32::new()),
        };
        Checksum { state }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self.state {
            State::Md5(_) => Algorithm::Md5,
            State::Sha256(_) => Algorithm::Sha256,
            State::Adler32(_) => Algorithm::Adler32,
        }
    }

    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.state {
            State::Md5(h) => h.update(bytes),
            State::Sha256(h) => h.update(bytes),
            State::Adler32(h) => h.update(bytes),
        }
    }

    /// The checksum of everything fed, as lowercase hex.
    pub fn finish(self) -> String {
        match self.state {
            State::Md5(h) => hex(&h.finalize()),
            State::Sha256(h) => hex(&h.finalize()),
            State::Adler32(h) => format!("{:08x}", h.value()),
        }
    }
}

/// Whether a checksum a server sent (any case, surrounding spaces) equals
/// one computed here.
pub fn matches(local: &str, remote: &str) -> bool {
    local.trim().eq_ignore_ascii_case(remote.trim())
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sum(name: &str, data: &[u8]) -> String {
        let mut c = Checksum::new(name).unwrap();
        c.update(data);
        c.finish()
    }

    #[test]
    fn known_vectors() {
        assert_eq!(sum("ADLER32", b"Wikipedia"), "11e60398");
        assert_eq!(sum("adler32", b""), "00000001");
        assert_eq!(sum("MD5", b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(sum("MD5", b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            sum("SHA256", b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn adler32_of_a_long_run_wraps_both_sums() {
        // zlib: adler32 of 1 MiB of 0xff bytes.
        let data = vec![0xffu8; 1 << 20];
        let mut reference = (1u64, 0u64);
        for &b in &data {
            reference.0 = (reference.0 + u64::from(b)) % 65_521;
            reference.1 = (reference.1 + reference.0) % 65_521;
        }
        let want = format!("{:08x}", (reference.1 << 16) | reference.0);
        assert_eq!(sum("ADLER32", &data), want);
    }

    #[test]
    fn names_and_preference() {
        assert_eq!(Algorithm::from_name("Sha256"), Ok(Algorithm::Sha256));
        let err = Checksum::new("SHA-1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown checksum algorithm \"SHA-1\"; accepted: SHA256, MD5, ADLER32"
        );
        assert_eq!(
            Algorithm::strongest(["ADLER32", "MD5", "SHA1"]),
            Some(Algorithm::Md5)
        );
        assert_eq!(
            Algorithm::strongest(["md5", "sha256", "adler32"]),
            Some(Algorithm::Sha256)
        );
        assert_eq!(Algorithm::strongest(["CRC32", "SHA512"]), None);
        assert!(matches(" 11E60398\r", "11e60398"));
        assert!(!matches("11e60398", "11e60399"));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn any_split_gives_the_same_sum(data in proptest::collection::vec(any::<u8>(), 0..12_000), cut in any::<prop::sample::Index>()) {
            let at = cut.index(data.len() + 1);
            for alg in Algorithm::PREFERENCE {
                let mut whole = Checksum::of(alg);
                whole.update(&data);
                let mut split = Checksum::of(alg);
                split.update(&data[..at]);
                split.update(&data[at..]);
                prop_assert_eq!(whole.finish(), split.finish());
            }
        }
    }
}
