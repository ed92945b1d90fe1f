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
//! lower).
//!
//! One case is not an end but damage: an intact frame lies past the end and carries an LSN
//! just above the last frame scanned, the store's checkpoint, or (when the first frame is the
//! damaged one) the other segment's newest frame. Frames are written one per
//! commit, in LSN order, each synced before the next is written, and a segment is rewound only
//! once every frame in it is at or below the checkpoint. So such a frame was written after the
//! one at the end had been acknowledged: the end is a damaged frame (a flipped bit in its
//! payload or in its length), and stopping there would lose acknowledged records. The scan
//! refuses such a log instead of cutting it short.

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

/// Reads the frames of a whole log file (see the module documentation); `checkpoint` is the
/// LSN of the last frame the store has folded, and `newest_elsewhere` the newest LSN the
/// other segment holds (0 if unknown), where this segment's frames go on when its first frame
/// is the damaged one. An empty or all-zero header is a log that was never written; any other
/// header that is not [`MAGIC`] is refused.
pub(crate) fn scan(
    log: &[u8],
    checkpoint: u64,
    newest_elsewhere: u64,
) -> Result<Scanned<'_>, DecodeError> {
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
    // The end: a frame that is not intact, or an intact one from before a rewind.
    while let Some((frame, next)) = frame_at(log, offset)
        && expected.is_none_or(|e| frame.lsn == e)
    {
        expected = Some(frame.lsn + 1);
        scanned.frames.push(frame);
        offset = next;
    }
    // The frames written after a damaged one carry the next LSNs: after the last frame read,
    // or, when no frame could be read, after the checkpoint or the other segment's newest.
    let mut after = vec![expected.map_or(0, |e| e - 1).max(checkpoint)];
    if expected.is_none() && newest_elsewhere > checkpoint {
        after.push(newest_elsewhere);
    }
    if acknowledged_past(log, offset, &after) {
        return Err(DecodeError::Corrupt(
            "a journal log frame is damaged but frames written after it are intact: the log is \
             damaged, not torn; restore the store from a backup",
        ));
    }
    scanned.end = offset;
    Ok(scanned)
}

/// How many frames in a row past the end a scan looks behind: damage longer than this is
/// taken for a torn end.
const DAMAGED_FRAMES: u64 = 16;

/// Whether an intact frame starts at `from` or after it whose LSN follows one of `after` by at
/// most [`DAMAGED_FRAMES`]. The window is what keeps the search cheap: an offset inside other
/// frames' bytes almost never holds such an LSN, so almost no checksum is computed.
fn acknowledged_past(log: &[u8], from: usize, after: &[u64]) -> bool {
    // Past the last byte that is not zero there is no frame (the preallocated tail).
    let Some(last_byte) = log.iter().rposition(|&b| b != 0) else {
        return false;
    };
    let Some(candidates) = log.get(from..=last_byte) else {
        return false;
    };
    let follows = |lsn: u64| {
        after
            .iter()
            .any(|&a| lsn > a && lsn <= a.saturating_add(DAMAGED_FRAMES))
    };
    (0..candidates.len())
        .filter(|&i| {
            candidates
                .get(i + 8..i + HEADER)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .is_some_and(&follows)
        })
        .any(|i| frame_at(log, from + i).is_some_and(|(frame, _)| follows(frame.lsn)))
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
        let scanned = scan(&whole, 0, 0).unwrap();
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
            let scanned = scan(&whole[..cut], 0, 0).unwrap();
            assert_eq!(scanned.frames.len(), 2, "cut at {cut}");
            assert_eq!(scanned.end, first_two);
        }
        let mut zeros = whole.clone();
        zeros.extend_from_slice(&[0; 64]);
        assert_eq!(scan(&zeros, 0, 0).unwrap().frames.len(), 3);
        // A rewound log: frames 8 and 9 over the old 1..3; old frame 3 follows and ends it.
        let mut rewound = whole.clone();
        let new = [frame(8, b"eight"), frame(9, b"nine")].concat();
        rewound[MAGIC.len()..MAGIC.len() + new.len()].copy_from_slice(&new);
        let lsns: Vec<u64> = scan(&rewound, 0, 0)
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
        let err = scan(&damaged, 0, 0).unwrap_err();
        assert!(err.to_string().contains("damaged, not torn"), "{err}");
        // The same flip in the last frame is indistinguishable from a torn write: the end.
        let mut last = log(&[frame(1, b"one"), frame(2, b"two")]);
        let n = last.len();
        last[n - 1] ^= 0x10;
        assert_eq!(scan(&last, 0, 0).unwrap().frames.len(), 1);
    }

    #[test]
    fn a_damaged_length_or_first_frame_is_refused_when_later_frames_are_intact() {
        let clean = log(&[frame(1, b"one"), frame(2, b"two"), frame(3, b"three")]);
        let second = MAGIC.len() + HEADER + 3;
        // The second frame's length field is hit: its end cannot be found from it, but frame 3
        // lies intact further on.
        for bit in [0x01, 0x10, 0x80] {
            let mut damaged = clean.clone();
            damaged[second] ^= bit;
            let err = scan(&damaged, 0, 0).unwrap_err();
            assert!(
                err.to_string().contains("damaged, not torn"),
                "bit {bit}: {err}"
            );
        }
        let mut damaged = clean.clone();
        damaged[second + 3] ^= 0x40; // the top byte: a length past the end of the file
        assert!(scan(&damaged, 0, 0).is_err());
        // The first frame is hit: nothing is scanned, and frames 2 and 3 lie past the end.
        let mut first = clean.clone();
        first[MAGIC.len() + 1] ^= 0x02;
        assert!(scan(&first, 0, 0).is_err());
        // ... unless the store has folded them already: then nothing acknowledged is lost.
        assert!(scan(&first, 3, 0).unwrap().frames.is_empty());
    }

    #[test]
    fn a_damaged_first_frame_is_found_from_the_other_segments_newest_frame() {
        // The segment's pass began after the other segment's frames 4..=50: its first frame
        // (51) is damaged, 52 and 53 are intact.
        let mut log = log(&[frame(51, b"a"), frame(52, b"b"), frame(53, b"c")]);
        log[MAGIC.len() + HEADER] ^= 0x01;
        assert!(
            scan(&log, 3, 0).unwrap().frames.is_empty(),
            "unknown: a torn end"
        );
        let err = scan(&log, 3, 50).unwrap_err();
        assert!(err.to_string().contains("damaged, not torn"), "{err}");
    }

    #[test]
    fn a_gap_where_the_next_frame_should_be_is_damage_and_old_frames_are_not() {
        // Frame 2 is gone but frame 3 sits where it should be.
        let gap = log(&[frame(1, b"one"), frame(3, b"three")]);
        assert!(scan(&gap, 0, 0).is_err());
        // A rewound segment whose new frames end inside an old one: old frames past the end
        // carry lower LSNs, so they are an end, not damage.
        let old = log(&[
            frame(1, b"a long first frame"),
            frame(2, b"two"),
            frame(3, b"3"),
        ]);
        let mut rewound = old.clone();
        let new = frame(4, b"four");
        rewound[MAGIC.len()..MAGIC.len() + new.len()].copy_from_slice(&new);
        let scanned = scan(&rewound, 3, 0).unwrap();
        assert_eq!(scanned.frames.len(), 1);
        assert_eq!(scanned.frames[0].lsn, 4);
    }

    #[test]
    fn a_never_written_log_is_empty_and_a_foreign_file_is_refused() {
        assert!(scan(&[], 0, 0).unwrap().frames.is_empty());
        assert!(scan(&[0; 4096], 0, 0).unwrap().frames.is_empty());
        assert!(scan(b"SQLite format 3\0", 0, 0).is_err());
    }
}
