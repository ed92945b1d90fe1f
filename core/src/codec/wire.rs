//! The building blocks of the format: varints, length-prefixed strings and JSON, run ids and
//! statuses, written by [`Writer`] and read back by [`Reader`].

use serde_json::Value;

use super::DecodeError;
use crate::id::RunId;
use crate::record::RunStatus;

/// Appends the building blocks of the format to a buffer (shared with the store's log frames).
pub(crate) struct Writer<'a>(pub(crate) &'a mut Vec<u8>);

impl Writer<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn varint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }
    pub(super) fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    pub(super) fn json(&mut self, v: &Value) {
        // Serialising a `Value` to a Vec cannot fail: maps have string keys.
        let bytes = serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec());
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(&bytes);
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
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| DecodeError::Corrupt("invalid utf-8"))
    }
    pub(super) fn json(&mut self) -> R<Value> {
        serde_json::from_slice(self.bytes()?).map_err(|_| DecodeError::Corrupt("invalid json"))
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
