//! The value of one `journal_chunks` row: the records one fold moved of one run, back to back,
//! each `seq` (varint), byte length (varint) and the encoded record. The row's key is the run
//! and the first record's seq, so a run's chunks sort in seq order.

use crate::codec::{DecodeError, Reader, Writer};

/// Appends the chunk of `records` (`(seq, bytes)` in seq order) to `out`.
pub(super) fn encode<'a>(records: impl IntoIterator<Item = (u64, &'a [u8])>, out: &mut Vec<u8>) {
    let mut w = Writer(out);
    for (seq, bytes) in records {
        w.varint(seq);
        w.varint(bytes.len() as u64);
        w.0.extend_from_slice(bytes);
    }
}

/// The records of a chunk, in order, as `(seq, bytes)`.
pub(super) fn decode(chunk: &[u8]) -> impl Iterator<Item = Result<(u64, &[u8]), DecodeError>> {
    let mut r = Reader { buf: chunk };
    std::iter::from_fn(move || {
        if r.buf.is_empty() {
            return None;
        }
        Some(r.varint().and_then(|seq| Ok((seq, r.bytes()?))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_seq_length_and_bytes_per_record() {
        let mut chunk = Vec::new();
        encode([(300, &[1u8, 2, 3][..]), (301, &[][..])], &mut chunk);
        assert_eq!(chunk, [0xac, 0x02, 3, 1, 2, 3, 0xad, 0x02, 0]);
        let back: Vec<(u64, &[u8])> = decode(&chunk).map(Result::unwrap).collect();
        assert_eq!(back, [(300, &[1u8, 2, 3][..]), (301, &[][..])]);
        chunk.pop();
        assert!(
            decode(&chunk).last().unwrap().is_err(),
            "a truncated chunk is corrupt"
        );
    }
}
