//! The redb store's own tests; the shared store contract runs here too.

use std::time::Duration;

use redb::ReadableTableMetadata;

use super::*;
use crate::store::EncodedRecord;

fn record(run: RunId, seq: u64) -> EncodedRecord {
    EncodedRecord {
        run_id: run,
        seq,
        bytes: vec![seq as u8; 3],
    }
}

fn batch(run: RunId, seqs: std::ops::Range<u64>) -> CommitBatch {
    CommitBatch {
        records: seqs.map(|s| record(run, s)).collect(),
        ..Default::default()
    }
}

fn seqs(store: &RedbStore, run: RunId) -> Vec<u64> {
    let rows = store.read_journal_raw(run).unwrap();
    for (seq, bytes) in &rows {
        assert_eq!(
            bytes,
            &vec![*seq as u8; 3],
            "record {seq} reads back its own bytes"
        );
    }
    rows.into_iter().map(|(s, _)| s).collect()
}

#[test]
fn keeps_the_store_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
    crate::store::contract::check_all(&store);
}

#[test]
fn what_the_store_creates_is_for_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a/b/j.redb");
    let store = RedbStore::open(&file, Durability::Immediate).unwrap();
    for created in [dir.path().join("a"), dir.path().join("a/b")] {
        assert_eq!(mode(&created), 0o700, "{}", created.display());
    }
    assert_eq!(mode(&file), 0o600);
    for log in store.log_paths() {
        assert_eq!(mode(&log), 0o600, "{}", log.display());
    }
    drop(store);
    // A mode its operator chose stays.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    drop(RedbStore::open(&file, Durability::Immediate).unwrap());
    assert_eq!(mode(&file), 0o640);
}

#[test]
fn keeps_the_store_contracts_when_folding_after_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
    store.fold_policy().records = 1;
    crate::store::contract::check_all(&store);
    // The contract's later commits (summaries and keys) wait for the next fold.
    store.settle_fold().unwrap();
    store.maintain().unwrap();
    store.settle_fold().unwrap();
    assert_eq!(store.unfolded_records(), 0, "maintain folded everything");
}

#[test]
fn reads_journal_ranges_as_slices_of_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
    crate::store::contract::check_ranges(&store);
    assert_eq!(
        store.unfolded_records(),
        18,
        "the ranges above were read unfolded"
    );
    store.fold().unwrap();
    crate::store::contract::check_ranges(&store);
}

#[test]
fn reads_journal_ranges_across_folded_and_unfolded_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
    store.fold_policy().records = 1;
    // `maintain` folds after every commit here: the first ten records are folded, the
    // last five are not.
    crate::store::contract::check_ranges(&store);
    assert!(store.unfolded_records() > 0);
}

#[test]
fn reads_join_folded_and_unfolded_records_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
    let (a, b) = (RunId::new(), RunId::new());
    store.commit(&[&batch(a, 0..3), &batch(b, 0..1)]).unwrap();
    assert_eq!(store.unfolded_records(), 4);
    assert_eq!(seqs(&store, a), [0, 1, 2]);
    store.fold().unwrap();
    assert_eq!(store.unfolded_records(), 0);
    store.commit(&[&batch(a, 3..5)]).unwrap();
    assert_eq!(
        seqs(&store, a),
        [0, 1, 2, 3, 4],
        "folded prefix, then unfolded"
    );
    assert_eq!(seqs(&store, b), [0]);
    let tx = store
        .db
        .read()
        .unwrap()
        .as_ref()
        .unwrap()
        .begin_read()
        .unwrap();
    assert_eq!(
        tx.open_table(CHUNKS).unwrap().len().unwrap(),
        2,
        "the first commit is folded, one chunk per run; the second is not"
    );
    assert_eq!(store.unfolded_records(), 2);
}

#[test]
fn maintain_folds_only_past_the_threshold_or_after_idling() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
    *store.fold_policy() = FoldPolicy {
        records: 10,
        bytes: usize::MAX,
        idle: Duration::from_secs(3600),
    };
    let run = RunId::new();
    store.commit(&[&batch(run, 0..9)]).unwrap();
    store.maintain().unwrap();
    store.settle_fold().unwrap();
    assert_eq!(store.unfolded_records(), 9, "below the threshold");
    store.commit(&[&batch(run, 9..10)]).unwrap();
    store.maintain().unwrap();
    store.settle_fold().unwrap();
    assert_eq!(store.unfolded_records(), 0, "at the threshold");

    store.fold_policy().idle = Duration::ZERO;
    store.commit(&[&batch(run, 10..11)]).unwrap();
    store.maintain().unwrap();
    store.settle_fold().unwrap();
    assert_eq!(store.unfolded_records(), 0, "idle");
    assert_eq!(seqs(&store, run), (0..11).collect::<Vec<_>>());
}

#[test]
fn opening_folds_what_the_last_process_left_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/j.redb");
    let run = RunId::new();
    {
        let store = RedbStore::open(&path, Durability::Immediate).unwrap();
        store.commit(&[&batch(run, 0..2)]).unwrap();
        store.fold().unwrap();
        store.commit(&[&batch(run, 2..4)]).unwrap();
        store.commit(&[&batch(run, 4..5)]).unwrap();
        assert_eq!(store.unfolded_records(), 3);
        // Dropped without a fold, like a process that stops right after a commit.
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(store.unfolded_records(), 0);
    assert_eq!(seqs(&store, run), [0, 1, 2, 3, 4]);
    let tx = store
        .db
        .read()
        .unwrap()
        .as_ref()
        .unwrap()
        .begin_read()
        .unwrap();
    assert!(tx.open_table(LOG).unwrap().is_empty().unwrap());
    drop(tx);
    store.commit(&[&batch(run, 5..6)]).unwrap();
    assert_eq!(seqs(&store, run), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_corrupt_log_row_fails_the_open_with_a_journal_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        // A frame entry that claims 9 bytes of record and holds none.
        let frame = [[0u8; 16].as_slice(), &[0, 9]].concat();
        tx.open_table(LOG)
            .unwrap()
            .insert(0, frame.as_slice())
            .unwrap();
        tx.commit().unwrap();
    }
    let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
    assert!(matches!(err, StoreError::Decode(_)), "{err}");
    assert!(err.to_string().contains("[MAG-JF003]"), "{err}");
}

/// A store file cut short (a partial copy, a truncation) is named as truncated, with what to
/// do, rather than as redb's "failed to fill whole buffer".
#[test]
fn a_truncated_store_file_is_named_as_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    {
        let store = RedbStore::open(&path, Durability::Immediate).unwrap();
        store.commit(&[&batch(RunId::new(), 0..50)]).unwrap();
    }
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(100).unwrap();
    drop(file);
    let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("is truncated") && message.contains("restore the store from a backup"),
        "{message}"
    );
}

/// A store file that its creation left all zeros (a full disk failed the header's write, or
/// the process died before it) held nothing: the next open creates the store afresh instead
/// of refusing a file that is not a database.
#[test]
fn a_store_file_its_creation_left_all_zeros_is_created_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    std::fs::write(&path, vec![0u8; 73_728]).unwrap();
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    let run = RunId::new();
    store.commit(&[&batch(run, 0..3)]).unwrap();
    drop(store);
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(store.read_journal_raw(run).unwrap().len(), 3);
}

#[test]
fn a_second_open_of_the_same_file_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let _first = RedbStore::open(&path, Durability::Immediate).unwrap();
    let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
    assert!(matches!(err, StoreError::Locked(_)), "{err}");
}

#[test]
fn reads_while_folds_run_on_their_thread_see_every_committed_record_once() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let mut store = RedbStore::open(&path, Durability::RelaxedForTests).unwrap();
    store.fold_policy().records = 40;
    let store = Arc::new(store);
    let runs: Vec<RunId> = (0..4).map(|_| RunId::new()).collect();
    let committed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let reader = {
        let (store, runs, committed, stop, reads) = (
            store.clone(),
            runs.clone(),
            committed.clone(),
            stop.clone(),
            reads.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                for run in &runs {
                    let at_least = committed.load(Ordering::Acquire);
                    let seen = seqs(&store, *run);
                    let n = seen.len() as u64;
                    assert_eq!(
                        seen,
                        (0..n).collect::<Vec<_>>(),
                        "each record once, in order"
                    );
                    assert!(
                        n >= at_least,
                        "a committed record is missing: {n} < {at_least}"
                    );
                }
                reads.fetch_add(1, Ordering::AcqRel);
            }
        })
    };
    const SEQS: u64 = 400;
    for seq in 0..SEQS {
        if seq % 20 == 0 {
            // Let the reader through now and then, so that reads overlap commits and folds.
            let before = reads.load(Ordering::Acquire);
            while reads.load(Ordering::Acquire) == before {
                std::thread::yield_now();
            }
        }
        let batches: Vec<CommitBatch> = runs.iter().map(|r| batch(*r, seq..seq + 1)).collect();
        store.commit(&batches.iter().collect::<Vec<_>>()).unwrap();
        committed.store(seq + 1, Ordering::Release);
        store.maintain().unwrap();
    }
    stop.store(true, Ordering::Release);
    reader.join().unwrap();
    store.settle_fold().unwrap();
    for run in &runs {
        assert_eq!(seqs(&store, *run), (0..SEQS).collect::<Vec<_>>());
    }
    drop(store);
    let store = RedbStore::open(&path, Durability::RelaxedForTests).unwrap();
    for run in &runs {
        assert_eq!(
            seqs(&store, *run),
            (0..SEQS).collect::<Vec<_>>(),
            "after a reopen"
        );
    }
}

#[test]
fn a_file_folded_by_an_older_version_reads_on_with_the_chunks_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let run = RunId::new();
    {
        // Records folded one per row into `journal`, as versions before the chunks did.
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut journal = tx.open_table(JOURNAL).unwrap();
            for seq in 0..3u64 {
                journal
                    .insert((run.as_u128(), seq), vec![seq as u8; 3].as_slice())
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    store.commit(&[&batch(run, 3..5)]).unwrap();
    store.fold().unwrap();
    store.commit(&[&batch(run, 5..7)]).unwrap();
    store.fold().unwrap();
    store.commit(&[&batch(run, 7..8)]).unwrap();
    assert_eq!(seqs(&store, run), (0..8).collect::<Vec<_>>());
    let range = |from, limit| -> Vec<u64> {
        let rows = store
            .read_journal_range(run, from, limit, usize::MAX)
            .unwrap();
        rows.into_iter().map(|(s, _)| s).collect()
    };
    assert_eq!(range(2, 3), [2, 3, 4], "from the rows into the first chunk");
    assert_eq!(
        range(4, 2),
        [4, 5],
        "from the middle of one chunk into the next"
    );
    assert_eq!(
        range(6, 10),
        [6, 7],
        "from a chunk into the unfolded records"
    );
    assert_eq!(range(8, 10), Vec::<u64>::new());
}

#[test]
fn a_store_with_a_small_page_cache_keeps_the_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let mut store =
        RedbStore::open_with_cache(dir.path().join("j.redb"), Durability::Immediate, 64 << 10)
            .unwrap();
    store.fold_policy().records = 1;
    crate::store::contract::check_all(&store);
    crate::store::contract::check_ranges(&store);
}

#[test]
fn a_file_written_before_the_scope_index_gets_it_at_its_first_open() {
    use crate::record::RunStatus;
    use crate::store::contract::summary_in;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let (acme, globex, ended) = (RunId::new(), RunId::new(), RunId::new());
    {
        let mut store = RedbStore::open(&path, Durability::Immediate).unwrap();
        store.fold_policy().records = 1;
        store
            .commit(&[&CommitBatch {
                summaries: vec![
                    summary_in(acme, "acme/shop", RunStatus::Waiting),
                    summary_in(globex, "globex/labs", RunStatus::Running),
                    summary_in(ended, "acme/shop", RunStatus::Done),
                ],
                ..batch(acme, 0..1)
            }])
            .unwrap();
        store.settle_fold().unwrap();
        store.maintain().unwrap();
        store.settle_fold().unwrap();
        assert_eq!(store.unfolded_records(), 0);
    }
    // What an older version left: the active runs, and no index of them by scope.
    {
        let db = redb::Database::open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        assert!(tx.delete_table(ACTIVE_BY_SCOPE).unwrap());
        tx.commit().unwrap();
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    let of = |scope: &str| {
        store
            .active_summaries(&RunFilter {
                scope_prefix: Some(scope.into()),
                ..RunFilter::default()
            })
            .unwrap()
            .into_iter()
            .map(|s| s.run_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(of("acme/"), vec![acme]);
    assert_eq!(of("globex/"), vec![globex]);
    assert!(of("initech/").is_empty());
}

/// A check of room writes its scratch file beside the store and leaves nothing behind; one
/// a crash left is removed when the store opens.
#[test]
fn a_check_of_room_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let scratch = dir.path().join("journal.redb.probe");
    std::fs::write(&scratch, vec![0u8; 4096]).unwrap();
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert!(
        !scratch.exists(),
        "a crash's scratch file is removed at open"
    );
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    store.has_room(3 << 20).unwrap();
    store.has_room(0).unwrap();
    let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(before.len(), after.len());
    assert!(!scratch.exists());
}
