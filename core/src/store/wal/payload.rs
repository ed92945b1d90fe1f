//! A log frame's payload: everything one group commit writes, as tagged entries back to back.
//!
//! | tag | entry |
//! |---|---|
//! | `1` record | run id (16 bytes, big-endian), `seq` (varint), length (varint), the encoded record |
//! | `2` run summary | run id (16), length (varint), the summary as JSON (as in the `runs` table) |
//! | `3` idempotency key | run id (16), length (varint), the key (UTF-8) |

use crate::codec::{DecodeError, Reader, Writer};
use crate::id::RunId;
use crate::store::{CommitBatch, EncodedRecord, RunSummary};

const RECORD: u8 = 1;
const SUMMARY: u8 = 2;
const KEY: u8 = 3;

/// Appends the entries of `batches` to `out`, records first.
pub(crate) fn encode(batches: &[&CommitBatch], out: &mut Vec<u8>) {
    let mut w = Writer(out);
    for r in batches.iter().flat_map(|b| &b.records) {
        w.u8(RECORD);
        w.run_id(r.run_id);
        w.varint(r.seq);
        w.varint(r.bytes.len() as u64);
        w.0.extend_from_slice(&r.bytes);
    }
    for s in batches.iter().flat_map(|b| &b.summaries) {
        // Serialising a summary cannot fail: it has no map with non-string keys.
        let json = serde_json::to_vec(s).unwrap_or_default();
        w.u8(SUMMARY);
        w.run_id(s.run_id);
        w.varint(json.len() as u64);
        w.0.extend_from_slice(&json);
    }
    for (key, run) in batches.iter().flat_map(|b| &b.idempotency_keys) {
        w.u8(KEY);
        w.run_id(*run);
        w.varint(key.len() as u64);
        w.0.extend_from_slice(key.as_bytes());
    }
}

/// One decoded entry.
#[derive(Debug)]
pub(crate) enum Entry {
    Record(EncodedRecord),
    Summary(Box<RunSummary>),
    Key(String, RunId),
}

/// Decodes a payload into its entries, in order.
pub(crate) fn decode(payload: &[u8]) -> Result<Vec<Entry>, DecodeError> {
    let mut r = Reader { buf: payload };
    let mut out = Vec::new();
    while !r.buf.is_empty() {
        let tag = r.u8()?;
        let run_id = r.run_id()?;
        match tag {
            RECORD => {
                let seq = r.varint()?;
                let bytes = r.bytes()?.to_vec();
                out.push(Entry::Record(EncodedRecord { run_id, seq, bytes }));
            }
            SUMMARY => {
                let summary: RunSummary = serde_json::from_slice(r.bytes()?)
                    .map_err(|_| DecodeError::Corrupt("a run summary in the journal log"))?;
                out.push(Entry::Summary(Box::new(summary)));
            }
            KEY => {
                let key = std::str::from_utf8(r.bytes()?)
                    .map_err(|_| DecodeError::Corrupt("an idempotency key in the journal log"))?;
                out.push(Entry::Key(key.to_owned(), run_id));
            }
            _ => return Err(DecodeError::Corrupt("an unknown journal log entry")),
        }
    }
    Ok(out)
}
