//! The [`Store`] contracts as checks any implementation can run in its tests
//! (with the `test-util` feature): the redb and in-memory stores here, PostgreSQL in its crate.
//! Each panics, naming the contract, when the store breaks one.

use super::{CommitBatch, EncodedRecord, RunFilter, RunSummary, Store};
use crate::codec;
use crate::id::RunId;
use crate::record::{Entry, Record, RunStatus, StartRecord};
use crate::vocabulary::RunScope;

fn start(run: RunId, name: &str) -> CommitBatch {
    start_in(run, name, RunScope::default())
}

fn start_in(run: RunId, name: &str, scope: RunScope) -> CommitBatch {
    let mut bytes = Vec::new();
    let rec = Record::Start(Box::new(StartRecord {
        workflow_name: name.into(),
        workflow_version: String::new(),
        frontend: "code".into(),
        params: serde_json::json!({"n": 1}),
        definition: None,
        parent: None,
        started_by: "test".into(),
        idempotency_key: Some(format!("key-{run}")),
        scope: scope.clone(),
        requested_by: None,
        bounds: None,
        entry: None,
    }));
    codec::encode(&rec, 7, &mut bytes);
    CommitBatch {
        records: vec![EncodedRecord {
            run_id: run,
            seq: 0,
            bytes,
        }],
        summaries: vec![RunSummary {
            run_id: run,
            workflow_name: name.into(),
            frontend: "code".into(),
            status: RunStatus::Running,
            created_ms: 7,
            updated_ms: 7,
            parent: None,
            scope,
        }],
        idempotency_keys: vec![(format!("key-{run}"), run)],
    }
}

/// A summary of `run` in `scope` with `status`: workflow `w`, code, created at 1 ms.
pub fn summary_in(run: RunId, scope: &str, status: RunStatus) -> RunSummary {
    RunSummary {
        run_id: run,
        workflow_name: "w".into(),
        frontend: "code".into(),
        status,
        created_ms: 1,
        updated_ms: 1,
        parent: None,
        scope: scope.into(),
    }
}

/// Commits `run`'s summary as ended (`DONE`).
fn end(store: &dyn Store, run: RunId) {
    let mut done = store.run_summary(run).unwrap().unwrap();
    done.status = RunStatus::Done;
    store
        .commit(&[&CommitBatch {
            summaries: vec![done],
            ..Default::default()
        }])
        .unwrap();
}

/// Commits, reads, listing, active runs, idempotency keys and measured reads.
pub fn check_all(store: &dyn Store) {
    if let Some(catalog) = store.catalog() {
        super::catalog::contract::run(catalog);
    }
    let a = RunId::new();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = RunId::new();
    let (ba, bb) = (start(a, "alpha"), start(b, "beta"));
    store.commit(&[&ba, &bb]).unwrap();
    // Housekeeping between commits leaves every read unchanged (checked by all below).
    store.maintain().unwrap();

    let journal = store.read_journal(a).unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].at_ms, 7);
    assert!(matches!(&journal[0].record, Record::Start(s) if s.workflow_name == "alpha"));

    let all = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(
        all.iter().map(|s| s.run_id).collect::<Vec<_>>(),
        vec![b, a],
        "newest first"
    );
    let only = store
        .list_runs(&RunFilter {
            workflow: Some("alpha".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(only.len(), 1);
    let page = store
        .list_runs(&RunFilter {
            before: Some(b),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.iter().map(|s| s.run_id).collect::<Vec<_>>(), vec![a]);

    assert_eq!(
        store.find_idempotency_key(&format!("key-{a}")).unwrap(),
        Some(a)
    );
    assert_eq!(store.find_idempotency_key("nope").unwrap(), None);
    assert_eq!(store.active_runs().unwrap(), vec![a, b]);

    end(store, a);
    assert_eq!(store.active_runs().unwrap(), vec![b]);
    assert_eq!(
        store.run_summary(a).unwrap().unwrap().status,
        RunStatus::Done
    );
    assert!(store.read_journal(RunId::new()).unwrap().is_empty());

    // A task step's start, whose input replay's read leaves out.
    let mut encoded = Vec::new();
    let started = Record::TaskStarted {
        step: 0,
        attempt: 1,
        task: "charge".into(),
        name: "charge".into(),
        input_hash: codec::input_hash(&serde_json::json!({"cents": 4200})),
        input: serde_json::json!({"cents": 4200}),
    };
    codec::encode(&started, 8, &mut encoded);
    store
        .commit(&[&CommitBatch {
            records: vec![EncodedRecord {
                run_id: b,
                seq: 1,
                bytes: encoded,
            }],
            ..Default::default()
        }])
        .unwrap();
    let (entries, bytes) = store.read_journal_for_replay(b).unwrap();
    let raw = store.read_journal_raw(b).unwrap();
    // Replay's read leaves task inputs out, and nothing else.
    let without_inputs: Vec<Entry> = store
        .read_journal(b)
        .unwrap()
        .into_iter()
        .map(|mut e| {
            if let Record::TaskStarted { input, .. } = &mut e.record {
                *input = serde_json::Value::Null;
            }
            e
        })
        .collect();
    assert_eq!(entries, without_inputs);
    assert!(
        matches!(&store.read_journal(b).unwrap()[1].record,
            Record::TaskStarted { input, .. } if input["cents"] == 4200),
        "a plain read keeps the input"
    );
    assert_eq!(
        bytes,
        raw.iter().map(|(_, r)| r.len() as u64).sum::<u64>(),
        "the journal's encoded bytes"
    );
    check_scopes(store);
}

/// Runs selected by scope and by scope prefix, in listings and among the active runs.
fn check_scopes(store: &dyn Store) {
    let scopes = [
        "acme/shop",
        "acme/shopping",
        "acmex/shop",
        "globex/labs",
        "acme/shop",
    ];
    let mut runs = Vec::new();
    for scope in scopes {
        let run = RunId::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        store
            .commit(&[&start_in(run, "scoped", RunScope::from(scope))])
            .unwrap();
        runs.push(run);
    }
    // The last run of acme/shop ends.
    end(store, runs[4]);
    let select = |scope: Option<&str>, prefix: Option<&str>| RunFilter {
        workflow: Some("scoped".into()),
        scope: scope.map(Into::into),
        scope_prefix: prefix.map(Into::into),
        ..Default::default()
    };
    let ids = |list: Vec<RunSummary>| list.into_iter().map(|s| s.run_id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_runs(&select(None, Some("acme/"))).unwrap()),
        vec![runs[4], runs[1], runs[0]],
        "runs by scope prefix, newest first"
    );
    assert_eq!(
        ids(store.list_runs(&select(Some("acme/shop"), None)).unwrap()),
        vec![runs[4], runs[0]],
        "runs of one scope"
    );
    assert_eq!(
        ids(store
            .active_summaries(&select(Some("acme/shop"), None))
            .unwrap()),
        vec![runs[0]],
        "the active runs of one scope"
    );
    assert_eq!(
        ids(store
            .active_summaries(&select(None, Some("acme/")))
            .unwrap()),
        vec![runs[0], runs[1]],
        "the active runs under a prefix, oldest first"
    );
    assert_eq!(
        ids(store
            .active_summaries(&select(None, Some("acmex")))
            .unwrap()),
        vec![runs[2]]
    );
    assert_eq!(
        ids(store.active_summaries(&select(None, None)).unwrap()),
        runs[..4].to_vec(),
        "every active run of the workflow"
    );
}

/// `count` records of `run` from seq `first`, each holding its own seq as bytes.
pub fn records(run: RunId, first: u64, count: u64) -> CommitBatch {
    CommitBatch {
        records: (first..first + count)
            .map(|seq| EncodedRecord {
                run_id: run,
                seq,
                bytes: seq.to_le_bytes().to_vec(),
            })
            .collect(),
        ..Default::default()
    }
}

/// The seqs of a ranged read, each checked against the bytes it carries.
fn range_seqs(store: &dyn Store, run: RunId, from: u64, limit: usize) -> Vec<u64> {
    store
        .read_journal_range(run, from, limit, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(seq, bytes)| {
            assert_eq!(bytes, seq.to_le_bytes(), "record {seq} reads its own bytes");
            seq
        })
        .collect()
}

/// [`Store::read_journal_range`]: slices of the full journal, whatever the store did with
/// the records between commits (`maintain` may move them; reads must not notice).
pub fn check_ranges(store: &dyn Store) {
    let (run, other) = (RunId::new(), RunId::new());
    store
        .commit(&[&records(run, 0, 10), &records(other, 0, 3)])
        .unwrap();
    store.maintain().unwrap();
    store.commit(&[&records(run, 10, 5)]).unwrap();
    assert_eq!(range_seqs(store, run, 0, 100), (0..15).collect::<Vec<_>>());
    assert_eq!(range_seqs(store, run, 3, 4), [3, 4, 5, 6]);
    assert_eq!(
        range_seqs(store, run, 8, 4),
        [8, 9, 10, 11],
        "across two commits"
    );
    assert_eq!(range_seqs(store, run, 13, 100), [13, 14]);
    assert!(range_seqs(store, run, 15, 100).is_empty(), "past the end");
    assert!(range_seqs(store, run, 0, 0).is_empty(), "a limit of 0");
    assert!(
        range_seqs(store, RunId::new(), 0, 10).is_empty(),
        "unknown run"
    );
    assert_eq!(
        range_seqs(store, other, 0, 100),
        [0, 1, 2],
        "runs do not mix"
    );
    // Paging from each page's last seq + 1 reads every record exactly once.
    let mut paged = Vec::new();
    let mut from = 0;
    loop {
        let page = range_seqs(store, run, from, 4);
        let Some(&last) = page.last() else { break };
        paged.extend(page);
        from = last + 1;
    }
    assert_eq!(paged, (0..15).collect::<Vec<_>>());
    assert_eq!(
        store.read_journal_range(run, 2, 3, usize::MAX).unwrap(),
        store.read_journal_raw(run).unwrap()[2..5].to_vec(),
        "the same records as the full read"
    );
    // A byte budget: records of 8 bytes, so 20 bytes hold two of them.
    let budget = |from, limit, max_bytes| -> Vec<u64> {
        let rows = store
            .read_journal_range(run, from, limit, max_bytes)
            .unwrap();
        rows.into_iter().map(|(seq, _)| seq).collect()
    };
    assert_eq!(budget(0, 100, 20), [0, 1], "two records fit in 20 bytes");
    assert_eq!(budget(8, 100, 24), [8, 9, 10], "across two commits");
    assert_eq!(budget(3, 100, 16), [3, 4], "exactly the budget");
    assert_eq!(budget(5, 100, 1), [5], "the first record whatever its size");
    assert_eq!(budget(5, 1, 100), [5], "the limit still holds");
    assert!(budget(15, 100, 1).is_empty(), "past the end");
    assert!(budget(0, 0, 100).is_empty(), "a limit of 0");
}
