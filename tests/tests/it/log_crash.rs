//! The journal log under real SIGKILL: `log_appender` appends from 64 concurrent tasks (group
//! commits of records up to 4 KiB, so the store folds and switches log segments as it goes)
//! and is killed at random moments (during its recovery too), six times over. Afterwards every append the store
//! acknowledged is in the journal, and every run's journal is whole: its seqs from 0 without a
//! gap, each record's bytes the ones appended.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use magrathea::core::{RedbStore, Store};
use magrathea::{Durability, RunId};
use magrathea_tests::record_bytes;
use rand::Rng;

const INCARNATIONS: u128 = 6;

fn lines(acks: &Path) -> usize {
    std::fs::read(acks).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

fn acked(acks: &Path) -> BTreeMap<u128, u64> {
    let mut last = BTreeMap::new();
    for line in std::fs::read_to_string(acks).unwrap_or_default().lines() {
        // A line cut by the kill is not an acknowledgement the test can read; skip it.
        let Some((run, seq)) = line.split_once(' ') else {
            continue;
        };
        let (Ok(run), Ok(seq)) = (run.parse::<u128>(), seq.parse::<u64>()) else {
            continue;
        };
        let entry = last.entry(run).or_insert(seq);
        *entry = (*entry).max(seq);
    }
    last
}

#[test]
fn every_acknowledged_append_survives_sigkill_at_random_moments() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let acks = dir.path().join("acks");
    let mut rng = rand::rng();
    for incarnation in 1..=INCARNATIONS {
        let mut child = Command::new(env!("CARGO_BIN_EXE_log_appender"))
            .arg(&db)
            .arg(&acks)
            .arg(incarnation.to_string())
            .spawn()
            .unwrap();
        if incarnation % 2 == 0 {
            // Killed at any moment from its start: during its recovery, or while appending.
            std::thread::sleep(Duration::from_millis(rng.random_range(50..2000)));
        } else {
            // Killed while appending: once its first acknowledgement is on the list.
            let before = lines(&acks);
            let deadline = Instant::now() + Duration::from_secs(120);
            while lines(&acks) == before && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(rng.random_range(0..800)));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    let acked = acked(&acks);
    // Every other incarnation was killed only once it had appended.
    assert!(
        acked.len() as u128 >= 3 * 64,
        "the appenders got going ({} runs acknowledged)",
        acked.len()
    );
    let store = RedbStore::open(&db, Durability::Immediate).unwrap();
    let mut records = 0usize;
    for (&run, &last_acked) in &acked {
        let run = RunId::from_u128(run);
        let journal = store.read_journal_raw(run).unwrap();
        records += journal.len();
        assert!(
            journal.len() as u64 > last_acked,
            "run {run}: seq {last_acked} was acknowledged, the journal ends at {}",
            journal.len()
        );
        for (i, (seq, bytes)) in journal.iter().enumerate() {
            assert_eq!(*seq, i as u64, "run {run}: seqs from 0 without a gap");
            assert_eq!(
                *bytes,
                record_bytes(run, *seq),
                "run {run}: record {seq} intact"
            );
        }
    }
    eprintln!("{records} records of {} runs checked", acked.len());
}
