//! The journal log's byte format: a file header, then frames back to back.
//!
//! ```text
//! file:   magic "MAGWAL\0\x01" (8 bytes), then frames
//! frame:  len    u32 little-endian   payload length
//!         crc    u32 little-endian   CRC-32C of len, lsn and payload, in that order
//!         lsn    u64 little-endian   log sequence number: 1, 2, 3, ... with no gap
//!         payload (len bytes)
//! ```
//!
//! A scan reads frames from the header on while each is whole, passes its checksum and carries
//! the next LSN. The first frame that does not is the end of the log: a frame torn by a crash,
//! zeros of the preallocated tail, or a frame left from before the log was rewound (its LSN is
//! lower). One case is not an end but damage: a frame that fails its checksum although the frame
//! after it is intact and carries the next LSN, so records acknowledged after it would be lost.
//! The scan refuses such a log instead of cutting it short.

use crate::codec::DecodeError;

/// The first bytes of every log file; the last byte is the format version.
pub(crate) const MAGIC: [u8; 8] = *b"MAGWAL\x00\x01";
/// Bytes before a frame's payload.
pub(crate) const HEADER: usize = 16;

/// Appends the frame of `lsn` whose payload is `frame[HEADER..]`: fills in its header.
/// `frame` must start with `HEADER` bytes reserved for it.
pub(crate) fn seal(frame: &mut [u8], lsn: u64) {
    let len = u32::try_from(frame.len() - HEADER).expect("a log frame under 4 GiB");
    frame[0..4].copy_from_slice(&len.to_le_bytes());
    frame[8..16].copy_from_slice(&lsn.to_le_bytes());
    let crc = checksum(&frame[0..4], &frame[8..16], &frame[HEADER..]);
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
}

fn checksum(len: &[u8], lsn: &[u8], payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c(len);
    let crc = crc32c::crc32c_append(crc, lsn);
    crc32c::crc32c_append(crc, payload)
}

/// One intact frame found by [`scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    /// Its log sequence number.
    pub(crate) lsn: u64,
    /// Its payload.
    pub(crate) payload: &'a [u8],
}

/// What a frame header at some offset says, if the bytes there hold a whole, intact frame.
fn frame_at(log: &[u8], offset: usize) -> Option<(Frame<'_>, usize)> {
    let header = log.get(offset..offset.checked_add(HEADER)?)?;
    let len = u32::from_le_bytes(header[0..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let lsn = u64::from_le_bytes(header[8..16].try_into().ok()?);
    let start = offset + HEADER;
    let payload = log.get(start..start.checked_add(len)?)?;
    (lsn != 0 && checksum(&header[0..4], &header[8..16], payload) == crc)
        .then_some((Frame { lsn, payload }, start + len))
}

/// The frames of a log file's bytes, in order, and the offset just past the last one.
#[derive(Debug)]
pub(crate) struct Scanned<'a> {
    /// Intact frames with consecutive LSNs, from the header on.
    pub(crate) frames: Vec<Frame<'a>>,
    /// Where the next frame would go.
    pub(crate) end: usize,
}

/// Reads the frames of a whole log file (see the module documentation). An empty or all-zero
/// header is a log that was never written; any other header that is not [`MAGIC`] is refused.
pub(crate) fn scan(log: &[u8]) -> Result<Scanned<'_>, DecodeError> {
    let mut scanned = Scanned {
        frames: Vec::new(),
        end: MAGIC.len(),
    };
    match log.get(..MAGIC.len()) {
        Some(magic) if magic == MAGIC => {}
        Some(magic) if magic.iter().any(|&b| b != 0) => {
            return Err(DecodeError::Corrupt(
                "the journal log does not start with the log's magic bytes",
            ));
        }
        _ => return Ok(scanned),
    }
    let mut offset = MAGIC.len();
    let mut expected: Option<u64> = None;
    loop {
        match frame_at(log, offset) {
            Some((frame, next)) if expected.is_none_or(|e| frame.lsn == e) => {
                expected = Some(frame.lsn + 1);
                scanned.frames.push(frame);
                offset = next;
            }
            Some(_) => break, // an intact frame from before a rewind: the end
            None => {
                if let Some(e) = expected
                    && damaged_before(log, offset, e)
                {
                    return Err(DecodeError::Corrupt(
                        "a journal log frame fails its checksum but frames after it are intact: \
                         the log is damaged, not torn; restore the store from a backup",
                    ));
                }
                break;
            }
        }
    }
    scanned.end = offset;
    Ok(scanned)
}

/// Whether the frame at `offset`, which should carry `lsn` but is not intact, is followed by an
/// intact frame carrying `lsn + 1` (so it is damage, not a torn end).
fn damaged_before(log: &[u8], offset: usize, lsn: u64) -> bool {
    let Some(header) = log.get(offset..offset + HEADER) else {
        return false;
    };
    let len = u32::from_le_bytes(header[0..4].try_into().unwrap_or_default()) as usize;
    let Some(next) = (offset + HEADER).checked_add(len) else {
        return false;
    };
    frame_at(log, next).is_some_and(|(frame, _)| frame.lsn == lsn + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(lsn: u64, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0; HEADER];
        f.extend_from_slice(payload);
        seal(&mut f, lsn);
        f
    }

    fn log(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut log = MAGIC.to_vec();
        for f in frames {
            log.extend_from_slice(f);
        }
        log
    }

    #[test]
    fn a_frame_is_length_checksum_lsn_and_payload_little_endian() {
        let f = frame(7, b"abc");
        let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
        // len 3 | crc32c(03000000 0700000000000000 616263) | lsn 7 | "abc"
        let crc = crc32c::crc32c(&[3, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', b'c']);
        assert_eq!(
            hex,
            format!(
                "03000000{}0700000000000000616263",
                crc.to_le_bytes()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            )
        );
        let whole = log(&[f]);
        let scanned = scan(&whole).unwrap();
        assert_eq!(
            scanned.frames,
            [Frame {
                lsn: 7,
                payload: b"abc"
            }]
        );
        assert_eq!(scanned.end, MAGIC.len() + HEADER + 3);
    }

    #[test]
    fn the_log_ends_at_a_torn_frame_at_zeros_or_at_a_frame_from_before_a_rewind() {
        let whole = log(&[frame(1, b"one"), frame(2, b"two"), frame(3, b"three")]);
        let first_two = MAGIC.len() + 2 * HEADER + 6;
        for cut in first_two..whole.len() {
            let scanned = scan(&whole[..cut]).unwrap();
            assert_eq!(scanned.frames.len(), 2, "cut at {cut}");
            assert_eq!(scanned.end, first_two);
        }
        let mut zeros = whole.clone();
        zeros.extend_from_slice(&[0; 64]);
        assert_eq!(scan(&zeros).unwrap().frames.len(), 3);
        // A rewound log: frames 8 and 9 over the old 1..3; old frame 3 follows and ends it.
        let mut rewound = whole.clone();
        let new = [frame(8, b"eight"), frame(9, b"nine")].concat();
        rewound[MAGIC.len()..MAGIC.len() + new.len()].copy_from_slice(&new);
        let lsns: Vec<u64> = scan(&rewound)
            .unwrap()
            .frames
            .iter()
            .map(|f| f.lsn)
            .collect();
        assert_eq!(lsns, [8, 9]);
    }

    #[test]
    fn a_damaged_frame_followed_by_intact_ones_is_refused() {
        let mut damaged = log(&[frame(1, b"one"), frame(2, b"two"), frame(3, b"three")]);
        let in_frame_two = MAGIC.len() + HEADER + 3 + HEADER + 1;
        damaged[in_frame_two] ^= 0x10;
        let err = scan(&damaged).unwrap_err();
        assert!(err.to_string().contains("damaged, not torn"), "{err}");
        // The same flip in the last frame is indistinguishable from a torn write: the end.
        let mut last = log(&[frame(1, b"one"), frame(2, b"two")]);
        let n = last.len();
        last[n - 1] ^= 0x10;
        assert_eq!(scan(&last).unwrap().frames.len(), 1);
    }

    #[test]
    fn a_never_written_log_is_empty_and_a_foreign_file_is_refused() {
        assert!(scan(&[]).unwrap().frames.is_empty());
        assert!(scan(&[0; 4096]).unwrap().frames.is_empty());
        assert!(scan(b"SQLite format 3\0").is_err());
    }
}
