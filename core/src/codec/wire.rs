//! The building blocks of the format: varints, length-prefixed strings and JSON, run ids and
//! statuses, written by [`Writer`] and read back by [`Reader`].

use serde_json::Value;

use super::DecodeError;
use crate::id::RunId;
use crate::record::RunStatus;

/// `v` as a varint: 7 bits a byte, least significant first, the high bit set on every byte but
/// the last; the bytes and how many of them there are.
fn varint_bytes(mut v: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            bytes[n] = byte;
            return (bytes, n + 1);
        }
        bytes[n] = byte | 0x80;
        n += 1;
    }
}

/// Appends the building blocks of the format to a buffer (shared with the store's log frames).
pub(crate) struct Writer<'a>(pub(crate) &'a mut Vec<u8>);

impl Writer<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn varint(&mut self, v: u64) {
        let (bytes, n) = varint_bytes(v);
        self.0.extend_from_slice(&bytes[..n]);
    }
    pub(super) fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    pub(super) fn json(&mut self, v: &Value) {
        // Serialised in place, after room for a one-byte length (most values are shorter than
        // 128 bytes); a longer length moves the JSON up by the bytes it needs. Serialising a
        // `Value` cannot fail: maps have string keys.
        let at = self.0.len();
        self.0.push(0);
        if serde_json::to_writer(&mut *self.0, v).is_err() {
            self.0.truncate(at + 1);
            self.0.extend_from_slice(b"null");
        }
        let (len, n) = varint_bytes((self.0.len() - at - 1) as u64);
        if n == 1 {
            self.0[at] = len[0];
        } else {
            self.0.splice(at..=at, len[..n].iter().copied());
        }
    }
    pub(super) fn opt_str(&mut self, s: &Option<String>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    pub(super) fn strs(&mut self, v: &[String]) {
        self.varint(v.len() as u64);
        for s in v {
            self.str(s);
        }
    }
    /// An input hash: 8 bytes, little-endian.
    pub(super) fn hash(&mut self, h: u64) {
        self.0.extend_from_slice(&h.to_le_bytes());
    }
    pub(crate) fn run_id(&mut self, id: RunId) {
        self.0.extend_from_slice(&id.to_bytes());
    }
}

/// Reads the building blocks of the format from a buffer (shared with the store's log frames).
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
}

pub(crate) type R<T> = Result<T, DecodeError>;

/// A JSON value nested deeper than serde_json's default limit, decoded on a stack that grows
/// as it needs.
fn deep_json(bytes: &[u8]) -> R<Value> {
    use serde::Deserialize as _;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = Value::deserialize(serde_stacker::Deserializer::new(&mut de))
        .map_err(|_| DecodeError::Corrupt("invalid json"))?;
    de.end().map_err(|_| DecodeError::Corrupt("invalid json"))?;
    Ok(value)
}

impl<'a> Reader<'a> {
    pub(crate) fn u8(&mut self) -> R<u8> {
        let (&b, rest) = self
            .buf
            .split_first()
            .ok_or(DecodeError::Corrupt("truncated"))?;
        self.buf = rest;
        Ok(b)
    }
    /// An input hash: 8 bytes, little-endian.
    pub(super) fn hash(&mut self) -> R<u64> {
        let Some((h, rest)) = self.buf.split_first_chunk::<8>() else {
            return Err(DecodeError::Corrupt("truncated hash"));
        };
        self.buf = rest;
        Ok(u64::from_le_bytes(*h))
    }
    pub(crate) fn varint(&mut self) -> R<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Corrupt("varint too long"))
    }
    pub(super) fn u32(&mut self) -> R<u32> {
        u32::try_from(self.varint()?).map_err(|_| DecodeError::Corrupt("step out of range"))
    }
    pub(crate) fn bytes(&mut self) -> R<&'a [u8]> {
        let len = usize::try_from(self.varint()?).map_err(|_| DecodeError::Corrupt("length"))?;
        if len > self.buf.len() {
            return Err(DecodeError::Corrupt("truncated"));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }
    pub(super) fn str(&mut self) -> R<String> {
        self.text().map(str::to_owned)
    }
    /// A string, borrowed from the record's bytes (a word of the vocabulary is made from it
    /// without a copy when it is a well-known one).
    pub(super) fn text(&mut self) -> R<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| DecodeError::Corrupt("invalid utf-8"))
    }
    pub(super) fn json(&mut self) -> R<Value> {
        let bytes = self.bytes()?;
        match serde_json::from_slice(bytes) {
            Ok(value) => Ok(value),
            // serde_json stops at 128 levels, which writing does not: a value that deep
            // (a webhook's payload nested 127 levels, one level more in the run's
            // parameters) was journaled, and must read back.
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => deep_json(bytes),
            Err(_) => Err(DecodeError::Corrupt("invalid json")),
        }
    }
    pub(super) fn opt_str(&mut self) -> R<Option<String>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.str()?)),
            _ => Err(DecodeError::Corrupt("option flag")),
        }
    }
    pub(super) fn strs(&mut self) -> R<Vec<String>> {
        let n = self.varint()?;
        (0..n).map(|_| self.str()).collect()
    }
    pub(super) fn bool(&mut self) -> R<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::Corrupt("bool")),
        }
    }
    pub(crate) fn run_id(&mut self) -> R<RunId> {
        if self.buf.len() < 16 {
            return Err(DecodeError::Corrupt("truncated run id"));
        }
        let (head, rest) = self.buf.split_at(16);
        self.buf = rest;
        let mut b = [0u8; 16];
        b.copy_from_slice(head);
        Ok(RunId::from_u128(u128::from_be_bytes(b)))
    }
    pub(super) fn status(&mut self) -> R<RunStatus> {
        RunStatus::from_code(self.u8()?).ok_or(DecodeError::Corrupt("status"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_its_length_as_a_varint_then_its_bytes_at_every_length() {
        // Lengths around each varint boundary: 1, 2 and 3 bytes of length.
        for len in [
            0usize, 1, 10, 125, 126, 127, 128, 129, 300, 16_381, 16_382, 16_383, 20_000,
        ] {
            let v = Value::String("x".repeat(len.saturating_sub(2)));
            let text = serde_json::to_vec(&v).unwrap();
            let mut expected = vec![7u8];
            Writer(&mut expected).varint(text.len() as u64);
            expected.extend_from_slice(&text);

            let mut out = vec![7u8];
            Writer(&mut out).json(&v);
            assert_eq!(out, expected, "a JSON text of {} bytes", text.len());
            let mut r = Reader { buf: &out[1..] };
            assert_eq!(r.json().unwrap(), v);
            assert!(r.buf.is_empty());
        }
    }
}
