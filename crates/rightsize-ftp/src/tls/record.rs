//! TLS 1.3 record protection (RFC 8446 section 5.2) with a key rustls
//! handed over after the handshake (`dangerous_extract_secrets`, the step
//! kernel TLS takes): each record is sealed or opened where it lies. A
//! record is a header (type 23, version 3.3, length), then the AEAD
//! ciphertext of the plaintext followed by its real content type (and
//! padding zeros on the way in), then the tag; the nonce is the key's IV
//! XOR the record's sequence number, the header the additional data.

use std::io;

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::ConnectionTrafficSecrets;

/// Plaintext bytes in a full record.
pub(super) const PLAIN_BYTES: usize = 16 * 1024;
/// A record's header: type, legacy version, length.
pub(super) const HEADER_BYTES: usize = 5;
/// The AEAD tag after each record's ciphertext.
pub(super) const TAG_BYTES: usize = 16;
/// The longest record body a peer may send (RFC 8446 section 5.2).
pub(super) const MAX_BODY_BYTES: usize = PLAIN_BYTES + 256;
/// Records one key seals or opens here at most: the smallest of rustls's
/// confidentiality limits for the TLS 1.3 suites (2^23 records, 128 GiB
/// of full records). A longer transfer is left to rustls, which updates
/// its keys.
pub(super) const RECORD_LIMIT: u64 = 1 << 23;
/// TLS content types.
pub(super) const APPLICATION_DATA: u8 = 23;
pub(super) const ALERT: u8 = 21;
pub(super) const HANDSHAKE: u8 = 22;
/// `close_notify`: a warning-level alert, description 0.
pub(super) const CLOSE_NOTIFY: [u8; 2] = [1, 0];
/// The handshake message a server may still send: a session ticket.
pub(super) const NEW_SESSION_TICKET: u8 = 4;

/// Whether a transfer of `length` bytes (as far as is known) stays well
/// within one key's record limit: rustls's handshake records took a few,
/// and a `close_notify` follows.
pub(super) fn fits_one_key(length: Option<u64>) -> bool {
    length.is_some_and(|bytes| bytes.div_ceil(PLAIN_BYTES as u64) + 1 < RECORD_LIMIT / 2)
}

/// One direction's key after the handover.
pub(super) struct RecordKey {
    key: LessSafeKey,
    iv: [u8; aead::NONCE_LEN],
    /// The next record's sequence number.
    seq: u64,
}

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("RecordKey")
            .field("algorithm", self.key.algorithm())
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl RecordKey {
    /// The key rustls handed over, and the sequence number of the next
    /// record it protects; `None` for an AEAD this does not know.
    pub(super) fn new(seq: u64, secrets: ConnectionTrafficSecrets) -> Option<RecordKey> {
        let (algorithm, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv)
            }
            _ => return None,
        };
        Some(RecordKey {
            key: LessSafeKey::new(UnboundKey::new(algorithm, key.as_ref()).ok()?),
            iv: iv.as_ref().try_into().ok()?,
            seq,
        })
    }

    /// The next record's nonce; refused once the key reached its limit.
    fn next_nonce(&mut self) -> io::Result<Nonce> {
        if self.seq >= RECORD_LIMIT {
            return Err(io::Error::other(
                "TLS: this connection's key has protected all the records it may",
            ));
        }
        let mut nonce = self.iv;
        for (byte, seq) in nonce[aead::NONCE_LEN - 8..]
            .iter_mut()
            .zip(self.seq.to_be_bytes())
        {
            *byte ^= seq;
        }
        self.seq += 1;
        Ok(Nonce::assume_unique_for_key(nonce))
    }

    /// Seals the record whose place starts `slot`: its plaintext is the
    /// `len` bytes after the header's place. Writes the header, the
    /// content type and the tag around it; returns the record's length.
    pub(super) fn seal(
        &mut self,
        slot: &mut [u8],
        len: usize,
        content_type: u8,
    ) -> io::Result<usize> {
        let body = len + 1 + TAG_BYTES;
        let header = [
            APPLICATION_DATA,
            3,
            3,
            (body >> 8) as u8,
            (body & 0xff) as u8,
        ];
        slot[..HEADER_BYTES].copy_from_slice(&header);
        let inner_end = HEADER_BYTES + len + 1;
        slot[inner_end - 1] = content_type;
        let nonce = self.next_nonce()?;
        let tag = self
            .key
            .seal_in_place_separate_tag(
                nonce,
                Aad::from(header),
                &mut slot[HEADER_BYTES..inner_end],
            )
            .map_err(|_| io::Error::other("TLS: sealing a record failed"))?;
        slot[inner_end..inner_end + TAG_BYTES].copy_from_slice(tag.as_ref());
        Ok(HEADER_BYTES + body)
    }

    /// Opens a whole record in place (`record` from its header to its
    /// tag); returns its content type and how many plaintext bytes follow
    /// the header. A record that is not a TLS 1.3 one, or that fails its
    /// integrity check, is an error.
    pub(super) fn open(&mut self, record: &mut [u8]) -> io::Result<(u8, usize)> {
        let invalid =
            |what: String| io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {what}"));
        let header: [u8; HEADER_BYTES] = record[..HEADER_BYTES]
            .try_into()
            .map_err(|_| invalid("a record shorter than its header".to_owned()))?;
        if header[..3] != [APPLICATION_DATA, 3, 3] {
            return Err(invalid(format!(
                "a record of type {} version {}.{} where TLS 1.3 sends only type 23, 3.3",
                header[0], header[1], header[2]
            )));
        }
        let nonce = self.next_nonce()?;
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(header), &mut record[HEADER_BYTES..])
            .map_err(|_| {
                invalid("a record failed its integrity check (bad_record_mac)".to_owned())
            })?;
        // The content type is the last byte that is not padding.
        let at = plain
            .iter()
            .rposition(|&b| b != 0)
            .ok_or_else(|| invalid("a record with no content type".to_owned()))?;
        Ok((plain[at], at))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(seq: u64) -> RecordKey {
        let secrets = ConnectionTrafficSecrets::Aes256Gcm {
            key: rustls::crypto::cipher::AeadKey::from([7u8; 32]),
            iv: rustls::crypto::cipher::Iv::new([1u8; 12]),
        };
        RecordKey::new(seq, secrets).unwrap()
    }

    #[test]
    fn a_sealed_record_opens_with_the_same_key_and_sequence_and_not_otherwise() {
        let mut slot = vec![0u8; HEADER_BYTES + 100 + 1 + TAG_BYTES];
        slot[HEADER_BYTES..HEADER_BYTES + 100].fill(9);
        let len = key(5).seal(&mut slot, 100, APPLICATION_DATA).unwrap();
        assert_eq!(len, slot.len());
        let (kind, plain) = key(5).open(&mut slot.clone()).unwrap();
        assert_eq!((kind, plain), (APPLICATION_DATA, 100));
        let mut copy = slot.clone();
        key(5).open(&mut copy).unwrap();
        assert!(
            copy[HEADER_BYTES..HEADER_BYTES + 100]
                .iter()
                .all(|&b| b == 9)
        );
        // Another sequence number, a flipped bit, another header: refused.
        assert!(key(6).open(&mut slot.clone()).is_err());
        let mut flipped = slot.clone();
        flipped[HEADER_BYTES + 3] ^= 1;
        assert!(
            key(5)
                .open(&mut flipped)
                .unwrap_err()
                .to_string()
                .contains("bad_record_mac")
        );
        let mut typed = slot.clone();
        typed[0] = HANDSHAKE;
        assert!(
            key(5)
                .open(&mut typed)
                .unwrap_err()
                .to_string()
                .contains("type 22")
        );
    }

    #[test]
    fn the_key_refuses_to_protect_past_its_record_limit() {
        let mut key = key(RECORD_LIMIT - 1);
        let mut slot = vec![0u8; HEADER_BYTES + 10 + 1 + TAG_BYTES];
        assert!(key.seal(&mut slot, 10, APPLICATION_DATA).is_ok());
        let refused = key.seal(&mut slot, 10, APPLICATION_DATA).unwrap_err();
        assert!(refused.to_string().contains("all the records it may"));
    }
}
