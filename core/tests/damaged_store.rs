//! A store file damaged on disk — one bit flipped in any of its pages, as a failing disk or a
//! bad copy leaves it — opens, or is refused with a coded error that says the store is
//! damaged; it never takes the process down with a panic.

use std::path::Path;

use magrathea_core::store::contract::summary_in;
use magrathea_core::store::{CommitBatch, EncodedRecord};
use magrathea_core::{Durability, RedbStore, RunId, RunStatus, Store};

const PAGE: usize = 4096;

/// A store of a few hundred runs, each with a summary and records, folded into redb and
/// closed.
fn build(path: &Path) {
    let store = RedbStore::open(path, Durability::Immediate).unwrap();
    for chunk in 0..4u128 {
        let mut batch = CommitBatch::default();
        for i in 0..100u128 {
            let run = RunId::from_u128(chunk * 1000 + i + 1);
            batch
                .summaries
                .push(summary_in(run, "acme/shop", RunStatus::Waiting));
            for seq in 0..20u64 {
                batch.records.push(EncodedRecord {
                    run_id: run,
                    seq,
                    bytes: vec![seq as u8; 40],
                });
            }
        }
        store.commit(&[&batch]).unwrap();
        store.maintain().unwrap();
    }
}

fn copy_store(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    for (a, b) in RedbStore::log_paths_of(from)
        .iter()
        .zip(RedbStore::log_paths_of(to).iter())
    {
        if a.exists() {
            std::fs::copy(a, b).unwrap();
        }
    }
}

#[test]
fn a_bit_flipped_in_any_page_opens_or_is_refused_as_damaged_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine.redb");
    build(&pristine);
    let len = std::fs::metadata(&pristine).unwrap().len() as usize;
    assert!(len > 8 * PAGE, "a store of several pages: {len} bytes");
    let mut refused = 0;
    for page in 0..len / PAGE {
        let path = dir.path().join(format!("flipped-{page}.redb"));
        copy_store(&pristine, &path);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[page * PAGE + 2000] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        // Opened twice: an open may repair the file and write to it.
        for _ in 0..2 {
            let opened = std::panic::catch_unwind(|| RedbStore::open(&path, Durability::Immediate));
            match opened {
                Err(_) => panic!("opening the store with page {page} damaged panicked"),
                Ok(Ok(store)) => drop(store),
                Ok(Err(e)) => {
                    let said = e.to_string();
                    assert!(
                        said.starts_with("[MAG-ST004]") || said.starts_with("[MAG-ST001]"),
                        "page {page}: {said}"
                    );
                    if said.starts_with("[MAG-ST004]") {
                        assert!(said.contains("restore the store from a backup"), "{said}");
                        refused += 1;
                    }
                }
            }
        }
        for p in std::iter::once(path.clone()).chain(RedbStore::log_paths_of(&path)) {
            let _ = std::fs::remove_file(p);
        }
    }
    assert!(refused > 0, "some damage is found and said");
}
