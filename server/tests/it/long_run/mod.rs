//! A finished run with a long journal, written straight into a store directory before a server
//! opens it: what readers and followers of long runs are tested against.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::Path;

use magrathea_core::codec;
use magrathea_core::store::{CommitBatch, EncodedRecord};
use magrathea_core::{
    Durability, Record, RedbStore, RunId, RunStatus, RunSummary, StartRecord, Store,
};
use serde_json::json;

/// Writes a DONE run of workflow `long` in `acme/shop` into `<store>/journal.redb`: a
/// `StartRecord`, `vars` `VarRecord`s each holding a string of `value_len` bytes, and a terminal
/// `StatusRecord` — `vars + 2` records. Returns the run and the journal's encoded bytes.
pub fn write_long_run(store: &Path, vars: u64, value_len: usize) -> (RunId, u64) {
    let db = RedbStore::open(store.join("journal.redb"), Durability::RelaxedForTests).unwrap();
    let run = RunId::new();
    let mut batch = CommitBatch::default();
    let mut bytes_total = 0u64;
    let mut push = |seq: u64, record: Record| {
        let mut bytes = Vec::new();
        codec::encode(&record, 1_700_000_000_000 + seq, &mut bytes);
        bytes_total += bytes.len() as u64;
        batch.records.push(EncodedRecord {
            run_id: run,
            seq,
            bytes,
        });
    };
    push(
        0,
        Record::Start(Box::new(StartRecord {
            workflow_name: "long".into(),
            workflow_version: String::new(),
            frontend: "code".into(),
            params: json!({}),
            definition: None,
            parent: None,
            started_by: "alice".into(),
            requested_by: None,
            bounds: None,
            entry: None,
            idempotency_key: None,
            scope: "acme/shop".into(),
        })),
    );
    let value = "x".repeat(value_len);
    for seq in 1..=vars {
        push(
            seq,
            Record::Var {
                step: 1,
                key: format!("v{seq}"),
                value: json!(value),
            },
        );
    }
    push(
        vars + 1,
        Record::Status {
            status: RunStatus::Done,
            reason: None,
        },
    );
    batch.summaries.push(RunSummary {
        run_id: run,
        workflow_name: "long".into(),
        frontend: "code".into(),
        status: RunStatus::Done,
        created_ms: 1_700_000_000_000,
        updated_ms: 1_700_000_000_000 + vars + 1,
        parent: None,
        scope: "acme/shop".into(),
    });
    db.commit(&[&batch]).unwrap();
    // Folded into the journal table, as a long-lived server's store would hold it.
    db.maintain().unwrap();
    (run, bytes_total)
}
