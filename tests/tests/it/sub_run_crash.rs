//! A crash between a parent's record that it cancelled a child and the child's own
//! cancellation: recovery finishes the job.
//!
//! This test binary is its own worker: [`sub_run_crash_worker`] does nothing unless started by
//! [`sigkill_between_a_parents_cancel_record_and_its_childs_leaves_no_child_running`] with
//! `MAGRATHEA_SUB_RUN_CRASH_DB` set. The worker opens a redb journal (`Durability::Immediate`),
//! starts trees of three runs (`crash_top` → `crash_mid` → `crash_leaf`, the leaf asleep for a
//! week), cancels every top at once and prints `SUB-RUN-CRASH-ACKED` once half of the cancellations were
//! acknowledged — that is, once those tops' `CancelRequestedRecord` and
//! `ChildCancelRequestedRecord` are durable, with their children being told just then. The test
//! kills it with SIGKILL on that line, finds in the store the children whose parent's record is
//! durable while their own cancellation is not (both for parents that had ended and for
//! parents still running their clean-up), reopens the engine on the store, and checks without
//! cancelling anything itself that each of them ends `CANCELLED` with the reason its parent
//! journaled, and their children after them. Finally every tree is cancelled and each
//! parent/child pair is journaled on both sides, once.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use magrathea::core::{RedbStore, Store};
use magrathea::prelude::*;
use magrathea::{Durability, Entry, Record, RunFilter, RunSummary};
use magrathea_tests::{build_retrying, runtime, wait_for};

const WORKER_ENV: &str = "MAGRATHEA_SUB_RUN_CRASH_DB";
const TREES: u64 = 40;
const ATTEMPTS: usize = 5;
/// What the worker prints once half of its cancellations were acknowledged.
const ACKED: &str = "SUB-RUN-CRASH-ACKED";

/// Sleeps a week.
#[workflow]
async fn crash_leaf(ctx: Context, i: u64) -> Result<u64, WorkflowError> {
    ctx.sleep(Duration::from_secs(7 * 24 * 3600)).await?;
    Ok(i)
}

/// Waits for a leaf; cancelled, it ends at once.
#[workflow]
async fn crash_mid(ctx: Context, i: u64) -> Result<u64, WorkflowError> {
    Ok(ctx.child(crash_leaf, i).await?)
}

/// Waits for a mid. Cancelled, an even tree cleans up for a while (it is still running when
/// the process dies); an odd one ends at once (it has ended).
#[workflow]
async fn crash_top(ctx: Context, i: u64) -> Result<u64, WorkflowError> {
    match ctx.child(crash_mid, i).await {
        Ok(v) => Ok(v),
        Err(e) => {
            if i.is_multiple_of(2) {
                ctx.sleep(Duration::from_millis(500)).await?;
            }
            Err(e.into())
        }
    }
}

fn builder(db: &Path) -> magrathea::EngineBuilder {
    Engine::builder()
        .path(db)
        .durability(Durability::Immediate)
        .workflow(crash_top)
        .workflow(crash_mid)
        .workflow(crash_leaf)
}

/// The worker process (see the top of the file). A no-op in an ordinary test run.
#[test]
fn sub_run_crash_worker() {
    let Some(db) = std::env::var_os(WORKER_ENV) else {
        return;
    };
    let db = std::path::PathBuf::from(db);
    runtime().block_on(async move {
        let engine = builder(&db).build().await.unwrap();
        let mut tops = Vec::new();
        for i in 0..TREES {
            tops.push(engine.start(crash_top, i).await.unwrap().id());
        }
        wait_for("every leaf asleep", Duration::from_secs(60), || {
            let leaves = engine
                .list_runs(&RunFilter {
                    workflow: Some("crash_leaf".into()),
                    ..Default::default()
                })
                .unwrap();
            leaves.len() as u64 == TREES
                && leaves.iter().all(|l| {
                    engine.journal(l.run_id).is_ok_and(|j| {
                        j.iter()
                            .any(|e| matches!(e.record, Record::TimerSet { .. }))
                    })
                })
        })
        .await;
        let acked = AtomicUsize::new(0);
        let cancels = tops.iter().map(|top| {
            let (engine, acked) = (&engine, &acked);
            async move {
                engine.cancel(*top, "crash test").await.unwrap();
                if acked.fetch_add(1, Ordering::SeqCst) + 1 == (TREES / 2) as usize {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    // On a line of its own: libtest may have begun one.
                    writeln!(out, "\n{ACKED}").unwrap();
                    out.flush().unwrap();
                }
            }
        });
        futures::future::join_all(cancels).await;
        // Waits to be killed.
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
}

/// Runs the worker on `db` and kills it with SIGKILL as soon as it prints [`ACKED`].
fn run_and_kill_worker(db: &Path) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sub_run_crash::sub_run_crash_worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKER_ENV, db)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning the worker");
    let stdout = child.stdout.take().unwrap();
    let mut acked = false;
    for line in BufReader::new(stdout).lines() {
        if line.expect("reading the worker's output").trim() == ACKED {
            acked = true;
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(acked, "the worker ended ({status}) without cancelling");
}

/// A parent's request to cancel a child, as journaled by the parent.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Asked {
    parent: RunId,
    child: RunId,
    reason: String,
}

fn cancel_requests(journal: &[Entry]) -> Vec<String> {
    journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::CancelRequested { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn asked(store: &dyn Store, runs: &[RunSummary]) -> Vec<Asked> {
    let mut out = Vec::new();
    for r in runs {
        for e in store.read_journal(r.run_id).unwrap() {
            if let Record::ChildCancelRequested {
                child_run_id,
                reason,
                ..
            } = e.record
            {
                out.push(Asked {
                    parent: r.run_id,
                    child: child_run_id,
                    reason,
                });
            }
        }
    }
    out
}

/// In the store after the kill: the requests whose child has not journaled its cancellation,
/// split by whether the parent had ended.
fn caught(db: &Path) -> (Vec<Asked>, usize, usize) {
    let store = RedbStore::open(db, Durability::Immediate).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let mut pending = Vec::new();
    let (mut parent_ended, mut parent_running) = (0, 0);
    for a in asked(&store, &runs) {
        let child_journal = store.read_journal(a.child).unwrap();
        if cancel_requests(&child_journal).is_empty() {
            let parent = store.run_summary(a.parent).unwrap().unwrap();
            if parent.status.is_terminal() {
                parent_ended += 1;
            } else {
                parent_running += 1;
            }
            pending.push(a);
        }
    }
    (pending, parent_ended, parent_running)
}

#[test]
fn sigkill_between_a_parents_cancel_record_and_its_childs_leaves_no_child_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut attempt = 0;
    let (db, pending) = loop {
        attempt += 1;
        let db = dir.path().join(format!("journal-{attempt}.redb"));
        run_and_kill_worker(&db);
        let (pending, ended, running) = caught(&db);
        if (ended > 0 && running > 0) || attempt == ATTEMPTS {
            assert!(
                ended > 0 && running > 0,
                "in {ATTEMPTS} attempts no kill caught children of both ended ({ended}) and \
                 running ({running}) parents between the parent's record and their own"
            );
            break (db, pending);
        }
    };

    runtime().block_on(async move {
        let engine = build_retrying(|| builder(&db)).await.unwrap();
        // Recovery alone cancels the children caught in between, and theirs after them.
        for a in &pending {
            let view = tokio::time::timeout(Duration::from_secs(30), engine.wait(a.child))
                .await
                .unwrap_or_else(|_| panic!("child {} of {} was not cancelled", a.child, a.parent))
                .unwrap();
            assert_eq!(view.status, RunStatus::Cancelled, "{a:?}");
            assert_eq!(
                cancel_requests(&engine.journal(a.child).unwrap()),
                vec![a.reason.clone()],
                "the child journals the reason its parent journaled, once"
            );
        }

        // Every tree is cancelled (those the kill caught before their top's commit, now).
        let runs = engine.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(runs.len() as u64, 3 * TREES, "no run but the trees");
        for top in runs.iter().filter(|r| r.parent.is_none()) {
            engine.cancel(top.run_id, "crash test").await.unwrap();
        }
        for r in &runs {
            let view = tokio::time::timeout(Duration::from_secs(30), engine.wait(r.run_id))
                .await
                .unwrap_or_else(|_| panic!("run {} did not end", r.run_id))
                .unwrap();
            assert_eq!(view.status, RunStatus::Cancelled, "{}", r.run_id);
        }
        // Both sides of every parent/child pair, once each, with the same reason.
        let runs = engine.list_runs(&RunFilter::default()).unwrap();
        let mut requests = Vec::new();
        for r in &runs {
            for e in engine.journal(r.run_id).unwrap() {
                if let Record::ChildCancelRequested {
                    child_run_id,
                    reason,
                    ..
                } = e.record
                {
                    requests.push(Asked {
                        parent: r.run_id,
                        child: child_run_id,
                        reason,
                    });
                }
            }
        }
        let children: BTreeSet<RunId> = runs
            .iter()
            .filter(|r| r.parent.is_some())
            .map(|r| r.run_id)
            .collect();
        let asked_children: Vec<RunId> = requests.iter().map(|a| a.child).collect();
        assert_eq!(
            asked_children.iter().copied().collect::<BTreeSet<_>>(),
            children,
            "every child was asked by its parent"
        );
        assert_eq!(asked_children.len(), children.len(), "each once");
        for a in &requests {
            let summary = engine.summary(a.child).unwrap();
            assert_eq!(summary.parent, Some(a.parent));
            assert_eq!(
                cancel_requests(&engine.journal(a.child).unwrap()),
                vec![a.reason.clone()]
            );
            assert!(
                a.reason
                    .starts_with(&format!("parent run {} was cancelled: ", a.parent)),
                "{a:?}"
            );
        }
        eprintln!(
            "sub-run crash: attempt {attempt}, {} children caught between their parent's record \
             and their own cancellation",
            pending.len()
        );
    });
}
