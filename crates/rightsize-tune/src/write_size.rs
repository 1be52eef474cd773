//! The application's write size on a sending data connection
//! (`--write-size` of `rightsize serve` and `rightsize put`).
//!
//! The Windows tuning note (Appendix B, section 10.1; docs/sources.md)
//! measures throughput against the
//! sender's write size ("packet size", 1,024 to 16,384 bytes) and its send
//! buffer; to reproduce that, the sender writes with `write(2)` calls of at
//! most this many bytes. A [`WriteSize`] is always within
//! [`MIN_WRITE_SIZE_BYTES`]..=[`MAX_WRITE_SIZE_BYTES`], so a value of this
//! type needs no further check; parsing goes through [`Bytes`], so `16KiB`,
//! `1024` and `4KB` mean what they mean everywhere else in rightsize.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::units::{Bytes, UnitError};

/// The smallest write size, bytes.
pub const MIN_WRITE_SIZE_BYTES: u64 = 1;
/// The largest write size, bytes (16 MiB): far above the Windows note's 16,384, and
/// a buffer of it per sending connection is still cheap.
pub const MAX_WRITE_SIZE_BYTES: u64 = 16 << 20;

/// Forms a user may type, for error messages.
const EXAMPLES: &str = "1024, 4KB or 16KiB";

/// Bytes per `write(2)` on a sending data connection: 1 to 16 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct WriteSize(u32);

/// Why a write size was refused. Every message quotes the input and says
/// what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteSizeError {
    /// Not a size at all (`abc`, `10X`, `-1`).
    #[error(
        "{unit}; a write size is {MIN_WRITE_SIZE_BYTES} to {MAX_WRITE_SIZE_BYTES} bytes (16 MiB), such as {EXAMPLES}"
    )]
    NotASize {
        /// The size parser's complaint, which quotes the input.
        unit: UnitError,
    },
    /// A size, but 0 or above [`MAX_WRITE_SIZE_BYTES`].
    #[error(
        "write size \"{input}\" ({bytes} bytes) is out of range: give {MIN_WRITE_SIZE_BYTES} to {MAX_WRITE_SIZE_BYTES} bytes (16 MiB), such as {EXAMPLES}"
    )]
    OutOfRange {
        /// The input as typed.
        input: String,
        /// What it parsed to.
        bytes: u64,
    },
}

impl WriteSize {
    /// `bytes` as a write size, if it is in range.
    pub fn new(bytes: u64) -> Option<WriteSize> {
        if !(MIN_WRITE_SIZE_BYTES..=MAX_WRITE_SIZE_BYTES).contains(&bytes) {
            return None;
        }
        u32::try_from(bytes).ok().map(WriteSize)
    }

    /// Bytes per write, for slicing a buffer.
    pub fn bytes(self) -> usize {
        // At most 16 MiB by construction: fits any usize of 32 bits or more.
        self.0 as usize
    }

    /// Bytes per write, as a count.
    pub fn get(self) -> u64 {
        u64::from(self.0)
    }
}

impl FromStr for WriteSize {
    type Err = WriteSizeError;

    fn from_str(input: &str) -> Result<WriteSize, WriteSizeError> {
        let bytes: Bytes = input
            .parse()
            .map_err(|unit| WriteSizeError::NotASize { unit })?;
        WriteSize::new(bytes.get()).ok_or_else(|| WriteSizeError::OutOfRange {
            input: input.to_owned(),
            bytes: bytes.get(),
        })
    }
}

impl fmt::Display for WriteSize {
    /// The byte count, as telemetry headers record it: `16384`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_people_type() {
        for (input, bytes) in [
            ("1", 1),
            ("1024", 1024),
            ("4KB", 4000),
            ("16KiB", 16_384),
            ("16K", 16_384),
            ("1.5KiB", 1536),
            ("16MiB", MAX_WRITE_SIZE_BYTES),
        ] {
            let size: WriteSize = input.parse().unwrap();
            assert_eq!(size.get(), bytes, "{input}");
            assert_eq!(size.bytes() as u64, bytes, "{input}");
        }
    }

    #[test]
    fn the_range_is_one_byte_to_16_mib() {
        assert_eq!(WriteSize::new(0), None);
        assert_eq!(WriteSize::new(1).map(WriteSize::get), Some(1));
        assert_eq!(
            WriteSize::new(MAX_WRITE_SIZE_BYTES).map(WriteSize::get),
            Some(16 << 20)
        );
        assert_eq!(WriteSize::new(MAX_WRITE_SIZE_BYTES + 1), None);
        assert_eq!(WriteSize::new(u64::MAX), None);
    }

    #[test]
    fn refusals_quote_the_input_and_say_what_is_accepted() {
        for input in ["0", "0KiB", "16777217", "17MiB", "1TiB"] {
            let err = input.parse::<WriteSize>().unwrap_err();
            assert!(
                matches!(err, WriteSizeError::OutOfRange { .. }),
                "{input}: {err:?}"
            );
            let text = err.to_string();
            assert!(text.contains(&format!("\"{input}\"")), "{text}");
            assert!(text.contains("1 to 16777216 bytes"), "{text}");
        }
        for input in ["abc", "", "-1", "10X", "1e3"] {
            let err = input.parse::<WriteSize>().unwrap_err();
            assert!(
                matches!(err, WriteSizeError::NotASize { .. }),
                "{input}: {err:?}"
            );
            let text = err.to_string();
            if !input.is_empty() {
                assert!(text.contains(&format!("\"{input}\"")), "{text}");
            }
            assert!(text.contains("1 to 16777216 bytes"), "{text}");
            assert!(text.contains("16KiB"), "{text}");
        }
    }

    #[test]
    fn prints_as_a_byte_count_that_parses_back() {
        let size: WriteSize = "16KiB".parse().unwrap();
        assert_eq!(size.to_string(), "16384");
        assert_eq!(size.to_string().parse::<WriteSize>(), Ok(size));
        assert_eq!(serde_json::to_string(&size).unwrap(), "16384");
    }
}
