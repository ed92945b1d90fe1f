//! The journal log: append-only files whose one `fdatasync` makes a group commit durable.
//!
//! Each commit is one frame ([`frame`]): its payload ([`payload`]) carries every record, run
//! summary and idempotency key of the commit, so the frame alone is the commit. The writer
//! keeps the file *preallocated* — written with zeros ahead of the frames — so that a commit
//! overwrites blocks the file already owns and its `fdatasync` flushes data, not the file's
//! size and extents as well.
//!
//! The redb file holds the folded, indexed journal and the LSN of the last frame it holds (the
//! *checkpoint*). The log is two segment files ([`Log`]): frames go to one while the other's
//! are folded, off the commit path. Once a fold has made a segment's frames durable in redb,
//! the segment is rewound at the next switch: new frames are written at its start again, over
//! frames that are all at or below the checkpoint, which a scan tells apart by their LSNs. On
//! open, the frames past the checkpoint, from both segments, are what the last process
//! acknowledged and did not fold.
//!
//! **Fail-stop.** A failed `fdatasync` is never retried: after it, the kernel may have dropped
//! the dirty pages and a second call could report success for data that is not on disk. The
//! commit fails, the writer takes no more frames, and the store recovers from what the log
//! holds on disk by opening it again.

pub(crate) mod file;
pub(crate) mod frame;
pub(crate) mod payload;

use std::io;

use file::LogFile;
use frame::{HEADER, MAGIC};

/// How much the file is preallocated when it is created.
const FIRST_ALLOCATION: u64 = 1 << 20;
/// The most the file grows by at once.
const MAX_GROWTH: u64 = 64 << 20;
/// Zeros written per call while preallocating.
const ZEROS: usize = 256 << 10;

/// One segment file's writer: where its next frame goes, and whether a failed sync stopped it.
#[derive(Debug)]
pub(crate) struct Wal {
    file: Box<dyn LogFile>,
    /// Offset of the next frame.
    pos: u64,
    /// The file's length: every byte from `pos` up to it is zero or an old frame.
    allocated: u64,
    /// Whether commits are synced (`Durability::Immediate`).
    sync: bool,
    /// A failed `fdatasync` stopped the writer (see the module documentation).
    stopped: bool,
    buf: Vec<u8>,
}

impl Wal {
    /// A writer over `file` whose next frame goes to the start of the file. Every frame the
    /// file holds must be at or below a durable checkpoint: the writer overwrites them. A file
    /// without the header gets it, and is preallocated.
    pub(crate) fn rewound(file: Box<dyn LogFile>, sync: bool) -> io::Result<Self> {
        let mut wal = Self {
            allocated: file.len()?,
            file,
            pos: MAGIC.len() as u64,
            sync,
            stopped: false,
            buf: Vec::new(),
        };
        let mut magic = [0u8; 8];
        let has_magic =
            wal.allocated >= 8 && wal.file.read_exact_at(&mut magic, 0).is_ok() && magic == MAGIC;
        if !has_magic || wal.allocated < FIRST_ALLOCATION {
            wal.file.write_all_at(&MAGIC, 0)?;
            wal.grow_to(FIRST_ALLOCATION.max(wal.allocated))?;
            // The header and the length are durable before any frame relies on them.
            wal.file.sync_data()?;
        }
        Ok(wal)
    }

    /// Reads the whole file, for a scan on open.
    pub(crate) fn read_all(file: &dyn LogFile) -> io::Result<Vec<u8>> {
        let len = usize::try_from(file.len()?).map_err(io::Error::other)?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// Starts writing at the start of the file again; every frame in it must be at or below
    /// a durable checkpoint.
    pub(crate) fn rewind(&mut self) {
        self.pos = MAGIC.len() as u64;
    }

    /// Writes the frame `lsn` whose payload `fill` appends to the buffer it is given, and syncs
    /// it. A failed write leaves the position unchanged; a failed sync stops the writer for
    /// good.
    pub(crate) fn append(&mut self, lsn: u64, fill: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        if self.stopped {
            return Err(io::Error::other(
                "the journal log stopped after a failed fdatasync; reopen the store",
            ));
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.resize(HEADER, 0);
        fill(&mut buf);
        frame::seal(&mut buf, lsn);
        let result = self.write_and_sync(&buf);
        // Keep the buffer for the next frame unless one huge commit grew it.
        if buf.capacity() <= 4 << 20 {
            self.buf = buf;
        }
        result
    }

    fn write_and_sync(&mut self, frame: &[u8]) -> io::Result<()> {
        let end = self.pos + frame.len() as u64;
        if end > self.allocated {
            let growth = self.allocated.clamp(FIRST_ALLOCATION, MAX_GROWTH);
            self.grow_to(end.max(self.allocated + growth))?;
        }
        self.file.write_all_at(frame, self.pos)?;
        if self.sync
            && let Err(e) = self.file.sync_data()
        {
            self.stopped = true;
            return Err(e);
        }
        self.pos = end;
        Ok(())
    }

    /// Writes zeros from the current length up to `len`.
    fn grow_to(&mut self, len: u64) -> io::Result<()> {
        let zeros = vec![0u8; ZEROS];
        let mut at = self.allocated.max(self.pos);
        while at < len {
            let n = (len - at).min(ZEROS as u64) as usize;
            self.file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        self.allocated = len;
        Ok(())
    }
}

/// The journal log: two segment files, one taking frames while the other's are folded.
///
/// Frames go to the *active* segment. To fold, the writer switches to the other segment
/// (rewound: every frame in it is at or below the durable checkpoint) and hands everything
/// committed so far to a fold, which runs while commits go on into the new segment. Once the
/// fold has made those frames durable in redb, their segment is free to be rewound at the next
/// switch. LSNs run on across both segments.
#[derive(Debug)]
pub(crate) struct Log {
    segments: [Wal; 2],
    active: usize,
    next_lsn: u64,
    /// The segment not written to holds frames that no durable fold covers yet.
    other_busy: bool,
}

impl Log {
    /// A log over two segment files whose frames are all at or below the durable checkpoint;
    /// the next frame is `next_lsn`, at the start of the first segment.
    pub(crate) fn rewound(
        files: [Box<dyn LogFile>; 2],
        next_lsn: u64,
        sync: bool,
    ) -> io::Result<Self> {
        let [a, b] = files;
        Ok(Self {
            segments: [Wal::rewound(a, sync)?, Wal::rewound(b, sync)?],
            active: 0,
            next_lsn,
            other_busy: false,
        })
    }

    /// Writes and syncs one frame whose payload `fill` appends (see [`Wal::append`]); returns
    /// its LSN. A failed write keeps the LSN for the next frame, which goes to the same place,
    /// so the frames stay consecutive.
    pub(crate) fn append(&mut self, fill: impl FnOnce(&mut Vec<u8>)) -> io::Result<u64> {
        let lsn = self.next_lsn;
        let wal = &mut self.segments[self.active];
        let result = wal.append(lsn, fill);
        if result.is_ok() || wal.stopped {
            self.next_lsn += 1;
        }
        result.map(|()| lsn)
    }

    /// Moves the writer to the other segment, rewound, so that what the active one holds can
    /// be folded while commits go on. `false` (and no switch) while the other segment's frames
    /// are not yet folded.
    pub(crate) fn switch(&mut self) -> bool {
        if self.other_busy {
            return false;
        }
        self.active = 1 - self.active;
        self.segments[self.active].rewind();
        self.other_busy = true;
        true
    }

    /// A fold made the frames of the segment not written to durable: it is free.
    pub(crate) fn other_folded(&mut self) {
        self.other_busy = false;
    }

    /// A fold made every frame so far durable: both segments are free, and the active one is
    /// rewound.
    pub(crate) fn all_folded(&mut self) {
        self.other_busy = false;
        self.segments[self.active].rewind();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A log file in memory whose syncs fail while `fail_syncs` is set, counting them.
    #[derive(Debug, Default)]
    struct MemFile {
        bytes: Mutex<Vec<u8>>,
        syncs: Mutex<u32>,
        fail_syncs: Mutex<bool>,
    }

    impl LogFile for std::sync::Arc<MemFile> {
        fn len(&self) -> io::Result<u64> {
            Ok(self.bytes.lock().unwrap().len() as u64)
        }
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            let bytes = self.bytes.lock().unwrap();
            let at = offset as usize;
            buf.copy_from_slice(&bytes[at..at + buf.len()]);
            Ok(())
        }
        fn write_all_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
            let mut bytes = self.bytes.lock().unwrap();
            let end = offset as usize + data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[offset as usize..end].copy_from_slice(data);
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            *self.syncs.lock().unwrap() += 1;
            if *self.fail_syncs.lock().unwrap() {
                return Err(io::Error::other("EIO"));
            }
            Ok(())
        }
    }

    #[test]
    fn a_new_log_is_preallocated_and_each_frame_costs_one_sync() {
        let file = std::sync::Arc::new(MemFile::default());
        let mut wal = Wal::rewound(Box::new(file.clone()), true).unwrap();
        assert_eq!(file.len().unwrap(), FIRST_ALLOCATION);
        let syncs = *file.syncs.lock().unwrap();
        wal.append(1, |b| b.extend_from_slice(b"one")).unwrap();
        wal.append(2, |b| b.extend_from_slice(b"two")).unwrap();
        assert_eq!(*file.syncs.lock().unwrap(), syncs + 2);
        let bytes = file.bytes.lock().unwrap().clone();
        let lsns: Vec<u64> = frame::scan(&bytes, 0, 0)
            .unwrap()
            .frames
            .iter()
            .map(|f| f.lsn)
            .collect();
        assert_eq!(lsns, [1, 2]);
    }

    #[test]
    fn a_failed_sync_stops_the_writer_without_a_second_sync() {
        let file = std::sync::Arc::new(MemFile::default());
        let mut wal = Wal::rewound(Box::new(file.clone()), true).unwrap();
        *file.fail_syncs.lock().unwrap() = true;
        let syncs = *file.syncs.lock().unwrap();
        wal.append(1, |b| b.push(1)).unwrap_err();
        // The disk is fine again, but the writer has stopped: the page cache may have dropped
        // the frame's pages, and a sync now could report success for data not on disk.
        *file.fail_syncs.lock().unwrap() = false;
        let err = wal.append(2, |b| b.push(2)).unwrap_err();
        assert!(err.to_string().contains("reopen the store"), "{err}");
        assert_eq!(*file.syncs.lock().unwrap(), syncs + 1, "no second sync");
    }

    #[test]
    fn a_frame_past_the_preallocated_end_grows_the_file_first() {
        let file = std::sync::Arc::new(MemFile::default());
        let mut wal = Wal::rewound(Box::new(file.clone()), true).unwrap();
        let big = vec![7u8; FIRST_ALLOCATION as usize];
        wal.append(1, |b| b.extend_from_slice(&big)).unwrap();
        assert!(file.len().unwrap() >= 2 * FIRST_ALLOCATION);
        let bytes = file.bytes.lock().unwrap().clone();
        assert_eq!(
            frame::scan(&bytes, 0, 0).unwrap().frames[0].payload,
            &big[..]
        );
    }

    fn lsns(file: &MemFile) -> Vec<u64> {
        let bytes = file.bytes.lock().unwrap().clone();
        frame::scan(&bytes, 0, 0)
            .unwrap()
            .frames
            .iter()
            .map(|f| f.lsn)
            .collect()
    }

    #[test]
    fn the_log_switches_segments_only_once_the_other_is_folded_and_lsns_run_on() {
        let (a, b) = (
            std::sync::Arc::new(MemFile::default()),
            std::sync::Arc::new(MemFile::default()),
        );
        let mut log = Log::rewound([Box::new(a.clone()), Box::new(b.clone())], 5, true).unwrap();
        assert_eq!(log.append(|p| p.push(1)).unwrap(), 5);
        assert_eq!(log.append(|p| p.push(2)).unwrap(), 6);
        assert!(log.switch(), "to segment b while a's frames are folded");
        assert_eq!(log.append(|p| p.push(3)).unwrap(), 7);
        assert!(!log.switch(), "a is not folded yet");
        assert_eq!(log.append(|p| p.push(4)).unwrap(), 8);
        log.other_folded();
        assert!(log.switch(), "back to a, rewound");
        assert_eq!(log.append(|p| p.push(5)).unwrap(), 9);
        assert_eq!(
            lsns(&a),
            [9],
            "a rewound: frames 5 and 6 are overwritten or below 9"
        );
        assert_eq!(lsns(&b), [7, 8]);
        log.all_folded();
        assert_eq!(log.append(|p| p.push(6)).unwrap(), 10);
        assert_eq!(lsns(&a), [10]);
    }
}
