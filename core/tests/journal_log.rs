//! The journal log on the real file: its byte format (a golden file), a torn tail, a damaged
//! frame, faults injected below it (a short write, a failed fdatasync), and recovery after a
//! truncation at any point.
//!
//! `tests/golden/journal-log-v1.hex` holds the log of three canned commits as
//! `magic <hex>` and one `frame <lsn> <hex>` line per frame. To regenerate it after a deliberate
//! change of the format (which is a new format version, see `core/docs/journal-format.md`):
//!
//! ```text
//! MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test journal_log
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use magrathea_core::store::{CommitBatch, DiskFaults, EncodedRecord, FaultyBackend};
use magrathea_core::{Durability, Frontend, RedbStore, RunId, RunStatus, RunSummary, Store};
use proptest::prelude::*;

const MAGIC_LEN: usize = 8;
const HEADER: usize = 16;

const RUN_A: u128 = 0x0194_1a2b_3c4d_7e5f_8a9b_0c1d_2e3f_4a5b;
const RUN_B: u128 = 0x0194_1a2b_3c4e_7001_8002_0003_0004_0005;

fn record(run: u128, seq: u64, bytes: &[u8]) -> EncodedRecord {
    EncodedRecord {
        run_id: RunId::from_u128(run),
        seq,
        bytes: bytes.to_vec(),
    }
}

/// Three commits: a start (record, summary, idempotency key), a step of two runs, and an end.
fn canned_commits() -> Vec<CommitBatch> {
    let summary = |status| RunSummary {
        run_id: RunId::from_u128(RUN_A),
        workflow_name: "order".into(),
        frontend: Frontend::code(),
        status,
        created_ms: 1_735_689_600_000,
        updated_ms: 1_735_689_600_475,
        parent: None,
        scope: "acme/shop".into(),
    };
    vec![
        CommitBatch {
            records: vec![record(RUN_A, 0, &[1, 1, 2, 3])],
            summaries: vec![summary(RunStatus::Running)],
            idempotency_keys: vec![("order-17".into(), RunId::from_u128(RUN_A))],
        },
        CommitBatch {
            records: vec![record(RUN_A, 1, &[1, 4]), record(RUN_B, 300, &[])],
            ..Default::default()
        },
        CommitBatch {
            records: vec![record(RUN_A, 2, &[1, 7, 7])],
            summaries: vec![summary(RunStatus::Done)],
            ..Default::default()
        },
    ]
}

fn log_of(store_path: &Path) -> PathBuf {
    let mut name = store_path.as_os_str().to_owned();
    name.push("-wal.0");
    PathBuf::from(name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The frames of a log file's bytes, as `(lsn, whole frame)`, read by the documented format.
fn frames(log: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut at = MAGIC_LEN;
    let mut expected = None;
    while at + HEADER <= log.len() {
        let len = u32::from_le_bytes(log[at..at + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(log[at + 4..at + 8].try_into().unwrap());
        let lsn = u64::from_le_bytes(log[at + 8..at + 16].try_into().unwrap());
        let Some(payload) = log.get(at + HEADER..at + HEADER + len) else {
            break;
        };
        let mut covered = log[at..at + 4].to_vec();
        covered.extend_from_slice(&log[at + 8..at + 16]);
        covered.extend_from_slice(payload);
        if lsn == 0 || crc32c::crc32c(&covered) != crc || expected.is_some_and(|e| e != lsn) {
            break;
        }
        out.push((lsn, &log[at..at + HEADER + len]));
        expected = Some(lsn + 1);
        at += HEADER + len;
    }
    out
}

fn render(log: &[u8]) -> String {
    let mut out = String::from(
        "# The journal log of three canned commits (core/tests/journal_log.rs), format version 1.\n\
         # Regenerate: MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test journal_log\n",
    );
    out.push_str(&format!("magic {}\n", hex(&log[..MAGIC_LEN])));
    for (lsn, frame) in frames(log) {
        out.push_str(&format!("frame {lsn} {}\n", hex(frame)));
    }
    out
}

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/journal-log-v1.hex")
}

fn seqs_and_bytes(store: &dyn Store, run: u128) -> Vec<(u64, Vec<u8>)> {
    store.read_journal_raw(RunId::from_u128(run)).unwrap()
}

#[test]
fn the_log_of_canned_commits_matches_the_golden_file_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    {
        let store = RedbStore::open(&path, Durability::Immediate).unwrap();
        assert_eq!(store.log_paths()[0], log_of(&path));
        for batch in canned_commits() {
            store.commit(&[&batch]).unwrap();
        }
    }
    let log = std::fs::read(log_of(&path)).unwrap();
    let rendered = render(&log);
    if std::env::var_os("MAGRATHEA_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(golden_path(), &rendered).unwrap();
    }
    let golden = std::fs::read_to_string(golden_path()).unwrap();
    assert_eq!(rendered, golden, "the log's bytes changed");
    assert_eq!(frames(&log).len(), 3, "one frame per commit");
    assert!(
        log.len() >= 1 << 20,
        "the file is preallocated ({} bytes)",
        log.len()
    );

    // The golden bytes alone, beside a fresh redb file, are a readable store.
    let fresh = tempfile::tempdir().unwrap();
    let fresh_path = fresh.path().join("j.redb");
    let mut bytes = Vec::new();
    for line in golden.lines().filter(|l| !l.starts_with('#')) {
        bytes.extend(unhex(line.rsplit(' ').next().unwrap()));
    }
    std::fs::write(log_of(&fresh_path), &bytes).unwrap();
    let store = RedbStore::open(&fresh_path, Durability::Immediate).unwrap();
    assert_eq!(
        seqs_and_bytes(&store, RUN_A),
        [(0, vec![1, 1, 2, 3]), (1, vec![1, 4]), (2, vec![1, 7, 7])]
    );
    assert_eq!(seqs_and_bytes(&store, RUN_B), [(300, vec![])]);
    let summary = store.run_summary(RunId::from_u128(RUN_A)).unwrap().unwrap();
    assert_eq!(summary.status, RunStatus::Done);
    assert_eq!(summary.scope.as_str(), "acme/shop");
    assert_eq!(
        store.find_idempotency_key("order-17").unwrap(),
        Some(RunId::from_u128(RUN_A))
    );
    assert!(store.active_runs().unwrap().is_empty(), "the run ended");
}

/// Commits `n` one-record commits of `run` (seq i, bytes `[i; 40]`) and drops the store.
fn commit_and_close(path: &Path, run: u128, n: u64) {
    let store = RedbStore::open(path, Durability::Immediate).unwrap();
    for i in 0..n {
        let batch = CommitBatch {
            records: vec![record(run, i, &[i as u8; 40])],
            ..Default::default()
        };
        store.commit(&[&batch]).unwrap();
    }
}

fn seqs(store: &dyn Store, run: u128) -> Vec<u64> {
    seqs_and_bytes(store, run)
        .into_iter()
        .map(|(seq, bytes)| {
            assert_eq!(bytes, vec![seq as u8; 40], "record {seq} is intact");
            seq
        })
        .collect()
}

#[test]
fn a_torn_last_frame_ends_the_log_and_the_store_goes_on_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    commit_and_close(&path, RUN_A, 5);
    let log = std::fs::read(log_of(&path)).unwrap();
    let end = frames(&log).iter().map(|(_, f)| f.len()).sum::<usize>() + MAGIC_LEN;
    // The last frame's write was cut short by a crash: 10 of its bytes reached the disk.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(log_of(&path))
        .unwrap();
    file.set_len((end - 30) as u64).unwrap();
    drop(file);

    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, RUN_A), [0, 1, 2, 3]);
    store
        .commit(&[&CommitBatch {
            records: vec![record(RUN_A, 4, &[4; 40])],
            ..Default::default()
        }])
        .unwrap();
    drop(store);
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, RUN_A), [0, 1, 2, 3, 4]);
}

#[test]
fn a_damaged_frame_before_intact_ones_is_refused_and_a_damaged_last_frame_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    commit_and_close(&path, RUN_A, 4);
    let clean = std::fs::read(log_of(&path)).unwrap();
    let bounds: Vec<usize> = frames(&clean)
        .iter()
        .scan(MAGIC_LEN, |at, (_, f)| {
            let start = *at;
            *at += f.len();
            Some(start)
        })
        .collect();

    // One bit of the second frame's payload flips: the frames after it are intact, so
    // acknowledged commits would be lost by stopping there. The open refuses.
    let mut damaged = clean.clone();
    damaged[bounds[1] + HEADER + 20] ^= 0x04;
    std::fs::write(log_of(&path), &damaged).unwrap();
    let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("[MAG-JF003]"), "{text}");
    assert!(text.contains("damaged, not torn"), "{text}");

    // A flipped bit in the second frame's length: where the frame ends is lost, yet the frames
    // after it lie intact further on. The open refuses as well.
    let mut length = clean.clone();
    length[bounds[1] + 1] ^= 0x01;
    std::fs::write(log_of(&path), &length).unwrap();
    let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
    assert!(err.to_string().contains("damaged, not torn"), "{err}");

    // The same flip in the last frame cannot be told from a torn write: the log ends before it.
    let mut last = clean.clone();
    last[bounds[3] + HEADER + 20] ^= 0x04;
    std::fs::write(log_of(&path), &last).unwrap();
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, RUN_A), [0, 1, 2]);
}

fn one(run: u128, seq: u64) -> CommitBatch {
    CommitBatch {
        records: vec![record(run, seq, &[seq as u8; 40])],
        ..Default::default()
    }
}

#[test]
fn a_short_write_fails_its_commit_only_and_leaves_a_tail_the_next_open_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let faults = DiskFaults::new();
    {
        let store = FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap();
        store.commit(&[&one(RUN_A, 0)]).unwrap();
        faults.short_next_log_writes(1);
        let err = store.commit(&[&one(RUN_A, 1)]).unwrap_err();
        assert!(err.to_string().contains("injected short write"), "{err}");
        assert_eq!(faults.injected(), 1);
        assert_eq!(seqs(&store, RUN_A), [0], "nothing of the failed commit");
        // The next commit goes on (the store recovers from the log first).
        store.commit(&[&one(RUN_A, 1)]).unwrap();
        assert_eq!(seqs(&store, RUN_A), [0, 1]);
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, RUN_A), [0, 1]);
}

#[test]
fn a_failed_fdatasync_is_not_retried_and_the_reopened_store_has_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let faults = DiskFaults::new();
    {
        let store = FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap();
        store.commit(&[&one(RUN_A, 0)]).unwrap();
        store.commit(&[&one(RUN_A, 1)]).unwrap();
        faults.fail_next_syncs(1);
        let err = store.commit(&[&one(RUN_B, 0)]).unwrap_err();
        assert!(err.to_string().contains("injected sync"), "{err}");
        assert_eq!(faults.injected(), 1);
        // The next operation finds the writer stopped and recovers from the log on disk. The
        // failed commit may be there (the Store contract's one exception): whole, if at all.
        assert!(matches!(seqs(&store, RUN_B).as_slice(), [] | [0]));
        assert_eq!(seqs(&store, RUN_A), [0, 1]);
        store.commit(&[&one(RUN_A, 2)]).unwrap();
        assert_eq!(seqs(&store, RUN_A), [0, 1, 2]);
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, RUN_A), [0, 1, 2], "every acknowledged commit");
    // The failed commit may have reached the disk anyway (the Store contract's one exception):
    // then whole, never in part.
    assert!(matches!(seqs(&store, RUN_B).as_slice(), [] | [0]));
}

#[test]
fn while_the_disk_is_down_no_commit_is_acknowledged_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let faults = DiskFaults::new();
    {
        let store = FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap();
        store.commit(&[&one(RUN_A, 0)]).unwrap();
        faults.fail_next_syncs(u32::MAX);
        for _ in 0..3 {
            store.commit(&[&one(RUN_A, 1)]).unwrap_err();
        }
        faults.clear();
        store.commit(&[&one(RUN_A, 1)]).unwrap();
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, RUN_A), [0, 1]);
}

/// One commit of the property test: `(run, record length)` per record.
type Commit = Vec<(u8, usize)>;

/// What a store holds: run -> `(seq, bytes)` in order.
type Held = BTreeMap<u8, Vec<(u64, Vec<u8>)>>;

fn commits() -> impl Strategy<Value = Vec<Commit>> {
    prop::collection::vec(prop::collection::vec((0u8..3, 0usize..200), 1..5), 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever prefix of the log reached the disk, the reopened store holds exactly the
    /// records of the first few commits, and at least every commit whose frame is whole.
    #[test]
    fn recovery_after_any_truncation_yields_a_prefix_of_the_acknowledged_commits(
        commits in commits(),
        cut in any::<prop::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.redb");
        let mut next_seq = [0u64; 3];
        // What the store holds after each commit: run -> [(seq, bytes)].
        let mut states: Vec<Held> = vec![BTreeMap::new()];
        {
            let store = RedbStore::open(&path, Durability::Immediate).unwrap();
            for commit in &commits {
                let mut state = states.last().unwrap().clone();
                let mut batch = CommitBatch::default();
                for &(run, len) in commit {
                    let seq = next_seq[run as usize];
                    next_seq[run as usize] += 1;
                    let bytes = vec![(seq as u8).wrapping_add(run); len];
                    batch.records.push(record(u128::from(run) + 1, seq, &bytes));
                    state.entry(run).or_default().push((seq, bytes));
                }
                store.commit(&[&batch]).unwrap();
                states.push(state);
            }
        }
        let log = std::fs::read(log_of(&path)).unwrap();
        let ends: Vec<usize> = frames(&log)
            .iter()
            .scan(MAGIC_LEN, |at, (_, f)| { *at += f.len(); Some(*at) })
            .collect();
        prop_assert_eq!(ends.len(), commits.len());
        // The log's magic is durable before its first frame (the segment is made, synced
        // and noted at open): a crash cuts frames, not the magic.
        let end = ends[ends.len() - 1];
        let cut = MAGIC_LEN + cut.index(end - MAGIC_LEN + 1);
        let whole = ends.iter().filter(|&&end| end <= cut).count();

        let copy = tempfile::tempdir().unwrap();
        let copy_path = copy.path().join("j.redb");
        std::fs::copy(&path, &copy_path).unwrap();
        let [_, second] = RedbStore::log_paths_of(&path);
        std::fs::copy(&second, &RedbStore::log_paths_of(&copy_path)[1]).unwrap();
        std::fs::write(log_of(&copy_path), &log[..cut]).unwrap();
        let store = RedbStore::open(&copy_path, Durability::Immediate).unwrap();
        let mut held = BTreeMap::new();
        for run in 0u8..3 {
            let rows = store.read_journal_raw(RunId::from_u128(u128::from(run) + 1)).unwrap();
            if !rows.is_empty() {
                held.insert(run, rows);
            }
        }
        let prefix = states.iter().position(|s| *s == held);
        prop_assert!(prefix.is_some(), "the store holds no prefix of the commits: {:?}", held);
        prop_assert!(prefix.unwrap() >= whole, "a whole frame was lost: cut {}, whole {}", cut, whole);
    }
}

#[test]
fn a_log_that_misses_frames_after_the_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    commit_and_close(&path, RUN_A, 3);
    let log = std::fs::read(log_of(&path)).unwrap();
    let all = frames(&log);
    assert_eq!(all.len(), 3);
    // The first frame is gone: the log starts at LSN 2 while nothing is folded yet.
    let mut missing = log[..MAGIC_LEN].to_vec();
    missing.extend_from_slice(all[1].1);
    missing.extend_from_slice(all[2].1);
    std::fs::write(log_of(&path), &missing).unwrap();
    let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("[MAG-JF003]"), "{text}");
    assert!(text.contains("misses frames"), "{text}");
    assert!(text.contains("restore the store from a backup"), "{text}");
}

#[test]
fn a_log_segment_deleted_or_emptied_is_refused_not_taken_for_an_empty_log() {
    for how in ["deleted", "emptied"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.redb");
        commit_and_close(&path, RUN_A, 3);
        // The three acknowledged commits are in the log only, past the checkpoint.
        let segment = log_of(&path);
        if how == "deleted" {
            std::fs::remove_file(&segment).unwrap();
        } else {
            std::fs::File::create(&segment).unwrap();
        }
        let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("[MAG-JF003]"), "{how}: {text}");
        assert!(text.contains("missing or empty"), "{how}: {text}");
        assert!(
            text.contains("restore the store from a backup"),
            "{how}: {text}"
        );
        // And so does every later open: the refusal changed nothing.
        let again = RedbStore::open(&path, Durability::Immediate).unwrap_err();
        assert!(
            again.to_string().starts_with("[MAG-JF003]"),
            "{how}: {again}"
        );
    }
    // A store whose log is whole opens, however often.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    commit_and_close(&path, RUN_A, 3);
    for _ in 0..2 {
        let store = RedbStore::open(&path, Durability::Immediate).unwrap();
        assert_eq!(seqs(&store, RUN_A), [0, 1, 2]);
    }
}
