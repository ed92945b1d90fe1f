//! The value of one `journal_log` row, written by versions before the journal log (the store
//! still folds such rows on open): every record of one group commit, back to back.
//!
//! A frame is a sequence of entries, each `run id` (16 bytes, big-endian), `seq` (varint),
//! record length (varint) and the encoded record. `core/docs/journal-format.md` describes it.

use crate::codec::{DecodeError, Reader};

use super::EncodedRecord;

/// Appends the frame entry of `record` to `out` (as versions before the journal log did).
#[cfg(test)]
pub(crate) fn push(record: &EncodedRecord, out: &mut Vec<u8>) {
    let mut w = crate::codec::Writer(out);
    w.run_id(record.run_id);
    w.varint(record.seq);
    w.varint(record.bytes.len() as u64);
    w.0.extend_from_slice(&record.bytes);
}

/// Decodes a frame into its entries, in order.
pub(crate) fn decode(frame: &[u8]) -> Result<Vec<EncodedRecord>, DecodeError> {
    let mut r = Reader { buf: frame };
    let mut out = Vec::new();
    while !r.buf.is_empty() {
        let run_id = r.run_id()?;
        let seq = r.varint()?;
        let bytes = r.bytes()?.to_vec();
        out.push(EncodedRecord { run_id, seq, bytes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::RunId;

    #[test]
    fn a_frame_is_run_id_seq_length_and_bytes_per_record() {
        let a = RunId::from_u128(0x0194_1a2b_3c4d_7e5f_8a9b_0c1d_2e3f_4a5b);
        let records = [
            EncodedRecord {
                run_id: a,
                seq: 300,
                bytes: vec![1, 2, 3],
            },
            EncodedRecord {
                run_id: RunId::from_u128(1),
                seq: 0,
                bytes: vec![],
            },
        ];
        let mut frame = Vec::new();
        for r in &records {
            push(r, &mut frame);
        }
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "01941a2b3c4d7e5f8a9b0c1d2e3f4a5b\
             ac02\
             03\
             010203\
             00000000000000000000000000000001\
             00\
             00"
        );
        let back = decode(&frame).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[0].run_id, back[0].seq, &back[0].bytes[..]),
            (a, 300, &[1u8, 2, 3][..])
        );
        assert_eq!((back[1].seq, back[1].bytes.len()), (0, 0));
    }

    #[test]
    fn a_truncated_frame_is_corrupt() {
        let mut frame = Vec::new();
        push(
            &EncodedRecord {
                run_id: RunId::from_u128(7),
                seq: 1,
                bytes: vec![9; 10],
            },
            &mut frame,
        );
        frame.pop();
        assert!(matches!(decode(&frame), Err(DecodeError::Corrupt(_))));
    }
}
