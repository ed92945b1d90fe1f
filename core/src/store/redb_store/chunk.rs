//! The value of one `journal_chunks` row: the records one fold moved of one run, back to back,
//! each `seq` (varint), byte length (varint) and the encoded record. The row's key is the run
//! and the first record's seq, so a run's chunks sort in seq order.

use crate::codec::{DecodeError, Reader, Writer};

/// A chunk closes once its records reach this many bytes (a single larger record is a chunk
/// of its own): reading a page of a long run then loads a few small values, not the run.
pub(super) const MAX_BYTES: usize = 64 << 10;

/// `records` (`(seq, bytes)` in seq order) cut into runs of at most [`MAX_BYTES`] of record
/// bytes each (at least one record each).
pub(super) fn split<T: AsRef<[u8]>>(records: &[(u64, T)]) -> impl Iterator<Item = &[(u64, T)]> {
    let mut rest = records;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0;
        let mut n = 0;
        while n < rest.len() && (n == 0 || bytes + rest[n].1.as_ref().len() <= MAX_BYTES) {
            bytes += rest[n].1.as_ref().len();
            n += 1;
        }
        let (part, tail) = rest.split_at(n);
        rest = tail;
        Some(part)
    })
}

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
    fn a_long_run_is_cut_into_chunks_of_at_most_the_bound() {
        let records: Vec<(u64, Vec<u8>)> = (0..100).map(|s| (s, vec![0u8; 10_000])).collect();
        let parts: Vec<_> = split(&records).map(<[_]>::len).collect();
        assert!(
            parts[..16].iter().all(|&n| n == 6),
            "6 records of 10,000 bytes in 64 KiB"
        );
        assert_eq!(parts.iter().sum::<usize>(), 100);
        let big = [(0u64, vec![0u8; MAX_BYTES * 2]), (1, vec![1])];
        let parts: Vec<_> = split(&big).map(<[_]>::len).collect();
        assert_eq!(parts, [1, 1], "a larger record is a chunk of its own");
        assert_eq!(split::<Vec<u8>>(&[]).count(), 0);
    }

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
